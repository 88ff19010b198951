"""Idempotent production (Redis 8.6): XCFGSET, XIDMPRECORD, and the expiry of tracked iids.

XADD ... IDMP pid iid / IDMPAUTO pid (stream_cmds.py) records which entry a producer added
with which iid, in the stream's IDMP state (storage/stream_idmp.py). The records of a stream
expire IDMP-DURATION seconds after their entry's ID: on the server's cron for the streams
written with IDMP (as Redis's handleExpiredIdmpEntries walks its stream_idmp_keys), and
before a stream's records are consulted. Never while the AOF is replayed: a replayed
duplicate XADD must find the record its original found.

XCFGSET key [IDMP-DURATION s] [IDMP-MAXSIZE n] sets a stream's limits; a value that changes
clears the stream's records (it is then propagated, as it is). XIDMPRECORD key pid iid id is
what the AOF rewrite writes for each record (xidmprecordCommand).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from protocol.encoder import OK
from server.client import Client
from server.commands.stream_args import lookup_stream, parse_ll, parse_strict_id
from server.dispatch import command
from server.errors import NO_SUCH_KEY, SYNTAX, CommandError
from server.parsing import eq
from storage.stream import Stream
from storage.stream_idmp import (
    MAX_DURATION,
    MAX_MAXSIZE,
    MIN_DURATION,
    MIN_MAXSIZE,
    RECORD_CONFLICT,
    RECORD_NEW,
)

if TYPE_CHECKING:
    from server.core import ServerCore

_W = "@write @stream @fast"

ERR_DURATION_TWICE = "ERR IDMP-DURATION specified multiple times"
ERR_MAXSIZE_TWICE = "ERR IDMP-MAXSIZE specified multiple times"
ERR_DURATION_RANGE = f"ERR IDMP-DURATION must be between {MIN_DURATION} and {MAX_DURATION} seconds"
ERR_MAXSIZE_RANGE = f"ERR IDMP-MAXSIZE must be between {MIN_MAXSIZE} and {MAX_MAXSIZE} entries"
ERR_NO_PARAMETER = "ERR At least one parameter must be specified"
ERR_EMPTY_PID = "ERR producer ID must be non-empty"
ERR_EMPTY_IID = "ERR idempotent ID must be non-empty"
ERR_NO_MESSAGE = "ERR No such message in stream"
ERR_IID_CONFLICT = "ERR IID already exists for this producer with a different stream ID"

# (db id, key) of the streams that got IDMP records: the cron expires their records.
_tracked: set[tuple[int, bytes]] = set()


def track(client: Client, key: bytes) -> None:
    """Have the cron expire the records of the stream at key."""
    _tracked.add((client.db.id, bytes(key)))


def expire_records(client: Client, stream: Stream) -> None:
    """Drop the stream's expired records now (not while the AOF is replayed)."""
    server = client.server
    if stream.idmp.producers and not server.loading:
        stream.idmp.expire(server.command_time_ns // 1_000_000)


def expire_tracked(server: ServerCore) -> None:
    """The cron's pass: expire the records of every tracked stream; a key that no longer
    holds a stream with records is forgotten."""
    if not _tracked or server.loading:
        return
    now = time.time_ns() // 1_000_000
    for dbid, key in list(_tracked):
        dbs = server.dbs
        value = dbs[dbid].peek(key) if dbid < len(dbs) else None
        if type(value) is not Stream or not value.idmp.producers:
            _tracked.discard((dbid, key))
            continue
        value.idmp.expire(now)
        if not value.idmp.producers:
            _tracked.discard((dbid, key))


def _stream_for_write(client: Client, key: bytes) -> Stream:
    stream = lookup_stream(client, key)
    if stream is None:
        raise CommandError(NO_SUCH_KEY)
    return stream


@command("xcfgset", -2, "write fast", keys=(1, 1, 1), categories=_W,
         summary="Sets the IDMP configuration parameters for a stream.", since="8.6.0",
         group="stream")
def xcfgset(client: Client, argv: list[bytes]) -> object:
    key = argv[1]
    stream = _stream_for_write(client, key)  # (the key is looked up first, as in Redis)
    duration = maxsize = -1
    argc = len(argv)
    i = 2
    while i < argc:
        opt = argv[i]
        more = argc - 1 - i
        if eq(opt, b"idmp-duration") and more:
            if duration != -1:
                raise CommandError(ERR_DURATION_TWICE)
            duration = parse_ll(argv[i + 1])
            if not MIN_DURATION <= duration <= MAX_DURATION:
                raise CommandError(ERR_DURATION_RANGE)
        elif eq(opt, b"idmp-maxsize") and more:
            if maxsize != -1:
                raise CommandError(ERR_MAXSIZE_TWICE)
            maxsize = parse_ll(argv[i + 1])
            if not MIN_MAXSIZE <= maxsize <= MAX_MAXSIZE:
                raise CommandError(ERR_MAXSIZE_RANGE)
        else:
            raise CommandError(SYNTAX)
        i += 2
    if duration == -1 and maxsize == -1:
        raise CommandError(ERR_NO_PARAMETER)
    if stream.idmp.configure(duration if duration != -1 else None,
                             maxsize if maxsize != -1 else None):
        # Like Redis: no keyspace event and no signal (WATCH is not touched), but it is a
        # write that replays as it is.
        client.server.propagate(client.db, list(argv))
    return OK


@command("xidmprecord", 5, "write denyoom fast", keys=(1, 1, 1), categories=_W,
         summary="An internal command for setting IDMP metadata on an existing stream "
         "message.", since="8.6.2", group="stream")
def xidmprecord(client: Client, argv: list[bytes]) -> object:
    entry_id = parse_strict_id(argv[4])
    pid = argv[2]
    iid = argv[3]
    if not pid:
        raise CommandError(ERR_EMPTY_PID)
    if not iid:
        raise CommandError(ERR_EMPTY_IID)
    key = argv[1]
    stream = _stream_for_write(client, key)
    if stream.get(entry_id) is None:
        raise CommandError(ERR_NO_MESSAGE)
    found = stream.idmp.lookup_or_record(bytes(pid), bytes(iid), entry_id)
    if found == RECORD_CONFLICT:
        raise CommandError(ERR_IID_CONFLICT)
    if found == RECORD_NEW:
        track(client, key)
        client.server.propagate(client.db, list(argv))
    return OK
