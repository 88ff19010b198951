"""Stream entries as RESP bytes, served from a bounded cache of encoded nodes.

How it works. A range read (XRANGE, XREVRANGE, XREAD) spends most of its time turning
listpack entries into Python lists and those into RESP. An entry's RESP never changes:

    *2\\r\\n$<n>\\r\\n<ms-seq>\\r\\n*<2f>\\r\\n$<n>\\r\\n<field>\\r\\n$<n>\\r\\n<value>\\r\\n ...

is the same in RESP2 and RESP3, and a node's entries never change once it is sealed,
except that XDEL and trimming flag some of them deleted. So the first read of a node
that is not the stream's last one encodes all its live entries once, into ``NodeResp``:

- ``blob``: their RESP, one after the other;
- ``starts``: where each entry starts in blob (and, last, blob's length);
- ``keys``: their IDs as 16-byte big-endian keys, side by side, for a binary search.

Later reads serve a run of entries as one slice of blob (a reverse read: a slice per
entry). The cache entry is valid while the node's master entry still holds the same live
and deleted counts (``signature``): XDEL and trims change them, and so does an XADD that
appends to a node that became the last one again; those counts never return to an
earlier pair, so a match means the bytes are the ones encoded. The last node, which XADD
keeps appending to, is never cached: it is decoded on each read, as are all nodes when the
cache is off.

The cache is bounded (``set_max_bytes``: the stream-reply-cache-bytes option; 0 turns it
off) and least recently used nodes are dropped first. A node that leaves its stream (a
trim, DEL) leaves the cache when it is freed (a weak reference). Its size is reported
by ``used_bytes`` (INFO memory), with hits and misses.
"""

from __future__ import annotations

import struct
import weakref
from array import array
from collections import OrderedDict
from itertools import accumulate

from protocol.encoder import encode_entries
from storage import native
from storage.listpack import decode_element, next_offset
from storage.rax import Rax
from storage.stream_id import StreamID
from storage.stream_iter import collect_backward, collect_forward, decode_fields
from storage.stream_node import (
    FLAG_DELETED,
    FLAG_SAMEFIELDS,
    HEADER_SIZE,
    StreamNode,
    node_layout,
    skip_entry_body,
)

__all__ = [
    "NodeResp",
    "backward",
    "forward",
    "cached_node",
    "clear",
    "cold_hits",
    "forget",
    "max_bytes",
    "set_max_bytes",
    "stats",
    "used_bytes",
]

_pack_key = struct.Struct(">QQ").pack
_unpack_key = struct.Struct(">QQ").unpack
_OVERHEAD = 200  # the NodeResp, its arrays' headers, the LRU slot and the weak reference


class NodeResp:
    """The RESP of a sealed node's live entries (see the module's docstring)."""

    __slots__ = ("signature", "blob", "view", "starts", "keys", "count", "size")

    def __init__(self, signature: bytes, blob: bytes, starts: array, keys: bytes) -> None:
        self.signature = signature
        self.blob = blob
        self.view = memoryview(blob)
        self.starts = starts
        self.keys = keys
        self.count = len(starts) - 1
        self.size = len(blob) + len(keys) + 4 * len(starts) + _OVERHEAD

    def index_at_or_after(self, key: bytes) -> int:
        """The index of the first entry whose key is >= key (count if none)."""
        keys = self.keys
        lo, hi = 0, self.count
        while lo < hi:
            mid = (lo + hi) >> 1
            if keys[mid * 16:mid * 16 + 16] < key:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def index_after(self, key: bytes) -> int:
        """The index of the first entry whose key is > key (count if none)."""
        keys = self.keys
        lo, hi = 0, self.count
        while lo < hi:
            mid = (lo + hi) >> 1
            if keys[mid * 16:mid * 16 + 16] <= key:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def run(self, i: int, j: int) -> memoryview:
        """The RESP of entries i to j - 1, in order."""
        starts = self.starts
        return self.view[starts[i]:starts[j]]

    def entry(self, i: int) -> memoryview:
        starts = self.starts
        return self.view[starts[i]:starts[i + 1]]


class _Cache:
    __slots__ = ("max_bytes", "used", "lru", "hits", "misses", "cold_hits")

    def __init__(self) -> None:
        self.max_bytes = 64 << 20
        self.used = 0
        # id(node) -> (weak reference to the node, its NodeResp's size), oldest first
        self.lru: OrderedDict[int, tuple[weakref.ref, int]] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.cold_hits = 0  # hits on cold nodes (storage/cold): reads that needed no disk


_cache = _Cache()


def set_max_bytes(limit: int) -> None:
    """The cache's bound in bytes (0: no cache); a lower bound drops nodes at once."""
    _cache.max_bytes = max(0, limit)
    _shrink(_cache.max_bytes)


def max_bytes() -> int:
    return _cache.max_bytes


def used_bytes() -> int:
    return _cache.used


def stats() -> tuple[int, int]:
    """(hits, misses) since the start."""
    return _cache.hits, _cache.misses


def cold_hits() -> int:
    """Hits on cold nodes since the start: reads of cold data that needed no disk read."""
    return _cache.cold_hits


def clear() -> None:
    """Drop every cached node (FLUSHALL, a load replacing the dataset)."""
    _shrink(0)


def signature(node: StreamNode) -> bytes:
    """The master entry's live and deleted counts, as their listpack bytes."""
    buf = node.buf
    off = HEADER_SIZE + 2 if buf[HEADER_SIZE] < 0x80 else next_offset(buf, HEADER_SIZE)
    off = off + 2 if buf[off] < 0x80 else next_offset(buf, off)
    return bytes(buf[HEADER_SIZE:off])


def cached_node(node: StreamNode, key: bytes) -> NodeResp | None:
    """The NodeResp of the node at ``key`` (its master ID key), built now if missing or
    stale; None with the cache off."""
    cache = _cache
    if not cache.max_bytes:
        return None
    resp = node.resp
    if resp is not None and node.cold is not None:
        # A cold node's bytes are as they were when it went cold, and its encoding was
        # checked then (storage/cold/tier.py): served without reading them back.
        cache.hits += 1
        cache.cold_hits += 1
        cache.lru.move_to_end(id(node))
        return resp
    sig = signature(node)
    if resp is not None:
        if resp.signature == sig:
            cache.hits += 1
            cache.lru.move_to_end(id(node))
            return resp
        _forget(node)
    cache.misses += 1
    resp = NodeResp(sig, *encode_node(node, key))
    if resp.size > cache.max_bytes:
        return resp  # served once, not kept
    _shrink(cache.max_bytes - resp.size)
    node.resp = resp
    key = id(node)
    cache.lru[key] = (weakref.ref(node, lambda _ref, key=key: _freed(key)), resp.size)
    cache.used += resp.size
    return resp


def forget(node: StreamNode) -> None:
    """Drop the node's encoding (one that no longer matches its bytes)."""
    _forget(node)


def _forget(node: StreamNode) -> None:
    node.resp = None
    item = _cache.lru.pop(id(node), None)
    if item is not None:
        _cache.used -= item[1]


def _freed(key: int) -> None:
    item = _cache.lru.pop(key, None)
    if item is not None:
        _cache.used -= item[1]


def _shrink(target: int) -> None:
    cache = _cache
    lru = cache.lru
    while cache.used > target and lru:
        _key, (ref, size) = lru.popitem(last=False)
        cache.used -= size
        node = ref()
        if node is not None:
            node.resp = None


# -- encoding a node ------------------------------------------------------------------------
# The RESP is built as lines joined by CRLF (as the encoder's _entries does); a value's
# "$<len>" and its bytes are two lines, a master field name (or a 7-bit integer value) with
# its header is one precomputed line.
_BULK = [b"$%d" % i for i in range(1024)]
_ARRAY = [b"*%d" % i for i in range(1024)]
_SMALL = [b"%d" % i for i in range(128)]
_M64 = (1 << 64) - 1
_from_bytes = int.from_bytes


_ID_HEAD = [b"*2\r\n$%d" % i for i in range(64)]


class _FieldLines:
    """The lines of a SAMEFIELDS entry's fields for one list of master field names, shared
    by the nodes with those names: per field, the line that ends just before its value
    (the field's bulk string, then the value's "$<len>"; the first one opens with the
    "*<2n>" array header) by value length, and with a 7-bit integer value the field's
    whole text, value included."""

    __slots__ = ("heads", "ints")

    def __init__(self, names: tuple[bytes, ...]) -> None:
        n = len(names)
        self.heads: list[list[bytes]] = []
        self.ints: list[list[bytes]] = []
        for i, name in enumerate(names):
            before = (b"*%d\r\n" % (2 * n) if i == 0 else b"") + b"$%d\r\n%b\r\n" % (
                len(name), name)
            self.heads.append([before + b"$%d" % length for length in range(64)])
            self.ints.append([before + b"$%d\r\n%d" % (len(b"%d" % v), v) for v in range(128)])


_FIELD_LINES: dict[tuple[bytes, ...], _FieldLines] = {}


def _field_lines(names: list[bytes]) -> _FieldLines:
    key = tuple(names)
    found = _FIELD_LINES.get(key)
    if found is None:
        if len(_FIELD_LINES) >= 1024:  # (bounded, as the interned master entries are)
            _FIELD_LINES.clear()
        found = _FIELD_LINES[key] = _FieldLines(key)
    return found


def encode_node(node: StreamNode, key: bytes) -> tuple[bytes, array, bytes]:
    """(blob, starts, keys) of a node's live entries, see NodeResp: the C loop when it is
    built (storage/native.py), else encode_node_python."""
    if native.encode_node is not None:
        names, _template, off = node_layout(node)
        mms, mseq = _unpack_key(key)
        done = native.encode_node(node.buf, off, mms, mseq, names)
        if done is not None:  # (None: bytes it could not parse, left to the Python loop)
            blob, starts_bytes, keys = done
            starts = array("I")
            starts.frombytes(starts_bytes)
            return blob, starts, keys
    return encode_node_python(node, key)


def encode_node_python(node: StreamNode, key: bytes) -> tuple[bytes, array, bytes]:
    """encode_node in Python. The entry walk is stream_iter._forward's, emitting RESP lines
    instead of lists."""
    data = bytes(node.buf)
    names, template, off = node_layout(node)
    mms, mseq = _unpack_key(key)
    stop = len(data) - 1
    table = _field_lines(names)
    fields_lines = list(zip(table.heads, table.ints, strict=True))
    nmaster = len(names)
    dec = decode_element
    bulk = _BULK
    id_head = _ID_HEAD
    small = _SMALL
    pack = _pack_key
    lines: list[bytes] = []
    ap = lines.append
    first_lines: list[int] = []
    mark = first_lines.append
    keys: list[bytes] = []
    add_key = keys.append
    pms = -1
    pre = b""
    while off < stop:
        flags = data[off]
        b = data[off + 2]
        if b < 0x80:
            ms = mms + b
            off += 4
        elif b < 0xE0:
            v = ((b & 0x1F) << 8) | data[off + 3]
            ms = (mms + (v - 8192 if v >= 4096 else v)) & _M64
            off += 5
        else:
            msd, off = dec(data, off + 2)
            ms = (mms + msd) & _M64  # type: ignore[operator]
        b = data[off]
        if b < 0x80:
            seq = (mseq + b) & _M64
            off += 2
        elif b < 0xE0:
            v = ((b & 0x1F) << 8) | data[off + 1]
            seq = (mseq + (v - 8192 if v >= 4096 else v)) & _M64
            off += 3
        else:
            seqd, off = dec(data, off)
            seq = (mseq + seqd) & _M64  # type: ignore[operator]
        if flags & FLAG_DELETED:
            off = skip_entry_body(data, off, flags, nmaster)
            continue
        if ms != pms:
            pms = ms
            pre = b"%d-" % ms
        eid = pre + small[seq] if seq < 128 else pre + b"%d" % seq
        mark(len(lines))
        add_key(pack(ms, seq))
        ap(id_head[len(eid)])  # (an ID is at most 41 bytes)
        ap(eid)
        if flags == FLAG_SAMEFIELDS:
            for heads, ints in fields_lines:
                b = data[off]
                if b < 0x80:  # 7-bit uint: the field and its value in one line
                    ap(ints[b])
                    off += 2
                    continue
                if b < 0xC0:  # short string
                    e = off + b - 0x7F
                    ap(heads[b - 0x80])
                    ap(data[off + 1:e])
                    off = e + 1
                    continue
                if b == 0xF2:  # 24-bit int
                    value = b"%d" % _from_bytes(data[off + 1:off + 4], "little", signed=True)
                    off += 5
                else:
                    v, off = dec(data, off)
                    value = b"%d" % v if type(v) is int else v  # type: ignore[assignment]
                n = len(value)
                ap(heads[n] if n < 64 else heads[0][:-1] + b"%d" % n)
                ap(value)
            off = off + 2 if data[off] < 0x80 else next_offset(data, off)  # lp-count
        else:
            fields, off = decode_fields(data, off, flags, template)
            n = len(fields)
            ap(_ARRAY[n] if n < 1024 else b"*%d" % n)
            for x in fields:
                n = len(x)
                ap(bulk[n] if n < 1024 else b"$%d" % n)
                ap(x)
    ap(b"")  # the last line's CRLF
    blob = b"\r\n".join(lines)
    # Entry k starts where its first line does: the lengths before it plus a CRLF each.
    before = list(accumulate(map(len, lines), initial=0))
    starts = array("I", [before[i] + 2 * i for i in first_lines])
    starts.append(len(blob))
    return blob, starts, b"".join(keys)


# -- serving ranges -----------------------------------------------------------------------
Part = bytes | memoryview


def forward(rax: Rax, item: tuple[bytes, StreamNode] | None, start: StreamID, end: StreamID,
            count: int, last_key: bytes,
            keys_out: list[bytes] | None = None,
            ended: list[tuple[bytes, StreamNode, NodeResp]] | None = None,
            ) -> tuple[list[Part], int]:
    """The RESP of the live entries with start <= id <= end, ascending, at most ``count``
    (0: all), from the node ``item`` on (the one that may hold start): (parts, entries).
    The last node (``last_key``) is decoded; the others come from the cache. With
    ``keys_out``, the entries' 16-byte ID keys are appended to it too (in runs). With
    ``ended``, (key, node, its cached RESP) of the node the range stopped in, where the next
    read of a cursor starts, is appended to it, unless that is the last node."""
    parts: list[Part] = []
    n = 0
    start_key = _pack_key(*start)
    end_key = _pack_key(*end)
    while item is not None:
        key, node = item
        if key > end_key:
            break
        resp = None if key == last_key else cached_node(node, key)
        if resp is None:  # the last node (or the cache was turned off meanwhile)
            want = count - n if count else 0
            stop = key if key == last_key else None
            if keys_out is None:
                entries = collect_forward(rax, start, end, want, True, item, stop)
            else:
                found = collect_forward(rax, start, end, want, False, item, stop)
                keys_out.append(b"".join([_pack_key(*eid) for eid, _ in found]))
                entries = [[b"%d-%d" % eid, fields] for eid, fields in found]
            if entries:
                parts.append(encode_entries(entries))
                n += len(entries)
            break
        i = resp.index_at_or_after(start_key) if start_key > key else 0
        last = resp.count
        j = last if resp.keys[-16:] <= end_key else resp.index_after(end_key)
        if count and j - i > count - n:
            j = i + count - n
        if j > i:
            parts.append(resp.run(i, j))
            if keys_out is not None:
                keys_out.append(resp.keys[i * 16:j * 16])
            n += j - i
        if (count and n >= count) or j < last:
            if ended is not None and j:
                ended.append((key, node, resp))
            break
        item = rax.ceiling(key, True)  # type: ignore[assignment]
    return parts, n


def backward(rax: Rax, item: tuple[bytes, StreamNode] | None, start: StreamID, end: StreamID,
             count: int, last_key: bytes) -> tuple[list[Part], int]:
    """forward's mirror: descending from the node ``item`` (the one that may hold end)."""
    parts: list[Part] = []
    n = 0
    start_key = _pack_key(*start)
    end_key = _pack_key(*end)
    while item is not None:
        key, node = item
        master = _unpack_key(key)
        resp = None if key == last_key else cached_node(node, key)
        if resp is None:
            want = count - n if count else 0
            entries = collect_backward(rax, max(start, master), end, want, True, item)
            if entries:
                parts.append(encode_entries(entries))
                n += len(entries)
        else:
            j = resp.count if resp.keys[-16:] <= end_key else resp.index_after(end_key)
            i = resp.index_at_or_after(start_key) if start_key > key else 0
            if count and j - i > count - n:
                i = j - (count - n)
            entry = resp.entry
            parts.extend(entry(k) for k in range(j - 1, i - 1, -1))
            n += max(0, j - i)
        if (count and n >= count) or start_key >= key:
            break
        item = rax.floor(key, True)  # type: ignore[assignment]
    return parts, n
