"""ACL CAT / LIST / GETUSER / USERS / WHOAMI / LOG: the default user as Redis describes it,
and the log of failed authentications.

Category membership is compared with Debian's redis-server for every command both servers
have. LIST and GETUSER follow Redis 8, whose default user carries sanitize-payload (7.0's
does not), so their exact replies are checked on this server only.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from tests.helpers import TARGET, ServerProcess
from tests.integration.server_fixtures import module_server
from tests.resp import Conn, ParsedConn

srv = module_server()
ours_only = pytest.mark.skipif(TARGET == "redis", reason="Redis 8's default user")

CATEGORIES = [
    b"keyspace", b"read", b"write", b"set", b"sortedset", b"list", b"hash", b"string",
    b"bitmap", b"hyperloglog", b"geo", b"stream", b"pubsub", b"admin", b"fast", b"slow",
    b"blocking", b"dangerous", b"connection", b"transaction", b"scripting",
]
FOO_SHA256 = b"2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"


@pytest.fixture
def c(srv: ServerProcess) -> Iterator[Conn]:
    conn = Conn(srv)
    yield conn
    conn.call("CONFIG", "SET", "requirepass", "")
    conn.close()


def bulk(*items: bytes) -> bytes:
    return b"".join(b"$%d\r\n%s\r\n" % (len(item), item) for item in items)


def test_categories_in_redis_order(srv: ServerProcess) -> None:
    client = redis.Redis(host=srv.host, port=srv.port)
    assert client.execute_command("ACL", "CAT") == CATEGORIES


def test_category_members_match_redis(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    ours = redis.Redis(host=srv.host, port=srv.port, decode_responses=True)
    ref = redis.Redis(host=redis_ref.host, port=redis_ref.port, decode_responses=True)
    for client in (ours, ref):
        client.response_callbacks.clear()  # (COMMAND LIST is no COMMAND reply to parse)
    both = set(ours.execute_command("COMMAND", "LIST")) & set(
        ref.execute_command("COMMAND", "LIST"))
    assert {"xadd", "xgroup", "xgroup|create", "acl|cat", "client|list"} <= both
    for category in CATEGORIES:
        members = set(ours.execute_command("ACL", "CAT", category.upper()))
        assert members == set(ours.execute_command("COMMAND", "LIST", "FILTERBY", "ACLCAT",
                                                   category))
        expected = set(ref.execute_command("ACL", "CAT", category)) & both
        assert members & both == expected, category


def test_containers_are_slow(srv: ServerProcess) -> None:
    client = redis.Redis(host=srv.host, port=srv.port, decode_responses=True)
    slow = set(client.execute_command("ACL", "CAT", "slow"))
    assert {"acl", "client", "config", "xgroup", "xinfo", "object"} <= slow
    assert "xadd" not in slow  # @fast


def test_cat_errors(c: Conn) -> None:
    assert c.call("ACL", "CAT", "nosuch") == b"-ERR Unknown category 'nosuch'\r\n"
    assert c.call("ACL", "Cat", "read", "write") == (
        b"-ERR unknown subcommand or wrong number of arguments for 'Cat'. Try ACL HELP.\r\n")
    assert c.call("ACL", "GETUSER") == (
        b"-ERR wrong number of arguments for 'acl|getuser' command\r\n")
    assert c.call("ACL", "LIST", "x") == (
        b"-ERR wrong number of arguments for 'acl|list' command\r\n")


def test_unknown_user(c: Conn) -> None:
    assert c.call("ACL", "GETUSER", "nobody") == b"$-1\r\n"
    assert c.call("ACL", "GETUSER", "Default") == b"$-1\r\n"  # names are case-sensitive
    c.call("HELLO", "3")
    assert c.call("ACL", "GETUSER", "nobody") == b"_\r\n"


@ours_only
def test_default_user_without_a_password(c: Conn) -> None:
    assert c.call("ACL", "LIST") == b"*1\r\n" + bulk(
        b"user default on nopass sanitize-payload ~* &* +@all")
    c.call("HELLO", "3")
    assert c.call("ACL", "GETUSER", "default") == (
        b"%6\r\n" + bulk(b"flags") + b"~3\r\n" + bulk(b"on", b"nopass", b"sanitize-payload")
        + bulk(b"passwords") + b"*0\r\n" + bulk(b"commands", b"+@all", b"keys", b"~*",
                                                 b"channels", b"&*", b"selectors")
        + b"*0\r\n")
    assert c.call("ACL", "USERS") == b"*1\r\n" + bulk(b"default")
    assert c.call("ACL", "WHOAMI") == bulk(b"default")


@ours_only
def test_default_user_with_requirepass(c: Conn) -> None:
    assert c.call("CONFIG", "SET", "requirepass", "foo") == b"+OK\r\n"
    assert c.call("AUTH", "foo") == b"+OK\r\n"
    assert c.call("ACL", "LIST") == b"*1\r\n" + bulk(
        b"user default on sanitize-payload #" + FOO_SHA256 + b" ~* &* +@all")
    assert c.call("ACL", "GETUSER", "default") == (
        b"*12\r\n" + bulk(b"flags") + b"*2\r\n" + bulk(b"on", b"sanitize-payload")
        + bulk(b"passwords") + b"*1\r\n" + bulk(FOO_SHA256)
        + bulk(b"commands", b"+@all", b"keys", b"~*", b"channels", b"&*", b"selectors")
        + b"*0\r\n")


# -- ACL LOG ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def guarded() -> Iterator[ServerProcess]:
    proc = ServerProcess(TARGET, extra_args=["--appendonly", "no", "--requirepass", "foo"])
    yield proc.start()
    proc.stop()


@pytest.fixture
def admin(guarded: ServerProcess) -> Iterator[ParsedConn]:
    conn = ParsedConn(guarded)
    assert conn.call("AUTH", "foo") == b"OK"
    conn.call("ACL", "LOG", "RESET")
    yield conn
    conn.call("CONFIG", "SET", "acllog-max-len", "128")
    conn.sock.close()


def log(admin: ParsedConn, *count: str) -> list[dict[bytes, object]]:
    entries = admin.call("ACL", "LOG", *count)
    assert isinstance(entries, list)
    return [dict(zip(e[::2], e[1::2], strict=True)) for e in entries]


def fail(proc: ServerProcess, *auth: str) -> None:
    conn = ParsedConn(proc)
    reply = conn.call(*auth)
    assert isinstance(reply, Exception) and str(reply).startswith("WRONGPASS")
    conn.sock.close()


def test_failed_authentications_are_logged(guarded: ServerProcess, admin: ParsedConn) -> None:
    fail(guarded, "auth", "wrong")
    fail(guarded, "AUTH", "bob", "x")
    fail(guarded, "HELLO", "3", "AUTH", "default", "nope")
    entries = log(admin)
    # Newest first; the object is the command as it was sent.
    assert [(e[b"object"], e[b"username"]) for e in entries] == [
        (b"HELLO", b"default"), (b"AUTH", b"bob"), (b"auth", b"default")]
    for entry in entries:
        assert (entry[b"count"], entry[b"reason"], entry[b"context"]) == (1, b"auth", b"toplevel")
        assert 0 <= float(entry[b"age-seconds"]) < 10  # type: ignore[arg-type]
        info = entry[b"client-info"]
        assert isinstance(info, bytes) and info.startswith(b"id=")
        assert b" cmd=" in info and b" user=default " in info
    assert [e[b"username"] for e in log(admin, "1")] == [b"default"]
    assert log(admin, "-1") == []


def test_repeated_failures_share_an_entry(guarded: ServerProcess, admin: ParsedConn) -> None:
    fail(guarded, "AUTH", "bob", "x")
    fail(guarded, "AUTH", "carol", "x")
    fail(guarded, "AUTH", "bob", "y")  # like the older entry: counted there, moved to the front
    entries = log(admin)
    assert [(e[b"username"], e[b"count"]) for e in entries] == [(b"bob", 2), (b"carol", 1)]
    fail(guarded, "auth", "bob", "y")  # another object (as sent): a new entry
    assert [(e[b"object"], e[b"count"]) for e in log(admin)] == [
        (b"auth", 1), (b"AUTH", 2), (b"AUTH", 1)]


def test_log_length_and_reset(guarded: ServerProcess, admin: ParsedConn) -> None:
    assert admin.call("CONFIG", "SET", "acllog-max-len", "2") == b"OK"
    for user in ("u1", "u2", "u3"):
        fail(guarded, "AUTH", user, "x")
    assert [e[b"username"] for e in log(admin)] == [b"u3", b"u2"]
    assert admin.call("ACL", "LOG", "RESET") == b"OK"
    assert log(admin) == []
    assert str(admin.call("ACL", "LOG", "x")) == "ERR value is not an integer or out of range"
    assert str(admin.call("ACL", "LOG", "1", "2")) == (
        "ERR unknown subcommand or wrong number of arguments for 'LOG'. Try ACL HELP.")


@ours_only
def test_entry_ids_and_timestamps(guarded: ServerProcess, admin: ParsedConn) -> None:
    fail(guarded, "AUTH", "dave", "x")
    fail(guarded, "AUTH", "erin", "x")
    fail(guarded, "AUTH", "dave", "y")
    dave, erin = log(admin)
    assert dave[b"username"] == b"dave" and erin[b"username"] == b"erin"
    assert dave[b"entry-id"] + 1 == erin[b"entry-id"]  # type: ignore[operator]
    created, updated = dave[b"timestamp-created"], dave[b"timestamp-last-updated"]
    assert isinstance(created, int) and isinstance(updated, int)
    assert created <= updated <= erin[b"timestamp-created"] + 1000  # type: ignore[operator]
