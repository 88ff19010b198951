"""Stream reads count keyspace hits and misses in INFO stats, as lookupKeyRead does."""

from __future__ import annotations

import redis


def _hits_misses(r: redis.Redis) -> tuple[int, int]:
    stats = r.info("stats")
    return stats["keyspace_hits"], stats["keyspace_misses"]


def test_stream_reads_count_hits_and_misses(r: redis.Redis) -> None:
    r.config_resetstat()
    r.xadd("s", {"f": "v"}, id="1-1")
    r.xrange("s")
    r.xrange("missing")
    r.xlen("s")
    assert _hits_misses(r) == (2, 1)
    # XREAD looks every key up twice (to resolve its ID, then to serve it), as Redis 7 does.
    r.xread({"s": "0", "missing": "0"})
    assert _hits_misses(r) == (4, 3)
    r.xadd("s", {"f": "v"}, id="2-1")  # writes are not counted
    r.delete("s")
    assert _hits_misses(r) == (4, 3)
