"""Writing RDB files (dump.rdb, and the AOF base with aof-use-rdb-preamble yes) in Redis's
format, so that Redis and Valkey load them:

    "REDIS" + 4-digit version, AUX fields, FUNCTION2 per library,
    per non-empty database: SELECTDB, RESIZEDB, then per key [EXPIRETIME_MS] [IDLE | FREQ]
    type key value; EOF, CRC-64 of everything before it (8 bytes, little-endian)

The version is the lowest that holds the data (rdb_values.version_needed): 9 for strings
only, 10 once there are streams or function libraries (streams as type 19: Redis 7.0 loads
the file), 11 when a consumer's active time differs from its seen time (type 21: Redis 7.2+,
Valkey 8), 13 when a stream holds IDMP state (type 26: Redis 8.6), 14 when a group has
entries released by XNACK (type 27: Redis 8.8). The file is encoded as it is written, in
buffers of 64 KiB that carry the running CRC, so memory stays flat whatever the data's size
(BGSAVE's child writes from its copy-on-write image). save_rdb writes temp-<pid>.rdb, fsyncs
it, renames it over the target and fsyncs the directory.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from typing import BinaryIO

from server.persistence.manifest import fsync_dir
from server.persistence.rdb_encoding import (
    MAGIC,
    OP_AUX,
    OP_EOF,
    OP_EXPIRETIME_MS,
    OP_FREQ,
    OP_FUNCTION2,
    OP_IDLE,
    OP_RESIZEDB,
    OP_SELECTDB,
    Sink,
    crc64,
    put_length,
    put_ms,
    put_string,
)
from server.persistence.rdb_values import (
    NEWEST_VERSION,
    TYPE_STREAM_COLD_REFS,
    VERSION_STREAMS,
    VERSION_STRINGS,
    has_cold_nodes,
    value_type,
    version_needed,
    write_value,
)
from storage.keyspace import Database
from storage.stream import Stream

PRODUCER = b"0.1.0"  # the "xstreamd-ver" aux field
_SPILL_AT = 1 << 16


class FileSink(Sink):
    """Hands the buffer to the file whenever it holds 64 KiB, keeping the CRC-64 of all the
    bytes written."""

    __slots__ = ("out", "crc", "size")

    def __init__(self, out: BinaryIO) -> None:
        super().__init__()
        self.out = out
        self.crc = 0
        self.size = 0

    def spill(self) -> None:
        if len(self.buf) >= _SPILL_AT:
            self.flush()

    def flush(self) -> None:
        buf = self.buf
        if buf:
            self.crc = crc64(buf, self.crc)
            self.out.write(buf)
            self.size += len(buf)
            buf.clear()


def choose_version(dbs: Iterable[Database], libraries: Sequence[bytes] = ()) -> int:
    """The lowest RDB version that holds every value and the function libraries."""
    version = VERSION_STREAMS if libraries else VERSION_STRINGS
    for db in dbs:
        for value in db.data.values():
            version = max(version, version_needed(value))
            if version >= NEWEST_VERSION:
                return version
    return version


def write_rdb(out: BinaryIO, dbs: Sequence[Database], libraries: Sequence[bytes] = (),
              aof_base: bool = False, now_ms: int | None = None,
              per_key: Callable[[], None] | None = None, version: int | None = None,
              cold_refs: bool = False) -> int:
    """Write the function libraries and every database to out as an RDB file; returns the
    number of keys written. `aof_base`: the file is an AOF base (its aux field says so).
    per_key (if given) runs after each key (rdb-key-save-delay). `cold_refs`: a stream with
    nodes on disk refers to them (TYPE_STREAM_COLD_REFS) instead of carrying their bytes;
    for the files this server loads at restart, never for a replica or another server."""
    if version is None:
        version = choose_version(dbs, libraries)
    sink = FileSink(out)
    buf = sink.buf
    buf += MAGIC + b"%04d" % version
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    for key, value in ((b"xstreamd-ver", PRODUCER), (b"redis-bits", b"64"),
                       (b"ctime", b"%d" % (now // 1000)), (b"aof-base", b"%d" % aof_base)):
        buf.append(OP_AUX)
        put_string(buf, key)
        put_string(buf, value)
    for code in libraries:
        buf.append(OP_FUNCTION2)
        put_string(buf, code)
        sink.spill()
    keys = 0
    for db in dbs:
        if not db.data:
            continue
        buf.append(OP_SELECTDB)
        put_length(buf, db.id)
        buf.append(OP_RESIZEDB)
        put_length(buf, len(db.data))
        put_length(buf, len(db.expires))
        expires = db.expires
        # Under an LRU policy each key's idle seconds are kept, under an LFU one its counter
        # (rdbSaveKeyValuePair); under the others neither.
        access = db.access
        for key, value in list(db.data.items()):
            when = expires.get(key)
            if when is not None:
                buf.append(OP_EXPIRETIME_MS)
                put_ms(buf, when)
            if access.lfu:
                buf.append(OP_FREQ)
                buf.append(access.decayed_counter(value.lru))
            elif access.lru_policy:
                buf.append(OP_IDLE)
                put_length(buf, access.idle_ms(value.lru) // 1000)
            kind = value_type(value, version)
            refs = cold_refs and type(value) is Stream and has_cold_nodes(value)
            if refs:
                buf.append(TYPE_STREAM_COLD_REFS)
                put_string(buf, key)
                buf.append(kind)
            else:
                buf.append(kind)
                put_string(buf, key)
            write_value(sink, value, kind, refs)
            sink.spill()
            keys += 1
            if per_key is not None:
                per_key()
    buf.append(OP_EOF)
    sink.flush()
    out.write(sink.crc.to_bytes(8, "little"))
    return keys


def save_rdb(path: str, dbs: Sequence[Database], libraries: Sequence[bytes] = (),
             fsync: bool = True, per_key: Callable[[], None] | None = None,
             cold_refs: Callable[[], None] | None = None) -> int:
    """Write an RDB file to path atomically (temp-<pid>.rdb beside it, fsync, rename, fsync of
    the directory). Returns the number of keys; raises OSError (the temp file is removed).
    `cold_refs`: cold stream nodes are written as references, and this is called (to make
    the segments they refer to durable) before the file is renamed into place."""
    directory = os.path.dirname(path)
    tmp = os.path.join(directory, temp_name(os.getpid()))
    try:
        with open(tmp, "wb", buffering=1 << 16) as fh:
            keys = write_rdb(fh, dbs, libraries, per_key=per_key, cold_refs=cold_refs is not None)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        if cold_refs is not None:
            cold_refs()
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if fsync:
        fsync_dir(directory)
    return keys


def temp_name(pid: int) -> str:
    """The temp file a save by process pid writes (as Redis names it)."""
    return f"temp-{pid}.rdb"
