"""Redis's listpack byte format, held in a bytearray.

Layout (as listpack.c / listpack.md):

    <total-bytes: uint32 LE> <num-elements: uint16 LE> <element> ... <0xFF>

    element = <encoding+data> <backlen>

backlen is the length of encoding+data, 1..5 bytes, written so it can be read
right to left: the byte nearest the element's data holds the most significant
7 bits and has bit 128 clear; every later byte has bit 128 set.  Reading from
the element's end, the first byte gives the least significant 7 bits.

num-elements is exact while it is below 65535; 65535 means "unknown, count by
walking" (LP_HDR_NUMELE_UNKNOWN).

Offsets handed around by this module are byte offsets into ``buf``.  The
readers (``decode_element``, ``next_offset``, ``prev_offset``) trust the
buffer: a Listpack built from untrusted bytes must be validated first
(``Listpack.from_bytes`` does it).  They raise ListpackError, never anything
else, on the errors they can detect cheaply.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator

from storage.listpack_format import (
    _BACKLEN1,
    _HDR,
    _INT_ELEMENT_SIZE,
    EMPTY_SIZE,
    EOF_BYTE,
    HEADER_SIZE,
    NUMELE_UNKNOWN,
    ListpackError,
    _pack_hdr,
    _unpack_u32,
    backlen_size,
    encode_backlen,
    pack_header,
)
from storage.listpack_validate import validate_buffer

__all__ = [
    "EOF_BYTE",
    "HEADER_SIZE",
    "MAX_TOTAL_BYTES",
    "NUMELE_UNKNOWN",
    "pack_header",
    "Listpack",
    "ListpackError",
    "backlen_size",
    "cached_element",
    "decode_backlen",
    "decode_element",
    "decode_many",
    "element_as_bytes",
    "encode_backlen",
    "encode_element",
    "encode_int_element",
    "encode_str_element",
    "next_offset",
    "prev_offset",
    "string_to_int64",
    "validate_buffer",
]


# Looked up at run time so tests can lower it.
MAX_TOTAL_BYTES = 2**32 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

_unpack_i16 = struct.Struct("<h").unpack_from
_unpack_i32 = struct.Struct("<i").unpack_from
_unpack_i64 = struct.Struct("<q").unpack_from
_EMPTY = _HDR.pack(EMPTY_SIZE, 0) + b"\xff"
_STR6_HEAD = [bytes((0x80 | i,)) for i in range(64)]
_DIGITS = frozenset(b"0123456789-")


# --- encoding ----------------------------------------------------------------


def string_to_int64(value: bytes) -> int | None:
    """The int64 that ``value`` is the canonical decimal form of, else None.

    Same rules as lpStringToInt64: no sign other than a leading '-', no
    leading zeros, no spaces, "-0" rejected, at most 20 bytes, fits int64.
    """
    n = len(value)
    if n == 0 or n > 20 or value[0] not in _DIGITS:
        return None
    if value.isdigit():
        if value[0] == 48 and n > 1:
            return None
        v = int(value)
        return v if v <= INT64_MAX else None
    if n > 1 and value[0] == 45 and value[1] != 48:
        digits = value[1:]
        if digits.isdigit():
            v = -int(digits)
            return v if v >= INT64_MIN else None
    return None


def encode_int_element(value: int) -> bytes:
    """Element bytes for an int64, using the smallest encoding (lpEncodeIntegerGetType)."""
    if 0 <= value <= 127:
        return bytes((value, 1))
    if -4096 <= value <= 4095:
        if value < 0:
            value += 8192  # two's complement in 13 bits
        return bytes(((value >> 8) | 0xC0, value & 0xFF, 2))
    if -32768 <= value <= 32767:
        return b"\xf1" + value.to_bytes(2, "little", signed=True) + b"\x03"
    if -8388608 <= value <= 8388607:
        return b"\xf2" + value.to_bytes(3, "little", signed=True) + b"\x04"
    if -2147483648 <= value <= 2147483647:
        return b"\xf3" + value.to_bytes(4, "little", signed=True) + b"\x05"
    if INT64_MIN <= value <= INT64_MAX:
        return b"\xf4" + value.to_bytes(8, "little", signed=True) + b"\x09"
    raise ListpackError(f"integer out of int64 range: {value}")


def encode_str_element(value: bytes) -> bytes:
    """Element bytes for ``value`` stored as a string, never as an int."""
    n = len(value)
    if n < 64:
        return _STR6_HEAD[n] + value + _BACKLEN1[n + 1]
    if n < 4096:
        head = bytes((0xE0 | (n >> 8), n & 0xFF))
        return head + value + (_BACKLEN1[n + 2] if n < 126 else encode_backlen(n + 2))
    if n > 0xFFFFFFFF:
        raise ListpackError("string too long for a listpack")
    return b"\xf0" + n.to_bytes(4, "little") + value + encode_backlen(n + 5)


# Encoded elements of short byte strings.  Field names and small repeated values
# (the bulk of every XADD) hit it: a dict lookup costs a fraction of the int
# parse + encoding, and bytes objects cache their hash.  Bounded by clearing it
# when full (cheap, and hot keys come back at once).
_ENC_CACHE: dict[bytes, bytes] = {}
_ENC_CACHE_MAX = 4096
_ENC_CACHE_MAX_LEN = 63  # 6-bit string encodings
cached_element = _ENC_CACHE.get  # bytes -> encoded element, or None if not cached


def encode_element(value: bytes | int) -> bytes:
    """Full element bytes (encoding + data + backlen) for ``value``.

    Bytes that are the canonical decimal form of an int64 are stored as
    integers, exactly as Redis does (lpEncodeGetType)."""
    if type(value) is bytes:
        enc = cached_element(value)
        if enc is not None:
            return enc
        n = len(value)
        if n > _ENC_CACHE_MAX_LEN:
            return _encode_bytes(value)
        if n and value[0] in _DIGITS and (iv := string_to_int64(value)) is not None:
            enc = encode_int_element(iv)
        else:
            enc = _STR6_HEAD[n] + value + _BACKLEN1[n + 1]  # n < 64: 6-bit string
        if len(_ENC_CACHE) >= _ENC_CACHE_MAX:
            _ENC_CACHE.clear()
        _ENC_CACHE[value] = enc
        return enc
    if isinstance(value, int):
        return encode_int_element(value)
    return _encode_bytes(bytes(value))  # bytearray / memoryview


def _encode_bytes(value: bytes) -> bytes:
    if value and value[0] in _DIGITS:  # cheap pre-check before the full parse
        iv = string_to_int64(value)
        if iv is not None:
            return encode_int_element(iv)
    return encode_str_element(value)


def element_as_bytes(value: bytes | int) -> bytes:
    """An element's value as bytes: ints rendered in decimal."""
    if isinstance(value, int):
        return str(value).encode()
    return value


# --- decoding ----------------------------------------------------------------


def decode_element(buf: bytearray | bytes, off: int) -> tuple[bytes | int, int]:
    """Value of the element at ``off`` and the offset just after its backlen.

    Integers come back as int, strings as bytes.  After the last element the
    returned offset is that of the 0xFF end byte."""
    try:
        b = buf[off]
        if b < 0x80:  # 0xxxxxxx 7-bit uint
            return b, off + 2
        if b < 0xC0:  # 10xxxxxx 6-bit string length
            end = off + 1 + (b & 0x3F)
            return bytes(buf[off + 1 : end]), end + 1
        if b < 0xE0:  # 110xxxxx yyyyyyyy 13-bit signed int
            v = ((b & 0x1F) << 8) | buf[off + 1]
            return (v - 8192 if v >= 4096 else v), off + 3
        if b < 0xF0:  # 1110xxxx yyyyyyyy 12-bit string length
            n = ((b & 0x0F) << 8) | buf[off + 1]
            end = off + 2 + n
            return bytes(buf[off + 2 : end]), end + (1 if n < 126 else 2)
        if b == 0xF1:
            return _unpack_i16(buf, off + 1)[0], off + 4
        if b == 0xF3:
            return _unpack_i32(buf, off + 1)[0], off + 6
        if b == 0xF4:
            return _unpack_i64(buf, off + 1)[0], off + 10
        if b == 0xF2:
            if off + 4 > len(buf):
                raise ListpackError("truncated element")
            return int.from_bytes(buf[off + 1 : off + 4], "little", signed=True), off + 5
        if b == 0xF0:
            n = _unpack_u32(buf, off + 1)[0]
            end = off + 5 + n
            if end > len(buf):
                raise ListpackError("truncated element")
            return bytes(buf[off + 5 : end]), end + backlen_size(n + 5)
    except (IndexError, struct.error):
        raise ListpackError(f"bad listpack offset {off}") from None
    if b == EOF_BYTE:
        raise ListpackError(f"offset {off} is the end of the listpack")
    raise ListpackError(f"invalid listpack encoding byte 0x{b:02x}")


def decode_many(buf: bytearray | bytes, off: int, count: int) -> tuple[list[bytes | int], int]:
    """``count`` consecutive values starting at ``off`` and the offset after them."""
    out: list[bytes | int] = []
    append = out.append
    for _ in range(count):
        v, off = decode_element(buf, off)
        append(v)
    return out, off


def next_offset(buf: bytearray | bytes, off: int) -> int:
    """Offset just after the element at ``off`` (after its backlen), without decoding it."""
    try:
        b = buf[off]
        if b < 0x80:
            return off + 2
        if b < 0xC0:
            return off + 2 + (b & 0x3F)
        if b < 0xE0:
            return off + 3
        if b < 0xF0:
            n = ((b & 0x0F) << 8) | buf[off + 1]
            return off + 2 + n + (1 if n < 126 else 2)
        if b == 0xF0:
            n = _unpack_u32(buf, off + 1)[0]
            return off + 5 + n + backlen_size(n + 5)
        size = _INT_ELEMENT_SIZE.get(b)
        if size is not None:
            return off + size
    except (IndexError, struct.error):
        raise ListpackError(f"bad listpack offset {off}") from None
    if b == EOF_BYTE:
        raise ListpackError(f"offset {off} is the end of the listpack")
    raise ListpackError(f"invalid listpack encoding byte 0x{b:02x}")


def decode_backlen(buf: bytearray | bytes, p: int) -> tuple[int, int]:
    """(length, number of backlen bytes) for the backlen whose last byte is at ``p``
    (lpDecodeBacklen: least significant group first, walking left)."""
    try:
        b = buf[p]
        length = b & 127
        size = 1
        while b >= 128:
            if size == 5:
                raise ListpackError("backlen longer than 5 bytes")
            p -= 1
            if p < 0:
                raise IndexError
            b = buf[p]
            length |= (b & 127) << (7 * size)
            size += 1
    except IndexError:
        raise ListpackError(f"bad backlen offset {p}") from None
    return length, size


def prev_offset(buf: bytearray | bytes, off: int) -> int:
    """Offset of the element before ``off`` (which may be the 0xFF byte), -1 if none."""
    if off <= HEADER_SIZE:
        return -1
    p = off - 1
    try:
        b = buf[p]
    except IndexError:
        raise ListpackError(f"bad listpack offset {off}") from None
    if b < 128:  # one-byte backlen, the common case
        start = p - b
    else:
        length, size = decode_backlen(buf, p)
        start = off - size - length
    if start < HEADER_SIZE:
        raise ListpackError(f"backlen before offset {off} points outside the listpack")
    return start


# --- the listpack ----------------------------------------------------------


class Listpack:
    """A listpack in ``self.buf``; every mutation keeps header and backlens exact."""

    __slots__ = ("buf",)

    def __init__(self, buf: bytearray | None = None) -> None:
        self.buf: bytearray = bytearray(_EMPTY) if buf is None else buf

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, validate: bool = True) -> Listpack:
        lp = cls(bytearray(data))
        if validate:
            lp.validate(deep=True)
        return lp

    @classmethod
    def from_values(cls, values: Iterable[bytes | int]) -> Listpack:
        lp = cls()
        lp.extend(values)
        return lp

    def __repr__(self) -> str:
        return f"<Listpack {len(self)} elements, {len(self.buf)} bytes>"

    # --- size ---

    def __len__(self) -> int:
        buf = self.buf
        count = buf[4] | (buf[5] << 8)
        if count != NUMELE_UNKNOWN:
            return count
        count = 0
        off = HEADER_SIZE
        end = len(buf) - 1
        while off < end:
            off = next_offset(buf, off)
            count += 1
        if count < NUMELE_UNKNOWN:  # cache it back, as lpLength does
            buf[4] = count & 0xFF
            buf[5] = count >> 8
        return count

    def __bool__(self) -> bool:
        return self.buf[HEADER_SIZE] != EOF_BYTE

    @property
    def nbytes(self) -> int:
        return len(self.buf)

    def header_count(self) -> int:
        """The raw 16-bit element count from the header (65535 = unknown)."""
        return self.buf[4] | (self.buf[5] << 8)

    # --- navigation ---

    def first(self) -> int:
        return HEADER_SIZE if self.buf[HEADER_SIZE] != EOF_BYTE else -1

    def last(self) -> int:
        buf = self.buf
        return prev_offset(buf, len(buf) - 1)

    def next(self, off: int) -> int:
        buf = self.buf
        nxt = next_offset(buf, off)
        return -1 if nxt >= len(buf) - 1 else nxt

    def prev(self, off: int) -> int:
        return prev_offset(self.buf, off)

    def get(self, off: int) -> bytes | int:
        return decode_element(self.buf, off)[0]

    def get_bytes(self, off: int) -> bytes:
        v = decode_element(self.buf, off)[0]
        return str(v).encode() if isinstance(v, int) else v

    def seek(self, index: int) -> int:
        """Offset of element ``index`` (negative counts from the tail), -1 if out of range."""
        buf = self.buf
        count = buf[4] | (buf[5] << 8)
        if count != NUMELE_UNKNOWN:
            if index < 0:
                index += count
            if index < 0 or index >= count:
                return -1
            if index > count // 2:  # closer to the tail: walk backwards
                index -= count
        if index >= 0:
            off = HEADER_SIZE
            end = len(buf) - 1
            for _ in range(index):
                if off >= end:
                    return -1
                off = next_offset(buf, off)
            return off if off < end else -1
        off = len(buf) - 1
        for _ in range(-index):
            off = prev_offset(buf, off)
            if off < 0:
                return -1
        return off

    # --- mutation ---

    def _commit(self, total: int, delta: int) -> None:
        """Write the header after the buffer changed by ``delta`` elements."""
        buf = self.buf
        count = buf[4] | (buf[5] << 8)
        if count != NUMELE_UNKNOWN:
            count += delta
            if count > NUMELE_UNKNOWN:
                count = NUMELE_UNKNOWN
        _pack_hdr(buf, 0, total, count)

    def _check_growth(self, extra: int) -> int:
        total = len(self.buf) + extra
        if total > MAX_TOTAL_BYTES:
            raise ListpackError("listpack would exceed 2**32-1 bytes")
        return total

    def _check_element_offset(self, off: int) -> None:
        if off < HEADER_SIZE or off >= len(self.buf) - 1:
            raise ListpackError(f"bad listpack element offset {off}")

    def append(self, value: bytes | int) -> None:
        enc = encode_int_element(value) if type(value) is int else encode_element(value)
        buf = self.buf
        total = self._check_growth(len(enc))
        del buf[-1]  # the end byte goes back after the element (cheaper than an insert)
        buf += enc
        buf.append(EOF_BYTE)
        self._commit(total, 1)

    def append_encoded(self, blob: bytes, count: int) -> None:
        """Append ``count`` already-encoded elements (concatenated encode_element
        outputs) with one header update."""
        # _check_growth and _commit inlined: this is every XADD's write.
        buf = self.buf
        end = len(buf) - 1
        total = end + 1 + len(blob)
        if total > MAX_TOTAL_BYTES:
            raise ListpackError("listpack would exceed 2**32-1 bytes")
        # Drop the end byte, extend, put it back: cheaper than inserting before it.
        del buf[end]
        buf += blob
        buf.append(EOF_BYTE)
        nele = buf[4] | (buf[5] << 8)
        if nele != NUMELE_UNKNOWN:
            nele += count
            if nele > NUMELE_UNKNOWN:
                nele = NUMELE_UNKNOWN
        _pack_hdr(buf, 0, total, nele)

    def extend(self, values: Iterable[bytes | int]) -> None:
        encoded = [encode_element(v) for v in values]
        self.append_encoded(b"".join(encoded), len(encoded))

    def insert(self, off: int, value: bytes | int, after: bool = False) -> int:
        """Insert before (or after) the element at ``off``; returns the new element's offset.

        Inserting before the 0xFF end byte appends."""
        buf = self.buf
        if off < HEADER_SIZE or off >= len(buf) or (after and off == len(buf) - 1):
            raise ListpackError(f"bad listpack element offset {off}")
        pos = next_offset(buf, off) if after else off
        enc = encode_element(value)
        total = self._check_growth(len(enc))
        buf[pos:pos] = enc
        self._commit(total, 1)
        return pos

    def replace(self, off: int, value: bytes | int) -> None:
        self._check_element_offset(off)
        buf = self.buf
        end = next_offset(buf, off)
        enc = encode_element(value)
        total = self._check_growth(len(enc) - (end - off))
        buf[off:end] = enc
        self._commit(total, 0)

    def replace_int_inplace(self, off: int, value: int) -> bool:
        """Overwrite the element at ``off`` with int ``value`` if the new encoding
        has the same size; returns False (and changes nothing) otherwise."""
        buf = self.buf
        if off < HEADER_SIZE or off >= len(buf) - 1:
            raise ListpackError(f"bad listpack element offset {off}")
        if buf[off] < 0x80 and 0 <= value <= 127:  # 7-bit fast path
            buf[off] = value
            return True
        end = next_offset(buf, off)
        enc = encode_int_element(value)
        if len(enc) != end - off:
            return False
        buf[off:end] = enc
        return True

    def delete(self, off: int) -> int:
        """Delete the element at ``off``; returns the offset of the element that
        followed it (now at ``off``), or -1 if it was the last."""
        self._check_element_offset(off)
        buf = self.buf
        end = next_offset(buf, off)
        del buf[off:end]
        self._commit(len(buf), -1)
        return off if buf[off] != EOF_BYTE else -1

    def delete_range(self, off: int, count: int) -> None:
        """Delete up to ``count`` elements starting at ``off`` (fewer if the end comes first)."""
        if count <= 0:
            return
        self._check_element_offset(off)
        buf = self.buf
        last = len(buf) - 1
        end = off
        deleted = 0
        while deleted < count and end < last:
            end = next_offset(buf, end)
            deleted += 1
        del buf[off:end]
        self._commit(len(buf), -deleted)

    def clear(self) -> None:
        self.buf[:] = _EMPTY

    # --- iteration ---

    def __iter__(self) -> Iterator[bytes | int]:
        buf = self.buf
        off = HEADER_SIZE
        end = len(buf) - 1
        while off < end:
            v, off = decode_element(buf, off)
            yield v

    def iter_reverse(self) -> Iterator[bytes | int]:
        buf = self.buf
        off = prev_offset(buf, len(buf) - 1)
        while off >= 0:
            yield decode_element(buf, off)[0]
            off = prev_offset(buf, off)

    def to_list(self) -> list[bytes | int]:
        return list(self)

    # --- validation ---

    def validate(self, deep: bool = True) -> None:
        """Raise ListpackError on any inconsistency (lpValidateIntegrity, stricter:
        each backlen must be byte-exact what lpEncodeBacklen would write)."""
        validate_buffer(self.buf, deep)
