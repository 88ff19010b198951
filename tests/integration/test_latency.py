"""LATENCY (monitor and histograms), INFO latencystats and the fork statistics, end to end.

`XSTREAMD_TEST_TARGET=redis` runs this file against Debian's redis-server 7.0.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
import redis

from tests.helpers import TARGET, ServerProcess
from tests.integration.server_fixtures import module_server
from tests.resp import Conn

# Redis 7.2+ counts a blocked command when it times out (updateStatsOnUnblock); 7.0 does not.
redis8_only = pytest.mark.skipif(TARGET == "redis", reason="Redis 7.2+ behaviour")


srv = module_server("--enable-debug-command", "local")


@pytest.fixture
def r(srv: ServerProcess) -> Iterator[redis.Redis]:
    client = redis.Redis(host=srv.host, port=srv.port)
    client.flushall()
    client.execute_command("LATENCY", "RESET")
    client.config_resetstat()
    yield client
    client.config_set("latency-monitor-threshold", "0")
    client.config_set("latency-tracking", "yes")
    client.config_set("latency-tracking-info-percentiles", "50 99 99.9")
    client.close()


def histogram(r: redis.Redis, *names: str) -> dict[bytes, dict[bytes, object]]:
    """LATENCY HISTOGRAM (redis-py turns its maps into dicts in RESP2 too)."""
    return r.execute_command("LATENCY", "HISTOGRAM", *names)


def test_slow_command_is_a_latency_spike(r: redis.Redis) -> None:
    r.config_set("latency-monitor-threshold", "5")
    assert r.execute_command("LATENCY", "LATEST") == []
    r.execute_command("DEBUG", "SLEEP", "0.02")
    latest = r.execute_command("LATENCY", "LATEST")
    assert len(latest) == 1
    event, when, latency, worst = latest[0]
    assert event == b"command" and abs(when - time.time()) < 5 and 20 <= latency == worst
    history = r.execute_command("LATENCY", "HISTORY", "command")
    assert history == [[when, latency]]
    graph = r.execute_command("LATENCY", "GRAPH", "command").decode()
    assert graph.startswith(f"command - high {latency} ms, low {latency} ms (all time high "
                            f"{latency} ms)\n{'-' * 80}\n")
    doctor = r.execute_command("LATENCY", "DOCTOR").decode()
    assert f"1. command: 1 latency spikes (average {latency}ms" in doctor
    assert "I have a few advices for you:" in doctor
    assert r.execute_command("LATENCY", "RESET", "nosuch", "COMMAND") == 1
    assert r.execute_command("LATENCY", "LATEST") == []
    with pytest.raises(redis.ResponseError, match="No samples available for event 'command'"):
        r.execute_command("LATENCY", "GRAPH", "command")


def test_below_the_threshold_nothing_is_kept(r: redis.Redis) -> None:
    r.config_set("latency-monitor-threshold", "1000")
    r.execute_command("DEBUG", "SLEEP", "0.01")
    assert r.execute_command("LATENCY", "LATEST") == []
    r.config_set("latency-monitor-threshold", "0")
    r.execute_command("DEBUG", "SLEEP", "0.01")
    assert r.execute_command("LATENCY", "LATEST") == []
    assert r.execute_command("LATENCY", "DOCTOR").startswith(b"I'm sorry, Dave")


def test_a_slow_fast_command_is_its_own_event(r: redis.Redis) -> None:
    r.config_set("latency-monitor-threshold", "1")
    r.xadd("big", {"f": b"x" * (48 << 20)})  # XADD is flagged fast; copying 48 MB is not
    events = {row[0] for row in r.execute_command("LATENCY", "LATEST")}
    assert b"fast-command" in events


def test_histogram_counts_every_call(r: redis.Redis) -> None:
    for i in range(5):
        r.xadd("s", {"f": i})
    r.config_get("hz")
    hist = histogram(r, "xadd", "config", "nosuch", "no|such")
    assert set(hist) >= {b"xadd", b"config|get", b"config|resetstat"}
    assert b"config|set" not in hist  # none since the reset
    xadd = hist[b"xadd"]
    assert xadd[b"calls"] == 5
    buckets = xadd[b"histogram_usec"]
    assert list(buckets.values()) == sorted(buckets.values())  # cumulative
    assert max(buckets.values()) == 5
    assert histogram(r, "nosuch") == {}
    assert b"xadd" in histogram(r)  # no names: every command with data
    assert histogram(r, "config|get")[b"config|get"][b"calls"] == 1


def test_histogram_in_resp3(srv: ServerProcess, r: redis.Redis) -> None:
    r.xadd("s", {"f": "v"})
    r3 = redis.Redis(host=srv.host, port=srv.port, protocol=3)
    try:
        reply = r3.execute_command("LATENCY", "HISTOGRAM", "xadd")
        assert reply[b"xadd"][b"calls"] == 1
        assert list(reply[b"xadd"][b"histogram_usec"].values()) == [1]
    finally:
        r3.close()


@redis8_only
def test_blocked_command_counts_when_it_times_out(r: redis.Redis) -> None:
    assert r.xread({"nokey": "$"}, block=50) in ([], None, {})
    assert histogram(r, "xread")[b"xread"][b"calls"] == 1


def test_info_latencystats(srv: ServerProcess, r: redis.Redis) -> None:
    r.xadd("s", {"f": "v"})
    conn = Conn(srv)
    try:
        text = conn.call("INFO", "latencystats").split(b"\r\n", 1)[1].decode()
    finally:
        conn.close()
    assert text.startswith("# Latencystats\r\n")
    line = re.search(r"^latency_percentiles_usec_xadd:(.*)\r$", text, re.M)
    assert line is not None
    assert re.fullmatch(r"p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}", line.group(1))
    assert "latency_percentiles_usec_xadd" not in r.info()  # not a default section
    assert "latency_percentiles_usec_xadd" in r.info("all")
    r.config_set("latency-tracking-info-percentiles", "0 100")
    values = r.info("latencystats")["latency_percentiles_usec_xadd"]
    assert set(values) == {"p0", "p100"} and values["p0"] <= values["p100"]


def test_tracking_can_be_turned_off(r: redis.Redis) -> None:
    r.xadd("s", {"f": "v"})
    r.config_set("latency-tracking", "no")
    r.xadd("s", {"f": "v"})
    # The histogram keeps what it had; commandstats still count every call.
    assert histogram(r, "xadd")[b"xadd"][b"calls"] == 1
    assert r.info("latencystats") == {}
    assert r.info("commandstats")["cmdstat_xadd"]["calls"] == 2
    r.config_set("latency-tracking", "yes")
    r.xadd("s", {"f": "v"})
    assert histogram(r, "xadd")[b"xadd"][b"calls"] == 2
    assert r.info("commandstats")["cmdstat_xadd"]["calls"] == 3


def test_resetstat_clears_histograms(r: redis.Redis) -> None:
    r.xadd("s", {"f": "v"})
    r.config_resetstat()
    assert b"xadd" not in histogram(r)


def test_fork_statistics(r: redis.Redis) -> None:
    before = r.info("stats")["total_forks"]
    r.xadd("s", {"f": "v"})
    r.bgsave()
    deadline = time.monotonic() + 20
    while r.info("persistence")["rdb_bgsave_in_progress"] and time.monotonic() < deadline:
        time.sleep(0.05)
    stats = r.info("stats")
    assert stats["total_forks"] == before + 1
    assert stats["latest_fork_usec"] > 0
