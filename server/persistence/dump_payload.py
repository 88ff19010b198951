"""DUMP / RESTORE payloads: one value in Redis's RDB encoding, as Redis 8.4 writes and reads it.

    payload = type byte, value, RDB version (2 bytes, little-endian), CRC-64 (8 bytes, LE)

The CRC is Redis's crc64 of everything before it. The value codec is rdb_values (the same one
RDB files use): strings, and streams written as type 21 under RDB version 12 (Redis 7.4 to
8.4), as type 26 under version 13 when the stream holds IDMP state (Redis 8.6) and as type 27
under version 14 when a group has entries released by XNACK (Redis 8.8); read are strings and
streams of types 15, 19, 21, 26 and 27, so payloads DUMPed by any of those Redis versions
restore here. Strings may be integer- or LZF-encoded on input; on output they
are integer-encoded where Redis would, never compressed (which Redis reads).

FUNCTION DUMP's payload is the libraries' code, each after the FUNCTION2 opcode, with the
same footer.
"""

from __future__ import annotations

import struct

from server.persistence.rdb_encoding import (
    OP_FUNCTION2,
    RdbFormatError,
    Reader,
    Sink,
    UnsupportedType,
    crc64,
    lzf_decompress,
    put_string,
)
from server.persistence.rdb_values import (
    NEWEST_VERSION,
    TYPE_STREAM_LISTPACKS,
    TYPE_STREAM_LISTPACKS_2,
    TYPE_STREAM_LISTPACKS_3,
    TYPE_STRING,
    read_value,
    value_type,
    version_needed,
    write_value,
)

__all__ = [
    "RDB_VERSION", "OPCODE_FUNCTION2", "PayloadError", "UnsupportedType", "crc64",
    "lzf_decompress", "dump", "verify", "restore", "dump_functions", "restore_functions",
    "TYPE_STRING", "TYPE_STREAM_LISTPACKS", "TYPE_STREAM_LISTPACKS_2", "TYPE_STREAM_LISTPACKS_3",
]

RDB_VERSION = 12  # Redis 7.4 to 8.4: the version of a payload that needs no newer one
OPCODE_FUNCTION2 = OP_FUNCTION2  # one library's code follows
PayloadError = RdbFormatError  # the payload cannot be read (RESTORE: "Bad data format")

_U16 = struct.Struct("<H")
_U64 = struct.Struct("<Q")


def _footer(out: bytearray, version: int = RDB_VERSION) -> bytes:
    out += _U16.pack(version)
    out += _U64.pack(crc64(out))
    return bytes(out)


def dump(value: object) -> bytes:
    """DUMP's payload for a stored value."""
    version = max(RDB_VERSION, version_needed(value))
    kind = value_type(value, version)
    sink = Sink()
    sink.buf.append(kind)
    write_value(sink, value, kind)
    return _footer(sink.buf, version)


def verify(payload: bytes) -> bool:
    """verifyDumpPayload: a footer, an RDB version this server reads, a matching CRC."""
    if len(payload) < 10:
        return False
    version = _U16.unpack_from(payload, len(payload) - 10)[0]
    if version > NEWEST_VERSION:
        return False
    return crc64(memoryview(payload)[:-8]) == _U64.unpack_from(payload, len(payload) - 8)[0]


def restore(payload: bytes) -> object:
    """The value a verified payload holds (StringValue or Stream); PayloadError otherwise
    (UnsupportedType, naming it, for a type this server does not store)."""
    r = Reader(payload, len(payload) - 10)
    return read_value(r, r.byte())


def dump_functions(codes: list[bytes]) -> bytes:
    """FUNCTION DUMP's payload: each library's code after its opcode, then the footer."""
    out = bytearray()
    for code in codes:
        out.append(OPCODE_FUNCTION2)
        put_string(out, code)
    return _footer(out)


def restore_functions(payload: bytes) -> list[bytes]:
    """The libraries' code in a verified FUNCTION DUMP payload; PayloadError (with Redis's
    text) for anything else."""
    r = Reader(payload, len(payload) - 10)
    codes = []
    while r.pos < r.end:
        if r.byte() != OPCODE_FUNCTION2:
            raise PayloadError("given type is not a function")
        codes.append(r.string())
    return codes
