"""The foundation commands, sent identically to xstreamd and to Debian's redis-server; replies
are compared byte for byte (RESP2 and RESP3). Only what Redis 7.0 and 8.4 agree on is sent:
features added after 7.0 are covered by the integration tests instead.
"""

from __future__ import annotations

import itertools
import random
import socket
from collections.abc import Iterator

import pytest

from tests.helpers import ServerProcess
from tests.resp import encode

pytestmark = pytest.mark.compat

Reply = tuple[bytes, object]


class Conn:
    """A raw client that parses replies into (type byte, payload) trees, so that replies whose
    order Redis leaves open (KEYS) can be compared as sets."""

    def __init__(self, server: ServerProcess) -> None:
        self.sock = socket.create_connection((server.host, server.port), timeout=10)
        self.file = self.sock.makefile("rb")

    def call(self, *args: str | bytes | int) -> Reply:
        self.sock.sendall(encode(*args))
        return self.read()

    def read(self) -> Reply:
        line = self.file.readline()
        assert line, "connection closed"
        kind, rest = line[:1], line[1:-2]
        if kind in b"$=!" and rest != b"-1":
            return kind, self.file.read(int(rest) + 2)[:-2]
        if kind in b"*%~>|" and rest != b"-1":
            n = int(rest) * (2 if kind in b"%|" else 1)
            return kind, tuple(self.read() for _ in range(n))
        return kind, rest

    def close(self) -> None:
        self.file.close()
        self.sock.close()


UNORDERED = {b"keys"}


def normalize(args: tuple[str | bytes | int, ...], reply: Reply,
              queued: list[tuple[str | bytes | int, ...]] | None = None) -> Reply:
    """The reply with the parts whose order Redis leaves open sorted: a KEYS reply, also as
    an element of EXEC's reply (`queued`: the commands EXEC ran, in order)."""
    name = str(args[0]).lower().encode()
    kind, payload = reply
    if name in UNORDERED and isinstance(payload, tuple):
        return kind, tuple(sorted(payload))  # type: ignore[type-var]
    if name == b"exec" and queued is not None and isinstance(payload, tuple):
        return kind, tuple(normalize(cmd, one) for cmd, one in zip(queued, payload, strict=True))
    return reply


@pytest.fixture(scope="module")
def ours() -> Iterator[ServerProcess]:
    proc = ServerProcess("xstreamd", extra_args=["--appendonly", "no"]).start()
    yield proc
    proc.stop()


class Pair:
    def __init__(self, ours: ServerProcess, ref: ServerProcess, protocol: int) -> None:
        self.ours = Conn(ours)
        self.ref = Conn(ref)
        self.protocol = protocol
        self.queued: list[tuple[str | bytes | int, ...]] | None = None  # inside MULTI
        self.ours.call("FLUSHALL")
        self.ref.call("FLUSHALL")
        self.hello()

    def hello(self) -> None:
        """Both connections to the pair's protocol (the HELLO replies differ in version)."""
        self.ours.call("HELLO", self.protocol)
        self.ref.call("HELLO", self.protocol)

    def same(self, *args: str | bytes | int) -> Reply:
        mine = normalize(args, self.ours.call(*args), self.queued)
        theirs = normalize(args, self.ref.call(*args), self.queued)
        assert mine == theirs, f"{args!r}: redis {theirs!r} != ours {mine!r}"
        self._track_multi(args, mine)
        return mine

    def _track_multi(self, args: tuple[str | bytes | int, ...], reply: Reply) -> None:
        """Keep the commands queued since MULTI, for normalizing EXEC's reply."""
        name = str(args[0]).upper()
        if name in ("EXEC", "DISCARD", "RESET"):
            self.queued = None
        elif name == "MULTI" and reply == (b"+", b"OK"):
            self.queued = []
        elif self.queued is not None and reply == (b"+", b"QUEUED"):
            self.queued.append(args)

    def close(self) -> None:
        self.ours.close()
        self.ref.close()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def pair(request: pytest.FixtureRequest, ours: ServerProcess,
         redis_ref: ServerProcess) -> Iterator[Pair]:
    p = Pair(ours, redis_ref, request.param)
    yield p
    p.close()


SCRIPTS: dict[str, list[tuple[str, ...]]] = {
    "connection": [
        ("PING",), ("PING", "hi"), ("PING", "a", "b"), ("ECHO", "x"), ("ECHO",),
        ("NOSUCH", "a", "b"), ("nosuch",), ("SELECT", "3"), ("SELECT", "16"), ("SELECT", "x"),
        ("SELECT", "0"), ("HELLO", "4"), ("HELLO", "x"), ("HELLO", "3", "foo"),
        ("HELLO", "2", "SETNAME", "a b"), ("AUTH", "pw"), ("AUTH", "default", "x"),
        ("AUTH", "nobody", "x"), ("AUTH", "a", "b", "c"), ("CLIENT", "GETNAME"),
        ("CLIENT", "SETNAME", "n1"), ("CLIENT", "GETNAME"), ("CLIENT", "SETNAME", "bad name"),
        ("CLIENT", "SETNAME", ""), ("CLIENT", "GETNAME"), ("CLIENT", "NOPE"), ("CLIENT",),
        ("CLIENT", "KILL", "1.2.3.4:5"), ("CLIENT", "KILL", "ID", "0"),
        ("CLIENT", "KILL", "TYPE", "x"), ("CLIENT", "KILL", "SKIPME", "x"),
        ("CLIENT", "KILL", "ID", "99999"), ("CLIENT", "LIST", "TYPE", "pubsub"),
        ("CLIENT", "LIST", "TYPE", "x"), ("CLIENT", "LIST", "ID", "x"), ("CLIENT", "LIST", "x"),
        ("CLIENT", "LIST", "ID", "99999"), ("CLIENT", "NO-EVICT", "on"),
        ("CLIENT", "NO-EVICT", "x"), ("CLIENT", "NO-EVICT", "off"), ("CLIENT", "UNBLOCK", "x"),
        ("CLIENT", "UNBLOCK", "99999"), ("ACL", "WHOAMI"), ("ACL", "NOPE"),
        ("ACL", "HELP", "x"), ("MEMORY", "HELP", "x"), ("MEMORY", "NOPE"), ("ACL",),
        ("CLIENT", "KILL", "USER", "nouser"),
        ("CLIENT", "KILL", "USER", "default", "SKIPME", "yes"),
        # Client bytes in error texts: raw, up to a NUL, cut at 128 bytes.
        ("NOSUCH", b"a\xffb"), ("NOSUCH", b"a\x00b", "c"), ("NOSUCH", "\u00e9" * 100, "b"),
        (b"NO\xffSUCH\x00x",), ("XINFO", "F" * 200), ("OBJECT", b"F\xff" * 100),
        ("XINFO", "CONSUMERS", "nokey", b"g\x00x"),
    ],
    "keyspace": [
        ("SET", "a", "1"), ("SET", "b", "hello"), ("SET", "c", "x" * 50),
        ("EXISTS", "a", "b", "z", "a"), ("TYPE", "a"), ("TYPE", "z"), ("DBSIZE",),
        ("KEYS", "*"), ("KEYS", "[ab]"), ("KEYS", "?"), ("KEYS", "\\*"),
        ("OBJECT", "ENCODING", "a"), ("OBJECT", "ENCODING", "b"), ("OBJECT", "ENCODING", "c"),
        ("OBJECT", "ENCODING", "z"), ("OBJECT", "NOPE", "a"), ("RENAME", "z", "y"),
        ("RENAME", "a", "a"), ("RENAMENX", "a", "b"), ("RENAMENX", "a", "d"), ("RENAME", "d", "b"),
        ("GET", "b"), ("MOVE", "b", "0"), ("MOVE", "b", "x"), ("MOVE", "b", "99"),
        ("MOVE", "b", "1"), ("MOVE", "z", "1"), ("SWAPDB", "0", "1"), ("GET", "b"),
        ("SWAPDB", "0", "x"), ("SWAPDB", "x", "0"), ("SWAPDB", "0", "99"), ("DEL", "b", "c", "z"),
        ("UNLINK", "nope"), ("DBSIZE",), ("SCAN", "x"), ("SCAN", "0", "COUNT", "0"),
        ("SCAN", "0", "MATCH"), ("SCAN", "0", "FOO", "1"), ("FLUSHDB", "x"), ("FLUSHALL", "x"),
        ("FLUSHDB", "ASYNC"), ("DBSIZE",), ("RANDOMKEY",),
        # The empty key: only KEYS * (a shortcut) lists it; no other pattern matches it.
        ("SET", "", "e"), ("SET", "k", "v"), ("KEYS", "*"), ("KEYS", "**"), ("KEYS", "?*"),
        ("KEYS", ""), ("SCAN", "+0", "MATCH", "nomatch*"), ("SCAN", "-0", "MATCH", "nomatch*"),
        ("SCAN", "18446744073709551616"), ("SCAN", "0x1"),
        # DB indexes are C ints: the int range is checked before the DB range; SWAPDB parses
        # both indexes first and has its own texts.
        ("SELECT", "2147483648"), ("SELECT", "-2147483649"), ("SELECT", "99"),
        ("SELECT", "x"), ("MOVE", "k", "2147483648"), ("MOVE", "k", "-1"),
        ("MOVE", "k", "9223372036854775807"), ("SWAPDB", "0", "2147483648"),
        ("SWAPDB", "2147483648", "0"), ("SWAPDB", "99", "abc"), ("SWAPDB", "-1", "abc"),
        ("SWAPDB", "-1", "0"), ("SWAPDB", "0", "-1"),
    ],
    "config_numbers": [
        # Integers as string2ll reads them; memory values as memtoull (no spaces or sign; no
        # digits at all is 0; up to 2^64 - 1 for maxmemory).
        ("CONFIG", "SET", "hz", "+5"), ("CONFIG", "SET", "hz", "05"),
        ("CONFIG", "SET", "hz", " 5"), ("CONFIG", "SET", "hz", "5 "),
        ("CONFIG", "SET", "hz", "-0"), ("CONFIG", "SET", "hz", "-05"),
        ("CONFIG", "SET", "hz", "18446744073709551615"), ("CONFIG", "SET", "hz", "20"),
        ("CONFIG", "GET", "hz"), ("CONFIG", "SET", "hz", "10"),
        ("CONFIG", "SET", "stream-node-max-bytes", " 5"),
        ("CONFIG", "SET", "stream-node-max-bytes", "5 "),
        ("CONFIG", "SET", "stream-node-max-bytes", "+5"),
        ("CONFIG", "SET", "stream-node-max-bytes", "-5"),
        ("CONFIG", "SET", "stream-node-max-bytes", ""), ("CONFIG", "GET", "stream-node-max-bytes"),
        ("CONFIG", "SET", "stream-node-max-bytes", "4KB"),
        ("CONFIG", "GET", "stream-node-max-bytes"),
        ("CONFIG", "SET", "stream-node-max-bytes", "4096"),
        ("CONFIG", "SET", "maxmemory", "18446744073709551615"), ("CONFIG", "GET", "maxmemory"),
        ("CONFIG", "SET", "maxmemory", "0"),
    ],
    "scan_recreated_key": [
        # A key deleted and created again (or renamed back) is listed once.
        ("SET", "k", "v"), ("SCAN", "0"), ("DEL", "k"), ("SET", "k", "v"), ("SCAN", "0"),
        ("RENAME", "k", "j"), ("SCAN", "0"), ("RENAME", "j", "k"), ("SCAN", "0"),
        ("DEL", "k"), ("XADD", "k", "1-1", "f", "v"), ("SCAN", "0"),
        ("SCAN", "0", "TYPE", "stream"),
    ],
    "expire": [
        ("SET", "k", "v"), ("TTL", "k"), ("PTTL", "nope"), ("TTL", "nope"),
        ("EXPIRE", "k", "100", "XX"), ("EXPIRE", "k", "100", "GT"), ("EXPIRE", "k", "100", "NX"),
        ("EXPIRE", "k", "200", "NX"), ("EXPIRE", "k", "200", "GT"), ("EXPIRE", "k", "150", "LT"),
        ("TTL", "k"), ("EXPIRE", "k", "10", "NX", "XX"), ("EXPIRE", "k", "10", "GT", "LT"),
        ("EXPIRE", "k", "10", "NX", "GT"), ("EXPIRE", "k", "10", "BOGUS"), ("EXPIRE", "k", "x"),
        ("EXPIRE", "k", "9223372036854775807"), ("PEXPIRE", "k", "9223372036854775807"),
        # The seconds to milliseconds overflow checks, at their edges (C division).
        ("EXPIRE", "k", "-9223372036854776"), ("EXPIRE", "k", "-9999999999999999"),
        ("EXPIRE", "k", "9223372036854776"), ("EXPIRE", "k", "9223370399119966"), ("TTL", "k"),
        ("EXPIREAT", "k", "9223372036854775807"), ("PEXPIREAT", "k", "9223372036854775807"),
        ("EXPIRE", "k", "92233720368547758"), ("PERSIST", "k"), ("PERSIST", "k"), ("TTL", "k"),
        ("EXPIRETIME", "k"), ("PEXPIRETIME", "nope"), ("EXPIREAT", "k", "4102444800"),
        ("EXPIRETIME", "k"), ("PEXPIRETIME", "k"), ("EXPIRE", "k", "-5"), ("EXISTS", "k"),
        ("SET", "k", "v", "EX", "100"), ("TTL", "k"), ("SET", "k", "w", "KEEPTTL"), ("TTL", "k"),
        ("SET", "k", "v", "EX", "0"), ("SET", "k", "v", "PX", "-1"), ("SET", "k", "v", "EX"),
        ("SET", "k", "v", "NX", "XX"), ("SET", "k", "v", "EX", "10", "PX", "10"),
        ("SET", "k", "1", "GET"), ("SET", "k", "2", "NX", "GET"), ("SET", "q", "2", "XX"),
    ],
    "transactions": [
        ("EXEC", "x"), ("EXEC",), ("DISCARD",),
        # XSETID leaves WATCHed keys untouched (the entries do not change); XADD touches them.
        ("XADD", "ws", "1-1", "a", "1"), ("WATCH", "ws"), ("XSETID", "ws", "3-1"), ("MULTI",),
        ("PING",), ("EXEC",), ("WATCH", "ws"), ("XADD", "ws", "4-1", "a", "1"), ("MULTI",),
        ("PING",), ("EXEC",), ("WATCH", "ws"), ("EXEC", "x"), ("XADD", "ws", "5-1", "a", "1"),
        ("MULTI",), ("PING",), ("EXEC",), ("MULTI",), ("MULTI",), ("SET", "a", "1"), ("GET", "a"),
        ("EXPIRE", "a", "x"), ("EXEC",), ("MULTI",), ("SET", "b", "1"), ("NOSUCH",), ("GET",),
        ("EXEC",), ("EXISTS", "b"), ("MULTI",), ("SET", "c", "1"), ("EXEC", "x"), ("DISCARD",),
        ("WATCH",), ("WATCH", "a"), ("SET", "a", "2"), ("MULTI",), ("WATCH", "a"), ("GET", "a"),
        ("EXEC",), ("WATCH", "a"), ("UNWATCH",), ("SET", "a", "3"), ("MULTI",), ("GET", "a"),
        ("EXEC",), ("MULTI",), ("SHUTDOWN",), ("EXEC",), ("MULTI",), ("MONITOR",), ("EXEC",),
    ],
    "server": [
        ("CONFIG", "GET", "maxmemory"), ("CONFIG", "GET", "MAXMEMORY"), ("CONFIG", "GET", "x"),
        ("CONFIG", "GET", "enable-debug-command"), ("DEBUG", "SLEEP", "0"),  # off by default
        ("CONFIG", "SET", "nosuch", "1"), ("CONFIG", "SET", "timeout", "x"),
        ("CONFIG", "SET", "maxmemory", "lots"), ("CONFIG", "SET", "timeout", "1", "timeout", "2"),
        ("CONFIG", "SET", "timeout", "1", "hz"), ("CONFIG", "SET", "databases", "3"),
        ("CONFIG", "SET", "maxmemory-policy", "x"), ("CONFIG", "SET", "appendfsync", "x"),
        ("CONFIG", "SET", "maxmemory", "1kb"), ("CONFIG", "GET", "maxmemory"),
        ("CONFIG", "SET", "maxmemory", "0"), ("CONFIG", "SET", "hz", "1000"),
        ("CONFIG", "GET", "hz"), ("CONFIG", "SET", "hz", "10"), ("CONFIG", "NOPE"),
        ("CONFIG", "RESETSTAT"), ("INFO", "nosuchsection"), ("TIME", "x"),
        ("SLOWLOG", "GET", "-2"), ("SLOWLOG", "GET", "x"), ("SLOWLOG", "NOPE"),
        ("SLOWLOG", "LEN", "x"), ("SHUTDOWN", "FOO"), ("SHUTDOWN", "SAVE", "NOSAVE"),
        ("SHUTDOWN", "ABORT", "NOW"), ("COMMAND", "GETKEYS", "GET", "k"),
        ("COMMAND", "GETKEYS", "SET", "k", "v", "EX", "1"), ("COMMAND", "GETKEYS", "DEL", "a", "b"),
        ("COMMAND", "GETKEYS", "NOSUCH", "a"), ("COMMAND", "GETKEYS", "PING", "x"),
        ("COMMAND", "GETKEYS", "GET", "a", "b"), ("COMMAND", "INFO", "get", "nosuch"),
        ("COMMAND", "COUNT", "x"), ("COMMAND", "NOPE"), ("COMMAND", "DOCS", "nosuch"),
        ("COMMAND", "LIST", "FILTERBY", "x", "y"), ("MEMORY", "USAGE", "nope"),
        ("MEMORY", "USAGE", "a", "SAMPLES"), ("OBJECT",), ("DEBUG",),
    ],
    "latency": [
        # With the monitor off and no events, every answer is fixed (HISTOGRAM's depend on
        # timings: covered by the integration tests).
        ("CONFIG", "SET", "latency-monitor-threshold", "0"), ("LATENCY", "RESET"),
        ("LATENCY", "HELP"), ("LATENCY", "NOPE"), ("LATENCY",), ("LATENCY", "HISTORY"),
        ("LATENCY", "HISTORY", "command"), ("LATENCY", "GRAPH", "command"),
        ("LATENCY", "LATEST"), ("LATENCY", "LATEST", "x"), ("LATENCY", "DOCTOR"),
        ("LATENCY", "RESET", "command", "fast-command"), ("LATENCY", "HELP", "x"),
        ("LATENCY", "HISTOGRAM", "nosuch", "no|such"),
        ("CONFIG", "GET", "latency-tracking"), ("CONFIG", "SET", "latency-tracking", "x"),
        ("CONFIG", "SET", "latency-tracking-info-percentiles", "101"),
        ("CONFIG", "SET", "latency-tracking-info-percentiles", "-1"),
        ("CONFIG", "SET", "latency-tracking-info-percentiles", "abc"),
        ("CONFIG", "SET", "latency-tracking-info-percentiles", "50  99"),
        ("CONFIG", "SET", "latency-tracking-info-percentiles", " 50"),
        ("CONFIG", "SET", "latency-tracking-info-percentiles", "nan"),
        ("CONFIG", "SET", "latency-tracking-info-percentiles", "inf"),
        ("CONFIG", "SET", "latency-tracking-info-percentiles", "0 100 99.99 50.5 1e1 -0"),
        ("CONFIG", "GET", "latency-tracking-info-percentiles"),
        ("CONFIG", "SET", "latency-tracking-info-percentiles", ""),
        ("CONFIG", "GET", "latency-tracking-info-percentiles"),
        ("CONFIG", "SET", "latency-tracking-info-percentiles", "50 99 99.9"),
    ],
}


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_script(pair: Pair, script: str) -> None:
    for args in SCRIPTS[script]:
        pair.same(*args)


def test_monitor_lines_match(ours: ServerProcess, redis_ref: ServerProcess) -> None:
    """The same commands give the same MONITOR lines once the time and address are cut."""
    shown = []
    for server in (ours, redis_ref):
        mon, client = Conn(server), Conn(server)
        try:
            mon.call("MONITOR")
            for args in (("SET", 'a"b', "x\n\x01\xff"), ("AUTH", "default", "pw"),
                         ("CONFIG", "GET", "hz"), ("SELECT", "2"), ("MULTI",), ("PING",),
                         ("EXEC",), ("SELECT", "0"), ("HELLO", "2", "AUTH", "default", "pw")):
                client.call(*args)
            lines = [mon.read()[1] for _ in range(8)]
            shown.append([line.split(b" ", 1)[1].split(b"] ", 1)[1] for line in lines])  # type: ignore[union-attr]
        finally:
            mon.close()
            client.close()
    assert shown[0] == shown[1]


VALUES = ["0", "1", "-1", "100", "x", "", "9223372036854775807", "12345678901234567890"]
KEYS = ["k1", "k2", "k3"]


def random_command(rng: random.Random, longer_ttls: Iterator[int]) -> tuple[str, ...]:
    """A random foundation command. EXPIRE with a condition takes a TTL longer than any set
    before (`longer_ttls` counts up from 201 s): an equal one would compare equal or greater
    by whether the millisecond turned in between, on either server."""
    k = rng.choice(KEYS)
    k2 = rng.choice(KEYS)
    v = rng.choice(VALUES)
    return rng.choice([
        ("SET", k, v), ("SET", k, v, rng.choice(["NX", "XX", "GET", "KEEPTTL"])),
        ("SET", k, v, "EX", rng.choice(["100", "0", "x"])), ("GET", k), ("DEL", k, k2),
        ("EXISTS", k, k2), ("TYPE", k), ("TTL", k), ("EXPIRE", k, rng.choice(["100", "-1", "x"])),
        ("EXPIRE", k, str(next(longer_ttls)), rng.choice(["NX", "XX", "GT", "LT"])),
        ("PERSIST", k),
        ("RENAME", k, k2), ("RENAMENX", k, k2), ("MOVE", k, rng.choice(["0", "1", "x"])),
        ("SELECT", rng.choice(["0", "1"])), ("SWAPDB", "0", "1"), ("DBSIZE",),
        ("OBJECT", "ENCODING", k), ("KEYS", rng.choice(["*", "k[12]", "?"])),
        ("FLUSHDB",) if rng.random() < 0.1 else ("PING",), ("MULTI",), ("EXEC",), ("DISCARD",),
        ("WATCH", k), ("UNWATCH",), ("ECHO", v), ("GET",), ("EXPIRE", k),
    ])


def test_random_sequences(pair: Pair) -> None:
    rng = random.Random(20261122)
    longer_ttls = itertools.count(201)
    for _ in range(40):
        pair.same("RESET")
        pair.hello()
        pair.same("FLUSHALL")
        for _ in range(40):
            pair.same(*random_command(rng, longer_ttls))
