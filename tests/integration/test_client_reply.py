"""CLIENT REPLY ON | OFF | SKIP: which replies reach the client, one command at a time and
pipelined, for errors and for a blocked command's late reply.

`XSTREAMD_TEST_TARGET=redis` runs this file against Debian's redis-server 7.0.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers import TARGET, ServerProcess
from tests.integration.server_fixtures import module_server
from tests.resp import ParsedConn, encode

srv = module_server()


@pytest.fixture
def conn(srv: ServerProcess) -> Iterator[ParsedConn]:
    c = ParsedConn(srv)
    c.call("FLUSHALL")
    c.raw = b""  # the bytes received from here on
    yield c
    c.close()


def test_off_drops_every_reply_until_on(conn: ParsedConn) -> None:
    conn.send("CLIENT", "REPLY", "OFF")
    conn.send("PING")
    conn.send("XADD", "s", "1-1", "f", "v")
    conn.send("NOSUCHCOMMAND")  # errors too
    conn.send("XADD", "s", "0-1", "f", "v")
    assert conn.nothing_pending()
    assert conn.call("CLIENT", "REPLY", "ON") == b"OK"
    assert conn.call("XLEN", "s") == 1  # the commands ran all the same
    assert conn.raw == b"+OK\r\n:1\r\n"


def test_skip_drops_the_next_reply_only(conn: ParsedConn) -> None:
    conn.send("CLIENT", "REPLY", "SKIP")
    conn.send("PING")
    assert conn.call("ECHO", "after") == b"after"
    assert conn.raw == b"$5\r\nafter\r\n"


def test_on_after_skip_is_answered(conn: ParsedConn) -> None:
    conn.send("CLIENT", "REPLY", "SKIP")
    assert conn.call("CLIENT", "REPLY", "ON") == b"OK"
    assert conn.call("PING") == b"PONG"


def test_skip_while_off_does_nothing(conn: ParsedConn) -> None:
    conn.send("CLIENT", "REPLY", "OFF")
    conn.send("CLIENT", "REPLY", "SKIP")
    conn.send("PING")
    assert conn.call("CLIENT", "REPLY", "ON") == b"OK"
    assert conn.call("PING") == b"PONG"
    assert conn.raw == b"+OK\r\n+PONG\r\n"


def test_pipelined_in_one_write(conn: ParsedConn) -> None:
    conn.sock.sendall(encode("CLIENT", "REPLY", "OFF") + encode("PING") + encode("ECHO", "x")
                      + encode("CLIENT", "REPLY", "SKIP") + encode("CLIENT", "REPLY", "ON")
                      + encode("PING") + encode("CLIENT", "REPLY", "SKIP") + encode("ECHO", "y")
                      + encode("ECHO", "z"))
    assert conn.read() == b"OK"
    assert conn.read() == b"PONG"
    assert conn.read() == b"z"
    assert conn.nothing_pending()


def test_a_blocked_commands_reply_follows_the_mode(srv: ServerProcess, conn: ParsedConn) -> None:
    writer = ParsedConn(srv)
    try:
        conn.send("CLIENT", "REPLY", "SKIP")
        conn.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
        assert conn.nothing_pending()
        assert writer.call("XADD", "s", "1-1", "f", "v") == b"1-1"
        # The XREAD was the skipped command: its reply is dropped, the next one is sent.
        assert conn.call("PING") == b"PONG"
        assert conn.raw == b"+PONG\r\n"
    finally:
        writer.close()


def test_errors(conn: ParsedConn) -> None:
    assert str(conn.call("CLIENT", "REPLY", "MAYBE")) == "ERR syntax error"
    assert str(conn.call("CLIENT", "REPLY")) == (
        "ERR wrong number of arguments for 'client|reply' command")


def test_reset_turns_replies_back_on(conn: ParsedConn) -> None:
    conn.send("CLIENT", "REPLY", "OFF")
    conn.send("PING")
    assert conn.call("RESET") == b"RESET"
    assert conn.call("PING") == b"PONG"
    # A SKIP in force still drops RESET's own reply.
    conn.send("CLIENT", "REPLY", "SKIP")
    conn.send("RESET")
    assert conn.call("ECHO", "x") == b"x"
    assert conn.raw == b"+RESET\r\n+PONG\r\n$1\r\nx\r\n"


@pytest.mark.skipif(TARGET == "redis", reason="Redis 7.0 leaves the connection open")
def test_a_protocol_error_under_off_closes_without_a_reply(conn: ParsedConn) -> None:
    """Redis drops the error reply too, but then never gets to close the connection (its
    close waits for a reply to be written): here it closes."""
    conn.send("CLIENT", "REPLY", "OFF")
    conn.sock.sendall(b"*1\r\n$x\r\n")  # a bad bulk length: Redis closes the connection
    conn.sock.settimeout(5)
    assert conn.sock.recv(100) == b""
    assert conn.raw == b""
