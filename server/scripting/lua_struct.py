"""The `struct` library Redis gives scripts (Roberto Ierusalimschy's struct.c, as Redis builds it
on x86-64: native little-endian, int 4 bytes, long and size_t 8, maximum alignment 8).

    struct.pack(fmt, ...)        -> the packed string
    struct.unpack(fmt, s[, pos]) -> the values read, then the position after them (1-based)
    struct.size(fmt)             -> the packed size of a format without strings

Format: '>' big endian, '<' little endian, '![n]' alignment (n a power of 2, 8 when left out),
' ' ignored; 'x' a zero byte; b/B, h/H, l/L, T, i[n]/I[n] signed/unsigned integers of 1, 2,
8, 8 and n (1..32, default 4) bytes; 'f' float, 'd' double; 'c[n]' n bytes ('c0' / 'c': the
whole string when packing, the previous number read as the length when unpacking); 's' a
zero-terminated string. Numbers are Lua's doubles, converted to integers the way C does.

This module also holds the luaL_check* argument checks both libraries written in Python
(this one and lua_msgpack) make, with the Lua C API's error texts.
"""

from __future__ import annotations

import math
import re
import struct
from typing import Any

from lupa.lua51 import lua_type

# A C function's stack may hold this many values (LUAI_MAXCSTACK): luaL_checkstack's limit.
LUA_MAX_CSTACK = 8000
_MASK64 = (1 << 64) - 1
_INT_MAX = 2**31 - 1
_TWO63 = 2.0**63
_TWO64 = 2.0**64


class LuaLibError(Exception):
    """An error a library function raises into the script. `positioned`: raised with
    luaL_error (Lua puts the script's "user_script:N: " before it); otherwise a Lua runtime
    error raised inside the C function, which carries no position."""

    def __init__(self, message: bytes, positioned: bool = True) -> None:
        super().__init__(message.decode("latin-1"))
        self.message = message
        self.positioned = positioned


# -- the Lua C API's argument checks -----------------------------------------------------------
def type_name(value: Any) -> str:
    """luaL_typename of a value as Lua hands it to Python."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, bytes):
        return "string"
    kind = lua_type(value)
    if kind is not None:
        return kind
    return "function" if callable(value) else "userdata"  # (Python: the API's C functions)


def arg_error(index: int, function: str, text: str | bytes) -> LuaLibError:
    """luaL_argerror's message."""
    if isinstance(text, str):
        text = text.encode()
    return LuaLibError(b"bad argument #%d to '%s' (%s)" % (index, function.encode(), text))


def _type_error(args: tuple[Any, ...], index: int, function: str, expected: str) -> LuaLibError:
    got = type_name(args[index - 1]) if index <= len(args) else "no value"
    return arg_error(index, function, f"{expected} expected, got {got}")


# strtod's syntax (what lua_tonumber accepts, with surrounding spaces): decimal, hexadecimal
# (with an optional binary exponent), inf / infinity, nan / nan(...).
_DECIMAL = re.compile(rb"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_HEX = re.compile(rb"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?\d+)?")
_SPECIAL = re.compile(rb"([+-]?)(?:(inf(?:inity)?)|nan(?:\([0-9A-Za-z_]*\))?)", re.IGNORECASE)
_C_SPACE = b" \t\n\v\f\r"


def str_to_number(raw: bytes) -> float | None:
    """lua_tonumber of a string (luaO_str2d): None when it is not a number."""
    text = raw.split(b"\0", 1)[0].strip(_C_SPACE)  # (a C string: it ends at the first NUL)
    if _DECIMAL.fullmatch(text):
        return float(text)
    if _HEX.fullmatch(text):
        return float.fromhex(text.decode())
    special = _SPECIAL.fullmatch(text)
    if special:
        sign = -1.0 if special.group(1) == b"-" else 1.0
        return sign * math.inf if special.group(2) else math.copysign(math.nan, sign)
    return None


def to_number(value: Any) -> float | None:
    """lua_tonumber: numbers, and strings that read as numbers; None otherwise."""
    if type(value) is int or type(value) is float:
        return float(value)
    if isinstance(value, bytes):
        return str_to_number(value)
    return None


def check_number(args: tuple[Any, ...], index: int, function: str) -> float:
    """luaL_checknumber of argument `index` (1-based)."""
    if index <= len(args):
        number = to_number(args[index - 1])
        if number is not None:
            return number
    raise _type_error(args, index, function, "number")


def double_to_int64(number: float) -> int:
    """C's (int64_t) cast of a double on x86-64: truncated; NaN and out of range give
    INT64_MIN."""
    if number != number or not -_TWO63 <= number < _TWO63:
        return -(1 << 63)
    return int(number)


def double_to_uint64(number: float) -> int:
    """C's (uint64_t) cast of a double as gcc compiles it on x86-64: below 2^63 through the
    signed conversion (so a negative number wraps), from 2^63 on by subtracting 2^63 first (so
    2^64 and more, and infinity, give 0)."""
    if number >= _TWO63:
        return 0 if number >= _TWO64 else int(number)
    return double_to_int64(number) & _MASK64


def check_integer(args: tuple[Any, ...], index: int, function: str) -> int:
    """luaL_checkinteger: a number (or numeric string) truncated to a 64-bit integer."""
    return double_to_int64(check_number(args, index, function))


def opt_integer(args: tuple[Any, ...], index: int, function: str, default: int) -> int:
    """luaL_optinteger: the default when the argument is nil or missing."""
    if index > len(args) or args[index - 1] is None:
        return default
    return check_integer(args, index, function)


def number_text(number: float | int) -> bytes:
    """A number as Lua turns it into a string (%.14g; glibc writes NaN's sign)."""
    if number != number:
        return b"-nan" if math.copysign(1.0, number) < 0 else b"nan"
    return b"%.14g" % number


def check_string(args: tuple[Any, ...], index: int, function: str) -> bytes:
    """luaL_checklstring: a string, or a number as its text."""
    if index <= len(args):
        value = args[index - 1]
        if isinstance(value, bytes):
            return value
        if type(value) is int or type(value) is float:
            return number_text(value)
    raise _type_error(args, index, function, "string")


# -- formats -----------------------------------------------------------------------------------
_INT_SIZES = {ord("b"): 1, ord("B"): 1, ord("h"): 2, ord("H"): 2, ord("l"): 8, ord("L"): 8,
              ord("T"): 8}
_INTEGERS = frozenset(b"bBhHlLTiI")
_MAX_INT_SIZE = 32
_MAX_ALIGN = 8
_C_INT_SIZE = 4
_OPT_C, _OPT_S, _OPT_X, _OPT_F, _OPT_D = b"c"[0], b"s"[0], b"x"[0], b"f"[0], b"d"[0]
_OPT_I, _OPT_BIG_I, _OPT_ALIGN = b"i"[0], b"I"[0], b"!"[0]
_OPT_BIG, _OPT_LITTLE, _OPT_SPACE = b">"[0], b"<"[0], b" "[0]
_ALNUM = frozenset(b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_FIXED_SIZES = {_OPT_F: 4, _OPT_D: 8, _OPT_X: 1}
_KNOWN = frozenset(b"bBhHlLTiIxfdcs ")

# One step of a format: (option byte, size, little endian, maximum alignment, error). The error,
# (message, argument), is that of a control option the library refuses: raised where the C code
# raises it (after aligning; for unpack after the data length check), as a bad-argument error
# when the argument is 1 (an unknown option), a plain one otherwise. An option of -1 is an error
# raised as soon as the option is read (a bad size).
Failure = tuple[bytes, int]
Step = tuple[int, int, bool, int, Failure | None]
_SIZE_ERROR = -1
_cache: dict[bytes, list[Step]] = {}


def _number(fmt: bytes, at: int, default: int) -> tuple[int, int]:
    """getnum: the decimal number at `at` (or the default when there is none), the position
    after it."""
    if at >= len(fmt) or not 0x30 <= fmt[at] <= 0x39:
        return default, at
    value = 0
    while at < len(fmt) and 0x30 <= fmt[at] <= 0x39:
        digit = fmt[at] - 0x30
        if value > _INT_MAX // 10 or value * 10 > _INT_MAX - digit:
            raise LuaLibError(b"integral size overflow")
        value = value * 10 + digit
        at += 1
    return value, at


def _option_size(fmt: bytes, opt: int, at: int) -> tuple[int, int]:
    """optsize: the size of an option (0 for the control options and 's'), the position after
    its digits."""
    if opt in _INT_SIZES:
        return _INT_SIZES[opt], at
    if opt in (_OPT_I, _OPT_BIG_I):
        size, at = _number(fmt, at, _C_INT_SIZE)
        if size > _MAX_INT_SIZE:
            raise LuaLibError(b"integral size %d is larger than limit of %d"
                              % (size, _MAX_INT_SIZE))
        return size, at
    if opt == _OPT_C:
        return _number(fmt, at, 1)
    return _FIXED_SIZES.get(opt, 0), at


def _parse(fmt: bytes) -> list[Step]:
    """The steps of a format (cached), each with the state the control options before it set.
    Parsing stops at an error, except after an unknown letter or digit (which struct.size
    skips; pack and unpack stop there)."""
    steps = _cache.get(fmt)
    if steps is not None:
        return steps
    steps = []
    little, align, at, end = True, 1, 0, len(fmt)
    while at < end:
        opt = fmt[at]
        at += 1
        try:
            size, at = _option_size(fmt, opt, at)
        except LuaLibError as exc:
            steps.append((_SIZE_ERROR, 0, little, align, (exc.message, 0)))
            break
        error: Failure | None = None
        if opt in (_OPT_BIG, _OPT_LITTLE):
            little = opt == _OPT_LITTLE
        elif opt == _OPT_ALIGN:
            try:
                value, at = _number(fmt, at, _MAX_ALIGN)
            except LuaLibError as exc:
                error = (exc.message, 0)
            else:
                if value <= 0 or value & (value - 1):
                    error = (b"alignment %d is not a power of 2" % value, 0)
                else:
                    align = value
        elif opt not in _KNOWN:
            error = (b"invalid format option '" + bytes([opt]) + b"'", 1)
        steps.append((opt, size, little, align, error))
        if error is not None and opt not in _ALNUM:
            break
    if len(_cache) >= 512:
        _cache.clear()
    _cache[fmt] = steps
    return steps


def _padding(position: int, opt: int, size: int, align: int) -> int:
    """gettoalign: the bytes needed to align an item of `size` at `position`."""
    if size == 0 or opt == _OPT_C:
        return 0
    if size > align:
        size = align
    return (size - (position & (size - 1))) & (size - 1)


def _fail(error: Failure | None, function: str) -> LuaLibError:
    message, argument = error or (b"", 0)
    return arg_error(argument, function, message) if argument else LuaLibError(message)


def _format(args: tuple[Any, ...], function: str) -> bytes:
    fmt = check_string(args, 1, function)
    return fmt if b"\0" not in fmt else fmt[:fmt.index(b"\0")]  # (a C string)


# -- struct.pack ------------------------------------------------------------------------------
_FLOAT = {True: struct.Struct("<f"), False: struct.Struct(">f")}
_DOUBLE = {True: struct.Struct("<d"), False: struct.Struct(">d")}


def _float_bytes(number: float, little: bool) -> bytes:
    """(float)number in 4 bytes: a double too large for a float becomes infinity."""
    try:
        return _FLOAT[little].pack(number)
    except OverflowError:
        return _FLOAT[little].pack(math.copysign(math.inf, number))


def pack(*args: Any) -> bytes:
    """struct.pack(fmt, ...)."""
    steps = _parse(_format(args, "pack"))
    args = (*args, None)  # (the C code pushes a nil after the arguments: "got nil" if missing)
    parts: list[bytes] = []
    total = 0
    arg = 2
    for opt, size, little, align, error in steps:
        if opt == _SIZE_ERROR:
            raise _fail(error, "pack")
        if align > 1:  # (with alignment 1 there is never padding)
            pad = _padding(total, opt, size, align)
            if pad:
                parts.append(b"\0" * pad)
                total += pad
        if opt in _INTEGERS:
            number = check_number(args, arg, "pack")
            arg += 1
            value = double_to_int64(number) & _MASK64 if number < 0 else double_to_uint64(number)
            if size < 8:
                value &= (1 << (8 * size)) - 1
            parts.append(value.to_bytes(size, "little" if little else "big"))
        elif opt == _OPT_X:
            parts.append(b"\0")
        elif opt == _OPT_F:
            parts.append(_float_bytes(check_number(args, arg, "pack"), little))
            arg += 1
        elif opt == _OPT_D:
            parts.append(_DOUBLE[little].pack(check_number(args, arg, "pack")))
            arg += 1
        elif opt in (_OPT_C, _OPT_S):
            text = check_string(args, arg, "pack")
            arg += 1
            if size == 0:
                size = len(text)
            if len(text) < size:  # (the C code names the argument after the string)
                raise arg_error(arg, "pack", "string too short")
            parts.append(text[:size])
            if opt == _OPT_S:
                parts.append(b"\0")
                size += 1
        elif error is not None:
            raise _fail(error, "pack")
        total += size
    return b"".join(parts)


# -- struct.unpack ----------------------------------------------------------------------------
def _read_integer(chunk: bytes, little: bool, signed: bool, size: int) -> float:
    """getinteger: the bytes gathered into a 64-bit register (a longer integer keeps its 8
    least significant bytes), sign-extended from the mask C computes (its shift count taken
    modulo 64, as x86 does)."""
    value = int.from_bytes(chunk, "little" if little else "big") & _MASK64
    if not signed:
        return float(value)
    mask = (_MASK64 << ((size * 8 - 1) & 63)) & _MASK64
    if value & mask:
        value |= mask
    return float(value - (1 << 64) if value >> 63 else value)


def _too_short() -> LuaLibError:
    return arg_error(2, "unpack", "data string too short")


def unpack(*args: Any) -> tuple[Any, ...]:
    """struct.unpack(fmt, s[, pos]): the values, then the next position."""
    steps = _parse(_format(args, "unpack"))
    data = check_string(args, 2, "unpack")
    length = len(data)
    pos = opt_integer(args, 3, "unpack", 1) & _MASK64  # (a size_t: negative wraps)
    if pos == 0:
        raise arg_error(3, "unpack", "offset must be 1 or greater")
    pos -= 1
    results: list[Any] = []
    used = len(args)  # (the stack: the arguments, then the results)
    for opt, size, little, align, error in steps:
        if opt == _SIZE_ERROR:
            raise _fail(error, "unpack")
        if align > 1:
            pos = (pos + _padding(pos, opt, size, align)) & _MASK64
        if size > length or pos > length - size:
            raise _too_short()
        if used + len(results) + 2 > LUA_MAX_CSTACK:
            raise LuaLibError(b"stack overflow (too many results)")
        if opt in _INTEGERS:
            results.append(_read_integer(data[pos:pos + size], little, opt >= 0x61, size))
        elif opt == _OPT_F:
            results.append(_FLOAT[little].unpack_from(data, pos)[0])
        elif opt == _OPT_D:
            results.append(_DOUBLE[little].unpack_from(data, pos)[0])
        elif opt == _OPT_C:
            if size == 0:
                previous = to_number(results[-1]) if results else None
                if previous is None:
                    raise LuaLibError(b"format 'c0' needs a previous size")
                size = double_to_uint64(previous)
                results.pop()
                if size > length or pos > length - size:
                    raise _too_short()
            results.append(data[pos:pos + size])
        elif opt == _OPT_S:
            end = data.find(b"\0", pos)
            if end < 0:
                raise LuaLibError(b"unfinished string in data")
            size = end - pos + 1
            results.append(data[pos:end])
        elif error is not None:
            raise _fail(error, "unpack")
        pos = (pos + size) & _MASK64
    following = (pos + 1) & _MASK64
    results.append(following - (1 << 64) if following >> 63 else following)
    return tuple(results)


# -- struct.size ------------------------------------------------------------------------------
def size(*args: Any) -> int:
    """struct.size(fmt): letters and digits the library does not know count for nothing."""
    total = 0
    for opt, step_size, _little, align, error in _parse(_format(args, "size")):
        if opt == _SIZE_ERROR:
            raise _fail(error, "size")
        total += _padding(total, opt, step_size, align)
        if opt == _OPT_S:
            raise arg_error(1, "size", "option 's' has no fixed size")
        if opt == _OPT_C and step_size == 0:
            raise arg_error(1, "size", "option 'c0' has no fixed size")
        if error is not None and opt not in _ALNUM:
            raise _fail(error, "size")
        total += step_size
    return total


FUNCTIONS: dict[str, Any] = {"pack": pack, "unpack": unpack, "size": size}
