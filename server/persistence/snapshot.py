"""The old snapshot format (dump.xsnap, and AOF bases of earlier versions): read only. The
server writes RDB files now (rdb_writer.py); these files still load when found, by their
magic. FORMAT.md has the byte layout.

A point-in-time image of every database in one binary file, with a CRC-32 over the whole
content at the end. Streams are stored as their listpack nodes, byte for byte, validated node
by node when loaded, with their metadata, consumer groups (rebuilt through
storage.consumer_group, so the PEL, the time index, the consumers' PELs and the stream's
reference index agree by construction), PELs and consumers. Signed values are zigzag varints.
"""

from __future__ import annotations

import struct
import time
import zlib

from server.persistence.dataset import LoadError, LoadResult
from storage.access import AccessClock
from storage.consumer_group import create_group
from storage.keyspace import Database, StringValue
from storage.stream import Stream, StreamCorruption
from storage.stream_id import StreamID, key_to_id

MAGIC = b"XSNAP"
VERSION = 3  # 2: IDLE and FREQ records; 3: FUNCTION records (older files load as they are)
HEADER_SIZE = 8  # MAGIC and 3 digits of version: b"XSNAP003"

OP_STRING = 0x00
OP_IDLE = 0xF8  # as RDB_OPCODE_IDLE / FREQ: the next key's access time or frequency
OP_FREQ = 0xF9
OP_STREAM = 0x15
OP_AUX = 0xFA
OP_FUNCTION = 0xF5  # as RDB_OPCODE_FUNCTION2: a function library's code
OP_RESIZEDB = 0xFB
OP_EXPIRETIME_MS = 0xFC
OP_SELECTDB = 0xFE
OP_EOF = 0xFF

_U64 = struct.Struct(">Q")
_CRC = struct.Struct(">I")


class SnapshotError(LoadError):
    """A snapshot that cannot be loaded; the message says what and where."""


def is_snapshot(head: bytes) -> bool:
    return head.startswith(MAGIC)


# -- reading ----------------------------------------------------------------------------------
class SnapshotReader:
    __slots__ = ("data", "pos", "end")

    def __init__(self, data: bytes | memoryview, pos: int, end: int) -> None:
        self.data = data
        self.pos = pos
        self.end = end

    def fail(self, what: str) -> SnapshotError:
        return SnapshotError(f"{what} at offset {self.pos}")

    def byte(self) -> int:
        if self.pos >= self.end:
            raise self.fail("unexpected end of data")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def varint(self) -> int:
        value = shift = 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 70:
                raise self.fail("varint too long")

    def take(self, n: int) -> bytes:
        if n > self.end - self.pos:
            raise self.fail("unexpected end of data")
        start = self.pos
        self.pos += n
        return bytes(self.data[start:self.pos])

    def u64(self) -> int:
        return _U64.unpack(self.take(8))[0]

    def string(self) -> bytes:
        return self.take(self.varint())

    def stream_id(self) -> StreamID:
        return key_to_id(self.take(16))


def parse_snapshot(data: bytes | memoryview, ndbs: int, now_ms: int | None = None,
                   access: AccessClock | None = None) -> LoadResult:
    """Check and decode a whole snapshot into fresh databases (ndbs of them), whose values
    get their `lru` from `access` (the server's, for its policy) and the file's IDLE / FREQ."""
    if len(data) < HEADER_SIZE + 5 or not bytes(data[:len(MAGIC)]) == MAGIC:
        raise SnapshotError("not a snapshot file (bad magic)")
    version_text = bytes(data[len(MAGIC):HEADER_SIZE])
    if not version_text.isdigit() or int(version_text) > VERSION or int(version_text) < 1:
        raise SnapshotError(f"unsupported snapshot version {version_text!r}")
    end = len(data) - 4
    expected = _CRC.unpack(bytes(data[end:]))[0]
    if zlib.crc32(data[:end]) != expected:
        raise SnapshotError("checksum mismatch: the file is damaged")
    r = SnapshotReader(data, HEADER_SIZE, end)
    access = access if access is not None else AccessClock()
    result = LoadResult(ndbs, access)
    result.version = int(version_text)
    result.end = len(data)
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    db: Database | None = None
    expire: int | None = None
    idle = freq = -1  # the next key's, from IDLE / FREQ records (-1: none)
    while True:
        at = r.pos
        op = r.byte()
        if op == OP_EOF:
            if r.pos != end:
                raise SnapshotError(f"data after the EOF marker at offset {r.pos}")
            break
        if op == OP_AUX:
            key = r.string()
            result.aux[key] = r.string()
        elif op == OP_FUNCTION:
            result.libraries.append(r.string())
        elif op == OP_SELECTDB:
            index = r.varint()
            if index >= ndbs:
                raise SnapshotError(f"database {index} out of range (databases {ndbs}) "
                                    f"at offset {at}")
            db = result.dbs[index]
        elif op == OP_RESIZEDB:
            r.varint()
            r.varint()
        elif op == OP_EXPIRETIME_MS:
            expire = r.u64()
        elif op == OP_IDLE:
            idle = r.varint()
        elif op == OP_FREQ:
            freq = r.byte()
        elif op in (OP_STRING, OP_STREAM):
            if db is None:
                raise SnapshotError(f"key before any database selector at offset {at}")
            key = r.string()
            value = StringValue(r.string()) if op == OP_STRING else _read_stream(r, at)
            if key in db.data:
                raise SnapshotError(f"duplicate key at offset {at}")
            if expire is not None and expire <= now:
                result.keys_expired += 1  # already dead: skipped, as a Redis master does
            else:
                restored = access.restored(idle, freq)  # objectSetLRUOrLFU
                value.lru = restored if restored is not None else access.initial()
                db.data[key] = value
                if expire is not None:
                    db.expires[key] = expire
                result.keys_loaded += 1
            expire = None
            idle = freq = -1
        else:
            raise SnapshotError(f"unknown record type {op:#04x} at offset {at}")
    return result


def _read_stream(r: SnapshotReader, at: int) -> Stream:
    nodes = []
    for _ in range(r.varint()):
        master = r.take(16)
        nodes.append((master, bytearray(r.string())))
    length = r.varint()
    last_id = r.stream_id()
    max_deleted = r.stream_id()
    entries_added = r.varint()
    try:
        stream = Stream.from_nodes(nodes, last_id, entries_added, max_deleted, length=length)
    except StreamCorruption as exc:
        raise SnapshotError(f"corrupt stream at offset {at}: {exc}") from None
    if entries_added < length:
        raise SnapshotError(f"stream entries-added below its length at offset {at}")
    _read_groups(r, stream, at)
    return stream


def _unzigzag(value: int) -> int:
    return value >> 1 if not value & 1 else -((value + 1) >> 1)


def _read_groups(r: SnapshotReader, s: Stream, at: int) -> None:
    """Per group: name, last ID, read counter, consumers (name, seen-time, active-time), then
    the PEL (ID, delivery time, delivery count, 1-based owner index)."""
    for _ in range(r.varint()):
        name = r.string()
        last_id = r.stream_id()
        entries_read = _unzigzag(r.varint())
        if entries_read < -1:
            raise r.fail("bad consumer group read counter")
        group = create_group(s, name, last_id, entries_read)
        if group is None:
            raise SnapshotError(f"duplicate consumer group in the stream at offset {at}")
        group.entries_read = entries_read  # exactly as saved
        consumers = []
        for _ in range(r.varint()):
            cname = r.string()
            consumer = group.create_consumer(cname, _unzigzag(r.varint()))
            if consumer is None:
                raise r.fail("duplicate consumer")
            consumer.active_time = _unzigzag(r.varint())
            consumers.append(consumer)
        for _ in range(r.varint()):
            eid = r.stream_id()
            delivery_time = _unzigzag(r.varint())
            delivery_count = _unzigzag(r.varint())
            owner = r.varint()
            if not 1 <= owner <= len(consumers):
                raise r.fail("pending entry without a valid owner")
            if group.find_nack(eid) is not None:
                raise r.fail("duplicate pending entry")
            group.add_pending(s, eid, consumers[owner - 1], delivery_time, delivery_count)
