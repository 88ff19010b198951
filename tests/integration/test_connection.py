"""Connection commands (PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET, ACL WHOAMI) and CLIENT,
end to end over raw sockets so that reply types and error texts are checked byte for byte.

`XSTREAMD_TEST_TARGET=redis` runs this file against Debian's redis-server 7.0; what Redis added
after 7.0 (CLIENT SETINFO / NO-TOUCH, HELLO's version) is checked for xstreamd only.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.helpers import TARGET, ServerProcess
from tests.integration.server_fixtures import flushed_conn, module_server
from tests.resp import Conn, encode

ours_only = pytest.mark.skipif(TARGET == "redis", reason="Redis 7.2+ behaviour")


def bulk(text: str | bytes) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    return b"$%d\r\n%s\r\n" % (len(data), data)


def arity(name: str) -> bytes:
    return f"-ERR wrong number of arguments for '{name}' command\r\n".encode()


srv = module_server()


@pytest.fixture
def c(srv: ServerProcess) -> Iterator[Conn]:
    with flushed_conn(srv) as conn:
        yield conn


# -- PING, ECHO, unknown commands ----------------------------------------------------------------
def test_ping_and_echo(c: Conn) -> None:
    assert c.call("PING") == b"+PONG\r\n"
    assert c.call("ping", "hello") == bulk("hello")
    assert c.call("PING", "a", "b") == arity("ping")
    assert c.call("ECHO", "x y") == bulk("x y")
    assert c.call("ECHO", "") == bulk("")
    assert c.call("ECHO") == arity("echo")
    assert c.call("ECHO", "a", "b") == arity("echo")


def test_unknown_command_and_case_insensitive_names(c: Conn) -> None:
    assert c.call("NOSUCH", "a", "b") == (
        b"-ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' \r\n")
    assert c.call("nosuch") == b"-ERR unknown command 'nosuch', with args beginning with: \r\n"
    assert c.call("pInG") == b"+PONG\r\n"


# -- HELLO --------------------------------------------------------------------------------------
def _server_side_timers(port: int) -> list[str]:
    """The `timer:(...)` of each established socket whose local port is the server's, once
    none shows a pending retransmission ("on"; it comes first right after a reply)."""
    deadline = time.monotonic() + 5
    while True:
        out = subprocess.run(["ss", "-tnoH", "state", "established", f"( sport = :{port} )"],
                             capture_output=True, text=True, check=True).stdout
        timers = [line.split("timer:", 1)[1] if "timer:" in line else ""
                  for line in out.splitlines()]
        if not any(timer.startswith("(on,") for timer in timers) or time.monotonic() > deadline:
            return timers
        time.sleep(0.05)


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss (iproute2)")
def test_tcp_keepalive_on_accepted_connections(c: Conn, srv: ServerProcess) -> None:
    """tcp-keepalive (300 by default) arms the kernel's keep-alive timer on each accepted
    socket, as anetKeepAlive does; 0 leaves new connections without it. (xstreamd sets it
    on the listening sockets, which the accepted ones inherit.)"""
    c.call("PING")
    timers = _server_side_timers(srv.port)
    assert timers and all(timer.startswith("(keepalive,") for timer in timers)
    assert c.call("CONFIG", "SET", "tcp-keepalive", "0") == b"+OK\r\n"
    try:
        other = Conn(srv)
        other.call("PING")
        assert len(_server_side_timers(srv.port)) == len(timers) + 1
        assert "" in _server_side_timers(srv.port)  # the new one has no timer
        other.close()
        # A new interval applies to the connections accepted from then on.
        assert c.call("CONFIG", "SET", "tcp-keepalive", "60") == b"+OK\r\n"
        third = Conn(srv)
        third.call("PING")
        assert any(timer.startswith(("(keepalive,59sec", "(keepalive,1min,"))
                   for timer in _server_side_timers(srv.port))
        third.close()
    finally:
        c.call("CONFIG", "SET", "tcp-keepalive", "300")


def test_hello_default_keeps_resp2(c: Conn) -> None:
    reply = c.call("HELLO")
    assert reply.startswith(b"*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n")
    assert b"$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:" in reply
    assert reply.endswith(b"$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n"
                          b"$7\r\nmodules\r\n*0\r\n")
    client_id = c.call("CLIENT", "ID")
    assert b"$2\r\nid\r\n" + client_id in reply


def test_hello_3_switches_to_resp3(c: Conn) -> None:
    reply = c.call("HELLO", "3")
    assert reply.startswith(b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n")
    assert b"$5\r\nproto\r\n:3\r\n" in reply
    assert c.call("CLIENT", "GETNAME") == b"_\r\n"  # RESP3 null
    assert c.call("HELLO", "2").startswith(b"*14\r\n")
    assert c.call("CLIENT", "GETNAME") == b"$-1\r\n"


@ours_only
def test_hello_reports_redis_8_version(c: Conn) -> None:
    assert b"$7\r\nversion\r\n$6\r\n8.10.0\r\n" in c.call("HELLO")


def test_hello_errors(c: Conn) -> None:
    assert c.call("HELLO", "4") == b"-NOPROTO unsupported protocol version\r\n"
    assert c.call("HELLO", "1") == b"-NOPROTO unsupported protocol version\r\n"
    assert c.call("HELLO", "x") == (
        b"-ERR Protocol version is not an integer or out of range\r\n")
    assert c.call("HELLO", "3", "foo") == b"-ERR Syntax error in HELLO option 'foo'\r\n"
    assert c.call("HELLO", "3", "AUTH", "default") == (
        b"-ERR Syntax error in HELLO option 'AUTH'\r\n")
    assert c.call("HELLO", "3", "SETNAME", "a b") == (
        b"-ERR Client names cannot contain spaces, newlines or special characters.\r\n")
    # A failed HELLO changes nothing.
    assert c.call("PING") == b"+PONG\r\n"


def test_hello_setname_and_auth_without_password(c: Conn) -> None:
    # With no requirepass the default user has no password: any password is accepted.
    reply = c.call("HELLO", "2", "AUTH", "default", "whatever", "SETNAME", "conn1")
    assert reply.startswith(b"*14\r\n")
    assert c.call("CLIENT", "GETNAME") == bulk("conn1")
    assert c.call("HELLO", "2", "AUTH", "nobody", "pw") == (
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n")


# -- AUTH ---------------------------------------------------------------------------------------
def test_auth_without_requirepass(c: Conn) -> None:
    assert c.call("AUTH", "pw") == (
        b"-ERR AUTH <password> called without any password configured for the default user. "
        b"Are you sure your configuration is correct?\r\n")
    assert c.call("AUTH", "default", "anything") == b"+OK\r\n"
    assert c.call("AUTH", "nobody", "pw") == (
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n")
    assert c.call("AUTH", "a", "b", "c") == b"-ERR syntax error\r\n"
    assert c.call("AUTH") == arity("auth")


secured = module_server("--requirepass", "s3cret")


def test_requirepass_flow(secured: ServerProcess) -> None:
    c = Conn(secured)
    try:
        assert c.call("GET", "x") == b"-NOAUTH Authentication required.\r\n"
        reply = c.call("HELLO", "3")
        assert reply.startswith(
            b"-NOAUTH HELLO must be called with the client already authenticated, otherwise ")
        if TARGET != "redis":  # Redis 7.0 words it "the HELLO AUTH <user> <pass> option"
            assert reply == (
                b"-NOAUTH HELLO must be called with the client already authenticated, "
                b"otherwise the HELLO <proto> AUTH <user> <pass> option can be used to "
                b"authenticate the client and select the RESP protocol version at the same "
                b"time\r\n")
        assert c.call("AUTH", "wrong") == (
            b"-WRONGPASS invalid username-password pair or user is disabled.\r\n")
        assert c.call("AUTH", "default", "wrong").startswith(b"-WRONGPASS")
        assert c.call("AUTH", "s3cret") == b"+OK\r\n"
        assert c.call("PING") == b"+PONG\r\n"
        assert c.call("ACL", "WHOAMI") == bulk("default")
        # RESET logs the connection out again.
        assert c.call("RESET") == b"+RESET\r\n"
        assert c.call("PING") == b"-NOAUTH Authentication required.\r\n"
        assert c.call("HELLO", "3", "AUTH", "default", "s3cret").startswith(b"%7\r\n")
        assert c.call("PING") == b"+PONG\r\n"
    finally:
        c.close()


# -- SELECT, QUIT, RESET ------------------------------------------------------------------------
def test_select(c: Conn, srv: ServerProcess) -> None:
    assert c.call("SELECT", "15") == b"+OK\r\n"
    assert c.call("SET", "k", "in15") == b"+OK\r\n"
    assert c.call("SELECT", "0") == b"+OK\r\n"
    assert c.call("GET", "k") == b"$-1\r\n"
    assert c.call("SELECT", "16") == b"-ERR DB index is out of range\r\n"
    assert c.call("SELECT", "-1") == b"-ERR DB index is out of range\r\n"
    assert c.call("SELECT", "x") == b"-ERR value is not an integer or out of range\r\n"
    assert c.call("SELECT") == arity("select")
    other = Conn(srv)  # the selected database is per connection
    try:
        other.call("SELECT", "15")
        assert other.call("GET", "k") == bulk("in15")
    finally:
        other.close()


def test_quit_answers_then_closes(srv: ServerProcess) -> None:
    c = Conn(srv)
    c.sock.sendall(encode("QUIT") + encode("PING"))
    assert c.read() == b"+OK\r\n"
    assert c.at_eof()
    c.close()


def test_reset_clears_connection_state(c: Conn) -> None:
    c.call("HELLO", "3", "SETNAME", "named")
    c.call("SELECT", "3")
    c.call("WATCH", "w")
    assert c.call("MULTI") == b"+OK\r\n"
    assert c.call("SET", "x", "1") == b"+QUEUED\r\n"
    assert c.call("RESET") == b"+RESET\r\n"
    # Back to RESP2, db 0, no name, no transaction.
    assert c.call("CLIENT", "GETNAME") == b"$-1\r\n"
    assert c.call("EXEC") == b"-ERR EXEC without MULTI\r\n"
    info = c.call("CLIENT", "INFO")
    assert b" db=0 " in info and b" multi=-1 " in info and b" flags=N " in info
    assert c.call("EXISTS", "x") == b":0\r\n"
    assert c.call("RESET", "x") == arity("reset")


def test_acl_whoami(c: Conn) -> None:
    assert c.call("ACL", "WHOAMI") == bulk("default")
    assert c.call("ACL", "WHOAMI", "x") == arity("acl|whoami")
    assert c.call("ACL", "NOPE") == b"-ERR unknown subcommand 'NOPE'. Try ACL HELP.\r\n"


# -- CLIENT -------------------------------------------------------------------------------------
def test_client_id_name_and_errors(c: Conn) -> None:
    client_id = int(c.call("CLIENT", "ID")[1:-2])
    assert client_id > 0
    assert c.call("CLIENT", "GETNAME") == b"$-1\r\n"
    assert c.call("CLIENT", "SETNAME", "worker-1") == b"+OK\r\n"
    assert c.call("CLIENT", "GETNAME") == bulk("worker-1")
    for bad in ("a b", "a\nb", "caf\xe9"):
        assert c.call("CLIENT", "SETNAME", bad) == (
            b"-ERR Client names cannot contain spaces, newlines or special characters.\r\n")
    assert c.call("CLIENT", "SETNAME", "") == b"+OK\r\n"  # an empty name clears it
    assert c.call("CLIENT", "GETNAME") == b"$-1\r\n"
    assert c.call("CLIENT") == arity("client")
    assert c.call("CLIENT", "BOGUS") == b"-ERR unknown subcommand 'BOGUS'. Try CLIENT HELP.\r\n"
    assert c.call("CLIENT", "SETNAME") == arity("client|setname")
    help_reply = c.call("CLIENT", "HELP")
    assert help_reply.startswith(b"*")
    assert b"+CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n" in help_reply
    assert help_reply.endswith(b"+HELP\r\n+    Prints this help.\r\n")


def test_client_info_and_list(c: Conn, srv: ServerProcess) -> None:
    c.call("CLIENT", "SETNAME", "lister")
    my_id = c.call("CLIENT", "ID")[1:-2].decode()
    info = c.call("CLIENT", "INFO")
    body = info.split(b"\r\n", 1)[1].decode()
    fields = dict(f.split("=", 1) for f in body.strip().split(" "))
    assert list(fields)[:8] == ["id", "addr", "laddr", "fd", "name", "age", "idle", "flags"]
    assert fields["id"] == my_id and fields["name"] == "lister"
    assert fields["cmd"] == "client|info" and fields["db"] == "0" and fields["resp"] == "2"
    for name in ("sub", "psub", "multi", "qbuf", "obl", "omem", "tot-mem", "user", "redir"):
        assert name in fields
    other = Conn(srv)
    try:
        other_id = other.call("CLIENT", "ID")[1:-2].decode()
        listing = c.call("CLIENT", "LIST").decode()
        assert f"id={my_id} " in listing and f"id={other_id} " in listing
        assert listing.endswith("\n\r\n")
        only = c.call("CLIENT", "LIST", "ID", other_id, "999999").decode()
        assert f"id={other_id} " in only and f"id={my_id} " not in only
        assert c.call("CLIENT", "LIST", "TYPE", "normal").count(b"id=") >= 2
        assert c.call("CLIENT", "LIST", "TYPE", "pubsub") == b"$0\r\n\r\n"
        assert c.call("CLIENT", "LIST", "TYPE", "foo") == b"-ERR Unknown client type 'foo'\r\n"
        assert c.call("CLIENT", "LIST", "ID", "x") == b"-ERR Invalid client ID\r\n"
        assert c.call("CLIENT", "LIST", "foo") == b"-ERR syntax error\r\n"
    finally:
        other.close()


def test_client_info_flags_and_multi(c: Conn) -> None:
    c.call("MULTI")
    c.call("PING")
    c.call("PING")
    # CLIENT INFO is queued inside MULTI; run it from EXEC to see the transaction state.
    c.call("CLIENT", "INFO")
    reply = c.call("EXEC")
    assert b" flags=x " in reply and b" multi=3 " in reply


def test_client_list_flags_in_redis_order(c: Conn, srv: ServerProcess) -> None:
    """Several flags at once come in Redis's order: O first, then P x b t R B d c U e T."""
    watcher, monitor = Conn(srv), Conn(srv)
    try:
        watcher.call("WATCH", "k")
        c.call("SET", "k", "touched")
        watcher.call("MULTI")
        monitor.call("CLIENT", "TRACKING", "ON")
        monitor.call("MONITOR")
        flags = {}
        for line in c.call("CLIENT", "LIST").decode().split("\r\n")[1].splitlines():
            fields = dict(field.split("=", 1) for field in line.split())
            flags[fields["cmd"]] = fields["flags"]
        assert flags == {"multi": "xd", "monitor": "Ot", "client|list": "N"}
    finally:
        watcher.close()
        monitor.close()


def test_client_kill(c: Conn, srv: ServerProcess) -> None:
    victim = Conn(srv)
    try:
        victim_id = victim.call("CLIENT", "ID")[1:-2].decode()
        assert c.call("CLIENT", "KILL", "ID", victim_id) == b":1\r\n"
        assert victim.at_eof()
    finally:
        victim.close()
    victim = Conn(srv)
    try:
        info = victim.call("CLIENT", "INFO").decode()
        addr = info.split("addr=", 1)[1].split(" ", 1)[0]
        assert c.call("CLIENT", "KILL", addr) == b"+OK\r\n"  # the old addr form
        assert victim.at_eof()
    finally:
        victim.close()
    assert c.call("CLIENT", "KILL", "1.2.3.4:5") == b"-ERR No such client\r\n"
    assert c.call("CLIENT", "KILL", "ID", "999999") == b":0\r\n"
    assert c.call("CLIENT", "KILL", "ID", "0") == b"-ERR client-id should be greater than 0\r\n"
    assert c.call("CLIENT", "KILL", "ID", "x") == b"-ERR client-id should be greater than 0\r\n"
    assert c.call("CLIENT", "KILL", "TYPE", "foo") == b"-ERR Unknown client type 'foo'\r\n"
    assert c.call("CLIENT", "KILL", "SKIPME", "maybe") == b"-ERR syntax error\r\n"
    assert c.call("CLIENT", "KILL", "FOO", "bar") == b"-ERR syntax error\r\n"
    assert c.call("CLIENT", "KILL", "ID", "1", "SKIPME") == b"-ERR syntax error\r\n"


def test_client_kill_self_replies_first(srv: ServerProcess) -> None:
    c = Conn(srv)
    my_id = c.call("CLIENT", "ID")[1:-2].decode()
    assert c.call("CLIENT", "KILL", "ID", my_id, "SKIPME", "no") == b":1\r\n"
    assert c.at_eof()
    c.close()


def test_client_no_evict_and_unblock(c: Conn) -> None:
    assert c.call("CLIENT", "NO-EVICT", "on") == b"+OK\r\n"
    assert b" flags=e " in c.call("CLIENT", "INFO")
    assert c.call("CLIENT", "NO-EVICT", "off") == b"+OK\r\n"
    assert c.call("CLIENT", "NO-EVICT", "maybe") == b"-ERR syntax error\r\n"
    my_id = c.call("CLIENT", "ID")[1:-2]
    assert c.call("CLIENT", "UNBLOCK", my_id) == b":0\r\n"  # not blocked
    assert c.call("CLIENT", "UNBLOCK", "999999") == b":0\r\n"
    assert c.call("CLIENT", "UNBLOCK", "x") == (
        b"-ERR value is not an integer or out of range\r\n")
    assert c.call("CLIENT", "UNBLOCK", my_id, "later") == (
        b"-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n")


@ours_only
def test_client_setinfo_and_no_touch(c: Conn) -> None:
    assert c.call("CLIENT", "SETINFO", "LIB-NAME", "mylib") == b"+OK\r\n"
    assert c.call("CLIENT", "SETINFO", "lib-ver", "1.2.3") == b"+OK\r\n"
    info = c.call("CLIENT", "INFO")
    assert b" lib-name=mylib lib-ver=1.2.3" in info
    assert c.call("CLIENT", "SETINFO", "Lib-Name", "a b") == (
        b"-ERR Lib-Name cannot contain spaces, newlines or special characters.\r\n")
    assert c.call("CLIENT", "SETINFO", "colour", "x") == b"-ERR Unrecognized option 'colour'\r\n"
    assert c.call("CLIENT", "SETINFO", "lib-name") == arity("client|setinfo")
    assert c.call("CLIENT", "NO-TOUCH", "on") == b"+OK\r\n"
    assert b" flags=T " in c.call("CLIENT", "INFO")
    assert c.call("CLIENT", "NO-TOUCH", "off") == b"+OK\r\n"
    # RESET keeps the library attributes (they describe the library, not the session).
    c.call("RESET")
    assert b" lib-name=mylib " in c.call("CLIENT", "INFO")
