"""Reading a stream value of an RDB file with its consumer groups built in bulk.

rdb_values reads a stream the general way: each pending entry goes into its group's four
trees (pel, pel_by_time, the owner's pel, the stream's cgroups_ref) with an insert each,
about 15 us per pending entry. A file lists the pending entries in ID order, so here each
tree is filled whole from its sorted keys (Rax.fill_sorted) once the group is read. The
checks, their order and their messages are rdb_values'; entries a file lists out of order
take the general inserts. DUMP / RESTORE and COPY keep using rdb_values.

The files a restart loads may refer to cold nodes (rdb_values.TYPE_STREAM_COLD_REFS): those
become ColdNodes of the cold tier, read back from their segment when a command needs them.
"""

from __future__ import annotations

import struct

from server.persistence.rdb_encoding import M64, RdbFormatError, Reader
from server.persistence.rdb_values import (
    TYPE_STREAM_LISTPACKS_2,
    TYPE_STREAM_LISTPACKS_3,
    TYPE_STREAM_LISTPACKS_4,
    TYPE_STREAM_LISTPACKS_5,
    _read_idmp,
)
from storage.cold import ColdNode, ColdTier
from storage.cold.node import StreamTag
from storage.consumer_group import NACK, Consumer, ConsumerGroup, create_group
from storage.consumer_group_lag import INVALID_ENTRIES_READ, estimate_distance
from storage.consumer_group_pel import time_prefix
from storage.listpack import Listpack
from storage.rax import Rax
from storage.stream import Stream, StreamCorruption
from storage.stream_id import StreamID

__all__ = ["read_stream"]

_TIME = struct.Struct("<q")  # a delivery time, as Reader.ms_time reads it


def _stream_id(r: Reader) -> StreamID:
    ms = r.length()
    return (ms, r.length())


def read_stream(r: Reader, kind: int, cold: ColdTier | None = None, name: bytes = b"") -> Stream:
    """The stream of type `kind` at r (its type byte and key already read). With `cold`
    (the body of a TYPE_STREAM_COLD_REFS value, of the stream stored under `name`), a node
    may be a reference to its bytes in the cold tier's segments."""
    nodes = []
    cold_nodes: list[tuple[bytes, ColdNode]] = []
    tag = StreamTag(name)
    view = memoryview(r.data)
    for _ in range(r.count("stream node")):
        key = _string(r)
        if len(key) != 16:
            raise r.fail("stream node key is not the size of a stream ID")
        data = _listpack(r, view)
        if data or cold is None:
            nodes.append((key, Listpack(data)))  # (taken by Stream.from_nodes as it is)
            continue
        segment, offset, size, crc = r.length(), r.length(), r.length(), r.length()
        ids = r.string()
        if len(ids) != 32 or ids[:16] != key or ids[16:] < key or crc > 0xFFFFFFFF:
            raise r.fail("bad cold node reference")
        cold_nodes.append((key, cold.loaded_node(tag, segment, offset, size, crc, ids)))
    length = r.length()
    last_id = _stream_id(r)
    first_id = (0, 0)
    if kind >= TYPE_STREAM_LISTPACKS_2:
        first_id = _stream_id(r)  # (derived from the nodes, unless some are cold)
        max_deleted = _stream_id(r)
        entries_added = r.length()
    else:
        max_deleted, entries_added = (0, 0), length
    try:
        stream = Stream.from_nodes(nodes, last_id, entries_added, max_deleted,
                                   length=None if cold_nodes else length, validate=r.deep)
    except StreamCorruption as exc:
        raise RdbFormatError(f"corrupt stream: {exc}") from None
    if cold_nodes:
        assert cold is not None
        for key, node in cold_nodes:
            if not stream.rax.try_insert(key, node):
                raise RdbFormatError("corrupt stream: duplicate stream node")
        stream.length = length
        stream.first_id = first_id
        cold.adopt(name, stream, tag, [node for _, node in cold_nodes])
    if entries_added < length:
        raise RdbFormatError("stream entries-added below its length")
    refs: dict[bytes, list[ConsumerGroup]] = {}  # cgroups_ref, filled once at the end
    for _ in range(r.count("consumer group")):
        _read_group(r, stream, kind, refs)
    if refs:
        keys = sorted(refs)
        _fill(_tree(stream), keys, [refs[key] for key in keys])
    if kind >= TYPE_STREAM_LISTPACKS_4:
        stream.idmp = _read_idmp(r)
    return stream


def _plain_span(r: Reader) -> int:
    """Where the string at r starts when it is stored as it is with a length of one or two
    bytes (a node's key and most nodes); r.pos is moved past it. -1 for any other string
    (r.pos unchanged: r.string() reads it)."""
    data = r.data
    pos = r.pos
    if pos + 2 <= r.end:
        first = data[pos]
        if first < 0x40:
            start = pos + 1
            n = first
        elif first < 0x80:
            start = pos + 2
            n = (first & 0x3F) << 8 | data[pos + 1]
        else:
            return -1
        if start + n <= r.end:
            r.pos = start + n
            return start
    return -1


def _string(r: Reader) -> bytes:
    """r.string(), sliced in place when it can be."""
    start = _plain_span(r)
    return r.string() if start < 0 else r.data[start:r.pos]


def _listpack(r: Reader, view: memoryview) -> bytearray:
    """A node's listpack as the bytearray the node keeps, copied once from the file's bytes
    (a slice of bytes and then a bytearray of it would hold a backlog's hot part twice)."""
    start = _plain_span(r)
    return bytearray(r.string()) if start < 0 else bytearray(view[start:r.pos])


def _tree(stream: Stream) -> Rax:
    if stream.cgroups_ref is None:
        stream.cgroups_ref = Rax()
    return stream.cgroups_ref


def _read_group(r: Reader, s: Stream, kind: int,
                refs: dict[bytes, list[ConsumerGroup]]) -> None:
    """One consumer group, read and checked as rdb_values reads it, then its trees built."""
    name = r.string()
    last_id = _stream_id(r)
    if kind >= TYPE_STREAM_LISTPACKS_2:
        entries_read = r.length()
        if entries_read == M64:  # (all ones: "not known")
            entries_read = INVALID_ENTRIES_READ
    else:
        entries_read = estimate_distance(s, last_id)
    group = create_group(s, name, last_id, entries_read)
    if group is None:
        raise r.fail("duplicate consumer group name")
    group.entries_read = entries_read  # exactly as saved
    pending = _read_pel(r, r.count("pending entry"))
    owned: dict[bytes, Consumer] = {}
    per_consumer: list[tuple[Consumer, list[bytes]]] = []
    for _ in range(r.count("consumer")):
        cname = r.string()
        seen_time = r.ms_time()
        consumer = group.create_consumer(cname, seen_time)
        if consumer is None:
            raise r.fail("duplicate consumer")
        consumer.active_time = r.ms_time() if kind >= TYPE_STREAM_LISTPACKS_3 else seen_time
        keys = _read_consumer_pel(r, r.count("consumer pending entry"), pending, owned,
                                  consumer)
        per_consumer.append((consumer, keys))
    released: list[bytes] = []
    if kind >= TYPE_STREAM_LISTPACKS_5:
        seen: set[bytes] = set()
        for _ in range(r.count("NACK zone entry")):
            key = r.take(16)
            if key not in pending:
                raise r.fail("NACK zone entry not found in the group's PEL")
            if key in owned or key in seen:
                raise r.fail("NACK zone entry owned by a consumer or listed twice")
            seen.add(key)
            released.append(key)
    if len(owned) + len(released) != len(pending):
        raise r.fail("pending entry without a consumer")
    _build(s, group, pending, owned, per_consumer, released, refs)


def _read_pel(r: Reader, n: int) -> dict[bytes, tuple[int, int]]:
    """A group's n pending entries, ID key -> (delivery time, delivery count): what
    r.take(16), r.ms_time() and r.length() read, with their errors. An entry whose count
    fits the one-byte length (a delivery count below 64) is read in place; any other goes
    through the Reader."""
    pending: dict[bytes, tuple[int, int]] = {}
    data = r.data
    end = r.end
    unpack_time = _TIME.unpack_from
    pos = r.pos
    for _ in range(n):
        if pos + 25 <= end and data[pos + 24] < 0x40:
            key = data[pos:pos + 16]
            if key in pending:
                r.pos = pos + 16
                raise r.fail("duplicate pending entry")
            pending[key] = (unpack_time(data, pos + 16)[0], data[pos + 24])
            pos += 25
            continue
        r.pos = pos
        key = r.take(16)
        if key in pending:
            raise r.fail("duplicate pending entry")
        delivery_time = r.ms_time()
        pending[key] = (delivery_time, r.length())
        pos = r.pos
    r.pos = pos
    return pending


def _read_consumer_pel(r: Reader, n: int, pending: dict[bytes, tuple[int, int]],
                       owned: dict[bytes, Consumer], consumer: Consumer) -> list[bytes]:
    """A consumer's n pending entries (16-byte ID keys), each one in the group's PEL and
    owned by no one before (recorded in ``owned``). Sliced at once when all are in the
    data, else read key by key: the errors come in the order and at the offsets of a
    reading one key at a time either way."""
    start = r.pos
    if 16 * n <= r.end - start:
        data = r.data
        keys = [data[at:at + 16] for at in range(start, start + 16 * n, 16)]
        for i in range(n):
            key = keys[i]
            if key not in pending or key in owned:
                break
            owned[key] = consumer
        else:
            r.pos = start + 16 * n
            return keys
        r.pos = start + 16 * i  # the bad key read alone below, for its error and offset
        n = 1
    keys = []
    for _ in range(n):
        key = r.take(16)
        if key not in pending:
            raise r.fail("consumer entry not found in the group's PEL")
        if key in owned:
            raise r.fail("pending entry owned twice")
        owned[key] = consumer
        keys.append(key)
    return keys


def _build(s: Stream, group: ConsumerGroup, pending: dict[bytes, tuple[int, int]],
           owned: dict[bytes, Consumer], per_consumer: list[tuple[Consumer, list[bytes]]],
           released: list[bytes], refs: dict[bytes, list[ConsumerGroup]]) -> None:
    """The group's trees from what the file listed: what ConsumerGroup.add_pending and
    add_released would have made of it, one entry at a time."""
    nacks: dict[bytes, NACK] = {}
    for key, (delivery_time, delivery_count) in pending.items():
        consumer = owned.get(key)
        if consumer is None:  # the NACK zone: no owner, no delivery time (add_released)
            nacks[key] = NACK(0, delivery_count, None)
        else:
            nacks[key] = NACK(delivery_time, delivery_count, consumer)
    _fill(group.pel, list(nacks), list(nacks.values()))
    # (entries delivered together share their time: its 8-byte prefix is packed once)
    prefixes: dict[int, bytes] = {}
    by_time = []
    for key, nack in nacks.items():
        if nack.consumer is not None:
            t = nack.delivery_time
            prefix = prefixes.get(t)
            if prefix is None:
                prefix = prefixes[t] = time_prefix(t)
            by_time.append(prefix + key)
    by_time.sort()
    _fill(group.pel_by_time, by_time, None)
    for consumer, keys in per_consumer:
        _fill(consumer.pel, keys, [nacks[key] for key in keys])
    for key in released:  # (in release order)
        group.nacked[key] = nacks[key]
    if not refs:  # the stream's first group: every ID held by it alone
        refs.update({key: [group] for key in nacks})
        return
    for key in nacks:
        holders = refs.get(key)
        if holders is None:
            refs[key] = [group]
        else:
            holders.append(group)


def _fill(tree: Rax, keys: list[bytes], values: list[object] | None) -> None:
    """Fill an empty tree whole when the keys ascend (as a file lists them), else insert
    them in sorted order one by one (a tree's shape does not depend on the order)."""
    try:
        tree.fill_sorted(keys, values)
    except ValueError:
        pairs = sorted(zip(keys, values if values is not None else [None] * len(keys),
                           strict=True))
        for key, value in pairs:
            tree.insert(key, value)
