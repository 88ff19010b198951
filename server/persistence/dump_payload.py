"""DUMP / RESTORE payloads: one value in Redis's RDB encoding, as Redis 8.4 writes and reads it.

    payload = type byte, value, RDB version (2 bytes, little-endian), CRC-64 (8 bytes, LE)

The CRC is Redis's crc64 (Jones polynomial, reflected, initial 0) of everything before it.
Values written: strings (type 0) and streams (type 21, RDB_TYPE_STREAM_LISTPACKS_3, RDB version
12). Values read: strings and streams of types 15, 19 and 21 (Redis 5 to 8), so payloads DUMPed
by any of those Redis versions restore here. Strings may be integer- or LZF-encoded on input;
on output they are integer-encoded where Redis would, never compressed (which Redis reads).

A stream value holds its nodes (16-byte master ID key, listpack bytes: our nodes are Redis's
listpacks), length, last ID, and from type 19 on the first ID, the largest deleted ID and
entries-added; then the consumer groups, each with its last ID, read counter (type 19 on), its
PEL (ID, delivery time, delivery count) and its consumers (name, seen time, active time from
type 21 on, and the IDs of the PEL entries they own).
"""

from __future__ import annotations

import struct

from server.parsing import is_canonical_int
from storage.consumer_group import create_group, groups
from storage.consumer_group_lag import INVALID_ENTRIES_READ, estimate_distance
from storage.keyspace import StringValue
from storage.stream import Stream, StreamCorruption
from storage.stream_id import StreamID, key_to_id

RDB_VERSION = 12  # Redis 7.4 to 8.4
TYPE_STRING = 0
TYPE_STREAM_LISTPACKS = 15  # Redis 5 and 6
TYPE_STREAM_LISTPACKS_2 = 19  # Redis 7.0: first ID, max deleted ID, entries-added, read counters
TYPE_STREAM_LISTPACKS_3 = 21  # Redis 7.2 on: consumers' active time
_STREAM_TYPES = (TYPE_STREAM_LISTPACKS, TYPE_STREAM_LISTPACKS_2, TYPE_STREAM_LISTPACKS_3)

_ENC_INT8, _ENC_INT16, _ENC_INT32, _ENC_LZF = 0, 1, 2, 3
_I64 = struct.Struct("<q")
_U16 = struct.Struct("<H")
_U64 = struct.Struct("<Q")
_M64 = (1 << 64) - 1


class PayloadError(ValueError):
    """The payload cannot be read (RESTORE answers "Bad data format")."""


class UnsupportedType(PayloadError):
    """A well-formed value of a type this server does not store (hash, list, set, ...)."""


# -- CRC-64 (Redis's crc64: poly 0xad93d23594c935a9, reflected in and out, init 0, xorout 0) ---
def _crc_tables() -> list[list[int]]:
    """The byte table and seven more for eight bytes at a time ("slicing by 8")."""
    poly = int(f"{0xAD93D23594C935A9:064b}"[::-1], 2)  # the polynomial bit-reversed
    first = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        first.append(crc)
    tables = [first]
    for _ in range(7):
        prev = tables[-1]
        tables.append([(prev[i] >> 8) ^ first[prev[i] & 0xFF] for i in range(256)])
    return tables


_T0, _T1, _T2, _T3, _T4, _T5, _T6, _T7 = _crc_tables()
_WORDS = struct.Struct("<Q").iter_unpack


def crc64(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    data = bytes(data)
    whole = len(data) & ~7
    t0, t1, t2, t3, t4, t5, t6, t7 = _T0, _T1, _T2, _T3, _T4, _T5, _T6, _T7
    for (word,) in _WORDS(data[:whole]):  # eight bytes a step: about twice as fast here
        crc ^= word
        crc = (t7[crc & 0xFF] ^ t6[(crc >> 8) & 0xFF] ^ t5[(crc >> 16) & 0xFF]
               ^ t4[(crc >> 24) & 0xFF] ^ t3[(crc >> 32) & 0xFF] ^ t2[(crc >> 40) & 0xFF]
               ^ t1[(crc >> 48) & 0xFF] ^ t0[crc >> 56])
    for byte in data[whole:]:
        crc = t0[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc


# -- LZF (liblzf's format: literal runs and back references) -----------------------------------
_MAX_EXPANDED = 1 << 30  # no value here is larger (a stream node's limit is 1 GiB)


def lzf_decompress(data: bytes, size: int) -> bytes:
    """The `size` bytes that `data` compresses; PayloadError if it does not hold them."""
    if size > _MAX_EXPANDED:  # (the output is also never let grow past `size`)
        raise PayloadError("LZF size too large")
    out = bytearray()
    pos, end = 0, len(data)
    while pos < end:
        ctrl = data[pos]
        pos += 1
        if ctrl < 32:  # a literal run of ctrl + 1 bytes
            run = ctrl + 1
            if pos + run > end:
                raise PayloadError("LZF literal run past the end")
            out += data[pos:pos + run]
            pos += run
            continue
        length = ctrl >> 5  # a back reference: length - 2, then the distance - 1
        if length == 7:
            if pos >= end:
                raise PayloadError("LZF reference past the end")
            length += data[pos]
            pos += 1
        if pos >= end:
            raise PayloadError("LZF reference past the end")
        ref = len(out) - ((ctrl & 0x1F) << 8) - data[pos] - 1
        pos += 1
        length += 2
        if ref < 0:
            raise PayloadError("LZF reference before the start")
        if ref + length <= len(out):
            out += out[ref:ref + length]
        else:  # the copy overlaps what it writes: byte by byte
            for i in range(length):
                out.append(out[ref + i])
        if len(out) > size:
            break
    if len(out) != size:
        raise PayloadError("LZF data does not hold the announced size")
    return bytes(out)


# -- writing -------------------------------------------------------------------------------------
def _length(out: bytearray, value: int) -> None:
    """rdbSaveLen: 6, 14, 32 or 64 bits, big-endian."""
    if value < 1 << 6:
        out.append(value)
    elif value < 1 << 14:
        out += bytes((0x40 | value >> 8, value & 0xFF))
    elif value <= 0xFFFFFFFF:
        out.append(0x80)
        out += value.to_bytes(4, "big")
    else:
        out.append(0x81)
        out += value.to_bytes(8, "big")


def _string(out: bytearray, data: bytes | bytearray) -> None:
    """rdbSaveRawString without compression: short decimal integers as 8/16/32-bit ints."""
    if 0 < len(data) <= 11 and is_canonical_int(data):
        number = int(data)
        if -(1 << 31) <= number < 1 << 31:
            if -128 <= number < 128:
                out += bytes((0xC0 | _ENC_INT8, number & 0xFF))
            elif -(1 << 15) <= number < 1 << 15:
                out.append(0xC0 | _ENC_INT16)
                out += (number & 0xFFFF).to_bytes(2, "little")
            else:
                out.append(0xC0 | _ENC_INT32)
                out += (number & 0xFFFFFFFF).to_bytes(4, "little")
            return
    _length(out, len(data))
    out += data


def _stream(out: bytearray, s: Stream) -> None:
    _length(out, s.node_count())
    for key, lp in s.rax.items():
        _string(out, key)
        _string(out, lp.buf)  # type: ignore[attr-defined]
    _length(out, s.length)
    for part in (*s.last_id, *(s.first_id if s.length else (0, 0)), *s.max_deleted_entry_id):
        _length(out, part)
    _length(out, s.entries_added)
    all_groups = groups(s)
    _length(out, len(all_groups))
    for group in all_groups:
        _string(out, group.name)
        _length(out, group.last_id[0])
        _length(out, group.last_id[1])
        _length(out, group.entries_read & _M64)  # (-1, "not known", as a uint64)
        _length(out, len(group.pel))
        for key, nack in group.pel.items():  # (16-byte ID keys, as the payload holds them)
            out += key
            out += _I64.pack(nack.delivery_time)
            _length(out, nack.delivery_count)
        consumers = list(group.iter_consumers())
        _length(out, len(consumers))
        for consumer in consumers:
            _string(out, consumer.name)
            out += _I64.pack(consumer.seen_time)
            out += _I64.pack(consumer.active_time)
            _length(out, len(consumer.pel))
            for key in consumer.pel:
                out += key


def dump(value: object) -> bytes:
    """DUMP's payload for a stored value."""
    out = bytearray()
    if isinstance(value, StringValue):
        out.append(TYPE_STRING)
        _string(out, value.data)
    elif isinstance(value, Stream):
        out.append(TYPE_STREAM_LISTPACKS_3)
        _stream(out, value)
    else:
        raise TypeError(f"cannot dump a value of type {type(value).__name__}")
    out += _U16.pack(RDB_VERSION)
    out += _U64.pack(crc64(out))
    return bytes(out)


# -- reading -------------------------------------------------------------------------------------
def verify(payload: bytes) -> bool:
    """verifyDumpPayload: a footer, an RDB version this server reads, a matching CRC."""
    if len(payload) < 10:
        return False
    version = _U16.unpack_from(payload, len(payload) - 10)[0]
    if version > RDB_VERSION:
        return False
    return crc64(memoryview(payload)[:-8]) == _U64.unpack_from(payload, len(payload) - 8)[0]


class _Reader:
    __slots__ = ("data", "pos", "end")

    def __init__(self, data: bytes, end: int) -> None:
        self.data = data
        self.pos = 0
        self.end = end

    def take(self, n: int) -> bytes:
        if n > self.end - self.pos:
            raise PayloadError("unexpected end of the payload")
        start = self.pos
        self.pos += n
        return self.data[start:self.pos]

    def byte(self) -> int:
        return self.take(1)[0]

    def length(self) -> int:
        """rdbLoadLen; PayloadError for a special (string) encoding."""
        first = self.byte()
        kind = first >> 6
        if kind == 0:
            return first & 0x3F
        if kind == 1:
            return (first & 0x3F) << 8 | self.byte()
        if first == 0x80:
            return int.from_bytes(self.take(4), "big")
        if first == 0x81:
            return int.from_bytes(self.take(8), "big")
        raise PayloadError("unexpected length encoding")

    def string(self) -> bytes:
        first = self.data[self.pos] if self.pos < self.end else -1
        if first >= 0 and first >> 6 == 3:  # an encoded string
            self.pos += 1
            kind = first & 0x3F
            if kind in (_ENC_INT8, _ENC_INT16, _ENC_INT32):
                size = 1 << kind
                return b"%d" % int.from_bytes(self.take(size), "little", signed=True)
            if kind == _ENC_LZF:
                packed = self.length()
                size = self.length()
                return lzf_decompress(self.take(packed), size)
            raise PayloadError("unknown string encoding")
        return self.take(self.length())

    def ms_time(self) -> int:
        return _I64.unpack(self.take(8))[0]

    def stream_id(self) -> StreamID:
        ms = self.length()
        seq = self.length()
        if ms > _M64 or seq > _M64:
            raise PayloadError("stream ID out of range")
        return (ms, seq)


def restore(payload: bytes) -> object:
    """The value a verified payload holds (StringValue or Stream); PayloadError otherwise."""
    r = _Reader(payload, len(payload) - 10)
    kind = r.byte()
    if kind == TYPE_STRING:
        return StringValue(r.string())
    if kind in _STREAM_TYPES:
        return _read_stream(r, kind)
    raise UnsupportedType(f"values of RDB type {kind} are not stored by this server "
                          "(it keeps streams and strings)")


def _read_stream(r: _Reader, kind: int) -> Stream:
    nodes = []
    for _ in range(r.length()):
        key = r.string()
        if len(key) != 16:
            raise PayloadError("stream node key is not the size of a stream ID")
        nodes.append((key, bytearray(r.string())))
    length = r.length()
    last_id = r.stream_id()
    if kind >= TYPE_STREAM_LISTPACKS_2:
        r.stream_id()  # the first ID: derived from the nodes here
        max_deleted = r.stream_id()
        entries_added = r.length()
    else:
        max_deleted, entries_added = (0, 0), length
    try:
        stream = Stream.from_nodes(nodes, last_id, entries_added, max_deleted, length=length)
    except StreamCorruption as exc:
        raise PayloadError(f"corrupt stream: {exc}") from None
    if entries_added < length:
        raise PayloadError("stream entries-added below its length")
    for _ in range(r.length()):
        _read_group(r, stream, kind)
    return stream


def _read_group(r: _Reader, s: Stream, kind: int) -> None:
    name = r.string()
    last_id = r.stream_id()
    if kind >= TYPE_STREAM_LISTPACKS_2:
        entries_read = r.length()
        if entries_read > _M64:
            raise PayloadError("read counter out of range")
        if entries_read >= 1 << 63:
            entries_read -= 1 << 64  # (a negative int64: -1 is "not known")
        if entries_read < INVALID_ENTRIES_READ:
            raise PayloadError("bad consumer group read counter")
    else:
        entries_read = estimate_distance(s, last_id)
    group = create_group(s, name, last_id, entries_read)
    if group is None:
        raise PayloadError("duplicate consumer group name")
    group.entries_read = entries_read  # exactly as saved
    pending: dict[bytes, tuple[int, int]] = {}
    for _ in range(r.length()):
        key = r.take(16)
        if key in pending:
            raise PayloadError("duplicate pending entry")
        delivery_time = r.ms_time()
        pending[key] = (delivery_time, r.length())
    owned: set[bytes] = set()
    for _ in range(r.length()):
        cname = r.string()
        seen_time = r.ms_time()
        consumer = group.create_consumer(cname, seen_time)
        if consumer is None:
            raise PayloadError("duplicate consumer")
        consumer.active_time = r.ms_time() if kind >= TYPE_STREAM_LISTPACKS_3 else seen_time
        for _ in range(r.length()):
            key = r.take(16)
            if key not in pending:
                raise PayloadError("consumer entry not found in the group's PEL")
            if key in owned:
                raise PayloadError("pending entry owned twice")
            owned.add(key)
            delivery_time, delivery_count = pending[key]
            group.add_pending(s, key_to_id(key), consumer, delivery_time, delivery_count)
    if len(owned) != len(pending):
        raise PayloadError("pending entry without a consumer")


# -- FUNCTION DUMP / RESTORE ---------------------------------------------------------------------
OPCODE_FUNCTION2 = 245  # RDB_OPCODE_FUNCTION2: one library's code follows


def dump_functions(codes: list[bytes]) -> bytes:
    """FUNCTION DUMP's payload: each library's code after its opcode, then the footer."""
    out = bytearray()
    for code in codes:
        out.append(OPCODE_FUNCTION2)
        _string(out, code)
    out += _U16.pack(RDB_VERSION)
    out += _U64.pack(crc64(out))
    return bytes(out)


def restore_functions(payload: bytes) -> list[bytes]:
    """The libraries' code in a verified FUNCTION DUMP payload; PayloadError (with Redis's
    text) for anything else."""
    r = _Reader(payload, len(payload) - 10)
    codes = []
    while r.pos < r.end:
        if r.byte() != OPCODE_FUNCTION2:
            raise PayloadError("given type is not a function")
        codes.append(r.string())
    return codes
