"""Counters behind INFO stats, and the instantaneous-ops sampler."""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING

from server.memory_report import rss_bytes

if TYPE_CHECKING:
    from server.latency import LatencyMonitor

_MAX_ERROR_CODES = 128


class Stats:
    __slots__ = (
        "total_connections_received", "rejected_connections",
        "rejected_calls", "expired_keys", "evicted_keys", "keyspace_hits", "keyspace_misses",
        "read_sizes", "_net_input_bytes", "net_output_bytes", "unexpected_error_replies",
        "total_error_replies",
        "client_query_buffer_limit_disconnections", "client_output_buffer_limit_disconnections",
        "_samples", "_last_sample", "start_time", "errors", "errorstats_disabled",
        "total_forks", "latest_fork_usec", "fork_rate_gb_s",
        "_reads_processed", "writes_processed", "auth_failures", "acl_denied",
        "expire_cycle_usec", "expired_stale_perc", "expire_cycles_stopped_early",
        "over_maxmemory_seconds", "over_maxmemory_since",
    )

    def __init__(self) -> None:
        self.reset()
        self.start_time = time.time()
        # The last fork (not reset by CONFIG RESETSTAT, as in Redis).
        self.latest_fork_usec = 0
        self.fork_rate_gb_s = 0.0  # memory copied per second of fork(), for LATENCY DOCTOR

    def fold_reads(self) -> None:
        sizes = self.read_sizes
        if sizes:
            self._reads_processed += len(sizes)
            self._net_input_bytes += sum(sizes)
            sizes.clear()

    @property
    def net_input_bytes(self) -> int:
        self.fold_reads()
        return self._net_input_bytes

    @property
    def reads_processed(self) -> int:
        """Socket reads (data_received calls, and the read that finds the connection closed)."""
        self.fold_reads()
        return self._reads_processed

    def note_fork(self, usec: int, latency: LatencyMonitor) -> None:
        """A child was forked (BGSAVE, BGREWRITEAOF) in `usec` microseconds."""
        self.total_forks += 1
        self.latest_fork_usec = usec
        self.fork_rate_gb_s = rss_bytes() * 1_000_000 / max(usec, 1) / 1024**3
        latency.add_if_needed("fork", usec // 1000)

    def reset(self) -> None:
        self.total_connections_received = 0
        self.rejected_connections = 0
        self.rejected_calls = 0
        self.expired_keys = 0
        self.evicted_keys = 0  # deleted by the maxmemory policy (server.eviction)
        self.keyspace_hits = 0
        self.keyspace_misses = 0
        # Each socket read appends its size (an EOF read 0): a list append allocates nothing,
        # where two counters would allocate two ints a read. fold_reads() counts them, at
        # every reading of the totals and once per event-loop pass (Server.write_clients).
        self.read_sizes: list[int] = []
        self._net_input_bytes = 0
        self._reads_processed = 0
        self.net_output_bytes = 0
        self.unexpected_error_replies = 0
        self.total_error_replies = 0
        self.client_query_buffer_limit_disconnections = 0
        self.client_output_buffer_limit_disconnections = 0
        self.total_forks = 0
        self.writes_processed = 0  # socket writes of replies
        self.auth_failures = 0  # AUTH / HELLO AUTH with a wrong user or password
        # Commands refused by ACL rules, by reason (server/acl/access.py).
        self.acl_denied = {"command": 0, "key": 0, "channel": 0}
        self.expire_cycle_usec = 0  # time spent in active-expire cycles
        # Redis's running estimate of the share of keys with a TTL that are already expired:
        # each cycle moves it 5% of the way to the share it found among the keys it sampled.
        self.expired_stale_perc = 0.0
        self.expire_cycles_stopped_early = 0
        # Time used_memory spent above maxmemory: closed periods, and the start (monotonic)
        # of the current one (None while under it).
        self.over_maxmemory_seconds = 0.0
        self.over_maxmemory_since: float | None = None
        # INFO errorstats: error code (the reply's first word) -> count
        self.errors: dict[str, int] = {}
        self.errorstats_disabled = False
        self._samples: dict[str, deque[float]] = {
            "ops": deque(maxlen=16), "in": deque(maxlen=16), "out": deque(maxlen=16)
        }
        self._last_sample = (time.monotonic(), 0, 0, 0)

    def note_expire_cycle(self, usec: int, sampled: int, expired: int,
                          stopped_early: bool) -> None:
        """An active-expire cycle over every database ran (activeExpireCycle's statistics)."""
        self.expire_cycle_usec += usec
        found = expired / sampled if sampled else 0.0
        self.expired_stale_perc = found * 0.05 + self.expired_stale_perc * 0.95
        if stopped_early:
            self.expire_cycles_stopped_early += 1

    def note_over_maxmemory(self, over: bool, now: float) -> None:
        """Whether used_memory is above maxmemory now (INFO's *_eviction_exceeded_time)."""
        if over:
            if self.over_maxmemory_since is None:
                self.over_maxmemory_since = now
        elif self.over_maxmemory_since is not None:
            self.over_maxmemory_seconds += now - self.over_maxmemory_since
            self.over_maxmemory_since = None

    def over_maxmemory_ms(self, now: float) -> tuple[int, int]:
        """(total, current) milliseconds above maxmemory, the current period included in
        the total, as INFO's total_ and current_eviction_exceeded_time."""
        current = 0.0 if self.over_maxmemory_since is None else now - self.over_maxmemory_since
        return int((self.over_maxmemory_seconds + current) * 1000), int(current * 1000)

    def error_reply(self, text: str) -> None:
        """Count an error reply by its code, as INFO errorstats does ("ERR", "WRONGTYPE"...)."""
        self.total_error_replies += 1
        if self.errorstats_disabled:
            return
        code = text.split(" ", 1)[0]
        if code in self.errors:
            self.errors[code] += 1
        elif len(self.errors) >= _MAX_ERROR_CODES:
            # Redis stops tracking (and forgets) when clients invent too many codes.
            self.errors.clear()
            self.errorstats_disabled = True
        else:
            self.errors[code] = 1

    def sample(self, commands_processed: int) -> None:
        """Called from the cron: rate since the last sample, averaged over 16 samples."""
        now = time.monotonic()
        t0, ops0, in0, out0 = self._last_sample
        elapsed = now - t0
        if elapsed <= 0:
            return
        self._samples["ops"].append((commands_processed - ops0) / elapsed)
        self._samples["in"].append((self.net_input_bytes - in0) / elapsed)
        self._samples["out"].append((self.net_output_bytes - out0) / elapsed)
        self._last_sample = (now, commands_processed, self.net_input_bytes,
                             self.net_output_bytes)

    def instantaneous(self, name: str) -> float:
        values = self._samples[name]
        return sum(values) / len(values) if values else 0.0
