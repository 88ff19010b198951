"""When a key was last used, or how often: the 24 bits Redis keeps in every object's `lru`
field (evict.c), for OBJECT IDLETIME / FREQ and for the LRU / LFU eviction policies.

Every stored value (Stream, StringValue) carries an int `lru` read and written only here and in
storage.keyspace. What it holds depends on the policy, as in Redis:

* LRU (every policy but the two *-lfu ones): the LRU clock when the key was last looked up,
  in seconds modulo 2**24 (about 194 days; the idle time wraps as Redis's does).
* LFU: `minutes << 8 | counter`. The counter (0-255, 5 for a new key) is a logarithmic access
  count: each access raises it with probability 1 / ((counter - 5) * lfu-log-factor + 1), and it
  falls by one for every lfu-decay-time minutes without access (minutes modulo 2**16).

Switching policies at run time leaves the old values in place, which then read as nonsense
until keys are used again (Redis says so in its error texts).
"""

from __future__ import annotations

import random
import time
from typing import Any

LRU_CLOCK_MAX = (1 << 24) - 1
LRU_CLOCK_RESOLUTION_MS = 1000
LFU_INIT_VAL = 5
_MINUTES_MAX = (1 << 16) - 1


class AccessClock:
    """The server's clocks for the `lru` field and the policy that decides what it means.

    lru_clock and minutes are cached as Redis caches server.lruclock: Server.cron calls
    tick() (at hz 10 a second's resolution needs nothing finer)."""

    __slots__ = ("lfu", "lru_policy", "lru_clock", "minutes", "log_factor", "decay_time",
                 "touching", "_random")

    def __init__(self, now_ms: int | None = None) -> None:
        self.lfu = False  # maxmemory-policy is volatile-lfu or allkeys-lfu
        self.lru_policy = False  # ... or volatile-lru / allkeys-lru (snapshots keep idle times)
        self.log_factor = 10  # lfu-log-factor
        self.decay_time = 1  # lfu-decay-time, minutes (0: never decays)
        # False while a command from a CLIENT NO-TOUCH client runs (lookups leave keys alone).
        self.touching = True
        self._random = random.random
        self.lru_clock = 0
        self.minutes = 0
        self.tick(now_ms)

    def tick(self, now_ms: int | None = None) -> None:
        if now_ms is None:
            now_ms = time.time_ns() // 1_000_000
        self.lru_clock = (now_ms // LRU_CLOCK_RESOLUTION_MS) & LRU_CLOCK_MAX
        self.minutes = (now_ms // 60_000) & _MINUTES_MAX

    # -- a new value, an access ---------------------------------------------------------------
    def initial(self) -> int:
        """The `lru` of a value just created (createObject)."""
        return (self.minutes << 8) | LFU_INIT_VAL if self.lfu else self.lru_clock

    def touch(self, value: Any) -> None:
        """A lookup used the value (lookupKey's update), unless touching is off."""
        if not self.touching:
            return
        if self.lfu:
            counter = self.log_incremented(self.decayed_counter(value.lru))
            value.lru = (self.minutes << 8) | counter
        else:
            value.lru = self.lru_clock

    def log_incremented(self, counter: int) -> int:
        """LFULogIncr: one access, counted logarithmically."""
        if counter == 255:
            return 255
        base = max(counter - LFU_INIT_VAL, 0)
        if self._random() < 1.0 / (base * self.log_factor + 1):
            return counter + 1
        return counter

    # -- reading it back ----------------------------------------------------------------------
    def idle_ms(self, lru: int) -> int:
        """estimateObjectIdleTime: milliseconds since the last access (LRU meaning)."""
        clock = self.lru_clock
        if clock >= lru:
            return (clock - lru) * LRU_CLOCK_RESOLUTION_MS
        return (clock + (LRU_CLOCK_MAX - lru)) * LRU_CLOCK_RESOLUTION_MS

    def decayed_counter(self, lru: int) -> int:
        """LFUDecrAndReturn: the counter less one per decay period since the last access
        (what OBJECT FREQ answers; the value itself is not changed)."""
        last, counter = lru >> 8, lru & 255
        now = self.minutes
        elapsed = now - last if now >= last else _MINUTES_MAX - last + now
        periods = elapsed // self.decay_time if self.decay_time else 0
        return 0 if periods > counter else counter - periods

    # -- RESTORE ... IDLETIME / FREQ ------------------------------------------------------------
    def restored(self, idle_seconds: int, freq: int) -> int | None:
        """objectSetLRUOrLFU: the `lru` RESTORE gives a value for IDLETIME (>= 0, LRU) or
        FREQ (>= 0, LFU); None when the option given does not apply to the policy."""
        if self.lfu:
            return (self.minutes << 8) | freq if freq >= 0 else None
        if idle_seconds < 0:
            return None
        # Seconds in the past on the 24-bit clock, wrapped once below zero as Redis does
        # (then cut to the field's 24 bits).
        clock = self.lru_clock - idle_seconds * 1000 // LRU_CLOCK_RESOLUTION_MS
        if clock < 0:
            clock += LRU_CLOCK_MAX
        return clock & LRU_CLOCK_MAX
