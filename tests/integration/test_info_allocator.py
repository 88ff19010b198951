"""INFO memory's allocator_* and rss_overhead_* fields (read by the Prometheus exporter) and
CONFIG GET io-threads."""

from __future__ import annotations

import pytest
import redis

from tests.helpers import TARGET

FIELDS = ["allocator_allocated", "allocator_active", "allocator_resident",
          "allocator_frag_ratio", "allocator_frag_bytes", "allocator_rss_ratio",
          "allocator_rss_bytes", "rss_overhead_ratio", "rss_overhead_bytes"]


def test_allocator_fields_are_printed(r: redis.Redis) -> None:
    memory = r.info("memory")
    for name in FIELDS:
        assert name in memory, name
    assert memory["allocator_allocated"] > 0


@pytest.mark.skipif(TARGET == "redis", reason="our values")
def test_allocator_fields_are_the_process_view(r: redis.Redis) -> None:
    memory = r.info("memory")
    assert memory["allocator_allocated"] == memory["used_memory"]
    assert (memory["allocator_frag_ratio"], memory["rss_overhead_bytes"]) == (1.0, 0)
    assert r.config_get("io-threads") == {"io-threads": "1"}
    with pytest.raises(redis.ResponseError):
        r.config_set("io-threads", 2)
