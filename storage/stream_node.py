"""The byte layout of one stream node (a listpack), as t_stream.c writes it.

A node starts with the master entry::

    count  deleted  num-fields  field_1 ... field_N  0

``count`` live entries and ``deleted`` entries flagged DELETED follow; the
trailing ``0`` doubles as the lp-count of the master entry for backward walks.
Each entry is::

    flags  ms-diff  seq-diff  [num-fields  f_1 v_1 ... f_M v_M | v_1 ... v_N]  lp-count

with the bracketed field names omitted when ``flags`` has SAMEFIELDS (the
entry's field names equal the master's, same count and order).  ms-diff and
seq-diff are ``id - master_id`` per 64-bit half, computed in unsigned
arithmetic and stored as int64 (so a seq-diff is often negative), and decoded
by adding back modulo 2**64.  lp-count is the number of elements of the entry
before it: 3 + N with SAMEFIELDS, 4 + 2*M otherwise.
"""

from __future__ import annotations

from bisect import bisect_left

from storage.listpack import (
    HEADER_SIZE,
    Listpack,
    ListpackError,
    decode_element,
    encode_element,
    encode_int_element,
    next_offset,
    prev_offset,
)
from storage.stream_id import UINT64_MAX, StreamID

__all__ = [
    "FLAG_DELETED",
    "FLAG_NONE",
    "FLAG_SAMEFIELDS",
    "MAX_NODE_BYTES",
    "NodeInfo",
    "NodeLocator",
    "StreamCorruption",
    "as_bytes",
    "check_node",
    "encode_entry",
    "encode_master",
    "entry_id_at",
    "index_node",
    "locate_entry",
    "node_last_id",
    "prev_entry",
    "read_master",
    "scan_entries",
    "set_master_counts",
    "skip_entry_body",
    "wrap_i64",
]

FLAG_NONE = 0
FLAG_DELETED = 1
FLAG_SAMEFIELDS = 2

# STREAM_LISTPACK_MAX_SIZE: hard cap of a node, and of one entry's field bytes.
MAX_NODE_BYTES = 1 << 30

_M64 = UINT64_MAX
_I64_MAX = 2**63 - 1
_TWO64 = 2**64

# Precomputed 7-bit uint elements (flags, small diffs, small lp-counts).
_SMALL_INT = [bytes((i, 1)) for i in range(128)]


class StreamCorruption(ValueError):
    """A node whose bytes do not follow the stream node layout."""


def wrap_i64(diff: int) -> int:
    """An unsigned 64-bit difference as the int64 lpAppendInteger stores."""
    diff &= _M64
    return diff - _TWO64 if diff > _I64_MAX else diff


def as_bytes(v: bytes | int) -> bytes:
    return b"%d" % v if type(v) is int else v  # type: ignore[return-value]


def _enc_int(v: int) -> bytes:
    return _SMALL_INT[v] if 0 <= v < 128 else encode_int_element(v)


def encode_master(names: list[bytes]) -> tuple[bytes, int]:
    """Master entry of a fresh node holding one live entry: (bytes, element count)."""
    n = len(names)
    parts = [_SMALL_INT[1], _SMALL_INT[0], _enc_int(n)]
    parts.extend(map(encode_element, names))
    parts.append(_SMALL_INT[0])
    return b"".join(parts), n + 4


def encode_entry(
    fields: list[bytes], ms_diff: int, seq_diff: int, samefields: bool
) -> tuple[bytes, int]:
    """One entry (``fields`` flat [f1, v1, ...]): (bytes, element count)."""
    n = len(fields) >> 1
    enc = encode_element
    if samefields:
        parts = [_SMALL_INT[FLAG_SAMEFIELDS], _enc_int(ms_diff), _enc_int(seq_diff)]
        parts.extend(map(enc, fields[1::2]))
        parts.append(_enc_int(n + 3))
        return b"".join(parts), n + 4
    parts = [_SMALL_INT[FLAG_NONE], _enc_int(ms_diff), _enc_int(seq_diff), _enc_int(n)]
    parts.extend(map(enc, fields))
    parts.append(_enc_int(2 * n + 4))
    return b"".join(parts), 2 * n + 5


def read_master(buf: bytes | bytearray) -> tuple[int, int, list[bytes], int]:
    """(count, deleted, master field names, offset of the first entry)."""
    dec = decode_element
    count, off = dec(buf, HEADER_SIZE)
    deleted, off = dec(buf, off)
    n, off = dec(buf, off)
    names = []
    for _ in range(n):  # type: ignore[arg-type]
        v, off = dec(buf, off)
        names.append(b"%d" % v if type(v) is int else v)
    return count, deleted, names, next_offset(buf, off)  # type: ignore[return-value]


def set_master_counts(lp: Listpack, count: int, deleted: int) -> None:
    """Rewrite the master entry's count and deleted elements (in place when the
    encodings keep their size, as lpReplaceInteger would produce the same bytes)."""
    if not lp.replace_int_inplace(HEADER_SIZE, count):
        lp.replace(HEADER_SIZE, count)
    off = next_offset(lp.buf, HEADER_SIZE)
    if not lp.replace_int_inplace(off, deleted):
        lp.replace(off, deleted)


def skip_entry_body(buf: bytes | bytearray, off: int, flags: int, nmaster: int) -> int:
    """From just after an entry's seq-diff, the offset just after its lp-count."""
    if flags & FLAG_SAMEFIELDS:
        n = nmaster + 1
    else:
        b = buf[off]
        if b < 0x80:
            nf = b
            off += 2
        else:
            nf, off = decode_element(buf, off)  # type: ignore[assignment]
        n = 2 * nf + 1
    nxt = next_offset
    for _ in range(n):
        b = buf[off]
        if b < 0x80:  # 7-bit uint
            off += 2
        elif b < 0xC0:  # short string
            off += (b & 0x3F) + 2
        elif b < 0xE0:  # 13-bit int
            off += 3
        else:
            off = nxt(buf, off)
    return off


def entry_id_at(data: bytes | bytearray, off: int, mms: int, mseq: int) -> tuple[StreamID, int]:
    """ID of the entry whose flags are at ``off`` and the offset after its seq-diff."""
    off += 2  # flags: always a 7-bit uint element
    b = data[off]
    if b < 0x80:
        msd = b
        off += 2
    else:
        msd, off = decode_element(data, off)  # type: ignore[assignment]
    b = data[off]
    if b < 0x80:
        seqd = b
        off += 2
    else:
        seqd, off = decode_element(data, off)  # type: ignore[assignment]
    return ((mms + msd) & _M64, (mseq + seqd) & _M64), off


def prev_entry(data: bytes | bytearray, off: int) -> int:
    """Flags offset of the entry before the one at ``off`` (``off`` may be the end
    byte); the master entry's terminator is returned as-is (its lp-count is 0)."""
    prev = prev_offset
    p = prev(data, off)  # lp-count of the previous entry
    b = data[p]
    lp_count = b if b < 0x80 else decode_element(data, p)[0]
    for _ in range(lp_count):  # type: ignore[arg-type]
        b = data[p - 1]  # last backlen byte: < 128 means a one-byte backlen
        p = p - 1 - b if b < 128 else prev(data, p)
    return p


def node_last_id(buf: bytes | bytearray, master: StreamID) -> StreamID:
    """ID of the node's last entry, deleted or not (lpGetEdgeStreamID, last)."""
    return entry_id_at(buf, prev_entry(buf, len(buf) - 1), master[0], master[1])[0]


def locate_entry(
    data: bytes | bytearray,
    master: StreamID,
    nmaster: int,
    first_off: int,
    target: StreamID,
    nentries: int = 0,
) -> int:
    """Offset of the node's first entry (deleted or not) with ID >= ``target``, or
    of the end byte if there is none.  ``nentries`` is count + deleted (0: unknown).

    Walks from whichever end of the node ``target`` seems closer to (estimated from
    the master and last IDs), so reading the tail of a node (XREAD) or its head
    (XRANGE) does not scan the whole node."""
    end = len(data) - 1
    if target <= master or first_off >= end:
        return first_off
    mms, mseq = master
    last_off = prev_entry(data, end)
    last, _ = entry_id_at(data, last_off, mms, mseq)
    if last < target:
        return end
    if last == target:
        return last_off
    return scan_entries(data, master, nmaster, first_off, last_off, last, target, nentries)


def scan_entries(
    data: bytes | bytearray,
    master: StreamID,
    nmaster: int,
    first_off: int,
    last_off: int,
    last: StreamID,
    target: StreamID,
    nentries: int,
) -> int:
    """locate_entry's walk, for master < target < last (the last entry's ID)."""
    end = len(data) - 1
    mms, mseq = master
    # Estimated position of ``target``: exact for auto IDs sharing an ms with an end.
    n = nentries or 100
    if target[0] == mms:
        before = target[1] - mseq
    elif target[0] == last[0]:
        before = n - (last[1] - target[1])
    else:
        before = n * (target[0] - mms) / (last[0] - mms)
    dec = decode_element
    tms, tseq = target
    if before * 2 >= n:
        prev = prev_offset
        after = last_off  # invariant: the entry at ``after`` has ID >= target
        while after > first_off:
            # Inline prev_entry + entry_id_at: this loop is the hot part of lookups.
            p = prev(data, after)
            b = data[p]
            lp_count = b if b < 0x80 else dec(data, p)[0]
            for _ in range(lp_count):  # type: ignore[arg-type]
                b = data[p - 1]
                p = p - 1 - b if b < 128 else prev(data, p)
            q = p + 2
            b = data[q]
            if b < 0x80:
                msd = b
                q += 2
            else:
                msd, q = dec(data, q)  # type: ignore[assignment]
            ms = (mms + msd) & _M64
            if ms < tms:
                return after
            if ms == tms:
                b = data[q]
                seqd = b if b < 0x80 else dec(data, q)[0]
                if (mseq + seqd) & _M64 < tseq:  # type: ignore[operator]
                    return after
            after = p
        return first_off
    off = first_off
    while off < end:
        flags = data[off]
        q = off + 2
        b = data[q]
        if b < 0x80:
            msd = b
            q += 2
        else:
            msd, q = dec(data, q)  # type: ignore[assignment]
        b = data[q]
        if b < 0x80:
            seqd = b
            q += 2
        else:
            seqd, q = dec(data, q)  # type: ignore[assignment]
        ms = (mms + msd) & _M64
        if ms > tms or (ms == tms and (mseq + seqd) & _M64 >= tseq):
            return off
        # Inline skip_entry_body.
        if flags & FLAG_SAMEFIELDS:
            n = nmaster + 1
        else:
            b = data[q]
            if b < 0x80:
                nf = b
                q += 2
            else:
                nf, q = dec(data, q)  # type: ignore[assignment]
            n = 2 * nf + 1
        for _ in range(n):
            b = data[q]
            if b < 0x80:
                q += 2
            elif b < 0xC0:
                q += (b & 0x3F) + 2
            elif b < 0xE0:
                q += 3
            else:
                q = next_offset(data, q)
        off = q
    return end


def index_node(
    data: bytes | bytearray, master: StreamID, nmaster: int, first_off: int
) -> tuple[list[int], list[StreamID]]:
    """Flags offsets and IDs of every entry of a node (deleted ones included)."""
    offs: list[int] = []
    ids: list[StreamID] = []
    end = len(data) - 1
    mms, mseq = master
    off = first_off
    while off < end:
        flags = data[off]
        eid, body = entry_id_at(data, off, mms, mseq)
        offs.append(off)
        ids.append(eid)
        off = skip_entry_body(data, body, flags, nmaster)
    return offs, ids


class NodeLocator:
    """locate_entry with a one-node index: when two lookups in a row land inside
    the same node, that node's entry offsets and IDs are indexed, and further
    lookups in it bisect (XCLAIM / XAUTOCLAIM / pending-history reads look up
    runs of nearby IDs).  The index is keyed by the listpack object and checked
    against its size and first entry offset: entries never move otherwise
    (flags change in place, appends only add at the end)."""

    __slots__ = ("_lp", "_sig", "_offs", "_ids", "_seen")

    def __init__(self) -> None:
        self._lp: object = None
        self._sig = (0, 0)
        self._offs: list[int] = []
        self._ids: list[StreamID] = []
        self._seen: object = None

    def forget(self) -> None:
        self._lp = self._seen = None
        self._offs = []
        self._ids = []

    def locate(
        self,
        lp: object,
        data: bytes | bytearray,
        master: StreamID,
        nmaster: int,
        first_off: int,
        nentries: int,
        target: StreamID,
    ) -> int:
        """Same result as locate_entry(data, master, nmaster, first_off, target)."""
        end = len(data) - 1
        if target <= master or first_off >= end:
            return first_off
        if self._lp is lp and self._sig == (end, first_off):
            i = bisect_left(self._ids, target)
            return self._offs[i] if i < len(self._offs) else end
        mms, mseq = master
        last_off = prev_entry(data, end)
        last, _ = entry_id_at(data, last_off, mms, mseq)
        if last < target:
            return end
        if last == target:
            return last_off
        if self._seen is not lp:
            self._seen = lp
            return scan_entries(data, master, nmaster, first_off, last_off, last, target, nentries)
        offs, ids = index_node(data, master, nmaster, first_off)
        self._lp = lp
        self._sig = (end, first_off)
        self._offs = offs
        self._ids = ids
        i = bisect_left(ids, target)
        return offs[i] if i < len(offs) else end


class NodeInfo:
    """What check_node found in a node."""

    __slots__ = ("count", "deleted", "ids", "live_ids")

    def __init__(self) -> None:
        self.count = 0
        self.deleted = 0
        self.ids: list[StreamID] = []  # every entry, deleted ones included
        self.live_ids: list[StreamID] = []


def check_node(master: StreamID, lp: Listpack) -> NodeInfo:
    """Validate the listpack bytes and the whole node layout; raise StreamCorruption.

    Checks: listpack integrity, the master entry (count > 0, non-negative deleted,
    terminator 0), every entry's flags, num-fields, lp-count and its ID (the first
    equals the master ID, strictly increasing), that SAMEFIELDS entries have the
    master's field count, and that count / deleted match the flags."""
    try:
        lp.validate(deep=True)
        return _check_layout(master, lp.buf)
    except ListpackError as e:
        raise StreamCorruption(f"bad stream listpack: {e}") from None


def _check_layout(master: StreamID, buf: bytearray) -> NodeInfo:
    end = len(buf) - 1

    def get(off: int) -> tuple[bytes | int, int]:
        if off >= end:
            raise StreamCorruption("stream node ends inside an entry")
        return decode_element(buf, off)

    def get_int(off: int) -> tuple[int, int]:
        v, off = get(off)
        if type(v) is not int:
            raise StreamCorruption("expected an integer in a stream node")
        return v, off

    info = NodeInfo()
    count, off = get_int(HEADER_SIZE)
    deleted, off = get_int(off)
    nmaster, off = get_int(off)
    if count <= 0 or deleted < 0 or nmaster <= 0:
        raise StreamCorruption("bad stream node master entry counts")
    for _ in range(nmaster):
        _, off = get(off)
    zero, off = get_int(off)
    if zero != 0:
        raise StreamCorruption("stream node master entry not terminated by 0")
    prev: StreamID | None = None
    live = dead = 0
    while off < end:
        flags, off = get_int(off)
        if flags & ~(FLAG_DELETED | FLAG_SAMEFIELDS):
            raise StreamCorruption("bad stream entry flags")
        ms_diff, off = get_int(off)
        seq_diff, off = get_int(off)
        eid = ((master[0] + ms_diff) & _M64, (master[1] + seq_diff) & _M64)
        if prev is None:
            if eid != master:
                raise StreamCorruption("first entry ID differs from the node's master ID")
        elif eid <= prev:
            raise StreamCorruption("stream entry IDs out of order")
        prev = eid
        if flags & FLAG_SAMEFIELDS:
            nvals = nmaster
            expected_lp_count = nmaster + 3
        else:
            nf, off = get_int(off)
            if nf <= 0:
                raise StreamCorruption("bad stream entry field count")
            nvals = 2 * nf
            expected_lp_count = 2 * nf + 4
        for _ in range(nvals):
            _, off = get(off)
        lp_count, off = get_int(off)
        if lp_count != expected_lp_count:
            raise StreamCorruption("bad stream entry lp-count")
        info.ids.append(eid)
        if flags & FLAG_DELETED:
            dead += 1
        else:
            live += 1
            info.live_ids.append(eid)
    if live != count or dead != deleted:
        raise StreamCorruption("stream node count/deleted do not match its entries")
    info.count = count
    info.deleted = deleted
    return info
