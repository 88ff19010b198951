"""Security: protected mode, requirepass / AUTH / HELLO AUTH, the limits Redis puts on clients
that have not authenticated yet.

`XSTREAMD_TEST_TARGET=redis` runs this file against Debian's redis-server 7.0 (texts that
changed after 7.0 are checked for xstreamd only).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import hiredis
import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.helpers import ServerProcess
from tests.integration.ops_helpers import (
    IS_REDIS,
    call,
    connect,
    info,
    is_closed,
    non_loopback_ipv4,
    read_replies,
    read_to_eof,
    resp,
    running,
    wait_until,
)

PASSWORD = "s3cret-Pa55"
NOAUTH = "NOAUTH Authentication required."
WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."
HELLO_NOAUTH = (
    "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
    "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and "
    "select the RESP protocol version at the same time")
DENIED_PREFIX = b"-DENIED Redis is running in protected mode because protected mode is enabled"
# Redis 8's text (7.0 says "4) Setup a an authentication password ...").
DENIED_8 = (
    b"-DENIED Redis is running in protected mode because protected mode is enabled and no "
    b"password is set for the default user. In this mode connections are only accepted from "
    b"the loopback interface. If you want to connect from external computers to Redis you may "
    b"adopt one of the following solutions: 1) Just disable protected mode sending the command "
    b"'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from "
    b"the same host the server is running, however MAKE SURE Redis is not publicly accessible "
    b"from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) "
    b"Alternatively you can just disable the protected mode by editing the Redis configuration "
    b"file, and setting the protected mode option to 'no', and then restarting the server. 3) "
    b"If you started the server manually just for testing, restart it with the "
    b"'--protected-mode no' option. 4) Set up an authentication password for the default user. "
    b"NOTE: You only need to do one of the above things in order for the server to start "
    b"accepting connections from the outside.\r\n")

OUTSIDE_IP = non_loopback_ipv4()
needs_outside_ip = pytest.mark.skipif(OUTSIDE_IP is None,
                                      reason="no non-loopback local IPv4 address")


def err(reply: object) -> str:
    assert isinstance(reply, hiredis.ReplyError), reply
    return str(reply)


@pytest.fixture(scope="module")
def secured() -> Iterator[ServerProcess]:
    """A server with requirepass (and the pure-Python reader for ours: the hiredis path is
    covered by the `both_readers` tests)."""
    with running(["--requirepass", PASSWORD]) as proc:
        yield proc


@pytest.fixture(params=["hiredis", "python"])
def both_readers(request: pytest.FixtureRequest) -> Iterator[ServerProcess]:
    if IS_REDIS and request.param == "python":
        pytest.skip("reader implementations are xstreamd's")
    env = {"XSTREAMD_PURE_PYTHON_READER": "1" if request.param == "python" else "0"}
    with running(["--requirepass", PASSWORD], env=env) as proc:
        yield proc


# -- binding and protected mode --------------------------------------------------------------
@pytest.mark.skipif(IS_REDIS, reason="Redis binds every interface without a config file")
@needs_outside_ip
def test_default_bind_is_loopback_only() -> None:
    proc = ServerProcess("xstreamd")
    proc.start()
    try:
        sock = connect(proc.port)
        assert call(sock, "CONFIG", "GET", "bind") == [b"bind", b"127.0.0.1"]
        assert call(sock, "CONFIG", "GET", "protected-mode") == [b"protected-mode", b"yes"]
        sock.close()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((OUTSIDE_IP, proc.port), timeout=5)
    finally:
        proc.stop()


@needs_outside_ip
def test_protected_mode_refuses_outside_clients_without_password() -> None:
    with running(["--bind", "127.0.0.1", OUTSIDE_IP]) as proc:
        outside = connect(proc.port, OUTSIDE_IP)
        outside.sendall(resp("PING"))
        reply = read_to_eof(outside)
        assert reply.startswith(DENIED_PREFIX)
        if not IS_REDIS:
            assert reply == DENIED_8
        # The loopback interface is still served, and the refusal was counted.
        local = connect(proc.port)
        assert call(local, "PING") == b"PONG"
        assert int(info(local, "stats")["rejected_connections"]) >= 1
        # Turning protected mode off at run time lets outside clients in.
        assert call(local, "CONFIG", "SET", "protected-mode", "no") == b"OK"
        outside = connect(proc.port, OUTSIDE_IP)
        assert call(outside, "PING") == b"PONG"
        assert call(local, "CONFIG", "SET", "protected-mode", "yes") == b"OK"
        outside.close()
        outside = connect(proc.port, OUTSIDE_IP)
        outside.sendall(resp("PING"))
        assert read_to_eof(outside).startswith(DENIED_PREFIX)


@needs_outside_ip
@pytest.mark.parametrize("option", [["--protected-mode", "no"], ["--requirepass", PASSWORD]])
def test_outside_clients_allowed_with_password_or_protected_mode_off(option: list[str]) -> None:
    with running(["--bind", "127.0.0.1", OUTSIDE_IP, *option]) as proc:
        outside = connect(proc.port, OUTSIDE_IP)
        if option[0] == "--requirepass":
            assert err(call(outside, "PING")) == NOAUTH
            assert call(outside, "AUTH", PASSWORD) == b"OK"
        assert call(outside, "PING") == b"PONG"
        peer = call(outside, "CLIENT", "INFO")
        assert f"addr={OUTSIDE_IP}:".encode() in peer


# -- requirepass, AUTH, HELLO ----------------------------------------------------------------
REFUSED_BEFORE_AUTH = [
    ["PING"], ["ECHO", "x"], ["XADD", "s", "*", "f", "v"], ["XREAD", "STREAMS", "s", "0"],
    ["XLEN", "s"], ["INFO"], ["CONFIG", "GET", "maxclients"], ["SELECT", "1"], ["MULTI"],
    ["CLIENT", "ID"], ["COMMAND", "COUNT"], ["ACL", "WHOAMI"], ["FLUSHALL"], ["SHUTDOWN"],
    ["MONITOR"],
]


def test_every_command_but_auth_hello_quit_needs_auth(secured: ServerProcess) -> None:
    sock = connect(secured.port)
    for argv in REFUSED_BEFORE_AUTH:
        assert err(call(sock, *argv)) == NOAUTH, argv
    # As in Redis, the command lookup (and arity check) comes before the auth check.
    assert err(call(sock, "NOSUCHCOMMAND", "a")) == (
        "ERR unknown command 'NOSUCHCOMMAND', with args beginning with: 'a' ")
    assert err(call(sock, "XLEN")) == "ERR wrong number of arguments for 'xlen' command"
    # Nothing ran meanwhile: the keyspace is empty once we are in.
    assert call(sock, "AUTH", PASSWORD) == b"OK"
    assert call(sock, "DBSIZE") == 0
    assert call(sock, "ACL", "WHOAMI") == b"default"
    assert call(sock, "PING") == b"PONG"


def test_quit_works_before_auth(secured: ServerProcess) -> None:
    sock = connect(secured.port)
    sock.sendall(resp("QUIT"))
    assert read_to_eof(sock) == b"+OK\r\n"


def test_wrong_passwords(secured: ServerProcess) -> None:
    sock = connect(secured.port)
    assert err(call(sock, "AUTH", "nope")) == WRONGPASS
    assert err(call(sock, "AUTH", "default", "nope")) == WRONGPASS
    assert err(call(sock, "AUTH", "someone", PASSWORD)) == WRONGPASS
    assert err(call(sock, "AUTH", PASSWORD[:-1])) == WRONGPASS
    assert err(call(sock, "AUTH", PASSWORD + "x")) == WRONGPASS
    assert err(call(sock, "AUTH", "")) == WRONGPASS
    assert err(call(sock, "AUTH", "a", "b", "c")) == "ERR syntax error"
    # Still not authenticated after all those.
    assert err(call(sock, "PING")) == NOAUTH
    assert call(sock, "AUTH", "default", PASSWORD) == b"OK"
    assert call(sock, "PING") == b"PONG"


def hello_noauth(reply: object) -> bool:
    # Redis 7.0 words it "the HELLO AUTH <user> <pass> option"; Redis 8 adds "<proto>".
    text = err(reply)
    return text == HELLO_NOAUTH or IS_REDIS and text.startswith(HELLO_NOAUTH[:70])


def test_hello_auth(secured: ServerProcess) -> None:
    sock = connect(secured.port)
    assert hello_noauth(call(sock, "HELLO", "3"))
    assert hello_noauth(call(sock, "HELLO"))
    assert err(call(sock, "HELLO", "3", "AUTH", "default", "bad")) == WRONGPASS
    assert err(call(sock, "PING")) == NOAUTH
    reply = call(sock, "HELLO", "3", "AUTH", "default", PASSWORD, "SETNAME", "ops")
    assert isinstance(reply, dict)
    assert reply[b"proto"] == 3 and reply[b"server"] == b"redis"
    assert call(sock, "CLIENT", "GETNAME") == b"ops"
    assert call(sock, "ACL", "WHOAMI") == b"default"


def test_redis_py_password_and_resp3(secured: ServerProcess) -> None:
    no_retry = Retry(NoBackoff(), 0)  # redis-py retries connection errors (auth ones too)
    for protocol in (2, 3):
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=secured.port, password="wrong", protocol=protocol,
                        retry=no_retry).ping()
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=secured.port, protocol=protocol, retry=no_retry).ping()
    for protocol in (2, 3):
        client = redis.Redis(port=secured.port, password=PASSWORD, protocol=protocol)
        assert client.ping() is True
        assert client.execute_command("ACL", "WHOAMI") == b"default"
        client.close()


def test_reset_drops_authentication(secured: ServerProcess) -> None:
    sock = connect(secured.port)
    assert call(sock, "AUTH", PASSWORD) == b"OK"
    assert call(sock, "RESET") == b"RESET"
    assert err(call(sock, "PING")) == NOAUTH


def test_requirepass_set_at_run_time() -> None:
    with running() as proc:
        admin = connect(proc.port)
        assert call(admin, "ACL", "WHOAMI") == b"default"
        # Without a password the default user takes any password, but AUTH <password> alone
        # is an error.
        assert err(call(admin, "AUTH", "x")).startswith(
            "ERR AUTH <password> called without any password configured for the default user")
        assert call(admin, "AUTH", "default", "anything") == b"OK"
        assert call(admin, "CONFIG", "SET", "requirepass", PASSWORD) == b"OK"
        newcomer = connect(proc.port)
        assert err(call(newcomer, "PING")) == NOAUTH
        assert call(newcomer, "AUTH", PASSWORD) == b"OK"
        assert call(newcomer, "CONFIG", "SET", "requirepass", "") == b"OK"
        third = connect(proc.port)
        assert call(third, "PING") == b"PONG"


# -- unauthenticated clients' limits ---------------------------------------------------------
def test_unauthenticated_multibulk_limit(both_readers: ServerProcess) -> None:
    sock = connect(both_readers.port)
    # Ten arguments are still fine (the command is then refused for want of AUTH).
    sock.sendall(resp("XADD", "s", "*", *["f"] * 7))
    assert err(read_replies(sock, 1)[0]) == NOAUTH
    sock.sendall(resp("PING") + b"*11\r\n")
    assert read_to_eof(sock) == (b"-NOAUTH Authentication required.\r\n"
                                 b"-ERR Protocol error: unauthenticated multibulk length\r\n")


def test_unauthenticated_bulk_limit(both_readers: ServerProcess) -> None:
    sock = connect(both_readers.port)
    sock.sendall(resp("ECHO", "x" * 16384))
    assert err(read_replies(sock, 1)[0]) == NOAUTH
    sock.sendall(b"*2\r\n$4\r\nECHO\r\n$16385\r\n")
    assert read_to_eof(sock) == b"-ERR Protocol error: unauthenticated bulk length\r\n"


def test_limits_lifted_by_auth_in_the_same_packet(both_readers: ServerProcess) -> None:
    sock = connect(both_readers.port)
    big = "v" * 100_000
    fields = [x for i in range(20) for x in (f"f{i}", big if i == 0 else "v")]
    sock.sendall(resp("AUTH", PASSWORD) + resp("XADD", "big", "1-1", *fields)
                 + resp("XLEN", "big") + resp("DEL", "big"))
    assert read_replies(sock, 4) == [b"OK", b"1-1", 1, 1]


def test_limits_come_back_after_reset(both_readers: ServerProcess) -> None:
    # (Frames pipelined behind the RESET in the same packet were already read with the
    # authenticated limits; the next read gets the strict ones.)
    sock = connect(both_readers.port)
    sock.sendall(resp("AUTH", PASSWORD) + resp("RESET"))
    assert read_replies(sock, 2) == [b"OK", b"RESET"]
    sock.sendall(b"*11\r\n")
    assert read_to_eof(sock) == b"-ERR Protocol error: unauthenticated multibulk length\r\n"


def test_unauthenticated_client_not_reading_is_disconnected(secured: ServerProcess) -> None:
    """Each refused command answers ~35 bytes; a client that never reads them is closed once
    they pile up (CVE-2025-21605) instead of growing the server's memory."""
    sock = connect(secured.port)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    host, port = sock.getsockname()[:2]
    flooder = f"addr={host}:{port} "
    chunk = resp("PING") * 2000
    closed = False
    try:
        for _ in range(2000):  # up to 56 MB of requests, ~140 MB of replies
            sock.sendall(chunk)
    except (BrokenPipeError, ConnectionResetError):
        closed = True
    if not closed:
        closed = is_closed(sock, timeout=20)
    assert closed
    # Everyone else is still served.
    other = connect(secured.port)
    assert call(other, "AUTH", PASSWORD) == b"OK"
    assert call(other, "PING") == b"PONG"
    assert wait_until(lambda: flooder.encode() not in call(other, "CLIENT", "LIST"))


def test_authenticated_client_is_not_limited_that_way(secured: ServerProcess) -> None:
    sock = connect(secured.port)
    assert call(sock, "AUTH", PASSWORD) == b"OK"
    sock.sendall(resp("PING") * 20000)  # 140 KB of replies queued at once
    assert read_replies(sock, 20000) == [b"PONG"] * 20000
