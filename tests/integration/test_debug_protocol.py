"""DEBUG PROTOCOL (one reply of each RESP type) and DEBUG SET-DISABLE-DENY-SCRIPTS (scripts
may call noscript commands), against Debian's redis-server byte for byte: directly, and seen
from scripts in every pairing of the script's and the client's protocol. Also the time that
stands still while a script runs, and DEBUG OBJECT on a key whose time passed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers import TARGET, ServerProcess, redis_server_path
from tests.resp import Conn

pytestmark = pytest.mark.skipif(TARGET == "redis", reason="compares xstreamd with redis-server")

TYPES = ["string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib",
         "push", "verbatim", "true", "false", "nosuch"]
DEBUG = ["--enable-debug-command", "yes"]


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[ServerProcess, ServerProcess]]:
    if redis_server_path() is None:
        pytest.skip("redis-server not installed")
    ours = ServerProcess(extra_args=["--appendonly", "no", *DEBUG]).start()
    ref = ServerProcess("redis", extra_args=DEBUG).start()
    yield ours, ref
    ours.stop()
    ref.stop()


def _replies(proc: ServerProcess, *commands: tuple[str, ...]) -> list[bytes]:
    conn = Conn(proc)
    try:
        return [conn.call(*command) for command in commands]
    finally:
        conn.close()


@pytest.mark.parametrize("protocol", ["2", "3"])
@pytest.mark.parametrize("kind", TYPES)
def test_debug_protocol(pair: tuple[ServerProcess, ServerProcess], protocol: str,
                        kind: str) -> None:
    ours, ref = pair
    commands = [("HELLO", protocol), ("DEBUG", "PROTOCOL", kind)]
    assert _replies(ours, *commands)[1:] == _replies(ref, *commands)[1:]


@pytest.mark.parametrize("script_resp", ["2", "3"])
@pytest.mark.parametrize("protocol", ["2", "3"])
@pytest.mark.parametrize("kind", [k for k in TYPES if k != "push"])
def test_debug_protocol_seen_from_scripts(pair: tuple[ServerProcess, ServerProcess],
                                          protocol: str, script_resp: str, kind: str) -> None:
    ours, ref = pair
    script = f"redis.setresp({script_resp}) return redis.call('debug', 'protocol', '{kind}')"
    commands = [("HELLO", protocol), ("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1"),
                ("EVAL", script, "0"), ("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0"),
                ("EVAL", script, "0")]
    assert _replies(ours, *commands)[1:] == _replies(ref, *commands)[1:]


def test_time_stands_still_in_a_script(pair: tuple[ServerProcess, ServerProcess]) -> None:
    """A key set to expire in 1 ms still exists at the script's end, however long it ran
    (Redis's "Script block the time during execution"); afterwards it is gone."""
    for proc in pair:
        script = ("redis.call('SET', 'key', 'value', 'PX', '1') "
                  "redis.call('DEBUG', 'SLEEP', '0.01') return redis.call('EXISTS', 'key')")
        replies = _replies(proc, ("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1"),
                           ("EVAL", script, "0"), ("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0"),
                           ("EXISTS", "key"))
        assert replies[1:] == [b":1\r\n", b"+OK\r\n", b":0\r\n"], proc.kind


def test_debug_object_sees_a_key_whose_time_passed(
        pair: tuple[ServerProcess, ServerProcess]) -> None:
    for proc in pair:
        conn = Conn(proc)
        try:
            conn.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
            conn.call("SET", "gone", "v", "PX", "1")
            conn.call("DEBUG", "SLEEP", "0.005")
            assert conn.call("DEBUG", "OBJECT", "gone").startswith(b"+Value at:"), proc.kind
            assert conn.call("EXISTS", "gone") == b":0\r\n"
            assert conn.call("DEBUG", "OBJECT", "gone") == b"-ERR no such key\r\n"
        finally:
            conn.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
            conn.close()
