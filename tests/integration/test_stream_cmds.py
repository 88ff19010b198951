"""XADD, XLEN, XRANGE, XREVRANGE, XDEL, XDELEX, XTRIM, XSETID, TYPE / OBJECT ENCODING / MEMORY
USAGE of streams and the node-size options, against a real server process, with Redis's exact
replies (redis-py, RESP2 and RESP3, and raw RESP where the shape matters).

`XSTREAMD_TEST_TARGET=redis` runs this file against Debian's redis-server 7.0; the checks of
behaviour added after 7.0 are skipped there.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from tests.helpers import ServerProcess
from tests.integration.stream_helpers import BAD_ID, U64, WRONGTYPE, redis8
from tests.integration.stream_helpers import err as error_of
from tests.resp import RawConn


@pytest.fixture(autouse=True)
def _plain_replies(r: redis.Redis) -> None:
    """Replies as the server shapes them: no redis-py response callbacks."""
    r.response_callbacks.clear()


@pytest.fixture
def r3(server: ServerProcess, r: redis.Redis) -> Iterator[redis.Redis]:
    client = redis.Redis(host=server.host, port=server.port, protocol=3)
    client.response_callbacks.clear()
    yield client
    client.close()


def ids(entries: list) -> list[bytes]:
    return [e[0] for e in entries]


# -- XADD ---------------------------------------------------------------------------------------
def test_xadd_ids(r: redis.Redis) -> None:
    auto = r.execute_command("XADD", "s", "*", "f", "v")
    ms, seq = (int(x) for x in auto.split(b"-"))
    assert ms > 1_600_000_000_000 and seq == 0
    assert r.execute_command("XADD", "t", "5", "f", "v") == b"5-0"
    assert r.execute_command("XADD", "t", "5-*", "f", "v") == b"5-1"
    assert r.execute_command("XADD", "t", "7-*", "f", "v") == b"7-0"
    assert r.execute_command("XADD", "t", "7-9", "a", "1", "b", "2") == b"7-9"
    assert r.execute_command("XADD", "z", "0-*", "f", "v") == b"0-1"
    assert r.execute_command("XLEN", "t") == 4
    assert r.execute_command("XRANGE", "t", "-", "+") == [
        [b"5-0", [b"f", b"v"]], [b"5-1", [b"f", b"v"]], [b"7-0", [b"f", b"v"]],
        [b"7-9", [b"a", b"1", b"b", b"2"]]]


# A Lua loop that keeps the server busy for 5 ms (os.clock: CPU time, which it spends).
_BUSY_5MS = "local t = os.clock() while os.clock() - t < 0.005 do end"


@redis8
def test_xadd_star_takes_the_command_time_in_scripts_and_transactions(r: redis.Redis) -> None:
    """As Redis 7.2+ (commandTimeSnapshot): a script's or a transaction's XADD * all take the
    time the EVAL or EXEC started, so they share its millisecond however long it runs."""
    script = (f"local a = redis.call('XADD', KEYS[1], '*', 'f', 'v') {_BUSY_5MS} "
              "return {a, redis.call('XADD', KEYS[1], '*', 'f', 'v')}")
    first, second = r.execute_command("EVAL", script, 1, "s")
    ms = first.split(b"-")[0]
    assert (first, second) == (ms + b"-0", ms + b"-1")
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("XADD", "t", "*", "f", "v")
    pipe.execute_command("EVAL", _BUSY_5MS, 0)
    pipe.execute_command("XADD", "t", "*", "f", "v")
    first, _, second = pipe.execute()
    ms = first.split(b"-")[0]
    assert second == ms + b"-1"
    # Outside them each XADD takes its own time.
    later = r.execute_command("XADD", "t", "*", "f", "v")
    assert int(later.split(b"-")[0]) >= int(ms) + 5 and later.endswith(b"-0")


def test_xadd_auto_ids_after_a_future_top_item(r: redis.Redis) -> None:
    """`*` below the top item's ms continues its sequence (any size), stream by stream."""
    future = 9_999_999_999_999
    r.execute_command("XADD", "s", f"{future}-254", "f", "v")
    assert r.execute_command("XADD", "s", "*", "f", "v") == b"%d-255" % future
    assert r.execute_command("XADD", "s", "*", "f", "v") == b"%d-256" % future
    now = r.execute_command("XADD", "t", "*", "f", "v")
    assert int(now.split(b"-")[0]) < future and now.endswith(b"-0")
    assert r.execute_command("XADD", "s", "*", "f", "v") == b"%d-257" % future
    assert [e[0] for e in r.xrange("s")][-3:] == [b"%d-%d" % (future, n) for n in (255, 256, 257)]


def test_xadd_errors(r: redis.Redis) -> None:
    r.execute_command("XADD", "s", "5-5", "f", "v")
    r.set("str", "x")
    assert error_of(r, "XADD", "s", "5-5", "f", "v") == (
        "The ID specified in XADD is equal or smaller than the target stream top item")
    assert error_of(r, "XADD", "s", "4-*", "f", "v") == (
        "The ID specified in XADD is equal or smaller than the target stream top item")
    assert error_of(r, "XADD", "s", "0-0", "f", "v") == (
        "The ID specified in XADD must be greater than 0-0")
    assert error_of(r, "XADD", "str", "0-0", "f", "v") == (  # checked before the type
        "The ID specified in XADD must be greater than 0-0")
    assert error_of(r, "XADD", "str", "*", "f", "v") == WRONGTYPE
    assert error_of(r, "XADD", "s", "*", "f") == "wrong number of arguments for 'xadd' command"
    assert error_of(r, "XADD", "s", "*", "f", "v", "g") == (
        "wrong number of arguments for 'xadd' command")
    assert error_of(r, "XADD", "s", "foo", "f", "v") == BAD_ID
    assert error_of(r, "XADD", "s", "+", "f", "v") == BAD_ID
    assert error_of(r, "XADD", "s", "-", "f", "v") == BAD_ID
    assert error_of(r, "XADD", "s", "1-x", "f", "v") == BAD_ID
    assert error_of(r, "XADD", "s", "MAXLEN", "abc", "*", "f", "v") == (
        "value is not an integer or out of range")
    assert error_of(r, "XADD", "s", "LIMIT", "5", "*", "f", "v") == (
        "syntax error, LIMIT cannot be used without specifying a trimming strategy")
    assert error_of(r, "XADD", "s", "MAXLEN", "5", "LIMIT", "5", "*", "f", "v") == (
        "syntax error, LIMIT cannot be used without the special ~ option")
    assert error_of(r, "XADD", "s", "MAXLEN", "1", "MINID", "1", "*", "f", "v") == (
        "syntax error, MAXLEN and MINID options at the same time are not compatible")
    assert error_of(r, "XADD", "s", "MAXLEN", "-1", "*", "f", "v") == (
        "The MAXLEN argument must be >= 0.")
    assert error_of(r, "XADD", "s", "MAXLEN", "~", "1", "LIMIT", "-1", "*", "f", "v") == (
        "The LIMIT argument must be >= 0.")
    assert r.execute_command("XLEN", "s") == 1


def test_xadd_exhausted(r: redis.Redis) -> None:
    top = f"{U64}-{U64}"
    assert r.execute_command("XADD", "s", top, "f", "v") == top.encode()
    assert error_of(r, "XADD", "s", "*", "f", "v") == (
        "The stream has exhausted the last possible ID, unable to add more items")


@redis8  # 7.0 answers "Elements are too large to be stored" here
def test_xadd_seq_exhausted(r: redis.Redis) -> None:
    r.execute_command("XADD", "t", f"1-{U64}", "f", "v")
    assert error_of(r, "XADD", "t", "1-*", "f", "v") == (
        "The ID specified in XADD is equal or smaller than the target stream top item")


def test_xadd_nomkstream(r: redis.Redis, raw: RawConn) -> None:
    assert raw.call("XADD", "s", "NOMKSTREAM", "*", "f", "v") == b"$-1\r\n"
    assert r.exists("s") == 0
    r.execute_command("XADD", "s", "1-1", "f", "v")
    assert r.execute_command("XADD", "s", "nomkstream", "2-1", "f", "v") == b"2-1"


def test_xadd_trimming(r: redis.Redis) -> None:
    for i in range(1, 21):
        r.execute_command("XADD", "s", "MAXLEN", "5", f"{i}-0", "f", str(i))
    assert r.execute_command("XLEN", "s") == 5
    assert ids(r.execute_command("XRANGE", "s", "-", "+"))[0] == b"16-0"
    r.execute_command("XADD", "s", "MAXLEN", "=", "2", "21-0", "f", "v")
    assert r.execute_command("XLEN", "s") == 2
    r.execute_command("XADD", "s", "MINID", "21", "22-0", "f", "v")
    assert ids(r.execute_command("XRANGE", "s", "-", "+")) == [b"21-0", b"22-0"]
    r.config_set("stream-node-max-entries", "10")
    try:
        for i in range(1, 101):
            r.execute_command("XADD", "t", "MAXLEN", "~", "55", f"{i}-0", "f", "v")
        assert r.execute_command("XLEN", "t") == 60  # whole nodes of 10 only
        r.execute_command("XADD", "t", "MAXLEN", "~", "0", "LIMIT", "20", "101-0", "f", "v")
        assert r.execute_command("XLEN", "t") == 41  # LIMIT: at most 20 entries this time
    finally:
        r.config_set("stream-node-max-entries", "100")


@redis8
def test_xadd_ref_policies_without_groups(r: redis.Redis) -> None:
    for policy in ("KEEPREF", "DELREF", "ACKED", "keepref"):
        r.delete("s")
        for i in range(1, 6):
            r.execute_command("XADD", "s", f"{i}-0", "f", "v")
        assert r.execute_command("XADD", "s", policy, "MAXLEN", "=", "2", "6-0", "f", "v") == (
            b"6-0")
        assert ids(r.execute_command("XRANGE", "s", "-", "+")) == [b"5-0", b"6-0"]
        assert r.execute_command("XADD", "s", "MAXLEN", "1", policy, "7-0", "f", "v") == b"7-0"
        assert r.execute_command("XLEN", "s") == 1


def test_node_size_options_are_read_per_call(r: redis.Redis, raw: RawConn) -> None:
    r.config_set("stream-node-max-entries", "3")
    try:
        for i in range(1, 8):
            r.execute_command("XADD", "s", f"{i}-0", "f", "v")
        assert raw.info("s")[b"radix-tree-keys"] == 3
        r.config_set("stream-node-max-entries", "100")
        r.config_set("stream-node-max-bytes", "60")
        for i in range(8, 11):
            r.execute_command("XADD", "s", f"{i}-0", "field", "x" * 30)
        assert raw.info("s")[b"radix-tree-keys"] >= 5
        # XADD key * field value, which takes a shorter way, reads them too.
        r.config_set("stream-node-max-bytes", "4096")
        r.config_set("stream-node-max-entries", "2")
        for _ in range(6):
            r.execute_command("XADD", "t", "*", "f", "v")
        assert raw.info("t")[b"radix-tree-keys"] == 3
        r.config_set("stream-node-max-entries", "0")
        r.config_set("stream-node-max-bytes", "100")
        for _ in range(6):
            r.execute_command("XADD", "t", "*", "field", "x" * 30)
        assert raw.info("t")[b"radix-tree-keys"] == 6
    finally:
        r.config_set("stream-node-max-entries", "100")
        r.config_set("stream-node-max-bytes", "4096")


# -- XLEN, XRANGE, XREVRANGE-----------------------------------------------------------------------
@pytest.fixture
def five(r: redis.Redis) -> redis.Redis:
    for i in range(1, 6):
        r.execute_command("XADD", "s", f"{i}-{i}", "n", str(i))
    r.set("str", "x")
    return r


def test_xlen(five: redis.Redis) -> None:
    assert five.execute_command("XLEN", "s") == 5
    assert five.execute_command("XLEN", "nokey") == 0
    assert error_of(five, "XLEN", "str") == WRONGTYPE


def test_xrange_bounds(five: redis.Redis) -> None:
    r = five
    assert ids(r.execute_command("XRANGE", "s", "-", "+")) == [
        b"1-1", b"2-2", b"3-3", b"4-4", b"5-5"]
    assert ids(r.execute_command("XRANGE", "s", "2", "4")) == [b"2-2", b"3-3", b"4-4"]
    assert ids(r.execute_command("XRANGE", "s", "2-3", "4-3")) == [b"3-3"]
    assert ids(r.execute_command("XRANGE", "s", "(2-2", "(5-5")) == [b"3-3", b"4-4"]
    assert ids(r.execute_command("XRANGE", "s", "-", "+", "COUNT", "2")) == [b"1-1", b"2-2"]
    assert r.execute_command("XRANGE", "s", "-", "+", "count", "-3") is None  # COUNT 0
    assert ids(r.execute_command("XREVRANGE", "s", "+", "-", "COUNT", "2")) == [
        b"5-5", b"4-4"]
    assert ids(r.execute_command("XREVRANGE", "s", "(5-5", "(1-1")) == [
        b"4-4", b"3-3", b"2-2"]
    assert ids(r.execute_command("XREVRANGE", "s", "4", "4")) == [b"4-4"]
    assert r.execute_command("XRANGE", "s", "5", "3") == []
    assert r.execute_command("XRANGE", "nokey", "-", "+") == []
    assert r.execute_command("XRANGE", "s", "1-1", "1-1") == [[b"1-1", [b"n", b"1"]]]


def test_xrange_count_zero_is_null_array(five: redis.Redis, raw: RawConn) -> None:
    assert raw.call("XRANGE", "s", "-", "+", "COUNT", "0") == b"*-1\r\n"
    assert raw.call("XREVRANGE", "s", "+", "-", "COUNT", "-1") == b"*-1\r\n"
    assert raw.call("XRANGE", "nokey", "-", "+", "COUNT", "0") == b"*0\r\n"
    assert raw.call("XRANGE", "s", "3", "3") == (
        b"*1\r\n*2\r\n$3\r\n3-3\r\n*2\r\n$1\r\nn\r\n$1\r\n3\r\n")


def test_xrange_errors(five: redis.Redis) -> None:
    r = five
    assert error_of(r, "XRANGE", "s", "abc", "+") == BAD_ID
    assert error_of(r, "XRANGE", "nokey", "abc", "+") == BAD_ID  # parsed before the lookup
    assert error_of(r, "XRANGE", "s", "(-", "+") == BAD_ID
    assert error_of(r, "XRANGE", "s", "-", "(+") == BAD_ID
    assert error_of(r, "XRANGE", "s", f"({U64}-{U64}", "+") == (
        "invalid start ID for the interval")
    assert error_of(r, "XRANGE", "s", "-", "(0-0") == "invalid end ID for the interval"
    assert error_of(r, "XRANGE", "s", "-", "+", "COUNT") == "syntax error"
    assert error_of(r, "XRANGE", "s", "-", "+", "LIMIT", "1") == "syntax error"
    assert error_of(r, "XRANGE", "s", "-", "+", "COUNT", "x") == (
        "value is not an integer or out of range")
    assert error_of(r, "XRANGE", "str", "-", "+") == WRONGTYPE
    assert error_of(r, "XRANGE", "s", "-") == "wrong number of arguments for 'xrange' command"
    assert error_of(r, "XREVRANGE", "s", "+") == (
        "wrong number of arguments for 'xrevrange' command")


def test_xrange_resp3(five: redis.Redis, r3: redis.Redis, raw: RawConn) -> None:
    assert r3.execute_command("XRANGE", "s", "-", "2") == [
        [b"1-1", [b"n", b"1"]], [b"2-2", [b"n", b"2"]]]
    raw.call("HELLO", "3")
    assert raw.call("XRANGE", "s", "-", "+", "COUNT", "0") == b"_\r\n"
    assert raw.call("XRANGE", "s", "5", "+") == (
        b"*1\r\n*2\r\n$3\r\n5-5\r\n*2\r\n$1\r\nn\r\n$1\r\n5\r\n")


# -- XDEL / XDELEX ---------------------------------------------------------------------------------
def test_xdel(five: redis.Redis, raw: RawConn) -> None:
    r = five
    assert r.execute_command("XDEL", "s", "2-2", "9-9", "2-2") == 1
    assert r.execute_command("XDEL", "s", "1-1", "5-5") == 2
    assert ids(r.execute_command("XRANGE", "s", "-", "+")) == [b"3-3", b"4-4"]
    assert r.execute_command("XDEL", "nokey", "1-1") == 0
    assert r.execute_command("XDEL", "nokey", "abc") == 0  # the key is looked up first
    assert error_of(r, "XDEL", "s", "3-3", "abc") == BAD_ID
    assert r.execute_command("XLEN", "s") == 2  # all or nothing
    assert error_of(r, "XDEL", "s", "+") == BAD_ID
    assert error_of(r, "XDEL", "str", "abc") == WRONGTYPE
    info = raw.info("s")
    assert info[b"max-deleted-entry-id"] == b"5-5"
    assert info[b"recorded-first-entry-id"] == b"3-3"


@redis8
def test_xdelex(five: redis.Redis, raw: RawConn) -> None:
    r = five
    assert r.execute_command("XDELEX", "s", "IDS", "3", "1-1", "9-9", "2-2") == [1, -1, 1]
    assert r.execute_command("XDELEX", "s", "KEEPREF", "IDS", "1", "3-3") == [1]
    assert r.execute_command("XDELEX", "s", "IDS", "1", "4-4", "DELREF") == [1]
    assert r.execute_command("XDELEX", "s", "acked", "IDS", "2", "5-5", "5-5") == [1, -1]
    assert r.execute_command("XLEN", "s") == 0
    assert r.execute_command("XDELEX", "nokey", "IDS", "2", "1-1", "2-2") == [-1, -1]
    assert raw.call("XDELEX", "nokey", "IDS", "1", "1-1") == b"*1\r\n:-1\r\n"
    assert error_of(r, "XDELEX", "str", "IDS", "1", "1-1") == WRONGTYPE


@redis8
@pytest.mark.parametrize(("args", "message"), [
    (("IDS", "abc", "1-1"), "Number of IDs must be a positive integer"),
    (("IDS", "0", "1-1"), "Number of IDs must be a positive integer"),
    (("IDS", "-5", "1-1"), "Number of IDs must be a positive integer"),
    (("IDS", "3", "1-1", "2-2"), "The `numids` parameter must match the number of arguments"),
    (("IDS", "1", "1-1", "2-2"), "syntax error"),
    (("KEEPREF", "DELREF", "IDS", "1", "1-1"), "syntax error"),
    (("ACKED", "ACKED", "IDS", "1", "1-1"), "syntax error"),
    (("BOGUS", "IDS", "1", "1-1"), "syntax error"),
    (("KEEPREF", "a", "b"), "syntax error"),
    (("IDS", "2", "1-1", "x"), BAD_ID),
])
def test_xdelex_errors(five: redis.Redis, args: tuple[str, ...], message: str) -> None:
    assert error_of(five, "XDELEX", "s", *args) == message
    assert five.execute_command("XLEN", "s") == 5


@redis8
def test_xdelex_arity(r: redis.Redis) -> None:
    assert error_of(r, "XDELEX", "s", "IDS", "1") == (
        "wrong number of arguments for 'xdelex' command")


# -- XTRIM-----------------------------------------------------------------------------------------
def test_xtrim(r: redis.Redis) -> None:
    for i in range(1, 11):
        r.execute_command("XADD", "s", f"{i}-0", "f", "v")
    assert r.execute_command("XTRIM", "s", "MAXLEN", "8") == 2
    assert r.execute_command("XTRIM", "s", "MAXLEN", "=", "8") == 0
    assert r.execute_command("XTRIM", "s", "MINID", "5") == 2
    assert r.execute_command("XTRIM", "s", "minid", "=", "5-1") == 1
    assert ids(r.execute_command("XRANGE", "s", "-", "+"))[0] == b"6-0"
    assert r.execute_command("XTRIM", "s", "MAXLEN", "~", "1") == 0  # one node: not whole
    assert r.execute_command("XTRIM", "s", "MAXLEN", "0") == 5
    assert r.execute_command("XLEN", "s") == 0
    assert r.exists("s") == 1  # an empty stream stays
    assert r.execute_command("XTRIM", "nokey", "MAXLEN", "1") == 0


def test_xtrim_approx_and_limit(r: redis.Redis) -> None:
    r.config_set("stream-node-max-entries", "10")
    try:
        for i in range(1, 101):
            r.execute_command("XADD", "s", f"{i}-0", "f", "v")
        assert r.execute_command("XTRIM", "s", "MAXLEN", "~", "35") == 60
        assert r.execute_command("XTRIM", "s", "MINID", "~", "75", "LIMIT", "10") == 10
        assert r.execute_command("XTRIM", "s", "MINID", "~", "75", "LIMIT", "0") == 0
        assert r.execute_command("XLEN", "s") == 30
    finally:
        r.config_set("stream-node-max-entries", "100")


@pytest.mark.parametrize(("args", "message"), [
    (("foo", "1"), "syntax error"),
    (("MAXLEN", "-1"), "The MAXLEN argument must be >= 0."),
    (("MAXLEN", "x"), "value is not an integer or out of range"),
    (("MAXLEN", "1", "LIMIT", "10"), "syntax error, LIMIT cannot be used without the special ~ "
                                     "option"),
    (("MAXLEN", "~", "1", "LIMIT", "-1"), "The LIMIT argument must be >= 0."),
    (("LIMIT", "10"), "syntax error, LIMIT cannot be used without specifying a trimming "
                      "strategy"),
    (("MAXLEN", "1", "MINID", "1"), "syntax error, MAXLEN and MINID options at the same time "
                                    "are not compatible"),
    (("MINID", "abc"), BAD_ID),
    (("MINID", "+"), BAD_ID),
    (("MAXLEN", "1", "NOMKSTREAM"), "syntax error"),
])
def test_xtrim_errors(r: redis.Redis, args: tuple[str, ...], message: str) -> None:
    r.execute_command("XADD", "s", "1-1", "f", "v")
    assert error_of(r, "XTRIM", "s", *args) == message


@redis8
def test_xtrim_policies(r: redis.Redis) -> None:
    for i in range(1, 11):
        r.execute_command("XADD", "s", f"{i}-0", "f", "v")
    assert r.execute_command("XTRIM", "s", "MAXLEN", "8", "KEEPREF") == 2
    assert r.execute_command("XTRIM", "s", "MAXLEN", "6", "DELREF") == 2
    assert r.execute_command("XTRIM", "s", "MINID", "9", "ACKED") == 4
    assert error_of(r, "XTRIM", "s", "KEEPREF", "ACKED") == (
        "syntax error, XTRIM must be called with a trimming strategy")


def test_xtrim_wrongtype(r: redis.Redis) -> None:
    r.set("str", "x")
    assert error_of(r, "XTRIM", "str", "MAXLEN", "1") == WRONGTYPE
    assert error_of(r, "XTRIM", "s") == "wrong number of arguments for 'xtrim' command"


# -- XSETID----------------------------------------------------------------------------------------
def test_xsetid(r: redis.Redis, raw: RawConn) -> None:
    r.execute_command("XADD", "s", "1-1", "f", "v")
    r.execute_command("XADD", "s", "2-1", "f", "v")
    assert r.execute_command("XSETID", "s", "5-0") == b"OK"
    assert r.execute_command("XADD", "s", "5-*", "f", "v") == b"5-1"
    r.execute_command("XADD", "t", "3-0", "f", "v")
    assert r.execute_command("XSETID", "t", "3", "ENTRIESADDED", "7", "MAXDELETEDID", "2-0") == (
        b"OK")
    info = raw.info("t")
    assert info[b"entries-added"] == 7
    assert info[b"max-deleted-entry-id"] == b"2-0"
    assert info[b"last-generated-id"] == b"3-0"


def test_xsetid_errors(r: redis.Redis) -> None:
    r.execute_command("XADD", "s", "5-0", "f", "v")
    r.execute_command("XADD", "s", "6-0", "f", "v")
    r.set("str", "x")
    assert error_of(r, "XSETID", "s", "5-9") == (
        "The ID specified in XSETID is smaller than the target stream top item")
    assert error_of(r, "XSETID", "s", "7-0", "ENTRIESADDED", "1") == (
        "The entries_added specified in XSETID is smaller than the target stream length")
    assert error_of(r, "XSETID", "s", "7-0", "ENTRIESADDED", "-1") == (
        "entries_added must be positive")
    assert error_of(r, "XSETID", "s", "7-0", "MAXDELETEDID", "8-0") == (
        "The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
    assert error_of(r, "XSETID", "s", "7-0", "foo") == "syntax error"
    assert error_of(r, "XSETID", "s", "7-0", "ENTRIESADDED") == "syntax error"
    assert error_of(r, "XSETID", "s", "abc") == BAD_ID
    assert error_of(r, "XSETID", "s", "+") == BAD_ID
    assert error_of(r, "XSETID", "nokey", "1-1") == "no such key"
    assert error_of(r, "XSETID", "nokey", "abc") == BAD_ID  # parsed before the lookup
    assert error_of(r, "XSETID", "str", "1-1") == WRONGTYPE
    assert error_of(r, "XSETID", "s") == "wrong number of arguments for 'xsetid' command"


@redis8
def test_xsetid_below_max_deleted(r: redis.Redis) -> None:
    r.execute_command("XADD", "s", "1-1", "f", "v")
    r.execute_command("XADD", "s", "2-1", "f", "v")
    r.execute_command("XDEL", "s", "2-1")
    assert error_of(r, "XSETID", "s", "1-5") == (
        "The ID specified in XSETID is smaller than current max_deleted_entry_id")
    assert r.execute_command("XSETID", "s", "2-1") == b"OK"


# -- TYPE, OBJECT ENCODING, MEMORY USAGE-----------------------------------------------------------
def test_type_encoding_memory(r: redis.Redis, raw: RawConn) -> None:
    r.execute_command("XADD", "s", "1-1", "f", "v")
    assert raw.call("TYPE", "s") == b"+stream\r\n"
    assert r.object("encoding", "s") == b"stream"
    small = r.memory_usage("s")
    for i in range(2, 500):
        r.execute_command("XADD", "s", f"{i}-1", "field", "value" * 4)
    big = r.memory_usage("s")
    assert 0 < small < big
    assert r.execute_command("SCAN", "0", "TYPE", "stream")[1] == [b"s"]
