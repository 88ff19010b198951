"""XREADGROUP against a real server: options and error texts, new entries and history, NOACK,
CLAIM (Redis 8.4), blocking and what wakes a blocked reader (XADD, DEL, type change, group
destroyed, FLUSHALL, an entry becoming idle enough for CLAIM).

`XSTREAMD_TEST_TARGET=redis` runs this file against Debian's redis-server 7.0; checks of
behaviour added after 7.0 are marked `redis8` and skipped there.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import hiredis
import pytest
import redis

from tests.helpers import ServerProcess
from tests.integration.server_fixtures import unparsed_resp2_client
from tests.integration.stream_helpers import BAD_ID, REDIS7, WRONGTYPE, err, redis8
from tests.resp import ParsedConn

NOT_INT = "value is not an integer or out of range"


r = unparsed_resp2_client()


class Deferred(ParsedConn):
    """A connection whose command is sent now and whose reply is read later."""

    def __init__(self, server: ServerProcess, protocol: int = 2) -> None:
        super().__init__(server)
        if protocol == 3:
            self.send("HELLO", "3")
            self.read()


@pytest.fixture
def deferred(server: ServerProcess) -> Iterator[list[Deferred]]:
    made: list[Deferred] = []
    yield made
    for d in made:
        d.close()


def client_for(server: ServerProcess, made: list[Deferred], protocol: int = 2) -> Deferred:
    d = Deferred(server, protocol)
    made.append(d)
    return d


def wait_blocked(r: redis.Redis, n: int) -> None:
    for _ in range(500):
        info = r.execute_command("INFO", "clients").decode()
        line = next(x for x in info.splitlines() if x.startswith("blocked_clients:"))
        if int(line.split(":")[1]) == n:
            return
        time.sleep(0.01)
    raise AssertionError(f"expected {n} blocked clients")


def xrg(r: redis.Redis, *args: object) -> object:
    return r.execute_command("XREADGROUP", *args)


def setup_stream(r: redis.Redis, key: str = "s", *ms: int, group: str = "g",
                 at: str = "0") -> None:
    for m in ms:
        r.execute_command("XADD", key, f"{m}-0", "f", f"v{m}")
    r.execute_command("XGROUP", "CREATE", key, group, at, "MKSTREAM")


def entries(reply: object, index: int = 0) -> list:
    return reply[index][1]  # type: ignore[index]


# --- options and errors ------------------------------------------------------------------------


def test_argument_errors(r):
    setup_stream(r, "s", 1, group="g")
    arity = "wrong number of arguments for 'xreadgroup' command"
    for args in ([], ["GROUP"], ["GROUP", "g"], ["GROUP", "g", "c"],
                 ["GROUP", "g", "c", "STREAMS"], ["g", "c", "STREAMS", "s", ">"],
                 ["GROUP", "g", "c", "s", ">"]):
        assert err(r, "XREADGROUP", *args) == arity
    assert err(r, "XREADGROUP", "GROUPS", "g", "c", "STREAMS", "s", ">") == "syntax error"
    assert err(r, "XREADGROUP", "GROUP", "g", "c", "STREAM", "s", ">") == "syntax error"
    assert err(r, "XREADGROUP", "GROUP", "g", "c", "INVALID", "x", "STREAMS", "s", ">") == (
        "syntax error")
    assert err(r, "XREADGROUP", "COUNT", "1", "BLOCK", "1", "STREAMS", "s", ">") == (
        "Missing GROUP option for XREADGROUP")
    unbalanced = err(r, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s")
    if not REDIS7:  # 7.0 said "Unbalanced XREAD list ... or '$'"
        assert unbalanced == ("Unbalanced 'xreadgroup' list of streams: for each stream key an "
                              "ID or '>' must be specified.")
    assert err(r, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">", "s2") .startswith(
        "Unbalanced")
    for count in ("abc", "1.5", "18446744073709551616"):
        assert err(r, "XREADGROUP", "GROUP", "g", "c", "COUNT", count, "STREAMS", "s", ">") == (
            NOT_INT)
    for block in ("abc", "1.5", "18446744073709551616", "STREAMS"):
        assert err(r, "XREADGROUP", "GROUP", "g", "c", "BLOCK", block, "STREAMS", "s", ">") == (
            "timeout is not an integer or out of range")
    assert err(r, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "-1", "STREAMS", "s", ">") == (
        "timeout is negative")
    for bad in ("invalid-id", "123-", "-123", "abc-def", "--", "123-abc"):
        assert err(r, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", bad) == BAD_ID
    assert err(r, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$") == (
        "The $ ID is meaningless in the context of XREADGROUP: you want to read the history of "
        "this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID "
        "would just return an empty result set.")


def test_nogroup_and_wrongtype(r):
    setup_stream(r, "s", 1)
    nogroup = "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option"
    assert err(r, "XREADGROUP", "GROUP", "nope", "c", "STREAMS", "s", ">") == nogroup.format(
        "s", "nope")
    assert err(r, "XREADGROUP", "GROUP", "", "c", "STREAMS", "s", ">") == nogroup.format("s", "")
    assert err(r, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "nokey", ">") == nogroup.format(
        "nokey", "g")
    # keys are checked in order, before anything is read
    assert err(r, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", "nokey", ">",
               ">") == nogroup.format("nokey", "g")
    assert r.execute_command("XPENDING", "s", "g")[0] == 0
    r.set("str", "x")
    assert err(r, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "str", ">") == WRONGTYPE


@redis8
def test_plus_id_is_refused(r):
    setup_stream(r, "s", 1)
    assert err(r, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "+") == (
        "The + ID is meaningless in the context of XREADGROUP: you want to read the history of "
        "this consumer by specifying a proper ID, or use the > ID to get new messages. The + ID "
        "would just return an empty result set.")


# --- new entries, history, NOACK ------------------------------------------------------------------


def test_new_entries_then_history(r):
    setup_stream(r, "s", 1, 2, 3, 4)
    assert xrg(r, "GROUP", "g", "c1", "COUNT", "2", "STREAMS", "s", ">") == [
        [b"s", [[b"1-0", [b"f", b"v1"]], [b"2-0", [b"f", b"v2"]]]]]
    assert entries(xrg(r, "GROUP", "g", "c2", "STREAMS", "s", ">")) == [
        [b"3-0", [b"f", b"v3"]], [b"4-0", [b"f", b"v4"]]]
    assert xrg(r, "GROUP", "g", "c1", "STREAMS", "s", ">") is None  # nothing new
    assert [e[0] for e in entries(xrg(r, "GROUP", "g", "c1", "STREAMS", "s", "0"))] == [
        b"1-0", b"2-0"]
    assert [e[0] for e in entries(xrg(r, "GROUP", "g", "c2", "COUNT", "1", "STREAMS", "s",
                                      "0"))] == [b"3-0"]
    # the history starts after the given ID
    assert [e[0] for e in entries(xrg(r, "GROUP", "g", "c1", "STREAMS", "s", "1-0"))] == [b"2-0"]
    assert entries(xrg(r, "GROUP", "g", "c1", "STREAMS", "s", "2-0")) == []
    rows = r.execute_command("XPENDING", "s", "g", "-", "+", "10")
    assert [(x[1], x[3]) for x in rows] == [(b"c1", 2), (b"c1", 3), (b"c2", 2), (b"c2", 1)]


def test_empty_history_and_deleted_entries(r):
    setup_stream(r, "s", 1, 2, 3)
    assert xrg(r, "GROUP", "g", "me", "COUNT", "3", "STREAMS", "s", "0") == [[b"s", []]]
    assert len(entries(xrg(r, "GROUP", "g", "me", "COUNT", "3", "STREAMS", "s", ">"))) == 3
    r.execute_command("XDEL", "s", "2-0")
    assert entries(xrg(r, "GROUP", "g", "me", "STREAMS", "s", "0")) == [
        [b"1-0", [b"f", b"v1"]], [b"2-0", None], [b"3-0", [b"f", b"v3"]]]


def test_history_reports_trimmed_entries(r):
    r.execute_command("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    r.execute_command("XADD", "s", "1", "field1", "A")
    xrg(r, "GROUP", "g", "me", "STREAMS", "s", ">")
    r.execute_command("XADD", "s", "MAXLEN", "1", "2", "field1", "B")
    xrg(r, "GROUP", "g", "me", "STREAMS", "s", ">")
    assert entries(xrg(r, "GROUP", "g", "me", "STREAMS", "s", "0-1")) == [
        [b"1-0", None], [b"2-0", [b"field1", b"B"]]]


def test_noack_creates_consumer_but_no_pending(r):
    setup_stream(r, "s", 1, 2)
    assert len(entries(xrg(r, "GROUP", "g", "c", "NOACK", "STREAMS", "s", ">"))) == 2
    assert r.execute_command("XPENDING", "s", "g")[0] == 0
    consumers = r.execute_command("XINFO", "CONSUMERS", "s", "g")
    assert len(consumers) == 1 and consumers[0][1] == b"c"
    assert r.execute_command("XINFO", "GROUPS", "s")[0][7] == b"2-0"


def test_setid_back_redelivers_to_the_reader(r):
    for _ in range(4):
        r.execute_command("XADD", "events", "*", "f1", "v1")
    r.execute_command("XGROUP", "CREATE", "events", "g1", "$")
    r.execute_command("XADD", "events", "*", "f1", "v1")
    assert len(entries(xrg(r, "GROUP", "g1", "c1", "STREAMS", "events", ">"))) == 1
    r.execute_command("XGROUP", "SETID", "events", "g1", "-")
    assert len(entries(xrg(r, "GROUP", "g1", "c2", "STREAMS", "events", ">"))) == 5
    rows = r.execute_command("XPENDING", "events", "g1", "-", "+", "10")
    assert {x[1] for x in rows} == {b"c2"} and {x[3] for x in rows} == {1}


def test_block_ignored_for_history_ids(r, server, deferred):
    r.execute_command("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    r.execute_command("XADD", "s", "666", "key", "value")
    r.execute_command("XDEL", "s", "666")
    for ident in ("0", "600", "666", "700"):
        assert xrg(r, "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ident) == [[b"s", []]]
    r.execute_command("XADD", "s", "667", "key", "value")
    assert xrg(r, "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">") == [
        [b"s", [[b"667-0", [b"key", b"value"]]]]]
    for ident in ("0", "600", "666"):
        assert entries(xrg(r, "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ident)) == [
            [b"667-0", [b"key", b"value"]]]
    for ident in ("667", "700"):
        assert xrg(r, "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ident) == [[b"s", []]]


def test_multiple_streams_and_resp3(r, server, deferred):
    setup_stream(r, "a", 1)
    setup_stream(r, "b", 2)
    reply = xrg(r, "GROUP", "g", "c", "STREAMS", "a", "b", ">", ">")
    assert reply == [[b"a", [[b"1-0", [b"f", b"v1"]]]], [b"b", [[b"2-0", [b"f", b"v2"]]]]]
    d = client_for(server, deferred, protocol=3)
    d.send("XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b", "0", "0")
    assert d.read() == {b"a": [[b"1-0", [b"f", b"v1"]]], b"b": [[b"2-0", [b"f", b"v2"]]]}
    d.send("XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", ">")
    assert d.read() is None


# --- blocking -------------------------------------------------------------------------------------


def test_blocked_reader_woken_by_xadd(r, server, deferred):
    r.execute_command("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    d = client_for(server, deferred)
    d.send("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    wait_blocked(r, 1)
    r.execute_command("XADD", "s", "667", "key", "value")
    assert d.read() == [[b"s", [[b"667-0", [b"key", b"value"]]]]]
    assert r.execute_command("XPENDING", "s", "g")[:3] == [1, b"667-0", b"667-0"]


def test_blocked_reader_times_out_on_a_dry_stream(r, server, deferred):
    r.execute_command("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    r.execute_command("XADD", "s", "666", "f", "v")
    assert entries(xrg(r, "GROUP", "g", "Alice", "BLOCK", "10", "STREAMS", "s", ">")) == [
        [b"666-0", [b"f", b"v"]]]
    r.execute_command("XADD", "s", "667", "f2", "v2")
    r.execute_command("XDEL", "s", "667")
    assert xrg(r, "GROUP", "g", "Alice", "BLOCK", "10", "STREAMS", "s", ">") is None


def test_one_entry_two_blocked_readers(r, server, deferred):
    r.execute_command("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    d1 = client_for(server, deferred)
    d2 = client_for(server, deferred)
    d1.send("XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", "s", ">")
    wait_blocked(r, 1)
    d2.send("XREADGROUP", "GROUP", "g", "c2", "BLOCK", "0", "STREAMS", "s", ">")
    wait_blocked(r, 2)
    r.execute_command("XADD", "s", "1-0", "f", "v")
    assert d1.read() == [[b"s", [[b"1-0", [b"f", b"v"]]]]]  # the oldest waiter first
    wait_blocked(r, 1)  # the other found nothing and waits again
    r.execute_command("XADD", "s", "2-0", "f", "v")
    assert d2.read() == [[b"s", [[b"2-0", [b"f", b"v"]]]]]


def test_destroy_unblocks_with_nogroup(r, server, deferred):
    r.execute_command("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    d = client_for(server, deferred)
    d.send("XREADGROUP", "GROUP", "g", "Alice", "BLOCK", "0", "STREAMS", "s", ">")
    wait_blocked(r, 1)
    r.execute_command("XGROUP", "DESTROY", "s", "g")
    reply = d.read()
    assert isinstance(reply, hiredis.ReplyError) and str(reply).startswith("NOGROUP")
    if not REDIS7:
        assert str(reply) == ("NOGROUP No such key 's' or consumer group 'g' in XREADGROUP "
                              "with GROUP option")


@redis8
@pytest.mark.parametrize("action,expected", [
    (("DEL", "s"), "NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP "
                   "option"),
    (("FLUSHALL",), "NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP "
                    "option"),
    (("SET", "s", "x"), WRONGTYPE),
])
def test_key_gone_unblocks_with_error(r, server, deferred, action, expected):
    r.execute_command("XADD", "s", "666", "f", "v")
    r.execute_command("XGROUP", "CREATE", "s", "g", "$")
    d = client_for(server, deferred)
    d.send("XREADGROUP", "GROUP", "g", "Alice", "BLOCK", "0", "STREAMS", "s", ">")
    wait_blocked(r, 1)
    r.execute_command(*action)
    reply = d.read()
    assert isinstance(reply, hiredis.ReplyError) and str(reply) == expected


def test_block_timeout_and_multi(r, server, deferred):
    r.execute_command("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    assert xrg(r, "GROUP", "g", "c", "BLOCK", "20", "STREAMS", "s", ">") is None
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    assert pipe.execute() == [None]


# --- CLAIM (Redis 8.4) ----------------------------------------------------------------------------


@redis8
def test_claim_errors(r):
    setup_stream(r, "s", 1, 2)
    not_int = "min-idle-time is not an integer"
    for v in ("test", "5.5", "5,5", "10e", "+10", "*10", "10/2", "-0", "-5.5", "(-10)*2"):
        assert err(r, "XREADGROUP", "GROUP", "g", "c", "CLAIM", v, "STREAMS", "s", ">") == not_int
    for v in ("-10", "-42"):
        assert err(r, "XREADGROUP", "GROUP", "g", "c", "CLAIM", v, "STREAMS", "s", ">") == (
            "min-idle-time must be a positive integer")
    assert err(r, "XREADGROUP", "GROUP", "g", "c", "CLAIM", "10", "CLAIM", "COUNT", "1",
               "STREAMS", "s", ">") == not_int
    assert err(r, "XREADGROUP", "CLAIM", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s",
               ">") == not_int
    assert err(r, "XREADGROUP", "GROUP", "g", "c", "CLAIM", "STREAMS", "s", ">") == not_int
    assert err(r, "XREADGROUP", "GROUP", "g", "CLAIM", "50", "c", "STREAMS", "s", ">") == (
        "syntax error")
    assert err(r, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", "CLAIM", "50",
               ">").startswith("NOGROUP No such key 'CLAIM'")
    assert err(r, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">", "CLAIM", "50") == BAD_ID
    assert err(r, "XREADGROUP", "GROUP", "nope", "c", "CLAIM", "50", "STREAMS", "s", ">") == (
        "NOGROUP No such key 's' or consumer group 'nope' in XREADGROUP with GROUP option")


@redis8
def test_claim_takes_idle_entries_first(r):
    setup_stream(r, "s", 1, 2, 3)
    xrg(r, "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "s", ">")
    time.sleep(0.1)
    got = entries(xrg(r, "GROUP", "g", "c2", "CLAIM", "50", "STREAMS", "s", ">"))
    assert [e[0] for e in got] == [b"1-0", b"2-0", b"3-0"]
    assert got[0][1] == [b"f", b"v1"] and got[0][2] >= 50 and got[0][3] == 1
    assert [e[2:] for e in got[1:]] == [[0, 0], [0, 0]]  # new entries
    rows = r.execute_command("XPENDING", "s", "g", "-", "+", "10")
    assert [(x[1], x[3]) for x in rows] == [(b"c2", 2), (b"c2", 1), (b"c2", 1)]


@redis8
def test_claim_respects_min_idle_and_count(r):
    setup_stream(r, "s", 1, 2, 3)
    xrg(r, "GROUP", "g", "c1", "STREAMS", "s", ">")
    assert xrg(r, "GROUP", "g", "c2", "CLAIM", "100000", "STREAMS", "s", ">") is None
    time.sleep(0.1)
    got = entries(xrg(r, "GROUP", "g", "c2", "COUNT", "2", "CLAIM", "50", "STREAMS", "s", ">"))
    assert [(e[0], e[3]) for e in got] == [(b"1-0", 1), (b"2-0", 1)]
    # the last CLAIM given wins; COUNT before or after CLAIM
    time.sleep(0.1)
    got = entries(xrg(r, "CLAIM", "1", "GROUP", "g", "c3", "CLAIM", "60", "COUNT", "1",
                      "STREAMS", "s", ">"))
    assert [(e[0], e[3]) for e in got] == [(b"3-0", 1)]


@redis8
def test_claim_delivery_count_and_idle(r):
    setup_stream(r, "s", 1)
    xrg(r, "GROUP", "g", "c1", "STREAMS", "s", ">")
    counts = []
    for consumer in ("c2", "c3", "c3", "c3", "c4", "c5"):
        time.sleep(0.06)
        got = entries(xrg(r, "GROUP", "g", consumer, "CLAIM", "50", "STREAMS", "s", ">"))
        assert got[0][2] >= 50
        counts.append(got[0][3])
    assert counts == [1, 2, 3, 4, 5, 6]


@redis8
def test_claim_with_noack(r):
    setup_stream(r, "s", 1, 2)
    xrg(r, "GROUP", "g", "c1", "COUNT", "1", "STREAMS", "s", ">")
    time.sleep(0.1)
    got = entries(xrg(r, "GROUP", "g", "c1", "NOACK", "CLAIM", "50", "STREAMS", "s", ">"))
    assert [e[0] for e in got] == [b"1-0", b"2-0"]
    assert r.execute_command("XPENDING", "s", "g")[0] == 1  # the claimed one stays pending
    time.sleep(0.1)
    got = entries(xrg(r, "GROUP", "g", "c1", "NOACK", "CLAIM", "50", "STREAMS", "s", ">"))
    assert [e[0] for e in got] == [b"1-0"]


@redis8
def test_claim_min_idle_zero_multiple_streams_and_history(r):
    for key, a, b in (("s1", 1, 2), ("s2", 3, 4)):
        setup_stream(r, key, a, b)
    xrg(r, "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s1", "s2", ">", ">")
    reply = xrg(r, "GROUP", "g", "c", "CLAIM", "0", "STREAMS", "s1", "s2", ">", ">")
    assert [(k, [(e[0], e[3]) for e in es]) for k, es in reply] == [
        (b"s1", [(b"1-0", 1), (b"2-0", 0)]), (b"s2", [(b"3-0", 1), (b"4-0", 0)])]
    # CLAIM does not apply to history reads
    hist = entries(xrg(r, "GROUP", "g", "c", "CLAIM", "1000", "STREAMS", "s1", "0"))
    assert [len(e) for e in hist] == [2, 2]


@redis8
def test_claim_skips_acknowledged_and_keeps_forced(r):
    setup_stream(r, "s", 1, 2, 3)
    r.execute_command("XCLAIM", "s", "g", "c3", "0", "1-0", "2-0", "FORCE", "JUSTID")
    got = entries(xrg(r, "GROUP", "g", "c2", "CLAIM", "0", "COUNT", "2", "STREAMS", "s", ">"))
    assert [(e[0], e[3]) for e in got] == [(b"1-0", 1), (b"2-0", 1)]
    r.execute_command("XACK", "s", "g", "1-0", "2-0")
    # FORCE did not move the group's last ID: all three are still new to the group
    got = entries(xrg(r, "GROUP", "g", "c2", "CLAIM", "0", "STREAMS", "s", ">"))
    assert [(e[0], e[3]) for e in got] == [(b"1-0", 0), (b"2-0", 0), (b"3-0", 0)]


@redis8
def test_claim_wakes_blocked_reader_when_idle_enough(r, server, deferred):
    r.execute_command("XADD", "s", "1-0", "f", "v1")
    r.execute_command("XDEL", "s", "1-0")
    r.execute_command("XGROUP", "CREATE", "s", "g", "0", "MKSTREAM")
    d1 = client_for(server, deferred)
    d2 = client_for(server, deferred)
    d1.send("XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", "s", ">")
    d2.send("XREADGROUP", "GROUP", "g", "c2", "BLOCK", "0", "CLAIM", "100", "STREAMS", "s", ">")
    wait_blocked(r, 2)
    r.execute_command("XADD", "s", "2-0", "f", "v2")
    assert d1.read() == [[b"s", [[b"2-0", [b"f", b"v2"]]]]]
    # c2 found nothing claimable yet; once 2-0 has been idle 100 ms it takes it over
    reply = d2.read()
    assert reply[0][0] == b"s" and reply[0][1][0][0] == b"2-0"
    assert reply[0][1][0][2] >= 100 and reply[0][1][0][3] == 1
    rows = r.execute_command("XPENDING", "s", "g", "-", "+", "10")
    assert [(x[1], x[3]) for x in rows] == [(b"c2", 2)]


@redis8
def test_claim_with_block_times_out(r):
    setup_stream(r, "s", 1)
    xrg(r, "GROUP", "g", "c", "STREAMS", "s", ">")
    assert xrg(r, "GROUP", "g", "c", "BLOCK", "50", "CLAIM", "100000", "STREAMS", "s", ">") is None


@redis8
def test_claim_passes_over_pending_entries_trimmed_away(r):
    """Pending entries whose stream entries are gone cannot be returned: with nothing else
    to serve the reply is nil (never an empty list for the stream), and a BLOCK waits its
    time out instead of answering at once. The entries stay pending."""
    setup_stream(r, "s", 1, 2, 3)
    xrg(r, "GROUP", "g", "c1", "STREAMS", "s", ">")
    r.execute_command("XTRIM", "s", "MAXLEN", "0")
    time.sleep(0.1)
    assert xrg(r, "GROUP", "g", "c2", "CLAIM", "50", "STREAMS", "s", ">") is None
    start = time.monotonic()
    assert xrg(r, "GROUP", "g", "c2", "BLOCK", "200", "CLAIM", "50", "STREAMS", "s", ">") is None
    assert time.monotonic() - start >= 0.19
    assert r.execute_command("XPENDING", "s", "g")[0] == 3
    # A live entry after them is still claimed once idle enough.
    r.execute_command("XADD", "s", "4-0", "f", "v4")
    xrg(r, "GROUP", "g", "c1", "STREAMS", "s", ">")
    time.sleep(0.1)
    got = entries(xrg(r, "GROUP", "g", "c2", "CLAIM", "50", "STREAMS", "s", ">"))
    assert [(e[0], e[3]) for e in got] == [(b"4-0", 1)]
