"""The libraries Redis adds to Lua, written in Python: `bit` (LuaBitOp), `cjson` (encode and
decode) and the random generator behind Redis's math.random (rand48)."""

from __future__ import annotations

import math
import struct
from typing import Any

from lupa.lua51 import lua_type

_MASK32 = 0xFFFFFFFF


def _to_bit(value: Any, position: int = 1, name: str = "tobit") -> int:
    """LuaBitOp's tobit: the number plus 2^52 + 2^51 as a double, whose low 32 bits are the
    number rounded to the nearest integer modulo 2^32 (NaN and infinities give 0)."""
    number = _check_number(value, position, name)
    bits = struct.unpack("<q", struct.pack("<d", number + 6755399441055744.0))[0]
    return _signed(bits)


def _check_number(value: Any, position: int, name: str) -> float:
    """luaL_checknumber: a number, or a string that reads as one."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, bytes):
        try:
            return float(value.strip())
        except ValueError:
            pass
    got = "no value" if value is None else _type_name(value)
    raise BitArgumentError(f"bad argument #{position} to '{name}' (number expected, got {got})")


def _type_name(value: Any) -> str:
    if isinstance(value, bytes):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    return "table" if hasattr(value, "items") else "userdata"


class BitArgumentError(Exception):
    """A bad argument to a bit function: the message Lua's luaL_argerror gives."""


def _signed(value: int) -> int:
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def _fold(name: str, op: Any) -> Any:
    def combined(*values: Any) -> int:
        result = _to_bit(values[0] if values else None, 1, name)
        for position, value in enumerate(values[1:], start=2):
            result = op(result, _to_bit(value, position, name))
        return _signed(result)
    return combined


def _unary(name: str, op: Any) -> Any:
    return lambda value=None: _signed(op(_to_bit(value, 1, name)))


def _shift(name: str, op: Any) -> Any:
    def shifted(value: Any = None, count: Any = None) -> int:
        return _signed(op(_to_bit(value, 1, name), _to_bit(count, 2, name) & 31))
    return shifted


def _tohex(value: Any = None, digits: Any = 8) -> bytes:
    number = _to_bit(value, 1, "tohex") & _MASK32
    count = _to_bit(digits, 2, "tohex") if digits is not None else 8
    upper = count < 0
    count = min(abs(count), 8)
    text = f"{number & ((1 << (4 * count)) - 1):0{count}x}" if count else ""
    return (text.upper() if upper else text).encode()


def _rol(v: int, n: int) -> int:
    v &= _MASK32
    return (v << n | v >> (32 - n)) if n else v


def _ror(v: int, n: int) -> int:
    v &= _MASK32
    return (v >> n | v << (32 - n)) if n else v


BIT_FUNCTIONS: dict[str, Any] = {
    "tobit": _unary("tobit", lambda v: v),
    "bnot": _unary("bnot", lambda v: ~v),
    "bswap": _unary("bswap", lambda v: int.from_bytes((v & _MASK32).to_bytes(4, "little"),
                                                      "big")),
    "band": _fold("band", lambda a, b: a & b),
    "bor": _fold("bor", lambda a, b: a | b),
    "bxor": _fold("bxor", lambda a, b: a ^ b),
    "lshift": _shift("lshift", lambda v, n: v << n),
    "rshift": _shift("rshift", lambda v, n: (v & _MASK32) >> n),
    "arshift": _shift("arshift", lambda v, n: v >> n),
    "rol": _shift("rol", _rol),
    "ror": _shift("ror", _ror),
    "tohex": _tohex,
}


class Rand48:
    """Redis's redisLrand48 / redisSrand48 (the POSIX rand48 generator) behind
    math.random and math.randomseed."""

    def __init__(self) -> None:
        self.state = 0
        self.seed(0)

    def seed(self, value: int) -> None:
        self.state = ((int(value) & _MASK32) << 16) | 0x330E

    def next(self) -> int:
        self.state = (0x5DEECE66D * self.state + 0xB) & ((1 << 48) - 1)
        return self.state >> 17


# -- cjson ---------------------------------------------------------------------------------------
class JsonError(Exception):
    pass


def json_number(value: float, precision: int = 14) -> str:
    """lua-cjson writes numbers with %.14g (encode_number_precision changes the 14)."""
    if value != value or value in (math.inf, -math.inf):
        raise JsonError("Cannot serialise number: must not be NaN or Inf")
    return f"{float(value):.{precision}g}"


_JSON_ESCAPES = {ord('"'): '\\"', ord("\\"): "\\\\", ord("/"): "\\/", ord("\n"): "\\n",
                 ord("\r"): "\\r", ord("\t"): "\\t", ord("\b"): "\\b", ord("\f"): "\\f"}


def json_string(raw: bytes) -> str:
    """lua-cjson's escaping: ", \\, / and control characters; other bytes as they are (one
    character per byte)."""
    out = ['"']
    for byte in raw:
        escaped = _JSON_ESCAPES.get(byte)
        if escaped is not None:
            out.append(escaped)
        elif byte < 0x20 or byte == 0x7F:
            out.append(f"\\u{byte:04x}")
        else:
            out.append(chr(byte))
    out.append('"')
    return "".join(out)


def json_decode(text: bytes) -> Any:
    """Python values for cjson.decode (converted to Lua by the caller); JsonError with a
    message like cjson's."""
    import json  # deferred: ~2 ms at start-up; only cjson.decode needs it

    try:
        return json.loads(text.decode("utf-8", errors="surrogateescape"),
                          parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise JsonError(f"Expected value but found invalid token at character "
                        f"{getattr(exc, 'pos', 0) + 1}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def json_too_deep_at(text: bytes, max_depth: int) -> int | None:
    """The 1-based position of the bracket that nests JSON deeper than max_depth (where
    lua-cjson stops decoding), or None."""
    depth = 0
    in_string = escaped = False
    for index, byte in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > max_depth:
                return index + 1
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return None


class JsonEncoder:
    """cjson.encode: arrays for tables whose keys are 1..n, objects otherwise."""

    def __init__(self, precision: int, max_depth: int, invalid_numbers: bool) -> None:
        self.precision = precision
        self.max_depth = max_depth
        self.invalid_numbers = invalid_numbers

    def number(self, value: float) -> str:
        if value != value or value in (float("inf"), float("-inf")):
            if not self.invalid_numbers:
                raise JsonError("Cannot serialise number: must not be NaN or Inf")
            return f"{value:.{self.precision}g}"
        return json_number(value, self.precision)

    def encode(self, value: Any, depth: int) -> str:
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (int, float)):
            return self.number(value)
        if isinstance(value, bytes):
            return json_string(value)
        kind = lua_type(value)
        if kind == "userdata":  # cjson.null
            return "null"
        if kind != "table":
            raise JsonError(f"Cannot serialise {kind}: type not supported")
        if depth > self.max_depth:
            raise JsonError(f"Cannot serialise, excessive nesting ({depth})")
        keys = list(value.keys())
        if keys and all(isinstance(k, (int, float)) and not isinstance(k, bool)
                        and k >= 1 and k == int(k) for k in keys):
            size = int(max(keys))
            if size > 2 * len(keys) and size > 10:
                raise JsonError("Cannot serialise table: excessively sparse array")
            return "[" + ",".join(self.encode(value[i], depth + 1)
                                  for i in range(1, size + 1)) + "]"
        parts = []
        for key in keys:
            if isinstance(key, (int, float)) and not isinstance(key, bool):
                name = self.number(key).encode()
            elif isinstance(key, bytes):
                name = key
            else:
                raise JsonError(f"Cannot serialise {_lua_type_name(key)}: table key "
                                         "must be a number or string")
            parts.append(json_string(name) + ":" + self.encode(value[key], depth + 1))
        return "{" + ",".join(parts) + "}"


def _lua_type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    return lua_type(value) or type(value).__name__
