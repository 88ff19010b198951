"""XCLAIM and XAUTOCLAIM against a real server: ownership transfer, min-idle-time, IDLE /
TIME / RETRYCOUNT / FORCE / JUSTID / LASTID, deleted entries dropped from the PEL, the
XAUTOCLAIM cursor and COUNT, and every error text.

`XSTREAMD_TEST_TARGET=redis` runs this file against Debian's redis-server 7.0; checks of
behaviour added after 7.0 are marked `redis8` and skipped there.
"""

from __future__ import annotations

import time

import redis

from tests.integration.server_fixtures import unparsed_resp2_client
from tests.integration.stream_helpers import WRONGTYPE, err, redis8

r = unparsed_resp2_client()


def pending(r: redis.Redis, key: str = "s", group: str = "g") -> list[tuple]:
    """(id, owner, deliveries) of every pending entry."""
    return [(x[0], x[1], x[3]) for x in r.execute_command("XPENDING", key, group, "-", "+",
                                                          "100")]


def setup(r: redis.Redis, *ms: int, reader: str | None = "alice") -> None:
    for m in ms:
        r.execute_command("XADD", "s", f"{m}-0", "f", f"v{m}")
    r.execute_command("XGROUP", "CREATE", "s", "g", "0")
    if reader is not None:
        r.execute_command("XREADGROUP", "GROUP", "g", reader, "STREAMS", "s", ">")


# --- XCLAIM -----------------------------------------------------------------------------------


def test_xclaim_errors(r):
    assert err(r, "XCLAIM", "s", "g", "c", "0", "1-0") == (
        "NOGROUP No such key 's' or consumer group 'g'")
    setup(r, 1, 2)
    assert err(r, "XCLAIM", "s", "nog", "c", "0", "1-0") == (
        "NOGROUP No such key 's' or consumer group 'nog'")
    assert err(r, "XCLAIM", "s", "g", "c", "x", "1-0") == (
        "Invalid min-idle-time argument for XCLAIM")
    for opt in ("IDLE", "TIME", "RETRYCOUNT"):
        assert err(r, "XCLAIM", "s", "g", "c", "0", "1-0", opt, "x") == (
            f"Invalid {opt} option argument for XCLAIM")
        assert err(r, "XCLAIM", "s", "g", "c", "0", "1-0", opt) == (
            f"Unrecognized XCLAIM option '{opt}'")
    assert err(r, "XCLAIM", "s", "g", "c", "0", "1-0", "LASTID", "x") == (
        "Invalid stream ID specified as stream command argument")
    assert err(r, "XCLAIM", "s", "g", "c", "0", "1-0", "foo", "2-0") == (
        "Unrecognized XCLAIM option 'foo'")
    assert err(r, "XCLAIM", "s", "g", "c", "0", "x", "JUSTID") == "Unrecognized XCLAIM option 'x'"
    assert pending(r) == [(b"1-0", b"alice", 1), (b"2-0", b"alice", 1)]  # nothing happened
    r.set("str", "x")
    assert err(r, "XCLAIM", "str", "g", "c", "0", "1-0") == WRONGTYPE


def test_xclaim_transfers_ownership(r):
    setup(r, 1, 2, 3, reader=None)
    r.execute_command("XREADGROUP", "GROUP", "g", "consumer1", "COUNT", "1", "STREAMS", "s", ">")
    assert pending(r) == [(b"1-0", b"consumer1", 1)]
    time.sleep(0.05)
    assert r.execute_command("XCLAIM", "s", "g", "consumer2", "10", "1-0") == [
        [b"1-0", [b"f", b"v1"]]]
    assert pending(r) == [(b"1-0", b"consumer2", 2)]
    # not idle long enough: nothing
    assert r.execute_command("XCLAIM", "s", "g", "consumer3", "100000", "1-0") == []
    # JUSTID keeps the delivery count
    assert r.execute_command("XCLAIM", "s", "g", "consumer3", "0", "1-0", "JUSTID") == [b"1-0"]
    assert pending(r) == [(b"1-0", b"consumer3", 2)]
    # the same consumer again
    assert r.execute_command("XCLAIM", "s", "g", "consumer3", "0", "1-0") == [
        [b"1-0", [b"f", b"v1"]]]
    assert pending(r) == [(b"1-0", b"consumer3", 3)]
    # not pending, no FORCE: nothing
    assert r.execute_command("XCLAIM", "s", "g", "consumer3", "0", "2-0") == []


def test_xclaim_options(r):
    setup(r, 1, 2, 3)
    now = int(time.time() * 1000)
    r.execute_command("XCLAIM", "s", "g", "bob", "0", "1-0", "IDLE", "500000", "RETRYCOUNT", "7")
    rows = r.execute_command("XPENDING", "s", "g", "-", "+", "10")
    assert rows[0][1] == b"bob" and rows[0][2] >= 500000 and rows[0][3] == 7
    r.execute_command("XCLAIM", "s", "g", "bob", "0", "2-0", "TIME", str(now - 300000), "JUSTID")
    rows = r.execute_command("XPENDING", "s", "g", "-", "+", "10")
    assert 300000 <= rows[1][2] < 400000 and rows[1][3] == 1
    # a TIME in the future or negative means now
    r.execute_command("XCLAIM", "s", "g", "bob", "0", "3-0", "TIME", str(now + 10**9))
    rows = r.execute_command("XPENDING", "s", "g", "-", "+", "10")
    assert rows[2][2] < 100000
    # LASTID moves the group forward only
    r.execute_command("XCLAIM", "s", "g", "bob", "0", "1-0", "LASTID", "9-0", "JUSTID")
    assert r.execute_command("XINFO", "GROUPS", "s")[0][7] == b"9-0"
    r.execute_command("XCLAIM", "s", "g", "bob", "0", "1-0", "LASTID", "5-0", "JUSTID")
    assert r.execute_command("XINFO", "GROUPS", "s")[0][7] == b"9-0"


def test_xclaim_force(r):
    setup(r, 1, 2, 3, reader=None)
    assert r.execute_command("XCLAIM", "s", "g", "c3", "100000", "1-0", "2-0", "FORCE",
                             "JUSTID") == [b"1-0", b"2-0"]
    assert pending(r) == [(b"1-0", b"c3", 1), (b"2-0", b"c3", 1)]
    assert r.execute_command("XCLAIM", "s", "g", "c3", "0", "3-0", "FORCE") == [
        [b"3-0", [b"f", b"v3"]]]
    assert pending(r)[2] == (b"3-0", b"c3", 2)
    assert r.execute_command("XCLAIM", "s", "g", "c3", "0", "9-0", "FORCE") == []


def test_xclaim_drops_deleted_and_trimmed_entries(r):
    setup(r, 1, 2, 3)
    r.execute_command("XDEL", "s", "2-0")
    assert r.execute_command("XCLAIM", "s", "g", "Bob", "0", "1-0", "2-0", "3-0") == [
        [b"1-0", [b"f", b"v1"]], [b"3-0", [b"f", b"v3"]]]
    assert r.execute_command("XPENDING", "s", "g", "-", "+", "10", "alice") == []
    assert [p[0] for p in pending(r)] == [b"1-0", b"3-0"]


def test_xclaim_after_trim(r):
    r.execute_command("CONFIG", "SET", "stream-node-max-entries", "2")
    try:
        setup(r, 1, 2, 3)
        r.execute_command("XTRIM", "s", "MAXLEN", "1")
        assert r.execute_command("XCLAIM", "s", "g", "Bob", "0", "1-0", "2-0", "3-0") == [
            [b"3-0", [b"f", b"v3"]]]
        assert r.execute_command("XPENDING", "s", "g", "-", "+", "10", "alice") == []
    finally:
        r.execute_command("CONFIG", "SET", "stream-node-max-entries", "100")


@redis8
def test_xclaim_creates_consumer_even_without_claims(r):
    setup(r, 1)
    assert r.execute_command("XCLAIM", "s", "g", "newbie", "100000", "1-0") == []
    names = [c[1] for c in r.execute_command("XINFO", "CONSUMERS", "s", "g")]
    assert names == [b"alice", b"newbie"]


# --- XAUTOCLAIM ---------------------------------------------------------------------------


def test_xautoclaim_errors(r):
    assert err(r, "XAUTOCLAIM", "s", "g", "c", "x", "0") == (
        "Invalid min-idle-time argument for XAUTOCLAIM")
    assert err(r, "XAUTOCLAIM", "s", "g", "c", "0", "x") == (
        "Invalid stream ID specified as stream command argument")
    for count in ("0", "x", "-1", "8070450532247928833"):
        assert err(r, "XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", count) == (
            "COUNT must be > 0")
    assert err(r, "XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT") == "syntax error"
    assert err(r, "XAUTOCLAIM", "s", "g", "c", "0", "0", "foo") == "syntax error"
    # the arguments are checked before the key
    assert err(r, "XAUTOCLAIM", "s", "g", "c", "0", "0") == (
        "NOGROUP No such key 's' or consumer group 'g'")
    assert err(r, "XAUTOCLAIM", "s", "g", "c", "0", "(18446744073709551615-18446744073709551615"
               ) == "invalid start ID for the interval"
    r.set("str", "x")
    assert err(r, "XAUTOCLAIM", "str", "g", "c", "0", "0") == WRONGTYPE


def test_xautoclaim_claims_and_iterates(r):
    setup(r, 1, 2, 3, 4, 5)
    time.sleep(0.05)
    reply = r.execute_command("XAUTOCLAIM", "s", "g", "bob", "10", "-", "COUNT", "2")
    assert reply == [b"3-0", [[b"1-0", [b"f", b"v1"]], [b"2-0", [b"f", b"v2"]]], []]
    reply = r.execute_command("XAUTOCLAIM", "s", "g", "bob", "10", reply[0], "COUNT", "2")
    assert reply[0] == b"5-0" and [e[0] for e in reply[1]] == [b"3-0", b"4-0"]
    reply = r.execute_command("XAUTOCLAIM", "s", "g", "bob", "10", reply[0], "COUNT", "1")
    assert reply == [b"0-0", [[b"5-0", [b"f", b"v5"]]], []]
    assert {p[1] for p in pending(r)} == {b"bob"} and {p[2] for p in pending(r)} == {2}
    # exclusive start, JUSTID keeps the counts
    reply = r.execute_command("XAUTOCLAIM", "s", "g", "carol", "0", "(3-0", "JUSTID")
    assert reply == [b"0-0", [b"4-0", b"5-0"], []]
    assert pending(r)[3:] == [(b"4-0", b"carol", 2), (b"5-0", b"carol", 2)]
    # nothing idle enough
    assert r.execute_command("XAUTOCLAIM", "s", "g", "dave", "100000", "0") == [b"0-0", [], []]


def test_xautoclaim_drops_deleted_entries(r):
    setup(r, 1, 2, 3, reader="Alice")
    r.execute_command("XDEL", "s", "2-0")
    assert r.execute_command("XAUTOCLAIM", "s", "g", "Bob", "0", "0-0") == [
        b"0-0", [[b"1-0", [b"f", b"v1"]], [b"3-0", [b"f", b"v3"]]], [b"2-0"]]
    assert r.execute_command("XPENDING", "s", "g", "-", "+", "10", "Alice") == []


def test_xautoclaim_deleted_entries_count_against_count(r):
    setup(r, 1, 2, 3, reader="Alice")
    r.execute_command("XDEL", "s", "1-0")
    r.execute_command("XDEL", "s", "2-0")
    assert r.execute_command("XAUTOCLAIM", "s", "g", "Bob", "0", "0-0", "COUNT", "1") == [
        b"2-0", [], [b"1-0"]]
    assert r.execute_command("XAUTOCLAIM", "s", "g", "Bob", "0", "2-0", "COUNT", "1") == [
        b"3-0", [], [b"2-0"]]
    assert r.execute_command("XAUTOCLAIM", "s", "g", "Bob", "0", "3-0", "COUNT", "1") == [
        b"0-0", [[b"3-0", [b"f", b"v3"]]], []]


def test_xautoclaim_after_trim(r):
    r.execute_command("CONFIG", "SET", "stream-node-max-entries", "2")
    try:
        setup(r, 1, 2, 3)
        r.execute_command("XTRIM", "s", "MAXLEN", "1")
        assert r.execute_command("XAUTOCLAIM", "s", "g", "Bob", "0", "0-0") == [
            b"0-0", [[b"3-0", [b"f", b"v3"]]], [b"1-0", b"2-0"]]
    finally:
        r.execute_command("CONFIG", "SET", "stream-node-max-entries", "100")


def test_xautoclaim_scan_limit(r):
    for m in range(1, 31):
        r.execute_command("XADD", "s", f"{m}-0", "f", "v")
    r.execute_command("XGROUP", "CREATE", "s", "g", "0")
    r.execute_command("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    # nothing is idle for 100 s: COUNT 1 scans 10 entries and hands back the 11th as cursor
    assert r.execute_command("XAUTOCLAIM", "s", "g", "bob", "100000", "0", "COUNT", "1") == [
        b"11-0", [], []]
    assert r.execute_command("XAUTOCLAIM", "s", "g", "bob", "100000", "11", "COUNT", "2") == [
        b"0-0", [], []]
