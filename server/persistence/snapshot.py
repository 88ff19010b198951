"""The snapshot file: a point-in-time image of every database in one binary file, with a
CRC-32 over the whole content at the end (FORMAT.md has the byte layout).

Streams are stored as their listpack nodes, byte for byte (the listpack format is stable), and
validated node by node when loaded, with their metadata, consumer groups, PELs and consumers.
Loading builds fresh databases and only replaces the live ones when the whole file checked out:
a damaged file never leaves a half-loaded server.
"""

from __future__ import annotations

import io
import os
import struct
import time
import zlib
from collections.abc import Callable, Iterable
from typing import BinaryIO

from server.persistence import groups_codec
from storage.access import AccessClock
from storage.keyspace import Database, StringValue
from storage.stream import Stream, StreamCorruption
from storage.stream_id import StreamID, id_to_key, key_to_id

MAGIC = b"XSNAP"
VERSION = 3  # 2: IDLE and FREQ records; 3: FUNCTION records (older files load as they are)
HEADER = MAGIC + b"%03d" % VERSION  # b"XSNAP002"

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


class SnapshotError(ValueError):
    """A snapshot that cannot be loaded; the message says what and where."""


def is_snapshot(head: bytes) -> bool:
    return head.startswith(MAGIC)


# -- writing ----------------------------------------------------------------------------------
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
    groups_codec.write_groups(w, s)


def save_file(path: str, dbs: Iterable[Database], fsync: bool = True,
              per_key: Callable[[], None] | None = None,
              libraries: Iterable[bytes] = ()) -> int:
    """Write a snapshot to path atomically (temp file, fsync, rename, fsync of the directory).
    Returns the number of keys; raises OSError (the temp file is removed)."""
    directory = os.path.dirname(path)
    tmp = os.path.join(directory, f"temp-{os.getpid()}.xsnap")
    try:
        with open(tmp, "wb", buffering=1 << 16) as fh:
            keys = write_snapshot(fh, dbs, per_key=per_key, libraries=libraries)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if fsync:
        from server.persistence.manifest import fsync_dir

        fsync_dir(directory)
    return keys


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


class LoadResult:
    __slots__ = ("dbs", "keys_loaded", "keys_expired", "aux", "libraries")

    def __init__(self, dbs: list[Database]) -> None:
        self.dbs = dbs
        self.keys_loaded = 0
        self.keys_expired = 0
        self.aux: dict[bytes, bytes] = {}
        self.libraries: list[bytes] = []  # the function libraries' code


def parse_snapshot(data: bytes | memoryview, ndbs: int, now_ms: int | None = None,
                   access: AccessClock | None = None) -> LoadResult:
    """Check and decode a whole snapshot into fresh databases (ndbs of them), whose values
    get their `lru` from `access` (the server's, for its policy) and the file's IDLE / FREQ."""
    if len(data) < len(HEADER) + 5 or not bytes(data[:len(MAGIC)]) == MAGIC:
        raise SnapshotError("not a snapshot file (bad magic)")
    version_text = bytes(data[len(MAGIC):len(HEADER)])
    if not version_text.isdigit() or int(version_text) > VERSION or int(version_text) < 1:
        raise SnapshotError(f"unsupported snapshot version {version_text!r}")
    end = len(data) - 4
    expected = _CRC.unpack(bytes(data[end:]))[0]
    if zlib.crc32(data[:end]) != expected:
        raise SnapshotError("checksum mismatch: the file is damaged")
    r = SnapshotReader(data, len(HEADER), end)
    access = access if access is not None else AccessClock()
    result = LoadResult([Database(i, access=access) for i in range(ndbs)])
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
    groups_codec.read_groups(r, stream, at)
    return stream


def clone_stream(stream: Stream) -> Stream:
    """A deep copy of a stream, consumer groups included (COPY, streamDup): written in the
    snapshot encoding and read back, which rebuilds the groups' shared pending entries."""
    out = io.BytesIO()
    w = SnapshotWriter(out)
    write_stream(w, stream)
    w.flush()
    data = out.getvalue()
    return _read_stream(SnapshotReader(data, 0, len(data)), 0)


def load_file(path: str, ndbs: int, access: AccessClock | None = None) -> LoadResult:
    with open(path, "rb") as fh:
        data = fh.read()
    return parse_snapshot(memoryview(data), ndbs, access=access)
