"""The latency histogram's numbers against what redis-server 7.0 printed for the same
durations (LATENCY HISTOGRAM and INFO latencystats, observed on Debian's package)."""

from __future__ import annotations

import pytest

from server.latency_histogram import (
    cumulative_distribution,
    format_percentile,
    highest_equivalent,
    lowest_equivalent,
    percentiles_line,
    recorded_ns,
    value_at_percentile,
)


@pytest.mark.parametrize(("ns", "low", "high"), [
    (1, 1, 1), (255, 255, 255), (256, 256, 257), (1000, 1000, 1003), (1024, 1024, 1031),
    (13000, 12992, 13055), (32768, 32768, 33023), (72000, 71680, 72191),
    (1_000_000_000, 998244352, 1002438655),
])
def test_bucket_bounds(ns: int, low: int, high: int) -> None:
    assert lowest_equivalent(ns) == low
    assert highest_equivalent(ns) == high
    assert low <= ns <= high


def test_recorded_values_are_clamped_to_the_histogram_range() -> None:
    assert recorded_ns(0) == 1  # a command under a microsecond
    assert recorded_ns(13) == 13000
    assert recorded_ns(5_000_000) == 1_000_000_000  # over a second


@pytest.mark.parametrize(("us", "expected"), [
    (1, [(1, 1)]), (0, [(1, 1)]), (8, [(8, 1)]), (13, [(16, 1)]), (17, [(33, 1)]),
    (21, [(33, 1)]), (72, [(132, 1)]), (1204, [(2113, 1)]), (2_000_000, [(1073741, 1)]),
])
def test_one_call_lands_where_redis_shows_it(us: int, expected: list[tuple[int, int]]) -> None:
    assert cumulative_distribution({us: 1}) == expected


def test_distribution_is_cumulative_and_skips_empty_levels() -> None:
    # CONFIG SET on redis 7.0: 2 calls at ~8 us, 1 at ~15, 4 at ~20-30 us.
    counts = {7: 1, 8: 1, 15: 1, 20: 2, 30: 2}
    assert cumulative_distribution(counts) == [(8, 2), (16, 3), (33, 7)]
    assert cumulative_distribution({}) == []
    assert cumulative_distribution({5: 0}) == []


def test_percentiles_use_bucket_bounds() -> None:
    assert value_at_percentile({13: 1}, 50) == 13055
    assert value_at_percentile({72: 1}, 0) == 71680  # p0: the lowest value of its bucket
    counts = {72: 1, 80: 1, 81: 1, 245: 1}
    assert value_at_percentile(counts, 50.5) == highest_equivalent(80000)  # 2.02 + .5 -> 2nd
    assert value_at_percentile(counts, 75) == highest_equivalent(81000)
    assert value_at_percentile(counts, 100) == highest_equivalent(245000)
    assert value_at_percentile(counts, 150) == highest_equivalent(245000)
    assert value_at_percentile({}, 50) == 0


def test_info_line_format() -> None:
    assert percentiles_line({13: 1}, [50.0, 99.0, 99.9]) == "p50=13.055,p99=13.055,p99.9=13.055"
    assert percentiles_line({1: 1}, [0.0, 100.0]) == "p0=1.000,p100=1.003"
    assert percentiles_line({1: 1}, []) == ""


@pytest.mark.parametrize(("value", "text"), [
    (50.0, "50"), (99.9, "99.9"), (99.99, "99.99"), (0.0, "0"), (-0.0, "-0"), (1e-7, "0"),
    (12.5, "12.5"),
])
def test_percentile_names(value: float, text: str) -> None:
    assert format_percentile(value) == text
