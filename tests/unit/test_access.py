"""storage.access: the `lru` field's two meanings (evict.c's arithmetic, wrap-arounds included)."""

from __future__ import annotations

from storage.access import LFU_INIT_VAL, LRU_CLOCK_MAX, AccessClock
from storage.keyspace import Database, StringValue

DAY_MS = 86_400_000


def test_lru_clock_is_seconds_modulo_2_to_the_24() -> None:
    clock = AccessClock(now_ms=(LRU_CLOCK_MAX + 1 + 42) * 1000 + 999)
    assert clock.lru_clock == 42
    assert clock.minutes == ((LRU_CLOCK_MAX + 1 + 42) * 1000 // 60_000) & 0xFFFF


def test_idle_time_wraps_with_the_clock() -> None:
    clock = AccessClock(now_ms=10_000)  # lru_clock 10
    assert clock.idle_ms(4) == 6000
    assert clock.idle_ms(LRU_CLOCK_MAX - 5) == (10 + 5) * 1000  # accessed before the wrap


def test_lfu_counter_decays_one_per_period() -> None:
    clock = AccessClock(now_ms=100 * 60_000)  # minute 100
    assert clock.decayed_counter((90 << 8) | 30) == 20
    clock.decay_time = 5
    assert clock.decayed_counter((90 << 8) | 30) == 28
    assert clock.decayed_counter((0 << 8) | 3) == 0  # (more periods than counts)
    clock.decay_time = 0
    assert clock.decayed_counter((0 << 8) | 3) == 3  # never decays
    clock.decay_time = 1
    assert clock.decayed_counter((0xFFFF << 8) | 30) == 0  # 100 minutes since, across the wrap
    assert clock.decayed_counter((0xFFF0 << 8) | 200) == 200 - (0xFFFF - 0xFFF0 + 100)


def test_lfu_log_increment_probability() -> None:
    clock = AccessClock()
    clock._random = lambda: 0.0  # type: ignore[assignment]
    assert clock.log_incremented(10) == 11
    assert clock.log_incremented(255) == 255
    clock._random = lambda: 0.5  # type: ignore[assignment]
    assert clock.log_incremented(LFU_INIT_VAL) == LFU_INIT_VAL + 1  # p = 1 below the base
    assert clock.log_incremented(LFU_INIT_VAL + 1) == LFU_INIT_VAL + 1  # p = 1/11


def test_touch_follows_the_policy_and_the_switch() -> None:
    clock = AccessClock(now_ms=1_000_000)
    value = StringValue(b"x")
    value.lru = 5
    clock.touch(value)
    assert value.lru == clock.lru_clock
    clock.touching = False
    value.lru = 5
    clock.touch(value)
    assert value.lru == 5
    clock.touching = True
    clock.lfu = True
    clock._random = lambda: 0.0  # type: ignore[assignment]
    value.lru = (clock.minutes << 8) | 7
    clock.touch(value)
    assert value.lru == (clock.minutes << 8) | 8


def test_restored_access_times() -> None:
    clock = AccessClock(now_ms=10_000)  # lru_clock 10
    assert clock.restored(4, -1) == 6
    assert clock.restored(12, -1) == LRU_CLOCK_MAX - 2  # wrapped once below zero
    assert clock.restored(-1, 100) is None  # FREQ means nothing to LRU
    clock.lfu = True
    assert clock.restored(-1, 100) == (clock.minutes << 8) | 100
    assert clock.restored(50, -1) is None


def test_database_stamps_new_values_and_touches_on_get_not_peek() -> None:
    clock = AccessClock(now_ms=DAY_MS)
    db = Database(0, access=clock)
    db.set(b"k", StringValue(b"v"))
    assert db.data[b"k"].lru == clock.lru_clock
    clock.tick(DAY_MS + 5000)
    assert db.peek(b"k").lru == clock.lru_clock - 5
    assert db.get(b"k").lru == clock.lru_clock
    assert b"k" in db and db.data[b"k"].lru == clock.lru_clock
