"""Validation of untrusted listpack buffers (snapshots, DEBUG RELOAD): every read is
bounds-checked, every backlen must be exactly what Redis writes, and it always terminates."""

from __future__ import annotations

from storage.listpack_format import (
    _INT_ELEMENT_SIZE,
    EMPTY_SIZE,
    EOF_BYTE,
    HEADER_SIZE,
    NUMELE_UNKNOWN,
    ListpackError,
    _unpack_hdr,
    _unpack_u32,
    backlen_size,
    encode_backlen,
)


def _element_span(buf: bytearray | bytes, off: int, limit: int) -> int:
    """Length of encoding+data at ``off``, checking every read stays below ``limit``."""
    b = buf[off]
    if b < 0x80:
        return 1
    if b < 0xC0:
        return 1 + (b & 0x3F)
    if b < 0xE0:
        return 2
    if b < 0xF0:
        if off + 2 > limit:
            raise ListpackError(f"element header at {off} runs past the end")
        return 2 + (((b & 0x0F) << 8) | buf[off + 1])
    if b == 0xF0:
        if off + 5 > limit:
            raise ListpackError(f"element header at {off} runs past the end")
        return 5 + _unpack_u32(buf, off + 1)[0]
    size = _INT_ELEMENT_SIZE.get(b)
    if size is not None:
        return size - 1  # those sizes include the 1-byte backlen
    if b == EOF_BYTE:
        raise ListpackError(f"unexpected end byte at {off}")
    raise ListpackError(f"invalid encoding byte 0x{b:02x} at {off}")


def validate_buffer(buf: bytearray | bytes, deep: bool = True) -> None:
    """Check a listpack buffer; raises ListpackError, never loops forever."""
    size = len(buf)
    if size < EMPTY_SIZE:
        raise ListpackError("listpack shorter than header + end byte")
    total, header_count = _unpack_hdr(buf, 0)
    if total != size:
        raise ListpackError(f"header says {total} bytes, buffer has {size}")
    if buf[size - 1] != EOF_BYTE:
        raise ListpackError("listpack does not end with 0xFF")
    if not deep:
        return
    last = size - 1
    off = HEADER_SIZE
    count = 0
    while off < last:  # every element is >= 2 bytes, so this terminates
        length = _element_span(buf, off, last)
        bl = backlen_size(length)
        nxt = off + length + bl
        if nxt > last:
            raise ListpackError(f"element at {off} runs past the end")
        if buf[off + length : nxt] != encode_backlen(length):
            raise ListpackError(f"backlen of element at {off} does not match its length")
        off = nxt
        count += 1
    if header_count != NUMELE_UNKNOWN and header_count != count:
        raise ListpackError(f"header says {header_count} elements, found {count}")
