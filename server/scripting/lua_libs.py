"""The libraries Redis adds to Lua, written in Python: `bit` (LuaBitOp), `cjson` (encode and
decode) and the random generator behind Redis's math.random (rand48)."""

from __future__ import annotations

import json
import math
from typing import Any

_MASK32 = 0xFFFFFFFF


def _to_bit(value: Any) -> int:
    """LuaBitOp's argument conversion: the number modulo 2^32, as a signed 32-bit int."""
    number = int(math.floor(float(value))) if not isinstance(value, int) else value
    number &= _MASK32
    return number - (1 << 32) if number & 0x80000000 else number


def _signed(value: int) -> int:
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def _fold(op: Any) -> Any:
    def combined(first: Any, *rest: Any) -> int:
        result = _to_bit(first)
        for value in rest:
            result = op(result, _to_bit(value))
        return _signed(result)
    return combined


def _tohex(value: Any, digits: Any = 8) -> bytes:
    number = _to_bit(value) & _MASK32
    count = int(digits)
    upper = count < 0
    count = min(abs(count), 8)
    text = f"{number & ((1 << (4 * count)) - 1):0{count}x}" if count else ""
    return (text.upper() if upper else text).encode()


BIT_FUNCTIONS: dict[str, Any] = {
    "tobit": lambda v: _to_bit(v),
    "bnot": lambda v: _signed(~_to_bit(v)),
    "band": _fold(lambda a, b: a & b),
    "bor": _fold(lambda a, b: a | b),
    "bxor": _fold(lambda a, b: a ^ b),
    "lshift": lambda v, n: _signed(_to_bit(v) << (_to_bit(n) & 31)),
    "rshift": lambda v, n: _signed((_to_bit(v) & _MASK32) >> (_to_bit(n) & 31)),
    "arshift": lambda v, n: _signed(_to_bit(v) >> (_to_bit(n) & 31)),
    "rol": lambda v, n: _signed(((_to_bit(v) & _MASK32) << (_to_bit(n) & 31))
                                | ((_to_bit(v) & _MASK32) >> (32 - (_to_bit(n) & 31)))),
    "ror": lambda v, n: _signed(((_to_bit(v) & _MASK32) >> (_to_bit(n) & 31))
                                | ((_to_bit(v) & _MASK32) << (32 - (_to_bit(n) & 31)))),
    "bswap": lambda v: _signed(int.from_bytes((_to_bit(v) & _MASK32).to_bytes(4, "little"),
                                              "big")),
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


def json_string(raw: bytes) -> str:
    """lua-cjson's escaping: ", \\, / and control characters."""
    out = ['"']
    for byte in raw:
        char = chr(byte)
        if char == '"':
            out.append('\\"')
        elif char == "\\":
            out.append("\\\\")
        elif char == "/":
            out.append("\\/")
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif char == "\b":
            out.append("\\b")
        elif char == "\f":
            out.append("\\f")
        elif byte < 0x20 or byte == 0x7F:
            out.append(f"\\u{byte:04x}")
        else:
            out.append(char)  # (bytes >= 0x80 pass through, as cjson does)
    out.append('"')
    return "".join(out)


def json_decode(text: bytes) -> Any:
    """Python values for cjson.decode (converted to Lua by the caller); JsonError with a
    message like cjson's."""
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
