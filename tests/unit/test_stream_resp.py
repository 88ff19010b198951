"""The RESP node cache (storage.stream_resp) against the list path: for random histories of
appends, deletions, trims and reads, every range read served from the cache is byte for
byte the encoding of range_reply(), whatever the cache's bound, and stale nodes are never
served."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.encoder import encode
from storage import stream_resp
from storage.stream import Stream

MAX_ID = (2**64 - 1, 2**64 - 1)


@pytest.fixture(autouse=True)
def _restore_bound():
    before = stream_resp.max_bytes()
    yield
    stream_resp.set_max_bytes(before)


def _fields(rng: random.Random) -> list[bytes]:
    kind = rng.randrange(4)
    if kind == 0:
        return [b"f", b"%d" % rng.randrange(-300, 10**7)]
    if kind == 1:
        return [b"a", b"x" * rng.randrange(0, 70), b"b", b"%d" % rng.randrange(200)]
    if kind == 2:
        return [b"long", b"y" * rng.randrange(1000, 1100)]  # past the encoder's headers
    return [b"f%d" % i for i in range(rng.randrange(1, 4)) for _ in (0, 1)]


def _random_id(rng: random.Random, s: Stream) -> tuple[int, int]:
    if rng.random() < 0.1:
        return rng.choice([(0, 0), MAX_ID, s.last_id])
    return (rng.randrange(0, s.last_id[0] + 3), rng.randrange(0, 4))


def _check_reads(rng: random.Random, s: Stream, reads: int) -> None:
    for _ in range(reads):
        a, b = sorted((_random_id(rng, s), _random_id(rng, s)))
        if rng.random() < 0.2:
            a, b = b, a  # an empty range
        count = rng.choice([0, 0, 1, 2, 7, 50, 1000])
        rev = rng.random() < 0.4
        served = s.range_resp(a, b, count, rev)
        assert served is not None
        parts, n = served
        expected = s.range_reply(a, b, count, rev)
        assert n == len(expected)
        assert b"".join(parts) == encode(expected)[len(b"*%d\r\n" % n):], (a, b, count, rev)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), bound=st.sampled_from([64 << 20, 5000, 1]))
def test_random_histories_read_the_same_with_the_cache(seed: int, bound: int) -> None:
    stream_resp.set_max_bytes(bound)
    rng = random.Random(seed)
    s = Stream()
    ms = 1
    max_entries = rng.choice([3, 10, 100])
    cursor = (0, 0)
    for _step in range(rng.randrange(20, 120)):
        op = rng.random()
        if op < 0.6:
            ms += rng.randrange(0, 3)
            s.append(_fields(rng), None, True, ms, 4096, max_entries)
        elif op < 0.75 and s.length:
            live = [eid for eid, _ in s.range((0, 0), MAX_ID)]
            s.delete(rng.choice(live))
        elif op < 0.8 and s.length:
            s.trim("maxlen", rng.randrange(0, s.length + 1), rng.random() < 0.5)
        elif op < 0.85 and s.length:
            s.trim("minid", _random_id(rng, s))
        elif op < 0.93:
            cursor = _cursor_step(rng, s, cursor)
        else:
            _check_reads(rng, s, 5)
    _check_reads(rng, s, 20)


def _cursor_step(rng: random.Random, s: Stream, cursor: tuple[int, int]) -> tuple[int, int]:
    """A read of a cursor (XREADGROUP >, XREAD, XRANGE paging): from just after the last ID it
    was given, which the stream's seek hint serves without a rax walk; returns the next
    cursor (back to the start at the end of the stream)."""
    count = rng.choice([1, 3, 10])
    served = s.range_resp(cursor, MAX_ID, count)
    assert served is not None
    parts, n = served
    expected = s.range_reply(cursor, MAX_ID, count)
    assert n == len(expected)
    assert b"".join(parts) == encode(expected)[len(b"*%d\r\n" % n):], (cursor, count)
    if not expected:
        return (0, 0)
    ms, seq = (int(x) for x in expected[-1][0].split(b"-"))
    return (ms, seq + 1) if seq < 2**64 - 1 else (ms + 1, 0)


def test_a_node_is_encoded_once_and_served_from_the_cache() -> None:
    stream_resp.set_max_bytes(64 << 20)
    s = Stream()
    for i in range(1, 1001):
        s.append([b"n", b"%d" % i], (i, 0), True, None, 4096, 100)
    hits, misses = stream_resp.stats()
    first = s.range_resp((0, 0), MAX_ID, 0)
    after_first = stream_resp.stats()
    assert after_first[1] - misses == 9  # ten nodes, the last one never cached
    second = s.range_resp((0, 0), MAX_ID, 0)
    assert stream_resp.stats()[0] - after_first[0] == 9
    assert b"".join(first[0]) == b"".join(second[0])  # type: ignore[index]
    used = stream_resp.used_bytes()
    assert used > 0
    s.delete((5, 0))  # the first node changes: its cached RESP is stale
    parts, n = s.range_resp((1, 0), (10, 0))  # type: ignore[misc]
    assert n == 9 and b"$1\r\n5\r\n" not in b"".join(parts)
    stream_resp.set_max_bytes(0)
    assert stream_resp.used_bytes() == 0 and s.range_resp((0, 0), MAX_ID) is None


def test_freed_nodes_leave_the_cache() -> None:
    stream_resp.set_max_bytes(64 << 20)
    stream_resp.clear()
    s = Stream()
    for i in range(1, 501):
        s.append([b"n", b"%d" % i], (i, 0), True, None, 4096, 100)
    s.range_resp((0, 0), MAX_ID)
    assert stream_resp.used_bytes() > 0
    s.trim("maxlen", 0)
    del s
    assert stream_resp.used_bytes() == 0
