"""MEMORY STATS and MEMORY DOCTOR (server/memory_report.py): Redis 8's fields, in its order and
with its reply types, checked against Debian's redis-server 7.0 where 7.0 has the same, and
values that agree with INFO memory and the keyspace; the doctor's reports.

Each test starts its own server: the peak and startup readings are per process.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
import redis

from tests.helpers import TARGET, ServerProcess
from tests.resp import Conn, encode

pytestmark = pytest.mark.skipif(TARGET == "redis", reason="Redis 8's fields; 7.0 is compared")

# Redis 8.4's MEMORY STATS fields, in its order; db.<n> entries come after script.VMs.
BEFORE_DBS = ["peak.allocated", "total.allocated", "startup.allocated", "replication.backlog",
              "replica.fullsync.buffer", "clients.slaves", "clients.normal", "cluster.links",
              "aof.buffer", "lua.caches", "functions.caches", "script.VMs"]
AFTER_DBS = ["overhead.db.hashtable.lut", "overhead.db.hashtable.rehashing", "overhead.total",
             "db.dict.rehashing.count", "keys.count", "keys.bytes-per-key", "dataset.bytes",
             "dataset.percentage", "peak.percentage", "allocator.allocated", "allocator.active",
             "allocator.resident", "allocator.muzzy", "allocator-fragmentation.ratio",
             "allocator-fragmentation.bytes", "allocator-rss.ratio", "allocator-rss.bytes",
             "rss-overhead.ratio", "rss-overhead.bytes", "fragmentation", "fragmentation.bytes"]
# Added after 7.0 (7.0 has the others, in the same order).
SINCE_7_0 = {"replica.fullsync.buffer", "script.VMs", "overhead.db.hashtable.lut",
             "overhead.db.hashtable.rehashing", "db.dict.rehashing.count", "allocator.muzzy"}
DOUBLES = {"dataset.percentage", "peak.percentage", "allocator-fragmentation.ratio",
           "allocator-rss.ratio", "rss-overhead.ratio", "fragmentation"}
EMPTY = (b"Hi Sam, this instance is empty or is using very little memory, my issues detector "
         b"can't be used in these conditions. Please, leave for your mission on Earth and fill "
         b"it with some data. The new Sam and I will be back to our programming as soon as I "
         b"finished rebooting.\n")
NO_ISSUE = (b"Hi Sam, I can't find any memory issue in your instance. I can only account for "
            b"what occurs on this base.\n")


@pytest.fixture
def fresh() -> Iterator[ServerProcess]:
    proc = ServerProcess("xstreamd", extra_args=["--appendonly", "no", "--save", ""]).start()
    yield proc
    proc.stop()


@contextlib.contextmanager
def _raw(proc: ServerProcess) -> Iterator[Conn]:
    conn = Conn(proc)
    try:
        yield conn
    finally:
        conn.close()


def _client(proc: ServerProcess, protocol: int = 2) -> redis.Redis:
    client = redis.Redis(host=proc.host, port=proc.port, protocol=protocol)
    client.response_callbacks.clear()  # the replies as the server shapes them
    return client


def _stats(client: redis.Redis) -> dict[bytes, object]:
    flat = client.execute_command("MEMORY", "STATS")
    return dict(zip(flat[0::2], flat[1::2], strict=True))


def _fill(proc: ServerProcess, key: str, entries: int) -> None:
    """XADD `entries` entries of 200 bytes, pipelined (about 1.2 MB per 5,000)."""
    with _raw(proc) as conn:
        for _ in range(entries // 500):
            conn.sock.sendall(b"".join(encode("XADD", key, "*", "f", "v" * 200)
                                       for _ in range(500)))
            for _ in range(500):
                conn.read()


def test_fields_are_redis_8s_in_its_order(fresh: ServerProcess,
                                           redis_ref: ServerProcess) -> None:
    ours = _client(fresh)
    ours.execute_command("XADD", "s", "*", "f", "v")
    ours.execute_command("SELECT", 3)
    ours.execute_command("SET", "k", "v")
    fields = list(_stats(ours))
    assert fields == [f.encode() for f in [*BEFORE_DBS, "db.0", "db.3", *AFTER_DBS]]
    ref = _client(redis_ref)
    ref.flushall()
    ref.execute_command("XADD", "s", "*", "f", "v")
    theirs = list(_stats(ref))
    assert [f for f in fields if f.decode() not in SINCE_7_0 and f != b"db.3"] == theirs
    # A database's entry is a map of its two tables (7.0 also has its cluster slot table).
    assert list(_stats(ours)[b"db.0"][0::2]) == [b"overhead.hashtable.main",
                                                 b"overhead.hashtable.expires"]


def test_types_in_resp3(fresh: ServerProcess) -> None:
    client = _client(fresh, protocol=3)
    client.execute_command("XADD", "s", "*", "f", "v")
    stats = client.execute_command("MEMORY", "STATS")
    assert isinstance(stats, dict)
    for name, value in stats.items():
        if name.decode() in DOUBLES:
            assert isinstance(value, float), name
        elif name == b"db.0":
            assert set(value) == {b"overhead.hashtable.main", b"overhead.hashtable.expires"}
        else:
            assert isinstance(value, int) and value >= 0, name
    with _raw(fresh) as raw:
        raw.call("HELLO", "3")
        reply = raw.call("MEMORY", "STATS")
        assert reply.startswith(b"%%%d\r\n" % (len(BEFORE_DBS) + 1 + len(AFTER_DBS)))
        assert b"$18\r\ndataset.percentage\r\n," in reply


def test_values_agree_with_info_and_the_keyspace(fresh: ServerProcess) -> None:
    client = _client(fresh)
    client.execute_command("SCRIPT", "LOAD", "return 1")
    _fill(fresh, "s", 1000)
    client.execute_command("SET", "k", "v", "EX", 100)
    stats = _stats(client)
    info = redis.Redis(host=fresh.host, port=fresh.port).info("memory")
    assert stats[b"keys.count"] == 2
    assert stats[b"startup.allocated"] == info["used_memory_startup"]
    assert stats[b"peak.allocated"] >= stats[b"total.allocated"] >= stats[b"startup.allocated"]
    assert stats[b"overhead.total"] + stats[b"dataset.bytes"] == stats[b"total.allocated"]
    assert stats[b"dataset.bytes"] > 0
    net = stats[b"total.allocated"] - stats[b"startup.allocated"]
    assert stats[b"keys.bytes-per-key"] == net // 2
    assert float(stats[b"dataset.percentage"]) == pytest.approx(
        stats[b"dataset.bytes"] * 100 / net, rel=1e-6)
    main, expires = _stats(client)[b"db.0"][1::2]
    assert main > 0 and expires > 0  # (the key with a TTL has its table)
    assert stats[b"lua.caches"] > 0 and stats[b"script.VMs"] > 0
    assert float(stats[b"fragmentation"]) == 1.0 and stats[b"fragmentation.bytes"] == 0
    client.flushall()
    assert b"db.0" not in _stats(client) and _stats(client)[b"keys.count"] == 0


def test_doctor_reports(fresh: ServerProcess) -> None:
    client = _client(fresh)
    assert client.execute_command("MEMORY", "DOCTOR") == EMPTY
    _fill(fresh, "s", 40_000)  # about 8 MB more than at startup
    assert client.execute_command("MEMORY", "DOCTOR") == NO_ISSUE
    pipe = client.pipeline(transaction=False)
    for i in range(1001):
        pipe.execute_command("SCRIPT", "LOAD", f"return {i}")
    pipe.execute()
    report = client.execute_command("MEMORY", "DOCTOR")
    assert report.startswith(
        b"Sam, I detected a few issues in this Redis instance memory implants:\n\n"
        b" * Many scripts: There seem to be many cached scripts in this instance (more than "
        b"1000).")
    assert report.endswith(b"\n\nI'm here to keep you safe, Sam. I want to help you.\n")
    with _raw(fresh) as raw:
        raw.call("HELLO", "3")
        assert raw.call("MEMORY", "DOCTOR").startswith(b"=%d\r\ntxt:Sam," % (len(report) + 4))


def test_arity_and_help(fresh: ServerProcess, redis_ref: ServerProcess) -> None:
    for proc in (fresh, redis_ref):
        with _raw(proc) as conn:
            assert conn.call("MEMORY", "STATS", "x") == (
                b"-ERR wrong number of arguments for 'memory|stats' command\r\n")
            assert conn.call("MEMORY", "DOCTOR", "x") == (
                b"-ERR wrong number of arguments for 'memory|doctor' command\r\n")
    with _raw(fresh) as ours, _raw(redis_ref) as theirs:
        assert ours.call("MEMORY", "HELP") == theirs.call("MEMORY", "HELP")
