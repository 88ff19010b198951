"""XCLAIM and XAUTOCLAIM: change the owner of pending entries (t_stream.c, Redis 8.4).

Both create the consumer if needed, skip entries not idle for min-idle-time, reset the
delivery time and (without JUSTID) count one more delivery; a pending entry whose stream
entry was deleted is dropped from the PEL (XAUTOCLAIM reports those IDs). Every change is
propagated as an idempotent XCLAIM ... FORCE JUSTID LASTID, as Redis does.
"""

from __future__ import annotations

from server.client import Client
from server.commands.group_common import (
    get_consumer,
    lookup_stream_group,
    now_ms,
    propagate_group_id,
    propagate_xclaim,
)
from server.commands.stream_args import parse_ll, parse_strict_id
from server.dispatch import command
from server.errors import SYNTAX, CommandError
from server.parsing import INT64_MAX, eq, is_canonical_int
from storage.stream_id import InvalidStreamID, StreamID, format_id, parse_id, parse_range_bound

_W = "@write @stream @fast"
ERR_AUTOCLAIM_COUNT = "ERR COUNT must be > 0"
_MAX_AUTOCLAIM_COUNT = INT64_MAX // 16  # LONG_MAX / max(sizeof(streamID), attempts factor)
_OPTIONS = frozenset((b"force", b"justid", b"idle", b"time", b"retrycount", b"lastid"))


@command("xclaim", -6, "write fast", keys=(1, 1, 1), categories=_W,
         summary="Changes, or acquires, ownership of a message in a consumer group, as if the "
         "message was delivered a consumer group member.", since="5.0.0", group="stream",
         tips="nondeterministic_output")
def xclaim(client: Client, argv: list[bytes]) -> object:
    key = argv[1]
    stream, group = lookup_stream_group(client, key, argv[2])
    min_idle = parse_ll(argv[4], "ERR Invalid min-idle-time argument for XCLAIM")
    if min_idle < 0:
        min_idle = 0
    if len(argv) == 14 and (argv[6], argv[8], argv[10], argv[11], argv[12]) == _PROPAGATED:
        parsed = _parse_propagated(argv)
    else:
        parsed = None
    ids, now, delivery_time, retry_count, force, justid, last_id = (
        parsed if parsed is not None else _parse_ids_and_options(argv))
    propagate_last_id = False
    if last_id > group.last_id:
        group.last_id = last_id
        propagate_last_id = True
    if delivery_time < 0 or delivery_time > now:
        delivery_time = now  # no IDLE/TIME, or a bogus one
    consumer = get_consumer(client, key, group, argv[3], now)
    consumer.seen_time = now
    reply: list[object] = []
    for entry_id in ids:
        status, nack, fields = group.claim(stream, entry_id, consumer, now, min_idle,
                                           delivery_time, retry_count, force, justid)
        if nack is None:
            continue
        # Also for a deleted entry: the replayed XCLAIM drops it from the PEL too.
        propagate_xclaim(client, key, group, entry_id, nack)
        propagate_last_id = False  # the XCLAIM carries LASTID
        if status == "claimed":
            reply.append(format_id(entry_id) if justid else [format_id(entry_id), fields])
    if propagate_last_id:
        propagate_group_id(client, key, group)
    return reply


# XCLAIM as every claim propagates it, and as an AOF holds it (group_common.propagate_xclaim):
# XCLAIM key group consumer 0 <id> TIME <ms> RETRYCOUNT <n> FORCE JUSTID LASTID <id>.
_PROPAGATED = (b"TIME", b"RETRYCOUNT", b"FORCE", b"JUSTID", b"LASTID")
_Parsed = tuple[list[StreamID], int, int, int, bool, bool, StreamID]


def _parse_propagated(argv: list[bytes]) -> _Parsed | None:
    """The propagated form read by position, with the general loop's results and errors in
    its order; None when its one ID is not an ID (then the general loop reads it)."""
    try:
        ids = [parse_id(argv[5], 0, strict=True)]
    except InvalidStreamID:
        return None
    now = now_ms()
    delivery_time = parse_ll(argv[7], "ERR Invalid TIME option argument for XCLAIM")
    retry_count = parse_ll(argv[9], "ERR Invalid RETRYCOUNT option argument for XCLAIM")
    return ids, now, delivery_time, retry_count, True, True, parse_strict_id(argv[13])


def _parse_ids_and_options(argv: list[bytes]) -> _Parsed:
    """The IDs, up to the first argument that is not one, then the options."""
    argc = len(argv)
    ids = []
    j = 5
    while j < argc:
        arg = argv[j]
        if arg.lower() in _OPTIONS:  # (never an ID: spares the failed parse of the first)
            break
        try:
            ids.append(parse_id(arg, 0, strict=True))
        except InvalidStreamID:
            break
        j += 1
    now = now_ms()
    delivery_time = -1
    retry_count = -1
    force = justid = False
    last_id = (0, 0)
    while j < argc:
        opt = argv[j]
        word = opt.lower()
        more = argc - 1 - j
        if word == b"force":
            force = True
        elif word == b"justid":
            justid = True
        elif word == b"idle" and more:
            j += 1
            delivery_time = now - parse_ll(argv[j], "ERR Invalid IDLE option argument for XCLAIM")
        elif word == b"time" and more:
            j += 1
            delivery_time = parse_ll(argv[j], "ERR Invalid TIME option argument for XCLAIM")
        elif word == b"retrycount" and more:
            j += 1
            retry_count = parse_ll(argv[j], "ERR Invalid RETRYCOUNT option argument for XCLAIM")
        elif word == b"lastid" and more:
            j += 1
            last_id = parse_strict_id(argv[j])
        else:
            raise CommandError(
                f"ERR Unrecognized XCLAIM option '{opt.decode(errors='replace')}'")
        j += 1
    return ids, now, delivery_time, retry_count, force, justid, last_id


def _parse_start(arg: bytes) -> StreamID:
    """XAUTOCLAIM's start: `-`, `+`, an incomplete ID or a `(` exclusive one."""
    try:
        start, _ = parse_range_bound(arg, True)
    except InvalidStreamID as exc:
        raise CommandError(str(exc)) from None
    return start


@command("xautoclaim", -6, "write fast", keys=(1, 1, 1), categories=_W,
         summary="Changes, or acquires, ownership of messages in a consumer group, as if the "
         "messages were delivered to as consumer group member.", since="6.2.0",
         group="stream", tips="nondeterministic_output")
def xautoclaim(client: Client, argv: list[bytes]) -> object:
    min_idle = parse_ll(argv[4], "ERR Invalid min-idle-time argument for XAUTOCLAIM")
    if min_idle < 0:
        min_idle = 0
    start = _parse_start(argv[5])
    count = 100
    justid = False
    argc = len(argv)
    j = 6
    while j < argc:
        opt = argv[j]
        if eq(opt, b"count") and j + 1 < argc:
            arg = argv[j + 1]
            if not is_canonical_int(arg) or not 1 <= int(arg) <= _MAX_AUTOCLAIM_COUNT:
                raise CommandError(ERR_AUTOCLAIM_COUNT)
            count = int(arg)
            j += 1
        elif eq(opt, b"justid"):
            justid = True
        else:
            raise CommandError(SYNTAX)
        j += 1
    key = argv[1]
    stream, group = lookup_stream_group(client, key, argv[2])
    now = now_ms()
    consumer = get_consumer(client, key, group, argv[3], now)
    consumer.seen_time = now
    cursor, claimed, deleted = group.autoclaim(stream, consumer, now, min_idle, start, count,
                                               justid)
    # Propagate in the order the PEL was walked: claims and drops interleave by ID.
    effects = [(eid, nack) for eid, nack, _ in claimed] + deleted
    effects.sort(key=lambda e: e[0])
    for eid, nack in effects:
        propagate_xclaim(client, key, group, eid, nack)
    if justid:
        entries: list[object] = [format_id(eid) for eid, _, _ in claimed]
    else:
        entries = [[format_id(eid), fields] for eid, _, fields in claimed]
    return [format_id(cursor), entries, [format_id(eid) for eid, _ in deleted]]
