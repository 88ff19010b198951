"""Executor-side reading of one ``(lo, hi]`` range, in chunks of ``readCount`` entries.

Data loss (entries removed before this query read them) is detected per chunk:

- plain mode: each XRANGE runs in MULTI/EXEC with XINFO STREAM, so the stream's
  ``max-deleted-entry-id`` (D) and first entry (F) describe the same moment as the chunk.
  Trimming removes a stream's head, leaving D < F. When D lies after the read position
  and before the head, entries after the position were trimmed unread. Entries removed
  with XDEL in the middle of a stream (D > F) are deliberate and are not reported.
- group mode: the consumer's pending list still names entries that were deleted or
  trimmed; XREADGROUP returns them with no fields, which is exact.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import redis

from spark_connector import ids, streams
from spark_connector.options import ReadOptions
from spark_connector.planning import RangeSpec
from spark_connector.streams import RawEntry, StreamInfo

log = logging.getLogger("spark_connector")


class DataLossError(RuntimeError):
    """Entries were removed from a stream before the query read them."""


def trimmed_past(pos: str, hi: str, open_end: bool, info: StreamInfo | None) -> str | None:
    """The max-deleted-entry-id when it shows entries after ``pos`` trimmed unread."""
    if info is None:
        return None
    deleted = ids.parse_id(info.max_deleted_id)
    if deleted <= ids.parse_id(pos):
        return None
    if info.first_id is not None and ids.parse_id(info.first_id) < deleted:
        return None  # a hole made by XDEL behind the head, not trimming
    if not open_end and deleted > ids.parse_id(hi):
        return None  # the trim reaches a later sub-range, which reports it
    return info.max_deleted_id


class LossReporter:
    """Fails or warns (once per range) according to ``failOnDataLoss``."""

    __slots__ = ("fail", "warned", "spec")

    def __init__(self, spec: RangeSpec, fail: bool) -> None:
        self.spec = spec
        self.fail = fail
        self.warned = False

    def report(self, detail: str) -> None:
        message = (
            f"data loss on stream {self.spec.stream!r} in ({self.spec.lo}, {self.spec.hi}]: "
            f"{detail}. Set failOnDataLoss=false to skip lost entries with a warning."
        )
        if self.fail:
            raise DataLossError(message)
        if not self.warned:
            self.warned = True
            log.warning("%s (continuing: failOnDataLoss=false)", message)


def read_plain(client: redis.Redis, spec: RangeSpec, opts: ReadOptions) -> Iterator[list[RawEntry]]:
    """Yield chunks of raw entries of ``(spec.lo, spec.hi]`` read with XRANGE."""
    reporter = LossReporter(spec, opts.fail_on_data_loss)
    pos = spec.lo
    while ids.id_less(pos, spec.hi):
        pipe = client.pipeline(transaction=True)
        streams.xrange(pipe, spec.stream, pos, spec.hi, opts.read_count)
        pipe.execute_command("XINFO", "STREAM", spec.stream)
        chunk, info_reply = pipe.execute(raise_on_error=False)
        if isinstance(chunk, Exception):
            raise chunk
        info = streams.parse_xinfo_stream(info_reply)
        trimmed = trimmed_past(pos, spec.hi, spec.open_end, info)
        if trimmed is not None:
            first = info.first_id if info else None
            reporter.report(
                f"entries after {pos} were trimmed (max deleted ID {trimmed}, "
                f"first entry now {first or 'none'})"
            )
        if not chunk:
            return
        yield chunk
        if len(chunk) < opts.read_count:
            return
        pos = streams.entry_id(chunk[-1])


def read_group(client: redis.Redis, spec: RangeSpec, opts: ReadOptions) -> Iterator[list[RawEntry]]:
    """Yield chunks of this consumer's pending entries in ``(spec.lo, spec.hi]``."""
    assert opts.group is not None and opts.consumer is not None
    reporter = LossReporter(spec, opts.fail_on_data_loss)
    hi = ids.parse_id(spec.hi)
    pos = spec.lo
    while ids.id_less(pos, spec.hi):
        reply = client.execute_command(
            "XREADGROUP", "GROUP", opts.group, opts.consumer, "COUNT", opts.read_count,
            "STREAMS", spec.stream, pos,
        )
        entries: list[RawEntry] = reply[0][1] if reply else []
        if not entries:
            return
        done = False
        kept: list[RawEntry] = []
        lost: list[str] = []
        for entry in entries:
            if ids.parse_id(entry[0]) > hi:
                done = True
                break
            if entry[1]:
                kept.append(entry)
            else:
                lost.append(streams.entry_id(entry))
        if lost:
            reporter.report(f"{len(lost)} pending entries no longer exist (first {lost[0]})")
        if kept:
            yield kept
        if done or len(entries) < opts.read_count:
            return
        pos = streams.entry_id(entries[-1])


def read_range(client: redis.Redis, spec: RangeSpec, opts: ReadOptions) -> Iterator[list[RawEntry]]:
    if opts.group:
        return read_group(client, spec, opts)
    return read_plain(client, spec, opts)
