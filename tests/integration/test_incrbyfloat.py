"""INCRBYFLOAT against Debian's redis-server (7.0.15, built for x86-64: 80-bit long double):
the exact bytes of every reply (sums, rounding, formatting, parse errors, overflow, exponents
at the edges of the long double range), TTLs, OBJECT ENCODING, keyspace events, WATCH, and
the AOF, where it is written as SET key <result> KEEPTTL.

t_string.c's incrbyfloatCommand, string2ld and ld2string are the same in 7.0 and 8.4 (8.x
replaces the value with dbReplaceValue, which fires no 8.2 overwritten event: checked on ours).
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterator

import pytest
import redis

from tests.helpers import TARGET, ServerProcess
from tests.integration.test_keyspace_events import events_of
from tests.integration.test_persistence_support import connect, started
from tests.integration.test_strings import Command, assert_same
from tests.resp import Conn

LD_MAX = "1.18973149535723176502e4932"  # the largest long double (rounded to 21 digits)
LD_TINY = "3.6451995318824746025e-4951"  # the smallest subnormal


def pairs(*cases: tuple[str, str]) -> list[Command]:
    """SET k <value>, INCRBYFLOAT k <increment>, GET k for each case."""
    return [cmd for value, incr in cases
            for cmd in (("SET", "k", value), ("INCRBYFLOAT", "k", incr), ("GET", "k"))]


SUMS = pairs(
    ("10.5", "0.1"), ("3.0e3", "2.0e2"), ("5.0e3", "-5.0e3"), ("1.1", "2.2"), ("0.1", "0.2"),
    ("0.3", "-0.1"), ("1", "-0.9"), ("100", "-100.00000000000000001"), ("1e-17", "0"),
    ("5e-18", "0"), ("-5e-18", "0"), ("-1e-18", "0"), ("1e-18", "-2e-18"), ("-0", "-0"),
    ("-0", "0"), ("0.000003814697265625", "0"), ("0.000011444091796875", "0"),
    ("1234567890.12345678901234567", "0.00000000000000001"),
    ("12345678901234567890", "1"), ("123456789012345678901234567890", "0.5"),
    ("9223372036854775807", "1"), ("-9223372036854775808", "-1"), ("18446744073709551615", "1"),
    ("1e308", "9e308"), ("1e308", "1e308"), ("1.7976931348623157e308", "1e308"),
    ("1e4000", "0"), ("1e4000", "1e3999"), ("-1e4000", "1"), ("1e-4000", "1"),
    ("1e-4000", "-1e-4000"), ("1e-4000", "0"), (LD_MAX, "0"), (LD_MAX, "1e4913"),
    (LD_MAX, LD_MAX), (LD_MAX, "-" + LD_MAX), ("-" + LD_MAX, "-1e4932"), (LD_TINY, LD_TINY),
    ("0.1", "0x10"), ("0x1p-3", ".5"), ("5.", "+3"), ("0X1.8P1", "-0x.8"), ("1E2", "1e-2"),
    ("3.14159265358979323846264338327950288", "2.71828182845904523536028747135266249"),
    ("0.12345678901234567890123456789", "0.98765432109876543210987654321"),
    ("7", "-7.000000000000000000000000000001"), ("1", "1e-20"), ("1", "-1e-20"),
    ("0.5", "0.00000000000000000499999999999"), ("2.5", "0.000000000000000005"),
)

ERRORS: list[Command] = [
    *pairs(*[("1", bad) for bad in (
        " 1", "1 ", "  1", " 1 ", "\t1", "1\n", "abc", "", "nan", "NaN", "-nan", "inf", "-inf",
        "+Infinity", "infinit", "1e", "1e+", "e1", ".", "+", "-", "1_0", "1,5", "0x", "0x.",
        "0x1p", "1e4933", "1e-4951", "1e5000", "1e-5000", "1e99999999999999999999",
        "0e99999999999999999999", "1\x002", "1\x00", "\x001")]),
    *pairs(*[(bad, "1") for bad in (
        " 1", "1 ", "abc", "nan", "inf", "-inf", "1e", "1\x00", "1e-5000", "0x")]),
    *pairs(("inf", "-inf"), ("1", "inf"), (LD_MAX, LD_MAX)),
    ("SET", "long", "0" * 5118 + "1"), ("INCRBYFLOAT", "long", "1"),  # 5119 characters
    ("SET", "long", "0" * 5119 + "1"), ("INCRBYFLOAT", "long", "1"),  # 5120: too long
    ("INCRBYFLOAT", "long2", "0" * 5119 + "1"),
    ("INCRBYFLOAT", "new", "1" + "0" * 4500 + "e-4500"), ("GET", "new"),
    ("XADD", "st", "1-1", "f", "v"), ("INCRBYFLOAT", "st", "1"), ("INCRBYFLOAT", "st", "abc"),
    ("TYPE", "st"),
    ("INCRBYFLOAT", "missing", "1.5"), ("GET", "missing"), ("INCRBYFLOAT", "missing2", "abc"),
    ("EXISTS", "missing2"),
    ("INCRBYFLOAT", "k"), ("INCRBYFLOAT", "k", "1", "2"), ("INCRBYFLOAT",),
]

ENCODINGS: list[Command] = [
    ("INCRBYFLOAT", "e", "3"), ("OBJECT", "ENCODING", "e"), ("OBJECT", "REFCOUNT", "e"),
    ("INCR", "e"), ("OBJECT", "ENCODING", "e"), ("OBJECT", "REFCOUNT", "e"),
    ("INCRBYFLOAT", "e", "0.5"), ("OBJECT", "ENCODING", "e"),
    ("INCRBYFLOAT", "e", "1e40"), ("OBJECT", "ENCODING", "e"), ("STRLEN", "e"),  # 45: raw
    ("INCRBYFLOAT", "e", "-1e40"), ("OBJECT", "ENCODING", "e"),
    ("APPEND", "e", "0"), ("OBJECT", "ENCODING", "e"), ("INCRBYFLOAT", "e", "1"),
    ("OBJECT", "ENCODING", "e"), ("SET", "i", "12"), ("OBJECT", "ENCODING", "i"),
    ("INCRBYFLOAT", "i", "0"), ("OBJECT", "ENCODING", "i"), ("GET", "i"),
]


def test_sums_match_redis(server: ServerProcess, redis_ref: ServerProcess) -> None:
    replies = assert_same(server, redis_ref, SUMS)
    assert b"$4\r\n10.6\r\n" in replies and b"$1\r\n0\r\n" in replies


def test_errors_match_redis(server: ServerProcess, redis_ref: ServerProcess) -> None:
    replies = assert_same(server, redis_ref, ERRORS)
    assert b"-ERR value is not a valid float\r\n" in replies
    assert b"-ERR increment would produce NaN or Infinity\r\n" in replies


@pytest.mark.parametrize("protocol", [2, 3])
def test_encodings_and_resp3_match_redis(server: ServerProcess, redis_ref: ServerProcess,
                                         protocol: int) -> None:
    replies = assert_same(server, redis_ref, ENCODINGS, protocol)
    assert replies[1] == b"$6\r\nembstr\r\n"  # never int-encoded, even "3"


def _random_number(rng: random.Random) -> str:
    """A decimal of 1 to 25 significant digits, of a magnitude from 1e-30 to 1e30 mostly,
    sometimes up to the edges of the long double range."""
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 25)))
    point = rng.randint(0, len(digits))
    text = f"{digits[:point]}.{digits[point:]}" if rng.random() < 0.7 else digits
    text = text if text != "." else "0"
    exp = rng.choice([0, 0, rng.randint(-30, 30), rng.randint(-400, 400),
                      rng.randint(-4900, 4900)])
    if exp:
        text += f"e{exp}"
    return rng.choice(["", "", "-"]) + text


def test_random_sums_match_redis(server: ServerProcess, redis_ref: ServerProcess) -> None:
    rng = random.Random(20240611)
    commands: list[Command] = []
    for _ in range(400):
        value, incr = _random_number(rng), _random_number(rng)
        if rng.random() < 0.15:  # cancellation: the sum of nearly opposite numbers
            incr = value[1:] if value.startswith("-") else "-" + value
            incr = incr[:-1] + rng.choice("0123456789") if incr[-1].isdigit() else incr
        commands += [("SET", "k", value), ("INCRBYFLOAT", "k", incr),
                     ("INCRBYFLOAT", "acc", incr)]  # acc: each result parsed again
    assert_same(server, redis_ref, commands)


def test_ttl_is_kept(server: ServerProcess, redis_ref: ServerProcess) -> None:
    commands: list[Command] = [
        ("SET", "k", "1", "EX", "100"), ("INCRBYFLOAT", "k", "1.5"), ("TTL", "k"),
        ("INCRBYFLOAT", "k", "abc"), ("TTL", "k"), ("GET", "k"),
        ("INCRBYFLOAT", "n", "1"), ("TTL", "n"),
    ]
    assert_same(server, redis_ref, commands)


def test_transactions_match_redis(server: ServerProcess, redis_ref: ServerProcess) -> None:
    commands: list[Command] = [
        ("MULTI",), ("INCRBYFLOAT", "k", "1.5"), ("INCRBYFLOAT", "k", "abc"),
        ("INCRBYFLOAT", "k", "1e-1"), ("INCRBYFLOAT", "k"), ("EXEC",),
        ("MULTI",), ("INCRBYFLOAT", "k", "1.5"), ("INCRBYFLOAT", "k", "abc"),
        ("INCRBYFLOAT", "k", LD_MAX), ("INCRBYFLOAT", "k", LD_MAX), ("EXEC",), ("GET", "k"),
    ]
    assert_same(server, redis_ref, commands)


def test_watch_sees_the_change(server: ServerProcess, redis_ref: ServerProcess) -> None:
    def scenario(target: ServerProcess) -> list[bytes]:
        watcher, writer = Conn(target), Conn(target)
        try:
            writer.call("FLUSHALL")
            replies = [watcher.call("WATCH", "k", "e"), writer.call("INCRBYFLOAT", "k", "1"),
                       watcher.call("MULTI"), watcher.call("GET", "k"), watcher.call("EXEC"),
                       watcher.call("WATCH", "e"), writer.call("INCRBYFLOAT", "e", "x"),
                       watcher.call("MULTI"), watcher.call("GET", "k"), watcher.call("EXEC")]
            return replies  # a failed INCRBYFLOAT touches nothing: the second EXEC runs
        finally:
            watcher.close()
            writer.close()

    assert scenario(server) == scenario(redis_ref)


EVENTS: list[tuple[object, ...]] = [
    ("INCRBYFLOAT", "k", "1.5"), ("INCRBYFLOAT", "k", "2"), ("INCRBYFLOAT", "k", "abc"),
    ("SET", "s", "x"), ("INCRBYFLOAT", "s", "1"), ("XADD", "st", "1-1", "f", "v"),
    ("INCRBYFLOAT", "st", "1"), ("INCRBYFLOAT", "k", LD_MAX), ("INCRBYFLOAT", "k", LD_MAX),
]


def test_events_match_redis(server: ServerProcess, redis_ref: ServerProcess) -> None:
    ours = events_of(server, "KEAmn", EVENTS)
    assert ours == events_of(redis_ref, "KEAmn", EVENTS)
    assert (b"__keyevent@0__:incrbyfloat", b"k") in ours


@pytest.mark.skipif(TARGET == "redis", reason="Redis 8.2's classes o and c (Debian's is 7.0)")
def test_no_overwritten_event(server: ServerProcess) -> None:
    script: list[tuple[object, ...]] = [("SET", "k", "1"), ("INCRBYFLOAT", "k", "1"),
                                        ("INCRBYFLOAT", "new", "1")]
    assert events_of(server, "Eoc", script) == []


@pytest.mark.skipif(TARGET == "redis", reason="compared as RESP3 pushes on ours")
def test_invalidates_tracked_keys(server: ServerProcess) -> None:
    conn = Conn(server)
    writer = redis.Redis(host=server.host, port=server.port)
    try:
        writer.flushall()
        writer.set("k", "1")
        conn.call("HELLO", "3")
        conn.call("CLIENT", "TRACKING", "ON")
        assert conn.call("GET", "k") == b"$1\r\n1\r\n"
        assert writer.incrbyfloat("k", 0.5) == 1.5
        assert conn.read() == b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n"
    finally:
        writer.close()
        conn.close()


# -- AOF ----------------------------------------------------------------------------------------
AOF_SCRIPT: list[tuple[str, ...]] = [
    ("INCRBYFLOAT", "a", "10.5"), ("INCRBYFLOAT", "a", "0.1"), ("INCRBYFLOAT", "a", "abc"),
    ("SET", "b", "3"), ("INCRBYFLOAT", "b", "-3"), ("INCRBYFLOAT", "c", "1e4000"),
    ("INCRBYFLOAT", "c", LD_MAX), ("INCRBYFLOAT", "d", "1e-4000"), ("INCRBYFLOAT", "e", "0x10"),
]


@contextlib.contextmanager
def _redis_with_aof(workdir: str) -> Iterator[ServerProcess]:
    proc = ServerProcess("redis", extra_args=["--appendonly", "yes"], workdir=workdir).start()
    try:
        yield proc
    finally:
        proc.stop()


def _run_and_read_aof(proc: ServerProcess, workdir: str) -> bytes:
    client = connect(proc)
    for command in AOF_SCRIPT:
        with contextlib.suppress(redis.ResponseError):
            client.execute_command(*command)
    client.close()
    with open(os.path.join(workdir, "appendonlydir", "appendonly.aof.1.incr.aof"), "rb") as fh:
        return fh.read()


@pytest.mark.skipif(TARGET == "redis", reason="xstreamd's AOF")
def test_aof_gets_a_set_keepttl_as_redis_writes_it(tmp_path, redis_ref: ServerProcess) -> None:
    ours_dir, redis_dir = str(tmp_path / "ours"), str(tmp_path / "redis")
    os.makedirs(ours_dir)
    os.makedirs(redis_dir)
    with started(ours_dir, "--appendonly", "yes") as proc:
        ours = _run_and_read_aof(proc, ours_dir)
        r = connect(proc)
        r.expire("a", 300)
        r.incrbyfloat("a", 1)
        before = [(key, r.get(key), r.pexpiretime(key)) for key in "abcde"]
        r.close()
    with _redis_with_aof(redis_dir) as proc:
        assert ours == _run_and_read_aof(proc, redis_dir)
    assert b"*4\r\n$3\r\nSET\r\n$1\r\na\r\n$4\r\n10.6\r\n$7\r\nKEEPTTL\r\n" in ours
    assert b"INCRBYFLOAT" not in ours
    with started(ours_dir, "--appendonly", "yes") as proc:  # the replay keeps the TTL
        r = connect(proc)
        after = [(key, r.get(key), r.pexpiretime(key)) for key in "abcde"]
        r.close()
    assert after == before and before[0][1] == b"11.6" and before[0][2] > 0
