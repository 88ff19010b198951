"""The listpack's fixed pieces (listpack.c): the header, the end byte, and the backlen that
ends each element. storage/listpack.py encodes and decodes elements on them, and
storage/listpack_validate.py checks untrusted buffers with them."""

from __future__ import annotations

import struct


class ListpackError(ValueError):
    """Corrupt buffer, bad offset, or a value the format cannot hold."""


HEADER_SIZE = 6
EOF_BYTE = 0xFF
NUMELE_UNKNOWN = 65535
EMPTY_SIZE = HEADER_SIZE + 1

_HDR = struct.Struct("<IH")
_pack_hdr = _HDR.pack_into
# pack_header(buf, 0, total_bytes, numele): for a caller that appends in place itself
# (Stream.append, the one write of every XADD, saves the call of append_encoded).
pack_header = _pack_hdr
_unpack_hdr = _HDR.unpack_from
_unpack_u32 = struct.Struct("<I").unpack_from

# One-byte backlens (lengths 0..127) are by far the most common.
_BACKLEN1 = [bytes((i,)) for i in range(128)]
# Full element size (encoding + data + backlen) of the fixed-size int encodings.
_INT_ELEMENT_SIZE = {0xF1: 4, 0xF2: 5, 0xF3: 6, 0xF4: 10}


# --- backlen -----------------------------------------------------------------


def backlen_size(length: int) -> int:
    """Bytes lpEncodeBacklen uses for ``length`` (note Redis's ``<`` thresholds)."""
    if length <= 127:
        return 1
    if length < 16383:
        return 2
    if length < 2097151:
        return 3
    if length < 268435455:
        return 4
    return 5


def encode_backlen(length: int) -> bytes:
    """The backlen bytes for an element whose encoding+data is ``length`` bytes."""
    if length <= 127:
        return _BACKLEN1[length]
    n = backlen_size(length)
    # Most significant group first, without the 128 flag; the rest flagged.
    out = bytearray(n)
    for i in range(n - 1, -1, -1):
        out[i] = (length & 127) | (128 if i else 0)
        length >>= 7
    return bytes(out)
