"""The string commands against Debian's redis-server (7.0): the exact bytes of every reply
(values, errors, integer edges, TTLs, OBJECT ENCODING), keyspace events, and AOF replay.

Redis 8.x changed nothing these scenarios touch (t_string.c's replies and error texts are the
same); 8.2's overwritten/type_changed events are checked on ours alone.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

import pytest
import redis

from tests.helpers import TARGET, ServerProcess
from tests.integration.test_keyspace_events import events_of
from tests.integration.test_persistence_support import connect, started
from tests.resp import Conn

MAX = "9223372036854775807"
MIN = "-9223372036854775808"

Command = Sequence[object]


def transcript(server: ServerProcess, commands: list[Command], protocol: int = 2) -> list[bytes]:
    """The exact reply bytes of each command, run in order on a flushed server."""
    conn = Conn(server)
    try:
        conn.call("FLUSHALL")
        if protocol == 3:
            conn.call("HELLO", "3")
        return [conn.call(*command) for command in commands]  # type: ignore[arg-type]
    finally:
        conn.close()


def assert_same(ours: ServerProcess, ref: ServerProcess, commands: list[Command],
                protocol: int = 2) -> list[bytes]:
    mine = transcript(ours, commands, protocol)
    theirs = transcript(ref, commands, protocol)
    for command, got, want in zip(commands, mine, theirs, strict=True):
        assert got == want, command
    return mine


COUNTERS: list[Command] = [
    ("SET", "n", "10"), ("INCR", "n"), ("DECR", "n"), ("INCRBY", "n", "5"),
    ("DECRBY", "n", "3"), ("INCRBY", "n", "-20"), ("DECRBY", "n", "-2"), ("GET", "n"),
    ("INCR", "fresh"), ("DECR", "fresh2"), ("INCRBY", "fresh3", "7"), ("DECRBY", "fresh4", "7"),
    ("OBJECT", "ENCODING", "n"),
    # string2ll: no '+', spaces, leading zeros or "-0"; within int64
    *[("INCRBY", "n", arg) for arg in ("abc", "+1", " 1", "1 ", "01", "-0", "1.5", "", "0x10",
                                        "9223372036854775808", "-9223372036854775809")],
    *[cmd for value in (" 1", "+1", "01", "-0", "", "abc", "1e3", "12345678901234567890")
      for cmd in (("SET", "s", value), ("INCR", "s"), ("GET", "s"))],
    # int64 edges
    ("SET", "big", MAX), ("INCR", "big"), ("INCRBY", "big", "1"), ("DECRBY", "big", "-1"),
    ("INCRBY", "big", "0"), ("DECRBY", "big", "1"), ("INCR", "big"), ("GET", "big"),
    ("SET", "small", MIN), ("DECR", "small"), ("INCRBY", "small", "-1"),
    ("INCRBY", "small", MAX), ("SET", "small", MIN), ("DECRBY", "small", "1"),
    ("DECRBY", "x", MIN), ("EXISTS", "x"), ("INCRBY", "x", MIN), ("DECRBY", "x", MAX),
    ("INCRBY", "x", MIN),
    # other types, arity
    ("XADD", "st", "1-1", "f", "v"), ("INCR", "st"), ("DECRBY", "st", "1"),
    ("INCRBY", "st", "abc"), ("DECRBY", "st", MIN),
    ("INCR",), ("INCR", "a", "b"), ("INCRBY", "a"), ("DECRBY", "a", "1", "2"), ("DECR",),
]


def test_counters_match_redis(server: ServerProcess, redis_ref: ServerProcess) -> None:
    replies = assert_same(server, redis_ref, COUNTERS)
    assert b":-9223372036854775808\r\n" in replies  # (the INCRBY of MIN onto 0)


EDITS: list[Command] = [
    ("APPEND", "a", "Hello"), ("OBJECT", "ENCODING", "a"), ("APPEND", "a", " World"),
    ("GET", "a"), ("STRLEN", "a"), ("OBJECT", "ENCODING", "a"), ("APPEND", "a", ""),
    ("APPEND", "num", "123"), ("OBJECT", "ENCODING", "num"), ("APPEND", "num", "4"),
    ("OBJECT", "ENCODING", "num"), ("INCR", "num"), ("OBJECT", "ENCODING", "num"),
    ("SET", "short", "ab"), ("APPEND", "short", "c"), ("OBJECT", "ENCODING", "short"),
    ("SETRANGE", "missing", "0", ""), ("EXISTS", "missing"), ("SETRANGE", "missing", "5", ""),
    ("SETRANGE", "pad", "5", "xy"), ("GET", "pad"), ("OBJECT", "ENCODING", "pad"),
    ("SETRANGE", "pad", "1", "ABCDEFGHIJ"), ("GET", "pad"), ("SETRANGE", "pad", "0", ""),
    ("SETRANGE", "pad", "20", "z"), ("GET", "pad"), ("STRLEN", "pad"),
    ("SET", "i", "1234"), ("SETRANGE", "i", "1", "9"), ("GET", "i"), ("OBJECT", "ENCODING", "i"),
    ("SETRANGE", "a", "-1", "x"), ("SETRANGE", "a", "abc", "x"), ("SETRANGE", "a", "1.0", "x"),
    ("SETRANGE", "a", MAX, "x"), ("SETRANGE", "a", "536870912", "x"),
    ("SETRANGE", "new", "536870912", "x"), ("SETRANGE", "new", MAX, ""), ("EXISTS", "new"),
    ("XADD", "st", "1-1", "f", "v"), ("APPEND", "st", "x"), ("SETRANGE", "st", "0", "x"),
    ("SETRANGE", "st", "0", ""), ("SETRANGE", "st", "-1", "x"),
    ("APPEND", "a"), ("SETRANGE", "a", "1"), ("APPEND",),
    # the shared integers 0..9999 (OBJECT REFCOUNT INT_MAX)
    ("SET", "r", "-1"), ("INCR", "r"), ("OBJECT", "REFCOUNT", "r"), ("SET", "r", "9998"),
    ("INCR", "r"), ("OBJECT", "REFCOUNT", "r"), ("INCR", "r"), ("OBJECT", "REFCOUNT", "r"),
    ("APPEND", "r2", "7"), ("OBJECT", "REFCOUNT", "r2"), ("APPEND", "r2", "7"),
    ("OBJECT", "REFCOUNT", "r2"), ("SETRANGE", "r3", "0", "5"), ("OBJECT", "REFCOUNT", "r3"),
    ("MSET", "r4", "05", "r5", "5"), ("OBJECT", "REFCOUNT", "r4"), ("OBJECT", "REFCOUNT", "r5"),
]


def test_append_and_setrange_match_redis(server: ServerProcess,
                                         redis_ref: ServerProcess) -> None:
    assert_same(server, redis_ref, EDITS)


RANGES = [(0, 4), (-3, -1), (0, -1), (6, 100), (-1, -5), (5, 3), (-200, -100), (-100, 4),
          (0, 0), (100, 200), (-1, -1), (10, 10), (11, 11), (MIN, MAX), (MAX, MIN), (MIN, -1),
          (-5, MAX), (3, -8), (-11, 0), (-12, -11)]


@pytest.mark.parametrize("name", ["GETRANGE", "SUBSTR"])
def test_getrange_matches_redis(server: ServerProcess, redis_ref: ServerProcess,
                                name: str) -> None:
    commands: list[Command] = [("SET", "k", "Hello World"), ("SET", "n", "12345"),
                               ("SET", "e", ""), ("XADD", "st", "1-1", "f", "v")]
    for key in ("k", "n", "e", "nokey"):
        commands += [(name, key, start, end) for start, end in RANGES]
    commands += [(name, "st", 0, 1), (name, "k", "a", 1), (name, "k", 0, "1.5"),
                 (name, "nokey", "x", 0), (name, "st", "x", 0), (name, "k", "+1", 2),
                 (name, "k", 0), (name, "k", 0, 1, 2)]
    assert_same(server, redis_ref, commands)


MULTI: list[Command] = [
    ("MSET", "a", "1", "b", "2"), ("MGET", "a", "b", "nokey", "a"),
    ("XADD", "st", "1-1", "f", "v"), ("MGET", "st", "a"), ("MGET", "nokey"),
    ("MSET", "a"), ("MSET", "a", "1", "b"), ("MSETNX", "a", "1", "c"), ("MSETNX", "c"),
    ("MGET",),
    ("MSETNX", "c", "3", "a", "x"), ("MGET", "a", "c"),  # all or nothing
    ("MSETNX", "c", "3", "d", "4"), ("MGET", "c", "d"),
    ("MSETNX", "e", "1", "e", "2"), ("GET", "e"),
    ("MSET", "st", "now a string", "a", "A", "a", "AA"), ("TYPE", "st"), ("MGET", "st", "a"),
    ("SET", "t", "v", "EX", "100"), ("MSET", "t", "w"), ("TTL", "t"),
    ("MSETNX", "st", "x", "f", "y"), ("EXISTS", "f"),
]


@pytest.mark.parametrize("protocol", [2, 3])
def test_mget_mset_msetnx_match_redis(server: ServerProcess, redis_ref: ServerProcess,
                                      protocol: int) -> None:
    assert_same(server, redis_ref, MULTI, protocol)


SETS: list[Command] = [
    ("SETNX", "k", "v"), ("SETNX", "k", "v2"), ("GET", "k"), ("SETNX", "k"),
    ("XADD", "st", "1-1", "f", "v"), ("SETNX", "st", "x"), ("TYPE", "st"),
    *[(name, "k", arg, "v") for name in ("SETEX", "PSETEX")
      for arg in ("0", "-1", "abc", "1.5", "+5", MAX, MIN, "9223372036854775", "")],
    ("SETEX", "k", "100", "v3"), ("GET", "k"), ("TTL", "k"),
    ("PSETEX", "k", "200000", "v4"), ("GET", "k"), ("TTL", "k"),
    ("SETEX", "st", "100", "s"), ("TYPE", "st"), ("TTL", "st"),
    ("SETEX", "k", "100"), ("PSETEX", "k"),
    ("SET", "g", "old", "EX", "100"), ("GETSET", "g", "new"), ("TTL", "g"), ("GET", "g"),
    ("GETSET", "nokey", "x"), ("GET", "nokey"), ("XADD", "st2", "1-1", "f", "v"),
    ("GETSET", "st2", "x"), ("TYPE", "st2"), ("GETSET", "g"),
    ("GETDEL", "g"), ("GETDEL", "g"), ("EXISTS", "g"), ("GETDEL", "st2"), ("EXISTS", "st2"),
    ("GETDEL",), ("GETDEL", "a", "b"),
]


@pytest.mark.parametrize("protocol", [2, 3])
def test_setnx_setex_getset_getdel_match_redis(server: ServerProcess, redis_ref: ServerProcess,
                                               protocol: int) -> None:
    assert_same(server, redis_ref, SETS, protocol)


def _getex_script() -> list[Command]:
    later = str(int(time.time()) + 1000)
    return [
        ("SET", "k", "v"), ("GETEX", "k"), ("TTL", "k"), ("GETEX", "k", "EX", "100"),
        ("TTL", "k"), ("GETEX", "k", "PERSIST"), ("TTL", "k"), ("GETEX", "k", "PERSIST"),
        ("GETEX", "k", "PX", "200000"), ("TTL", "k"), ("GETEX", "k", "EXAT", later),
        ("EXPIRETIME", "k"), ("GETEX", "k", "PXAT", later + "000"), ("EXPIRETIME", "k"),
        ("GETEX", "k", "EX", "10", "EX", "20"), ("TTL", "k"),
        ("GETEX", "k", "PERSIST", "PERSIST"), ("TTL", "k"),
        *[("GETEX", "k", *opts) for opts in (
            ("EX", "10", "PX", "10"), ("EX",), ("KEEPTTL",), ("NX",), ("GET",),
            ("PERSIST", "EX", "10"), ("EX", "10", "PERSIST"), ("EXAT", "1", "PXAT", "1"),
            ("FOO",), ("EX", "0"), ("EX", "-1"), ("PX", "0"), ("EXAT", "0"), ("PXAT", "-5"),
            ("EX", "abc"), ("EX", MAX), ("PX", MAX), ("EXAT", MAX), ("PXAT", MAX),
            ("EX", "9223372036854775"), ("PX", "1.5"))],
        ("TTL", "k"),
        ("GETEX", "nokey", "EX", "abc"), ("GETEX", "nokey", "EX", "10", "PX", "1"),
        ("XADD", "st", "1-1", "f", "v"), ("GETEX", "st"), ("GETEX", "st", "EX", "abc"),
        ("GETEX", "k", "PXAT", "1"), ("EXISTS", "k"),
        ("SET", "k", "v"), ("GETEX", "k", "EXAT", "1"), ("EXISTS", "k"), ("GETEX",),
    ]


@pytest.mark.parametrize("protocol", [2, 3])
def test_getex_matches_redis(server: ServerProcess, redis_ref: ServerProcess,
                             protocol: int) -> None:
    assert_same(server, redis_ref, _getex_script(), protocol)


def test_in_place_writes_keep_the_ttl(server: ServerProcess, redis_ref: ServerProcess) -> None:
    commands: list[Command] = [("SET", "k", "1", "EX", "100")]
    for command in (("INCR", "k"), ("DECRBY", "k", "3"), ("APPEND", "k", "0"),
                    ("SETRANGE", "k", "0", "7"), ("GETEX", "k"), ("GETRANGE", "k", 0, 1),
                    ("MGET", "k"), ("SETNX", "k", "x")):
        commands += [command, ("TTL", "k")]
    commands += [("GETSET", "k", "2"), ("TTL", "k"), ("SETEX", "k", "50", "3"), ("TTL", "k"),
                 ("MSETNX", "k", "4"), ("TTL", "k"), ("MSET", "k", "5"), ("TTL", "k")]
    assert_same(server, redis_ref, commands)


def test_expired_keys_count_as_missing(server: ServerProcess, redis_ref: ServerProcess) -> None:
    def scenario(target: ServerProcess) -> list[bytes]:
        conn = Conn(target)
        try:
            conn.call("FLUSHALL")
            conn.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
            for key in ("a", "b", "c", "d", "e", "f"):
                conn.call("SET", key, "5", "PX", "1")
            time.sleep(0.05)
            return [conn.call(*c) for c in (
                ("INCR", "a"), ("APPEND", "b", "x"), ("SETRANGE", "c", "2", "x"),
                ("SETNX", "d", "y"), ("MSETNX", "e", "z"), ("GETSET", "f", "w"),
                ("MGET", "a", "b", "c", "d", "e", "f"), ("TTL", "a"))]
        finally:
            conn.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
            conn.close()

    assert scenario(server) == scenario(redis_ref)


def test_proto_max_bulk_len_limits_the_result(server: ServerProcess,
                                              redis_ref: ServerProcess) -> None:
    limit = 1024 * 1024
    commands: list[Command] = [
        ("CONFIG", "SET", "proto-max-bulk-len", str(limit)),
        ("SETRANGE", "k", str(limit - 1), "x"), ("STRLEN", "k"),
        ("SETRANGE", "k", str(limit), "x"), ("SETRANGE", "k", str(limit - 1), "xy"),
        ("APPEND", "k", "y"), ("STRLEN", "k"), ("SET", "a", "abc"),
        ("SETRANGE", "a", str(limit - 2), "xy"), ("SETRANGE", "a", str(limit - 2), "xyz"),
        ("APPEND", "a", "x" * (limit - 3)), ("APPEND", "a", "x"), ("STRLEN", "a"),
        ("SETRANGE", "n", str(limit), "x"), ("EXISTS", "n"),
        ("CONFIG", "SET", "proto-max-bulk-len", str(512 * 1024 * 1024)),
    ]
    assert_same(server, redis_ref, commands)


# -- keyspace events ----------------------------------------------------------------------------
EVENTS: list[tuple[object, ...]] = [
    ("SETNX", "k", "v"), ("SETNX", "k", "v"),  # refused: no event
    ("SETEX", "k", "100", "v"), ("PSETEX", "p", "100000", "v"),
    ("GETSET", "k", "w"), ("GETSET", "g", "w"),  # (keymiss, then new and set)
    ("GETDEL", "g"), ("GETDEL", "g"),
    ("GETEX", "k", "EX", "50"), ("GETEX", "k", "PERSIST"), ("GETEX", "k", "PERSIST"),
    ("GETEX", "k"), ("GETEX", "k", "PXAT", "1"), ("GETEX", "nokey", "EX", "5"),
    ("INCR", "n"), ("INCRBY", "n", "5"), ("DECR", "n"), ("DECRBY", "n", "2"),
    ("INCR", "k2"), ("SET", "bad", "x"), ("INCR", "bad"),  # (an error: no event)
    ("APPEND", "a", "x"), ("APPEND", "a", "y"), ("APPEND", "a", ""),
    ("SETRANGE", "a", "1", "z"), ("SETRANGE", "a", "1", ""), ("SETRANGE", "r", "3", "z"),
    ("SETRANGE", "r0", "0", ""),
    ("MSET", "m1", "1", "m2", "2", "m1", "3"), ("MSETNX", "m1", "1", "m3", "3"),
    ("MSETNX", "m3", "1", "m4", "2"),
    ("MGET", "m1", "nokey", "nokey2"), ("GETRANGE", "nokey", "0", "1"),
    ("GETRANGE", "m1", "0", "1"), ("SUBSTR", "nokey", "0", "1"),
    ("XADD", "st", "1-1", "f", "v"), ("INCR", "st"), ("APPEND", "st", "x"),
    ("MSET", "st", "x"), ("SET", "e", "1", "PX", "1"), ("INCR", "e"),  # expired, new, incrby
]


def test_events_match_redis(server: ServerProcess, redis_ref: ServerProcess) -> None:
    ours = events_of(server, "KEAmn", EVENTS, pause_before=("INCR",))
    assert ours == events_of(redis_ref, "KEAmn", EVENTS, pause_before=("INCR",))
    assert (b"__keyevent@0__:incrby", b"n") in ours
    assert (b"__keyevent@0__:setrange", b"r") in ours


@pytest.mark.skipif(TARGET == "redis", reason="Redis 8.2's classes o and c (Debian's is 7.0)")
def test_overwritten_events_of_string_commands(server: ServerProcess) -> None:
    script: list[tuple[object, ...]] = [
        ("SET", "k", "1"), ("INCR", "k"), ("APPEND", "k", "2"), ("SETRANGE", "k", "0", "3"),
        ("XADD", "st", "1-1", "f", "v"), ("MSET", "k", "a", "st", "b", "new", "c"),
        ("GETSET", "k", "z"), ("SETEX", "k", "10", "v"), ("PSETEX", "new", "10000", "v"),
        ("SETNX", "k", "v"), ("MSETNX", "k", "v"), ("GETEX", "k", "EX", "5"),
    ]
    channel = b"__keyevent@0__:"
    events = [(channel_name[len(channel):], key)
              for channel_name, key in events_of(server, "Eoc", script)]
    assert events == [
        (b"overwritten", b"k"), (b"overwritten", b"st"), (b"type_changed", b"st"),
        (b"overwritten", b"k"), (b"overwritten", b"k"), (b"overwritten", b"new"),
    ]
    both = events_of(server, "E$oc", script[4:8])  # (from a flushed server: k is new)
    assert [(c[len(channel):], k) for c, k in both] == [
        (b"set", b"k"), (b"overwritten", b"st"),
        (b"type_changed", b"st"), (b"set", b"st"), (b"set", b"new"),
        (b"overwritten", b"k"), (b"set", b"k"), (b"overwritten", b"k"), (b"set", b"k")]


# -- client-side caching ------------------------------------------------------------------------
@pytest.mark.skipif(TARGET == "redis", reason="compared as RESP3 pushes on ours")
def test_writes_invalidate_tracked_keys(server: ServerProcess) -> None:
    conn = Conn(server)
    writer = redis.Redis(host=server.host, port=server.port)
    try:
        writer.flushall()
        writer.set("k", "1", ex=100)
        conn.call("HELLO", "3")
        conn.call("CLIENT", "TRACKING", "ON")
        writes = [("INCR", "k"), ("APPEND", "k", "x"), ("SETRANGE", "k", "0", "9"),
                  ("GETEX", "k", "EX", "50"), ("GETEX", "k", "PERSIST"), ("GETSET", "k", "2"),
                  ("MSET", "k", "3"), ("SETEX", "k", "10", "4"), ("GETDEL", "k"),
                  ("SETNX", "k", "5")]
        for write in writes:
            assert conn.call("MGET", "k").startswith(b"*1\r\n")  # tracked by the read
            writer.execute_command(*write)
            push = conn.read()
            assert push == b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n", write
    finally:
        writer.close()
        conn.close()


# -- AOF ----------------------------------------------------------------------------------------
def _state(r: redis.Redis, keys: list[str]) -> list[object]:
    return [(key, r.type(key), r.get(key) if r.type(key) == b"string" else None,
             r.pexpiretime(key), r.object("ENCODING", key) if r.exists(key) else None)
            for key in keys]


@pytest.mark.skipif(TARGET == "redis", reason="xstreamd's AOF")
def test_aof_replay_rebuilds_the_same_strings(tmp_path) -> None:
    workdir = str(tmp_path)
    keys = [f"k{i}" for i in range(16)]
    later = int(time.time() * 1000) + 500_000
    with started(workdir, "--appendonly", "yes") as proc:
        r = connect(proc)
        r.incr("k0")
        r.incrby("k0", 41)
        r.set("k1", MAX)
        r.decrby("k1", 7)
        r.decr("k1")
        r.set("k2", "v", ex=300)
        r.append("k2", "-tail")
        r.setrange("k2", 10, "xyz")
        r.setrange("k3", 2, "ab")
        r.mset({"k4": "a", "k5": "b"})
        r.msetnx({"k5": "x", "k6": "y"})
        r.msetnx({"k6": "y", "k7": "z"})
        r.setnx("k8", "first")
        r.setnx("k8", "second")
        r.execute_command("SETEX", "k9", 400, "ex")
        r.execute_command("PSETEX", "k10", 450_000, "px")
        r.set("k11", "old", ex=100)
        r.getset("k11", "new")
        r.set("k12", "gone")
        r.getdel("k12")
        r.set("k13", "a")
        r.getex("k13", ex=200)
        r.set("k14", "b", ex=100)
        r.getex("k14", persist=True)
        r.set("k15", "c")
        r.getex("k15", pxat=1)  # a time past: deleted
        r.set("k16", "d")
        r.getex("k16", pxat=later)
        keys.append("k16")
        before = _state(r, keys)
        with open(os.path.join(workdir, "appendonlydir", "appendonly.aof.1.incr.aof"),
                  "rb") as fh:
            written = fh.read()
    for relative in (b"SETEX", b"PSETEX", b"GETEX", b"GETSET", b"GETDEL", b"EXPIRE\r\n"):
        assert relative not in written
    assert b"PXAT" in written and b"PEXPIREAT" in written and b"PERSIST" in written
    with started(workdir, "--appendonly", "yes") as proc:
        assert _state(connect(proc), keys) == before
    assert before[0][2] == b"42" and before[1][2] == b"9223372036854775799"
    assert before[2][2] == b"v-tail\x00\x00\x00\x00xyz" and before[2][3] > 0
    assert before[15][1] == b"none" and before[13][3] > 0 and before[14][3] == -1
