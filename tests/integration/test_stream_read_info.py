"""XREAD without blocking (ID forms, COUNT, reply shapes in RESP2 and RESP3, errors) and XINFO
STREAM / XINFO HELP, against a real server process."""

from __future__ import annotations

import pytest
import redis

from tests.helpers import TARGET, ServerProcess
from tests.integration.stream_helpers import BAD_ID, U64, WRONGTYPE, redis8
from tests.integration.stream_helpers import err as error_of
from tests.resp import RawConn


@pytest.fixture
def data(r: redis.Redis) -> redis.Redis:
    r.response_callbacks.clear()
    for i in range(1, 4):
        r.execute_command("XADD", "a", f"{i}-0", "n", str(i))
    r.execute_command("XADD", "b", "5-0", "x", "y", "z", "w")
    r.set("str", "x")
    return r


def entry(i: int) -> list:
    return [b"%d-0" % i, [b"n", b"%d" % i]]


# -- XREAD --------------------------------------------------------------------------------------
def test_xread_ids_and_count(data: redis.Redis, raw: RawConn) -> None:
    assert raw.value("XREAD", "STREAMS", "a", "0") == [[b"a", [entry(1), entry(2), entry(3)]]]
    assert raw.value("XREAD", "COUNT", "2", "STREAMS", "a", "1") == [[b"a", [entry(2), entry(3)]]]
    assert raw.value("XREAD", "count", "-5", "STREAMS", "a", "2-0") == [[b"a", [entry(3)]]]
    assert raw.value("XREAD", "COUNT", "1", "STREAMS", "a", "b", "nokey", "0", "0", "0") == [
        [b"a", [entry(1)]], [b"b", [[b"5-0", [b"x", b"y", b"z", b"w"]]]]]
    assert raw.value("XREAD", "STREAMS", "a", "b", "3", "0-1") == [
        [b"b", [[b"5-0", [b"x", b"y", b"z", b"w"]]]]]
    assert raw.call("XREAD", "STREAMS", "a", "$") == b"*-1\r\n"
    assert raw.call("XREAD", "STREAMS", "a", "3-0") == b"*-1\r\n"
    assert raw.call("XREAD", "STREAMS", "nokey", "0") == b"*-1\r\n"
    assert raw.call("XREAD", "STREAMS", "a", f"{U64}-{U64}") == b"*-1\r\n"
    assert raw.call("XREAD", "COUNT", "1", "STREAMS", "a", "2") == (
        b"*1\r\n*2\r\n$1\r\na\r\n*1\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nn\r\n$1\r\n3\r\n")


def test_xread_skips_deleted_entries(data: redis.Redis, raw: RawConn) -> None:
    data.execute_command("XDEL", "a", "2-0", "3-0")
    assert raw.call("XREAD", "STREAMS", "a", "1-0") == b"*-1\r\n"
    assert raw.value("XREAD", "STREAMS", "a", "0") == [[b"a", [entry(1)]]]


@redis8
def test_xread_plus_reads_the_last_entry(data: redis.Redis, raw: RawConn) -> None:
    assert raw.value("XREAD", "STREAMS", "a", "b", "+", "+") == [
        [b"a", [entry(3)]], [b"b", [[b"5-0", [b"x", b"y", b"z", b"w"]]]]]
    data.execute_command("XDEL", "a", "3-0")
    assert raw.value("XREAD", "STREAMS", "a", "+") == [[b"a", [entry(2)]]]
    assert raw.call("XREAD", "STREAMS", "nokey", "+") == b"*-1\r\n"


def test_xread_resp3(data: redis.Redis, raw: RawConn) -> None:
    raw.call("HELLO", "3")
    assert raw.call("XREAD", "COUNT", "1", "STREAMS", "a", "b", "0", "0") == (
        b"%2\r\n$1\r\na\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nn\r\n$1\r\n1\r\n"
        b"$1\r\nb\r\n*1\r\n*2\r\n$3\r\n5-0\r\n*4\r\n$1\r\nx\r\n$1\r\ny\r\n$1\r\nz\r\n$1\r\nw\r\n")
    assert raw.call("XREAD", "STREAMS", "a", "$") == b"_\r\n"
    # The same key twice: a map with the key twice, as Redis writes it.
    assert raw.call("XREAD", "STREAMS", "a", "a", "2", "1") == (
        b"%2\r\n$1\r\na\r\n*1\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nn\r\n$1\r\n3\r\n"
        b"$1\r\na\r\n*2\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nn\r\n$1\r\n2\r\n"
        b"*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nn\r\n$1\r\n3\r\n")


def test_xread_redis_py_resp3(data: redis.Redis, server: ServerProcess) -> None:
    client = redis.Redis(host=server.host, port=server.port, protocol=3)
    try:
        reply = client.xread({"a": "1", "b": "0"}, count=1)
        # redis-py's own shape for the RESP3 map (the same against real Redis)
        assert reply == {b"a": [[(b"2-0", {b"n": b"2"})]],
                         b"b": [[(b"5-0", {b"x": b"y", b"z": b"w"})]]}
    finally:
        client.close()


@pytest.mark.parametrize(("args", "message"), [
    (("BLOCK", "-1", "STREAMS", "a", "0"), "timeout is negative"),
    (("BLOCK", "abc", "STREAMS", "a", "0"), "timeout is not an integer or out of range"),
    (("BLOCK", "1.5", "STREAMS", "a", "0"), "timeout is not an integer or out of range"),
    (("COUNT", "abc", "STREAMS", "a", "0"), "value is not an integer or out of range"),
    (("FOO", "STREAMS", "a", "0"), "syntax error"),
    (("COUNT", "1", "BLOCK", "1"), "syntax error"),
    (("STREAMS", "a", ">"), "The > ID can be specified only when calling XREADGROUP using the "
                            "GROUP <group> <consumer> option."),
    (("GROUP", "g", "c", "STREAMS", "a", "0"), "The GROUP option is only supported by "
                                               "XREADGROUP. You called XREAD instead."),
    (("NOACK", "STREAMS", "a", "0"), "The NOACK option is only supported by XREADGROUP. You "
                                     "called XREAD instead."),
    (("STREAMS", "a", "abc"), BAD_ID),
    (("STREAMS", "a", "-"), BAD_ID),
    (("STREAMS", "str", "a", "0", "0"), WRONGTYPE),
    (("STREAMS", "a", "str", "abc", "0"), BAD_ID),  # checked key by key, in order
    (("STREAMS", "a", "str", "0", "abc"), WRONGTYPE),
    (("STREAMS", "a"), "wrong number of arguments for 'xread' command"),
])
def test_xread_errors(data: redis.Redis, args: tuple[str, ...], message: str) -> None:
    assert error_of(data, "XREAD", *args) == message


@redis8
def test_xread_claim_belongs_to_xreadgroup(data: redis.Redis) -> None:
    assert error_of(data, "XREAD", "COUNT", "2", "CLAIM", "10", "STREAMS", "a", "0-0") == (
        "The CLAIM option is only supported by XREADGROUP. You called XREAD instead.")
    assert error_of(data, "XREAD", "STREAMS", "a", "0", "CLAIM") == (
        "Unbalanced 'xread' list of streams: for each stream key an ID, '+', or '$' must be "
        "specified.")


@redis8
def test_xread_unbalanced(data: redis.Redis) -> None:
    message = ("Unbalanced 'xread' list of streams: for each stream key an ID, '+', or '$' "
               "must be specified.")
    assert error_of(data, "XREAD", "STREAMS", "a", "b", "0") == message
    assert error_of(data, "XREAD", "COUNT", "1", "STREAMS", "a") == message


# -- XINFO ---------------------------------------------------------------------------------------
# Redis 8.6's IDMP fields, after recorded-first-entry-id (Debian's 7.0 has none)
IDMP = ([b"idmp-duration", 100, b"idmp-maxsize", 100, b"pids-tracked", 0, b"iids-tracked", 0,
         b"iids-added", 0, b"iids-duplicates", 0] if TARGET != "redis" else [])
IDMP_RAW = (b"$13\r\nidmp-duration\r\n:100\r\n$12\r\nidmp-maxsize\r\n:100\r\n"
            b"$12\r\npids-tracked\r\n:0\r\n$12\r\niids-tracked\r\n:0\r\n"
            b"$10\r\niids-added\r\n:0\r\n$15\r\niids-duplicates\r\n:0\r\n"
            if TARGET != "redis" else b"")
GROUPS_AT = 15 + len(IDMP)  # the index of FULL's entries


def test_xinfo_stream(data: redis.Redis, raw: RawConn) -> None:
    data.execute_command("XDEL", "a", "1-0")
    assert raw.value("XINFO", "STREAM", "a") == [
        b"length", 2, b"radix-tree-keys", 1, b"radix-tree-nodes", 2,
        b"last-generated-id", b"3-0", b"max-deleted-entry-id", b"1-0",
        b"entries-added", 3, b"recorded-first-entry-id", b"2-0", *IDMP, b"groups", 0,
        b"first-entry", entry(2), b"last-entry", entry(3)]


def test_xinfo_stream_empty(r: redis.Redis, raw: RawConn) -> None:
    r.execute_command("XADD", "s", "MAXLEN", "0", "7-7", "f", "v")
    assert raw.call("XINFO", "STREAM", "s") == (
        b"*%d\r\n$6\r\nlength\r\n:0\r\n$15\r\nradix-tree-keys\r\n:0\r\n" % (20 + len(IDMP))
        +
        b"$16\r\nradix-tree-nodes\r\n:1\r\n$17\r\nlast-generated-id\r\n$3\r\n7-7\r\n"
        b"$20\r\nmax-deleted-entry-id\r\n$3\r\n0-0\r\n$13\r\nentries-added\r\n:1\r\n"
        b"$23\r\nrecorded-first-entry-id\r\n$3\r\n0-0\r\n" + IDMP_RAW + b"$6\r\ngroups\r\n:0\r\n"
        b"$11\r\nfirst-entry\r\n$-1\r\n$10\r\nlast-entry\r\n$-1\r\n")


def test_xinfo_stream_full(data: redis.Redis, raw: RawConn) -> None:
    head = [b"length", 3, b"radix-tree-keys", 1, b"radix-tree-nodes", 2,
            b"last-generated-id", b"3-0", b"max-deleted-entry-id", b"0-0",
            b"entries-added", 3, b"recorded-first-entry-id", b"1-0", *IDMP]
    assert raw.value("XINFO", "STREAM", "a", "FULL") == [
        *head, b"entries", [entry(1), entry(2), entry(3)], b"groups", []]
    assert raw.value("XINFO", "STREAM", "a", "full", "count", "2") == [
        *head, b"entries", [entry(1), entry(2)], b"groups", []]
    assert raw.value("XINFO", "STREAM", "a", "FULL", "COUNT", "0") == [
        *head, b"entries", [entry(1), entry(2), entry(3)], b"groups", []]
    assert raw.value("XINFO", "STREAM", "a", "FULL", "COUNT", "-1")[GROUPS_AT] == [
        entry(1), entry(2), entry(3)]


def test_xinfo_full_count_default_is_ten(r: redis.Redis, raw: RawConn) -> None:
    for i in range(1, 16):
        r.execute_command("XADD", "s", f"{i}-0", "n", str(i))
    reply = raw.value("XINFO", "STREAM", "s", "FULL")
    assert reply[GROUPS_AT] == [entry(i) for i in range(1, 11)]
    for count in ("-1", "-100"):  # a negative COUNT is the default too, as in Redis
        got = raw.value("XINFO", "STREAM", "s", "FULL", "COUNT", count)
        assert got[GROUPS_AT] == reply[GROUPS_AT]
    assert len(raw.value("XINFO", "STREAM", "s", "FULL", "COUNT", "0")[GROUPS_AT]) == 15


def test_xinfo_resp3(data: redis.Redis, raw: RawConn) -> None:
    raw.call("HELLO", "3")
    reply = raw.call("XINFO", "STREAM", "b")
    assert reply.startswith(b"%%%d\r\n$6\r\nlength\r\n:1\r\n" % (10 + len(IDMP) // 2))
    assert reply.endswith(b"$10\r\nlast-entry\r\n*2\r\n$3\r\n5-0\r\n"
                          b"*4\r\n$1\r\nx\r\n$1\r\ny\r\n$1\r\nz\r\n$1\r\nw\r\n")
    full = raw.call("XINFO", "STREAM", "b", "FULL")
    assert full.startswith(b"%%%d\r\n" % (9 + len(IDMP) // 2))
    assert full.endswith(b"$6\r\ngroups\r\n*0\r\n")


@pytest.mark.parametrize(("args", "message"), [
    (("STREAM", "nokey"), "no such key"),
    (("STREAM", "nokey", "foo"), "no such key"),  # the key is looked up first
    (("STREAM", "str"), WRONGTYPE),
    (("STREAM", "a", "foo"), "unknown subcommand or wrong number of arguments for 'STREAM'. "
                             "Try XINFO HELP."),
    (("stream", "a", "FULL", "COUNT"), "unknown subcommand or wrong number of arguments for "
                                       "'stream'. Try XINFO HELP."),
    (("STREAM", "a", "FULL", "LIMIT", "1"), "unknown subcommand or wrong number of arguments "
                                            "for 'STREAM'. Try XINFO HELP."),
    (("STREAM", "a", "FULL", "COUNT", "x"), "value is not an integer or out of range"),
    (("STREAM",), "wrong number of arguments for 'xinfo|stream' command"),
    (("FOO",), "unknown subcommand 'FOO'. Try XINFO HELP."),
])
def test_xinfo_errors(data: redis.Redis, args: tuple[str, ...], message: str) -> None:
    assert error_of(data, "XINFO", *args) == message


def test_xinfo_help(raw: RawConn) -> None:
    assert raw.value("XINFO", "HELP") == [
        b"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        b"CONSUMERS <key> <groupname>",
        b"    Show consumers of <groupname>.",
        b"GROUPS <key>",
        b"    Show the stream consumer groups.",
        b"STREAM <key> [FULL [COUNT <count>]",
        b"    Show information about the stream.",
        b"HELP",
        b"    Prints this help.",
    ]
    assert raw.call("XINFO", "HELP").startswith(b"*9\r\n+XINFO <subcommand>")
