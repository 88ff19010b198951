"""XINFO GROUPS key, XINFO CONSUMERS key group, and the groups part of XINFO STREAM FULL
(t_stream.c's xinfoCommand / xinfoReplyWithStreamInfo, Redis 8.4 fields)."""

from __future__ import annotations

from server.client import Client
from server.commands.group_common import nogroup_for_key, now_ms
from server.commands.stream_args import read_stream
from server.commands.xinfo import register_full_groups_hook
from server.dispatch import command
from server.errors import NO_SUCH_KEY, CommandError
from storage.consumer_group import (
    INVALID_ENTRIES_READ,
    ConsumerGroup,
    groups,
    lookup_group,
)
from storage.consumer_group_lag import group_lag
from storage.stream import Stream
from storage.stream_id import format_id, key_to_id


def _stream(client: Client, key: bytes) -> Stream:
    stream = read_stream(client, key)
    if stream is None:
        raise CommandError(NO_SUCH_KEY)
    return stream


def _entries_read(group: ConsumerGroup) -> int | None:
    return None if group.entries_read == INVALID_ENTRIES_READ else group.entries_read


@command("xinfo|groups", 3, "readonly", keys=(2, 2, 1), categories="@read @stream @slow",
         summary="Returns a list of the consumer groups of a stream.", since="5.0.0",
         group="stream")
def xinfo_groups(client: Client, argv: list[bytes]) -> object:
    stream = _stream(client, argv[2])
    return [
        {
            b"name": g.name,
            b"consumers": len(g.consumers),
            b"pending": len(g.pel),
            b"last-delivered-id": format_id(g.last_id),
            b"entries-read": _entries_read(g),
            b"lag": group_lag(stream, g),
        }
        for g in groups(stream)
    ]


@command("xinfo|consumers", 4, "readonly", keys=(2, 2, 1), categories="@read @stream @slow",
         summary="Returns a list of the consumers in a consumer group.", since="5.0.0",
         group="stream", tips="nondeterministic_output")
def xinfo_consumers(client: Client, argv: list[bytes]) -> object:
    key = argv[2]
    stream = _stream(client, key)
    group = lookup_group(stream, argv[3])
    if group is None:
        raise nogroup_for_key(key, argv[3])
    now = now_ms()
    out = []
    for c in group.iter_consumers():
        out.append({
            b"name": c.name,
            b"pending": len(c.pel),
            b"idle": max(now - c.seen_time, 0),
            b"inactive": now - c.active_time if c.active_time != -1 else -1,
        })
    return out


def full_groups(client: Client, stream: Stream, count: int) -> list:
    """XINFO STREAM FULL's groups: each with its PEL and consumers (at most ``count`` PEL
    entries per group and per consumer, 0 = all)."""
    out = []
    for g in groups(stream):
        pel = []
        for eid, nack in g.iter_pending():
            if count and len(pel) >= count:
                break
            owner = nack.consumer.name if nack.consumer is not None else b""
            pel.append([format_id(eid), owner, nack.delivery_time, nack.delivery_count])
        consumers = []
        for c in g.iter_consumers():
            cpel = []
            for key_id, nack in c.pel.items():
                if count and len(cpel) >= count:
                    break
                cpel.append([format_id(key_to_id(key_id)), nack.delivery_time,  # type: ignore[union-attr]
                             nack.delivery_count])  # type: ignore[union-attr]
            consumers.append({
                b"name": c.name,
                b"seen-time": c.seen_time,
                b"active-time": c.active_time,
                b"pel-count": len(c.pel),
                b"pending": cpel,
            })
        out.append({
            b"name": g.name,
            b"last-delivered-id": format_id(g.last_id),
            b"entries-read": _entries_read(g),
            b"lag": group_lag(stream, g),
            b"pel-count": len(g.pel),
            b"nacked-count": len(g.nacked),  # Redis 8.8: entries released by XNACK
            b"pending": pel,
            b"consumers": consumers,
        })
    return out


register_full_groups_hook(full_groups)
