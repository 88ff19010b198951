"""A writer of the old xsnap snapshot format, for tests only: the server no longer writes it
(it writes RDB files) but still loads such files, so the tests make some to load. This is the
writer the server had before it switched to RDB."""

from __future__ import annotations

import os
import struct
import time
import zlib
from collections.abc import Callable, Iterable
from typing import BinaryIO

from server.persistence.snapshot import (
    MAGIC,
    OP_AUX,
    OP_EOF,
    OP_EXPIRETIME_MS,
    OP_FREQ,
    OP_FUNCTION,
    OP_IDLE,
    OP_RESIZEDB,
    OP_SELECTDB,
    OP_STREAM,
    OP_STRING,
    VERSION,
)
from storage.consumer_group import groups
from storage.keyspace import Database, StringValue
from storage.stream import Stream
from storage.stream_id import StreamID, id_to_key

HEADER = MAGIC + b"%03d" % VERSION
_U64 = struct.Struct(">Q")
_CRC = struct.Struct(">I")


class SnapshotWriter:
    """Encodes records into a binary file, keeping the running CRC-32."""

    __slots__ = ("out", "crc", "size", "_buf")

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.crc = 0
        self.size = 0
        self._buf = bytearray()

    def raw(self, data: bytes | bytearray | memoryview) -> None:
        self._buf += data
        if len(self._buf) >= 1 << 16:
            self.flush()

    def flush(self) -> None:
        if self._buf:
            self.crc = zlib.crc32(self._buf, self.crc)
            self.size += len(self._buf)
            self.out.write(self._buf)
            self._buf = bytearray()

    def byte(self, value: int) -> None:
        self._buf.append(value)

    def varint(self, value: int) -> None:
        if value < 0:
            raise ValueError("varint must be non-negative")
        buf = self._buf
        while value >= 0x80:
            buf.append((value & 0x7F) | 0x80)
            value >>= 7
        buf.append(value)

    def u64(self, value: int) -> None:
        self._buf += _U64.pack(value)

    def string(self, data: bytes | bytearray) -> None:
        self.varint(len(data))
        self.raw(data)

    def stream_id(self, sid: StreamID) -> None:
        self._buf += id_to_key(sid)

    def finish(self) -> None:
        """EOF opcode, then the CRC-32 of everything before it (the CRC itself excluded)."""
        self.byte(OP_EOF)
        self.flush()
        self.out.write(_CRC.pack(self.crc))
        self.size += 4


def write_snapshot(out: BinaryIO, dbs: Iterable[Database], now_ms: int | None = None,
                   per_key: Callable[[], None] | None = None,
                   libraries: Iterable[bytes] = ()) -> int:
    """Write the function libraries' code and every database to out; returns the number of
    keys written. per_key (if given) runs after each key (rdb-key-save-delay)."""
    w = SnapshotWriter(out)
    w.raw(HEADER)
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    for key, value in ((b"xstreamd-ver", b"0.1.0"), (b"ctime", b"%d" % (now // 1000))):
        w.byte(OP_AUX)
        w.string(key)
        w.string(value)
    for code in libraries:
        w.byte(OP_FUNCTION)
        w.string(code)
    keys = 0
    for db in dbs:
        if not db.data:
            continue
        w.byte(OP_SELECTDB)
        w.varint(db.id)
        w.byte(OP_RESIZEDB)
        w.varint(len(db.data))
        w.varint(len(db.expires))
        expires = db.expires
        # Under an LRU policy each key's idle seconds are kept, under an LFU one its counter
        # (rdbSaveKeyValuePair); under the others neither.
        access = db.access
        for key, value in list(db.data.items()):
            when = expires.get(key)
            if when is not None:
                w.byte(OP_EXPIRETIME_MS)
                w.u64(when)
            if access.lfu:
                w.byte(OP_FREQ)
                w.byte(access.decayed_counter(value.lru))
            elif access.lru_policy:
                w.byte(OP_IDLE)
                w.varint(access.idle_ms(value.lru) // 1000)
            _write_value(w, key, value)
            keys += 1
            if per_key is not None:
                per_key()
    w.finish()
    return keys


def _write_value(w: SnapshotWriter, key: bytes, value: object) -> None:
    if isinstance(value, StringValue):
        w.byte(OP_STRING)
        w.string(key)
        w.string(value.data)
    elif isinstance(value, Stream):
        w.byte(OP_STREAM)
        w.string(key)
        write_stream(w, value)
    else:
        raise TypeError(f"cannot snapshot a value of type {type(value).__name__}")


def write_stream(w: SnapshotWriter, s: Stream) -> None:
    w.varint(s.node_count())
    for key, lp in s.rax.items():
        w.raw(key)
        w.string(lp.buf)  # type: ignore[attr-defined]
    w.varint(s.length)
    w.stream_id(s.last_id)
    w.stream_id(s.max_deleted_entry_id)
    w.varint(s.entries_added)
    write_groups(w, s)


def _zigzag(value: int) -> int:
    return value * 2 if value >= 0 else -value * 2 - 1


def write_groups(w: SnapshotWriter, s: Stream) -> None:
    all_groups = groups(s)
    w.varint(len(all_groups))
    for group in all_groups:
        w.string(group.name)
        w.stream_id(group.last_id)
        w.varint(_zigzag(group.entries_read))
        index: dict[int, int] = {}
        consumers = list(group.iter_consumers())
        w.varint(len(consumers))
        for i, consumer in enumerate(consumers):
            index[id(consumer)] = i + 1
            w.string(consumer.name)
            w.varint(_zigzag(consumer.seen_time))
            w.varint(_zigzag(consumer.active_time))
        w.varint(len(group.pel))
        for eid, nack in group.iter_pending():
            w.stream_id(eid)
            w.varint(_zigzag(nack.delivery_time))
            w.varint(_zigzag(nack.delivery_count))
            owner = nack.consumer
            w.varint(index.get(id(owner), 0) if owner is not None else 0)


def save_file(path: str, dbs: Iterable[Database], libraries: Iterable[bytes] = ()) -> int:
    """Write an xsnap file at path (no temp file: tests only)."""
    with open(path, "wb") as fh:
        keys = write_snapshot(fh, dbs, libraries=libraries)
    assert os.path.getsize(path) > 0
    return keys
