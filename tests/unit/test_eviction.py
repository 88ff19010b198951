"""server.eviction without a server process: the time limit, key sampling, the eviction pool."""

from __future__ import annotations

from types import SimpleNamespace

from server.eviction import EVPOOL_SIZE, Evictor, time_limit_us
from storage.access import AccessClock
from storage.keyspace import Database, StringValue


def make_evictor(policy: str) -> tuple[Evictor, Database]:
    access = AccessClock(now_ms=10_000_000)
    db = Database(0, access=access)
    server = SimpleNamespace(config={"maxmemory-policy": policy, "maxmemory-samples": 5},
                             access=access, dbs=[db])
    return Evictor(server), db  # type: ignore[arg-type]


def test_time_limit_follows_tenacity() -> None:
    assert time_limit_us(0) == 0
    assert time_limit_us(10) == 500
    assert 500 < time_limit_us(11) < time_limit_us(50)
    assert time_limit_us(100) == float("inf")


def test_policy_sets_what_the_lru_field_means() -> None:
    evictor, _db = make_evictor("allkeys-lfu")
    assert evictor.server.access.lfu and not evictor.server.access.lru_policy
    evictor.set_policy("volatile-lru")
    assert evictor.volatile and evictor.kind == "lru"
    assert evictor.server.access.lru_policy and not evictor.server.access.lfu


def test_pool_keeps_the_best_candidates_in_order() -> None:
    evictor, db = make_evictor("allkeys-lru")
    for i in range(40):
        db.set(b"k%d" % i, StringValue(b"v"))
        db.data[b"k%d" % i].lru = evictor.server.access.lru_clock - i  # k39 idle longest
    evictor._populate(db, list(db.data))
    assert len(evictor.pool) == EVPOOL_SIZE
    assert [key for _score, _db, key in evictor.pool] == [b"k%d" % i for i in range(24, 40)]
    assert evictor._pool_key() == (db, b"k39")


def test_samples_come_from_the_whole_keyspace() -> None:
    """Large keyspaces are sampled from a list of their keys, not a run in insertion order;
    keys deleted since the list was taken are skipped, and the cron drops old lists."""
    evictor, db = make_evictor("allkeys-random")
    for i in range(20_000):
        db.data[b"k%d" % i] = StringValue(b"v")
    seen = set()
    for _ in range(200):
        seen.update(evictor._sample(db, db.data, 5))
    first_half = sum(1 for key in seen if int(key[1:]) < 10_000)
    assert 0.3 < first_half / len(seen) < 0.7
    for i in range(0, 20_000, 2):
        del db.data[b"k%d" % i]
    assert all(key in db.data for key in evictor._sample(db, db.data, 50))
    assert evictor._key_lists
    evictor.forget_stale(now=evictor._key_lists[0][0] + 2.0)
    assert not evictor._key_lists
