"""XNACK (Redis 8.8): releasing pending entries back to the group."""

from __future__ import annotations

import threading
import time

import pytest
import redis

from tests.helpers import TARGET, ServerProcess
from tests.resp import RawConn

pytestmark = pytest.mark.skipif(TARGET == "redis", reason="Redis 8.8 (redis-server is 7.0)")
LLONG_MAX = 2**63 - 1


def _setup(r: redis.Redis, n: int = 3, read: bool = True) -> None:
    for i in range(1, n + 1):
        r.xadd("s", {"f": f"v{i}"}, id=f"{i}-0")
    r.xgroup_create("s", "g", "0")
    if read:
        r.xreadgroup("g", "c1", {"s": ">"})


def _pending(raw: RawConn) -> list:
    return raw.value("XPENDING", "s", "g", "-", "+", "100")  # type: ignore[return-value]


def test_errors(raw: RawConn, r: redis.Redis) -> None:
    assert raw.call("XNACK", "s", "g", "SILENT", "IDS", "1") == (
        b"-ERR wrong number of arguments for 'xnack' command\r\n")
    assert raw.call("XNACK", "nokey", "g", "SILENT", "IDS", "1", "1-0") == (
        b"-NOGROUP No such key 'nokey' or consumer group 'g'\r\n")
    r.set("str", "x")
    assert raw.call("XNACK", "str", "g", "FAIL", "IDS", "1", "1-0").startswith(b"-WRONGTYPE")
    _setup(r)
    assert raw.call("XNACK", "s", "nogroup", "FAIL", "IDS", "1", "1-0") == (
        b"-NOGROUP No such key 's' or consumer group 'nogroup'\r\n")
    # Redis 8.8's texts; where its source passes "ERR ..." to addReplyError the wire shows
    # "ERR ERR ..." (docs/compatibility.md)
    assert raw.call("XNACK", "s", "g", "BADMODE", "IDS", "1", "1-0") == (
        b"-ERR ERR mode must be SILENT, FAIL, or FATAL\r\n")
    assert raw.call("XNACK", "s", "g", "FAIL", "BADOPT", "IDS", "1", "1-0") == (
        b"-ERR ERR Unrecognized XNACK option 'BADOPT'\r\n")
    assert raw.call("XNACK", "s", "g", "FAIL", "FATAL", "IDS", "1", "1-0") == (
        b"-ERR ERR Unrecognized XNACK option 'FATAL'\r\n")
    assert raw.call("XNACK", "s", "g", "FAIL", "IDS", "1", "1-0", "2-0") == (
        b"-ERR ERR Unrecognized XNACK option '2-0'\r\n")
    assert raw.call("XNACK", "s", "g", "SILENT", "FORCE", "RETRYCOUNT", "5") == (
        b"-ERR ERR syntax error, expected IDS keyword\r\n")
    for bad in ("abc", "0", "-1"):
        assert raw.call("XNACK", "s", "g", "SILENT", "IDS", bad, "1-0") == (
            b"-ERR numids must be a positive integer\r\n")
    assert raw.call("XNACK", "s", "g", "SILENT", "IDS", "2", "1-0") == (
        b"-ERR ERR number of IDs doesn't match numids\r\n")
    assert raw.call("XNACK", "s", "g", "FAIL", "IDS", "1", "nope") == (
        b"-ERR Invalid stream ID specified as stream command argument\r\n")
    assert raw.call("XNACK", "s", "g", "FAIL", "IDS", "1", "1-0", "RETRYCOUNT", "abc") == (
        b"-ERR value is not an integer or out of range\r\n")
    assert raw.call("XNACK", "s", "g", "FAIL", "IDS", "1", "1-0", "RETRYCOUNT", "-1") == (
        b"-ERR ERR Invalid RETRYCOUNT value, must be >= 0\r\n")
    assert raw.call("XNACK", "s", "g", "FAIL", "IDS", "1", "1-0", "RETRYCOUNT") == (
        b"-ERR ERR Unrecognized XNACK option 'RETRYCOUNT'\r\n")
    assert len(_pending(raw)) == 3 and all(e[1] == b"c1" for e in _pending(raw))


def test_modes_and_retrycount(raw: RawConn, r: redis.Redis) -> None:
    _setup(r)
    assert raw.value("XNACK", "s", "g", "SILENT", "IDS", "1", "1-0") == 1
    assert raw.value("XNACK", "s", "g", "FAIL", "IDS", "1", "2-0") == 1
    assert raw.value("XNACK", "s", "g", "FATAL", "IDS", "1", "3-0") == 1
    assert _pending(raw) == [[b"1-0", b"", -1, 0], [b"2-0", b"", -1, 1],
                             [b"3-0", b"", -1, LLONG_MAX]]
    assert raw.value("XNACK", "s", "g", "SILENT", "IDS", "1", "1-0") == 1  # stays at 0
    assert raw.value("XNACK", "s", "g", "FATAL", "IDS", "1", "1-0", "RETRYCOUNT", "42") == 1
    assert _pending(raw)[0] == [b"1-0", b"", -1, 42]
    # a FATAL entry claimed again stays at the maximum
    r.xclaim("s", "g", "c2", 0, ["3-0"])
    entry = _pending(raw)[2]
    assert (entry[1], entry[3]) == (b"c2", LLONG_MAX)
    # IDs not pending count nothing; duplicates count twice
    assert raw.value("XNACK", "s", "g", "FAIL", "IDS", "3", "9-9", "2-0", "2-0") == 2
    summary = raw.value("XPENDING", "s", "g")
    assert summary == [3, b"1-0", b"3-0", [[b"c2", b"1"]]]
    assert raw.value("XPENDING", "s", "g", "IDLE", "999999", "-", "+", "10") == [
        [b"1-0", b"", -1, 42], [b"2-0", b"", -1, 1]]  # unowned entries pass any IDLE


def test_force(raw: RawConn, r: redis.Redis) -> None:
    _setup(r, read=False)
    assert raw.value("XNACK", "s", "g", "FAIL", "IDS", "1", "1-0", "FORCE") == 1
    assert raw.value("XNACK", "s", "g", "FAIL", "IDS", "1", "9-9", "FORCE") == 0
    assert raw.value("XNACK", "s", "g", "FATAL", "FORCE", "IDS", "1", "2-0") == 1
    assert raw.value("XNACK", "s", "g", "SILENT", "RETRYCOUNT", "33", "IDS", "1", "3-0",
                     "FORCE") == 1
    assert _pending(raw) == [[b"1-0", b"", -1, 0], [b"2-0", b"", -1, LLONG_MAX],
                             [b"3-0", b"", -1, 33]]
    assert raw.value("XNACK", "s", "g", "FAIL", "IDS", "1", "4-0") == 0  # not pending
    assert len(r.xclaim("s", "g", "c1", 0, ["1-0", "2-0", "3-0"])) == 3


def test_released_entries_are_claimed_first_in_release_order(raw: RawConn,
                                                              r: redis.Redis) -> None:
    _setup(r)
    r.execute_command("XNACK", "s", "g", "FAIL", "IDS", "3", "1-0", "2-0", "3-0")
    r.execute_command("XNACK", "s", "g", "FAIL", "IDS", "1", "1-0")  # to the zone's end
    full = r.execute_command("XINFO", "STREAM", "s", "FULL")
    group = full[b"groups"][0]
    assert (group[b"pel-count"], group[b"nacked-count"]) == (3, 3)
    assert list(group)[4:7] == [b"pel-count", b"nacked-count", b"pending"]
    assert group[b"pending"][0] == [b"1-0", b"", 0, 1]
    order = []
    for _ in range(3):
        reply = raw.value("XREADGROUP", "GROUP", "g", "c2", "COUNT", "1", "CLAIM", "999999",
                          "STREAMS", "s", ">")
        entry = reply[0][1][0]
        order.append(entry[0])
        assert entry[3] == 1  # deliveries before this one
    assert order == [b"2-0", b"3-0", b"1-0"]
    assert [e[1] for e in _pending(raw)] == [b"c2"] * 3


def test_claimable_by_xclaim_and_xautoclaim_at_once(raw: RawConn, r: redis.Redis) -> None:
    _setup(r)
    r.execute_command("XNACK", "s", "g", "FAIL", "IDS", "2", "1-0", "2-0")
    assert [e[0] for e in r.xclaim("s", "g", "c2", 99999, ["1-0", "3-0"])] == [b"1-0"]
    cursor, claimed, deleted = raw.value("XAUTOCLAIM", "s", "g", "c3", "99999", "0-0")
    assert [e[0] for e in claimed] == [b"2-0"] and deleted == []
    # an entry deleted while released: XCLAIM drops it from the PEL
    r.execute_command("XNACK", "s", "g", "FAIL", "IDS", "1", "3-0")
    r.xdel("s", "3-0")
    assert r.xclaim("s", "g", "c2", 0, ["3-0"]) == []
    assert [e[0] for e in _pending(raw)] == [b"1-0", b"2-0"]


def test_history_read_and_consumers(raw: RawConn, r: redis.Redis) -> None:
    _setup(r)
    r.execute_command("XNACK", "s", "g", "FAIL", "IDS", "2", "1-0", "3-0")
    history = raw.value("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", "0")
    assert [e[0] for e in history[0][1]] == [b"2-0"]
    assert r.xinfo_consumers("s", "g")[0]["pending"] == 1
    assert r.xinfo_groups("s")[0]["pending"] == 3
    assert r.xgroup_delconsumer("s", "g", "c1") == 1
    assert _pending(raw) == [[b"1-0", b"", -1, 1], [b"3-0", b"", -1, 1]]
    assert r.xack("s", "g", "1-0", "3-0") == 2
    assert raw.value("XPENDING", "s", "g")[0] == 0


def test_wakes_a_blocked_claim(server: ServerProcess, r: redis.Redis) -> None:
    _setup(r, 2)
    result: list = []
    blocked = redis.Redis(host=server.host, port=server.port)

    def wait() -> None:
        result.append(blocked.execute_command(
            "XREADGROUP", "GROUP", "g", "c2", "BLOCK", "5000", "CLAIM", "100000", "STREAMS",
            "s", ">"))

    thread = threading.Thread(target=wait)
    thread.start()
    time.sleep(0.2)
    started = time.time()
    assert r.execute_command("XNACK", "s", "g", "FAIL", "IDS", "2", "1-0", "2-0") == 2
    thread.join(5)
    assert time.time() - started < 2
    assert [e[0] for e in result[0][0][1]] == [b"1-0", b"2-0"]
    blocked.close()


def test_lua_multi_and_command_info(raw: RawConn, r: redis.Redis) -> None:
    _setup(r)
    assert r.eval("return redis.call('XNACK', KEYS[1], 'g', 'FAIL', 'IDS', 1, '1-0')", 1,
                  "s") == 1
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("XNACK", "s", "g", "SILENT", "IDS", "1", "2-0")
    pipe.execute_command("XNACK", "s", "g", "SILENT", "IDS", "1", "9-0")
    assert pipe.execute() == [1, 0]
    info = raw.value("COMMAND", "INFO", "xnack")[0]
    assert info[1] == -7 and sorted(info[6]) == [b"@fast", b"@stream", b"@write"]
    docs = raw.value("COMMAND", "DOCS", "xnack")
    assert b"since" in docs[1] and docs[1][docs[1].index(b"since") + 1] == b"8.8.0"


def test_copy_keeps_the_released_entries(raw: RawConn, r: redis.Redis) -> None:
    _setup(r)
    r.execute_command("XNACK", "s", "g", "FATAL", "IDS", "1", "3-0")
    r.execute_command("XNACK", "s", "g", "FAIL", "IDS", "1", "1-0")
    r.execute_command("XADD", "s", "IDMP", "p", "i", "*", "f", "v")
    assert r.copy("s", "t") == 1
    def without_idle(entries: list) -> list:  # (the two are read a moment apart)
        return [(e[0], e[1], e[3]) for e in entries]

    assert without_idle(raw.value("XPENDING", "t", "g", "-", "+", "10")) == \
        without_idle(_pending(raw))
    claimed = raw.value("XREADGROUP", "GROUP", "g", "c9", "COUNT", "1", "CLAIM", "0",
                        "STREAMS", "t", ">")
    assert claimed[0][1][0][0] == b"3-0"  # the zone's order was copied
    assert r.xinfo_stream("t")["iids-tracked"] == 1
