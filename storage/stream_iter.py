"""Range reads over a stream's rax of listpack nodes (streamIterator).

Entries are decoded straight from the node's bytes.  Each node is copied to
``bytes`` before it is read (one memcpy of <= a few KB), so values come out as
``bytes`` with a single slice, and a walk stays consistent even if the caller
modifies the stream between two ``next()`` calls of a generator; moving to the
following node re-seeks the rax from the last node key.

The per-node loops (_forward, _backward) are the hot path of XRANGE / XREAD:
the common element encodings (7-bit ints, short strings) are decoded inline,
SAMEFIELDS entries fill a copy of the master's fields template, and they stop
as soon as ``want`` entries were read, so XRANGE COUNT n decodes n entries.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from storage.listpack import decode_element, next_offset, prev_offset
from storage.rax import Rax
from storage.stream_id import MAX_ID, UINT64_MAX, StreamID, id_to_key, incr_id
from storage.stream_node import (
    FLAG_DELETED,
    FLAG_SAMEFIELDS,
    node_layout,
    skip_entry_body,
)
from storage.stream_seek import seek_entry

_from_bytes = int.from_bytes

# Nodes handed to these functions are StreamNodes (node_layout, seek_entry).

__all__ = [
    "Entry",
    "collect_backward",
    "collect_forward",
    "decode_fields",
    "decode_node",
    "iter_backward",
    "iter_forward",
]

Entry = tuple[StreamID, list[bytes]]

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


def _forward(
    data: bytes,
    off: int,
    mms: int,
    mseq: int,
    end: StreamID,
    template: list[bytes | None],
    out: list,
    want: int,
    reply: bool,
) -> int:
    """Append to ``out`` the live entries of a node from the entry at ``off`` on,
    ascending, until ``want`` were added (want <= 0: no limit).  Entries are
    ``(id, fields)``, or ``[b"ms-seq", fields]`` with ``reply``.  Returns the offset
    of the next entry (the end byte when the node is done), or -1 once an ID above
    ``end`` was met."""
    stop = len(data) - 1
    ems, eseq = end
    dec = decode_element
    small = _SMALL_STR
    values = range(1, len(template), 2)
    append = out.append
    pms = -1  # the ms whose "ms-" prefix is in ``pre``
    pre = b""
    while off < stop:
        flags = data[off]  # always a 7-bit uint element (0..3)
        b = data[off + 2]
        if b < 0x80:
            ms = mms + b  # a 7-bit ms-diff is never a wrapped one
            off += 4
        elif b < 0xE0:  # 13-bit int
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
        elif b < 0xE0:  # 13-bit: a small negative seq-diff is common
            v = ((b & 0x1F) << 8) | data[off + 1]
            seq = (mseq + (v - 8192 if v >= 4096 else v)) & _M64
            off += 3
        else:
            seqd, off = dec(data, off)
            seq = (mseq + seqd) & _M64  # type: ignore[operator]
        if ms >= ems and (ms > ems or seq > eseq):
            return -1
        if flags == FLAG_SAMEFIELDS:  # live, the master's fields: decode_fields inlined
            fields = template.copy()
            for i in values:
                b = data[off]
                if b < 0x80:  # 7-bit uint
                    fields[i] = small[b]
                    off += 2
                elif b < 0xC0:  # short string: 0x80 | length
                    e = off + b - 0x7F
                    fields[i] = data[off + 1 : e]
                    off = e + 1
                elif b == 0xF2:  # 24-bit int (numbers up to 8,388,607: readings, counters)
                    fields[i] = b"%d" % _from_bytes(data[off + 1 : off + 4], "little", signed=True)
                    off += 5
                else:
                    v, off = dec(data, off)
                    fields[i] = b"%d" % v if type(v) is int else v
            off = off + 2 if data[off] < 0x80 else next_offset(data, off)  # lp-count
        elif flags & FLAG_DELETED:
            off = skip_entry_body(data, off, flags, len(values))
            continue
        else:
            fields, off = decode_fields(data, off, flags, template)  # type: ignore[assignment]
        if reply:
            if ms != pms:  # entries often share an ms: format it once
                pms = ms
                pre = b"%d-" % ms
            append([pre + small[seq] if seq < 128 else pre + b"%d" % seq, fields])
        else:
            append(((ms, seq), fields))
        want -= 1
        if not want:
            return off
    return off


def _backward(
    data: bytes,
    off: int,
    first_off: int,
    mms: int,
    mseq: int,
    start: StreamID,
    template: list[bytes | None],
    out: list,
    want: int,
    reply: bool,
) -> int:
    """_forward's mirror: the live entries before ``off`` (a flags offset or the end
    byte), descending, walking back with lp-count as streamIteratorGetID does.
    Returns the flags offset of the last entry read (the walk resumes before it),
    or -1 once an ID below ``start`` was met."""
    sms, sseq = start
    dec = decode_element
    small = _SMALL_STR
    values = range(1, len(template), 2)
    append = out.append
    pms = -1
    pre = b""
    while off > first_off:
        # Back over the previous entry: its lp-count, then that many elements.  A
        # last backlen byte < 128 is a one-byte backlen: the element's length.
        b = data[off - 1]
        p = off - 1 - b if b < 128 else prev_offset(data, off)
        b = data[p]
        lp_count = b if b < 0x80 else dec(data, p)[0]
        for _ in range(lp_count):  # type: ignore[arg-type]
            b = data[p - 1]
            p = p - 1 - b if b < 128 else prev_offset(data, p)
        off = p
        flags = data[p]
        b = data[p + 2]
        if b < 0x80:
            ms = mms + b
            p += 4
        elif b < 0xE0:
            v = ((b & 0x1F) << 8) | data[p + 3]
            ms = (mms + (v - 8192 if v >= 4096 else v)) & _M64
            p += 5
        else:
            msd, p = dec(data, p + 2)
            ms = (mms + msd) & _M64  # type: ignore[operator]
        b = data[p]
        if b < 0x80:
            seq = (mseq + b) & _M64
            p += 2
        elif b < 0xE0:
            v = ((b & 0x1F) << 8) | data[p + 1]
            seq = (mseq + (v - 8192 if v >= 4096 else v)) & _M64
            p += 3
        else:
            seqd, p = dec(data, p)
            seq = (mseq + seqd) & _M64  # type: ignore[operator]
        if ms <= sms and (ms < sms or seq < sseq):
            return -1
        if flags & FLAG_DELETED:
            continue
        if flags == FLAG_SAMEFIELDS:
            fields = template.copy()
            for i in values:
                b = data[p]
                if b < 0x80:
                    fields[i] = small[b]
                    p += 2
                elif b < 0xC0:
                    e = p + b - 0x7F
                    fields[i] = data[p + 1 : e]
                    p = e + 1
                else:
                    v, p = dec(data, p)
                    fields[i] = b"%d" % v if type(v) is int else v
        else:
            fields = decode_fields(data, p, flags, template)[0]  # type: ignore[assignment]
        if reply:
            if ms != pms:
                pms = ms
                pre = b"%d-" % ms
            append([pre + small[seq] if seq < 128 else pre + b"%d" % seq, fields])
        else:
            append(((ms, seq), fields))
        want -= 1
        if not want:
            return off
    return off


def decode_node(node: object, master: StreamID) -> list[Entry]:
    """Every live entry of a node, ascending, as ``(id, fields)``."""
    data = bytes(node.buf)  # type: ignore[attr-defined]
    _names, template, off = node_layout(node)  # type: ignore[arg-type]
    out: list = []
    _forward(data, off, master[0], master[1], MAX_ID, template, out, 0, False)
    return out


def collect_forward(
    rax: Rax,
    start: StreamID,
    end: StreamID,
    count: int = 0,
    reply: bool = False,
    node: tuple[bytes, object] | None = None,
    last_key: bytes | None = None,
    after: int = 0,
    resume: list | None = None,
) -> list:
    """Live entries with start <= id <= end, ascending, at most ``count`` (0: all);
    ``(id, fields)`` tuples, or ``[b"ms-seq", fields]`` lists with ``reply``.
    ``node``: the (key, node) that may hold ``start`` if the caller knows it, and
    ``after`` seek_entry's hint in it; ``last_key``: the last node's key if known
    (no rax walk after it).  When COUNT stops the read inside a node, ``resume``
    gets (key, node, offset of the next entry relative to the first one, the ID
    after the last entry read): a read from that ID can start at that offset."""
    out: list = []
    if start > end:
        return out
    item = node if node is not None else rax.floor(id_to_key(start)) or rax.first()
    first = True
    while item is not None:
        key, node = item
        mms, mseq = _unpack_key(key)
        if (mms, mseq) > end:
            break
        data = bytes(node.buf)  # type: ignore[attr-defined]
        names, template, first_off = node_layout(node)  # type: ignore[arg-type]
        off = first_off
        if first:
            off = seek_entry(node, data, mms, mseq, len(names), off, start, after)  # type: ignore[arg-type]
            first = False
        want = count - len(out) if count else 0
        off = _forward(data, off, mms, mseq, end, template, out, want, reply)
        if off < 0:
            break
        if count and len(out) >= count:
            if resume is not None and off < len(data) - 1:
                last = out[-1][0]
                if reply:  # b"ms-seq"
                    ms, _, seq = last.partition(b"-")
                    last = (int(ms), int(seq))
                if last < MAX_ID:
                    resume += (key, node, off - first_off, incr_id(last))
            break
        if key == last_key:
            break
        item = rax.ceiling(key, True)
    return out


def collect_backward(
    rax: Rax,
    start: StreamID,
    end: StreamID,
    count: int = 0,
    reply: bool = False,
    node: tuple[bytes, object] | None = None,
) -> list:
    """collect_forward's mirror: descending from ``end`` (``node`` may hold it)."""
    out: list = []
    if start > end:
        return out
    item = node if node is not None else rax.floor(id_to_key(end))
    first = True
    while item is not None:
        key, node = item
        mms, mseq = _unpack_key(key)
        data = bytes(node.buf)  # type: ignore[attr-defined]
        names, template, first_off = node_layout(node)  # type: ignore[arg-type]
        off = len(data) - 1
        if first:
            if end < MAX_ID:
                off = seek_entry(node, data, mms, mseq, len(names), first_off, incr_id(end))  # type: ignore[arg-type]
            first = False
        want = count - len(out) if count else 0
        if _backward(data, off, first_off, mms, mseq, start, template, out, want, reply) < 0:
            break
        if (count and len(out) >= count) or (mms, mseq) <= start:
            break
        item = rax.floor(key, True)
    return out


# Generators decode entries in chunks of 1, 2, 4, ... up to _CHUNK, so a consumer
# that stops early (XREADGROUP's COUNT) decodes at most about twice what it takes,
# and a long walk pays the per-call setup rarely.
_CHUNK = 64


def iter_forward(rax: Rax, start: StreamID, end: StreamID) -> Iterator[Entry]:
    """Live entries with start <= id <= end, ascending."""
    if start > end:
        return
    item = rax.floor(id_to_key(start)) or rax.first()
    first = True
    while item is not None:
        key, node = item
        mms, mseq = _unpack_key(key)
        if (mms, mseq) > end:
            return
        data = bytes(node.buf)  # type: ignore[attr-defined]
        names, template, off = node_layout(node)  # type: ignore[arg-type]
        if first:
            off = seek_entry(node, data, mms, mseq, len(names), off, start)  # type: ignore[arg-type]
            first = False
        stop = len(data) - 1
        size = 1
        while 0 <= off < stop:
            chunk: list[Entry] = []
            off = _forward(data, off, mms, mseq, end, template, chunk, size, False)
            yield from chunk
            if size < _CHUNK:
                size += size
        if off < 0:
            return
        item = rax.ceiling(key, True)


def iter_backward(rax: Rax, start: StreamID, end: StreamID) -> Iterator[Entry]:
    """Live entries with start <= id <= end, descending."""
    if start > end:
        return
    item = rax.floor(id_to_key(end))
    first = True
    while item is not None:
        key, node = item
        mms, mseq = _unpack_key(key)
        data = bytes(node.buf)  # type: ignore[attr-defined]
        names, template, first_off = node_layout(node)  # type: ignore[arg-type]
        off = len(data) - 1
        if first:
            if end < MAX_ID:
                off = seek_entry(node, data, mms, mseq, len(names), first_off, incr_id(end))  # type: ignore[arg-type]
            first = False
        size = 1
        while off > first_off:
            chunk: list[Entry] = []
            off = _backward(data, off, first_off, mms, mseq, start, template, chunk, size, False)
            yield from chunk
            if size < _CHUNK:
                size += size
        if off < 0 or (mms, mseq) <= start:
            return
        item = rax.floor(key, True)
