"""Databases: key -> value maps with millisecond expiry (lazy on access plus an active cycle).

Values are stored as they are: a storage.stream.Stream, or a StringValue. No asyncio, no RESP here.

A new key must go through Database.set() or Database.add() (SCAN's index learns about new keys
there), or arrive with a whole new `data` dict (a reload), which makes SCAN re-index.
"""

from __future__ import annotations

import random
import time
from bisect import bisect_left
from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any, NamedTuple

from storage.access import AccessClock
from storage.glob import glob_match

__all__ = [
    "Database", "ExpireCycle", "StringValue", "glob_match", "is_shared_integer", "now_ms",
    "object_encoding",
    "sample_keys", "type_name",
]

_U64 = (1 << 64) - 1


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class StringValue:
    """A string value (the string commands in server/commands/strings.py and string_*.py)."""

    __slots__ = ("data", "lru", "raw", "sds")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.lru = 0  # last access or access frequency (storage.access), set when stored
        # Modified in place (APPEND, SETRANGE): Redis keeps such a string "raw" whatever its
        # content, until something re-encodes it (INCR, a reload).
        self.raw = False
        # Stored as text without trying the int encoding (INCRBYFLOAT's results): embstr or
        # raw by length even when it reads as an integer, until something re-encodes it.
        self.sds = False


class ExpireCycle(NamedTuple):
    """What one active-expire cycle on a database did (INFO stats' expiry fields)."""

    removed: list[bytes]  # the keys it deleted
    sampled: int  # keys with a TTL it looked at
    stopped_early: bool  # it hit its round limit while still finding many expired keys


def type_name(value: object) -> str:
    """TYPE's answer for a stored value."""
    if type(value) is StringValue:
        return "string"
    name = getattr(value, "TYPE_NAME", None)
    if name is not None:
        return name
    # storage.stream is not imported here (keyspace stays independent of it).
    return "stream" if type(value).__name__ == "Stream" else "none"


def _is_long(data: bytes) -> bool:
    """string2l: '-'? digits, no leading zeros, no '+' or spaces, fits a 64-bit long."""
    if not 0 < len(data) <= 20:
        return False
    if data == b"0":
        return True
    body = data[1:] if data[:1] == b"-" else data
    if not body.isdigit() or body[:1] == b"0":
        return False
    return -(1 << 63) <= int(data) < (1 << 63)


def object_encoding(value: object) -> str:
    """OBJECT ENCODING: strings as Redis encodes them (int, embstr up to 44 bytes, raw)."""
    encoding = getattr(value, "ENCODING", None)
    if encoding is not None:
        return encoding
    if type(value) is StringValue:
        data = value.data
        if value.raw:
            return "raw"
        if not value.sds and _is_long(data):
            return "int"
        return "embstr" if len(data) <= 44 else "raw"
    return "stream" if type_name(value) == "stream" else "raw"


def is_shared_integer(value: object) -> bool:
    """An int-encoded string of 0..9999: Redis stores those as its shared integer objects
    (OBJECT REFCOUNT INT_MAX) unless an LRU/LFU maxmemory policy forbids sharing."""
    if type(value) is not StringValue or value.raw or value.sds or not _is_long(value.data):
        return False
    return 0 <= int(value.data) < 10_000


def scan_hash(key: bytes) -> int:
    """A key's position in SCAN order: its hash as an unsigned 64-bit number. Python's bytes
    hash is stable for the life of the process, which is all a cursor needs."""
    return hash(key) & _U64


class _ScanIndex:
    """The keys sorted by scan_hash, so that a SCAN call costs O(log N + COUNT).

    Keys deleted since the index was built stay in it (SCAN skips them); keys added since go
    to `pending` and are merged when the next SCAN runs. A cursor is the hash to resume from,
    so a key present during a whole iteration is returned whatever changes meanwhile."""

    __slots__ = ("hashes", "keys", "pending", "source")

    def __init__(self, data: dict[bytes, object]) -> None:
        # The dict indexed: code that swaps in a whole new dict (a reload) makes it stale.
        self.source = data
        pairs = sorted((scan_hash(k), k) for k in data)
        self.hashes = [h for h, _ in pairs]
        self.keys = [k for _, k in pairs]
        self.pending: list[bytes] = []

    def merge_pending(self, live: dict[bytes, object]) -> None:
        if not self.pending:
            return
        hashes, keys = self.hashes, self.keys
        new = []
        for key in set(self.pending):
            if key not in live:
                continue
            # A key deleted and added again is still in the index: never list it twice.
            h = scan_hash(key)
            i = bisect_left(hashes, h)
            while i < len(hashes) and hashes[i] == h:
                if keys[i] == key:
                    break
                i += 1
            else:
                new.append((h, key))
        self.pending = []
        if not new:
            return
        new.sort()
        # Two sorted runs: timsort merges them in linear time.
        pairs = sorted([*zip(self.hashes, self.keys, strict=True), *new])
        self.hashes = [h for h, _ in pairs]
        self.keys = [k for _, k in pairs]


class Database:
    """One numbered database."""

    __slots__ = ("id", "data", "expires", "clock", "access", "on_expire", "on_new",
                 "active_expire_enabled", "expiry_paused", "_scan_index")

    def __init__(self, db_id: int, clock: Callable[[], int] = now_ms,
                 access: AccessClock | None = None) -> None:
        self.id = db_id
        self.data: dict[bytes, Any] = {}
        self.expires: dict[bytes, int] = {}
        self.clock = clock
        # Keeps every value's `lru` (OBJECT IDLETIME / FREQ, eviction); the server gives all
        # its databases one.
        self.access = access if access is not None else AccessClock()
        # Called with (db, key) after a key is deleted because its time passed.
        self.on_expire: Callable[[Database, bytes], None] | None = None
        # Called with (db, key) after set() or add() created the key (dbAdd's "new" event).
        self.on_new: Callable[[Database, bytes], None] | None = None
        self.active_expire_enabled = True  # DEBUG SET-ACTIVE-EXPIRE 0 turns the cycle off
        # While True (the server's clients are paused), keys whose time passed read as
        # missing but stay, so the data set does not change; the active cycle waits too.
        self.expiry_paused = False
        self._scan_index: _ScanIndex | None = None

    def __len__(self) -> int:
        return len(self.data)

    # -- lookups with lazy expiry -------------------------------------------------------------
    def is_stale(self, key: bytes) -> bool:
        """keyIsExpired: the key's time has passed (it may still be stored, not yet deleted)."""
        when = self.expires.get(key)
        return when is not None and when <= self.clock()

    def expire_if_needed(self, key: bytes) -> bool:
        """Delete key if its time has passed; True when it was expired (or its time passed
        while expiry is paused: it is then kept)."""
        when = self.expires.get(key)
        if when is None or when > self.clock():
            return False
        if self.expiry_paused:
            return True
        del self.expires[key]
        self.data.pop(key, None)
        if self.on_expire is not None:
            self.on_expire(self, key)
        return True

    def get(self, key: bytes) -> Any:
        """lookupKey: the live value, marked as used (its `lru`), or None."""
        if self.expires and key in self.expires and self.expire_if_needed(key):
            return None
        value = self.data.get(key)
        if value is not None:
            access = self.access
            if access.touching and not access.lfu:
                value.lru = access.lru_clock
            else:
                access.touch(value)
        return value

    def peek(self, key: bytes) -> Any:
        """The live value without marking it used (LOOKUP_NOTOUCH: TYPE, EXISTS, TTL,
        OBJECT, ...), or None."""
        if self.expires and key in self.expires and self.expire_if_needed(key):
            return None
        return self.data.get(key)

    def __contains__(self, key: bytes) -> bool:
        return self.peek(key) is not None

    # -- writes -------------------------------------------------------------------------------
    def set(self, key: bytes, value: object, keep_ttl: bool = False) -> None:
        """Store value at key, replacing any value (and its TTL unless keep_ttl)."""
        data = self.data
        new = key not in data
        if self._scan_index is not None and new:
            self._scan_index.pending.append(key)
        value.lru = self.access.initial()
        data[key] = value
        if not keep_ttl:
            self.expires.pop(key, None)
        if new and self.on_new is not None:
            self.on_new(self, key)

    def add(self, key: bytes, value: object) -> None:
        """Store a new key (the caller checked it is absent: it may still be held, expired,
        while expiry is paused)."""
        if self._scan_index is not None:
            self._scan_index.pending.append(key)
        value.lru = self.access.initial()
        self.data[key] = value
        if self.expires:
            self.expires.pop(key, None)
        if self.on_new is not None:
            self.on_new(self, key)

    def delete(self, key: bytes) -> bool:
        """Remove key; False when it did not exist (or had just expired)."""
        if self.expires:
            if self.expire_if_needed(key):
                return False
            self.expires.pop(key, None)
        return self.data.pop(key, None) is not None

    def clear(self) -> int:
        count = len(self.data)
        self.data.clear()
        self.expires.clear()
        self._scan_index = None
        return count

    def swap_contents(self, other: Database) -> None:
        """SWAPDB: exchange keys and TTLs; the Database objects (and their ids) stay put."""
        self.data, other.data = other.data, self.data
        self.expires, other.expires = other.expires, self.expires
        self._scan_index = other._scan_index = None

    # -- expiry -------------------------------------------------------------------------------
    def set_expire(self, key: bytes, when_ms: int) -> None:
        self.expires[key] = when_ms

    def get_expire(self, key: bytes) -> int | None:
        return self.expires.get(key)

    def persist(self, key: bytes) -> bool:
        return self.expires.pop(key, None) is not None

    def active_expire(self, samples: int = 20, max_rounds: int = 16) -> ExpireCycle:
        """One active-expire cycle, as Redis: sample keys with a TTL, delete the expired ones,
        repeat while more than a quarter of a sample was expired, at most max_rounds times
        (where Redis stops at a time limit)."""
        removed: list[bytes] = []
        sampled = 0
        if not self.active_expire_enabled or self.expiry_paused:
            return ExpireCycle(removed, 0, False)
        now = self.clock()
        for _ in range(max_rounds):
            if not self.expires:
                break
            size = len(self.expires)
            if size <= samples:
                keys = list(self.expires)
            else:
                keys = sample_keys(self.expires, samples)
            sampled += len(keys)
            expired = [k for k in keys if self.expires[k] <= now]
            for key in expired:
                del self.expires[key]
                self.data.pop(key, None)
                if self.on_expire is not None:
                    self.on_expire(self, key)
            removed.extend(expired)
            if len(expired) * 4 <= len(keys):
                return ExpireCycle(removed, sampled, False)
        return ExpireCycle(removed, sampled, bool(self.expires))

    def avg_ttl(self, sample: int = 1000) -> int:
        """INFO keyspace's avg_ttl: the mean time left (ms) of keys with a TTL, estimated from
        a sample as Redis estimates it; 0 when no key has one."""
        if not self.expires:
            return 0
        now = self.clock()
        whens = (list(self.expires.values()) if len(self.expires) <= sample
                 else [self.expires[k] for k in sample_keys(self.expires, sample)])
        left = [w - now for w in whens if w > now]
        return sum(left) // len(left) if left else 0

    # -- iteration ----------------------------------------------------------------------------
    def keys_matching(self, pattern: bytes) -> list[bytes]:
        match_all = pattern == b"*"
        out = []
        for key in list(self.data):
            if self.expires and self.expire_if_needed(key):
                continue
            if match_all or glob_match(pattern, key):
                out.append(key)
        return out

    def scan(
        self, cursor: int, count: int, pattern: bytes | None, type_filter: str | None
    ) -> tuple[int, list[bytes]]:
        """Visit about `count` keys in scan_hash order from cursor: (next cursor or 0, keys).
        Keys sharing a hash are always returned by the same call."""
        index = self._scan_index
        if index is None or index.source is not self.data:
            index = self._scan_index = _ScanIndex(self.data)
        else:
            index.merge_pending(self.data)
            if len(index.keys) > 2 * len(self.data) + 64:  # mostly deleted keys: rebuild
                index = self._scan_index = _ScanIndex(self.data)
        hashes, keys = index.hashes, index.keys
        start = bisect_left(hashes, cursor)
        end = min(start + count, len(hashes))
        while end < len(hashes) and hashes[end] == hashes[end - 1]:
            end += 1
        next_cursor = 0
        if end < len(hashes):
            next_cursor = hashes[end - 1] + 1  # <= 2**64 - 1: a larger hash follows
        data = self.data
        out = []
        for key in keys[start:end]:
            if key not in data:
                continue
            if self.expires and self.expire_if_needed(key):
                continue
            if pattern is not None and not glob_match(pattern, key):
                continue
            if type_filter is not None and type_name(data[key]) != type_filter:
                continue
            out.append(key)
        return next_cursor, out

    def random_key(self) -> bytes | None:
        """RANDOMKEY: a random live key (expired ones met on the way are deleted)."""
        for _ in range(100):
            if not self.data:
                return None
            key = sample_keys(self.data, 1)[0]
            if not self.expire_if_needed(key):
                return key
        return next(iter(self.data), None)

    def items(self) -> Iterator[tuple[bytes, object]]:
        return iter(list(self.data.items()))


def sample_keys(mapping: dict[bytes, object] | dict[bytes, int], n: int) -> list[bytes]:
    """n keys from a random place. A dict cannot be indexed: up to a few thousand keys they
    are drawn from a copy of its keys; larger ones give a run of n keys from a random offset
    (islice skips at C speed), much as Redis samples a few buckets, though a run holds keys
    added about the same time (which biases the eviction pool on very large keyspaces)."""
    size = len(mapping)
    if size <= 5000:
        keys = list(mapping)
        return random.sample(keys, n) if n <= size else keys
    start = random.randrange(size - n + 1) if n <= size else 0
    return list(islice(mapping, start, start + n))
