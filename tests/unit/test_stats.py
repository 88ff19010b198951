"""server.stats: the counters behind INFO stats that are more than an increment."""

from __future__ import annotations

import pytest

from server.stats import Stats


def test_expired_stale_perc_moves_five_percent_toward_what_each_cycle_found() -> None:
    stats = Stats()
    stats.note_expire_cycle(1500, sampled=20, expired=20, stopped_early=False)
    assert stats.expired_stale_perc == pytest.approx(0.05)
    stats.note_expire_cycle(500, sampled=40, expired=10, stopped_early=True)
    assert stats.expired_stale_perc == pytest.approx(0.25 * 0.05 + 0.05 * 0.95)
    stats.note_expire_cycle(0, sampled=0, expired=0, stopped_early=False)  # no TTLs: decays
    assert stats.expired_stale_perc == pytest.approx((0.25 * 0.05 + 0.05 * 0.95) * 0.95)
    assert stats.expire_cycle_usec == 2000
    assert stats.expire_cycles_stopped_early == 1
    stats.reset()
    assert (stats.expired_stale_perc, stats.expire_cycle_usec,
            stats.expire_cycles_stopped_early) == (0.0, 0, 0)


def test_time_above_maxmemory_adds_up_periods() -> None:
    stats = Stats()
    assert stats.over_maxmemory_ms(100.0) == (0, 0)
    stats.note_over_maxmemory(True, 100.0)
    stats.note_over_maxmemory(True, 100.5)  # still the same period
    assert stats.over_maxmemory_ms(100.75) == (750, 750)
    stats.note_over_maxmemory(False, 101.0)
    assert stats.over_maxmemory_ms(105.0) == (1000, 0)
    stats.note_over_maxmemory(True, 110.0)
    assert stats.over_maxmemory_ms(110.25) == (1250, 250)
    stats.reset()
    assert stats.over_maxmemory_ms(111.0) == (0, 0)


def test_reads_are_counted_from_their_sizes() -> None:
    """A read appends its size (an EOF read 0); the totals count them when read, and
    CONFIG RESETSTAT forgets them too."""
    stats = Stats()
    stats.read_sizes.extend((10, 0, 5))
    assert stats.reads_processed == 3 and stats.net_input_bytes == 15
    assert stats.read_sizes == []
    stats.read_sizes.append(7)
    stats.fold_reads()
    assert (stats.reads_processed, stats.net_input_bytes) == (4, 22)
    stats.read_sizes.append(1)
    stats.reset()
    assert (stats.reads_processed, stats.net_input_bytes) == (0, 0)
