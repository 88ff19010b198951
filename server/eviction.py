"""maxmemory-policy: deleting keys to get back under maxmemory, as Redis's evict.c does.

Before a command that may grow memory runs while the server is over maxmemory, keys are evicted
by the policy until the memory freed covers the excess:

* allkeys-random / volatile-random: a random key of the next database in turn;
* *-lru, *-lfu, volatile-ttl: Redis's eviction pool: maxmemory-samples keys sampled from each
  database go into a pool of the 16 best candidates kept across calls (longest idle, least
  frequently used, or nearest expiry), and the best one still present is evicted.

volatile-* policies only consider keys with a TTL. Each eviction is a DEL for WATCH, blocked
readers and the AOF, counted in INFO's evicted_keys. An eviction run stops after a time that
maxmemory-eviction-tenacity sets (500 us by default) and goes on from the event loop, letting the
command through meanwhile (Redis's EVICT_RUNNING).

The memory here is the resident size (server.info.rss_bytes), read by the cron. What an eviction
frees is estimated with MEMORY USAGE's sizes and taken off at once; the cron reads the real
figure again after handing the freed heap back to the system (server.heap).
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING, Any

from server import notify
from storage import stream_resp
from storage.keyspace import Database

if TYPE_CHECKING:
    from server.app import Server

EVPOOL_SIZE = 16
_KEY_OVERHEAD = 56  # MEMORY USAGE's per-key estimate, beside the key's length
_ULLONG_MAX = (1 << 64) - 1
_LIST_EACH_TIME = 5000  # keys: listing them costs about 20 us


def time_limit_us(tenacity: int) -> float:
    """evictionTimeLimitUs: how long one run may evict before leaving the rest to the loop."""
    if tenacity <= 10:
        return 50.0 * tenacity
    if tenacity < 100:
        return 500.0 * 1.15 ** (tenacity - 10)
    return float("inf")


def value_size(key: bytes, value: Any) -> int:
    """The memory a key is counted for (MEMORY USAGE's estimate)."""
    usage = getattr(value, "memory_usage", None)
    size = usage() if usage is not None else len(getattr(value, "data", b""))
    return _KEY_OVERHEAD + len(key) + size


class Evictor:
    """The eviction pool and the policy; Server.out_of_memory() calls perform()."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.pool: list[tuple[int, int, bytes]] = []  # (score, db index, key), best last
        self.next_db = 0  # the random policies take the databases in turn
        self.running = False  # a run ran out of time and goes on from the event loop
        # Per database: (when taken, the dict, its keys then) for _sample.
        self._key_lists: dict[int, tuple[float, dict[bytes, Any], list[bytes]]] = {}
        self.policy = "noeviction"
        self.volatile = False
        self.kind = ""  # lru, lfu, ttl or random
        self.set_policy(server.config["maxmemory-policy"])

    def set_policy(self, policy: str) -> None:
        self.policy = policy
        self.volatile = policy.startswith("volatile-")
        self.kind = policy.split("-", 1)[1] if "-" in policy else ""
        self.server.access.lfu = self.kind == "lfu"
        self.server.access.lru_policy = self.kind == "lru"
        self.pool.clear()

    # -- performEvictions ---------------------------------------------------------------------
    def perform(self) -> bool:
        """Evict until the memory is under maxmemory. False when that was not possible (the
        policy is noeviction or no key qualifies): a command that may grow memory gets OOM."""
        server = self.server
        excess = server.used_memory - server.maxmemory
        if excess <= 0 or server.loading:
            return True
        if server.pause.mode is not None:  # a paused server changes no data (PAUSE_ACTION_EVICT)
            return True
        cached = stream_resp.used_bytes()
        if cached:  # the cache of encoded stream nodes goes before any key
            stream_resp.clear()
            server.used_memory -= cached
            excess -= cached
            if excess <= 0:
                return True
        if self.policy == "noeviction":
            return False
        started = time.perf_counter()
        limit = time_limit_us(server.config["maxmemory-eviction-tenacity"]) / 1e6
        freed = evicted = 0
        out_of_time = False
        while freed < excess:
            found = self._random_key() if self.kind == "random" else self._pool_key()
            if found is None:
                break  # nothing left that the policy may evict
            db, key = found
            freed += self._evict(db, key)
            evicted += 1
            if evicted % 16 == 0 and time.perf_counter() - started > limit:
                out_of_time = True
                break
        server.used_memory -= freed
        elapsed_ms = int((time.perf_counter() - started) * 1000)
        server.latency.add_if_needed("eviction-cycle", elapsed_ms)
        server.stats.note_over_maxmemory(server.over_maxmemory(), time.monotonic())
        if out_of_time and freed < excess:
            if not self.running:
                self.running = True
                server.loop.call_soon(self._go_on)
            return True  # EVICT_RUNNING: the command may run
        return freed >= excess

    def _go_on(self) -> None:
        """evictionTimeProc: the rest of a run that ran out of time, a slice per loop pass."""
        self.running = False
        self.perform()

    def _evict(self, db: Database, key: bytes) -> int:
        """deleteEvictedKeyAndPropagate: a DEL for everyone; the memory it is counted for."""
        server = self.server
        started = time.perf_counter()
        size = value_size(key, db.data[key])
        db.delete(key)
        server.stats.evicted_keys += 1
        server.propagate(db, [b"DEL", key])
        # (Eviction runs before the command that needed the memory: a tracking client's
        # invalidation comes before that command's reply, as in Redis.)
        server.signal_modified_key(db, key, internal=True, before_command=True)
        if server.blocking.blocking_keys:
            server.signal_key_as_ready(db, key)
        server.notify(notify.EVICTED, b"evicted", key, db.id)
        server.latency.add_if_needed("eviction-del", int((time.perf_counter() - started) * 1000))
        return size

    # -- choosing the key ---------------------------------------------------------------------
    def _candidates(self, db: Database) -> dict[bytes, Any]:
        return db.expires if self.volatile else db.data

    def _random_key(self) -> tuple[Database, bytes] | None:
        dbs = self.server.dbs
        for _ in range(len(dbs)):
            self.next_db = (self.next_db + 1) % len(dbs)
            db = dbs[self.next_db]
            keys = self._candidates(db)
            if keys:
                return db, self._sample(db, keys, 1)[0]
        return None

    def _pool_key(self) -> tuple[Database, bytes] | None:
        dbs = self.server.dbs
        samples = self.server.config["maxmemory-samples"]
        for _ in range(100):  # (each pass refills the pool: a few at most in practice)
            any_keys = False
            for db in dbs:
                keys = self._candidates(db)
                if keys:
                    any_keys = True
                    self._populate(db, self._sample(db, keys, samples))
            if not any_keys:
                return None
            # The best candidate still there (keys in the pool may have gone since).
            while self.pool:
                _score, index, key = self.pool.pop()
                db = dbs[index]
                if key in self._candidates(db):
                    return db, key
        return None

    def _sample(self, db: Database, keys: dict[bytes, Any], count: int) -> list[bytes]:
        """Up to `count` keys drawn at random from `keys` (dictGetSomeKeys). A dict cannot be
        indexed: a small one is listed each time; a large one (over _LIST_EACH_TIME keys) is
        listed at most once a second, or once a quarter of the keys drawn from the list are
        gone: keys added in between wait for the next list, keys deleted are skipped."""
        if len(keys) <= _LIST_EACH_TIME:
            listed = list(keys)
            return random.sample(listed, count) if count < len(listed) else listed
        now = time.monotonic()
        taken = self._key_lists.get(db.id)
        if taken is None or taken[1] is not keys or now - taken[0] > 1.0:
            taken = self._key_lists[db.id] = (now, keys, list(keys))
        picks = random.sample(taken[2], min(count, len(taken[2])))
        found = [key for key in picks if key in keys]
        if len(found) * 4 < len(picks) * 3:  # the list is stale: take it again
            listed = list(keys)
            self._key_lists[db.id] = (now, keys, listed)
            found = random.sample(listed, min(count, len(listed)))
        return found

    def forget_stale(self, now: float) -> None:
        """Drop the key lists _sample would take again anyway (from the cron): they hold
        deleted keys, and their memory, until then."""
        for index, (taken, _keys, _listed) in list(self._key_lists.items()):
            if now - taken > 1.0:
                del self._key_lists[index]

    def _populate(self, db: Database, keys: list[bytes]) -> None:
        """evictionPoolPopulate: sampled keys join the pool when they beat its worst."""
        pool = self.pool
        access = self.server.access
        for key in keys:
            value = db.data.get(key)
            if value is None:
                continue
            if self.kind == "lru":
                score = access.idle_ms(value.lru)
            elif self.kind == "lfu":
                score = 255 - access.decayed_counter(value.lru)
            else:  # ttl: the nearer the expiry, the better
                score = _ULLONG_MAX - db.expires[key]
            if len(pool) == EVPOOL_SIZE and score <= pool[0][0]:
                continue
            entry = (score, db.id, key)
            at = 0
            while at < len(pool) and pool[at][0] < score:
                at += 1
            pool.insert(at, entry)
            if len(pool) > EVPOOL_SIZE:
                del pool[0]

