"""Databases: key -> value maps with millisecond expiry (lazy on access plus an active cycle).

Values are stored as they are: a storage.stream.Stream, or a StringValue for the minimal
string type. No asyncio, no RESP here.
"""

from __future__ import annotations

import hashlib
import heapq
import random
import time
from collections.abc import Callable, Iterator


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class StringValue:
    """The minimal string type (SET/GET), present so that type checks have something to check."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


def type_name(value: object) -> str:
    """TYPE's answer for a stored value."""
    if isinstance(value, StringValue):
        return "string"
    return getattr(value, "TYPE_NAME", "none")


def glob_match(pattern: bytes, key: bytes) -> bool:
    """Redis's stringmatch (glob with * ? [..] and backslash escapes), binary-safe."""
    # fnmatch has no escapes and treats [!..] like Redis's [^..]; translate Redis syntax.
    return _compile_glob(pattern)(key)


_GLOB_CACHE: dict[bytes, Callable[[bytes], bool]] = {}


def _compile_glob(pattern: bytes) -> Callable[[bytes], bool]:
    cached = _GLOB_CACHE.get(pattern)
    if cached is not None:
        return cached
    import re

    out = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i : i + 1]
        if c == b"*":
            out.append(b".*")
        elif c == b"?":
            out.append(b".")
        elif c == b"\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i : i + 1]))
        elif c == b"[":
            j = i + 1
            parts = [b"["]
            if j < n and pattern[j : j + 1] == b"^":
                parts.append(b"^")
                j += 1
            while j < n and pattern[j : j + 1] != b"]":
                ch = pattern[j : j + 1]
                if ch == b"\\" and j + 1 < n:
                    j += 1
                    parts.append(re.escape(pattern[j : j + 1]))
                elif ch == b"-" and len(parts) > 1:
                    parts.append(b"-")
                else:
                    parts.append(re.escape(ch))
                j += 1
            if j >= n:  # unterminated class: Redis treats the rest literally up to the end
                parts.append(b"]")
            else:
                parts.append(b"]")
            out.append(b"".join(parts) if len(parts) > 2 else b"(?!)")
            i = j
        else:
            out.append(re.escape(c))
        i += 1
    regex = re.compile(b"".join(out) + rb"\Z", re.DOTALL)
    matcher: Callable[[bytes], bool] = lambda key: regex.match(key) is not None  # noqa: E731
    if len(_GLOB_CACHE) > 256:
        _GLOB_CACHE.clear()
    _GLOB_CACHE[pattern] = matcher
    return matcher


def scan_hash(key: bytes) -> int:
    """A stable 63-bit position for SCAN cursors: keys are visited in this order, so a key that
    exists for the whole scan is returned whatever else is added or removed meanwhile."""
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") >> 1


class Database:
    """One numbered database."""

    __slots__ = ("id", "data", "expires", "clock", "on_expire")

    def __init__(self, db_id: int, clock: Callable[[], int] = now_ms) -> None:
        self.id = db_id
        self.data: dict[bytes, object] = {}
        self.expires: dict[bytes, int] = {}
        self.clock = clock
        # Called with (db, key) after a key is deleted because its time passed.
        self.on_expire: Callable[[Database, bytes], None] | None = None

    def __len__(self) -> int:
        return len(self.data)

    # -- lookups with lazy expiry -------------------------------------------------------------
    def expire_if_needed(self, key: bytes) -> bool:
        """Delete key if its time has passed; True when it was expired."""
        when = self.expires.get(key)
        if when is None or when > self.clock():
            return False
        del self.expires[key]
        self.data.pop(key, None)
        if self.on_expire is not None:
            self.on_expire(self, key)
        return True

    def get(self, key: bytes) -> object | None:
        if self.expires and key in self.expires:
            self.expire_if_needed(key)
        return self.data.get(key)

    def __contains__(self, key: bytes) -> bool:
        return self.get(key) is not None

    # -- writes -------------------------------------------------------------------------------
    def set(self, key: bytes, value: object, keep_ttl: bool = False) -> None:
        self.data[key] = value
        if not keep_ttl:
            self.expires.pop(key, None)

    def add(self, key: bytes, value: object) -> None:
        """Store a new key (the caller checked it is absent)."""
        self.data[key] = value

    def delete(self, key: bytes) -> bool:
        if self.expires:
            self.expire_if_needed(key)
            self.expires.pop(key, None)
        return self.data.pop(key, None) is not None

    def clear(self) -> int:
        count = len(self.data)
        self.data.clear()
        self.expires.clear()
        return count

    # -- expiry -------------------------------------------------------------------------------
    def set_expire(self, key: bytes, when_ms: int) -> None:
        self.expires[key] = when_ms

    def get_expire(self, key: bytes) -> int | None:
        return self.expires.get(key)

    def persist(self, key: bytes) -> bool:
        return self.expires.pop(key, None) is not None

    def active_expire(self, samples: int = 20, max_rounds: int = 16) -> list[bytes]:
        """One active-expire cycle, as Redis: sample keys with a TTL, delete the expired ones,
        repeat while more than a quarter of a sample was expired. Returns the keys removed."""
        removed: list[bytes] = []
        now = self.clock()
        for _ in range(max_rounds):
            if not self.expires:
                break
            size = len(self.expires)
            if size <= samples:
                keys = list(self.expires)
            else:
                keys = random.sample(list(self.expires), samples)
            expired = [k for k in keys if self.expires[k] <= now]
            for key in expired:
                del self.expires[key]
                self.data.pop(key, None)
                if self.on_expire is not None:
                    self.on_expire(self, key)
            removed.extend(expired)
            if len(expired) * 4 <= len(keys):
                break
        return removed

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
        """Visit keys in scan_hash order from cursor: returns (next cursor or 0, keys)."""
        candidates = ((scan_hash(k), k) for k in self.data)
        batch = heapq.nsmallest(count, ((h, k) for h, k in candidates if h >= cursor))
        next_cursor = 0
        if len(batch) == count:
            # More may remain: continue after the last hash visited.
            next_cursor = batch[-1][0] + 1
            if next_cursor >= 1 << 63 or not any(
                scan_hash(k) >= next_cursor for k in self.data
            ):
                next_cursor = 0
        out = []
        for _h, key in batch:
            if self.expires and self.expire_if_needed(key):
                continue
            if pattern is not None and not glob_match(pattern, key):
                continue
            if type_filter is not None and type_name(self.data[key]) != type_filter:
                continue
            out.append(key)
        return next_cursor, out

    def random_key(self) -> bytes | None:
        for _ in range(100):
            if not self.data:
                return None
            key = random.choice(list(self.data)) if len(self.data) < 1000 else _random_pick(self.data)
            if not self.expire_if_needed(key):
                return key
        return next(iter(self.data), None)

    def items(self) -> Iterator[tuple[bytes, object]]:
        return iter(list(self.data.items()))


def _random_pick(data: dict[bytes, object]) -> bytes:
    # Dicts cannot be indexed; walk a random distance into the iteration order.
    skip = random.randrange(len(data))
    for i, key in enumerate(data):
        if i == skip:
            return key
    raise AssertionError("unreachable")

