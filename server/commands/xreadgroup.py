"""XREADGROUP GROUP group consumer [COUNT n] [MAXCOUNT n] [MAXSIZE bytes] [BLOCK ms]
[CLAIM min-idle-time] [NOACK] STREAMS key... id... (the group half of t_stream.c's
xreadCommand, Redis 8.10). MAXCOUNT and MAXSIZE bound the reply across all its streams
(stream_args.ReadBudget); an entry they leave out is not delivered (nor claimed).

Per stream, the ID `>` serves entries never delivered to the group (each becomes pending
for the consumer unless NOACK) and an explicit ID serves the consumer's own history (its
pending entries after that ID; an entry deleted since comes back with a nil body). With
CLAIM, `>` first takes over pending entries idle for at least min-idle-time, longest idle
first; every entry of the reply then has four elements: ID, fields, idle ms and delivery
count before this one (0 and 0 for new entries). COUNT bounds the entries of each stream.

Only `>` blocks. A blocked client is re-run when a key gets data, is deleted or changes type
(it answers NOGROUP or WRONGTYPE then), when its group is destroyed, and with CLAIM when the
oldest pending entry becomes idle enough. Effects are propagated as Redis does: XCLAIM for
each entry made pending, XGROUP SETID when the group's last ID moved, XGROUP CREATECONSUMER
for a consumer created here.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable

from protocol.encoder import NULL_ARRAY, Raw
from server.blocking import BlockRequest
from server.client import Client
from server.commands.group_common import (
    get_consumer,
    nogroup_key_or_group,
    now_ms,
    propagate_group_id,
    propagate_new_deliveries,
    propagate_xclaim,
)
from server.commands.stream_args import (
    ReadBudget,
    entries_reply,
    parse_block_timeout,
    parse_budget_value,
    parse_count,
    parse_strict_id,
    read_stream,
    refuse_block_in_script,
)
from server.commands.xread import stream_map_reply
from server.dispatch import command
from server.errors import SYNTAX, CommandError
from server.parsing import is_canonical_int
from storage.consumer_group import Consumer, ConsumerGroup, lookup_group
from storage.stream import Stream
from storage.stream_id import MAX_ID, StreamID, format_id, id_to_key, incr_id

ERR_UNBALANCED = (
    "ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be "
    "specified."
)
ERR_MISSING_GROUP = "ERR Missing GROUP option for XREADGROUP"
ERR_CLAIM_NOT_INT = "ERR min-idle-time is not an integer"
ERR_CLAIM_NEGATIVE = "ERR min-idle-time must be a positive integer"
_MEANINGLESS = (
    "ERR The {0} ID is meaningless in the context of XREADGROUP: you want to read the history "
    "of this consumer by specifying a proper ID, or use the > ID to get new messages. The {0} "
    "ID would just return an empty result set."
)
ERR_DOLLAR = _MEANINGLESS.format("$")
ERR_PLUS = _MEANINGLESS.format("+")
_NEW = MAX_ID  # the `>` marker, as Redis encodes it
_NOGROUP_SUFFIX = " in XREADGROUP with GROUP option"


class _Options:
    __slots__ = ("timeout", "count", "first_key", "group", "consumer", "noack", "min_idle",
                 "budget")

    def __init__(self) -> None:
        self.timeout = -1  # no BLOCK
        self.count = 0  # no limit
        self.first_key = 0
        self.group = b""
        self.consumer = b""
        self.noack = False
        self.min_idle = -1  # no CLAIM
        self.budget = ReadBudget()  # MAXCOUNT / MAXSIZE


def _parse_options(argv: list[bytes]) -> _Options:
    opts = _Options()
    group_given = False
    argc = len(argv)
    i = 1
    while i < argc:
        opt = argv[i]
        more = argc - 1 - i
        # (lowered once: the option words are short, and every command has several)
        word = opt.lower() if len(opt) <= 8 else b""
        if word == b"block" and more:
            i += 1
            opts.timeout = parse_block_timeout(argv[i], now_ms())
        elif word == b"count" and more:
            i += 1
            opts.count = parse_count(argv[i])
        elif word == b"maxcount" and more:
            i += 1
            opts.budget.maxcount = parse_budget_value(argv[i])
        elif word == b"maxsize" and more:
            i += 1
            opts.budget.maxsize = parse_budget_value(argv[i])
        elif word == b"streams" and more:
            if (argc - i - 1) % 2:
                raise CommandError(ERR_UNBALANCED)
            opts.first_key = i + 1
            break
        elif word == b"group" and more >= 2:
            opts.group = argv[i + 1]
            opts.consumer = argv[i + 2]
            group_given = True
            i += 2
        elif word == b"noack":
            opts.noack = True
        elif word == b"claim" and more:
            i += 1
            if not is_canonical_int(argv[i]):
                raise CommandError(ERR_CLAIM_NOT_INT)
            opts.min_idle = int(argv[i])
            if opts.min_idle < 0:
                raise CommandError(ERR_CLAIM_NEGATIVE)
        else:
            raise CommandError(SYNTAX)
        i += 1
    if not opts.first_key:
        raise CommandError(SYNTAX)  # STREAMS is mandatory
    if not group_given:
        raise CommandError(ERR_MISSING_GROUP)
    return opts


def _resolve(client: Client, keys: list[bytes], id_args: list[bytes],
             group_name: bytes) -> list[tuple[Stream, ConsumerGroup, StreamID]]:
    """Check every key (type, group) and parse its ID, in argument order."""
    out = []
    for key, arg in zip(keys, id_args, strict=True):
        stream = read_stream(client, key)
        group = lookup_group(stream, group_name) if stream is not None else None
        if stream is None or group is None:
            raise nogroup_key_or_group(key, group_name, _NOGROUP_SUFFIX)
        if arg == b"$":
            raise CommandError(ERR_DOLLAR)
        if arg == b"+":
            raise CommandError(ERR_PLUS)
        out.append((stream, group, _NEW if arg == b">" else parse_strict_id(arg)))
    return out


def _has_new(stream: Stream, group: ConsumerGroup) -> bool:
    """Is there a live entry after the group's last delivered ID?"""
    if not stream.length or group.last_id >= stream.last_id:
        return False
    top = stream.last_entry_id()
    return top is not None and top > group.last_id


def _claimable(stream: Stream, group: ConsumerGroup, now: int, min_idle: int) -> bool:
    oldest = group.oldest_delivery_time(stream)
    return oldest is not None and now - oldest >= min_idle


@command("xreadgroup", -7, "write blocking", categories="@write @stream @slow @blocking",
         summary="Returns new or historical messages from a stream for a consumer in a group. "
         "Blocks until a message is available otherwise.", since="5.0.0", group="stream",
         key_keyword="STREAMS")
def xreadgroup(client: Client, argv: list[bytes]) -> object:
    refuse_block_in_script(client, argv)
    opts = _parse_options(argv)
    first_key = opts.first_key
    nkeys = (len(argv) - first_key) // 2
    keys = argv[first_key:first_key + nkeys]
    targets = _resolve(client, keys, argv[first_key + nkeys:], opts.group)
    now = now_ms()
    min_idle = opts.min_idle
    claim = min_idle >= 0
    budget = opts.budget
    accept = budget.accept if budget.limited else None
    served: list[tuple[bytes, list]] = []
    for key, (stream, group, gt) in zip(keys, targets, strict=True):
        consumer = get_consumer(client, key, group, opts.consumer, now)
        consumer.seen_time = now
        if budget.spent():
            continue
        count = budget.count_limit(opts.count)
        if gt != _NEW:  # the consumer's history; CLAIM does not apply
            history = group.read_history(stream, consumer, incr_id(gt), count, now, accept)
            served.append((key, [[format_id(eid), fields if fields is not None else NULL_ARRAY]
                                 for eid, fields in history]))
            # Redis logs nothing for a history read, so a replayed AOF would show these
            # entries one delivery behind; logging the new delivery data keeps it exact.
            # (Not a change for the dirty counter, as in Redis.)
            for eid, fields in history:
                if fields is not None:
                    propagate_xclaim(client, key, group, eid, group.pel.find(id_to_key(eid)),
                                     changes=0)
            continue
        new = _has_new(stream, group)
        if not new and not (claim and _claimable(stream, group, now, min_idle)):
            continue
        if not claim and accept is None:
            raw = _deliver_new_resp(client, key, stream, group, consumer, now, count,
                                    opts.noack)
            if raw is not None:
                client.server.dirty += 1  # one change per stream served
                served.append((key, raw))
                continue
        entries: list[list[object]] = []
        if claim:
            for eid, fields, idle, before, nack in group.claim_idle(
                    stream, consumer, now, min_idle, count, accept):
                entries.append([format_id(eid), fields, idle, before])
                propagate_xclaim(client, key, group, eid, nack, changes=0)
        if new and (not count or len(entries) < count):
            entries.extend(_deliver_new(client, key, stream, group, consumer, now,
                                        count - len(entries) if count else 0, opts.noack, claim,
                                        accept))
        if entries:
            client.server.dirty += 1  # one change per stream served, however many entries
        served.append((key, entries))
    if served:
        return stream_map_reply(client, served)
    if opts.timeout < 0:
        return NULL_ARRAY
    if claim and not client.in_exec:
        _wake_when_claimable(client, keys, targets, now, min_idle)
    return BlockRequest(list(keys), opts.timeout, list(argv), NULL_ARRAY,
                        unblock_on_nokey=True)


def _deliver_new(client: Client, key: bytes, stream: Stream, group: ConsumerGroup,
                 consumer: Consumer, now: int, count: int, noack: bool,
                 claim: bool, accept: Callable[[list[bytes] | None], bool] | None = None,
                 ) -> list[list[object]]:
    """Serve the entries after the group's last ID (streamReplyWithRange with a group); with
    ``accept`` (MAXSIZE), only those it takes."""
    start = group.last_id
    # Collected first (COUNT entries decoded, no more): delivering edits only the group.
    entries = stream.range(incr_id(start), MAX_ID, count)
    if accept is not None:
        kept = 0
        while kept < len(entries) and accept(entries[kept][1]):
            kept += 1
        del entries[kept:]
    if not entries:
        return []
    ids = [eid for eid, _ in entries]
    fids = [b"%d-%d" % eid for eid in ids]
    group.deliver_new(stream, ids, consumer, now, noack)
    if claim:
        out: list[list[object]] = [[fid, fields, 0, 0]
                                   for fid, (_, fields) in zip(fids, entries, strict=True)]
    else:
        out = [[fid, fields] for fid, (_, fields) in zip(fids, entries, strict=True)]
    if not noack:
        propagate_new_deliveries(client, key, group, consumer, fids, now)
    propagate_group_id(client, key, group, changes=0)
    return out


def _deliver_new_resp(client: Client, key: bytes, stream: Stream, group: ConsumerGroup,
                      consumer: Consumer, now: int, count: int, noack: bool) -> Raw | None:
    """_deliver_new without CLAIM or MAXSIZE, its reply served from the cache of encoded
    stream nodes (Stream.range_resp); None when that cache is off or nothing new
    is there."""
    runs: list[bytes] = []
    found = stream.range_resp(incr_id(group.last_id), MAX_ID, count, False, runs)
    if found is None or not found[1]:
        return None
    joined = b"".join(runs)
    ids = list(_iter_ids(joined))
    group.deliver_new(stream, ids, consumer, now, noack,
                      [joined[i:i + 16] for i in range(0, len(joined), 16)])
    server = client.server
    if server.propagate_hooks or server.propagate_batch is not None:
        if not noack:
            propagate_new_deliveries(client, key, group, consumer,
                                     [b"%d-%d" % eid for eid in ids], now)
        propagate_group_id(client, key, group, changes=0)
    # (else nothing listens: the group's new position has no one to go to, and changes=0
    # leaves the dirty counter as it is)
    return entries_reply(*found)


_iter_ids = struct.Struct(">QQ").iter_unpack


# One pending CLAIM wake-up per blocked client (client id -> timer).
_claim_timers: dict[int, asyncio.TimerHandle] = {}
_EMPTY_PEL_POLL_MS = 100


def _wake_when_claimable(client: Client, keys: list[bytes],
                         targets: list[tuple[Stream, ConsumerGroup, StreamID]], now: int,
                         min_idle: int) -> None:
    """A client blocked with CLAIM must also wake when the oldest pending entry reaches
    min-idle-time (trackStreamClaimTimeouts): signal its keys then. With nothing pending,
    look again every min-idle-time (at least every 100 ms): entries may become pending
    without its keys being signalled (another client's XCLAIM FORCE)."""
    oldest = [g.oldest_delivery_time(s) for s, g, gt in targets if gt == _NEW]
    known = [t for t in oldest if t is not None]
    if known:
        delay = max(min(known) + min_idle - now, 1)
    else:
        delay = max(min_idle, _EMPTY_PEL_POLL_MS)
    server = client.server
    db = client.db
    cid = client.id

    def signal() -> None:
        _claim_timers.pop(cid, None)
        if client.blocked is None or client.closed:
            return
        for key in keys:
            server.signal_key_as_ready(db, key)

    previous = _claim_timers.pop(cid, None)
    if previous is not None:
        previous.cancel()
    _claim_timers[cid] = server.loop.call_later(delay / 1000.0, signal)
