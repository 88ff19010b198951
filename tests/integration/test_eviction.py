"""maxmemory-policy: which keys go when writes pass maxmemory, and what an eviction does
(INFO's evicted_keys, WATCH, the AOF).

Memory here is the resident size, read by the cron: the servers run at hz 100 and the writes come
in batches with a cron tick between them. Each test has a server of its own.
`XSTREAMD_TEST_TARGET=redis` runs this file against Debian's redis-server 7.0 (whose memory is
its allocator's count).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis

from tests.helpers import TARGET, ServerProcess


@pytest.fixture
def srv() -> Iterator[ServerProcess]:
    """A server per test: memory freed by an earlier test's keys would stay in the resident
    size (Python keeps part of it), and shift where the next test's limit is."""
    proc = ServerProcess(TARGET, extra_args=["--appendonly", "no", "--hz", "100",
                                             "--enable-debug-command", "local"]).start()
    yield proc
    proc.stop()


VALUE = "x" * 2000  # a key: a stream of one entry of about 2 KB
HEADROOM = 4 * 1024 * 1024


@pytest.fixture
def r(srv: ServerProcess) -> Iterator[redis.Redis]:
    client = redis.Redis(host=srv.host, port=srv.port)
    yield client
    client.close()


def used(r: redis.Redis) -> int:
    return int(r.info("memory")["used_memory"])


def limit_memory(r: redis.Redis, policy: str) -> int:
    """maxmemory a few MB above what the server uses now; returns the limit."""
    time.sleep(0.05)  # (a fresh reading)
    limit = used(r) + HEADROOM
    r.config_set("maxmemory-policy", policy)
    r.config_set("maxmemory", str(limit))
    return limit


def write(r: redis.Redis, prefix: str, count: int, ttl: int | None = None,
          batch: int = 50) -> int:
    """`count` keys of about 2 KB, in batches with a cron tick between them; the number of
    writes refused with OOM."""
    refused = 0
    for start in range(0, count, batch):
        pipe = r.pipeline(transaction=False)
        for i in range(start, min(start + batch, count)):
            key = f"{prefix}:{i}"
            pipe.xadd(key, {"f": VALUE})
            if ttl is not None:
                pipe.expire(key, ttl)
        for reply in pipe.execute(raise_on_error=False):
            if isinstance(reply, redis.ResponseError):
                assert isinstance(reply, redis.exceptions.OutOfMemoryError), reply
                refused += 1
        time.sleep(0.02)
    return refused


def write_until_evicted(r: redis.Redis, prefix: str, evictions: int) -> None:
    """Write keys until the policy has evicted at least `evictions` of them (the memory the
    server starts from varies: freed memory it still holds is filled first)."""
    for batch in range(200):
        assert write(r, f"{prefix}{batch}", 50) == 0
        if int(r.info("stats")["evicted_keys"]) >= evictions:
            return
    raise AssertionError("no eviction")


def write_until_refused(r: redis.Redis, prefix: str) -> None:
    """Write keys until the server refuses one with OOM (nothing left to evict)."""
    for batch in range(400):
        if write(r, f"{prefix}{batch}", 50):
            return
    raise AssertionError("never refused")


def surviving(r: redis.Redis, prefix: str, count: int) -> int:
    return sum(r.exists(f"{prefix}:{i}") for i in range(count))


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-lfu", "allkeys-random"])
def test_allkeys_policies_keep_memory_under_the_limit(r: redis.Redis, policy: str) -> None:
    limit = limit_memory(r, policy)
    assert write(r, "k", 6000) == 0  # 12 MB into 4 MB: no write is refused
    evicted = int(r.info("stats")["evicted_keys"])
    assert evicted > 1000
    assert 0 < r.dbsize() <= 6000 - evicted  # (Redis evicts before any command, INFO too)
    time.sleep(0.05)
    assert used(r) < limit + 1024 * 1024
    if policy != "allkeys-random":  # (a random eviction may take any key, the last one too)
        assert r.exists("k:5999")  # the last write is there


@pytest.mark.parametrize("policy", ["volatile-lru", "volatile-lfu", "volatile-random",
                                    "volatile-ttl"])
def test_volatile_policies_evict_only_keys_with_a_ttl(r: redis.Redis, policy: str) -> None:
    limit_memory(r, policy)
    assert write(r, "keep", 500) == 0  # 1 MB without a TTL
    for batch in range(200):  # keys with a TTL, evicted as needed
        assert write(r, f"vol{batch}", 50, ttl=10_000) == 0
        if int(r.info("stats")["evicted_keys"]) >= 500:
            break
    assert surviving(r, "keep", 500) == 500
    # With no key left that has a TTL, nothing can be evicted: writes are refused.
    for key in r.scan_iter("vol*"):
        r.persist(key)
    write_until_refused(r, "more")
    assert surviving(r, "keep", 500) == 500


def test_out_of_memory_a_transaction_queues_nothing(r: redis.Redis) -> None:
    """Over maxmemory with nothing to evict, MULTI refuses even reads; EXEC and DISCARD run."""
    r.xadd("k", {"f": "v"})  # no TTL: volatile-lru may not evict it
    r.config_set("maxmemory-policy", "volatile-lru")
    r.config_set("maxmemory", "1")  # (any server is over that)
    pipe = r.pipeline(transaction=True)
    pipe.xlen("k")
    with pytest.raises(redis.exceptions.OutOfMemoryError):  # (EXECABORT, the cause raised)
        pipe.execute()
    conn = r.connection_pool.get_connection()
    try:
        conn.send_command("MULTI")
        assert conn.read_response() == b"OK"
        conn.send_command("XLEN", "k")
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            conn.read_response()
        conn.send_command("DISCARD")
        assert conn.read_response() == b"OK"
    finally:
        r.connection_pool.release(conn)
    assert r.xlen("k") == 1  # outside MULTI a read still runs


def test_lru_evicts_the_keys_idle_longest(r: redis.Redis) -> None:
    r.xadd("tmp", {"f": VALUE})
    payload = r.dump("tmp")
    r.delete("tmp")
    limit_memory(r, "allkeys-lru")
    # (Sampling finds the idlest keys only among those it samples: many samples, so that
    # the outcome is all but certain.)
    r.config_set("maxmemory-samples", "64")
    for i in range(600):  # idle for a day: first to go
        r.restore(f"old:{i}", 0, payload, idletime=86_400)
    assert write(r, "new", 600) == 0
    write_until_evicted(r, "fill", 600)
    assert surviving(r, "old", 600) < 100
    assert surviving(r, "new", 600) > 450


def test_lfu_evicts_the_keys_used_least(r: redis.Redis) -> None:
    r.config_set("lfu-decay-time", "0")
    limit_memory(r, "allkeys-lfu")
    r.config_set("maxmemory-samples", "64")
    r.xadd("tmp", {"f": VALUE})
    payload = r.dump("tmp")
    r.delete("tmp")
    for i in range(600):
        r.restore(f"hot:{i}", 0, payload, frequency=200)
    write_until_evicted(r, "fill", 1000)  # new keys start at 5: they go first
    assert surviving(r, "hot", 600) == 600
    r.config_set("lfu-decay-time", "1")


def test_volatile_ttl_evicts_the_nearest_expiry(r: redis.Redis) -> None:
    limit_memory(r, "volatile-ttl")
    r.config_set("maxmemory-samples", "64")  # (see test_lru_evicts_the_keys_idle_longest)
    assert write(r, "late", 600, ttl=100_000) == 0
    for batch in range(200):  # while most sampled keys are "soon" ones
        assert write(r, f"soon{batch}", 50, ttl=1_000) == 0
        if int(r.info("stats")["evicted_keys"]) >= 300:
            break
    assert surviving(r, "late", 600) == 600


def test_an_evicted_key_is_deleted_everywhere(srv: ServerProcess, r: redis.Redis) -> None:
    """A WATCHed key that is evicted fails the transaction; the AOF holds the deletion."""
    r.config_set("appendonly", "yes")
    deadline = time.monotonic() + 10
    while r.info("persistence")["aof_rewrite_in_progress"] and time.monotonic() < deadline:
        time.sleep(0.05)
    r.xadd("watched", {"f": VALUE})
    r.expire("watched", 100_000)  # the only key volatile-ttl may evict
    watcher = r.pipeline(transaction=True)
    watcher.watch("watched")
    limit_memory(r, "volatile-ttl")
    for batch in range(200):
        write(r, f"k{batch}", 50)
        if not r.exists("watched"):
            break
    assert int(r.info("stats")["evicted_keys"]) == 1
    r.config_set("maxmemory", "0")  # (out of memory, MULTI would queue nothing)
    watcher.multi()
    watcher.xlen("watched")
    with pytest.raises(redis.WatchError):
        watcher.execute()
    left = r.dbsize()
    assert r.execute_command("DEBUG", "LOADAOF") == b"OK"
    assert r.dbsize() == left
    assert not r.exists("watched")
    r.config_set("appendonly", "no")
