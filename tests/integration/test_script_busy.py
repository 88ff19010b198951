"""A script running past busy-reply-threshold: other clients (connected before, or while it
runs) get BUSY, SCRIPT KILL stops a script that has not written and is refused (UNKILLABLE)
for one that has, and the server serves everyone normally afterwards."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import redis

from tests.integration.ops_helpers import IS_REDIS, running

pytestmark = pytest.mark.skipif(IS_REDIS, reason="xstreamd's process is started here")

BUSY = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
KILLED = "Script killed by user with SCRIPT KILL..."


@pytest.fixture()
def port() -> Iterator[int]:
    with running(["--busy-reply-threshold", "200"]) as proc:
        yield proc.port


def _run_in_background(port: int, script: str) -> dict[str, object]:
    """EVAL script on its own connection, in a thread; the result dict gets its reply."""
    result: dict[str, object] = {}

    def call() -> None:
        client = redis.Redis(port=port, socket_timeout=30)
        try:
            result["reply"] = client.eval(script, 0)
        except redis.ResponseError as exc:
            result["error"] = str(exc)
        finally:
            client.close()

    thread = threading.Thread(target=call)
    thread.start()
    result["thread"] = thread
    return result


def _wait_busy(port: int) -> redis.Redis:
    """A new connection, made while the script runs, once the server answers it BUSY."""
    client = redis.Redis(port=port, socket_timeout=10)
    for _ in range(100):
        try:
            client.ping()
        except redis.exceptions.RedisError as exc:
            assert str(exc) == BUSY
            return client
        threading.Event().wait(0.05)
    raise AssertionError("the server never answered BUSY")


def test_a_read_only_script_is_killed(port: int) -> None:
    connected_before = redis.Redis(port=port, socket_timeout=10)
    connected_before.ping()
    background = _run_in_background(port, "while true do end")
    other = _wait_busy(port)
    with pytest.raises(redis.exceptions.RedisError) as busy:
        connected_before.get("x")
    assert str(busy.value).startswith("BUSY")
    assert other.execute_command("SCRIPT", "KILL") == b"OK"
    background["thread"].join(10)  # type: ignore[attr-defined]
    assert str(background["error"]).startswith(KILLED + " script: ")
    assert other.ping() is True and connected_before.ping() is True


def test_pcall_cannot_keep_a_killed_script_alive(port: int) -> None:
    background = _run_in_background(port, "while true do pcall(function() end) end")
    other = _wait_busy(port)
    assert other.execute_command("SCRIPT", "KILL") == b"OK"
    background["thread"].join(10)  # type: ignore[attr-defined]
    assert str(background["error"]).startswith(KILLED)


def test_a_script_that_wrote_cannot_be_killed(port: int) -> None:
    background = _run_in_background(
        port, "redis.call('set', 'x', 'y') local i = 0 "
              "while i < 60000000 do i = i + 1 end return 'done'")
    other = _wait_busy(port)
    with pytest.raises(redis.ResponseError) as refused:
        other.execute_command("SCRIPT", "KILL")
    assert str(refused.value).startswith("UNKILLABLE Sorry the script already executed write "
                                         "commands against the dataset.")
    background["thread"].join(30)  # type: ignore[attr-defined]
    assert background["reply"] == b"done"
    assert other.get("x") == b"y"
    with pytest.raises(redis.ResponseError, match="NOTBUSY No scripts in execution right now."):
        other.execute_command("SCRIPT", "KILL")
