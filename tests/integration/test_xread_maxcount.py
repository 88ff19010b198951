"""XREAD / XREADGROUP MAXCOUNT and MAXSIZE (Redis 8.10)."""

from __future__ import annotations

import pytest
import redis

from tests.helpers import TARGET
from tests.resp import RawConn

pytestmark = pytest.mark.skipif(TARGET == "redis", reason="Redis 8.10 (redis-server is 7.0)")


def _ids(reply: list) -> list[tuple[bytes, list[bytes]]]:
    return [(key, [e[0] for e in entries]) for key, entries in reply]


@pytest.fixture
def two(r: redis.Redis) -> redis.Redis:
    for i in range(1, 4):
        r.xadd("a", {"f": "v" * i}, id=f"{i}-0")  # 2, 3, 4 bytes of field and value
        r.xadd("b", {"f": "v"}, id=f"{i}-0")
    return r


def test_maxcount_bounds_the_whole_reply(raw: RawConn, two: redis.Redis) -> None:
    assert _ids(raw.value("XREAD", "MAXCOUNT", "4", "STREAMS", "a", "b", "0", "0")) == [
        (b"a", [b"1-0", b"2-0", b"3-0"]), (b"b", [b"1-0"])]
    assert _ids(raw.value("XREAD", "COUNT", "2", "MAXCOUNT", "3", "STREAMS", "a", "b", "0",
                          "0")) == [(b"a", [b"1-0", b"2-0"]), (b"b", [b"1-0"])]
    # the budget is spent: the later stream is left out of the reply
    assert _ids(raw.value("XREAD", "MAXCOUNT", "2", "STREAMS", "a", "b", "0", "0")) == [
        (b"a", [b"1-0", b"2-0"])]
    # 0 and negative values are no limit, as COUNT
    for value in ("0", "-5"):
        assert len(raw.value("XREAD", "MAXCOUNT", value, "STREAMS", "a", "b", "0", "0")) == 2


def test_maxsize_counts_field_and_value_bytes(raw: RawConn, two: redis.Redis) -> None:
    assert _ids(raw.value("XREAD", "MAXSIZE", "5", "STREAMS", "a", "b", "0", "0")) == [
        (b"a", [b"1-0", b"2-0"])]
    assert _ids(raw.value("XREAD", "MAXSIZE", "11", "STREAMS", "a", "b", "0", "0")) == [
        (b"a", [b"1-0", b"2-0", b"3-0"]), (b"b", [b"1-0"])]
    # the first entry is always served, however large
    assert _ids(raw.value("XREAD", "MAXSIZE", "1", "STREAMS", "a", "b", "0", "0")) == [
        (b"a", [b"1-0"])]


def test_option_errors(raw: RawConn, two: redis.Redis) -> None:
    assert raw.call("XREAD", "MAXCOUNT", "x", "STREAMS", "a", "0") == (
        b"-ERR value is not an integer or out of range\r\n")
    assert raw.call("XREAD", "MAXSIZE", "1.5", "STREAMS", "a", "0") == (
        b"-ERR value is not an integer or out of range\r\n")
    # (as COUNT: the word after MAXCOUNT is its value)
    assert raw.call("XREAD", "MAXCOUNT", "STREAMS", "a", "0") == (
        b"-ERR value is not an integer or out of range\r\n")


def test_xreadgroup_delivers_only_what_it_serves(raw: RawConn, two: redis.Redis) -> None:
    two.xgroup_create("a", "g", "0")
    two.xgroup_create("b", "g", "0")
    reply = raw.value("XREADGROUP", "GROUP", "g", "c", "MAXCOUNT", "2", "STREAMS", "a", "b",
                      ">", ">")
    assert _ids(reply) == [(b"a", [b"1-0", b"2-0"])]
    assert raw.value("XPENDING", "a", "g")[0] == 2
    assert raw.value("XPENDING", "b", "g")[0] == 0
    # the rest comes with the next read
    reply = raw.value("XREADGROUP", "GROUP", "g", "c", "MAXSIZE", "4", "STREAMS", "a", "b",
                      ">", ">")
    assert _ids(reply) == [(b"a", [b"3-0"])]
    # history reads and CLAIM count towards the budget too
    reply = raw.value("XREADGROUP", "GROUP", "g", "c", "MAXCOUNT", "1", "STREAMS", "a", "0")
    assert _ids(reply) == [(b"a", [b"1-0"])]
    reply = raw.value("XREADGROUP", "GROUP", "g", "c2", "MAXCOUNT", "2", "CLAIM", "0",
                      "STREAMS", "a", ">")
    claimed = [e[0] for e in reply[0][1]]
    assert len(claimed) == 2
    assert [e[0] for e in raw.value("XPENDING", "a", "g", "-", "+", "10", "c2")] == sorted(
        claimed)
