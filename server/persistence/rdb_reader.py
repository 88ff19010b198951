"""Reading RDB files of versions 9 to 14 (Redis 5 to 8.8, Valkey 8) into fresh databases.

The file is decoded record by record from bytes in memory: AUX fields (kept, and shown by
the loader), FUNCTION2 (a library's code), SELECTDB, RESIZEDB and SLOT_INFO (hints, skipped),
EXPIRETIME / EXPIRETIME_MS, IDLE and FREQ (for the next key), then keys: strings and streams
(rdb_values). Everything else stops the load with an error that says what and where: a type
this server does not implement (hash, list, set, zset, module...) names the key and the
type; MODULE_AUX data, the pre-release FUNCTION opcode, an unknown opcode, a short file, an
absurd length or a corrupt stream give the offset. After EOF the 8-byte CRC-64 is checked
(0 means the writer had checksums off). Nothing is installed here: the caller swaps the
databases in only when the whole file decoded.

A plain file must end right after its checksum. An AOF base (`aof_base`) may go on with
commands after it (Redis's RDB preamble); `LoadResult.end` says where they start. As in Redis,
keys whose time to live has passed are skipped, except in an AOF base, whose incr files
assume the keyspace exactly as it was.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from server.persistence.dataset import LoadError, LoadResult
from server.persistence.rdb_encoding import (
    MAGIC,
    OP_AUX,
    OP_EOF,
    OP_EXPIRETIME,
    OP_EXPIRETIME_MS,
    OP_FREQ,
    OP_FUNCTION2,
    OP_FUNCTION_PRE_GA,
    OP_IDLE,
    OP_MODULE_AUX,
    OP_RESIZEDB,
    OP_SELECTDB,
    OP_SLOT_INFO,
    RdbFormatError,
    Reader,
    UnsupportedType,
    crc64,
)
from server.persistence.rdb_stream_read import read_stream
from server.persistence.rdb_values import (
    NEWEST_VERSION,
    STREAM_TYPES,
    TYPE_STREAM_COLD_REFS,
    TYPE_STREAM_LISTPACKS_2,
    TYPE_STRING,
    module_type_name,
    read_value,
    type_name,
)
from storage.access import AccessClock
from storage.cold.segments import SegmentError

if TYPE_CHECKING:
    from storage.cold import ColdTier

OLDEST_VERSION = 9  # Redis 5.0
_HEADER = 9  # "REDIS" + 4 digits
_MODULE_TYPES = (6, 7)


class RdbLoadError(LoadError):
    """An RDB file that cannot be loaded (the message names the problem and its offset)."""


def is_rdb(head: bytes) -> bool:
    return head.startswith(MAGIC)


def _show(key: bytes) -> str:
    """A key for a message: at most 200 bytes, control characters escaped (the message may
    end up in an error reply, which must not hold a line break)."""
    text = key[:200].decode("utf-8", errors="backslashreplace")
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text + ("..." if len(key) > 200 else "")


def parse_rdb(data: bytes, ndbs: int, now_ms: int | None = None,
              access: AccessClock | None = None, aof_base: bool = False,
              cold: Callable[[], ColdTier] | None = None) -> LoadResult:
    """Decode a whole RDB file into fresh databases (ndbs of them), whose values get their
    `lru` from `access` (the server's, for its policy) and the file's IDLE / FREQ. `cold`
    gives the cold tier that streams referring to cold nodes are loaded into (a file this
    server wrote for its restarts); without it such a stream is an error."""
    if len(data) < _HEADER or not is_rdb(data):
        raise RdbLoadError("not an RDB file (bad signature)")
    digits = bytes(data[len(MAGIC):_HEADER])
    if not digits.isdigit():
        raise RdbLoadError(f"not an RDB file (bad version {digits!r})")
    version = int(digits)
    if not OLDEST_VERSION <= version <= NEWEST_VERSION:
        raise RdbLoadError(f"can't handle RDB format version {version} (this server reads "
                           f"{OLDEST_VERSION} to {NEWEST_VERSION})")
    access = access if access is not None else AccessClock()
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    # A whole file whose checksum verifies is decoded without checking each stream node
    # byte by byte (Redis's sanitize-dump-payload no): the CRC already vouched for them,
    # and the deep check cost about 8 us per entry. An AOF base is most often such a file
    # too. One followed by commands (Redis's RDB preamble) is first decoded without the
    # deep check and kept if the checksum after its EOF is there and verifies; anything
    # else (no checksum, a mismatch, a decoding error) decodes it again checking every
    # node, which also gives an error the message it always had.
    stored = int.from_bytes(data[-8:], "little")
    verified = bool(stored) and crc64(memoryview(data)[:-8]) == stored
    if aof_base and not verified:
        try:
            result, checked = _decode(data, ndbs, version, access, now, True, False, cold)
        except Exception:  # (what the deep check would have refused, or a bad file)
            checked = False
        if checked:
            return result
    return _decode(data, ndbs, version, access, now, aof_base, not verified, cold)[0]


def _decode(data: bytes, ndbs: int, version: int, access: AccessClock, now: int,
            aof_base: bool, deep: bool, cold: Callable[[], ColdTier] | None = None
            ) -> tuple[LoadResult, bool]:
    """The records and the checksum after them; True with the result when that checksum
    was there (not 0) and verified."""
    result = LoadResult(ndbs, access)
    result.version = version
    r = Reader(data, pos=_HEADER)
    r.deep = deep
    try:
        _records(r, result, now, aof_base, cold)
    except RdbFormatError as exc:
        raise RdbLoadError(f"{exc}{_checksum_hint(data)}") from None
    stored = data[r.pos:r.pos + 8]
    if len(stored) < 8:
        raise RdbLoadError(f"unexpected end of file in the checksum at offset {r.pos}")
    expected = int.from_bytes(stored, "little")
    if expected and crc64(memoryview(data)[:r.pos]) != expected:
        raise RdbLoadError("wrong RDB checksum: the file is damaged")
    result.end = r.pos + 8
    if not aof_base and result.end != len(data):
        raise RdbLoadError(f"unexpected data after the end of the RDB at offset {result.end}")
    return result, bool(expected)


def _checksum_hint(data: bytes) -> str:
    """For a file that failed to decode: whether its last 8 bytes are the checksum of the
    rest (if not, it was damaged or cut short rather than written wrong)."""
    if len(data) < _HEADER + 9:
        return ""
    stored = int.from_bytes(data[-8:], "little")
    if stored and crc64(memoryview(data)[:-8]) != stored:
        return " (and the file's checksum does not match: it is damaged or truncated)"
    return ""


def _records(r: Reader, result: LoadResult, now: int, aof_base: bool,
             cold: Callable[[], ColdTier] | None = None) -> None:
    """Every record up to EOF (r is left just after it)."""
    access = result.dbs[0].access
    db = result.dbs[0]  # (as in Redis, keys before any SELECTDB go to database 0)
    expire: int | None = None
    idle = freq = -1  # the next key's, from IDLE / FREQ records (-1: none)
    ndbs = len(result.dbs)
    while True:
        at = r.pos
        op = r.byte()
        if op == OP_EOF:
            return
        if op == OP_AUX:
            key = r.string()
            result.aux[key] = r.string()
        elif op == OP_FUNCTION2:
            result.libraries.append(r.string())
        elif op == OP_SELECTDB:
            index = r.length()
            if index >= ndbs:
                raise RdbFormatError(f"database {index} out of range (databases {ndbs}) "
                                     f"at offset {at}")
            db = result.dbs[index]
        elif op == OP_RESIZEDB:
            r.length()
            r.length()
        elif op == OP_SLOT_INFO:
            for _ in range(3):  # slot, keys, keys with expiry: a cluster's sizing hint
                r.length()
        elif op == OP_EXPIRETIME_MS:
            expire = r.ms_time()
        elif op == OP_EXPIRETIME:
            expire = r.seconds_time() * 1000
        elif op == OP_IDLE:
            idle = r.length()
        elif op == OP_FREQ:
            freq = r.byte()
        elif op == OP_MODULE_AUX:
            name = module_type_name(r.length())
            raise RdbFormatError(f"the file holds auxiliary data of the module type '{name}' "
                                 f"(MODULE_AUX at offset {at}): modules are not implemented "
                                 "by this server")
        elif op == OP_FUNCTION_PRE_GA:
            raise RdbFormatError(f"pre-release function format (Redis 7.0 release candidates) "
                                 f"at offset {at} is not supported")
        elif op in (TYPE_STRING, TYPE_STREAM_COLD_REFS) or op in STREAM_TYPES:
            key = r.string()
            try:
                if op == TYPE_STREAM_COLD_REFS:
                    value = _read_cold_refs(r, key, cold)
                else:
                    value = read_stream(r, op) if op in STREAM_TYPES else read_value(r, op)
            except RdbFormatError as exc:
                raise RdbFormatError(f"{exc} in the key '{_show(key)}' (db {db.id}) starting "
                                     f"at offset {at}") from None
            if key in db.data:
                raise RdbFormatError(f"duplicated key '{_show(key)}' in db {db.id} at "
                                     f"offset {at}")
            if expire is not None and expire < now and not aof_base:
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
        elif type_name(op) is not None:
            key = r.string()
            raise _unsupported(r, op, key, db.id, at)
        else:
            raise RdbFormatError(f"unknown RDB type or opcode {op} at offset {at}")


def _read_cold_refs(r: Reader, key: bytes, cold: Callable[[], ColdTier] | None) -> object:
    """A stream whose cold nodes are references to the cold directory's segments."""
    kind = r.byte()
    if kind not in STREAM_TYPES or kind < TYPE_STREAM_LISTPACKS_2:
        raise r.fail(f"bad stream type {kind} of a stream with cold nodes")
    if cold is None:
        raise r.fail("a stream that refers to cold nodes on disk (stream-hot-memory) can only "
                     "be loaded by the server that wrote it, from its own files")
    try:
        tier = cold()
    except (OSError, SegmentError) as exc:
        raise r.fail(f"the cold directory cannot be used ({exc}) for a stream that refers to "
                     "it") from None
    return read_stream(r, kind, tier, key)


def _unsupported(r: Reader, kind: int, key: bytes, db: int, at: int) -> UnsupportedType:
    what = f"a {type_name(kind)}"
    if kind in _MODULE_TYPES:
        try:
            what = f"a value of the module type '{module_type_name(r.length())}'"
        except RdbFormatError:
            pass
    return UnsupportedType(f"the key '{_show(key)}' (db {db}, at offset {at}) is {what} "
                           f"(RDB type {kind}): this server does not implement that type "
                           "(it stores strings and streams)")
