"""XADD IDMP / IDMPAUTO, XCFGSET and XIDMPRECORD (Redis 8.6): idempotent production."""

from __future__ import annotations

import socket
import time

import pytest
import redis

from tests.helpers import TARGET, ServerProcess
from tests.resp import RawConn, encode

pytestmark = pytest.mark.skipif(TARGET == "redis", reason="Redis 8.6 (redis-server is 7.0)")


def _err(r: redis.Redis, *args: object) -> str:
    with pytest.raises(redis.ResponseError) as exc:
        r.execute_command(*args)
    return str(exc.value)


def test_syntax_errors(raw: RawConn) -> None:
    assert raw.call("XADD", "s", "IDMP", "p1", "*", "f", "v") == (
        b"-ERR Invalid stream ID specified as stream command argument\r\n")
    assert raw.call("XADD", "s", "IDMP", "p1", "i1", "1-1", "f", "v") == (
        b"-ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs\r\n")
    assert raw.call("XADD", "s", "IDMP", "p1", "i1", "IDMP", "p2", "i2", "*", "f", "v") == (
        b"-ERR syntax error, IDMP/IDMPAUTO specified multiple times\r\n")
    assert raw.call("XADD", "s", "IDMPAUTO", "p1", "IDMP", "p2", "i2", "*", "f", "v") == (
        b"-ERR syntax error, IDMP/IDMPAUTO specified multiple times\r\n")
    assert raw.call("XADD", "s", "IDMP", "", "i1", "*", "f", "v") == (
        b"-ERR syntax error, IDMP requires a non-empty producer ID\r\n")
    assert raw.call("XADD", "s", "IDMP", "p1", "", "*", "f", "v") == (
        b"-ERR syntax error, IDMP requires a non-empty idempotent ID\r\n")
    assert raw.call("XADD", "s", "IDMPAUTO", "", "*", "f", "v") == (
        b"-ERR syntax error, IDMPAUTO requires a non-empty producer ID\r\n")
    assert raw.call("EXISTS", "s") == b":0\r\n"


def test_duplicate_returns_the_original_id(r: redis.Redis) -> None:
    first = r.execute_command("XADD", "s", "IDMP", "p1", "payment-abc", "*", "amount", "100")
    again = r.execute_command("XADD", "s", "IDMP", "p1", "payment-abc", "*", "amount", "200")
    assert again == first
    assert r.xlen("s") == 1
    assert r.xrange("s") == [(first, {b"amount": b"100"})]
    other = r.execute_command("XADD", "s", "IDMP", "p2", "payment-abc", "*", "amount", "1")
    assert other != first and r.xlen("s") == 2  # iids are per producer
    binary = b"\x00\x01\x02\xff"
    a = r.execute_command("XADD", "s", "IDMP", "p1", binary, "*", "f", "v")
    assert r.execute_command("XADD", "s", "IDMP", "p1", binary, "*", "f", "dup") == a


def test_idmpauto_hashes_the_pairs_in_any_order(r: redis.Redis) -> None:
    a = r.execute_command("XADD", "s", "IDMPAUTO", "p", "*", "a", "1", "b", "2")
    assert r.execute_command("XADD", "s", "IDMPAUTO", "p", "*", "b", "2", "a", "1") == a
    b = r.execute_command("XADD", "s", "IDMPAUTO", "p", "*", "a", "1", "b", "3")
    assert b != a and r.xlen("s") == 2
    # "ab"+"c" and "a"+"bc" differ: the field's length is part of the hash
    c = r.execute_command("XADD", "s", "IDMPAUTO", "p", "*", "ab", "c")
    assert r.execute_command("XADD", "s", "IDMPAUTO", "p", "*", "a", "bc") != c


def test_xinfo_stream_fields_in_redis_order(raw: RawConn, r: redis.Redis) -> None:
    r.execute_command("XADD", "s", "IDMP", "p1", "i1", "*", "f", "v")
    r.execute_command("XADD", "s", "IDMP", "p1", "i1", "*", "f", "v")
    r.execute_command("XADD", "s", "IDMPAUTO", "p2", "*", "f", "v")
    info = raw.info("s")
    assert list(info)[:13] == [
        b"length", b"radix-tree-keys", b"radix-tree-nodes", b"last-generated-id",
        b"max-deleted-entry-id", b"entries-added", b"recorded-first-entry-id",
        b"idmp-duration", b"idmp-maxsize", b"pids-tracked", b"iids-tracked", b"iids-added",
        b"iids-duplicates"]
    assert [info[k] for k in (b"idmp-duration", b"idmp-maxsize", b"pids-tracked",
                              b"iids-tracked", b"iids-added", b"iids-duplicates")] == [
        100, 100, 2, 2, 2, 1]
    full = r.execute_command("XINFO", "STREAM", "s", "FULL")
    assert list(full)[7:13] == [b"idmp-duration", b"idmp-maxsize", b"pids-tracked",
                                b"iids-tracked", b"iids-added", b"iids-duplicates"]


def test_maxsize_evicts_the_oldest_iid(r: redis.Redis) -> None:
    r.xadd("s", {"f": "v"})
    assert r.execute_command("XCFGSET", "s", "IDMP-MAXSIZE", "2") == b"OK"
    first = r.execute_command("XADD", "s", "IDMP", "p", "1", "*", "f", "v")
    r.execute_command("XADD", "s", "IDMP", "p", "2", "*", "f", "v")
    r.execute_command("XADD", "s", "IDMP", "p", "3", "*", "f", "v")
    assert r.execute_command("XADD", "s", "IDMP", "p", "1", "*", "f", "v") != first
    assert r.xinfo_stream("s")["iids-tracked"] == 2


def test_xcfgset(raw: RawConn, r: redis.Redis) -> None:
    assert raw.call("XCFGSET", "nokey", "IDMP-DURATION", "5") == b"-ERR no such key\r\n"
    r.set("str", "x")
    assert raw.call("XCFGSET", "str", "IDMP-DURATION", "5").startswith(b"-WRONGTYPE")
    r.execute_command("XADD", "s", "IDMP", "p", "i", "*", "f", "v")
    assert raw.call("XCFGSET", "s") == b"-ERR At least one parameter must be specified\r\n"
    assert raw.call("XCFGSET", "s", "IDMP-DURATION", "0") == (
        b"-ERR IDMP-DURATION must be between 1 and 86400 seconds\r\n")
    assert raw.call("XCFGSET", "s", "IDMP-DURATION", "86401") == (
        b"-ERR IDMP-DURATION must be between 1 and 86400 seconds\r\n")
    assert raw.call("XCFGSET", "s", "IDMP-MAXSIZE", "10001") == (
        b"-ERR IDMP-MAXSIZE must be between 1 and 10000 entries\r\n")
    assert raw.call("XCFGSET", "s", "IDMP-DURATION", "x") == (
        b"-ERR value is not an integer or out of range\r\n")
    assert raw.call("XCFGSET", "s", "IDMP-DURATION", "5", "IDMP-DURATION", "6") == (
        b"-ERR IDMP-DURATION specified multiple times\r\n")
    assert raw.call("XCFGSET", "s", "IDMP-MAXSIZE", "5", "IDMP-MAXSIZE", "6") == (
        b"-ERR IDMP-MAXSIZE specified multiple times\r\n")
    assert raw.call("XCFGSET", "s", "IDMP-DURATION") == b"-ERR syntax error\r\n"
    assert raw.call("XCFGSET", "s", "BOGUS", "1") == b"-ERR syntax error\r\n"
    # The same values clear nothing; a changed one clears the records.
    assert raw.call("XCFGSET", "s", "IDMP-DURATION", "100", "IDMP-MAXSIZE", "100") == b"+OK\r\n"
    assert r.xinfo_stream("s")["iids-tracked"] == 1
    assert raw.call("XCFGSET", "s", "IDMP-MAXSIZE", "50") == b"+OK\r\n"
    info = r.xinfo_stream("s")
    assert (info["idmp-maxsize"], info["iids-tracked"], info["pids-tracked"]) == (50, 0, 0)


def test_config_sets_the_limits_of_new_streams(r: redis.Redis) -> None:
    r.xadd("old", {"f": "v"})
    r.config_set("stream-idmp-duration", 300)
    r.config_set("stream-idmp-maxsize", 7)
    try:
        r.xadd("new", {"f": "v"})
        assert r.config_get("stream-idmp-*") == {"stream-idmp-duration": "300",
                                                 "stream-idmp-maxsize": "7"}
        new, old = r.xinfo_stream("new"), r.xinfo_stream("old")
        assert (new["idmp-duration"], new["idmp-maxsize"]) == (300, 7)
        assert (old["idmp-duration"], old["idmp-maxsize"]) == (100, 100)
        with pytest.raises(redis.ResponseError, match="must be between 1 and 86400"):
            r.config_set("stream-idmp-duration", 0)
    finally:
        r.config_set("stream-idmp-duration", 100)
        r.config_set("stream-idmp-maxsize", 100)


def test_records_expire_after_the_duration(r: redis.Redis) -> None:
    r.xadd("s", {"f": "v"})
    r.execute_command("XCFGSET", "s", "IDMP-DURATION", "1")
    first = r.execute_command("XADD", "s", "IDMP", "p", "i", "*", "f", "v")
    assert r.execute_command("XADD", "s", "IDMP", "p", "i", "*", "f", "v") == first
    deadline = time.time() + 5
    while r.xinfo_stream("s")["iids-tracked"] and time.time() < deadline:
        time.sleep(0.1)
    assert r.xinfo_stream("s")["pids-tracked"] == 0
    assert r.execute_command("XADD", "s", "IDMP", "p", "i", "*", "f", "v") != first


def test_xidmprecord(raw: RawConn, r: redis.Redis) -> None:
    eid = r.xadd("s", {"f": "v"}).decode()  # (recent IDs: older records would expire)
    other = r.xadd("s", {"f": "v"}).decode()
    assert raw.call("XIDMPRECORD", "s", "p", "i", "bad") == (
        b"-ERR Invalid stream ID specified as stream command argument\r\n")
    assert raw.call("XIDMPRECORD", "s", "", "i", eid) == b"-ERR producer ID must be non-empty\r\n"
    assert raw.call("XIDMPRECORD", "s", "p", "", eid) == (
        b"-ERR idempotent ID must be non-empty\r\n")
    assert raw.call("XIDMPRECORD", "nokey", "p", "i", eid) == b"-ERR no such key\r\n"
    assert raw.call("XIDMPRECORD", "s", "p", "i", "9-9") == b"-ERR No such message in stream\r\n"
    assert raw.call("XIDMPRECORD", "s", "p", "i", eid) == b"+OK\r\n"
    assert raw.call("XIDMPRECORD", "s", "p", "i", eid) == b"+OK\r\n"  # the same: fine
    assert raw.call("XIDMPRECORD", "s", "p", "i", other) == (
        b"-ERR IID already exists for this producer with a different stream ID\r\n")
    assert raw.call("XIDMPRECORD", "s", "p", "i") == (
        b"-ERR wrong number of arguments for 'xidmprecord' command\r\n")
    # an XADD retry now finds the recorded entry
    assert r.execute_command("XADD", "s", "IDMP", "p", "i", "*", "f", "x") == eid.encode()
    assert r.xinfo_stream("s")["iids-added"] == 1


def test_nomkstream_and_wrongtype(r: redis.Redis) -> None:
    assert r.execute_command("XADD", "s", "NOMKSTREAM", "IDMP", "p", "i", "*", "f", "v") is None
    r.set("str", "x")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.execute_command("XADD", "str", "IDMP", "p", "i", "*", "f", "v")


def test_keyspace_events(r: redis.Redis, server: ServerProcess) -> None:
    r.config_set("notify-keyspace-events", "KEA")
    try:
        ps = r.pubsub()
        ps.psubscribe("__keyspace@0__:s")
        ps.get_message(timeout=1)
        r.execute_command("XADD", "s", "IDMP", "p", "i", "*", "f", "v")
        r.execute_command("XADD", "s", "IDMP", "p", "i", "*", "f", "v")  # duplicate: no event
        r.execute_command("XCFGSET", "s", "IDMP-MAXSIZE", "5")  # no event, as in Redis
        r.set("marker", "x")
        events = []
        while (msg := ps.get_message(timeout=0.5)) is not None:
            events.append(msg["data"])
        assert events == [b"xadd"]
        ps.close()
    finally:
        r.config_set("notify-keyspace-events", "")


def test_from_lua_and_in_multi(r: redis.Redis) -> None:
    script = "return redis.call('XADD', KEYS[1], 'IDMP', 'p', ARGV[1], '*', 'f', 'v')"
    a = r.eval(script, 1, "s", "i1")
    assert r.eval(script, 1, "s", "i1") == a
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("XADD", "s", "IDMP", "p", "i1", "*", "f", "v")
    pipe.execute_command("XCFGSET", "s", "IDMP-DURATION", "50")
    assert pipe.execute() == [a, b"OK"]


def test_command_info_and_acl_categories(raw: RawConn, r: redis.Redis) -> None:
    info = raw.value("COMMAND", "INFO", "xcfgset", "xidmprecord")
    assert [row[1] for row in info] == [-2, 5]
    assert [sorted(row[2]) for row in info] == [[b"fast", b"write"],
                                                 [b"denyoom", b"fast", b"write"]]
    assert [sorted(row[6]) for row in info] == [[b"@fast", b"@stream", b"@write"]] * 2
    assert b"xcfgset" in raw.value("ACL", "CAT", "stream")


def test_a_producer_retrying_after_a_lost_reply_adds_once(r: redis.Redis,
                                                          server: ServerProcess) -> None:
    """The producer sends XADD IDMP, its connection dies before the reply arrives, and it
    retries on a new connection with the same iid: one entry, the same ID."""
    sock = socket.create_connection((server.host, server.port))
    sock.sendall(encode("CLIENT", "SETNAME", "producer"))
    assert sock.recv(100) == b"+OK\r\n"
    sock.sendall(encode("XADD", "orders", "IDMP", "producer-1", "order-42", "*", "qty", "3"))
    sock.close()  # the reply is never read
    deadline = time.time() + 5
    while r.xlen("orders") == 0 and time.time() < deadline:
        time.sleep(0.01)
    retry = r.execute_command("XADD", "orders", "IDMP", "producer-1", "order-42", "*",
                              "qty", "3")
    assert r.xlen("orders") == 1
    assert r.xrange("orders")[0][0] == retry


def test_retry_after_client_kill(r: redis.Redis, server: ServerProcess) -> None:
    """The same with the server killing the producer's connection (CLIENT KILL) between the
    command and the producer reading its reply."""
    producer = redis.Redis(host=server.host, port=server.port, client_name="p1")
    producer.ping()
    pid = producer.client_id()
    conn = producer.connection_pool.get_connection()
    conn.send_command("MULTI")
    conn.read_response()
    conn.send_command("XADD", "orders", "IDMP", "p1", "o-1", "*", "qty", "1")
    conn.read_response()  # QUEUED
    conn.send_command("EXEC")
    time.sleep(0.05)
    r.client_kill_filter(_id=pid)
    with pytest.raises((redis.ConnectionError, OSError)):
        conn.read_response()
        conn.read_response()
    producer.close()
    retried = r.execute_command("XADD", "orders", "IDMP", "p1", "o-1", "*", "qty", "1")
    assert r.xlen("orders") == 1
    assert r.xrange("orders")[0][0] == retried
