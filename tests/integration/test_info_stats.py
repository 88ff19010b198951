"""INFO stats counters that follow events rather than commands: read and write events, failed
authentications, the active expire cycle, time spent above maxmemory.

`XSTREAMD_TEST_TARGET=redis` runs this file against Debian's redis-server 7.0 (the test of a
field 7.0 lacks is skipped there).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
import redis

from tests.helpers import TARGET, ServerProcess
from tests.integration.server_fixtures import module_server
from tests.resp import Conn

PING = b"*1\r\n$4\r\nPING\r\n"


srv = module_server()


@pytest.fixture
def r(srv: ServerProcess) -> Iterator[redis.Redis]:
    client = redis.Redis(host=srv.host, port=srv.port)
    client.flushall()
    yield client
    client.config_set("maxmemory", "0")
    client.close()


def connect(srv: ServerProcess) -> socket.socket:
    sock = socket.create_connection((srv.host, srv.port))
    sock.settimeout(5)
    return sock


def read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "connection closed"
        data += chunk
    return data


def events(sock: socket.socket) -> tuple[int, int]:
    """(total_reads_processed, total_writes_processed) by INFO on a raw connection, so that
    each call is exactly one read and one write."""
    sock.sendall(b"*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n")
    header = b""
    while not header.endswith(b"\r\n"):
        header += read_exactly(sock, 1)
    text = read_exactly(sock, int(header[1:-2]) + 2).decode()
    fields = dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)
    return int(fields["total_reads_processed"]), int(fields["total_writes_processed"])


def wait_for(predicate, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_reads_and_writes_count_socket_events_not_commands(srv: ServerProcess) -> None:
    observer, pipelined = connect(srv), connect(srv)
    try:
        before = events(observer)
        # Three commands in one send: one read, and their replies go out in one write.
        pipelined.sendall(PING * 3)
        assert read_exactly(pipelined, 21) == b"+PONG\r\n" * 3
        after = events(observer)
        # ... plus this INFO (a read) and the reply to the INFO before (a write).
        assert (after[0] - before[0], after[1] - before[1]) == (2, 2)
    finally:
        observer.close()
        pipelined.close()


def test_a_closed_connection_is_a_read_event(srv: ServerProcess) -> None:
    observer, closing = connect(srv), connect(srv)
    try:
        before = events(observer)
        closing.sendall(PING)
        assert read_exactly(closing, 7) == b"+PONG\r\n"
        closing.close()
        time.sleep(0.3)
        after = events(observer)
        # PING, the read that finds the connection closed (as in Redis) and this INFO; PONG
        # and the reply to the INFO before.
        assert (after[0] - before[0], after[1] - before[1]) == (3, 2)
    finally:
        observer.close()


@pytest.mark.skipif(TARGET == "redis", reason="acl_access_denied_auth: Redis 7.2+")
def test_failed_authentications_are_counted() -> None:
    proc = ServerProcess(TARGET, extra_args=["--appendonly", "no",
                                             "--requirepass", "s3cret"]).start()
    conn = Conn(proc)
    try:
        assert conn.call("AUTH", "s3cret") == b"+OK\r\n"  # a success counts nothing
        assert conn.call("AUTH", "wrong").startswith(b"-WRONGPASS")
        assert conn.call("AUTH", "someone", "s3cret").startswith(b"-WRONGPASS")
        assert conn.call("HELLO", "3", "AUTH", "default", "nope").startswith(b"-WRONGPASS")
        assert conn.call("AUTH", "s3cret") == b"+OK\r\n"
        assert b"acl_access_denied_auth:3\r\n" in conn.call("INFO", "stats")
        conn.call("CONFIG", "RESETSTAT")
        assert b"acl_access_denied_auth:0\r\n" in conn.call("INFO", "stats")
    finally:
        conn.close()
        proc.stop()


def test_active_expiry_statistics(r: redis.Redis) -> None:
    stats = r.info("stats")
    assert stats["expired_stale_perc"] == 0
    pipe = r.pipeline(transaction=False)
    for i in range(200):
        pipe.set(f"k{i}", "v", px=1)
    pipe.execute()
    # Nobody reads them: the active cycle alone expires them.
    wait_for(lambda: r.info("stats")["expired_keys"] == 200)
    stats = r.info("stats")
    # The cycle that found them expired moved the stale estimate toward 100%.
    assert 0 < stats["expired_stale_perc"] <= 100
    assert stats["expire_cycle_cpu_milliseconds"] >= 0
    assert r.dbsize() == 0


def test_time_above_maxmemory(r: redis.Redis) -> None:
    assert r.info("stats")["current_eviction_exceeded_time"] == 0
    r.config_set("maxmemory", "1")  # any server uses more than one byte
    time.sleep(0.4)
    stats = r.info("stats")
    assert stats["current_eviction_exceeded_time"] >= 150
    assert stats["total_eviction_exceeded_time"] >= stats["current_eviction_exceeded_time"]
    # maxmemory 0 stops the checks, not the period: it ends once a limit is met.
    r.config_set("maxmemory", "0")
    time.sleep(0.25)
    assert r.info("stats")["current_eviction_exceeded_time"] >= 350
    r.config_set("maxmemory", str(1 << 40))
    time.sleep(0.25)  # (ours notices at its next cron tick, Redis at its next command)
    r.ping()
    stats = r.info("stats")
    assert stats["current_eviction_exceeded_time"] == 0
    assert stats["total_eviction_exceeded_time"] >= 350
