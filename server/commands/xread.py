"""XREAD [COUNT n] [MAXCOUNT n] [MAXSIZE bytes] [BLOCK ms] STREAMS key... id...
(xreadCommand without the group part). MAXCOUNT and MAXSIZE (Redis 8.10) bound the reply
across all its streams (stream_args.ReadBudget).

A read that finds nothing and has BLOCK returns a BlockRequest: the client waits in
server.blocking until one of the keys is signalled, then this handler is re-run with `$`
rewritten to the ID it meant at block time (as Redis rewrites the argv), so the re-run reads
only what arrived since. Inside MULTI the framework answers the timeout reply (null) at once.
"""

from __future__ import annotations

import time

from protocol.encoder import NULL_ARRAY, Raw, encode
from server.blocking import BlockRequest
from server.client import Client
from server.commands.stream_args import (
    ReadBudget,
    entries_reply,
    note_read,
    parse_block_timeout,
    parse_budget_value,
    parse_count,
    parse_strict_id,
    read_stream,
    refuse_block_in_script,
)
from server.dispatch import command
from server.errors import SYNTAX, CommandError
from storage.stream import Stream
from storage.stream_id import MAX_ID, MIN_ID, StreamID, decr_id, format_id, incr_id

ERR_UNBALANCED = (
    "ERR Unbalanced 'xread' list of streams: for each stream key an ID, '+', or '$' must be "
    "specified."
)
ERR_GROUP_ONLY = "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
ERR_NOACK_ONLY = "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."
ERR_CLAIM_ONLY = "ERR The CLAIM option is only supported by XREADGROUP. You called XREAD instead."
ERR_GT_ID = (
    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> "
    "<consumer> option."
)


def _parse_options(argv: list[bytes]) -> tuple[int, int, int, ReadBudget]:
    """(timeout ms or -1 without BLOCK, count (0 = no limit), index of the first key,
    MAXCOUNT / MAXSIZE)."""
    timeout = -1
    count = 0
    budget = ReadBudget()
    argc = len(argv)
    i = 1
    while i < argc:
        opt = argv[i].lower() if len(argv[i]) <= 8 else b""
        more = argc - 1 - i
        if opt == b"streams" and more:
            if (argc - i - 1) % 2:
                raise CommandError(ERR_UNBALANCED)
            return timeout, count, i + 1, budget
        if opt == b"count" and more:
            i += 1
            count = parse_count(argv[i])
        elif opt == b"maxcount" and more:
            i += 1
            budget.maxcount = parse_budget_value(argv[i])
        elif opt == b"maxsize" and more:
            i += 1
            budget.maxsize = parse_budget_value(argv[i])
        elif opt == b"block" and more:
            i += 1
            timeout = parse_block_timeout(argv[i], time.time_ns() // 1_000_000)
        elif opt == b"group" and more >= 2:
            raise CommandError(ERR_GROUP_ONLY)
        elif opt == b"noack":
            raise CommandError(ERR_NOACK_ONLY)
        elif opt == b"claim" and more:  # (Redis 8.4's XREADGROUP option)
            raise CommandError(ERR_CLAIM_ONLY)
        else:
            raise CommandError(SYNTAX)
        i += 1
    raise CommandError(SYNTAX)  # STREAMS is mandatory


def resolve_id(stream: Stream | None, arg: bytes) -> StreamID:
    """The ID after which XREAD reads: `$` = the stream's last ID, `+` = just before its last
    entry (Redis 7.4+), else a strict ID."""
    if arg == b"$":
        return stream.last_id if stream is not None else MIN_ID
    if arg == b"+":
        if stream is not None and stream.length:
            last = stream.last_entry_id()
            if last is not None and last != MIN_ID:
                return decr_id(last)
        return MIN_ID
    if arg == b">":
        raise CommandError(ERR_GT_ID)
    return parse_strict_id(arg)


def read_after(stream: Stream, after: StreamID, count: int) -> list:
    """Up to count (0 = all) live entries with ID > after, formatted for the reply."""
    if after >= stream.last_id or after == MAX_ID:
        return []
    return stream.range_reply(incr_id(after), MAX_ID, count)


def read_after_resp(stream: Stream, after: StreamID, count: int) -> Raw | list | None:
    """read_after's entries already in RESP (the cache of encoded nodes), or None when
    there is none; read_after's list when that cache is off."""
    if after >= stream.last_id or after == MAX_ID:
        return None
    served = stream.range_resp(incr_id(after), MAX_ID, count)
    if served is None:
        return stream.range_reply(incr_id(after), MAX_ID, count) or None
    return entries_reply(*served) if served[1] else None


def stream_map_reply(client: Client, served: list[tuple[bytes, list]]) -> object:
    """XREAD's reply: RESP2 an array of [key, entries], RESP3 a map key -> entries."""
    if client.protocol == 2:
        return [[key, entries] for key, entries in served]
    keys = [key for key, _ in served]
    if len(set(keys)) == len(keys):
        return dict(served)
    # The same key twice (STREAMS s s 0 0): a map with repeated keys, as Redis writes it.
    body = b"".join(encode(key, 3) + encode(entries, 3) for key, entries in served)
    return Raw(b"%%%d\r\n" % len(served) + body)


@command("xread", -4, "readonly blocking", categories="@read @stream @slow @blocking",
         summary="Returns messages from multiple streams with IDs greater than the ones "
         "requested. Blocks until a message is available otherwise.", since="5.0.0",
         group="stream", key_keyword="STREAMS")
def xread(client: Client, argv: list[bytes]) -> object:
    refuse_block_in_script(client, argv)
    timeout, count, first_key, budget = _parse_options(argv)
    nkeys = (len(argv) - first_key) // 2
    keys = argv[first_key:first_key + nkeys]
    id_args = argv[first_key + nkeys:]
    streams: list[Stream | None] = []
    after: list[StreamID] = []
    for key, arg in zip(keys, id_args, strict=True):
        stream = read_stream(client, key)  # WRONGTYPE before this key's ID is parsed
        streams.append(stream)
        after.append(resolve_id(stream, arg))
    served: list[tuple[bytes, list]] = []
    for key, stream, gt in zip(keys, streams, after, strict=True):
        note_read(client, stream is not None, key)  # Redis looks each key up again to serve it
        if stream is not None and stream.length and not budget.spent():
            if not budget.limited:
                raw = read_after_resp(stream, gt, count)
                if raw is not None:
                    served.append((key, raw))
                continue
            entries = read_after(stream, gt, budget.count_limit(count))
            if budget.limited:
                kept = 0
                while kept < len(entries) and budget.accept(entries[kept][1]):
                    kept += 1
                del entries[kept:]
            if entries:
                served.append((key, entries))
    if served:
        return stream_map_reply(client, served)
    if timeout < 0:
        return NULL_ARRAY
    # Block: `$` becomes the concrete ID it meant now, or a re-run would wait forever.
    rerun = list(argv)
    for j, arg in enumerate(id_args):
        if arg == b"$":
            rerun[first_key + nkeys + j] = format_id(after[j])
    return BlockRequest(list(keys), timeout, rerun, NULL_ARRAY)
