"""Shared pieces of the consumer-group commands: the command clock, group lookups with
Redis's NOGROUP texts, and the propagation of effects for the AOF (t_stream.c's
streamPropagateXCLAIM, streamPropagateGroupID, streamPropagateConsumerCreation)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from server import notify
from server.commands.stream_args import read_stream
from server.errors import CommandError, client_text
from storage.consumer_group import NACK, Consumer, ConsumerGroup, lookup_group
from storage.stream import Stream
from storage.stream_id import StreamID, format_counter, format_id

if TYPE_CHECKING:
    from server.client import Client


def now_ms() -> int:
    """commandTimeSnapshot: the wall clock in milliseconds."""
    return time.time_ns() // 1_000_000



def nogroup_key_or_group(key: bytes, group: bytes, suffix: str = "") -> CommandError:
    """"NOGROUP No such key 'k' or consumer group 'g'" (XPENDING, XCLAIM, XAUTOCLAIM, and
    XREADGROUP with its suffix)."""
    return CommandError(f"NOGROUP No such key '{client_text(key)}' or consumer group "
                        f"'{client_text(group)}'{suffix}")


def nogroup_for_key(key: bytes, group: bytes) -> CommandError:
    """"NOGROUP No such consumer group 'g' for key name 'k'" (XGROUP, XINFO CONSUMERS)."""
    return CommandError(f"NOGROUP No such consumer group '{client_text(group)}' for key name "
                        f"'{client_text(key)}'")


def lookup_stream_group(
    client: Client, key: bytes, group_name: bytes
) -> tuple[Stream, ConsumerGroup]:
    """The stream and its group, or NOGROUP "No such key ... or consumer group ...". A read
    lookup (lookupKeyRead: a keyspace hit or miss, a keymiss event), as in XCLAIM, XAUTOCLAIM
    and XPENDING."""
    stream = read_stream(client, key)
    group = lookup_group(stream, group_name) if stream is not None else None
    if stream is None or group is None:
        raise nogroup_key_or_group(key, group_name)
    return stream, group


def get_consumer(client: Client, key: bytes, group: ConsumerGroup, name: bytes,
                 now: int) -> Consumer:
    """The named consumer, created (and its creation propagated) when missing."""
    consumer, created = group.get_consumer(name, now)
    if created:
        client.server.notify(notify.STREAM, b"xgroup-createconsumer", key, client.db.id)
        propagate_consumer_creation(client, key, group, consumer)
    return consumer


def propagate_xclaim(client: Client, key: bytes, group: ConsumerGroup, entry_id: StreamID,
                     nack: NACK, changes: int = 1) -> None:
    """The effect of one delivery or claim, replayable as it is:
    XCLAIM key group consumer 0 id TIME t RETRYCOUNT n FORCE JUSTID LASTID last-id.
    A dropped entry of the NACK zone has no owner to name: XACK key group id, as Redis
    writes it (streamPropagateXACK)."""
    server = client.server
    if not server.propagate_hooks and server.propagate_batch is None:
        server.dirty += changes  # (all that propagate() does then: no AOF, no replicas)
        return
    owner = nack.consumer
    if owner is None:
        server.propagate(client.db, [b"XACK", key, group.name, format_id(entry_id)], changes)
        return
    server.propagate(client.db, [
        b"XCLAIM", key, group.name, owner.name, b"0", format_id(entry_id),
        b"TIME", b"%d" % nack.delivery_time, b"RETRYCOUNT", b"%d" % nack.delivery_count,
        b"FORCE", b"JUSTID", b"LASTID", format_id(group.last_id),
    ], changes)


def propagate_new_deliveries(client: Client, key: bytes, group: ConsumerGroup,
                             consumer: Consumer, fids: list[bytes], now: int) -> None:
    """propagate_xclaim for entries an XREADGROUP `>` just made pending (``fids``: their
    formatted IDs): each owned by ``consumer``, delivered ``now`` once, and the group's
    last ID when it was delivered is the entry's own ID."""
    server = client.server
    db = client.db
    head = [b"XCLAIM", key, group.name, consumer.name, b"0"]
    t = b"%d" % now
    for fid in fids:
        server.propagate(db, [*head, fid, b"TIME", t, b"RETRYCOUNT", b"1", b"FORCE",
                              b"JUSTID", b"LASTID", fid], 0)  # (XREADGROUP counts one)


def propagate_group_id(client: Client, key: bytes, group: ConsumerGroup,
                       changes: int = 1) -> None:
    """XGROUP SETID key group last-id ENTRIESREAD n: the group's position and counter."""
    client.server.propagate(client.db, [
        b"XGROUP", b"SETID", key, group.name, format_id(group.last_id),
        b"ENTRIESREAD", format_counter(group.entries_read),
    ], changes)


def propagate_consumer_creation(client: Client, key: bytes, group: ConsumerGroup,
                                consumer: Consumer) -> None:
    client.server.propagate(client.db, [
        b"XGROUP", b"CREATECONSUMER", key, group.name, consumer.name,
    ])
