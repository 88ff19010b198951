"""Finding an entry by ID inside a stream node.

A node's entries can only be walked one by one (each is variable-length), so a
lookup in the middle of a 100-entry node used to cost tens of microseconds.
StreamNode.marks holds the offset of every MARK_EVERY-th entry (relative to the
first entry, native uint16: they live only in memory): a lookup bisects the
marks, decoding just the IDs there, then walks at most MARK_EVERY - 1 entries.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left

from storage.listpack import decode_element, next_offset, prev_offset
from storage.stream_id import UINT64_MAX, StreamID
from storage.stream_node import FLAG_SAMEFIELDS, StreamNode

__all__ = ["MARK_EVERY", "build_marks", "mark_bytes", "seek_entry"]

MARK_EVERY = 8
_MARK_MAX = 0xFFFF  # entries further than this from the first one get no mark
_M64 = UINT64_MAX
_pack_mark = struct.Struct("=H").pack


def mark_bytes(rel: int) -> bytes:
    """One mark, or b"" when ``rel`` does not fit (huge nodes: they walk further)."""
    return _pack_mark(rel) if rel <= _MARK_MAX else b""


def _skip_entry(data: bytes | bytearray, off: int, nmaster: int) -> int:
    """Offset of the entry after the one whose flags are at ``off``."""
    flags = data[off]
    q = off + 2
    b = data[q]  # ms-diff: 7-bit, 13-bit or wider int
    q = q + 2 if b < 0x80 else q + 3 if b < 0xE0 else next_offset(data, q)
    b = data[q]  # seq-diff
    q = q + 2 if b < 0x80 else q + 3 if b < 0xE0 else next_offset(data, q)
    if flags & FLAG_SAMEFIELDS:
        n = nmaster + 1
    else:
        b = data[q]
        if b < 0x80:
            nf = b
            q += 2
        else:
            nf, q = decode_element(data, q)  # type: ignore[assignment]
        n = 2 * nf + 1
    for _ in range(n):  # the values (and names), then lp-count
        b = data[q]
        if b < 0x80:  # 7-bit uint
            q += 2
        elif b < 0xC0:  # short string
            q += (b & 0x3F) + 2
        elif b < 0xE0:  # 13-bit int
            q += 3
        else:
            q = next_offset(data, q)
    return q


def _id_below(data: bytes | bytearray, off: int, mms: int, mseq: int, tms: int, tseq: int) -> bool:
    """Whether the entry whose flags are at ``off`` has an ID below (tms, tseq)."""
    q = off + 2
    b = data[q]
    if b < 0x80:
        ms = mms + b  # a 7-bit ms-diff is never a wrapped one
        q += 2
    elif b < 0xE0:
        v = ((b & 0x1F) << 8) | data[q + 1]
        ms = (mms + (v - 8192 if v >= 4096 else v)) & _M64
        q += 3
    else:
        msd, q = decode_element(data, q)
        ms = (mms + msd) & _M64  # type: ignore[operator]
    if ms != tms:
        return ms < tms
    b = data[q]
    if b < 0x80:
        seqd = b
    elif b < 0xE0:
        v = ((b & 0x1F) << 8) | data[q + 1]
        seqd = v - 8192 if v >= 4096 else v
    else:
        seqd = decode_element(data, q)[0]  # type: ignore[assignment]
    return (mseq + seqd) & _M64 < tseq


def _back_from_end(
    data: bytes | bytearray, floor_off: int, mms: int, mseq: int, tms: int, tseq: int
) -> int:
    """seek_entry's answer when the entry at ``floor_off`` is below the target: the
    entry after the last one below it, found walking back from the end with lp-count."""
    cur = len(data) - 1
    while True:
        p = cur - 1 - data[cur - 1] if data[cur - 1] < 128 else prev_offset(data, cur)
        b = data[p]  # the previous entry's lp-count, then back over that many elements
        lp_count = b if b < 0x80 else decode_element(data, p)[0]
        for _ in range(lp_count):  # type: ignore[arg-type]
            b = data[p - 1]  # last backlen byte: < 128 is a one-byte backlen
            p = p - 1 - b if b < 128 else prev_offset(data, p)
        if p == floor_off or _id_below(data, p, mms, mseq, tms, tseq):
            return cur
        cur = p


def build_marks(data: bytes | bytearray, first_off: int, nmaster: int) -> bytes:
    """The marks of a whole node (one walk)."""
    out = array("H")
    end = len(data) - 1
    off = first_off
    i = 0
    while off < end:
        if i == MARK_EVERY:
            i = 0
            rel = off - first_off
            if rel > _MARK_MAX:
                break
            out.append(rel)
        off = _skip_entry(data, off, nmaster)
        i += 1
    return out.tobytes()


def seek_entry(
    node: StreamNode,
    data: bytes | bytearray,
    mms: int,
    mseq: int,
    nmaster: int,
    first_off: int,
    target: StreamID,
    after: int = 0,
) -> int:
    """Offset of the node's first entry (deleted or not) with ID >= ``target``, or of
    its end byte if there is none.  ``data`` holds the node's bytes (node.buf or a
    copy of it); (mms, mseq) is its master ID.  ``after``: the offset, relative to
    the first entry, of an entry known to have an ID <= target (a lookup just
    before), where the search may start."""
    end = len(data) - 1
    tms, tseq = target
    if first_off >= end or tms < mms or (tms == mms and tseq <= mseq):
        return first_off
    marks = node.marks
    if marks is None:
        marks = node.marks = build_marks(data, first_off, nmaster)
    rels = memoryview(marks).cast("H")
    # Bisect: marks[:lo] are entries with ID < target, marks[hi:] with ID >= target.
    lo = 0
    hi = len(rels)
    if after:
        lo = bisect_left(rels, after)  # marks before ``after`` are below target
        # A run of lookups moves a little at a time: try the next mark first.
        if lo < hi and not _id_below(data, first_off + rels[lo], mms, mseq, tms, tseq):
            hi = lo
    elif hi:
        # XREAD asks for the newest entries: try the last block first, walking back
        # from the end (as many steps as entries at or after target).
        last_mark = first_off + rels[hi - 1]
        if _id_below(data, last_mark, mms, mseq, tms, tseq):
            return _back_from_end(data, last_mark, mms, mseq, tms, tseq)
        hi -= 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if _id_below(data, first_off + rels[mid], mms, mseq, tms, tseq):
            lo = mid + 1
        else:
            hi = mid
    # Walk from the last entry known to be below (or at) target: fewer than
    # MARK_EVERY entries.  _id_below and _skip_entry inlined: one pass per entry.
    off = first_off + (rels[lo - 1] if lo and rels[lo - 1] > after else after)
    dec = decode_element
    nxt = next_offset
    while off < end:
        q = off + 2
        b = data[q]
        if b < 0x80:
            ms = mms + b
            q += 2
        elif b < 0xE0:
            v = ((b & 0x1F) << 8) | data[q + 1]
            ms = (mms + (v - 8192 if v >= 4096 else v)) & _M64
            q += 3
        else:
            msd, q = dec(data, q)
            ms = (mms + msd) & _M64  # type: ignore[operator]
        b = data[q]
        if b < 0x80:
            seqd = b
            q += 2
        elif b < 0xE0:
            v = ((b & 0x1F) << 8) | data[q + 1]
            seqd = v - 8192 if v >= 4096 else v
            q += 3
        else:
            seqd, q = dec(data, q)  # type: ignore[assignment]
        if ms > tms or (ms == tms and (mseq + seqd) & _M64 >= tseq):
            return off
        if data[off] & FLAG_SAMEFIELDS:
            n = nmaster + 1
        else:
            b = data[q]
            if b < 0x80:
                nf = b
                q += 2
            else:
                nf, q = dec(data, q)  # type: ignore[assignment]
            n = 2 * nf + 1
        for _ in range(n):  # the values (and names), then lp-count
            b = data[q]
            if b < 0x80:
                q += 2
            elif b < 0xC0:
                q += b - 0x7E  # short string: 0x80 | length, then its backlen
            elif b < 0xE0:
                q += 3
            else:
                q = nxt(data, q)
        off = q
    return end
