"""WAITAOF against real server processes with the AOF on: each fsync policy, a write still in
the buffer, failed writes, MULTI, replica counts (never reached), CLIENT UNBLOCK, turning the
AOF off while a client waits, and the errors. (Debian's redis-server 7.0 has no WAITAOF: the
expected answers follow Redis 7.2+'s tests and command page.)"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Iterator

import pytest

from tests.helpers import ServerProcess
from tests.integration.test_persistence_support import connect, start, wait_for
from tests.resp import Conn, encode

pytestmark = pytest.mark.skipif(
    os.environ.get("XSTREAMD_TEST_TARGET", "xstreamd") == "redis",
    reason="redis-server 7.0 has no WAITAOF")

AOF_OFF = b"-ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.\r\n"


@pytest.fixture
def aof_server(tmp_path) -> Iterator[ServerProcess]:
    proc = start(str(tmp_path), "--appendonly", "yes")
    yield proc
    proc.stop()


@pytest.fixture
def c(aof_server: ServerProcess) -> Iterator[Conn]:
    conn = Conn(aof_server)
    yield conn
    conn.close()


def _waitaof(conn: Conn, *args: int) -> tuple[bytes, float]:
    start = time.monotonic()
    reply = conn.call("WAITAOF", *args)
    return reply, time.monotonic() - start


def test_each_fsync_policy(c: Conn) -> None:
    # A client that wrote nothing has nothing to wait for.
    assert c.call("WAITAOF", "1", "0", "0") == b"*2\r\n:1\r\n:0\r\n"
    # everysec: answered once the background fsync has run (about a second at most).
    assert c.call("XADD", "s", "1-1", "f", "v") == b"$3\r\n1-1\r\n"
    reply, waited = _waitaof(c, 1, 0, 0)
    assert reply == b"*2\r\n:1\r\n:0\r\n" and waited < 3
    # no: the server never fsyncs, so the wait ends with its timeout and a local count of 0.
    assert c.call("CONFIG", "SET", "appendfsync", "no") == b"+OK\r\n"
    assert c.call("XADD", "s", "2-1", "f", "v") == b"$3\r\n2-1\r\n"
    reply, waited = _waitaof(c, 1, 0, 200)
    assert reply == b"*2\r\n:0\r\n:0\r\n" and waited >= 0.19
    # always: the write pass fsyncs before the write's reply, so it is there at once.
    assert c.call("CONFIG", "SET", "appendfsync", "always") == b"+OK\r\n"
    assert c.call("XADD", "s", "3-1", "f", "v") == b"$3\r\n3-1\r\n"
    assert c.call("WAITAOF", "1", "0", "0") == b"*2\r\n:1\r\n:0\r\n"
    assert c.call("WAITAOF", "0", "0", "0") == b"*2\r\n:1\r\n:0\r\n"


def test_a_write_in_the_same_read_is_waited_for(c: Conn) -> None:
    assert c.call("CONFIG", "SET", "appendfsync", "always") == b"+OK\r\n"
    # The write is still in the buffer when WAITAOF runs: it waits for the write pass.
    c.sock.sendall(encode("XADD", "s", "1-1", "f", "v") + encode("WAITAOF", "1", "0", "0"))
    assert c.read() == b"$3\r\n1-1\r\n"
    assert c.read() == b"*2\r\n:1\r\n:0\r\n"
    # Inside MULTI nothing waits: the write is not on disk yet when WAITAOF runs.
    assert c.call("MULTI") == b"+OK\r\n"
    assert c.call("XADD", "s", "2-1", "f", "v") == b"+QUEUED\r\n"
    assert c.call("WAITAOF", "1", "0", "0") == b"+QUEUED\r\n"
    assert c.call("EXEC") == b"*2\r\n$3\r\n2-1\r\n*2\r\n:0\r\n:0\r\n"


def test_a_failed_write_is_not_acknowledged(aof_server: ServerProcess, c: Conn) -> None:
    r = connect(aof_server)
    r.execute_command("DEBUG", "AOF-WRITE-ERROR", errno.EIO)
    assert c.call("XADD", "s", "1-1", "f", "v") == b"$3\r\n1-1\r\n"  # (everysec answers)
    reply, _ = _waitaof(c, 1, 0, 300)
    assert reply == b"*2\r\n:0\r\n:0\r\n"
    r.execute_command("DEBUG", "AOF-WRITE-ERROR", 0)  # the write is retried and succeeds
    reply, waited = _waitaof(c, 1, 0, 0)
    assert reply == b"*2\r\n:1\r\n:0\r\n" and waited < 3
    r.close()


def test_replicas_are_never_reached(aof_server: ServerProcess, c: Conn) -> None:
    assert c.call("CONFIG", "SET", "appendfsync", "always") == b"+OK\r\n"
    assert c.call("XADD", "s", "1-1", "f", "v") == b"$3\r\n1-1\r\n"
    reply, waited = _waitaof(c, 1, 1, 200)  # the local fsync is there, a replica never is
    assert reply == b"*2\r\n:1\r\n:0\r\n" and waited >= 0.19
    # With timeout 0 it waits until CLIENT UNBLOCK, which answers the counts as they are.
    r = connect(aof_server)
    client_id = int(c.call("CLIENT", "ID")[1:-2])
    c.sock.sendall(encode("WAITAOF", "0", "1", "0"))
    wait_for(lambda: r.info("clients")["blocked_clients"] == 1, what="WAITAOF blocked")
    assert r.execute_command("CLIENT", "UNBLOCK", client_id) == 1
    assert c.read() == b"*2\r\n:1\r\n:0\r\n"
    r.close()


def test_turning_the_aof_off_releases_local_waiters(aof_server: ServerProcess, c: Conn) -> None:
    r = connect(aof_server)
    assert c.call("CONFIG", "SET", "appendfsync", "no") == b"+OK\r\n"
    assert c.call("XADD", "s", "1-1", "f", "v") == b"$3\r\n1-1\r\n"
    replies: list[bytes] = []
    waiter = threading.Thread(target=lambda: replies.append(c.call("WAITAOF", "1", "0", "0")))
    waiter.start()
    wait_for(lambda: r.info("clients")["blocked_clients"] == 1, what="WAITAOF blocked")
    r.config_set("appendonly", "no")
    waiter.join(5)
    assert replies == [AOF_OFF]
    # With the AOF off: the local count is 0, and asking for it is an error.
    assert c.call("WAITAOF", "1", "0", "0") == AOF_OFF
    assert c.call("WAITAOF", "0", "0", "0") == b"*2\r\n:0\r\n:0\r\n"
    r.close()


def test_errors(c: Conn) -> None:
    out_of_01 = b"-ERR value is out of range, value must between 0 and 1\r\n"
    assert c.call("WAITAOF", "2", "0", "0") == out_of_01
    assert c.call("WAITAOF", "-1", "0", "0") == out_of_01
    assert c.call("WAITAOF", "x", "0", "0") == b"-ERR value is not an integer or out of range\r\n"
    assert c.call("WAITAOF", "0", "-1", "0") == b"-ERR value is out of range, must be positive\r\n"
    assert c.call("WAITAOF", "0", "x", "0") == b"-ERR value is not an integer or out of range\r\n"
    assert c.call("WAITAOF", "0", "0", "-1") == b"-ERR timeout is negative\r\n"
    assert c.call("WAITAOF", "0", "0", "x") == \
        b"-ERR timeout is not an integer or out of range\r\n"
    assert c.call("WAITAOF", "0", "0") == \
        b"-ERR wrong number of arguments for 'waitaof' command\r\n"
