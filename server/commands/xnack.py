"""XNACK key group SILENT|FAIL|FATAL IDS numids id... [RETRYCOUNT count] [FORCE] (Redis 8.8,
t_stream.c's xnackCommand): release pending entries back to the group without acknowledging
them; the reply is how many were released. See storage/consumer_group_nack.py for what
happens to them.

The options may come before or after the IDS block. The key and group are checked first
(NOGROUP, WRONGTYPE), then the mode, then the options, then every ID (all or nothing). The
error texts are Redis 8.8's, including those its source writes with an "ERR " of their own
(so the wire shows "ERR ERR ..."), see docs/compatibility.md. A command that released
something is propagated as it came and wakes the clients blocked with XREADGROUP CLAIM.
"""

from __future__ import annotations

from server.client import Client
from server.commands.group_common import nogroup_key_or_group
from server.commands.stream_args import lookup_stream, parse_ll, parse_strict_id
from server.dispatch import command
from server.errors import CommandError, client_text
from server.parsing import eq, is_canonical_int
from storage.consumer_group import lookup_group
from storage.consumer_group_nack import MODES

# "ERR " twice on the wire where Redis's source passes a text that starts with "ERR" to
# addReplyError (which adds its own).
ERR_MODE = "ERR ERR mode must be SILENT, FAIL, or FATAL"
ERR_NUMIDS = "ERR numids must be a positive integer"
ERR_NUMIDS_MISMATCH = "ERR ERR number of IDs doesn't match numids"
ERR_RETRYCOUNT = "ERR ERR Invalid RETRYCOUNT value, must be >= 0"
ERR_EXPECTED_IDS = "ERR ERR syntax error, expected IDS keyword"
_INT_MAX = 2**31 - 1


def _unrecognized(opt: bytes) -> CommandError:
    text = client_text(opt.split(b"\0", 1)[0])  # (a C string in Redis's message)
    return CommandError(f"ERR ERR Unrecognized XNACK option '{text}'")


@command("xnack", -7, "write fast", keys=(1, 1, 1), categories="@write @stream @fast",
         summary="Releases claimed messages back to the group's PEL without acknowledging "
         "them, making them available for re-delivery.", since="8.8.0", group="stream")
def xnack(client: Client, argv: list[bytes]) -> object:
    key, group_name = argv[1], argv[2]
    stream = lookup_stream(client, key)
    group = lookup_group(stream, group_name) if stream is not None else None
    if stream is None or group is None:
        raise nogroup_key_or_group(key, group_name)
    mode = MODES.get(argv[3].lower())
    if mode is None:
        raise CommandError(ERR_MODE)
    argc = len(argv)
    ids_start = numids = 0
    force = False
    retry_count = -1
    i = 4
    while i < argc:
        opt = argv[i]
        more = argc - 1 - i
        if eq(opt, b"ids") and more:
            arg = argv[i + 1]
            numids = int(arg) if is_canonical_int(arg) else 0
            if not 1 <= numids <= _INT_MAX:
                raise CommandError(ERR_NUMIDS)
            ids_start = i + 2
            if numids > argc - ids_start:
                raise CommandError(ERR_NUMIDS_MISMATCH)
            i = ids_start + numids - 1
        elif eq(opt, b"force"):
            force = True
        elif eq(opt, b"retrycount") and more:
            i += 1
            retry_count = parse_ll(argv[i])
            if retry_count < 0:
                raise CommandError(ERR_RETRYCOUNT)
        else:
            raise _unrecognized(opt)
        i += 1
    if not ids_start:
        raise CommandError(ERR_EXPECTED_IDS)
    ids = [parse_strict_id(arg) for arg in argv[ids_start:ids_start + numids]]
    released = group.nack(stream, ids, mode, retry_count, force)
    if released:
        server = client.server
        server.propagate(client.db, list(argv), released)
        # Released entries are claimable at once: wake XREADGROUP ... CLAIM waiters.
        server.signal_key_as_ready(client.db, key)
    return released
