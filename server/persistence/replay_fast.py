"""The AOF replay's way for the command that makes up most of a file: XADD as it is propagated,
`XADD key ms-seq field value ...`, to a stream that exists.

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
