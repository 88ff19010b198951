"""The latency monitor (Redis's latency.c): per event class, the worst latency of each second,
kept for the last 160 seconds that had one, and the worst of all time.

A sample is added when something took at least latency-monitor-threshold milliseconds (0
turns the monitor off): a command ("command", or "fast-command" for one flagged fast), the
active expire cycle ("expire-cycle"), a fork for BGSAVE or BGREWRITEAOF ("fork"), an AOF
write ("aof-write", and one of "aof-write-pending-fsync", "aof-write-active-child",
"aof-write-alone") and an fsync with appendfsync always ("aof-fsync-always").
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from server.config import Config

TS_LEN = 160  # LATENCY_TS_LEN: samples per event
GRAPH_COLUMNS = 80
GRAPH_ROWS = 4
# Sparkline characters from the bottom row up, in fill mode ('|' below the top character).
_FILL_CHARS = "_o#"


class TimeSeries:
    """One event's samples: a ring of (unix time, latency ms), zero time for an empty slot."""

    __slots__ = ("samples", "idx", "max")

    def __init__(self) -> None:
        self.samples: list[tuple[int, int]] = [(0, 0)] * TS_LEN
        self.idx = 0
        self.max = 0

    def add(self, now: int, latency_ms: int) -> None:
        if latency_ms > self.max:
            self.max = latency_ms
        prev = (self.idx + TS_LEN - 1) % TS_LEN
        prev_time, prev_latency = self.samples[prev]
        if prev_time == now:  # one sample per second: its worst latency
            if latency_ms > prev_latency:
                self.samples[prev] = (now, latency_ms)
            return
        self.samples[self.idx] = (now, latency_ms)
        self.idx = (self.idx + 1) % TS_LEN

    def in_order(self) -> list[tuple[int, int]]:
        """The samples, oldest first."""
        ring = self.samples[self.idx:] + self.samples[:self.idx]
        return [sample for sample in ring if sample[0]]

    def latest(self) -> tuple[int, int]:
        return self.samples[(self.idx + TS_LEN - 1) % TS_LEN]


class LatencyMonitor:
    def __init__(self, config: Config) -> None:
        self.events: dict[str, TimeSeries] = {}
        self.threshold_ms = config["latency-monitor-threshold"]
        config.on_change("latency-monitor-threshold", self._set_threshold)

    def _set_threshold(self, value: int) -> None:
        self.threshold_ms = value

    def add_if_needed(self, event: str, latency_ms: int) -> None:
        """latencyAddSampleIfNeeded: a sample only when the monitor is on and it is slow enough."""
        if self.threshold_ms and latency_ms >= self.threshold_ms:
            self.add(event, latency_ms)

    def add(self, event: str, latency_ms: int) -> None:
        series = self.events.get(event)
        if series is None:
            series = self.events[event] = TimeSeries()
        series.add(int(time.time()), latency_ms)

    def reset(self, event: str | None = None) -> int:
        """Forget one event class (any case) or all of them; how many were forgotten."""
        if event is None:
            count = len(self.events)
            self.events.clear()
            return count
        names = [name for name in self.events if name.lower() == event.lower()]
        for name in names:
            del self.events[name]
        return len(names)


def graph(event: str, series: TimeSeries, now: int) -> str:
    """LATENCY GRAPH: a header, a rule, and an ASCII sparkline of the samples (4 rows, 80
    columns a block), each labelled with how long ago it was taken."""
    samples = series.in_order()
    values = [latency for _, latency in samples]
    labels = [_age_label(now - when) for when, _ in samples]
    high = max(values, default=0)
    low = min(values, default=0)
    out = [f"{event} - high {high} ms, low {low} ms (all time high {series.max} ms)\n",
           "-" * GRAPH_COLUMNS + "\n"]
    for start in range(0, len(values), GRAPH_COLUMNS):
        if start:
            out.append("\n")
        out.append(_sparkline(values, labels, start, min(GRAPH_COLUMNS, len(values) - start),
                              low, high))
    return "".join(out)


def _age_label(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def _sparkline(values: list[int], labels: list[str], offset: int, length: int, low: int,
               high: int) -> str:
    """sparklineRenderRange in fill mode: GRAPH_ROWS rows of bars, a blank row, then the labels
    written downwards, one character a row."""
    span = float(high - low) or 1.0
    steps = len(_FILL_CHARS) * GRAPH_ROWS
    chunk = range(offset, offset + length)
    rows: list[str] = []
    for row in range(GRAPH_ROWS):
        chars = []
        for j in chunk:
            step = int(int((values[j] - low) * steps) / span)
            step = min(max(step, 0), steps - 1)
            index = step - (GRAPH_ROWS - row - 1) * len(_FILL_CHARS)
            if 0 <= index < len(_FILL_CHARS):
                chars.append(_FILL_CHARS[index])
            elif index >= len(_FILL_CHARS):
                chars.append("|")
            else:
                chars.append(" ")
        rows.append("".join(chars))
    rows.append(" " * length)  # the margin above the labels
    longest = max((len(labels[j]) for j in chunk), default=0)
    for position in range(longest):
        rows.append("".join(labels[j][position] if position < len(labels[j]) else " "
                            for j in chunk))
    return "".join(row + "\n" for row in rows)
