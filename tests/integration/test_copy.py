"""COPY end to end: streams with their consumer groups, strings, TTLs, the DB and REPLACE
options, error texts, WATCH and blocked readers of the new key, and the AOF.

`XSTREAMD_TEST_TARGET=redis` runs this file (but the restart test) against Debian's
redis-server 7.0.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import pytest
import redis

from tests.helpers import ServerProcess
from tests.resp import Conn

TARGET = os.environ.get("XSTREAMD_TEST_TARGET", "xstreamd")

SYNTAX = b"-ERR syntax error\r\n"
NOT_INT = b"-ERR value is not an integer or out of range\r\n"
SAME = b"-ERR source and destination objects are the same\r\n"


@pytest.fixture
def c(server: ServerProcess, r: redis.Redis) -> Iterator[Conn]:
    """A raw connection to the session's server, flushed by `r`."""
    conn = Conn(server)
    yield conn
    conn.close()


def _stream_with_group(r: redis.Redis, key: str) -> None:
    for i in range(250):  # several nodes
        r.xadd(key, {"f": i, "g": "x" * (i % 7)}, id=f"{i + 1}-0")
    r.xdel(key, "5-0")
    r.xgroup_create(key, "g", id="0")
    r.xreadgroup("g", "alice", {key: ">"}, count=10)
    r.xreadgroup("g", "bob", {key: ">"}, count=3)
    r.xack(key, "g", "2-0")


def _pending(r: redis.Redis, key: str) -> list[tuple[bytes, bytes, int]]:
    """XPENDING's entries without the time since delivery (it moves between two calls)."""
    return [(p["message_id"], p["consumer"], p["times_delivered"])
            for p in r.xpending_range(key, "g", "-", "+", 100)]


def test_copy_of_a_stream_is_equal_and_independent(r: redis.Redis) -> None:
    _stream_with_group(r, "s")
    assert r.copy("s", "t") is True
    assert r.xrange("t") == r.xrange("s")
    info_s, info_t = r.xinfo_stream("s", full=True), r.xinfo_stream("t", full=True)
    assert info_t == info_s  # entries, ids, counters, groups, PELs, consumers
    assert _pending(r, "t") == _pending(r, "s")
    # The copy lives on its own: writes to it leave the source as it was.
    r.xadd("t", {"new": "1"}, id="1000-0")
    r.xack("t", "g", "1-0", "3-0")
    r.xgroup_create("t", "g2", id="$")
    r.xdel("t", "100-0")
    assert r.xinfo_stream("s", full=True) == info_s
    assert r.xlen("t") == r.xlen("s")  # one added, one deleted
    assert r.xpending("s", "g")["pending"] == 12
    assert r.xpending("t", "g")["pending"] == 10
    # Reading the copy's group moves only the copy's group.
    assert r.xreadgroup("g", "carol", {"t": ">"}, count=1)[0][1][0][0] == b"15-0"
    assert r.xinfo_groups("s")[0]["last-delivered-id"] == b"14-0"


def test_copy_of_an_empty_stream_keeps_its_ids(r: redis.Redis) -> None:
    r.xadd("s", {"f": "v"}, id="7-3")
    r.xdel("s", "7-3")
    assert r.copy("s", "t") is True
    assert r.type("t") == b"stream"
    assert r.xinfo_stream("t") == r.xinfo_stream("s")


def test_copy_options_and_replies(c: Conn) -> None:
    c.call("SET", "k", "v")
    assert c.call("COPY", "k", "k") == SAME
    assert c.call("COPY", "k", "k", "DB", "0") == SAME
    assert c.call("COPY", "nope", "x") == b":0\r\n"
    assert c.call("COPY", "k", "k2") == b":1\r\n"
    assert c.call("GET", "k2") == b"$1\r\nv\r\n"
    c.call("SET", "k", "w")
    assert c.call("COPY", "k", "k2") == b":0\r\n"  # the destination exists
    assert c.call("GET", "k2") == b"$1\r\nv\r\n"
    assert c.call("COPY", "k", "k2", "replace") == b":1\r\n"
    assert c.call("GET", "k2") == b"$1\r\nw\r\n"
    assert c.call("COPY", "k", "k", "DB", "1") == b":1\r\n"  # same name, other database
    assert c.call("COPY", "k", "k", "REPLACE", "db", "1") == b":1\r\n"
    c.call("SELECT", "1")
    assert c.call("GET", "k") == b"$1\r\nw\r\n"
    c.call("SELECT", "0")
    assert c.call("COPY", "k", "x", "DB", "16") == b"-ERR DB index is out of range\r\n"
    assert c.call("COPY", "k", "x", "DB", "-1") == b"-ERR DB index is out of range\r\n"
    assert c.call("COPY", "k", "x", "DB", "x") == NOT_INT
    assert c.call("COPY", "k", "x", "DB", "99999999999") == (
        b"-ERR value is out of range, value must between -2147483648 and 2147483647\r\n")
    assert c.call("COPY", "k", "x", "DB") == SYNTAX
    assert c.call("COPY", "k", "x", "NX") == SYNTAX
    assert c.call("COPY", "k") == b"-ERR wrong number of arguments for 'copy' command\r\n"
    assert c.call("EXISTS", "x") == b":0\r\n"


def test_copy_keeps_the_ttl(r: redis.Redis) -> None:
    r.xadd("s", {"f": "v"})
    r.pexpire("s", 100_000)
    r.xadd("plain", {"f": "v"})
    assert r.copy("s", "t")
    assert 0 < r.pttl("t") <= 100_000
    assert r.pexpiretime("t") == r.pexpiretime("s")
    r.set("t2", "old")
    r.expire("t2", 500)
    assert r.copy("plain", "t2", replace=True)
    assert r.ttl("t2") == -1  # the destination's old TTL goes with it


def test_copy_touches_watchers_of_the_destination(server: ServerProcess, r: redis.Redis) -> None:
    r.xadd("s", {"f": "v"})
    with r.pipeline() as pipe:
        pipe.watch("t")
        other = redis.Redis(host=server.host, port=server.port)
        assert other.copy("s", "t")
        other.close()
        pipe.multi()
        pipe.xlen("t")
        with pytest.raises(redis.WatchError):
            pipe.execute()


def test_copy_wakes_a_reader_blocked_on_the_destination(server: ServerProcess,
                                                         r: redis.Redis) -> None:
    r.xadd("s", {"f": "v"}, id="5-0")
    got: list[object] = []
    reader = redis.Redis(host=server.host, port=server.port)
    thread = threading.Thread(
        target=lambda: got.append(reader.xread({"t": "0"}, block=10_000)))
    thread.start()
    try:
        for _ in range(200):  # the reader is blocked once CLIENT LIST says so
            if b"cmd=xread" in r.execute_command("CLIENT", "LIST"):
                break
            threading.Event().wait(0.01)
        assert r.copy("s", "t")
        thread.join(10)
        assert got == [[[b"t", [(b"5-0", {b"f": b"v"})]]]]
    finally:
        reader.close()


def _without_consumer_times(info: dict) -> dict:
    """XINFO STREAM FULL less the consumers' seen/active times, which an AOF replay sets to
    the time of the replay (as Redis's replay of XCLAIM does)."""
    for group in info["groups"]:
        for consumer in group["consumers"]:
            del consumer[b"seen-time"], consumer[b"active-time"]
    return info


@pytest.mark.skipif(TARGET != "xstreamd", reason="restarts our server with its AOF")
def test_copy_is_replayed_from_the_aof(tmp_path: object) -> None:
    proc = ServerProcess("xstreamd", ["--appendonly", "yes"], workdir=str(tmp_path)).start()
    try:
        r = redis.Redis(host=proc.host, port=proc.port)
        _stream_with_group(r, "s")
        r.copy("s", "t")
        r.xack("t", "g", "1-0")
        r.copy("s", "u", destination_db=2)
        before = (_without_consumer_times(r.xinfo_stream("t", full=True)),
                  _without_consumer_times(r.xinfo_stream("s", full=True)))
        r.close()
        proc.stop(cleanup=False)
        proc.start()
        r = redis.Redis(host=proc.host, port=proc.port)
        assert (_without_consumer_times(r.xinfo_stream("t", full=True)),
                _without_consumer_times(r.xinfo_stream("s", full=True))) == before
        r.execute_command("SELECT", "2")
        assert r.xlen("u") == 249
        r.close()
    finally:
        proc.stop()
