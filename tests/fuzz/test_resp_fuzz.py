"""Random and mutated RESP thrown at a live server for a bounded time.

Each example opens a connection, sends one or more stream/connection commands encoded as RESP
multibulk or inline requests, mutated at random (bytes flipped, protocol tokens spliced in,
cut short, repeated), split at random points, then half-closes and reads until the server
closes. After every example a watchdog client must still be served; at the end a client
blocked all along must still be woken, the server's log must hold no traceback and its
resident memory must have stayed bounded.

The budget is FUZZ_SECONDS (default 20 s in all, split between three servers: hiredis reader,
pure-Python reader, and a password-protected one whose fuzz clients stay unauthenticated).
"""

from __future__ import annotations

import os
import random
import socket
import time
from collections.abc import Iterator

import hiredis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import ServerProcess

TARGET = os.environ.get("XSTREAMD_TEST_TARGET", "xstreamd")
BUDGET = float(os.environ.get("FUZZ_SECONDS", "20"))
PASSWORD = "fuzz-pass"
RSS_GROWTH_LIMIT_KIB = 150 * 1024

COMMANDS = [
    b"XADD", b"XRANGE", b"XREVRANGE", b"XREAD", b"XREADGROUP", b"XGROUP", b"XACK", b"XCLAIM",
    b"XAUTOCLAIM", b"XPENDING", b"XTRIM", b"XDEL", b"XDELEX", b"XACKDEL", b"XLEN", b"XINFO",
    b"XSETID", b"DEL", b"EXISTS", b"TYPE", b"MULTI", b"EXEC", b"DISCARD", b"WATCH", b"PING",
    b"ECHO", b"HELLO", b"SELECT", b"QUIT", b"AUTH", b"RESET", b"SET", b"GET", b"EXPIRE",
    b"OBJECT", b"MEMORY", b"COMMAND", b"CLIENT", b"SCAN", b"KEYS", b"DBSIZE", b"TIME",
]
# CLIENT and COMMAND are fuzzed only through their harmless subcommands.
SUBCOMMANDS = {
    b"XGROUP": [b"CREATE", b"SETID", b"DESTROY", b"CREATECONSUMER", b"DELCONSUMER", b"HELP"],
    b"XINFO": [b"STREAM", b"GROUPS", b"CONSUMERS", b"HELP"],
    b"OBJECT": [b"ENCODING", b"REFCOUNT", b"HELP"],
    b"MEMORY": [b"USAGE"],
    b"COMMAND": [b"INFO", b"COUNT", b"GETKEYS", b"DOCS"],
    b"CLIENT": [b"ID", b"GETNAME", b"SETNAME", b"INFO"],
}
WORDS = [
    b"s1", b"s2", b"g1", b"g2", b"c1", b"c2", b"*", b"$", b"+", b"-", b">", b"0", b"0-0",
    b"1-1", b"1-*", b"5", b"-1", b"18446744073709551615-18446744073709551615",
    b"18446744073709551616", b"9223372036854775807", b"-9223372036854775808", b"MAXLEN",
    b"MINID", b"~", b"=", b"LIMIT", b"NOMKSTREAM", b"COUNT", b"BLOCK", b"STREAMS", b"GROUP",
    b"NOACK", b"JUSTID", b"IDLE", b"TIME", b"RETRYCOUNT", b"FORCE", b"LASTID", b"MKSTREAM",
    b"ENTRIESREAD", b"KEEPREF", b"DELREF", b"ACKED", b"IDS", b"FULL", b"CLAIM", b"f", b"v",
    b"2", b"3", b"100", b"", b"1.5", b"abc", b"\x00", b"\xff\xfe",
]
TOKENS = [
    b"*", b"$", b"\r\n", b"\n", b"\r", b"\x00", b"$-1\r\n", b"*-1\r\n", b"*0\r\n", b"$0\r\n\r\n",
    b"*1048577\r\n", b"*2147483648\r\n", b"$536870913\r\n", b"$2147483648\r\n",
    b"*99999999999999999999\r\n",
    b"%2\r\n", b"~1\r\n", b"|1\r\n", b">1\r\n", b"+OK\r\n", b"-ERR x\r\n", b":1\r\n", b"(123\r\n",
    b"=5\r\ntxt:x\r\n", b"_\r\n", b"#t\r\n", b",1.5\r\n", b'"', b"'", b"\\x4", b" ", b"*3\r\n$",
    b"$3\r\nabc", b"*2\r\n$4\r\nPING\r\n",
]

arg = st.one_of(
    st.sampled_from(WORDS),
    st.integers(-(2**65), 2**65).map(lambda n: str(n).encode()),
    st.binary(max_size=40),
    st.builds(lambda n, c: c * n, st.integers(0, 70_000), st.sampled_from([b"x", b"\x00"])),
)


@st.composite
def command(draw: st.DrawFn) -> list[bytes]:
    name = draw(st.sampled_from(COMMANDS))
    argv = [draw(st.sampled_from([name, name.lower(), name.capitalize()]))]
    if name in SUBCOMMANDS:
        argv.append(draw(st.sampled_from(SUBCOMMANDS[name])))
    argv += draw(st.lists(arg, max_size=14))
    if name == b"CLIENT" and argv[1] == b"SETNAME":
        argv = argv[:3]
    return argv


def encode_multibulk(argv: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in argv)


def encode_inline(argv: list[bytes], quoted: bool) -> bytes:
    if quoted:
        parts = [b'"' + a.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"' for a in argv]
    else:
        parts = argv
    return b" ".join(parts) + b"\r\n"


@st.composite
def mutated_request(draw: st.DrawFn) -> bytes:
    cmds = draw(st.lists(command(), min_size=1, max_size=5))
    style = draw(st.sampled_from(["multibulk", "multibulk", "inline", "quoted", "mixed"]))
    pieces = []
    for argv in cmds:
        if style == "multibulk" or (style == "mixed" and draw(st.booleans())):
            pieces.append(encode_multibulk(argv))
        else:
            pieces.append(encode_inline(argv, style == "quoted"))
    data = bytearray(b"".join(pieces))
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "repeat"]))
        pos = draw(st.integers(0, len(data)))
        if kind == "flip" and data:
            pos = min(pos, len(data) - 1)
            data[pos] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[pos:pos] = draw(st.one_of(st.sampled_from(TOKENS), st.binary(max_size=8)))
        elif kind == "delete":
            del data[pos:pos + draw(st.integers(1, 16))]
        elif kind == "truncate":
            del data[pos:]
        elif kind == "repeat" and data:
            start = draw(st.integers(0, len(data) - 1))
            data[pos:pos] = data[start:start + draw(st.integers(1, 64))]
    return bytes(data)


request = st.one_of(mutated_request(), mutated_request(), st.binary(min_size=1, max_size=600))


class Fuzzer:
    """One server under fuzz, its watchdog and a client blocked for the whole run."""

    def __init__(self, proc: ServerProcess, password: str | None) -> None:
        self.proc = proc
        self.password = password
        self.watchdog = self._connect()
        self.blocked = self._connect()
        self.blocked.sendall(encode_multibulk([b"XREAD", b"BLOCK", b"0", b"STREAMS",
                                               b"watch-key", b"$"]))
        self.examples = 0
        self.rss_start = self.rss_kib()

    def _connect(self) -> socket.socket:
        sock = socket.create_connection((self.proc.host, self.proc.port), timeout=10)
        if self.password:
            assert self.call(sock, b"AUTH", self.password.encode()) == b"OK"
        return sock

    @staticmethod
    def call(sock: socket.socket, *argv: bytes) -> object:
        sock.sendall(encode_multibulk(list(argv)))
        reader = hiredis.Reader()
        while (reply := reader.gets()) is False:
            data = sock.recv(65536)
            assert data, "watchdog connection closed"
            reader.feed(data)
        return reply

    def rss_kib(self) -> int:
        assert self.proc.proc is not None
        with open(f"/proc/{self.proc.proc.pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def throw(self, data: bytes, cuts: list[int]) -> None:
        sock = socket.create_connection((self.proc.host, self.proc.port), timeout=10)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        received = b""
        try:
            start = 0
            for cut in sorted({c % (len(data) + 1) for c in cuts}) + [len(data)]:
                if cut > start:
                    sock.sendall(data[start:cut])
                    start = cut
            sock.shutdown(socket.SHUT_WR)
            # The server must close its side once it has seen our end of stream.
            sock.settimeout(5)
            while chunk := sock.recv(1 << 20):
                received += chunk
                if len(received) > 64 << 20:
                    break
        except TimeoutError:
            raise AssertionError(f"not closed after EOF: {len(data)} bytes "
                                 f"{data[:200]!r} ... got {received[:200]!r}") from None
        except OSError:
            pass  # reset, or closed (QUIT, a protocol error) while we were still sending
        finally:
            sock.close()
        check_replies(received)

    def check_health(self) -> None:
        assert self.proc.proc is not None and self.proc.proc.poll() is None, "server died"
        assert self.call(self.watchdog, b"PING") == b"PONG"
        self.examples += 1
        if self.examples % 100 == 0:
            assert self.call(self.watchdog, b"FLUSHALL") == b"OK"

    def finish(self) -> None:
        assert self.call(self.watchdog, b"FLUSHALL") == b"OK"
        # The client blocked since the start is still served.
        added = self.call(self.watchdog, b"XADD", b"watch-key", b"*", b"alive", b"1")
        reader = hiredis.Reader()
        while (reply := reader.gets()) is False:
            data = self.blocked.recv(65536)
            assert data, "the blocked client was dropped"
            reader.feed(data)
        assert reply == [[b"watch-key", [[added, [b"alive", b"1"]]]]]
        growth = self.rss_kib() - self.rss_start
        assert growth < RSS_GROWTH_LIMIT_KIB, f"RSS grew by {growth} KiB"
        log = self.proc.read_log()
        for bad in ("Traceback", "Exception in callback", "Fatal error", "Error on reading"):
            assert bad not in log, log[-4000:]


def check_replies(data: bytes) -> None:
    """Everything the server sent must be well-formed RESP (a cut-off tail aside)."""
    reader = hiredis.Reader()
    reader.feed(data)
    try:
        while reader.gets() is not False:
            pass
    except hiredis.ProtocolError as exc:  # pragma: no cover - a failure report
        raise AssertionError(f"malformed reply stream: {data[:300]!r}") from exc


CONFIGS = {
    "hiredis-reader": ({"XSTREAMD_PURE_PYTHON_READER": "0"}, None),
    "python-reader": ({"XSTREAMD_PURE_PYTHON_READER": "1"}, None),
    "unauthenticated": ({"XSTREAMD_PURE_PYTHON_READER": "0"}, PASSWORD),
}


@pytest.fixture(params=list(CONFIGS))
def fuzzer(request: pytest.FixtureRequest) -> Iterator[Fuzzer]:
    env, password = CONFIGS[request.param]
    args = ["--appendonly", "no"] if TARGET == "xstreamd" else []
    if password:
        args += ["--requirepass", password]
    proc = ServerProcess(TARGET, extra_args=args)
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        proc.start()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    try:
        yield Fuzzer(proc, password)
    finally:
        proc.stop()


def test_fuzz_resp(fuzzer: Fuzzer) -> None:
    deadline = time.monotonic() + BUDGET / len(CONFIGS)

    @settings(max_examples=60, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=request, cuts=st.lists(st.integers(0, 1 << 16), max_size=4))
    def batch(data: bytes, cuts: list[int]) -> None:
        fuzzer.throw(data, cuts)
        fuzzer.check_health()

    while time.monotonic() < deadline:
        batch()
    fuzzer.finish()
    assert fuzzer.examples > 0
    print(f"{fuzzer.examples} examples, RSS {fuzzer.rss_start} -> {fuzzer.rss_kib()} KiB")


def test_random_bytes_storm() -> None:
    """Many connections at once sending plain random bytes, while a client keeps working."""
    proc = ServerProcess(TARGET, extra_args=["--appendonly", "no"] if TARGET == "xstreamd"
                         else []).start()
    try:
        rng = random.Random(8)
        fz = Fuzzer(proc, None)
        socks = [socket.create_connection((proc.host, proc.port), timeout=10)
                 for _ in range(50)]
        for round_ in range(40):
            for sock in socks:
                try:
                    sock.sendall(rng.randbytes(rng.randint(1, 2000)))
                except OSError:
                    pass
            fz.check_health()
            if round_ % 10 == 9:
                for sock in socks:
                    sock.close()
                socks = [socket.create_connection((proc.host, proc.port), timeout=10)
                         for _ in range(50)]
        for sock in socks:
            sock.close()
        fz.finish()
    finally:
        proc.stop()
