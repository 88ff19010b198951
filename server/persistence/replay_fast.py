"""The AOF replay's way for the command that makes up most of a file: XADD as it is propagated,
`XADD key ms-seq field value ...`, to a stream that exists; and for runs of them to one stream
(a producer's pipeline, as an AOF holds it), whose entries go into the tail node by one C loop
(Stream.tail_appender's run()).

It does what the xadd handler's general path does for that form (the command time, the stream
append, the notification, propagation and the dirty counter, the key's signals), without re-
parsing the options a propagated XADD never has; as every replayed command
(dispatch.execute_loaded), without the refusal checks and statistics of a client's command.
Anything else (no such key or another type, options, an ID that is not above the stream's last
one, a client in MULTI, ...) returns False untouched, and the command goes the way of every
other, which also gives it its error."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from server import notify
from storage.stream import Stream
from storage.stream_id import (
    MAX_ID,
    UINT64_MAX,
    InvalidStreamID,
    format_id,
    parse_xadd_id,
)

if TYPE_CHECKING:
    from server.client import Client

def replay_xadd(client: Client, argv: list[bytes]) -> bool:
    """Run a propagated XADD (argv has at least the arity's five arguments); False when
    it is not one this way takes, with nothing done."""
    arg = argv[2]
    if not arg[:1].isdigit() or len(argv) & 1 == 0 or client.multi is not None:
        return False  # (an option, or a field without its value: the handler's errors)
    server = client.server
    if client.checked_path:
        return False
    ms_part, sep, seq_part = arg.partition(b"-")
    if (sep and ms_part.isdigit() and seq_part.isdigit() and len(ms_part) <= 20
            and len(seq_part) <= 20):  # ms-seq, as XADD is propagated: parse_xadd_id's answer
        new = (int(ms_part), int(seq_part))
        if new[0] > UINT64_MAX or new[1] > UINT64_MAX:
            return False
        seq_given = True
    else:
        try:
            new, seq_given = parse_xadd_id(arg)
        except InvalidStreamID:
            return False
    db = client.db
    stream = db.data.get(argv[1])
    if (not seq_given or new is None or new == (0, 0) or type(stream) is not Stream
            or db.expires or stream.last_id == MAX_ID or new <= stream.last_id):
        return False
    server.command_time_ns = time.time_ns()
    key = argv[1]
    access = db.access  # Database.get's touch of the key's access time, inlined
    if access.touching and not access.lfu:
        stream.lru = access.lru_clock
    else:
        access.touch(stream)
    fields = argv[3:]
    stream.append(fields, new, True, None, server.stream_node_max_bytes,
                  server.stream_node_max_entries)
    if server.notify_flags:
        server.notify(notify.STREAM, b"xadd", key, db.id)
    if server.propagate_hooks or server.propagate_batch is not None:
        server.propagate(db, [b"XADD", key, format_id(new), *fields])
    else:
        server.dirty += 1  # (all that propagate() does then)
    if server.watched_keys or server.blocking.blocking_keys or server.tracking_active:
        server.key_changed(db, key)  # (key_changed's own tests, inlined)
    return True


def replay_xadd_run(client: Client, commands: list[list[bytes]], j: int) -> int:
    """Run the propagated XADDs from commands[j] on that go to the same stream, as
    replay_xadd runs each, in one C loop; how many it took. 0 (nothing done) when there is no
    run: the next command is not an XADD to the same key, the first is not one this way takes
    (as replay_xadd's conditions), or the C loop was not built. Not with keyspace
    notifications (per command) or LFU (which counts each access)."""
    argv = commands[j]
    nxt = commands[j + 1] if j + 1 < len(commands) else None
    if (nxt is None or len(nxt) < 2 or nxt[1] != argv[1] or nxt[0] != argv[0]
            or client.multi is not None or client.checked_path):
        return 0
    server = client.server
    db = client.db
    key = argv[1]
    stream = db.data.get(key)
    access = db.access
    if type(stream) is not Stream or db.expires or server.notify_flags or access.lfu:
        return 0
    appender = stream.tail_appender(server.stream_node_max_bytes,
                                    server.stream_node_max_entries)
    if appender is None or appender[2] is None:
        return 0
    _, done, run = appender
    assert run is not None
    effects: list[list[bytes]] | None = (
        [] if server.propagate_hooks or server.propagate_batch is not None else None)
    server.command_time_ns = time.time_ns()
    try:
        end = run(commands, j, key, argv[0], 0, None, None, 0, effects, None)[0]
    finally:
        done()
    taken = end - j
    if taken:
        if access.touching:  # (Database.get's touch: the LRU clock, once for all)
            stream.lru = access.lru_clock
        if effects is None:
            server.dirty += taken  # (all that propagate() does then)
        else:
            server.propagate_run(db, effects)
        if server.watched_keys or server.blocking.blocking_keys or server.tracking_active:
            server.key_changed(db, key)
    return taken
