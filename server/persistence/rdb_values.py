"""Values in Redis's RDB encoding: the one codec behind RDB files (rdb_writer / rdb_reader)
and DUMP / RESTORE payloads (dump_payload).

Written: strings (type 0) and streams as type 19 (RDB_TYPE_STREAM_LISTPACKS_2, RDB version 10,
Redis 7.0), 21 (RDB_TYPE_STREAM_LISTPACKS_3, RDB version 11 on, Redis 7.2 / Valkey 8), 26
(RDB_TYPE_STREAM_LISTPACKS_4, RDB version 13, Redis 8.6: IDMP) or 27
(RDB_TYPE_STREAM_LISTPACKS_5, RDB version 14, Redis 8.8: the NACK zone), by the RDB version of
the file or payload, which is the lowest that holds the data (version_needed). Read: strings
and streams of types 15, 19, 21, 26 and 27. Anything else is UnsupportedType, named (hash,
list, set, zset, module, ...).

A stream value holds its nodes (16-byte master ID key, listpack bytes: our nodes are Redis's
listpacks), length, last ID, and from type 19 on the first ID, the largest deleted ID and
entries-added; then the consumer groups, each with its last ID, read counter (type 19 on), its
PEL (raw 16-byte ID, delivery time, delivery count) and its consumers (name, seen time, active
time from type 21 on, and the raw IDs of the PEL entries they own), and from type 27 on the
group's NACK zone: its count and the raw IDs of the pending entries no consumer owns, in
release order. Type 26 on ends with the IDMP block: IDMP-DURATION, IDMP-MAXSIZE, the producer
count, per producer its pid, its iid count and each (iid, entry ID ms, entry ID seq) oldest
first, then iids-added and iids-duplicates. Type 19 has no active time: readers (Redis 7.2+,
Valkey, this codec) take the seen time for it, so a stream whose consumers all have active
time == seen time loses nothing in type 19 (see version_needed).
"""

from __future__ import annotations

from server.persistence.rdb_encoding import (
    M64,
    RdbFormatError,
    Reader,
    Sink,
    UnsupportedType,
    put_length,
    put_ms,
    put_string,
)
from storage.cold.node import node_bytes
from storage.consumer_group import create_group, groups
from storage.consumer_group_lag import INVALID_ENTRIES_READ, estimate_distance
from storage.keyspace import StringValue
from storage.stream import Stream, StreamCorruption
from storage.stream_id import StreamID, key_to_id
from storage.stream_idmp import (
    BUILTIN_DURATION,
    BUILTIN_MAXSIZE,
    MAX_DURATION,
    MAX_MAXSIZE,
    MIN_DURATION,
    MIN_MAXSIZE,
    IdmpState,
)

TYPE_STRING = 0
TYPE_STREAM_LISTPACKS = 15  # Redis 5 and 6 (RDB 9)
TYPE_STREAM_LISTPACKS_2 = 19  # Redis 7.0 (RDB 10): first ID, max deleted ID, entries-added...
TYPE_STREAM_LISTPACKS_3 = 21  # Redis 7.2 on, Valkey 8 (RDB 11): consumers' active time
TYPE_STREAM_LISTPACKS_4 = 26  # Redis 8.6 (RDB 13): the IDMP state
TYPE_STREAM_LISTPACKS_5 = 27  # Redis 8.8 (RDB 14): each group's NACK zone
# This server's own, in the files restarts load while streams have nodes on disk (stream-hot-
# memory): a stream whose cold nodes are references to their place in the cold directory's
# segments. After the key, the type of the rest (19 on), then that type's body, in which a
# cold node's listpack is an empty string followed by its segment, offset, length, CRC-32
# (lengths) and its first and last IDs (a 32-byte string). Redis refuses the file ("unknown
# type"); a replica is sent one without references.
TYPE_STREAM_COLD_REFS = 200
STREAM_TYPES = (TYPE_STREAM_LISTPACKS, TYPE_STREAM_LISTPACKS_2, TYPE_STREAM_LISTPACKS_3,
                TYPE_STREAM_LISTPACKS_4, TYPE_STREAM_LISTPACKS_5)

# RDB versions: 9 holds strings (Redis 5 to 6.2 read it), 10 streams of type 19 and function
# libraries (Redis 7.0), 11 streams of type 21 (Redis 7.2, Valkey 8), 12 Redis 7.4's
# additions (hash field expiry, SLOT_INFO), none of which this server writes, 13 streams of
# type 26 (Redis 8.6), 14 streams of type 27 (Redis 8.8).
VERSION_STRINGS = 9
VERSION_STREAMS = 10
VERSION_ACTIVE_TIME = 11
VERSION_IDMP = 13
VERSION_NACK_ZONE = 14
NEWEST_VERSION = VERSION_NACK_ZONE

# What the RDB types we do not store are, for the error that names them (rdb.h's list).
_TYPE_NAMES = {
    1: "list", 2: "set", 3: "zset", 4: "hash", 5: "zset", 6: "module", 7: "module",
    9: "hash (zipmap)", 10: "list (ziplist)", 11: "set (intset)", 12: "zset (ziplist)",
    13: "hash (ziplist)", 14: "list (quicklist)", 16: "hash (listpack)", 17: "zset (listpack)",
    18: "list (quicklist)", 20: "set (listpack)", 22: "hash with field expiry",
    23: "hash with field expiry (listpack)", 24: "hash with field expiry",
    25: "hash with field expiry (listpack)",
}
_MODULE_NAME_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def type_name(kind: int) -> str | None:
    """What a value type byte is, for types this server knows but does not store."""
    return _TYPE_NAMES.get(kind)


def is_value_type(kind: int) -> bool:
    return kind in (TYPE_STRING, *STREAM_TYPES) or kind in _TYPE_NAMES


def module_type_name(module_id: int) -> str:
    """The 9-character module type name a module ID carries in its top 54 bits."""
    value = module_id >> 10
    chars = []
    for _ in range(9):
        chars.append(_MODULE_NAME_CHARS[value & 63])
        value >>= 6
    return bytes(reversed(chars)).decode()


# -- which type and version ----------------------------------------------------------------
def stream_type(version: int) -> int:
    if version >= VERSION_NACK_ZONE:
        return TYPE_STREAM_LISTPACKS_5
    if version >= VERSION_IDMP:
        return TYPE_STREAM_LISTPACKS_4
    return TYPE_STREAM_LISTPACKS_3 if version >= VERSION_ACTIVE_TIME else TYPE_STREAM_LISTPACKS_2


def version_needed(value: object) -> int:
    """The lowest RDB version that holds value without loss. A stream that never used IDMP
    or XNACK is written as Redis 7 writes it, so Redis 7 and Valkey 8 can load it (a replica
    of this server, a file moved back)."""
    if isinstance(value, StringValue):
        return VERSION_STRINGS
    if isinstance(value, Stream):
        all_groups = groups(value)
        if any(group.nacked for group in all_groups):
            return VERSION_NACK_ZONE
        if _idmp_in_use(value.idmp):
            return VERSION_IDMP
        for group in all_groups:
            for consumer in group.iter_consumers():
                if consumer.active_time != consumer.seen_time:
                    return VERSION_ACTIVE_TIME
        return VERSION_STREAMS
    raise TypeError(f"no RDB encoding for a value of type {type(value).__name__}")


def _idmp_in_use(idmp: IdmpState) -> bool:
    """Whether a stream's IDMP state differs from a new stream's under Redis's defaults
    (what a loader of an older type starts from)."""
    return bool(idmp.producers or idmp.iids_added or idmp.iids_duplicates
                or idmp.duration != BUILTIN_DURATION or idmp.maxsize != BUILTIN_MAXSIZE)


def value_type(value: object, version: int) -> int:
    if isinstance(value, StringValue):
        return TYPE_STRING
    if isinstance(value, Stream):
        return stream_type(version)
    raise TypeError(f"no RDB encoding for a value of type {type(value).__name__}")


# -- writing ----------------------------------------------------------------------------------
def write_value(sink: Sink, value: object, kind: int, cold_refs: bool = False) -> None:
    """The value's body (after its type byte) as type `kind` (from value_type); with
    cold_refs, cold stream nodes as references (after TYPE_STREAM_COLD_REFS)."""
    if kind == TYPE_STRING:
        assert isinstance(value, StringValue)
        put_string(sink.buf, value.data)
    else:
        assert isinstance(value, Stream) and kind in STREAM_TYPES
        _write_stream(sink, value, kind, cold_refs)


def has_cold_nodes(s: Stream) -> bool:
    return any(node.cold is not None for node in s.rax.values())  # type: ignore[attr-defined]


def _write_stream(sink: Sink, s: Stream, kind: int, cold_refs: bool = False) -> None:
    out = sink.buf
    put_length(out, s.node_count())
    for key, lp in s.rax.items():
        put_length(out, len(key))
        out += key
        ref = lp.cold  # type: ignore[attr-defined]
        if ref is not None and cold_refs:
            out.append(0)  # (an empty string)
            for part in (ref.segment, ref.offset, ref.length, ref.crc):
                put_length(out, part)
            put_string(out, ref.ids)
        else:
            put_string(out, node_bytes(lp))  # type: ignore[arg-type]  # (cold: from its file)
        sink.spill()
    put_length(out, s.length)
    put_length(out, s.last_id[0])
    put_length(out, s.last_id[1])
    if kind >= TYPE_STREAM_LISTPACKS_2:
        for part in (*(s.first_id if s.length else (0, 0)), *s.max_deleted_entry_id):
            put_length(out, part)
        put_length(out, s.entries_added)
    all_groups = groups(s)
    put_length(out, len(all_groups))
    for group in all_groups:
        put_string(out, group.name)
        put_length(out, group.last_id[0])
        put_length(out, group.last_id[1])
        if kind >= TYPE_STREAM_LISTPACKS_2:
            put_length(out, group.entries_read & M64)  # (-1, "not known", as a uint64)
        put_length(out, len(group.pel))
        for i, (key, nack) in enumerate(group.pel.items()):  # (the raw 16-byte ID keys)
            out += key
            put_ms(out, nack.delivery_time)
            put_length(out, nack.delivery_count)
            if i & 255 == 255:
                sink.spill()
        consumers = list(group.iter_consumers())
        put_length(out, len(consumers))
        for consumer in consumers:
            put_string(out, consumer.name)
            put_ms(out, consumer.seen_time)
            if kind >= TYPE_STREAM_LISTPACKS_3:
                put_ms(out, consumer.active_time)
            put_length(out, len(consumer.pel))
            for i, key in enumerate(consumer.pel):
                out += key
                if i & 1023 == 1023:
                    sink.spill()
            sink.spill()
        if kind >= TYPE_STREAM_LISTPACKS_5:
            put_length(out, len(group.nacked))
            for key in group.nacked:  # (release order)
                out += key
    if kind >= TYPE_STREAM_LISTPACKS_4:
        _write_idmp(out, s.idmp)
    sink.spill()


def _write_idmp(out: bytearray, idmp: IdmpState) -> None:
    put_length(out, idmp.duration)
    put_length(out, idmp.maxsize)
    put_length(out, idmp.pids_tracked)
    for pid in sorted(idmp.producers):  # (rax order)
        iids = idmp.producers[pid]
        put_string(out, pid)
        put_length(out, len(iids))
        for iid, (ms, seq) in iids.items():  # (oldest first)
            put_string(out, iid)
            put_length(out, ms)
            put_length(out, seq)
    put_length(out, idmp.iids_added)
    put_length(out, idmp.iids_duplicates)


# -- reading ----------------------------------------------------------------------------------
def read_value(r: Reader, kind: int) -> StringValue | Stream:
    """The value of type `kind` at r (its type byte and key already read)."""
    if kind == TYPE_STRING:
        return StringValue(r.string())
    if kind in STREAM_TYPES:
        return _read_stream(r, kind)
    name = type_name(kind)
    if name is not None:
        raise UnsupportedType(f"a {name} (RDB type {kind}), a type this server does not "
                              "store (it keeps strings and streams)")
    raise UnsupportedType(f"unknown RDB type {kind}")


def _stream_id(r: Reader) -> StreamID:
    ms = r.length()
    seq = r.length()
    return (ms, seq)


def _read_stream(r: Reader, kind: int) -> Stream:
    nodes = []
    for _ in range(r.count("stream node")):
        key = r.string()
        if len(key) != 16:
            raise r.fail("stream node key is not the size of a stream ID")
        nodes.append((key, bytearray(r.string())))
    length = r.length()
    last_id = _stream_id(r)
    if kind >= TYPE_STREAM_LISTPACKS_2:
        _stream_id(r)  # the first ID: derived from the nodes here
        max_deleted = _stream_id(r)
        entries_added = r.length()
    else:
        max_deleted, entries_added = (0, 0), length
    try:
        stream = Stream.from_nodes(nodes, last_id, entries_added, max_deleted, length=length,
                                   validate=r.deep)
    except StreamCorruption as exc:
        raise RdbFormatError(f"corrupt stream: {exc}") from None
    if entries_added < length:
        raise RdbFormatError("stream entries-added below its length")
    for _ in range(r.count("consumer group")):
        _read_group(r, stream, kind)
    if kind >= TYPE_STREAM_LISTPACKS_4:
        stream.idmp = _read_idmp(r)
    return stream


def _read_idmp(r: Reader) -> IdmpState:
    duration = r.length()
    maxsize = r.length()
    if not (MIN_DURATION <= duration <= MAX_DURATION and MIN_MAXSIZE <= maxsize <= MAX_MAXSIZE):
        raise r.fail("stream IDMP settings out of range")
    state = IdmpState(duration, maxsize)
    for _ in range(r.count("IDMP producer")):
        pid = r.string()
        if pid in state.producers:
            raise r.fail("duplicate IDMP producer")
        iids: dict[bytes, StreamID] = {}
        for _ in range(r.count("IDMP iid")):
            iid = r.string()
            if iid in iids:
                raise r.fail("duplicate IDMP iid")
            iids[iid] = _stream_id(r)
        if iids:
            state.producers[pid] = iids
    state.iids_added = r.length()
    state.iids_duplicates = r.length()
    return state


def _read_group(r: Reader, s: Stream, kind: int) -> None:
    """One consumer group. Every pending entry has one owner, or (type 27) is in the
    group's NACK zone: anything else is corrupt."""
    name = r.string()
    last_id = _stream_id(r)
    if kind >= TYPE_STREAM_LISTPACKS_2:
        # A uint64: all ones is -1 ("not known"); anything else is a count, which may be
        # past LLONG_MAX (as counters that grew past it are kept here, and written).
        entries_read = r.length()
        if entries_read == M64:
            entries_read = INVALID_ENTRIES_READ
    else:
        entries_read = estimate_distance(s, last_id)
    group = create_group(s, name, last_id, entries_read)
    if group is None:
        raise r.fail("duplicate consumer group name")
    group.entries_read = entries_read  # exactly as saved
    pending: dict[bytes, tuple[int, int]] = {}
    for _ in range(r.count("pending entry")):
        key = r.take(16)
        if key in pending:
            raise r.fail("duplicate pending entry")
        delivery_time = r.ms_time()
        pending[key] = (delivery_time, r.length())
    owned: set[bytes] = set()
    for _ in range(r.count("consumer")):
        cname = r.string()
        seen_time = r.ms_time()
        consumer = group.create_consumer(cname, seen_time)
        if consumer is None:
            raise r.fail("duplicate consumer")
        consumer.active_time = r.ms_time() if kind >= TYPE_STREAM_LISTPACKS_3 else seen_time
        for _ in range(r.count("consumer pending entry")):
            key = r.take(16)
            if key not in pending:
                raise r.fail("consumer entry not found in the group's PEL")
            if key in owned:
                raise r.fail("pending entry owned twice")
            owned.add(key)
            delivery_time, delivery_count = pending[key]
            group.add_pending(s, key_to_id(key), consumer, delivery_time, delivery_count)
    released = 0
    if kind >= TYPE_STREAM_LISTPACKS_5:
        for _ in range(r.count("NACK zone entry")):
            key = r.take(16)
            if key not in pending:
                raise r.fail("NACK zone entry not found in the group's PEL")
            if key in owned or group.nacked.get(key) is not None:
                raise r.fail("NACK zone entry owned by a consumer or listed twice")
            group.add_released(s, key_to_id(key), pending[key][1])
            released += 1
    if len(owned) + released != len(pending):
        raise r.fail("pending entry without a consumer")


def clone_stream(stream: Stream) -> Stream:
    """A deep copy of a stream, consumer groups, NACK zones and IDMP state included (COPY,
    streamDup): encoded and read back, which rebuilds the groups' shared pending entries."""
    sink = Sink()
    _write_stream(sink, stream, TYPE_STREAM_LISTPACKS_5)
    return _read_stream(Reader(bytes(sink.buf)), TYPE_STREAM_LISTPACKS_5)
