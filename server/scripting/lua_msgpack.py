"""The `cmsgpack` library Redis gives scripts (lua-cmsgpack 0.4.0 by Salvatore Sanfilippo),
with its encoding choices and error texts:

    cmsgpack.pack(v1, ...)                   -> the values, encoded one after the other
    cmsgpack.unpack(s)                       -> every value in s
    cmsgpack.unpack_one(s[, offset])         -> next offset (-1 at the end), one value
    cmsgpack.unpack_limit(s, limit[, offset]) -> next offset, up to `limit` values

Packing: a number that is an integer (as int64) takes the smallest integer type, any other
one a float 32 when it survives the round trip through a float, else a float 64; strings are
fixstr / str 8 / str 16 / str 32 (never bin); a table whose keys are exactly 1..n is an array,
any other a map, in Lua's iteration order; a table nested 16 deep is written as nil (so a
table holding itself is written 16 levels down); functions and other values are nil.
Unpacking reads what packing writes plus the other integer types; bin, ext and 0xc1 are "Bad
data format". Tables are built the way the C library builds them (an empty table, then each
element set in order), so their layout, `#` and iteration order are the same.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from lupa.lua51 import lua_type

from server.scripting.lua_struct import (
    LUA_MAX_CSTACK,
    LuaLibError,
    arg_error,
    check_integer,
    check_string,
    opt_integer,
)

MAX_NESTING = 16  # LUACMSGPACK_MAX_NESTING: a table this deep is packed as nil
_INT64_MIN = -(1 << 63)
_INT_MAX = 2**31 - 1

# -- pack ------------------------------------------------------------------------------------
_FIXINT = [bytes([n]) for n in range(256)]  # positive and negative fixints (n & 0xff)
_U8, _U16, _U32, _U64 = (struct.Struct(f">B{c}").pack for c in "BHIQ")
_I8, _I16, _I32, _I64 = (struct.Struct(f">B{c}").pack for c in "bhiq")
_F32 = struct.Struct(">f")
_F64 = struct.Struct(">Bd").pack


def _int_bytes(n: int) -> bytes:
    if n >= 0:
        if n < 128:
            return _FIXINT[n]
        if n <= 0xFF:
            return _U8(0xCC, n)
        if n <= 0xFFFF:
            return _U16(0xCD, n)
        if n <= 0xFFFFFFFF:
            return _U32(0xCE, n)
        return _U64(0xCF, n)
    if n >= -32:
        return _FIXINT[n & 0xFF]
    if n >= -128:
        return _I8(0xD0, n)
    if n >= -32768:
        return _I16(0xD1, n)
    if n >= -(1 << 31):
        return _I32(0xD2, n)
    return _I64(0xD3, n)


def _float_bytes(d: float) -> bytes:
    """A float 32 when the double is exactly a float (infinities included), else a float 64.
    (-0.0 never gets here: as an integer it is 0.)"""
    try:
        single = _F32.pack(d)
    except OverflowError:  # (beyond a float's range)
        return _F64(0xCB, d)
    if _F32.unpack(single)[0] == d:  # (False for NaN)
        return b"\xca" + single
    return _F64(0xCB, d)


def _str_header(n: int) -> bytes:
    if n < 32:
        return _FIXINT[0xA0 | n]
    if n <= 0xFF:
        return _U8(0xD9, n)
    if n <= 0xFFFF:
        return _U16(0xDA, n)
    return _U32(0xDB, n & 0xFFFFFFFF)


def _container_header(n: int, fix: int, code16: int) -> bytes:
    if n <= 15:
        return _FIXINT[fix | n]
    if n <= 0xFFFF:
        return _U16(code16, n)
    return _U32(code16 + 1, n & 0xFFFFFFFF)


def _encode(value: Any, level: int, out: list[bytes]) -> None:
    """Append the encoding of one Lua value (nested `level` tables deep) to out."""
    kind = type(value)
    if kind is bytes:
        out.append(_str_header(len(value)))
        out.append(value)
    elif kind is int:  # (lupa hands integral numbers in int64's range over as ints)
        out.append(_int_bytes(value))
    elif kind is float:
        if value.is_integer() and -(2.0**63) <= value < 2.0**63:
            out.append(_int_bytes(int(value)))
        else:
            out.append(_float_bytes(value))
    elif kind is bool:
        out.append(b"\xc3" if value else b"\xc2")
    elif level < MAX_NESTING and lua_type(value) == "table":
        _encode_table(value, level, out)
    else:  # nil, functions, userdata, coroutines, a table too deep
        out.append(b"\xc0")


def _encode_table(table: Any, level: int, out: list[bytes]) -> None:
    items = list(table.items())
    # An array when every key is a number that is a C int above 0 and the largest is the count
    # (so the keys are 1..n): lua-cmsgpack's table_is_an_array.
    largest = 0
    for key, _ in items:
        if type(key) is not int or not 0 < key <= _INT_MAX:
            break
        if key > largest:
            largest = key
    else:
        if largest == len(items):
            values: list[Any] = [None] * largest
            for key, value in items:
                values[key - 1] = value
            out.append(_container_header(largest, 0x90, 0xDC))
            for value in values:
                _encode(value, level + 1, out)
            return
    out.append(_container_header(len(items), 0x80, 0xDE))
    for key, value in items:
        _encode(key, level + 1, out)
        _encode(value, level + 1, out)


def pack(*args: Any) -> bytes:
    """cmsgpack.pack(...): the values' encodings, one after the other."""
    if not args:
        raise arg_error(0, "pack", "MessagePack pack needs input.")
    if 2 * len(args) > LUA_MAX_CSTACK:  # (lua_checkstack(L, nargs) fails)
        raise arg_error(0, "pack", "Too many arguments for MessagePack pack.")
    out: list[bytes] = []
    for value in args:
        _encode(value, 0, out)
    return b"".join(out)


# -- unpack ----------------------------------------------------------------------------------
_EOF, _BAD_FORMAT = "eof", "bad"
_UNPACK_OVERFLOW = (b"stack overflow (too many return values at once; use unpack_one or "
                    b"unpack_limit instead.)")
_ARRAY_OVERFLOW = b"stack overflow (in function mp_decode_to_lua_array)"
# Scalars: type byte -> (total size, struct format of the value after the type byte).
_SCALARS: dict[int, tuple[int, struct.Struct]] = {
    0xCC: (2, struct.Struct(">B")), 0xCD: (3, struct.Struct(">H")),
    0xCE: (5, struct.Struct(">I")), 0xCF: (9, struct.Struct(">q")),  # (uint 64 read as int64)
    0xD0: (2, struct.Struct(">b")), 0xD1: (3, struct.Struct(">h")),
    0xD2: (5, struct.Struct(">i")), 0xD3: (9, struct.Struct(">q")),
    0xCA: (5, struct.Struct(">f")), 0xCB: (9, struct.Struct(">d")),
}
_CONSTANTS = {0xC0: None, 0xC2: False, 0xC3: True}
_LENGTHS = {0xD9: struct.Struct(">B"), 0xDA: struct.Struct(">H"), 0xDB: struct.Struct(">I"),
            0xDC: struct.Struct(">H"), 0xDD: struct.Struct(">I"),
            0xDE: struct.Struct(">H"), 0xDF: struct.Struct(">I")}
_STRINGS = frozenset((0xD9, 0xDA, 0xDB))
_ARRAYS = frozenset((0xDC, 0xDD))


class _Stop(Exception):
    """The input ended early (_EOF) or holds a type byte the library does not read."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Container:
    """A table being read: its elements so far, how many are left, and (a map) a pending
    key."""

    __slots__ = ("is_map", "left", "items", "pairs", "key", "has_key")

    def __init__(self, is_map: bool, left: int) -> None:
        self.is_map = is_map
        self.left = left
        self.items: list[Any] = []
        self.pairs: list[tuple[Any, Any]] = []
        self.key: Any = None
        self.has_key = False


class Decoder:
    """Reads msgpack values into Lua values; tables are made with the runtime's table_from."""

    def __init__(self, table_from: Callable[..., Any], new_table: Callable[[], Any]) -> None:
        self.table_from = table_from
        self.new_table = new_table

    def decode(self, data: bytes, pos: int, limit: int, used: int) -> tuple[list[Any], int]:
        """Up to `limit` top-level values from data[pos:], and the position after them.
        `used`: the Lua stack slots the C function holds besides its results (its arguments):
        the C library fails, as Lua's stack does, past LUAI_MAXCSTACK slots."""
        end = len(data)
        results: list[Any] = []
        stack: list[_Container] = []
        slots = used  # Lua stack slots in use: arguments, results, open tables, keys, indexes
        while True:
            if not stack and (len(results) >= limit or pos >= end):
                return results, pos
            parent = stack[-1] if stack else None
            if parent is not None and not parent.is_map:
                slots += 1  # (the index the element is set at)
            # -- one value at pos ----------------------------------------------------------
            if pos >= end:
                raise _Stop(_EOF)
            if slots + 1 > LUA_MAX_CSTACK:
                raise LuaLibError(_UNPACK_OVERFLOW)
            byte = data[pos]
            value: Any = None
            opened: _Container | None = None
            if byte < 0x80:  # positive fixint
                value = byte
                pos += 1
            elif byte >= 0xE0:  # negative fixint
                value = byte - 0x100
                pos += 1
            elif byte < 0xA0:  # fixmap 0x80-0x8f, fixarray 0x90-0x9f
                opened = _Container(byte < 0x90, byte & 0x0F)
                pos += 1
            elif byte < 0xC0:  # fixstr
                stop = pos + 1 + (byte & 0x1F)
                if stop > end:
                    raise _Stop(_EOF)
                value = data[pos + 1:stop]
                pos = stop
            elif byte in _SCALARS:
                size, reader = _SCALARS[byte]
                if pos + size > end:
                    raise _Stop(_EOF)
                value = reader.unpack_from(data, pos + 1)[0]
                pos += size
            elif byte in _CONSTANTS:
                value = _CONSTANTS[byte]
                pos += 1
            elif byte in _LENGTHS:
                reader = _LENGTHS[byte]
                start = pos + 1 + reader.size
                if start > end:
                    raise _Stop(_EOF)
                count = reader.unpack_from(data, pos + 1)[0]
                if byte in _STRINGS:
                    if start + count > end:
                        raise _Stop(_EOF)
                    value = data[start:start + count]
                    pos = start + count
                else:
                    opened = _Container(byte not in _ARRAYS, count)
                    pos = start
            else:  # bin, ext, fixext, 0xc1
                raise _Stop(_BAD_FORMAT)
            slots += 1  # (the value, or the table being filled)
            if opened is not None:
                if not opened.is_map and slots + 1 > LUA_MAX_CSTACK:
                    raise LuaLibError(_ARRAY_OVERFLOW)
                if opened.left:
                    stack.append(opened)
                    continue
                value = self._table(opened)
            # -- hand the value to the table being filled (or to the results) ------------------
            while True:
                if not stack:
                    results.append(value)
                    break
                container = stack[-1]
                if container.is_map and not container.has_key:
                    container.key, container.has_key = value, True
                    break
                if container.is_map:
                    key = container.key
                    if key is None:
                        raise LuaLibError(b"table index is nil", positioned=False)
                    if key != key:
                        raise LuaLibError(b"table index is NaN", positioned=False)
                    container.pairs.append((key, value))
                    container.has_key = False
                else:
                    container.items.append(value)
                slots -= 2  # (lua_settable pops the key or index and the value)
                container.left -= 1
                if container.left:
                    break
                stack.pop()
                value = self._table(container)

    def _table(self, container: _Container) -> Any:
        """The Lua table: an empty table, then each element set in order, as C does."""
        if not container.is_map:
            return self.table_from(container.items)
        pairs = container.pairs
        if not any(type(key) is bool for key, _ in pairs):
            return self.table_from(dict(pairs))  # (a repeated key keeps its first place)
        table = self.new_table()  # (True and 1 are one key to Python, two to Lua)
        for key, value in pairs:
            table[key] = value
        return table

    def unpack_full(self, args: tuple[Any, ...], limit: int, offset: int, function: str,
                    used: int) -> tuple[Any, ...]:
        """mp_unpack_full: every value (limit and offset 0), or the next offset and up to
        `limit` values."""
        data = check_string(args, 1, function)
        length = len(data)
        if offset < 0 or limit < 0:  # (the C library shows the input's length as the limit)
            raise LuaLibError(b"Invalid request to unpack with offset of %d and limit of %d."
                              % (_c_int(offset), _c_int(length)))
        if offset > length:
            raise LuaLibError(b"Start offset %d greater than input length %d."
                              % (_c_int(offset), _c_int(length)))
        decode_all = not limit and not offset
        try:
            values, pos = self.decode(data, offset, _INT_MAX if decode_all else limit, used)
        except _Stop as stop:
            raise LuaLibError(b"Missing bytes in input." if stop.reason == _EOF
                              else b"Bad data format in input.") from None
        if decode_all:
            return tuple(values)
        if used + len(values) + 1 > LUA_MAX_CSTACK:  # (no room left for the offset)
            raise LuaLibError(b"stack overflow (in function mp_unpack_full)")
        return (-1 if pos == length else pos, *values)

    def unpack(self, *args: Any) -> tuple[Any, ...]:
        """cmsgpack.unpack(s)."""
        return self.unpack_full(args, 0, 0, "unpack", len(args))

    def unpack_one(self, *args: Any) -> tuple[Any, ...]:
        """cmsgpack.unpack_one(s[, offset])."""
        offset = opt_integer(args, 2, "unpack_one", 0)
        return self.unpack_full(args, 1, offset, "unpack_one", 1)

    def unpack_limit(self, *args: Any) -> tuple[Any, ...]:
        """cmsgpack.unpack_limit(s, limit[, offset])."""
        limit = check_integer(args, 2, "unpack_limit")
        offset = opt_integer(args, 3, "unpack_limit", 0)
        return self.unpack_full(args, limit, offset, "unpack_limit", 1)


def _c_int(n: int) -> int:
    """C's (int) cast of a 64-bit integer."""
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n >> 31 else n


def functions(table_from: Callable[..., Any], new_table: Callable[[], Any]) -> dict[str, Any]:
    """The library's functions, tables made in the runtime of table_from / new_table."""
    decoder = Decoder(table_from, new_table)
    return {"pack": pack, "unpack": decoder.unpack, "unpack_one": decoder.unpack_one,
            "unpack_limit": decoder.unpack_limit}


# The library's other fields, as lua-cmsgpack sets them.
INFO = {"_NAME": b"cmsgpack", "_VERSION": b"lua-cmsgpack 0.4.0",
        "_COPYRIGHT": b"Copyright (C) 2012, Salvatore Sanfilippo",
        "_DESCRIPTION": b"MessagePack C implementation for Lua"}
