"""Unit tests for storage.stream_id (expected values checked against redis-server 7.0)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.stream_id import (
    INVALID_END_MSG,
    INVALID_ID_MSG,
    INVALID_START_MSG,
    MAX_ID,
    MIN_ID,
    UINT64_MAX,
    InvalidStreamID,
    decr_id,
    format_id,
    id_to_key,
    incr_id,
    key_to_id,
    parse_id,
    parse_range_bound,
    parse_xadd_id,
)

u64 = st.integers(min_value=0, max_value=UINT64_MAX)
ids = st.tuples(u64, u64)


def test_constants() -> None:
    assert UINT64_MAX == 18446744073709551615
    assert MIN_ID == (0, 0)
    assert MAX_ID == (UINT64_MAX, UINT64_MAX)
    assert INVALID_ID_MSG == "ERR Invalid stream ID specified as stream command argument"


def test_key_layout() -> None:
    assert id_to_key((1, 2)) == b"\x00" * 7 + b"\x01" + b"\x00" * 7 + b"\x02"
    assert id_to_key(MAX_ID) == b"\xff" * 16
    assert key_to_id(b"\x00" * 16) == (0, 0)


@settings(max_examples=300, deadline=None)
@given(ids, ids)
def test_key_order_equals_id_order(a: tuple[int, int], b: tuple[int, int]) -> None:
    assert key_to_id(id_to_key(a)) == a
    assert (id_to_key(a) < id_to_key(b)) == (a < b)


@settings(max_examples=300, deadline=None)
@given(ids)
def test_format_parse_roundtrip(id: tuple[int, int]) -> None:
    text = format_id(id)
    assert text == f"{id[0]}-{id[1]}".encode()
    assert parse_id(text) == id
    assert parse_id(text, strict=True) == id


def test_parse_id_forms() -> None:
    assert parse_id(b"1526919030474-55") == (1526919030474, 55)
    assert parse_id(b"5") == (5, 0)
    assert parse_id(b"5", missing_seq=UINT64_MAX) == (5, UINT64_MAX)
    assert parse_id(b"-") == MIN_ID
    assert parse_id(b"+") == MAX_ID
    assert parse_id(b"18446744073709551615-18446744073709551615") == MAX_ID


@pytest.mark.parametrize(
    "arg",
    [
        b"",
        b"1-",
        b"-1",
        b"-0",
        b"abc",
        b"1-a",
        b"1-2-3",
        b"5 ",
        b"1.5",
        b"18446744073709551616",
        b"1-18446744073709551616",
        b"1--5",
        b"*",
        b"1-*",
        b"0x10",
        b"1" * 128,
    ],
)
def test_parse_id_invalid(arg: bytes) -> None:
    with pytest.raises(InvalidStreamID) as exc:
        parse_id(arg)
    assert str(exc.value) == INVALID_ID_MSG
    assert isinstance(exc.value, ValueError)


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        # string2ull falls back to strtoull, which real Redis accepts:
        (b"007", (7, 0)),
        (b"+5", (5, 0)),
        (b" 5", (5, 0)),
        (b"\t5-1", (5, 1)),
        (b"1-+3", (1, 3)),
        (b"1- 3", (1, 3)),
        (b"1--0", (1, 0)),
        (b"1- -5", (1, UINT64_MAX - 4)),  # strtoull negates in unsigned arithmetic
        (b"0" * 40 + b"1-1", (1, 1)),
        (b"5\x00junk", (5, 0)),  # the C code stops at the NUL
    ],
)
def test_parse_id_redis_quirks(arg: bytes, expected: tuple[int, int]) -> None:
    assert parse_id(arg) == expected


def test_parse_id_strict() -> None:
    for arg in (b"-", b"+"):
        with pytest.raises(InvalidStreamID):
            parse_id(arg, strict=True)
    assert parse_id(b"3", strict=True) == (3, 0)


def test_incr_decr() -> None:
    assert incr_id((1, 2)) == (1, 3)
    assert incr_id((1, UINT64_MAX)) == (2, 0)
    assert decr_id((1, 0)) == (0, UINT64_MAX)
    assert decr_id((1, 5)) == (1, 4)
    with pytest.raises(OverflowError):
        incr_id(MAX_ID)
    with pytest.raises(OverflowError):
        decr_id(MIN_ID)


def test_range_bounds_inclusive() -> None:
    assert parse_range_bound(b"-", True) == (MIN_ID, False)
    assert parse_range_bound(b"+", False) == (MAX_ID, False)
    assert parse_range_bound(b"5", True) == ((5, 0), False)
    assert parse_range_bound(b"5", False) == ((5, UINT64_MAX), False)


def test_range_bounds_exclusive() -> None:
    assert parse_range_bound(b"(5-5", True) == ((5, 6), True)
    assert parse_range_bound(b"(5-5", False) == ((5, 4), True)
    assert parse_range_bound(b"(5", True) == ((5, 1), True)
    assert parse_range_bound(b"(5", False) == ((5, UINT64_MAX - 1), True)
    assert parse_range_bound(b"(0", False) == ((0, UINT64_MAX - 1), True)
    assert parse_range_bound(b"(5-" + str(UINT64_MAX).encode(), True) == ((6, 0), True)
    assert parse_range_bound(b"(5-0", False) == ((4, UINT64_MAX), True)
    assert parse_range_bound(b"( 1", True) == ((1, 1), True)


@pytest.mark.parametrize(
    ("arg", "is_start", "msg"),
    [
        (b"(-", True, INVALID_ID_MSG),  # strict parse: "-" and "+" are not IDs here
        (b"(+", True, INVALID_ID_MSG),
        (b"(-", False, INVALID_ID_MSG),
        (b"(+", False, INVALID_ID_MSG),
        (b"(", True, INVALID_ID_MSG),
        (b"((1", True, INVALID_ID_MSG),
        (b"(18446744073709551615-18446744073709551615", True, INVALID_START_MSG),
        (b"(0-0", False, INVALID_END_MSG),
        (b"x", True, INVALID_ID_MSG),
    ],
)
def test_range_bounds_errors(arg: bytes, is_start: bool, msg: str) -> None:
    with pytest.raises(InvalidStreamID) as exc:
        parse_range_bound(arg, is_start)
    assert str(exc.value) == msg


def test_xadd_id_forms() -> None:
    assert parse_xadd_id(b"*") == (None, True)
    assert parse_xadd_id(b"5-*") == ((5, 0), False)
    assert parse_xadd_id(b"5-3") == ((5, 3), True)
    assert parse_xadd_id(b"5") == ((5, 0), True)
    assert parse_xadd_id(b"0-0") == ((0, 0), True)
    assert parse_xadd_id(b"+5-*") == ((5, 0), False)
    assert parse_xadd_id(b"*\x00x") == (None, True)


@pytest.mark.parametrize(
    "arg", [b"-", b"+", b"*-1", b"**", b"1-**", b"1-", b"", b"-1", b"18446744073709551616-*"]
)
def test_xadd_id_invalid(arg: bytes) -> None:
    with pytest.raises(InvalidStreamID) as exc:
        parse_xadd_id(arg)
    assert str(exc.value) == INVALID_ID_MSG


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=12))
def test_parsers_only_raise_invalid_stream_id(data: bytes) -> None:
    for fn in (
        lambda: parse_id(data),
        lambda: parse_id(data, strict=True),
        lambda: parse_range_bound(data, True),
        lambda: parse_range_bound(data, False),
        lambda: parse_xadd_id(data),
    ):
        try:
            result = fn()
        except InvalidStreamID:
            continue
        id = result[0] if isinstance(result[0], tuple) or result[0] is None else result
        if id is not None:
            assert 0 <= id[0] <= UINT64_MAX and 0 <= id[1] <= UINT64_MAX
