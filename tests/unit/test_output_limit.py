"""A client's pending output as the output limits count it, in process (no sockets):
Client.output_bytes's running count and server/output_limit.py's rules."""

from __future__ import annotations

import time

import pytest

from server.app import Server
from server.client import Client
from server.config import Config
from server.log import Logger
from server.output_limit import UNAUTH_OUTPUT_LIMIT, limits_of, over_limits, over_output_limit


class FakeSink:
    """What the limits read of a connection: the bytes its transport has not sent."""

    def __init__(self, unsent: int = 0) -> None:
        self.unsent = unsent
        self.closed_for_limit = 0

    def output_size(self) -> int:
        return self.unsent

    def close_for_output_limit(self) -> None:
        self.closed_for_limit += 1


@pytest.fixture
def server() -> Server:
    config = Config()
    config.set_from_text("appendonly", "no")
    return Server(config, Logger("nothing"))


def test_output_bytes_counts_what_was_appended_since(server: Server) -> None:
    client = Client(1, server, None)
    assert client.output_bytes() == 0
    client.out.append(b"x" * 10)
    assert client.output_bytes() == 10
    client.out += [b"y" * 5, b"z" * 7]
    assert client.output_bytes() == 22
    client.out.append(b"w")
    assert client.output_bytes() == 23
    # A list replaced without the count (shorter than counted) is counted anew.
    client.out = [b"a" * 3]
    assert client.output_bytes() == 3
    client.drop_output()
    assert client.output_bytes() == 0 and client.out == []


def test_release_drops_what_a_closed_client_holds(server: Server) -> None:
    client = Client(1, server, None)
    client.out.append(b"reply")
    client.waiting_pushes.append(b"push")
    client.pending_cmds.append([b"PING"])
    client.multi = [[b"SET", b"k", b"v"]]
    client.release()
    assert (client.out, client.waiting_pushes, client.pending_cmds, client.multi) == (
        [], [], [], None)
    assert client.output_bytes() == 0


def test_limits_follow_the_client_class(server: Server) -> None:
    client = Client(1, server, None)
    server.config.set_from_text("client-output-buffer-limit", "normal 1mb 0 0 pubsub 2mb 0 0")
    server._set_output_limits(server.config["client-output-buffer-limit"])
    assert limits_of(client) == (1 << 20, 0, 0)
    client.subscribed = True
    assert limits_of(client) == (2 << 20, 0, 0)


def test_hard_and_soft_limits() -> None:
    client = Client.__new__(Client)
    client.obl_soft_since = 0.0
    assert not over_limits(client, 99, (100, 0, 0))
    assert over_limits(client, 100, (100, 0, 0))
    # Soft: over it for its seconds in a row; under it again, the time starts over.
    assert not over_limits(client, 60, (0, 50, 1))
    assert client.obl_soft_since
    client.obl_soft_since = time.monotonic() - 2
    assert over_limits(client, 60, (0, 50, 1))
    assert not over_limits(client, 10, (0, 50, 1)) and client.obl_soft_since == 0.0


def test_pending_output_is_queued_plus_unsent(server: Server) -> None:
    server.config.set_from_text("client-output-buffer-limit", "normal 100 0 0")
    server._set_output_limits(server.config["client-output-buffer-limit"])
    client = Client(1, server, None)
    client.out.append(b"x" * 60)
    assert not over_output_limit(client, FakeSink(unsent=39))  # type: ignore[arg-type]
    assert over_output_limit(client, FakeSink(unsent=40))  # type: ignore[arg-type]


def test_unauthenticated_clients_have_their_own_limit(server: Server) -> None:
    client = Client(1, server, None)
    client.authenticated = False
    client.out.append(b"x" * UNAUTH_OUTPUT_LIMIT)
    assert not over_output_limit(client, FakeSink())  # type: ignore[arg-type]
    client.out.append(b"x")
    assert over_output_limit(client, FakeSink())  # type: ignore[arg-type]


def test_check_marks_nothing_itself_and_drops_after_the_mark(server: Server) -> None:
    server.config.set_from_text("client-output-buffer-limit", "normal 10 0 0")
    server._set_output_limits(server.config["client-output-buffer-limit"])
    sink = FakeSink()
    client = Client(1, server, sink)  # type: ignore[arg-type]
    client.out.append(b"x" * 5)
    assert not client.check_output_limit()
    client.out.append(b"x" * 5)
    assert client.check_output_limit() and sink.closed_for_limit == 1
    # Once marked (the connection does it), what comes is dropped, the close asked once.
    client.close_asap = True
    client.out.append(b"late")
    assert client.check_output_limit() and client.out == [] and sink.closed_for_limit == 1
