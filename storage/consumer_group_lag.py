"""Consumer-group read counters and lag, as t_stream.c computes them (Redis 8.4).

A group's ``entries_read`` is the logical read counter of its last delivered ID:
how many entries were added to the stream up to and including that ID.  It is
exact only while the stream has no tombstones in the way; otherwise it is
estimated from the stream's counters (streamEstimateDistanceFromFirstEverEntry)
or unknown (-1, shown as nil).  The lag is ``entries_added - entries_read``.

The rules include the later fixes to Redis 7.x's first version: a tombstone
after the group's last ID invalidates the counter (redis#13338), a group behind
the first entry of a trimmed stream lags by the stream's length (redis#13473),
and a counter is only incremented while the group is not behind the first
entry (redis#13958).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from storage.stream_id import MAX_ID, MIN_ID, StreamID

if TYPE_CHECKING:
    from storage.consumer_group import ConsumerGroup
    from storage.stream import Stream

__all__ = [
    "INVALID_ENTRIES_READ",
    "advance_read_counter",
    "advance_read_counter_many",
    "estimate_distance",
    "group_lag",
    "range_has_tombstones",
]

INVALID_ENTRIES_READ = -1  # SCG_INVALID_ENTRIES_READ


def range_has_tombstones(
    s: Stream, start: StreamID | None = None, end: StreamID | None = None
) -> bool:
    """streamRangeHasTombstones: may [start, end] hold a deleted entry?  Only the
    largest deleted ID is known, so this is "start <= max_deleted <= end"."""
    if not s.length or s.max_deleted_entry_id == MIN_ID:
        return False  # empty, or nothing was ever deleted
    start_id = MIN_ID if start is None else start
    end_id = MAX_ID if end is None else end
    return start_id <= s.max_deleted_entry_id <= end_id


def estimate_distance(s: Stream, id: StreamID) -> int:
    """streamEstimateDistanceFromFirstEverEntry: the logical read counter of
    ``id`` (entries added up to it), or INVALID_ENTRIES_READ when unknowable."""
    added = s.entries_added
    if not added:
        return 0  # a stream that never had an entry
    if not s.length and id <= s.last_id:
        return added  # empty stream: everything up to last_id is behind us
    if id != MIN_ID and id < s.max_deleted_entry_id:
        return INVALID_ENTRIES_READ  # a tombstone lies after the ID
    if id == s.last_id:
        return added
    if id > s.last_id:
        return INVALID_ENTRIES_READ  # a future ID
    max_del = s.max_deleted_entry_id
    if max_del == MIN_ID or max_del < s.first_id:
        # No fragmentation inside the live part of the stream.
        if id < s.first_id:
            return added - s.length
        if id == s.first_id:
            return added - s.length + 1
    return INVALID_ENTRIES_READ


def advance_read_counter(s: Stream, group: ConsumerGroup, id: StreamID) -> None:
    """A group delivers ``id`` (greater than its last ID): move last_id and keep
    entries_read exact when possible (the per-entry step of streamReplyWithRange)."""
    if (
        group.entries_read != INVALID_ENTRIES_READ
        and group.last_id >= s.first_id
        and not range_has_tombstones(s, group.last_id, None)
    ):
        group.entries_read += 1
    elif s.entries_added:
        group.entries_read = estimate_distance(s, id)
    group.last_id = id


def advance_read_counter_many(s: Stream, group: ConsumerGroup, ids: list[StreamID]) -> None:
    """advance_read_counter for each of ``ids`` (ascending, all after the group's last
    ID).  Once a step counts exactly (+1), so do all the later ones: the group's last ID
    only grows, so it stays past the first entry and past every tombstone."""
    n = len(ids)
    for i in range(n):
        if (
            group.entries_read != INVALID_ENTRIES_READ
            and group.last_id >= s.first_id
            and not range_has_tombstones(s, group.last_id, None)
        ):
            group.entries_read += n - i
            group.last_id = ids[-1]
            return
        advance_read_counter(s, group, ids[i])


def group_lag(s: Stream, group: ConsumerGroup) -> int | None:
    """streamCGLag: entries in the stream the group has yet to read, or None."""
    if not s.entries_added or not s.length:
        return 0
    if group.last_id < s.first_id and s.max_deleted_entry_id < s.first_id:
        # The group and every tombstone are behind the first entry: all that is
        # left is unread.
        return s.length
    if group.entries_read != INVALID_ENTRIES_READ and not range_has_tombstones(
        s, group.last_id, None
    ):
        return s.entries_added - group.entries_read
    read = estimate_distance(s, group.last_id)
    if read == INVALID_ENTRIES_READ:
        return None
    return s.entries_added - read
