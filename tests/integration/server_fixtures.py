"""Shared fixture makers of the integration tests (no tests here): a module's own server of the
tested kind, a raw connection to it on a flushed server, and the unparsed RESP2 redis-py client
of the consumer-group tests.

A maker returns a fixture; a test module binds it to the name its tests ask for
(`srv = module_server("--enable-debug-command", "local")`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import pytest
import redis

from tests.helpers import TARGET, ServerProcess
from tests.resp import Conn

Fixture = Callable[..., object]  # what pytest.fixture makes of a function


def module_server(*extra_args: str) -> Fixture:
    """A module-scoped fixture: a server of the tested kind (XSTREAMD_TEST_TARGET) started with
    `--appendonly no` and extra_args, stopped after the module's last test."""

    @pytest.fixture(scope="module")
    def srv() -> Iterator[ServerProcess]:
        proc = ServerProcess(TARGET, extra_args=["--appendonly", "no", *extra_args]).start()
        yield proc
        proc.stop()

    return srv


@contextlib.contextmanager
def flushed_conn(proc: ServerProcess) -> Iterator[Conn]:
    """A raw connection to proc after FLUSHALL, closed when the block ends (a fixture resets
    what its tests change inside the block, before the close)."""
    conn = Conn(proc)
    conn.call("FLUSHALL")
    yield conn
    conn.close()


def unparsed_resp2_client() -> Fixture:
    """A function-scoped fixture on the session's `server`: a RESP2 redis-py client on a
    flushed server that returns replies unparsed."""

    @pytest.fixture
    def r(server: ServerProcess) -> Iterator[redis.Redis]:
        """A RESP2 redis-py client on a flushed server that returns replies unparsed."""
        client = redis.Redis(host=server.host, port=server.port, protocol=2)
        client.response_callbacks.clear()
        client.flushall()
        yield client
        client.close()

    return r
