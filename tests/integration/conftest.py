"""Fixtures shared by the integration tests (the session's server and `r` are in
tests/conftest.py; fixture makers for a module's own server are in server_fixtures.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from tests.helpers import ServerProcess
from tests.resp import RawConn


@pytest.fixture
def raw(server: ServerProcess, r: redis.Redis) -> Iterator[RawConn]:
    """A connection that returns each reply's exact bytes, on the server flushed by `r`."""
    conn = RawConn(server)
    yield conn
    conn.close()
