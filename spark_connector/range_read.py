"""Executor-side reading of one ``(lo, hi]`` range, in chunks of ``readCount`` entries,
and the data-loss checks.

Redis keeps no record of which IDs trimming removed (``max-deleted-entry-id`` follows
XDEL only), so loss is detected from IDs the connector has seen and the stream's head:
an entry known to exist that is now gone *and* lies before the head was trimmed.
(One gone but after the head was removed by XDEL, which is deliberate, not loss.)

- plain mode, inside a range: the planner records the range's first entry, and every
  XRANGE asks for one entry more than it returns, so the reader always knows the next
  entry to expect. Each XRANGE runs in MULTI/EXEC with ``XRANGE key - + COUNT 1`` (the
  head), so both describe the same moment.
- plain mode, between micro-batches (driver side): see ``gap_loss``.
- group mode: the consumer's pending list still names entries that were deleted or
  trimmed; XREADGROUP returns them with no fields, which is exact.

Each chunk is one read on a ``connect.Link`` (the primary, retried across a failover, or a
replica that has the range), so a failure costs that chunk only, never rows twice.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import redis

from spark_connector import connect, ids, streams
from spark_connector.options import ReadOptions
from spark_connector.planning import Position, RangeSpec
from spark_connector.streams import RawEntry, StreamInfo

log = logging.getLogger("spark_connector")


class DataLossError(RuntimeError):
    """Entries were removed from a stream before the query read them."""


def trimmed(expected: str, head: str | None) -> bool:
    """Whether an expected entry that is missing now was trimmed (it is before the head,
    or the stream is empty)."""
    return head is None or ids.id_less(expected, head)


class LossReporter:
    """Fails, or warns once, according to ``failOnDataLoss``."""

    __slots__ = ("fail", "warned", "where")

    def __init__(self, where: str, fail: bool) -> None:
        self.where = where
        self.fail = fail
        self.warned = False

    def report(self, detail: str) -> None:
        message = (
            f"data loss on {self.where}: {detail}. "
            "Set failOnDataLoss=false to skip lost entries with a warning."
        )
        if self.fail:
            raise DataLossError(message)
        if not self.warned:
            self.warned = True
            log.warning("%s (continuing: failOnDataLoss=false)", message)


def _where(spec: RangeSpec) -> str:
    return f"stream {spec.stream!r} in ({spec.lo}, {spec.hi}]"


def _plain_chunk(client: redis.Redis, spec: RangeSpec, pos: str, count: int) -> list[Any]:
    """``[entries after pos (up to count), the stream's first entry]``, in one MULTI/EXEC."""
    pipe = client.pipeline(transaction=True)
    streams.xrange(pipe, spec.stream, pos, spec.hi, count)
    streams.head(pipe, spec.stream)
    return pipe.execute()


def read_plain(
    source: redis.Redis | connect.Link, spec: RangeSpec, opts: ReadOptions
) -> Iterator[list[RawEntry]]:
    """Yield chunks of raw entries of ``(spec.lo, spec.hi]`` read with XRANGE."""
    link = connect.as_link(source)
    reporter = LossReporter(_where(spec), opts.fail_on_data_loss)
    count = opts.read_count
    expect = spec.expect
    pos = spec.lo  # exclusive
    what = f"reading {_where(spec)}"
    while ids.id_less(pos, spec.hi):
        chunk, first = link.run(lambda c, p=pos: _plain_chunk(c, spec, p, count + 1), what)
        head = streams.entry_id(first[0]) if first else None
        got = streams.entry_id(chunk[0]) if chunk else None
        if expect is not None and got != expect and trimmed(expect, head):
            reporter.report(f"entry {expect} was trimmed before it was read (head now {head})")
        if len(chunk) <= count:
            if chunk:
                yield chunk
            return
        yield chunk[:count]
        expect = streams.entry_id(chunk[count])
        pos = ids.predecessor(expect)


def _pending_chunk(client: redis.Redis, spec: RangeSpec, pos: str, opts: ReadOptions) -> Any:
    """The consumer's pending entries after ``pos`` (XREADGROUP with an ID claims nothing)."""
    return client.execute_command(
        "XREADGROUP", "GROUP", opts.group, opts.consumer, "COUNT", opts.read_count,
        "STREAMS", spec.stream, pos,
    )


def read_group(
    source: redis.Redis | connect.Link, spec: RangeSpec, opts: ReadOptions
) -> Iterator[list[RawEntry]]:
    """Yield chunks of this consumer's pending entries in ``(spec.lo, spec.hi]``."""
    assert opts.group is not None and opts.consumer is not None
    link = connect.as_link(source)
    reporter = LossReporter(_where(spec), opts.fail_on_data_loss)
    hi = ids.parse_id(spec.hi)
    pos = spec.lo
    what = f"reading the pending entries of {_where(spec)}"
    while ids.id_less(pos, spec.hi):
        reply = link.run(lambda c, p=pos: _pending_chunk(c, spec, p, opts), what)
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


def read_range(
    source: redis.Redis | connect.Link, spec: RangeSpec, opts: ReadOptions
) -> Iterator[list[RawEntry]]:
    if opts.group:
        return read_group(source, spec, opts)
    return read_plain(source, spec, opts)


def gap_loss(seen: Position, info: StreamInfo | None) -> str | None:
    """Entries trimmed since ``seen`` was planned, as a message (None: no loss seen).

    Called when planning the batch that starts at ``seen.id``, with the stream as it is
    now. ``earliest`` starts just before the first entry that exists when the query
    begins, so entries trimmed before that never count.
    """
    start = seen.id
    head = info.first_id if info else None
    if seen.next_id is not None:
        if trimmed(seen.next_id, head):
            return f"entry {seen.next_id} was trimmed before it was read (head now {head})"
        return None
    if seen.entries_added is None or info is None or info.entries_added is None:
        return None
    if head is not None and not ids.id_less(start, head):
        return None  # the head is not past the position: nothing after it was trimmed
    # Every entry still present is after the position, so all entries added since then
    # should still be here; fewer means some were trimmed (or deleted) unread.
    missing = (info.entries_added - seen.entries_added) - info.length
    if missing > 0:
        return f"{missing} entries added after {start} were trimmed before they were read"
    return None
