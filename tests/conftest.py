"""Shared fixtures: real server processes on free ports."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis

from tests.helpers import TARGET, ServerProcess, redis_server_path


@pytest.fixture(scope="session")
def server() -> Iterator[ServerProcess]:
    """One server for the whole session; tests use distinct keys or flush it."""
    proc = ServerProcess(TARGET).start()
    yield proc
    proc.stop()


@pytest.fixture
def r(server: ServerProcess) -> Iterator[redis.Redis]:
    """A redis-py client on a flushed server."""
    client = redis.Redis(host=server.host, port=server.port, decode_responses=False)
    client.flushall()
    yield client
    client.close()


@pytest.fixture(scope="session")
def redis_ref() -> Iterator[ServerProcess]:
    """Debian's redis-server for compatibility tests; skipped when it is not installed."""
    if redis_server_path() is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server must be installed in CI for compatibility tests")
        pytest.skip("redis-server not installed")
    proc = ServerProcess("redis").start()
    yield proc
    proc.stop()
