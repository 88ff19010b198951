"""Consumer groups in an AOF rewrite, as Redis's rewriteStreamObject writes them:

    XGROUP CREATE key group last-id ENTRIESREAD n
    XNACK key group FAIL IDS n id... RETRYCOUNT count FORCE      (the NACK zone, in its order)
    XCLAIM key group consumer 0 id TIME delivery-ms RETRYCOUNT count JUSTID FORCE   (each PEL entry)
    XGROUP CREATECONSUMER key group consumer                     (consumers with nothing pending)

The NACK zone (entries released by XNACK, without an owner) goes as Redis 8.8 writes it: runs
of consecutive entries with the same delivery count, at most 64 IDs an XNACK.

Redis loses pending entries whose stream entry was deleted (XCLAIM drops them on replay). We
keep them: rewrite.py re-adds such IDs with a placeholder body before the XCLAIMs and deletes
them again after (XDEL keeps PEL references), then XSETID restores the counters.
Consumers' seen-time and active-time become the replay time: commands cannot carry them
(an RDB base does, see aof-use-rdb-preamble).
"""

from __future__ import annotations

from collections.abc import Iterator

from storage.consumer_group import ConsumerGroup, groups
from storage.stream import Stream
from storage.stream_id import StreamID, format_counter, format_id, key_to_id


def pending_deleted_ids(s: Stream) -> list[StreamID]:
    """IDs pending in some group whose entry is no longer in the stream, ascending."""
    refs = s.cgroups_ref
    if not refs:
        return []
    return [eid for eid in (key_to_id(k) for k in refs) if s.get(eid) is None]


NACK_BATCH = 64  # IDs per XNACK of the NACK zone


def nack_zone_commands(key: bytes, group: ConsumerGroup) -> Iterator[list[bytes]]:
    """XNACK ... FORCE commands that rebuild the group's NACK zone in order."""
    batch: list[bytes] = []
    count = -1
    for eid, nack in group.iter_nacked():
        if batch and (nack.delivery_count != count or len(batch) == NACK_BATCH):
            yield _xnack(key, group.name, batch, count)
            batch = []
        count = nack.delivery_count
        batch.append(format_id(eid))
    if batch:
        yield _xnack(key, group.name, batch, count)


def _xnack(key: bytes, name: bytes, ids: list[bytes], count: int) -> list[bytes]:
    return [b"XNACK", key, name, b"FAIL", b"IDS", b"%d" % len(ids), *ids,
            b"RETRYCOUNT", b"%d" % count, b"FORCE"]


def group_commands(key: bytes, s: Stream) -> Iterator[list[bytes]]:
    for group in groups(s):
        name = group.name
        yield [b"XGROUP", b"CREATE", key, name, format_id(group.last_id), b"ENTRIESREAD",
               format_counter(group.entries_read)]
        yield from nack_zone_commands(key, group)
        for eid, nack in group.iter_pending():
            owner = nack.consumer
            if owner is None:
                continue
            yield [b"XCLAIM", key, name, owner.name, b"0", format_id(eid),
                   b"TIME", b"%d" % nack.delivery_time, b"RETRYCOUNT",
                   b"%d" % nack.delivery_count, b"JUSTID", b"FORCE"]
        for consumer in group.iter_consumers():
            if not len(consumer.pel):
                yield [b"XGROUP", b"CREATECONSUMER", key, name, consumer.name]
