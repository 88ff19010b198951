"""Keyspace commands end to end: DEL, UNLINK, EXISTS, TYPE, KEYS, SCAN, RANDOMKEY, DBSIZE,
RENAME(NX), the EXPIRE family, TTL/PTTL, PERSIST, FLUSHDB/FLUSHALL, SWAPDB, MOVE, OBJECT
ENCODING, the minimal string type and WRONGTYPE; lazy and active expiry.

`XSTREAMD_TEST_TARGET=redis` runs this file against Debian's redis-server 7.0.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis

from tests.helpers import TARGET, ServerProcess
from tests.integration.server_fixtures import flushed_conn, module_server
from tests.resp import Conn

SYNTAX = b"-ERR syntax error\r\n"
NOT_INT = b"-ERR value is not an integer or out of range\r\n"
WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"


def arity(name: str) -> bytes:
    return f"-ERR wrong number of arguments for '{name}' command\r\n".encode()


srv = module_server("--enable-debug-command", "local")


@pytest.fixture
def c(srv: ServerProcess) -> Iterator[Conn]:
    with flushed_conn(srv) as conn:
        yield conn
        conn.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")


@pytest.fixture
def r(srv: ServerProcess, c: Conn) -> Iterator[redis.Redis]:
    client = redis.Redis(host=srv.host, port=srv.port)
    yield client
    client.close()


def wait_until(predicate: object, timeout: float = 10.0) -> bool:
    """Poll a condition the server reaches on its own (active expiry); no timing asserted."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


# -- the string type ----------------------------------------------------------------------------
def test_set_get_and_options(c: Conn) -> None:
    assert c.call("GET", "k") == b"$-1\r\n"
    assert c.call("SET", "k", "v") == b"+OK\r\n"
    assert c.call("GET", "k") == b"$1\r\nv\r\n"
    assert c.call("SET", "k", "w", "NX") == b"$-1\r\n"
    assert c.call("SET", "k", "w", "XX", "GET") == b"$1\r\nv\r\n"
    assert c.call("SET", "new", "1", "XX") == b"$-1\r\n"
    assert c.call("SET", "k", "1", "NX", "XX") == SYNTAX
    assert c.call("SET", "k", "1", "EX") == SYNTAX
    assert c.call("SET", "k", "1", "EX", "10", "PX", "10") == SYNTAX
    assert c.call("SET", "k", "1", "KEEPTTL", "EX", "10") == SYNTAX
    assert c.call("SET", "k", "1", "EX", "0") == b"-ERR invalid expire time in 'set' command\r\n"
    assert c.call("SET", "k", "1", "PX", "-5") == b"-ERR invalid expire time in 'set' command\r\n"
    assert c.call("SET", "k", "1", "EX", "x") == NOT_INT
    assert c.call("SET", "k", "1", "EX", "100") == b"+OK\r\n"
    assert c.call("TTL", "k") == b":100\r\n"
    assert c.call("SET", "k", "2", "KEEPTTL") == b"+OK\r\n"
    assert c.call("TTL", "k") == b":100\r\n"
    assert c.call("SET", "k", "3") == b"+OK\r\n"
    assert c.call("TTL", "k") == b":-1\r\n"
    assert c.call("SET", "k") == arity("set")
    assert c.call("GET", "a", "b") == arity("get")


def test_strlen(c: Conn) -> None:
    assert c.call("STRLEN", "k") == b":0\r\n"
    assert c.call("SET", "k", "hello") == b"+OK\r\n"
    assert c.call("STRLEN", "k") == b":5\r\n"
    assert c.call("SET", "n", "12345678901234") == b"+OK\r\n"  # (an int-encoded string)
    assert c.call("STRLEN", "n") == b":14\r\n"
    assert c.call("STRLEN") == arity("strlen")
    assert c.call("XADD", "s", "*", "f", "v").startswith(b"$")
    assert c.call("STRLEN", "s") == WRONGTYPE


def test_wrongtype_against_a_stream(c: Conn) -> None:
    added = c.call("XADD", "s", "*", "f", "v")
    if added.startswith(b"-ERR unknown command"):
        pytest.skip("no stream commands in this build")
    assert c.call("GET", "s") == WRONGTYPE
    assert c.call("SET", "s", "x", "GET") == WRONGTYPE
    assert c.call("TYPE", "s") == b"+stream\r\n"
    assert c.call("OBJECT", "ENCODING", "s") == b"$6\r\nstream\r\n"
    assert c.call("SET", "s", "x") == b"+OK\r\n"  # SET overwrites whatever type
    assert c.call("TYPE", "s") == b"+string\r\n"
    assert c.call("SET", "str", "x") == b"+OK\r\n"
    assert c.call("XLEN", "str") == WRONGTYPE


# -- DEL, EXISTS, TYPE, DBSIZE, KEYS, RANDOMKEY ------------------------------------------------
def test_del_unlink_exists_type_dbsize(c: Conn) -> None:
    for key in ("a", "b", "c"):
        c.call("SET", key, "1")
    assert c.call("DBSIZE") == b":3\r\n"
    assert c.call("EXISTS", "a", "a", "nope") == b":2\r\n"
    assert c.call("TYPE", "a") == b"+string\r\n"
    assert c.call("TYPE", "nope") == b"+none\r\n"
    assert c.call("DEL", "a", "nope", "a") == b":1\r\n"
    assert c.call("UNLINK", "b", "c") == b":2\r\n"
    assert c.call("DBSIZE") == b":0\r\n"
    assert c.call("DEL") == arity("del")
    assert c.call("EXISTS") == arity("exists")
    assert c.call("DBSIZE", "x") == arity("dbsize")


def test_keys_and_randomkey(r: redis.Redis, c: Conn) -> None:
    assert c.call("RANDOMKEY") == b"$-1\r\n"
    keys = [b"user:1", b"user:2", b"user:10", b"order:1", b"h\xffllo", b"a*b"]
    for key in keys:
        r.set(key, b"v")
    assert sorted(r.keys("*")) == sorted(keys)
    assert sorted(r.keys("user:?")) == [b"user:1", b"user:2"]
    assert sorted(r.keys("user:[0-1]*")) == [b"user:1", b"user:10"]
    assert r.keys(b"h?llo") == [b"h\xffllo"]
    assert r.keys("a\\*b") == [b"a*b"]
    assert r.keys("nomatch*") == []
    assert r.randomkey() in keys


# -- SCAN ---------------------------------------------------------------------------------------
def test_scan_full_iteration_and_options(r: redis.Redis, c: Conn) -> None:
    keys = {b"key:%d" % i for i in range(300)}
    with r.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.set(key, b"v")
        pipe.execute()
    assert set(r.scan_iter(count=7)) == keys
    assert set(r.scan_iter(match="key:1?", count=50)) == {b"key:1%d" % i for i in range(10)}
    assert set(r.scan_iter(_type="string", count=100)) == keys
    assert list(r.scan_iter(_type="stream", count=100)) == []
    cursor, batch = r.scan(0, count=1000)
    assert cursor == 0 and set(batch) == keys


def test_scan_errors(c: Conn) -> None:
    assert c.call("SCAN") == arity("scan")
    assert c.call("SCAN", "x") == b"-ERR invalid cursor\r\n"
    assert c.call("SCAN", "") == b"-ERR invalid cursor\r\n" or TARGET == "redis"
    assert c.call("SCAN", "18446744073709551616") == b"-ERR invalid cursor\r\n"
    assert c.call("SCAN", "0", "COUNT", "0") == SYNTAX
    assert c.call("SCAN", "0", "COUNT", "x") == NOT_INT
    assert c.call("SCAN", "0", "MATCH") == SYNTAX
    assert c.call("SCAN", "0", "FOO", "bar") == SYNTAX
    assert c.call("SCAN", "0") == b"*2\r\n$1\r\n0\r\n*0\r\n"


@pytest.mark.skipif(TARGET == "redis", reason="string2ull came after 7.0's strtoul")
def test_scan_cursor_is_read_by_string2ull(c: Conn) -> None:
    """Redis 8 reads the cursor with string2ull: string2ll's form (a negative one refused),
    else strtoull's (leading spaces, a sign, leading zeros; to the end of the string)."""
    empty = b"*2\r\n$1\r\n0\r\n*0\r\n"
    for cursor in ("0", "+0", "-0", " 0", "00"):
        assert c.call("SCAN", cursor) == empty, cursor
    for cursor in ("", " ", "-1", "-", "1 ", "0x1", "1.0", "18446744073709551616"):
        assert c.call("SCAN", cursor) == b"-ERR invalid cursor\r\n", cursor


def test_scan_survives_concurrent_changes(r: redis.Redis, c: Conn) -> None:
    stable = {b"stable:%d" % i for i in range(200)}
    for key in stable:
        r.set(key, b"v")
    seen: set[bytes] = set()
    cursor, step = 0, 0
    while True:
        cursor, batch = r.scan(cursor, count=5)
        seen.update(batch)
        r.set(b"new:%d" % step, b"v")  # keys come and go between calls
        r.delete(b"new:%d" % (step - 3))
        step += 1
        if cursor == 0:
            break
    assert stable <= seen


# -- RENAME, MOVE, SWAPDB ----------------------------------------------------------------------
def test_rename_and_renamenx(c: Conn) -> None:
    assert c.call("RENAME", "nope", "x") == b"-ERR no such key\r\n"
    assert c.call("RENAMENX", "nope", "x") == b"-ERR no such key\r\n"
    c.call("SET", "a", "1")
    c.call("EXPIRE", "a", "100")
    assert c.call("RENAME", "a", "a") == b"+OK\r\n"
    assert c.call("RENAMENX", "a", "a") == b":0\r\n"
    assert c.call("RENAME", "a", "b") == b"+OK\r\n"
    assert c.call("EXISTS", "a") == b":0\r\n"
    assert c.call("TTL", "b") == b":100\r\n"  # the TTL moves with the value
    c.call("SET", "c", "2")
    assert c.call("RENAMENX", "b", "c") == b":0\r\n"
    assert c.call("RENAME", "b", "c") == b"+OK\r\n"  # overwrites, TTL included
    assert c.call("GET", "c") == b"$1\r\n1\r\n"
    assert c.call("RENAMENX", "c", "d") == b":1\r\n"
    assert c.call("RENAME", "c") == arity("rename")


def test_move(c: Conn) -> None:
    c.call("SET", "k", "v")
    assert c.call("MOVE", "k", "0") == b"-ERR source and destination objects are the same\r\n"
    assert c.call("MOVE", "k", "16") == b"-ERR DB index is out of range\r\n"
    assert c.call("MOVE", "k", "x") == NOT_INT
    assert c.call("MOVE", "nope", "1") == b":0\r\n"
    assert c.call("MOVE", "k", "1") == b":1\r\n"
    assert c.call("EXISTS", "k") == b":0\r\n"
    c.call("SET", "k", "again")
    assert c.call("MOVE", "k", "1") == b":0\r\n"  # the target already has the key
    c.call("SELECT", "1")
    assert c.call("GET", "k") == b"$1\r\nv\r\n"


def test_swapdb(c: Conn, srv: ServerProcess) -> None:
    c.call("SET", "in0", "a")
    c.call("SELECT", "1")
    c.call("SET", "in1", "b")
    other = Conn(srv)  # stays on db 0 and sees the swapped content
    try:
        assert c.call("SWAPDB", "0", "1") == b"+OK\r\n"
        assert other.call("GET", "in1") == b"$1\r\nb\r\n"
        assert other.call("EXISTS", "in0") == b":0\r\n"
        assert c.call("GET", "in0") == b"$1\r\na\r\n"
    finally:
        other.close()
    assert c.call("SWAPDB", "0", "0") == b"+OK\r\n"
    assert c.call("SWAPDB", "x", "0") == b"-ERR invalid first DB index\r\n"
    assert c.call("SWAPDB", "0", "x") == b"-ERR invalid second DB index\r\n"
    assert c.call("SWAPDB", "0", "16") == b"-ERR DB index is out of range\r\n"
    assert c.call("SWAPDB", "-1", "0") == b"-ERR DB index is out of range\r\n"


# -- FLUSHDB / FLUSHALL ------------------------------------------------------------------------
def test_flushdb_and_flushall(c: Conn) -> None:
    c.call("SET", "a", "1")
    c.call("SELECT", "2")
    c.call("SET", "b", "1")
    assert c.call("FLUSHDB") == b"+OK\r\n"
    assert c.call("DBSIZE") == b":0\r\n"
    c.call("SET", "b", "1")
    c.call("SELECT", "0")
    assert c.call("DBSIZE") == b":1\r\n"
    assert c.call("FLUSHALL", "ASYNC") == b"+OK\r\n"
    assert c.call("DBSIZE") == b":0\r\n"
    assert c.call("FLUSHDB", "sync") == b"+OK\r\n"
    assert c.call("FLUSHDB", "lazy") == SYNTAX
    assert c.call("FLUSHALL", "sync", "async") == SYNTAX


# -- EXPIRE family ------------------------------------------------------------------------------
def test_expire_ttl_pttl_persist(c: Conn) -> None:
    assert c.call("TTL", "k") == b":-2\r\n"
    assert c.call("PTTL", "k") == b":-2\r\n"
    assert c.call("EXPIRE", "k", "10") == b":0\r\n"
    c.call("SET", "k", "v")
    assert c.call("TTL", "k") == b":-1\r\n"
    assert c.call("EXPIRE", "k", "100") == b":1\r\n"
    assert c.call("TTL", "k") == b":100\r\n"
    pttl = int(c.call("PTTL", "k")[1:-2])
    assert 99_000 < pttl <= 100_000
    assert c.call("PEXPIRE", "k", "5000") == b":1\r\n"
    assert c.call("TTL", "k") == b":5\r\n"
    assert c.call("PERSIST", "k") == b":1\r\n"
    assert c.call("PERSIST", "k") == b":0\r\n"
    assert c.call("PERSIST", "nope") == b":0\r\n"
    assert c.call("TTL", "k") == b":-1\r\n"


def test_expireat_and_expiretime(c: Conn) -> None:
    c.call("SET", "k", "v")
    when = int(time.time()) + 1000
    assert c.call("EXPIREAT", "k", str(when)) == b":1\r\n"
    assert c.call("EXPIRETIME", "k") == b":%d\r\n" % when
    assert c.call("PEXPIRETIME", "k") == b":%d\r\n" % (when * 1000)
    assert c.call("PEXPIREAT", "k", str(when * 1000 + 500)) == b":1\r\n"
    assert c.call("PEXPIRETIME", "k") == b":%d\r\n" % (when * 1000 + 500)
    assert c.call("EXPIRETIME", "nope") == b":-2\r\n"
    c.call("SET", "p", "v")
    assert c.call("EXPIRETIME", "p") == b":-1\r\n"
    # A time in the past deletes the key at once.
    assert c.call("EXPIREAT", "k", "1") == b":1\r\n"
    assert c.call("EXISTS", "k") == b":0\r\n"
    c.call("SET", "k", "v")
    assert c.call("EXPIRE", "k", "-1") == b":1\r\n"
    assert c.call("EXISTS", "k") == b":0\r\n"


def test_expire_options(c: Conn) -> None:
    c.call("SET", "k", "v")
    assert c.call("EXPIRE", "k", "100", "XX") == b":0\r\n"  # no TTL yet
    assert c.call("EXPIRE", "k", "100", "GT") == b":0\r\n"  # no TTL counts as infinite
    assert c.call("EXPIRE", "k", "100", "NX") == b":1\r\n"
    assert c.call("EXPIRE", "k", "200", "NX") == b":0\r\n"
    assert c.call("EXPIRE", "k", "200", "GT") == b":1\r\n"
    assert c.call("EXPIRE", "k", "150", "GT") == b":0\r\n"
    assert c.call("EXPIRE", "k", "300", "LT") == b":0\r\n"
    assert c.call("EXPIRE", "k", "50", "lt") == b":1\r\n"
    assert c.call("TTL", "k") == b":50\r\n"
    assert c.call("EXPIRE", "k", "60", "XX") == b":1\r\n"
    c.call("SET", "p", "v")
    assert c.call("EXPIRE", "p", "60", "LT") == b":1\r\n"
    assert c.call("EXPIRE", "k", "10", "NX", "XX") == (
        b"-ERR NX and XX, GT or LT options at the same time are not compatible\r\n")
    assert c.call("EXPIRE", "k", "10", "GT", "LT") == (
        b"-ERR GT and LT options at the same time are not compatible\r\n")
    assert c.call("EXPIRE", "k", "10", "FOO") == b"-ERR Unsupported option FOO\r\n"


def test_expire_errors(c: Conn) -> None:
    c.call("SET", "k", "v")
    assert c.call("EXPIRE", "k") == arity("expire")
    assert c.call("EXPIRE", "k", "x") == NOT_INT
    assert c.call("EXPIRE", "k", "1.5") == NOT_INT
    assert c.call("EXPIRE", "k", "9223372036854775807") == (
        b"-ERR invalid expire time in 'expire' command\r\n")
    assert c.call("PEXPIRE", "k", "9223372036854775807") == (
        b"-ERR invalid expire time in 'pexpire' command\r\n")
    assert c.call("EXPIREAT", "k", "9223372036854775807") == (
        b"-ERR invalid expire time in 'expireat' command\r\n")
    assert c.call("TTL", "k") == b":-1\r\n"  # a failed EXPIRE leaves the key alone


def test_lazy_expiry(c: Conn) -> None:
    assert c.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"+OK\r\n"
    c.call("SET", "k", "v", "PX", "1")
    c.call("SET", "keep", "v")
    time.sleep(0.05)
    # Nothing has touched the key yet: it still counts in DBSIZE, as in Redis.
    assert c.call("DBSIZE") == b":2\r\n"
    assert c.call("GET", "k") == b"$-1\r\n"  # the access expires it
    assert c.call("DBSIZE") == b":1\r\n"
    c.call("SET", "k2", "v", "PX", "1")
    time.sleep(0.05)
    assert c.call("KEYS", "*") == b"*1\r\n$4\r\nkeep\r\n"


def test_active_expiry_removes_untouched_keys(c: Conn) -> None:
    assert c.call("CONFIG", "RESETSTAT") == b"+OK\r\n"
    for i in range(50):
        c.call("SET", f"k{i}", "v", "PX", "10")
    c.call("SET", "keep", "v")
    assert wait_until(lambda: c.call("DBSIZE") == b":1\r\n")
    info = c.call("INFO", "stats").decode()
    assert "expired_keys:50\r\n" in info


# -- OBJECT ENCODING ---------------------------------------------------------------------------
def test_object_encoding(c: Conn) -> None:
    cases = {"123": b"int", "-9223372036854775808": b"int", "12345678901234567890": b"embstr",
             "007": b"embstr", "x" * 44: b"embstr", "x" * 45: b"raw"}
    for value, encoding in cases.items():
        c.call("SET", "k", value)
        assert c.call("OBJECT", "ENCODING", "k") == b"$%d\r\n%s\r\n" % (len(encoding), encoding)
    assert c.call("OBJECT", "ENCODING", "nope") == b"$-1\r\n"
    assert c.call("OBJECT", "ENCODING") == arity("object|encoding")
    assert c.call("OBJECT", "FOO", "k") == b"-ERR unknown subcommand 'FOO'. Try OBJECT HELP.\r\n"
    assert c.call("OBJECT", "HELP").startswith(b"*")
