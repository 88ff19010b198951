"""Claiming pending entries of a consumer group: XCLAIM (``claim``), XAUTOCLAIM
(``autoclaim``) and XREADGROUP CLAIM (``claim_idle``, ``oldest_delivery_time``). Entries of
the NACK zone (XNACK) have no owner: every claim takes them whatever its minimum idle time,
and XREADGROUP CLAIM takes them first.

Plain functions taking the group first; ConsumerGroup keeps methods of the same names
that delegate here.  Every PEL change goes through the group's primitives
(``_insert_nack``, ``_append_nack``, ``_remove_key``, ``_set_time``, ``_assign``) so its
four trees keep agreeing.  No clock is read here: every time is a ``now`` argument in Unix
milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

# The module, not its names: storage.consumer_group imports this module in turn.
from storage.consumer_group_pel import NACK, PEL_TIME, next_delivery_count
from storage.stream_id import StreamID, id_to_key, key_to_id

if TYPE_CHECKING:
    from storage.consumer_group import Consumer, ConsumerGroup
    from storage.stream import Stream

__all__ = ["autoclaim", "claim", "claim_idle", "oldest_delivery_time"]


def claim(
    group: ConsumerGroup,
    s: Stream,
    id: StreamID,
    consumer: Consumer,
    now: int,
    min_idle: int = 0,
    delivery_time: int | None = None,
    retry_count: int = -1,
    force: bool = False,
    justid: bool = False,
) -> tuple[str, NACK | None, list[bytes] | None]:
    """One ID of XCLAIM.  Returns ``(status, nack, fields)`` where status is

    * ``"claimed"``: now owned by ``consumer`` (fields None with ``justid``);
    * ``"deleted"``: the entry is gone from the stream, so its pending entry
      was dropped (nack is the removed NACK, still naming its old owner);
    * ``"skipped"``: not pending (and no FORCE), or not idle long enough.

    ``delivery_time`` None means now; ``retry_count`` -1 means increment the
    delivery count unless ``justid``."""
    key = id_to_key(id)
    # JUSTID replies with the ID alone: whether the entry is live is all it needs, so its
    # fields are not decoded (the form every propagated XCLAIM has, replayed from the AOF).
    fields: list[bytes] | None = None
    if justid:
        live = s.contains(id)
    else:
        fields = s.get(id)
        live = fields is not None
    if live and force:
        # FORCE of an ID above every pending one (an AOF's XCLAIMs replayed in order): a
        # new pending entry, put in the trees once with its final time, count and owner
        # (a delivery of one, then one more unless JUSTID or RETRYCOUNT).
        count = retry_count if retry_count >= 0 else 1 if justid else next_delivery_count(1)
        new = NACK(now if delivery_time is None else delivery_time, count, consumer)
        if group._append_nack(s, key, new):
            consumer.active_time = now
            return "claimed", new, fields
    nack: NACK | None = group.pel.find(key)  # type: ignore[assignment]
    if not live:
        if nack is not None:
            group._remove_key(s, key)
            return "deleted", nack, None
        return "skipped", None, None
    if nack is None:
        if not force:
            return "skipped", None, None
        nack = NACK(now, 1, None)  # FORCE: a new pending entry, owner set below
        group._insert_nack(s, key, nack)
    elif nack.consumer is not None and min_idle and now - nack.delivery_time < min_idle:
        return "skipped", None, None
    group._set_time(nack, key, now if delivery_time is None else delivery_time)
    if retry_count >= 0:
        nack.delivery_count = retry_count
    elif not justid:
        nack.delivery_count = next_delivery_count(nack.delivery_count)
    group._assign(nack, key, consumer)
    consumer.active_time = now
    return "claimed", nack, fields


def autoclaim(
    group: ConsumerGroup,
    s: Stream,
    consumer: Consumer,
    now: int,
    min_idle: int,
    start: StreamID,
    count: int,
    justid: bool = False,
) -> tuple[
    StreamID,
    list[tuple[StreamID, NACK, list[bytes] | None]],
    list[tuple[StreamID, NACK]],
]:
    """XAUTOCLAIM: scan the PEL from ``start`` (at most ``count * 10`` entries)
    and claim up to ``count`` entries idle for ``min_idle`` ms or more.

    Returns ``(cursor, claimed, deleted)``: the ID to continue from (0-0 when
    the scan reached the end), ``(id, nack, fields)`` claimed (fields None with
    ``justid``), and ``(id, removed_nack)`` for pending entries whose stream
    entry is gone, which are dropped and count against ``count``."""
    claimed: list[tuple[StreamID, NACK, list[bytes] | None]] = []
    deleted: list[tuple[StreamID, NACK]] = []
    attempts = count * 10
    it = group.pel.iterator()
    it.seek(">=", id_to_key(start))
    exhausted = False
    while attempts and count:
        attempts -= 1
        if not it.next():
            exhausted = True
            break
        key = it.key
        nack: NACK = it.value  # type: ignore[assignment]
        id = key_to_id(key)
        fields = s.get(id)
        if fields is None:
            group._remove_key(s, key)
            deleted.append((id, nack))
            count -= 1
            it.seek(">", key)  # the PEL changed: resume after the removed key
            continue
        if min_idle and nack.consumer is not None and now - nack.delivery_time < min_idle:
            continue
        group._set_time(nack, key, now)
        if not justid:
            nack.delivery_count = next_delivery_count(nack.delivery_count)
        group._assign(nack, key, consumer)
        claimed.append((id, nack, None if justid else fields))
        count -= 1
        consumer.active_time = now
    cursor = (0, 0)
    if not exhausted and it.next():
        cursor = key_to_id(it.key)
    return cursor, claimed, deleted


def oldest_delivery_time(group: ConsumerGroup, s: Stream | None = None) -> int | None:
    """Delivery time of the longest-idle pending entry, None if none. With ``s``, of the
    longest-idle one still in the stream: what XREADGROUP CLAIM could take (it passes over
    entries deleted or trimmed away, which stay pending)."""
    nacked = group.nacked  # the NACK zone: delivery time 0
    if nacked and (s is None or any(s.get(key_to_id(key)) is not None for key in nacked)):
        return 0
    if s is None:
        first = group.pel_by_time.first()
        return None if first is None else PEL_TIME.unpack_from(first[0])[0]
    for tkey in group.pel_by_time:
        if s.get(key_to_id(tkey[8:])) is not None:
            return PEL_TIME.unpack_from(tkey)[0]
    return None


def claim_idle(
    group: ConsumerGroup, s: Stream, consumer: Consumer, now: int, min_idle: int, limit: int = 0,
    accept: Callable[[list[bytes] | None], bool] | None = None,
) -> list[tuple[StreamID, list[bytes], int, int, NACK]]:
    """XREADGROUP CLAIM: take the pending entries idle for ``min_idle`` ms or
    more, longest idle first (at most ``limit``, 0 = all).  Each becomes the
    consumer's, delivered now, one more delivery.  Entries gone from the
    stream are passed over and left pending.  Returns ``(id, fields, idle,
    deliveries before this one, nack)``. ``accept``, if given, may stop the walk before an
    entry (MAXSIZE)."""
    found: list[tuple[bytes, list[bytes], int, NACK]] = []
    stopped = False
    # The NACK zone first (released entries, delivery time 0), in release order.
    for key, nack in group.nacked.items():
        if limit and len(found) >= limit:
            break
        fields = s.get(key_to_id(key))
        if fields is not None:
            if accept is not None and not accept(fields):
                stopped = True
                break
            found.append((key, fields, now, nack))
    pel = group.pel
    unpack_time = PEL_TIME.unpack_from
    for tkey in group.pel_by_time if not stopped and (not limit or len(found) < limit) else ():
        idle = now - unpack_time(tkey)[0]
        if idle < min_idle:
            break
        key = tkey[8:]
        fields = s.get(key_to_id(key))
        if fields is None:
            continue
        if accept is not None and not accept(fields):
            break
        found.append((key, fields, idle, pel.find(key)))  # type: ignore[arg-type]
        if limit and len(found) >= limit:
            break
    out: list[tuple[StreamID, list[bytes], int, int, NACK]] = []
    for key, fields, idle, nack in found:  # edit the trees once the walk is over
        before = nack.delivery_count
        group._set_time(nack, key, now)
        nack.delivery_count = next_delivery_count(before)
        group._assign(nack, key, consumer)
        out.append((key_to_id(key), fields, max(idle, 0), before, nack))
    if out:
        consumer.active_time = now
    return out
