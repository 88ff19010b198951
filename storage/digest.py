"""DEBUG DIGEST and DIGEST-VALUE: Redis's SHA1 digests of values and of the whole dataset.

The same data gives the same 40 hex digits here as in Redis (debug.c's scheme), so two
servers' datasets can be compared. An order-free aggregate is the XOR of its parts' SHA1s;
an ordered one feeds the running digest back in (``_mix``): digest = SHA1(digest ^ SHA1(x)).
"""

from __future__ import annotations

from collections.abc import Iterable
from hashlib import sha1

from storage.keyspace import Database, StringValue
from storage.stream import Stream
from storage.stream_id import MAX_ID, MIN_ID

# Redis's object type numbers (OBJ_STRING, OBJ_STREAM), hashed into every value's digest.
_TYPE_CODES: dict[type, bytes] = {StringValue: (0).to_bytes(4, "big"),
                                  Stream: (6).to_bytes(4, "big")}
_ZERO = bytes(20)
_EXPIRE_MARK = b"!!expire!!"


def _xor(digest: bytearray, data: bytes) -> None:
    """xorDigest: digest ^= SHA1(data)."""
    for i, byte in enumerate(sha1(data).digest()):
        digest[i] ^= byte


def _mix(digest: bytearray, data: bytes) -> None:
    """mixDigest: digest = SHA1(digest ^ SHA1(data))."""
    _xor(digest, data)
    digest[:] = sha1(digest).digest()


def _mix_stream(digest: bytearray, stream: Stream) -> None:
    """Every entry in ID order: its ID as "ms.seq", then each field and value. (Consumer
    groups are not part of it, as in Redis.)"""
    for (ms, seq), fields in stream.iter_range(MIN_ID, MAX_ID):
        _mix(digest, b"%d.%d" % (ms, seq))
        for item in fields:
            _mix(digest, item)


def _mix_value(digest: bytearray, db: Database, key: bytes, value: object) -> None:
    """xorObjectDigest: the type, the value, and a mark when the key has a TTL."""
    _mix(digest, _TYPE_CODES[type(value)])
    if type(value) is StringValue:
        _mix(digest, value.data)
    else:
        assert isinstance(value, Stream)
        _mix_stream(digest, value)
    if db.get_expire(key) is not None:
        _xor(digest, _EXPIRE_MARK)


def value_digest(db: Database, key: bytes) -> str:
    """DEBUG DIGEST-VALUE for one key: 40 hex digits, all zeros for a missing key. Keys whose
    time has passed still count (a debug command does not expire them)."""
    digest = bytearray(_ZERO)
    value = db.data.get(key)
    if value is not None:
        _mix_value(digest, db, key, value)
    return digest.hex()


def dataset_digest(dbs: Iterable[Database]) -> str:
    """DEBUG DIGEST: each database's number, then the XOR of its key/value digests (so the
    order of the keys does not matter). All zeros when every database is empty."""
    final = bytearray(_ZERO)
    for db in dbs:
        if not db.data:
            continue
        _mix(final, db.id.to_bytes(4, "big"))
        for key, value in list(db.data.items()):
            digest = bytearray(_ZERO)
            _mix(digest, key)
            _mix_value(digest, db, key, value)
            _xor(final, bytes(digest))
    return final.hex()
