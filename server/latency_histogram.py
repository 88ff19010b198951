"""Per-command latency histograms (latency-tracking): what LATENCY HISTOGRAM and INFO
latencystats report, with Redis's numbers.

Redis records each command's duration, in whole microseconds times 1000, into an HDR histogram
(hdr_histogram.c: values 1 ns to 1 s, 2 significant digits), and reports values as the bucket
bounds that histogram keeps. The hot path here only counts the microseconds
(`spec.latency[us] += 1`, a defaultdict); this module applies the same bucketing when a report
is asked for, so the output is the one Redis gives for the same durations.

The bucket layout for those parameters: values below 256 ns have 1 ns buckets; from there on,
each power of two [2^k, 2^(k+1)) is cut into 128 equal buckets of 2^(k-7) ns.
"""

from __future__ import annotations

from collections.abc import Iterable

MIN_NS = 1  # LATENCY_HISTOGRAM_MIN_VALUE
MAX_NS = 1_000_000_000  # LATENCY_HISTOGRAM_MAX_VALUE
_SUB_BUCKET_BITS = 8  # 256 sub-buckets: 2 significant digits (2 * 10^2 <= 2^8)
# The first bucket of the histogram's last power of two: 1 s needs buckets up to 2^30 - 1,
# so a reporting level of 2^30 or more stops at the last bucket.
_LAST_BUCKET_NS = 255 << 22
# LATENCY HISTOGRAM reports at 1024 ns, then every power of two up (hdr_iter_log_init(1024, 2)).
_FIRST_LEVEL_NS = 1024


def _bucket_width(ns: int) -> int:
    """The width of the bucket holding ns (1 below 256 ns)."""
    shift = ns.bit_length() - _SUB_BUCKET_BITS
    return 1 << shift if shift > 0 else 1


def lowest_equivalent(ns: int) -> int:
    width = _bucket_width(ns)
    return ns - ns % width


def highest_equivalent(ns: int) -> int:
    width = _bucket_width(ns)
    return ns - ns % width + width - 1


def recorded_ns(us: int) -> int:
    """The value Redis records for a duration of `us` microseconds (clamped to the range)."""
    ns = us * 1000
    return MIN_NS if ns < MIN_NS else MAX_NS if ns > MAX_NS else ns


def _buckets(counts: dict[int, int]) -> list[tuple[int, int]]:
    """(lowest value of a bucket, count) in value order, from microseconds -> count."""
    merged: dict[int, int] = {}
    for us, n in counts.items():
        if n:
            low = lowest_equivalent(recorded_ns(us))
            merged[low] = merged.get(low, 0) + n
    return sorted(merged.items())


def value_at_percentile(counts: dict[int, int], percentile: float) -> int:
    """hdr_value_at_percentile, in ns: the highest value of the bucket where the cumulative
    count reaches the percentile's share (at least one), the lowest value for percentile 0."""
    buckets = _buckets(counts)
    total = sum(n for _, n in buckets)
    if not total:
        return 0
    wanted = int(min(percentile, 100.0) / 100 * total + 0.5)
    wanted = max(wanted, 1)
    seen = 0
    for low, n in buckets:
        seen += n
        if seen >= wanted:
            return low if percentile == 0.0 else highest_equivalent(low)
    return highest_equivalent(buckets[-1][0])


def cumulative_distribution(counts: dict[int, int]) -> list[tuple[int, int]]:
    """LATENCY HISTOGRAM's histogram_usec: (microseconds, cumulative calls) at each power-of-two
    level from 1024 ns where the count grew. A level counts the values whose bucket is not
    above the level's bucket, and is shown as its bucket's highest value in whole
    microseconds (so 32768 ns shows as 33)."""
    out: list[tuple[int, int]] = []
    buckets = _buckets(counts)
    if not buckets:
        return out
    level = _FIRST_LEVEL_NS
    seen = 0
    i = 0
    while i < len(buckets):
        top = min(level, _LAST_BUCKET_NS)
        before = seen
        while i < len(buckets) and buckets[i][0] <= top:
            seen += buckets[i][1]
            i += 1
        if seen > before:
            out.append((highest_equivalent(top) // 1000, seen))
        if level >= _LAST_BUCKET_NS:
            break
        level *= 2
    return out


def format_percentile(value: float) -> str:
    """A percentile as Redis prints it: '%f' with the trailing zeros (and point) removed."""
    text = f"{value:f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def percentiles_line(counts: dict[int, int], percentiles: Iterable[float]) -> str:
    """INFO latencystats' value: p50=1.003,p99=...,p99.9=... (microseconds, 3 decimals)."""
    return ",".join(f"p{format_percentile(p)}={value_at_percentile(counts, p) / 1000.0:.3f}"
                    for p in percentiles)
