"""XGROUP, XACK, XACKDEL, XPENDING, XINFO GROUPS / CONSUMERS / STREAM FULL, read counters and
lag, and the KEEPREF / DELREF / ACKED policies on group references, against a real server.

`XSTREAMD_TEST_TARGET=redis` runs this file against Debian's redis-server 7.0; checks of
behaviour added after 7.0 are marked `redis8` and skipped there.
"""

from __future__ import annotations

import time

import redis

from tests.integration.server_fixtures import unparsed_resp2_client
from tests.integration.stream_helpers import REDIS7, WRONGTYPE, err, redis8

KEY_REQUIRED = (
    "The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use "
    "the MKSTREAM option to create an empty stream automatically."
)


r = unparsed_resp2_client()


def pairs(reply: list) -> dict:
    """A flat RESP2 [k, v, k, v...] reply as a dict with str keys."""
    return {reply[i].decode(): reply[i + 1] for i in range(0, len(reply), 2)}


def groups_info(r: redis.Redis, key: str) -> list[dict]:
    return [pairs(g) for g in r.execute_command("XINFO", "GROUPS", key)]


def full_groups(r: redis.Redis, key: str) -> list[dict]:
    info = pairs(r.execute_command("XINFO", "STREAM", key, "FULL"))
    return [pairs(g) for g in info["groups"]]


def fill(r: redis.Redis, key: str, *ms: int) -> None:
    for m in ms:
        r.execute_command("XADD", key, f"{m}-0", "f", f"v{m}")


# --- XGROUP ---------------------------------------------------------------------------------


def test_xgroup_create_and_errors(r):
    assert err(r, "XGROUP", "CREATE", "s", "g", "$") == KEY_REQUIRED
    assert r.execute_command("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM") == b"OK"
    assert r.type("s") == b"stream" and r.xlen("s") == 0
    assert err(r, "XGROUP", "CREATE", "s", "g", "$") == (
        "BUSYGROUP Consumer Group name already exists")
    fill(r, "s", 1, 2)
    assert r.execute_command("XGROUP", "CREATE", "s", "g2", "$") == b"OK"
    assert r.execute_command("XGROUP", "CREATE", "s", "g3", "1") == b"OK"
    info = {g["name"]: g for g in groups_info(r, "s")}
    assert info[b"g"]["last-delivered-id"] == b"0-0"
    assert info[b"g2"]["last-delivered-id"] == b"2-0"
    assert info[b"g3"]["last-delivered-id"] == b"1-0"
    bad = "Invalid stream ID specified as stream command argument"
    for arg in ("+", "-", "x", "1-x"):
        assert err(r, "XGROUP", "CREATE", "s", "h", arg) == bad
    assert err(r, "XGROUP", "CREATE", "s", "h", "0", "ENTRIESREAD", "-2") == (
        "value for ENTRIESREAD must be positive or -1")
    assert err(r, "XGROUP", "CREATE", "s", "h", "0", "ENTRIESREAD", "x") == (
        "value is not an integer or out of range")
    sub = "unknown subcommand or wrong number of arguments for '{}'. Try XGROUP HELP."
    assert err(r, "XGROUP", "CREATE", "s", "h", "0", "FOO") == sub.format("CREATE")
    assert err(r, "XGROUP", "CREATE", "s", "h", "0", "ENTRIESREAD") == sub.format("CREATE")
    assert err(r, "XGROUP", "CREATE", "s", "h", "0", *["MKSTREAM"] * 4) == sub.format("CREATE")
    assert err(r, "XGROUP", "SETID", "s", "g", "0", "MKSTREAM") == sub.format("SETID")
    assert err(r, "XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "1", "x") == sub.format(
        "SETID")
    assert err(r, "XGROUP", "FOO", "s", "g") == "unknown subcommand 'FOO'. Try XGROUP HELP."
    assert err(r, "XGROUP", "DESTROY", "s") == (
        "wrong number of arguments for 'xgroup|destroy' command")
    assert err(r, "XGROUP", "CREATE", "s", "g") == (
        "wrong number of arguments for 'xgroup|create' command")
    r.set("str", "x")
    assert err(r, "XGROUP", "CREATE", "str", "g", "$", "MKSTREAM") == WRONGTYPE


def test_xgroup_setid_destroy_consumers(r):
    fill(r, "s", 1, 2, 3)
    r.execute_command("XGROUP", "CREATE", "s", "g", "0")
    nogroup = "NOGROUP No such consumer group 'nope' for key name 's'"
    for sub in (["SETID", "s", "nope", "0"], ["CREATECONSUMER", "s", "nope", "c"],
                ["DELCONSUMER", "s", "nope", "c"]):
        assert err(r, "XGROUP", *sub) == nogroup
    assert err(r, "XGROUP", "SETID", "missing", "g", "0") == KEY_REQUIRED
    assert r.execute_command("XGROUP", "SETID", "s", "g", "$") == b"OK"
    assert groups_info(r, "s")[0]["last-delivered-id"] == b"3-0"
    assert r.execute_command("XGROUP", "SETID", "s", "g", "-") == b"OK"  # loose: - is 0-0
    assert groups_info(r, "s")[0]["last-delivered-id"] == b"0-0"
    assert r.execute_command("XGROUP", "SETID", "s", "g", "2", "ENTRIESREAD", "2") == b"OK"
    info = groups_info(r, "s")[0]
    assert info["last-delivered-id"] == b"2-0" and info["entries-read"] == 2 and info["lag"] == 1
    assert r.execute_command("XGROUP", "CREATECONSUMER", "s", "g", "alice") == 1
    assert r.execute_command("XGROUP", "CREATECONSUMER", "s", "g", "alice") == 0
    r.execute_command("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">")
    assert r.execute_command("XGROUP", "DELCONSUMER", "s", "g", "bob") == 1
    assert r.execute_command("XGROUP", "DELCONSUMER", "s", "g", "bob") == 0
    assert r.execute_command("XPENDING", "s", "g")[0] == 0
    assert r.execute_command("XGROUP", "DESTROY", "s", "g") == 1
    assert r.execute_command("XGROUP", "DESTROY", "s", "g") == 0
    assert groups_info(r, "s") == []


def test_xgroup_help(r):
    lines = r.execute_command("XGROUP", "HELP")
    assert lines[0] == b"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert lines[1] == b"CREATE <key> <groupname> <id|$> [option]"
    assert b"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]" in lines
    assert lines[-2] == b"HELP"


@redis8
def test_entries_read_is_capped(r):
    r.execute_command("XADD", "s", "*", "field", "value")
    r.execute_command("XGROUP", "CREATE", "s", "g", "$", "ENTRIESREAD", "9999")
    g = full_groups(r, "s")[0]
    assert g["lag"] == 0 and g["entries-read"] == 1
    r.execute_command("XGROUP", "SETID", "s", "g", "$", "ENTRIESREAD", "9999")
    g = full_groups(r, "s")[0]
    assert g["lag"] == 0 and g["entries-read"] == 1


# --- XACK / XACKDEL -----------------------------------------------------------------------------


def test_xack(r):
    assert r.execute_command("XACK", "missing", "g", "1-0") == 0
    assert r.execute_command("XACK", "missing", "g", "junk") == 0  # no key: nothing parsed
    fill(r, "s", 1, 2, 3)
    r.execute_command("XGROUP", "CREATE", "s", "g", "0")
    r.execute_command("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert err(r, "XACK", "s", "g", "1-0", "junk") == (
        "Invalid stream ID specified as stream command argument")
    assert r.execute_command("XPENDING", "s", "g")[0] == 3  # all or nothing
    assert r.execute_command("XACK", "s", "g", "1-0", "1-0", "9-0") == 1
    assert r.execute_command("XACK", "s", "g", "1", "2", "3") == 2
    assert r.execute_command("XPENDING", "s", "g")[0] == 0
    r.set("str", "x")
    assert err(r, "XACK", "str", "g", "1-0") == WRONGTYPE


@redis8
def test_xackdel_errors(r):
    for args in (["XACKDEL"], ["XACKDEL", "s"], ["XACKDEL", "s", "g"]):
        assert err(r, *args) == "wrong number of arguments for 'xackdel' command"
    assert r.execute_command("XACKDEL", "s", "g", "IDS", "2", "1-1", "2-2") == [-1, -1]
    r.execute_command("XADD", "s", "1-0", "f", "v")
    assert r.execute_command("XACKDEL", "s", "g", "IDS", "2", "1-1", "2-2") == [-1, -1]
    r.execute_command("XGROUP", "CREATE", "s", "g", "0")
    for n in ("abc", "0", "-5"):
        assert err(r, "XACKDEL", "s", "g", "IDS", n, "1-1") == (
            "Number of IDs must be a positive integer")
    assert err(r, "XACKDEL", "s", "g", "IDS", "3", "1-1", "2-2") == (
        "The `numids` parameter must match the number of arguments")
    assert err(r, "XACKDEL", "s", "g", "IDS", "1", "1-1", "2-2") == "syntax error"
    for a, b in (("KEEPREF", "DELREF"), ("KEEPREF", "ACKED"), ("DELREF", "ACKED")):
        assert err(r, "XACKDEL", "s", "g", a, b, "IDS", "1", "1-1") == "syntax error"


def _two_groups_read(r):
    fill(r, "s", 1, 2)
    for g, c in (("g1", "c1"), ("g2", "c2")):
        r.execute_command("XGROUP", "CREATE", "s", g, "0")
        r.execute_command("XREADGROUP", "GROUP", g, c, "STREAMS", "s", ">")


@redis8
def test_xackdel_delref(r):
    _two_groups_read(r)
    assert r.execute_command("XACKDEL", "s", "g1", "DELREF", "IDS", "2", "1-0", "2-0") == [1, 1]
    assert r.xlen("s") == 0
    assert r.execute_command("XPENDING", "s", "g1") == [0, None, None, None]
    assert r.execute_command("XPENDING", "s", "g2") == [0, None, None, None]
    assert r.execute_command("XACKDEL", "s", "g2", "DELREF", "IDS", "2", "1-0", "2-0") == [-1, -1]


@redis8
def test_xackdel_acked(r):
    _two_groups_read(r)
    assert r.execute_command("XACKDEL", "s", "g1", "ACKED", "IDS", "2", "1-0", "2-0") == [2, 2]
    assert r.xlen("s") == 2
    assert r.execute_command("XPENDING", "s", "g1") == [0, None, None, None]
    assert r.execute_command("XPENDING", "s", "g2") == [2, b"1-0", b"2-0", [[b"c2", b"2"]]]
    assert r.execute_command("XACKDEL", "s", "g2", "ACKED", "IDS", "2", "1-0", "2-0") == [1, 1]
    assert r.xlen("s") == 0


@redis8
def test_xackdel_keepref(r):
    _two_groups_read(r)
    assert r.execute_command("XACKDEL", "s", "g1", "KEEPREF", "IDS", "2", "1-0", "2-0") == [1, 1]
    assert r.xlen("s") == 0
    assert r.execute_command("XPENDING", "s", "g2") == [2, b"1-0", b"2-0", [[b"c2", b"2"]]]
    # acknowledged though the entries are already gone
    assert r.execute_command("XACKDEL", "s", "g2", "IDS", "2", "1-0", "2-0") == [1, 1]
    assert r.execute_command("XPENDING", "s", "g2") == [0, None, None, None]


@redis8
def test_acked_waits_for_groups_that_have_not_delivered(r):
    fill(r, "s", 1, 2)
    r.execute_command("XGROUP", "CREATE", "s", "g1", "0")
    r.execute_command("XGROUP", "CREATE", "s", "g2", "0")
    r.execute_command("XREADGROUP", "GROUP", "g1", "c", "NOACK", "STREAMS", "s", ">")
    # nothing pending anywhere, but g2 has yet to deliver both entries
    assert r.execute_command("XDELEX", "s", "ACKED", "IDS", "2", "1-0", "2-0") == [2, 2]
    r.execute_command("XREADGROUP", "GROUP", "g2", "c", "COUNT", "1", "NOACK", "STREAMS", "s",
                      ">")
    assert r.execute_command("XDELEX", "s", "ACKED", "IDS", "2", "1-0", "2-0") == [1, 2]


@redis8
def test_destroy_releases_references(r):
    for j in range(5):
        r.execute_command("XADD", "s", f"{j}-1", "item", j)
    r.execute_command("XGROUP", "CREATE", "s", "g", "0")
    r.execute_command("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    ids = ["0-1", "1-1", "2-1", "3-1", "4-1"]
    assert r.execute_command("XDELEX", "s", "ACKED", "IDS", "5", *ids) == [2] * 5
    r.execute_command("XGROUP", "DESTROY", "s", "g")
    assert r.execute_command("XDELEX", "s", "ACKED", "IDS", "5", *ids) == [1] * 5
    assert r.xlen("s") == 0


@redis8
def test_xdelex_and_trims_with_delref(r):
    fill(r, "s", *range(1, 7))
    r.execute_command("XGROUP", "CREATE", "s", "g", "0")
    r.execute_command("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert r.execute_command("XDELEX", "s", "DELREF", "IDS", "1", "1-0") == [1]
    assert r.execute_command("XTRIM", "s", "MINID", "3", "DELREF") == 1
    r.execute_command("XADD", "s", "MAXLEN", "3", "DELREF", "7-0", "f", "v")
    pending = r.execute_command("XPENDING", "s", "g", "-", "+", "10")
    assert [p[0] for p in pending] == [b"5-0", b"6-0"]
    # KEEPREF (the default) leaves the references
    r.execute_command("XTRIM", "s", "MAXLEN", "0")
    assert r.execute_command("XPENDING", "s", "g")[0] == 2
    r.execute_command("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert r.execute_command("XPENDING", "s", "g")[0] == 2


@redis8
def test_trim_acked_keeps_pending_entries(r):
    fill(r, "s", *range(1, 7))
    r.execute_command("XGROUP", "CREATE", "s", "g", "0")
    r.execute_command("XREADGROUP", "GROUP", "g", "c", "COUNT", "4", "STREAMS", "s", ">")
    r.execute_command("XACK", "s", "g", "1-0", "3-0")
    assert r.execute_command("XTRIM", "s", "MAXLEN", "0", "ACKED") == 2
    ids = [e[0] for e in r.xrange("s")]
    assert ids == [b"2-0", b"4-0", b"5-0", b"6-0"]


# --- XPENDING -----------------------------------------------------------------------------------


def test_xpending_forms_and_errors(r):
    fill(r, "s", 1, 2, 3, 4)
    r.execute_command("XGROUP", "CREATE", "s", "g", "0")
    assert r.execute_command("XPENDING", "s", "g") == [0, None, None, None]
    assert r.execute_command("XPENDING", "s", "g", "-", "+", "10") == []
    r.execute_command("XREADGROUP", "GROUP", "g", "c1", "COUNT", "2", "STREAMS", "s", ">")
    r.execute_command("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", ">")
    r.execute_command("XGROUP", "CREATECONSUMER", "s", "g", "c3")
    assert r.execute_command("XPENDING", "s", "g") == [
        4, b"1-0", b"4-0", [[b"c1", b"2"], [b"c2", b"2"]]]
    rows = r.execute_command("XPENDING", "s", "g", "-", "+", "10")
    assert [(x[0], x[1], x[3]) for x in rows] == [
        (b"1-0", b"c1", 1), (b"2-0", b"c1", 1), (b"3-0", b"c2", 1), (b"4-0", b"c2", 1)]
    assert all(isinstance(x[2], int) and x[2] >= 0 for x in rows)
    assert len(r.execute_command("XPENDING", "s", "g", "-", "+", "10", "c2")) == 2
    assert r.execute_command("XPENDING", "s", "g", "-", "+", "10", "nobody") == []
    assert len(r.execute_command("XPENDING", "s", "g", "(1-0", "(4-0", "10")) == 2
    assert len(r.execute_command("XPENDING", "s", "g", "-", "+", "-3")) == 0
    time.sleep(0.05)
    assert len(r.execute_command("XPENDING", "s", "g", "IDLE", "30", "-", "+", "10")) == 4
    assert r.execute_command("XPENDING", "s", "g", "IDLE", "99999999", "-", "+", "10") == []
    assert err(r, "XPENDING", "s", "g", "-") == "syntax error"
    assert err(r, "XPENDING", "s", "g", "-", "+") == "syntax error"
    assert err(r, "XPENDING", "s", "g", "IDLE", "5", "-", "+") == "syntax error"
    assert err(r, "XPENDING", "s", "g", "IDLE", "x", "-", "+", "1") == (
        "value is not an integer or out of range")
    assert err(r, "XPENDING", "s", "g", "-", "+", "x") == "value is not an integer or out of range"
    assert err(r, "XPENDING", "s", "g", "x", "+", "1") == (
        "Invalid stream ID specified as stream command argument")
    assert err(r, "XPENDING", "s", "g", "(+", "+", "1") == (
        "Invalid stream ID specified as stream command argument")
    assert err(r, "XPENDING", "s", "nope") == "NOGROUP No such key 's' or consumer group 'nope'"
    assert err(r, "XPENDING", "nokey", "g") == "NOGROUP No such key 'nokey' or consumer group 'g'"
    # syntax is checked before the key
    assert err(r, "XPENDING", "nokey", "g", "x", "+", "1") == (
        "Invalid stream ID specified as stream command argument")
    r.set("str", "x")
    assert err(r, "XPENDING", "str", "g") == WRONGTYPE


def test_xpending_resp3_null_consumers(server):
    c = redis.Redis(host=server.host, port=server.port, protocol=3)
    c.response_callbacks.clear()
    try:
        c.delete("s3")
        c.execute_command("XGROUP", "CREATE", "s3", "g", "$", "MKSTREAM")
        assert c.execute_command("XPENDING", "s3", "g") == [0, None, None, None]
    finally:
        c.close()


# --- XINFO ----------------------------------------------------------------------------------------


def test_xinfo_groups_and_consumers(r):
    assert err(r, "XINFO", "GROUPS", "nokey") == "no such key"
    assert err(r, "XINFO", "CONSUMERS", "nokey", "g") == "no such key"
    fill(r, "s", 1, 2, 3)
    assert r.execute_command("XINFO", "GROUPS", "s") == []
    r.execute_command("XGROUP", "CREATE", "s", "g", "0")
    assert err(r, "XINFO", "CONSUMERS", "s", "x") == (
        "NOGROUP No such consumer group 'x' for key name 's'")
    r.execute_command("XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">")
    info = groups_info(r, "s")
    assert info == [{"name": b"g", "consumers": 1, "pending": 1, "last-delivered-id": b"1-0",
                     "entries-read": 1, "lag": 2}]
    consumers = [pairs(c) for c in r.execute_command("XINFO", "CONSUMERS", "s", "g")]
    assert [c["name"] for c in consumers] == [b"alice"] and consumers[0]["pending"] == 1
    assert consumers[0]["idle"] >= 0
    if not REDIS7:
        assert consumers[0]["inactive"] >= 0
    r.set("str", "x")
    assert err(r, "XINFO", "GROUPS", "str") == WRONGTYPE


@redis8
def test_consumer_seen_and_active_time(r):
    r.execute_command("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    r.execute_command("XREADGROUP", "GROUP", "g", "Alice", "COUNT", "1", "STREAMS", "s", ">")
    time.sleep(0.1)
    c = pairs(r.execute_command("XINFO", "CONSUMERS", "s", "g")[0])
    assert c["idle"] >= 100 and c["inactive"] == -1
    r.execute_command("XADD", "s", "*", "f", "v")
    r.execute_command("XREADGROUP", "GROUP", "g", "Alice", "COUNT", "1", "STREAMS", "s", ">")
    c = pairs(r.execute_command("XINFO", "CONSUMERS", "s", "g")[0])
    assert 0 <= c["idle"] < 100 and 0 <= c["inactive"] < 100
    time.sleep(0.1)
    r.execute_command("XREADGROUP", "GROUP", "g", "Alice", "COUNT", "1", "STREAMS", "s", ">")
    c = pairs(r.execute_command("XINFO", "CONSUMERS", "s", "g")[0])
    assert c["idle"] < 100 and c["inactive"] >= 100


def test_xinfo_stream_full(r):
    for m, f in zip(range(100, 105), "abcef", strict=True):
        r.execute_command("XADD", "x", m, f, 1)
    r.execute_command("XGROUP", "CREATE", "x", "g1", "0")
    r.execute_command("XGROUP", "CREATE", "x", "g2", "0")
    r.execute_command("XREADGROUP", "GROUP", "g1", "Alice", "COUNT", "1", "STREAMS", "x", ">")
    r.execute_command("XREADGROUP", "GROUP", "g1", "Bob", "COUNT", "1", "STREAMS", "x", ">")
    r.execute_command("XREADGROUP", "GROUP", "g1", "Bob", "NOACK", "COUNT", "1", "STREAMS", "x",
                      ">")
    r.execute_command("XREADGROUP", "GROUP", "g2", "Charlie", "COUNT", "4", "STREAMS", "x", ">")
    r.execute_command("XDEL", "x", "103")
    info = pairs(r.execute_command("XINFO", "STREAM", "x", "FULL"))
    assert info["length"] == 4
    g1, g2 = (pairs(g) for g in info["groups"])
    assert g1["name"] == b"g1" and g1["last-delivered-id"] == b"102-0"
    assert g1["entries-read"] == 3 and g1["pel-count"] == 2
    assert [p[0] for p in g1["pending"]] == [b"100-0", b"101-0"]
    assert [p[1] for p in g1["pending"]] == [b"Alice", b"Bob"]
    alice, bob = (pairs(c) for c in g1["consumers"])
    assert alice["name"] == b"Alice" and alice["pel-count"] == 1
    assert alice["pending"][0][0] == b"100-0" and alice["pending"][0][2] == 1
    assert bob["pel-count"] == 1 and isinstance(bob["seen-time"], int)
    if not REDIS7:
        assert isinstance(bob["active-time"], int)
    charlie = pairs(g2["consumers"][0])
    assert [p[0] for p in charlie["pending"]] == [b"100-0", b"101-0", b"102-0", b"103-0"]
    info = pairs(r.execute_command("XINFO", "STREAM", "x", "FULL", "COUNT", "1"))
    g2 = pairs(info["groups"][1])
    assert len(g2["pending"]) == 1 and len(pairs(g2["consumers"][0])["pending"]) == 1
    assert g2["pel-count"] == 4
    assert pairs(r.execute_command("XINFO", "STREAM", "x"))["groups"] == 2


# --- read counters and lag (stream-cgroups.tcl cases) ------------------------------------------


def group_state(r: redis.Redis, key: str, index: int = 0) -> tuple:
    g = full_groups(r, key)[index]
    return g["entries-read"], g["lag"]


def test_lag_sanity(r):
    fill(r, "x", 1, 2, 3, 4, 5)
    r.execute_command("XGROUP", "CREATE", "x", "g1", "0")
    assert group_state(r, "x") == (None, 5)
    r.execute_command("XREADGROUP", "GROUP", "g1", "c11", "COUNT", "1", "STREAMS", "x", ">")
    assert group_state(r, "x") == (1, 4)
    r.execute_command("XREADGROUP", "GROUP", "g1", "c12", "COUNT", "10", "STREAMS", "x", ">")
    assert group_state(r, "x") == (5, 0)
    r.execute_command("XADD", "x", "6-0", "data", "f")
    assert group_state(r, "x") == (5, 1)


def test_lag_with_xdel(r):
    fill(r, "x", 1, 2, 3, 4, 5)
    r.execute_command("XDEL", "x", "3-0")
    r.execute_command("XGROUP", "CREATE", "x", "g1", "0")
    r.execute_command("XGROUP", "CREATE", "x", "g2", "0")
    assert group_state(r, "x") == (None, None)
    for _ in range(3):
        r.execute_command("XREADGROUP", "GROUP", "g1", "c11", "COUNT", "1", "STREAMS", "x", ">")
        assert group_state(r, "x") == (None, None)
    r.execute_command("XREADGROUP", "GROUP", "g1", "c11", "COUNT", "1", "STREAMS", "x", ">")
    assert group_state(r, "x") == (5, 0)
    r.execute_command("XADD", "x", "6-0", "data", "f")
    assert group_state(r, "x") == (5, 1)


@redis8
def test_lag_after_trims(r):
    fill(r, "x", 1, 2, 3, 4, 5)
    r.execute_command("XDEL", "x", "3-0")
    r.execute_command("XGROUP", "CREATE", "x", "g1", "0")
    r.execute_command("XGROUP", "CREATE", "x", "g2", "0")
    r.execute_command("XREADGROUP", "GROUP", "g1", "c", "STREAMS", "x", ">")
    r.execute_command("XADD", "x", "6-0", "data", "f")
    r.execute_command("XTRIM", "x", "MINID", "=", "3-0")
    assert group_state(r, "x", 0) == (5, 1) and group_state(r, "x", 1) == (None, 3)
    r.execute_command("XTRIM", "x", "MINID", "=", "5-0")
    assert group_state(r, "x", 0) == (5, 1) and group_state(r, "x", 1) == (None, 2)


@redis8
def test_lag_with_tombstone_after_last_id(r):
    r.execute_command("XGROUP", "CREATE", "x", "g1", "$", "MKSTREAM")
    r.execute_command("XADD", "x", "1-0", "data", "a")
    r.execute_command("XREADGROUP", "GROUP", "g1", "alice", "STREAMS", "x", ">")
    r.execute_command("XADD", "x", "2-0", "data", "c")
    r.execute_command("XADD", "x", "3-0", "data", "d")
    r.execute_command("XDEL", "x", "2-0")
    assert group_state(r, "x") == (1, None)
    r.execute_command("XDEL", "x", "1-0")
    assert group_state(r, "x") == (1, 1)
    r.execute_command("XREADGROUP", "GROUP", "g1", "alice", "STREAMS", "x", ">")
    assert group_state(r, "x") == (3, 0)


@redis8
def test_lag_with_xtrim(r):
    r.execute_command("XGROUP", "CREATE", "x", "mygroup", "$", "MKSTREAM")
    fill(r, "x", 1, 2, 3, 4, 5)
    r.execute_command("XREADGROUP", "GROUP", "mygroup", "alice", "COUNT", "1", "STREAMS", "x",
                      ">")
    assert group_state(r, "x") == (1, 4)
    r.execute_command("XTRIM", "x", "MAXLEN", "1")
    assert group_state(r, "x") == (1, 1)
    r.execute_command("XREADGROUP", "GROUP", "mygroup", "alice", "STREAMS", "x", ">")
    assert group_state(r, "x") == (5, 0)
    r.execute_command("XADD", "x", "6-0", "data", "f")
    assert group_state(r, "x") == (5, 1)
    r.execute_command("XTRIM", "x", "MAXLEN", "0")
    assert group_state(r, "x")[1] == 0


def test_lag_in_empty_stream(r):
    r.execute_command("XGROUP", "CREATE", "x", "g1", "0", "MKSTREAM")
    assert group_state(r, "x") == (None, 0)
    r.execute_command("XADD", "x", "1-0", "data", "a")
    r.execute_command("XDEL", "x", "1-0")
    assert group_state(r, "x") == (None, 0)


def test_lag_after_setid(r):
    fill(r, "x", 1, 2, 3, 4)
    r.execute_command("XGROUP", "CREATE", "x", "g", "$")
    assert group_state(r, "x") == (None, 0)
    r.execute_command("XGROUP", "SETID", "x", "g", "0")
    assert group_state(r, "x") == (None, 4)
    r.execute_command("XGROUP", "SETID", "x", "g", "2-0", "ENTRIESREAD", "2")
    assert group_state(r, "x") == (2, 2)
    r.execute_command("XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">")
    assert group_state(r, "x") == (4, 0)
