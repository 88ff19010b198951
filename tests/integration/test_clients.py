"""Real clients against the server: redis-py (sync and asyncio, hiredis and pure-Python parsers,
RESP2 and RESP3), redis-cli (arguments, inline input, --pipe), and raw sockets for pipelining,
split frames, garbage and protocol errors.

Every test runs against a server using each of the two request readers (hiredis fast path, and
the pure-Python one selected with XSTREAMD_PURE_PYTHON_READER=1).
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import socket
import subprocess
from collections.abc import Iterator

import pytest
import redis
import redis.asyncio as aredis
from redis._parsers import (
    _AsyncHiredisParser,
    _AsyncRESP2Parser,
    _AsyncRESP3Parser,
    _HiredisParser,
    _RESP2Parser,
    _RESP3Parser,
)

from tests.helpers import ServerProcess

TARGET = os.environ.get("XSTREAMD_TEST_TARGET", "xstreamd")
ours_only = pytest.mark.skipif(TARGET == "redis", reason="xstreamd limit")
needs_cli = pytest.mark.skipif(shutil.which("redis-cli") is None, reason="redis-cli missing")


@pytest.fixture(scope="module", params=["hiredis-reader", "python-reader"])
def srv(request: pytest.FixtureRequest) -> Iterator[ServerProcess]:
    if TARGET == "redis" and request.param == "python-reader":
        pytest.skip("the reader choice is xstreamd's")
    with pytest.MonkeyPatch.context() as mp:
        if request.param == "python-reader":
            mp.setenv("XSTREAMD_PURE_PYTHON_READER", "1")
        else:
            mp.delenv("XSTREAMD_PURE_PYTHON_READER", raising=False)
        proc = ServerProcess(TARGET, extra_args=["--appendonly", "no"]).start()
    yield proc
    proc.stop()


@pytest.fixture(autouse=True)
def flushed(srv: ServerProcess) -> None:
    with redis.Redis(host=srv.host, port=srv.port) as r:
        r.flushall()


def connect(srv: ServerProcess) -> socket.socket:
    return socket.create_connection((srv.host, srv.port), timeout=10)


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    chunks = []
    while True:
        data = sock.recv(65536)
        if not data:
            return b"".join(chunks)
        chunks.append(data)


def read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, f"connection closed after {data!r}"
        data += chunk
    return data


def ping_ok(srv: ServerProcess) -> bool:
    with connect(srv) as sock:
        sock.sendall(b"*1\r\n$4\r\nPING\r\n")
        return read_exactly(sock, 7) == b"+PONG\r\n"


# -- redis-py -----------------------------------------------------------------------------------
SYNC_PARSERS = [(2, _RESP2Parser), (3, _RESP3Parser), (2, _HiredisParser), (3, _HiredisParser)]
ASYNC_PARSERS = [(2, _AsyncRESP2Parser), (3, _AsyncRESP3Parser), (2, _AsyncHiredisParser),
                 (3, _AsyncHiredisParser)]


def parser_id(case: tuple[int, type]) -> str:
    return f"resp{case[0]}-{case[1].__name__.strip('_')}"


@pytest.mark.parametrize("case", SYNC_PARSERS, ids=parser_id)
def test_redis_py_sync(srv: ServerProcess, case: tuple[int, type]) -> None:
    protocol, parser = case
    pool = redis.ConnectionPool(host=srv.host, port=srv.port, protocol=protocol,
                                parser_class=parser, client_name="sync-test")
    r = redis.Redis(connection_pool=pool)
    try:
        assert r.ping() is True
        assert r.client_getname() in ("sync-test", b"sync-test")
        key, value = b"bin\x00\xff\r\nkey", bytes(range(256)) * 4
        assert r.set(key, value) is True
        assert r.get(key) == value
        big = os.urandom(1 << 20)
        r.set("big", big)
        assert r.get("big") == big
        assert r.exists(key, "big", "nope") == 2
        assert r.expire("big", 100) is True and 0 < r.ttl("big") <= 100
        assert r.type("big") == b"string"
        with r.pipeline(transaction=False) as pipe:
            for i in range(300):
                pipe.set(f"p{i}", i)
            for i in range(300):
                pipe.get(f"p{i}")
            replies = pipe.execute()
        assert replies[300:] == [str(i).encode() for i in range(300)]
        with r.pipeline(transaction=True) as pipe:
            pipe.set("t", "1").get("t").delete("t")
            assert pipe.execute() == [True, b"1", 1]
        assert set(r.scan_iter(match="p1?", count=20)) == {b"p1%d" % i for i in range(10)}
        assert r.dbsize() == 302
        info = r.info("server")
        assert info["redis_mode"] == "standalone"
        assert r.config_get("maxmemory") == {"maxmemory": "0"}
        with pytest.raises(redis.ResponseError, match="unknown command"):
            r.execute_command("NOSUCHCOMMAND", "x")
        assert r.echo("still fine") == b"still fine"
        hello = r.execute_command("HELLO", protocol)
        proto = hello[b"proto"] if isinstance(hello, dict) else hello[hello.index(b"proto") + 1]
        assert proto == protocol
    finally:
        r.close()
        pool.disconnect()


def test_redis_py_decode_responses(srv: ServerProcess) -> None:
    with redis.Redis(host=srv.host, port=srv.port, decode_responses=True, protocol=3) as r:
        r.set("greeting", "héllo wörld")
        assert r.get("greeting") == "héllo wörld"
        assert r.keys("gree*") == ["greeting"]
        assert r.client_info()["resp"] == "3"


@pytest.mark.parametrize("case", ASYNC_PARSERS, ids=parser_id)
def test_redis_py_asyncio(srv: ServerProcess, case: tuple[int, type]) -> None:
    protocol, parser = case

    async def run() -> None:
        pool = aredis.ConnectionPool(host=srv.host, port=srv.port, protocol=protocol,
                                     parser_class=parser)
        r = aredis.Redis(connection_pool=pool)
        try:
            assert await r.ping() is True
            await asyncio.gather(*(r.set(f"k{i}", i) for i in range(100)))
            values = await asyncio.gather(*(r.get(f"k{i}") for i in range(100)))
            assert values == [str(i).encode() for i in range(100)]
            async with r.pipeline(transaction=True) as pipe:
                pipe.set("a", "1").get("a").exists("a", "k1")
                assert await pipe.execute() == [True, b"1", 2]
            async with r.pipeline(transaction=False) as pipe:
                for i in range(200):
                    pipe.echo(str(i))
                assert await pipe.execute() == [str(i).encode() for i in range(200)]
            assert await r.dbsize() == 101
            keys = [k async for k in r.scan_iter(count=7)]
            assert len(keys) == 101
        finally:
            await r.aclose()
            await pool.disconnect()

    asyncio.run(run())


# -- redis-cli ----------------------------------------------------------------------------------
def cli(srv: ServerProcess, *args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(["redis-cli", "-h", srv.host, "-p", str(srv.port), *args], input=stdin,
                          capture_output=True, timeout=60, check=True)
    return done.stdout.decode()


@needs_cli
def test_redis_cli_arguments_and_stdin(srv: ServerProcess) -> None:
    assert cli(srv, "PING") == "PONG\n"
    assert cli(srv, "SET", "k", "hello world") == "OK\n"
    assert cli(srv, "GET", "k") == "hello world\n"
    assert cli(srv, "--no-raw", "GET", "k") == '"hello world"\n'
    assert cli(srv, "GET", "nope") == "\n"
    assert "ERR unknown command" in cli(srv, "NOSUCH")
    # Commands on stdin, one per line, as in `redis-cli < commands.txt`.
    out = cli(srv, stdin=b"SET a 1\nGET a\nSET b \"x y\"\nGET b\nDBSIZE\n")
    assert out == "OK\n1\nOK\nx y\n3\n"
    assert cli(srv, "-3", "HELLO", "3").startswith("server redis\nversion ")


@needs_cli
def test_redis_cli_pipe_mass_insertion(srv: ServerProcess) -> None:
    lines = []
    for i in range(2000):
        key, value = f"mass:{i}".encode(), f"value-{i}".encode()
        lines.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n"
                     % (len(key), key, len(value), value))
    out = cli(srv, "--pipe", stdin=b"".join(lines))
    assert "errors: 0, replies: 2000" in out
    assert cli(srv, "DBSIZE") == "2000\n"
    assert cli(srv, "GET", "mass:1999") == "value-1999\n"


# -- raw sockets: pipelining, inline commands, split frames --------------------------------------
def test_pipeline_of_thousands_in_one_write(srv: ServerProcess) -> None:
    with connect(srv) as sock:
        sock.sendall(b"*1\r\n$4\r\nPING\r\n" * 5000 + b"*2\r\n$4\r\nECHO\r\n$3\r\nend\r\n")
        assert read_exactly(sock, 7 * 5000 + 9) == b"+PONG\r\n" * 5000 + b"$3\r\nend\r\n"


def test_frames_split_byte_by_byte(srv: ServerProcess) -> None:
    request = (b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$10\r\n0123456789\r\n"
               b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n")
    with connect(srv) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(len(request)):
            sock.sendall(request[i:i + 1])
        assert read_exactly(sock, 5 + 17) == b"+OK\r\n$10\r\n0123456789\r\n"


def test_inline_commands(srv: ServerProcess) -> None:
    with connect(srv) as sock:
        sock.sendall(b'SET k "hello world"\r\nGET k\nset q \'it\\\'s\'\r\n'
                     b"GET q\r\n\r\n  \r\nPING\r\n")
        expected = b"+OK\r\n$11\r\nhello world\r\n+OK\r\n$4\r\nit's\r\n+PONG\r\n"
        assert read_exactly(sock, len(expected)) == expected
        sock.sendall(b'ECHO "\\x41\\n"\r\n')
        assert read_exactly(sock, 8) == b"$2\r\nA\n\r\n"


def test_mixed_inline_and_multibulk(srv: ServerProcess) -> None:
    with connect(srv) as sock:
        sock.sendall(b"PING\r\n*1\r\n$4\r\nPING\r\nECHO x\r\n*2\r\n$4\r\nECHO\r\n$1\r\ny\r\n")
        assert read_exactly(sock, 7 + 7 + 7 + 7) == (
            b"+PONG\r\n+PONG\r\n$1\r\nx\r\n$1\r\ny\r\n")


def test_empty_multibulk_and_null_array_are_ignored(srv: ServerProcess) -> None:
    with connect(srv) as sock:
        sock.sendall(b"*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n")
        assert read_exactly(sock, 7) == b"+PONG\r\n"


# -- raw sockets: protocol errors -------------------------------------------------------------
PROTOCOL_ERRORS = [
    (b"*1\r\nfoo\r\n", b"-ERR Protocol error: expected '$', got 'f'\r\n"),
    (b"*x\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*1\r\n$x\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$-1\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$536870913\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b'SET "unbalanced\r\n', b"-ERR Protocol error: unbalanced quotes in request\r\n"),
    (b"*" + b"9" * 70000, b"-ERR Protocol error: too big mbulk count string\r\n"),
    (b"*1\r\n$" + b"9" * 70000, b"-ERR Protocol error: too big bulk count string\r\n"),
    (b"x" * 70000, b"-ERR Protocol error: too big inline request\r\n"),
]


@pytest.mark.parametrize(("request_bytes", "error"), PROTOCOL_ERRORS,
                         ids=[e[1][21:-2].decode() for e in PROTOCOL_ERRORS])
def test_protocol_error_answers_then_closes(srv: ServerProcess, request_bytes: bytes,
                                            error: bytes) -> None:
    with connect(srv) as sock:
        sock.sendall(request_bytes)
        assert read_until_closed(sock) == error
    assert ping_ok(srv)


def test_multibulk_count_limit(srv: ServerProcess) -> None:
    """Redis 7+ refuses more than INT_MAX arguments (6.x refused more than 1024 * 1024)."""
    with connect(srv) as sock:
        sock.sendall(b"*2147483648\r\n")
        assert read_until_closed(sock) == b"-ERR Protocol error: invalid multibulk length\r\n"
    with connect(srv) as sock:  # exactly the limit is accepted (the server waits for more)
        sock.sendall(b"*2147483647\r\n$4\r\nPING\r\n")
        sock.settimeout(0.3)
        with pytest.raises(TimeoutError):
            sock.recv(1)


def test_commands_before_the_bad_frame_are_answered_first(srv: ServerProcess) -> None:
    with connect(srv) as sock:
        sock.sendall(b"*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
                     b"*1\r\nPING\r\n*1\r\n$4\r\nPING\r\n")
        assert read_until_closed(sock) == (
            b"+PONG\r\n+OK\r\n-ERR Protocol error: expected '$', got 'P'\r\n")
    with redis.Redis(host=srv.host, port=srv.port) as r:
        assert r.get("k") == b"v"


def test_lowered_bulk_limit(srv: ServerProcess) -> None:
    with redis.Redis(host=srv.host, port=srv.port) as r:
        r.config_set("proto-max-bulk-len", "1mb")
        try:
            with connect(srv) as sock:
                sock.sendall(b"*2\r\n$4\r\nECHO\r\n$1048577\r\n")
                assert read_until_closed(sock) == b"-ERR Protocol error: invalid bulk length\r\n"
            with connect(srv) as sock:  # the limit itself is fine
                sock.sendall(b"*2\r\n$4\r\nECHO\r\n$1048576\r\n" + b"a" * 1048576 + b"\r\n")
                assert read_exactly(sock, 13) == b"$1048576\r\naaa"
        finally:
            r.config_set("proto-max-bulk-len", "512mb")


def test_protocol_error_leaves_other_clients_alone(srv: ServerProcess) -> None:
    with redis.Redis(host=srv.host, port=srv.port) as bystander:
        bystander.set("before", "1")
        with connect(srv) as victim:
            victim.sendall(b"*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$x\r\n")
            assert read_until_closed(victim) == (
                b"+PONG\r\n-ERR Protocol error: invalid bulk length\r\n")
        assert bystander.get("before") == b"1"
        assert bystander.ping() is True


def test_random_garbage_never_hurts_the_server(srv: ServerProcess) -> None:
    rng = random.Random(1234)
    alphabet = b"*$\r\n0123456789-+:abcPINGping \"'\\\x00\xff"
    for _ in range(150):
        junk = bytes(rng.choice(alphabet) for _ in range(rng.randrange(1, 60)))
        with connect(srv) as sock:
            sock.sendall(junk)
            sock.shutdown(socket.SHUT_WR)  # nothing more will come: the server must not hang us
            sock.settimeout(5)
            try:
                read_until_closed(sock)
            except TimeoutError:
                pass  # a frame left incomplete: the server keeps waiting, which is fine
    assert ping_ok(srv)
    with redis.Redis(host=srv.host, port=srv.port) as r:
        assert r.dbsize() >= 0 and r.echo("alive") == b"alive"


def test_half_sent_frame_then_disconnect(srv: ServerProcess) -> None:
    for partial in (b"*3\r\n$3\r\nSET\r\n$1\r\nk", b"*2\r\n$4\r\nEC", b"PIN"):
        with connect(srv) as sock:
            sock.sendall(partial)
    assert ping_ok(srv)
