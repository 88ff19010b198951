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

from storage.listpack import (
    HEADER_SIZE,
    Listpack,
    ListpackError,
    cached_element,
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
    "StreamCorruption",
    "StreamNode",
    "as_bytes",
    "check_node",
    "enc_diff",
    "encode_entry",
    "encode_master",
    "encode_values",
    "enc_int",
    "int_cached",
    "entry_id_at",
    "locate_entry",
    "node_layout",
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

# Encoded int elements (flags, ms/seq diffs, lp-counts): 7-bit uints up front,
# other 13-bit ints (small negative seq diffs, ms diffs of a few seconds) added
# as they are met, so the dict stays bounded (8192 entries at most).
_SMALL_INT = [bytes((i, 1)) for i in range(128)]
_INT_ENC: dict[int, bytes] = dict(enumerate(_SMALL_INT))
int_cached = _int_cached = _INT_ENC.get  # int -> encoded element, or None
_FLAGS_SAME = _SMALL_INT[FLAG_SAMEFIELDS]
_FLAGS_NONE = _SMALL_INT[FLAG_NONE]


class StreamCorruption(ValueError):
    """A node whose bytes do not follow the stream node layout."""


# (names, template, names_span) of a master entry; see StreamNode.master.
MasterInfo = tuple[list[bytes], list[bytes | None], int]


class StreamNode(Listpack):
    """A stream node's listpack plus two facts derived from its bytes that never go
    stale, so reads do not re-derive them:

    * ``master``: the master entry's field names, the same interleaved with None
      placeholders (a SAMEFIELDS entry's fields list is a copy of it with the
      values filled in) and the byte length of num-fields..terminator.  Field
      names never change; count and deleted, which do, are read from the bytes.
      Shared by nodes with the same names.  None until first needed.
    * ``marks``: the offsets of every MARK_EVERY-th entry (the MARK_EVERY-th,
      2*MARK_EVERY-th, ...) relative to the first entry, packed as uint16, so a
      lookup bisects the node instead of walking it (stream_seek.py).  Entries
      never move relative to each other: deleting flips a flag in place and only
      the master entry's counts change size.  Kept complete by Stream.append;
      None until a lookup builds them (nodes loaded from a snapshot).

    * ``resp``: the RESP of its live entries when a read cached it (stream_resp.NodeResp),
      else None; a weak reference lets the cache forget a node that is freed.
    * ``cold``: where its bytes are while it is cold (storage/cold), else None.

    About 100 bytes per node, under one byte per entry with the default limits."""

    __slots__ = ("master", "marks", "resp", "cold", "__weakref__")

    def __init__(
        self,
        buf: bytearray | None = None,
        master: MasterInfo | None = None,
        marks: bytes | None = None,
    ) -> None:
        Listpack.__init__(self, buf)
        self.master = master
        self.marks = marks
        self.resp = None
        self.cold = None


_MASTERS: dict[tuple[tuple[bytes, ...], int], MasterInfo] = {}


def master_info(names: list[bytes], span: int) -> MasterInfo:
    """The shared MasterInfo for these names (bounded interning)."""
    key = (tuple(names), span)
    info = _MASTERS.get(key)
    if info is None:
        template: list[bytes | None] = [None] * (2 * len(names))
        template[0::2] = names
        info = (list(names), template, span)
        if len(_MASTERS) >= 1024:
            _MASTERS.clear()
        _MASTERS[key] = info
    return info


def node_layout(node: StreamNode) -> tuple[list[bytes], list[bytes | None], int]:
    """(master field names, their fields template, offset of the first entry)."""
    buf = node.buf
    # Skip count and deleted: 7-bit uints unless a node holds 128+ entries.
    off = HEADER_SIZE + 2 if buf[HEADER_SIZE] < 0x80 else next_offset(buf, HEADER_SIZE)
    off = off + 2 if buf[off] < 0x80 else next_offset(buf, off)
    info = node.master
    if info is None:
        _, _, names, first = read_master(buf)
        info = node.master = master_info(names, first - off)
    return info[0], info[1], off + info[2]


def wrap_i64(diff: int) -> int:
    """An unsigned 64-bit difference as the int64 lpAppendInteger stores."""
    diff &= _M64
    return diff - _TWO64 if diff > _I64_MAX else diff


def enc_diff(diff: int) -> bytes:
    """The element of an ID part's difference from the master entry's (an int64)."""
    return enc_int(wrap_i64(diff))


def as_bytes(v: bytes | int) -> bytes:
    return b"%d" % v if type(v) is int else v  # type: ignore[return-value]


def enc_int(v: int) -> bytes:
    """encode_int_element through a cache of 13-bit values (diffs, counts)."""
    enc = _int_cached(v)
    if enc is None:
        enc = encode_int_element(v)
        if -4096 <= v < 4096:
            _INT_ENC[v] = enc
    return enc


def encode_values(values: list[bytes]) -> list[bytes]:
    """encode_element of each value, through the listpack's cache of short strings."""
    return [cached_element(v) or encode_element(v) for v in values]


def encode_master(names: list[bytes]) -> tuple[bytes, int]:
    """Master entry of a fresh node holding one live entry: (bytes, element count)."""
    n = len(names)
    return b"".join(
        [_SMALL_INT[1], _SMALL_INT[0], enc_int(n), *encode_values(names), _SMALL_INT[0]]
    ), n + 4


def encode_entry(
    fields: list[bytes], ms_enc: bytes, seq_enc: bytes, samefields: bool
) -> tuple[bytes, int]:
    """One entry (``fields`` flat [f1, v1, ...]) after its ID's encoded differences from
    the master entry (enc_diff): (bytes, element count)."""
    n = len(fields) >> 1
    if samefields:
        body = encode_values(fields[1::2])
        return b"".join([_FLAGS_SAME, ms_enc, seq_enc, *body, enc_int(n + 3)]), n + 4
    body = encode_values(fields)
    return (b"".join([_FLAGS_NONE, ms_enc, seq_enc, enc_int(n), *body, enc_int(2 * n + 4)]),
            2 * n + 5)


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
