"""Range iteration over a stream's rax of listpack nodes (streamIterator).

The generators decode each entry straight from the node's bytes.  Each node is
copied to ``bytes`` before it is walked (one memcpy of <= a few KB), so values
come out as ``bytes`` with a single slice, and the walk of a node stays
consistent even if the caller modifies the stream between two ``next()``
calls; moving to the following node re-seeks the rax from the last node key.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator

from storage.listpack import decode_element, next_offset, prev_offset
from storage.rax import Rax
from storage.stream_id import MAX_ID, UINT64_MAX, StreamID, id_to_key, incr_id
from storage.stream_node import (
    FLAG_DELETED,
    FLAG_SAMEFIELDS,
    locate_entry,
    read_master,
    skip_entry_body,
)

__all__ = ["Entry", "decode_fields", "iter_backward", "iter_forward"]

Entry = tuple[StreamID, list[bytes]]
# (listpack, node bytes, master ID, master field count, first entry offset,
#  count + deleted, target) -> offset of the first entry with ID >= target.
Locate = Callable[[object, bytes, StreamID, int, int, int, StreamID], int]

_M64 = UINT64_MAX
_unpack_key = struct.Struct(">QQ").unpack
_SMALL_STR = [b"%d" % i for i in range(128)]


def decode_fields(
    data: bytes, off: int, flags: int, template: list[bytes | None]
) -> tuple[list[bytes], int]:
    """Fields of the entry whose body starts at ``off`` (just after seq-diff), as a
    flat [f1, v1, ...] list of bytes, and the offset after its lp-count.

    ``template`` is the master field names interleaved with None placeholders."""
    dec = decode_element
    small = _SMALL_STR
    if flags & FLAG_SAMEFIELDS:
        out = template.copy()
        idx = range(1, len(out), 2)
    else:
        b = data[off]
        if b < 0x80:
            n = b
            off += 2
        else:
            n, off = dec(data, off)  # type: ignore[assignment]
        out = [None] * (2 * n)
        idx = range(2 * n)
    for i in idx:
        b = data[off]
        if b < 0x80:  # 7-bit uint
            out[i] = small[b]
            off += 2
        elif b < 0xC0:  # short string
            e = off + 1 + (b & 0x3F)
            out[i] = data[off + 1 : e]
            off = e + 1
        else:
            v, off = dec(data, off)
            out[i] = b"%d" % v if type(v) is int else v
    # lp-count
    off = off + 2 if data[off] < 0x80 else next_offset(data, off)
    return out, off  # type: ignore[return-value]


def _template(names: list[bytes]) -> list[bytes | None]:
    t: list[bytes | None] = [None] * (2 * len(names))
    t[0::2] = names
    return t


def _plain_locate(
    lp: object,
    data: bytes,
    master: StreamID,
    nmaster: int,
    first_off: int,
    nentries: int,
    target: StreamID,
) -> int:
    return locate_entry(data, master, nmaster, first_off, target, nentries)


def iter_forward(
    rax: Rax, start: StreamID, end: StreamID, locate: Locate = _plain_locate
) -> Iterator[Entry]:
    """Live entries with start <= id <= end, ascending."""
    if start > end:
        return
    it = rax.iterator()
    # The node that may hold ``start`` is the last one whose master ID <= start.
    it.seek("<=", id_to_key(start))
    if not it.next():
        it.seek("^")
        if not it.next():
            return
    dec = decode_element
    first_node = True
    while True:
        key = it.key
        mms, mseq = _unpack_key(key)
        if (mms, mseq) > end:
            return
        lp = it.value
        data = bytes(lp.buf)  # type: ignore[union-attr]
        count, deleted, names, off = read_master(data)  # type: ignore[arg-type]
        nm = len(names)
        if first_node:
            off = locate(lp, data, (mms, mseq), nm, off, count + deleted, start)
            first_node = False
        template = _template(names)
        stop = len(data) - 1
        while off < stop:
            flags = data[off]  # always a 7-bit uint element (0..3)
            off += 2
            b = data[off]
            if b < 0x80:
                msd = b
                off += 2
            else:
                msd, off = dec(data, off)  # type: ignore[assignment]
            b = data[off]
            if b < 0x80:
                seqd = b
                off += 2
            else:
                seqd, off = dec(data, off)  # type: ignore[assignment]
            eid = ((mms + msd) & _M64, (mseq + seqd) & _M64)
            if eid > end:
                return
            if flags & FLAG_DELETED:
                off = skip_entry_body(data, off, flags, nm)  # type: ignore[arg-type]
                continue
            fields, off = decode_fields(data, off, flags, template)
            yield eid, fields
        it.seek(">", key)
        if not it.next():
            return


def iter_backward(
    rax: Rax, start: StreamID, end: StreamID, locate: Locate = _plain_locate
) -> Iterator[Entry]:
    """Live entries with start <= id <= end, descending (walks each node from its
    tail using lp-count, as streamIteratorGetID does in reverse)."""
    if start > end:
        return
    it = rax.iterator()
    it.seek("<=", id_to_key(end))
    if not it.prev():
        return
    last_node = True
    dec = decode_element
    prev = prev_offset
    while True:
        key = it.key
        master = _unpack_key(key)
        mms, mseq = master
        lp = it.value
        data = bytes(lp.buf)  # type: ignore[union-attr]
        count, deleted, names, first_off = read_master(data)  # type: ignore[arg-type]
        template = _template(names)
        off = len(data) - 1  # walk back from the entry before ``off``
        if last_node:
            if end < MAX_ID:
                off = locate(lp, data, master, len(names), first_off, count + deleted, incr_id(end))
            last_node = False
        while off > first_off:
            # Inline prev_entry: back to the previous lp-count, then lp-count elements.
            p = prev(data, off)
            b = data[p]
            lp_count = b if b < 0x80 else dec(data, p)[0]
            for _ in range(lp_count):  # type: ignore[arg-type]
                b = data[p - 1]  # last backlen byte: < 128 means a one-byte backlen
                p = p - 1 - b if b < 128 else prev(data, p)
            off = p
            flags = data[p]
            p += 2
            b = data[p]
            if b < 0x80:
                msd = b
                p += 2
            else:
                msd, p = dec(data, p)  # type: ignore[assignment]
            b = data[p]
            if b < 0x80:
                seqd = b
                p += 2
            else:
                seqd, p = dec(data, p)  # type: ignore[assignment]
            eid = ((mms + msd) & _M64, (mseq + seqd) & _M64)
            if eid < start:
                return
            if not flags & FLAG_DELETED:
                fields, _ = decode_fields(data, p, flags, template)
                yield eid, fields
        if master <= start:
            return
        it.seek("<", key)
        if not it.prev():
            return
