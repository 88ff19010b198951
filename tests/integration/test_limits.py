"""Limits with Redis's names: maxclients, proto-max-bulk-len, client-query-buffer-limit,
client-output-buffer-limit (normal class), timeout, maxmemory with noeviction.

`XSTREAMD_TEST_TARGET=redis` runs this file against Debian's redis-server 7.0.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator

import hiredis
import pytest

from tests.helpers import REPO_ROOT, ServerProcess
from tests.integration.ops_helpers import (
    IS_REDIS,
    TARGET,
    call,
    connect,
    info,
    is_closed,
    read_replies,
    read_to_eof,
    resp,
    rss_kib,
    running,
    wait_until,
)

OOM = "OOM command not allowed when used memory > 'maxmemory'."


@pytest.fixture(scope="module")
def srv() -> Iterator[ServerProcess]:
    with running() as proc:
        yield proc


@pytest.fixture
def admin(srv: ServerProcess) -> Iterator[socket.socket]:
    sock = connect(srv.port)
    assert call(sock, "FLUSHALL") == b"OK"
    yield sock
    # Put every limit a test may have changed back to its default.
    call(sock, "CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0",
         "client-query-buffer-limit", "1gb", "proto-max-bulk-len", "512mb", "maxmemory", "0",
         "timeout", "0")
    sock.close()


def err(reply: object) -> str:
    assert isinstance(reply, hiredis.ReplyError), reply
    return str(reply)


def connected(sock: socket.socket) -> int:
    return int(info(sock, "clients")["connected_clients"])


# -- maxclients ------------------------------------------------------------------------------
def test_maxclients() -> None:
    with running(["--maxclients", "3"]) as proc:
        first = connect(proc.port)
        assert call(first, "PING") == b"PONG"
        assert wait_until(lambda: connected(first) == 1)  # the readiness probe has left
        others = [connect(proc.port) for _ in range(2)]
        for sock in others:
            assert call(sock, "PING") == b"PONG"
        refused = connect(proc.port)
        assert read_to_eof(refused) == b"-ERR max number of clients reached\r\n"
        # A slot freed is a slot for the next client.
        others.pop().close()
        assert wait_until(lambda: connected(first) == 2)
        newcomer = connect(proc.port)
        assert call(newcomer, "PING") == b"PONG"
        assert int(info(first, "stats")["rejected_connections"]) == 1
        # Lowered at run time: open clients stay, new ones are refused.
        assert call(first, "CONFIG", "SET", "maxclients", "2") == b"OK"
        assert call(newcomer, "PING") == b"PONG"
        assert read_to_eof(connect(proc.port)) == b"-ERR max number of clients reached\r\n"
        assert call(first, "CONFIG", "GET", "maxclients") == [b"maxclients", b"2"]


def test_maxclients_follows_a_low_descriptor_limit() -> None:
    """With `ulimit -n 100` the default maxclients (10000) cannot be served: the server lowers
    it to 100 - 32, says so in its log, and refuses clients past it cleanly."""
    proc = ServerProcess(TARGET)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    with open(proc.log_path, "ab") as log:
        proc.proc = subprocess.Popen(
            ["sh", "-c", 'ulimit -n 100 && exec "$@"', "sh", *proc.command()],
            stdout=log, stderr=subprocess.STDOUT, cwd=proc.dir, env=env)
    try:
        proc.wait_ready()
        admin = connect(proc.port)
        assert call(admin, "CONFIG", "GET", "maxclients") == [b"maxclients", b"68"]
        assert "maxclients has been reduced to 68 to compensate for low ulimit" in (
            proc.read_log())
        assert wait_until(lambda: connected(admin) == 1)
        clients = [connect(proc.port) for _ in range(67)]
        for sock in clients:
            assert call(sock, "PING") == b"PONG"
        assert read_to_eof(connect(proc.port)) == b"-ERR max number of clients reached\r\n"
        assert call(admin, "PING") == b"PONG"
    finally:
        proc.stop()


# -- proto-max-bulk-len and client-query-buffer-limit ----------------------------------------
def test_proto_max_bulk_len(srv: ServerProcess, admin: socket.socket) -> None:
    assert call(admin, "CONFIG", "SET", "proto-max-bulk-len", "1mb") == b"OK"
    assert call(admin, "CONFIG", "GET", "proto-max-bulk-len") == [
        b"proto-max-bulk-len", b"1048576"]
    sock = connect(srv.port)
    value = b"v" * (1 << 20)
    assert call(sock, "XADD", "s", "1-1", "f", value) == b"1-1"
    assert call(sock, "XRANGE", "s", "-", "+") == [[b"1-1", [b"f", value]]]
    sock.sendall(resp("PING") + b"*3\r\n$4\r\nECHO\r\n$1048577\r\n")
    assert read_to_eof(sock) == b"+PONG\r\n-ERR Protocol error: invalid bulk length\r\n"
    assert call(admin, "XLEN", "s") == 1
    # Below 1mb is refused.
    assert err(call(admin, "CONFIG", "SET", "proto-max-bulk-len", "1000")).startswith(
        "ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len')")


def test_query_buffer_limit(srv: ServerProcess, admin: socket.socket) -> None:
    assert call(admin, "CONFIG", "SET", "client-query-buffer-limit", "1mb") == b"OK"
    sock = connect(srv.port)
    # A command under the limit is fine...
    value = b"x" * 900_000
    assert call(sock, "XADD", "s", "1-1", "f", value) == b"1-1"
    # ...and so is a command bigger than the limit made of arguments under it: as in Redis,
    # only the bytes not yet read into arguments count.
    fields = [b"f1", b"a" * 600_000, b"f2", b"b" * 600_000, b"f3", b"c" * 600_000]
    assert call(sock, "XADD", "s", "2-1", *fields) == b"2-1"
    # One whose unread bytes pass it closes the connection without a reply.
    sock.sendall(b"*2\r\n$4\r\nECHO\r\n$3000000\r\n" + b"x" * 1_500_000)
    assert read_to_eof(sock) == b""
    assert call(admin, "PING") == b"PONG"
    if not IS_REDIS:  # the field appeared after Redis 7.0
        assert int(info(admin, "stats")["client_query_buffer_limit_disconnections"]) >= 1


def test_a_flooding_client_takes_turns_with_the_others(srv: ServerProcess,
                                                      admin: socket.socket) -> None:
    """A client that sends a million PINGs at once is read in turns with the other clients:
    between two INFOs of another client the server runs a read or two of the flood (a 256 KiB
    read holds 18,724 PINGs), not the up to 8 MiB libuv would read in one go."""
    total = 1_000_000
    flood = connect(srv.port)
    start = int(info(admin, "stats")["total_commands_processed"])
    sender = threading.Thread(target=flood.sendall, args=(resp("PING") * total,))
    sender.start()
    try:
        seen = [0]
        deadline = time.monotonic() + 120
        while seen[-1] < total and time.monotonic() < deadline:
            seen.append(int(info(admin, "stats")["total_commands_processed"]) - start)
        gaps = [b - a for a, b in zip(seen, seen[1:], strict=False)]
        assert seen[-1] >= total
        # Taking turns, a gap is a read or two (unless this process stalls); reading in one
        # go, it was the whole flood.
        assert max(gaps) < 300_000, max(gaps)
    finally:
        sender.join()
        flood.close()


# -- client-output-buffer-limit --------------------------------------------------------------
def addr_of(sock: socket.socket) -> bytes:
    host, port = sock.getsockname()[:2]
    return f"addr={host}:{port} ".encode()


def gone(admin: socket.socket, sock: socket.socket, timeout: float = 20.0) -> bool:
    """True once the server no longer lists the client (the client itself reads nothing)."""
    addr = addr_of(sock)
    return wait_until(lambda: addr not in call(admin, "CLIENT", "LIST"), timeout=timeout)


def flood_until_closed(port: int, admin: socket.socket, request: bytes, rounds: int,
                       pause: float = 0.0) -> bool:
    """A client that sends `request` over and over and never reads; True once the server
    closed it."""
    sock = connect(port)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    addr = addr_of(sock)
    try:
        for _ in range(rounds):
            sock.sendall(request)
            if pause:
                time.sleep(pause)
                if addr not in call(admin, "CLIENT", "LIST"):
                    return True
    except (BrokenPipeError, ConnectionResetError):
        return True
    return gone(admin, sock)


def test_output_limit_hard(srv: ServerProcess, admin: socket.socket) -> None:
    assert call(admin, "CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0") == b"OK"
    assert call(admin, "XADD", "big", "1-1", "f", "v" * 100_000) == b"1-1"
    rss_before = rss_kib(srv.proc.pid)  # type: ignore[union-attr]
    # Each round asks for 3 MB of replies in one pipelined packet; up to 600 MB in all.
    assert flood_until_closed(srv.port, admin, resp("XRANGE", "big", "-", "+") * 30,
                              rounds=200)
    # The server is healthy and did not buffer what the client refused to read.
    assert call(admin, "XLEN", "big") == 1
    assert rss_kib(srv.proc.pid) - rss_before < 150_000  # type: ignore[union-attr]
    if not IS_REDIS:  # the field appeared after Redis 7.0
        assert int(info(admin, "stats")["client_output_buffer_limit_disconnections"]) >= 1


def test_output_limit_one_big_batch(srv: ServerProcess, admin: socket.socket) -> None:
    """Thousands of requests in one read: the limit is enforced while the batch runs."""
    assert call(admin, "CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0") == b"OK"
    assert call(admin, "XADD", "big", "1-1", "f", "v" * 100_000) == b"1-1"
    rss_before = rss_kib(srv.proc.pid)  # type: ignore[union-attr]
    # 6000 requests (186 KB) whose replies would take 600 MB.
    assert flood_until_closed(srv.port, admin, resp("XRANGE", "big", "-", "+") * 6000,
                              rounds=1)
    assert call(admin, "PING") == b"PONG"
    assert rss_kib(srv.proc.pid) - rss_before < 150_000  # type: ignore[union-attr]


def test_output_limit_soft(srv: ServerProcess, admin: socket.socket) -> None:
    assert call(admin, "CONFIG", "SET", "client-output-buffer-limit",
                "normal 0 256kb 1") == b"OK"
    assert call(admin, "XADD", "big", "1-1", "f", "v" * 20_000) == b"1-1"
    # Over the soft limit for more than a second: closed (the loop gives it up to 20 s).
    assert flood_until_closed(srv.port, admin, resp("XRANGE", "big", "-", "+") * 5,
                              rounds=400, pause=0.05)
    assert call(admin, "PING") == b"PONG"


def test_reading_client_is_not_disconnected(srv: ServerProcess, admin: socket.socket) -> None:
    assert call(admin, "CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0") == b"OK"
    assert call(admin, "XADD", "big", "1-1", "f", "v" * 100_000) == b"1-1"
    sock = connect(srv.port)
    for _ in range(40):  # 20 MB in all, 500 KB at a time
        sock.sendall(resp("XRANGE", "big", "-", "+") * 5)
        assert len(read_replies(sock, 5)) == 5
    assert call(sock, "PING") == b"PONG"


def test_monitor_that_does_not_read_is_disconnected(srv: ServerProcess,
                                                    admin: socket.socket) -> None:
    assert call(admin, "CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0") == b"OK"
    monitor = connect(srv.port)
    monitor.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    assert call(monitor, "MONITOR") == b"OK"
    writer = connect(srv.port)
    payload = "p" * 50_000
    addr = addr_of(monitor)
    for i in range(400):  # up to 20 MB of MONITOR lines
        writer.sendall(resp("XADD", "m", "*", "f", payload) * 5)
        read_replies(writer, 5)
        if i % 20 == 19 and addr not in call(admin, "CLIENT", "LIST"):
            break
    assert gone(admin, monitor)
    assert call(writer, "DEL", "m") == 1


# -- timeout ---------------------------------------------------------------------------------
def test_idle_timeout() -> None:
    with running(["--timeout", "1"]) as proc:
        idle = connect(proc.port)
        assert call(idle, "PING") == b"PONG"
        blocked = connect(proc.port)
        blocked.sendall(resp("XREAD", "BLOCK", "0", "STREAMS", "s", "$"))
        subscriber = connect(proc.port)
        assert call(subscriber, "SUBSCRIBE", "news") == [b"subscribe", b"news", 1]
        busy = connect(proc.port)
        start = time.monotonic()
        closed = False
        while time.monotonic() - start < 15:
            assert call(busy, "PING") == b"PONG"  # keeps interacting: never idle
            if is_closed(idle, timeout=0.2):
                closed = True
                break
        assert closed
        # A client blocked without a timeout is never idle-closed (Redis's rule), so it
        # still gets the entry.
        assert call(busy, "XADD", "s", "1-1", "f", "v") == b"1-1"
        assert read_replies(blocked, 1) == [[[b"s", [[b"1-1", [b"f", b"v"]]]]]]
        # Nor is a client in Pub/Sub mode: it still gets the message.
        assert call(busy, "PUBLISH", "news", "hi") == 1
        assert read_replies(subscriber, 1) == [[b"message", b"news", b"hi"]]
        assert call(busy, "CONFIG", "GET", "timeout") == [b"timeout", b"1"]


# -- maxmemory -------------------------------------------------------------------------------
def test_maxmemory_noeviction_refuses_writes(srv: ServerProcess, admin: socket.socket) -> None:
    assert call(admin, "XADD", "s", "1-1", "f", "v") == b"1-1"
    assert call(admin, "XGROUP", "CREATE", "s", "g", "0") == b"OK"
    assert call(admin, "CONFIG", "SET", "maxmemory", "100kb") == b"OK"
    assert call(admin, "CONFIG", "GET", "maxmemory-policy") == [
        b"maxmemory-policy", b"noeviction"]
    # CONFIG SET measures the memory at once (updateMaxmemory): the very next write is refused.
    assert err(call(admin, "XADD", "s", "*", "f", "v")) == OOM
    assert err(call(admin, "XADD", "other", "*", "f", "v")) == OOM
    # Reads and writes that free or keep memory still work.
    length = call(admin, "XLEN", "s")
    assert isinstance(length, int) and length >= 1
    assert call(admin, "XRANGE", "s", "1-1", "1-1") == [[b"1-1", [b"f", b"v"]]]
    assert call(admin, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">") == [
        [b"s", [[b"1-1", [b"f", b"v"]]]]]
    assert call(admin, "XACK", "s", "g", "1-1") == 1
    assert call(admin, "XDEL", "s", "1-1") == 1
    # Inside MULTI the refusal comes at queue time and aborts the transaction.
    assert call(admin, "MULTI") == b"OK"
    assert err(call(admin, "XADD", "s", "*", "f", "v")) == OOM
    assert err(call(admin, "EXEC")) == (
        "EXECABORT Transaction discarded because of previous errors.")
    assert call(admin, "DEL", "s") == 1
    assert call(admin, "CONFIG", "SET", "maxmemory", "0") == b"OK"
    assert call(admin, "XADD", "s", "2-1", "f", "v") == b"2-1"


def test_maxmemory_set_during_multi_aborts_exec(srv: ServerProcess, admin: socket.socket) -> None:
    """A transaction queued under the limit, then maxmemory lowered by another client: EXEC
    is refused with EXECABORT ... OOM, as in Redis, and nothing of it runs."""
    client = connect(srv.port)
    assert call(client, "MULTI") == b"OK"
    assert call(client, "XADD", "s", "1-1", "f", "v") == b"QUEUED"
    assert call(client, "XLEN", "s") == b"QUEUED"
    assert call(admin, "CONFIG", "SET", "maxmemory", "1") == b"OK"
    reply = call(client, "EXEC")
    assert isinstance(reply, hiredis.ReplyError)
    assert err(reply) == "EXECABORT Transaction discarded because of: " + OOM
    assert call(admin, "CONFIG", "SET", "maxmemory", "0") == b"OK"
    assert call(client, "XLEN", "s") == 0


def test_maxmemory_keeps_the_process_alive(srv: ServerProcess, admin: socket.socket) -> None:
    """Writing far past maxmemory gets -OOM replies; the process stays up and bounded."""
    used = int(info(admin, "memory")["used_memory"])
    limit = used + 30 * 1024 * 1024
    assert call(admin, "CONFIG", "SET", "maxmemory", str(limit)) == b"OK"
    rss_before = rss_kib(srv.proc.pid)  # type: ignore[union-attr]
    sock = connect(srv.port)
    value = "x" * 10_000
    refused = 0
    for _ in range(1000):  # up to 100 MB of entries, 100 KB... 1 MB a batch
        sock.sendall(resp("XADD", "fill", "*", "f", value) * 100)
        replies = read_replies(sock, 100)
        refused = sum(isinstance(r, hiredis.ReplyError) for r in replies)
        if refused:
            assert all(err(r) == OOM for r in replies if isinstance(r, hiredis.ReplyError))
            break
    assert refused
    assert call(sock, "PING") == b"PONG"
    assert rss_kib(srv.proc.pid) - rss_before < 100_000  # type: ignore[union-attr]
    # Deleting the data brings the memory back under the limit: writes are accepted again
    # (at once in Redis, whose used_memory is the allocator's count; here once the freed
    # heap has gone back to the system, within a cron tick or two).
    assert call(admin, "DEL", "fill") == 1
    def accepted() -> bool:
        return not isinstance(call(admin, "XADD", "after", "*", "f", value), hiredis.ReplyError)

    assert wait_until(accepted, 5.0)
    assert call(admin, "DEL", "after") == 1
    assert call(admin, "CONFIG", "SET", "maxmemory", "0") == b"OK"
