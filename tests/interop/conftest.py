"""Fixtures shared by the interop tests: each module's own server (of the tested kind, with
no extra options), and that server flushed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers import ServerProcess
from tests.integration.ops_helpers import call, connect, running


@pytest.fixture(scope="module")
def srv() -> Iterator[ServerProcess]:
    with running() as proc:
        yield proc


@pytest.fixture
def flushed(srv: ServerProcess) -> ServerProcess:
    sock = connect(srv.port)
    assert call(sock, "FLUSHALL") == b"OK"
    sock.close()
    return srv
