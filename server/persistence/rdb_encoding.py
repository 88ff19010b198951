"""The primitives of Redis's RDB encoding, shared by RDB files and DUMP payloads.

- lengths (rdbSaveLen): the top two bits of the first byte choose 6 bits, 14 bits
  (big-endian), or a marker byte 0x80 / 0x81 followed by 32 / 64 bits big-endian;
- strings: a length and the bytes, or a special encoding (first byte 0b11xxxxxx): a signed
  8/16/32-bit little-endian integer written as its decimal text, or LZF-compressed bytes
  (compressed length, uncompressed length, data);
- times: 64-bit signed little-endian milliseconds (the old EXPIRETIME opcode: 32-bit seconds);
- the checksum: Redis's CRC-64 (Jones polynomial, reflected, initial value 0), stored
  little-endian.

Encoding appends to a `Sink`'s buffer; a file sink hands full buffers on to the file
(`spill`), so a large value never has to sit in memory whole. Decoding reads from a `Reader`
over bytes, checking every length against what is left, so bad input raises RdbFormatError
with the offset instead of reading past the end or allocating absurd amounts.
"""

from __future__ import annotations

import struct

import anycrc

from server.parsing import is_canonical_int

MAGIC = b"REDIS"  # an RDB file starts with it and 4 ASCII digits of version ("REDIS0011")
ENC_INT8, ENC_INT16, ENC_INT32, ENC_LZF = 0, 1, 2, 3

# The opcodes of an RDB file (rdb.h): where a value's type byte could stand.
OP_SLOT_INFO = 244  # slot ID, keys, keys with expiry: Redis 7.4's cluster hint
OP_FUNCTION2 = 245  # a function library's code
OP_FUNCTION_PRE_GA = 246  # a function of Redis 7.0's release candidates (not read by Redis)
OP_MODULE_AUX = 247  # a module's own data, outside the keys
OP_IDLE = 248  # the next key's idle seconds (LRU)
OP_FREQ = 249  # the next key's access counter (LFU)
OP_AUX = 250  # a string key and value about the file
OP_RESIZEDB = 251  # keys and keys with expiry in the database that follows (a hint)
OP_EXPIRETIME_MS = 252  # the next key's expiry, 64-bit unix ms
OP_EXPIRETIME = 253  # the next key's expiry, 32-bit unix seconds (before RDB 3)
OP_SELECTDB = 254  # the database of the keys that follow
OP_EOF = 255  # the end, then 8 bytes of CRC-64 (0: written without a checksum)

_I64 = struct.Struct("<q")
_I32 = struct.Struct("<i")
M64 = (1 << 64) - 1
MAX_EXPANDED = 1 << 30  # no value here is larger than 1 GiB (a stream node's own limit)


class RdbFormatError(ValueError):
    """Bytes that are not valid RDB encoding (RESTORE answers "Bad data format")."""


class UnsupportedType(RdbFormatError):
    """A well-formed value of a type this server does not store (hash, list, set, ...)."""


# -- CRC-64 (Redis's crc64: poly 0xad93d23594c935a9, reflected in and out, init 0) ----------
# anycrc computes it in C: a few GB/s, where a table-driven loop in Python managed ~9 MB/s
# (whole-file checksums of RDBs and full resynchronizations go through here).
_CRC64 = anycrc.Model("CRC64-REDIS")


def crc64(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """Redis's crc64 of data, continuing from crc (resumable: crc64(b, crc64(a)) is the CRC
    of a + b)."""
    return _CRC64.calc(data, crc)


# -- LZF (liblzf's format: literal runs and back references) ---------------------------------
def lzf_decompress(data: bytes, size: int) -> bytes:
    """The `size` bytes that `data` compresses; RdbFormatError if it does not hold them."""
    if size > MAX_EXPANDED:  # (the output is also never let grow past `size`)
        raise RdbFormatError("LZF size too large")
    out = bytearray()
    pos, end = 0, len(data)
    while pos < end:
        ctrl = data[pos]
        pos += 1
        if ctrl < 32:  # a literal run of ctrl + 1 bytes
            run = ctrl + 1
            if pos + run > end:
                raise RdbFormatError("LZF literal run past the end")
            out += data[pos:pos + run]
            pos += run
            continue
        length = ctrl >> 5  # a back reference: length - 2, then the distance - 1
        if length == 7:
            if pos >= end:
                raise RdbFormatError("LZF reference past the end")
            length += data[pos]
            pos += 1
        if pos >= end:
            raise RdbFormatError("LZF reference past the end")
        ref = len(out) - ((ctrl & 0x1F) << 8) - data[pos] - 1
        pos += 1
        length += 2
        if ref < 0:
            raise RdbFormatError("LZF reference before the start")
        if ref + length <= len(out):
            out += out[ref:ref + length]
        else:  # the copy overlaps what it writes: byte by byte
            for i in range(length):
                out.append(out[ref + i])
        if len(out) > size:
            break
    if len(out) != size:
        raise RdbFormatError("LZF data does not hold the announced size")
    return bytes(out)


# -- writing ----------------------------------------------------------------------------------
class Sink:
    """Encoded bytes: `buf` collects them. spill() is called between items; this one keeps
    everything (a DUMP payload), a file sink writes a full buffer out and empties it in place
    (so writers may hold on to `buf`)."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def spill(self) -> None:
        pass


def put_length(out: bytearray, value: int) -> None:
    """rdbSaveLen: 6, 14, 32 or 64 bits."""
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


def put_string(out: bytearray, data: bytes | bytearray) -> None:
    """rdbSaveRawString without compression: short decimal integers as 8/16/32-bit ints."""
    if 0 < len(data) <= 11 and is_canonical_int(data):
        number = int(data)
        if -(1 << 31) <= number < 1 << 31:
            if -128 <= number < 128:
                out += bytes((0xC0 | ENC_INT8, number & 0xFF))
            elif -(1 << 15) <= number < 1 << 15:
                out.append(0xC0 | ENC_INT16)
                out += (number & 0xFFFF).to_bytes(2, "little")
            else:
                out.append(0xC0 | ENC_INT32)
                out += (number & 0xFFFFFFFF).to_bytes(4, "little")
            return
    put_length(out, len(data))
    out += data


def put_ms(out: bytearray, ms: int) -> None:
    """A 64-bit signed millisecond time, little-endian (rdbSaveMillisecondTime)."""
    out += _I64.pack(ms)


# -- reading ----------------------------------------------------------------------------------
class Reader:
    """Decodes from data[pos:end]; every read is checked against `end`."""

    __slots__ = ("data", "pos", "end", "deep")

    def __init__(self, data: bytes, end: int | None = None, pos: int = 0) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end
        # Check every stream node byte by byte (False: only each listpack's header and end,
        # for a file whose checksum already vouched for its bytes).
        self.deep = True

    def fail(self, what: str) -> RdbFormatError:
        return RdbFormatError(f"{what} at offset {self.pos}")

    def take(self, n: int) -> bytes:
        if n > self.end - self.pos:
            raise self.fail(f"unexpected end of data (reading {n} bytes)")
        start = self.pos
        self.pos += n
        return self.data[start:self.pos]

    def byte(self) -> int:
        if self.pos >= self.end:
            raise self.fail("unexpected end of data")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def length(self) -> int:
        """rdbLoadLen; RdbFormatError for a special (string) encoding."""
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
        self.pos -= 1
        raise self.fail(f"unexpected length encoding {first:#04x}")

    def count(self, what: str) -> int:
        """A number of items that follow, each at least a byte: more than the bytes left (an
        absurd length, or a file cut short) is refused before any loop or allocation."""
        at = self.pos
        n = self.length()
        if n > self.end - self.pos:
            self.pos = at
            raise self.fail(f"{what} count {n} runs past the end of the data (only "
                            f"{self.end - at} bytes left)")
        return n

    def string(self) -> bytes:
        first = self.data[self.pos] if self.pos < self.end else -1
        if first >= 0 and first >> 6 == 3:  # an encoded string
            self.pos += 1
            kind = first & 0x3F
            if kind in (ENC_INT8, ENC_INT16, ENC_INT32):
                size = 1 << kind
                return b"%d" % int.from_bytes(self.take(size), "little", signed=True)
            if kind == ENC_LZF:
                at = self.pos
                packed = self.length()
                size = self.length()
                if size > MAX_EXPANDED:
                    self.pos = at
                    raise self.fail(f"absurd size {size} of a compressed string")
                if packed > self.end - self.pos:
                    self.pos = at
                    raise self.fail(f"compressed string of {packed} bytes runs past the end of "
                                    f"the data (only {self.end - self.pos} bytes left)")
                try:
                    return lzf_decompress(self.take(packed), size)
                except RdbFormatError as exc:
                    raise RdbFormatError(f"{exc} in the string at offset {at - 1}") from None
            self.pos -= 1
            raise self.fail(f"unknown string encoding {kind}")
        at = self.pos
        n = self.length()
        if n > self.end - self.pos:
            self.pos = at
            raise self.fail(f"string length {n} runs past the end of the data (only "
                            f"{self.end - at} bytes left)")
        return self.take(n)

    def ms_time(self) -> int:
        return _I64.unpack(self.take(8))[0]

    def seconds_time(self) -> int:
        """The old EXPIRETIME opcode's 32-bit signed seconds."""
        return _I32.unpack(self.take(4))[0]
