"""XINFO STREAM key [FULL [COUNT n]] and XINFO HELP.

The consumer-group module adds `xinfo|groups` and `xinfo|consumers` itself (the container is
registered here) and fills the `groups` part of XINFO STREAM FULL through
`register_full_groups_hook`.
"""

from __future__ import annotations

from collections.abc import Callable

from server.client import Client
from server.commands.help import help_reply
from server.commands.stream_args import (
    format_entry,
    parse_ll,
    read_stream,
)
from server.commands.xidmp import expire_records
from server.dispatch import command, container
from server.errors import NO_SUCH_KEY, CommandError, subcommand_syntax_error
from server.parsing import eq
from storage.stream import Stream
from storage.stream_id import MAX_ID, MIN_ID, format_id

# (client, stream, count) -> the list of group descriptions for XINFO STREAM FULL, where
# count (0 = all) bounds the PEL entries shown per group and per consumer.
FullGroupsHook = Callable[[Client, Stream, int], list]

_full_groups_hook: FullGroupsHook | None = None


def register_full_groups_hook(hook: FullGroupsHook | None) -> None:
    """Install the function that describes a stream's groups in XINFO STREAM FULL."""
    global _full_groups_hook
    _full_groups_hook = hook


container("xinfo", -2, summary="A container for stream introspection commands.",
          since="5.0.0", group="stream")


@command("xinfo|stream", -3, "readonly", keys=(2, 2, 1), categories="@read @stream @slow",
         summary="Returns information about a stream.", since="5.0.0", group="stream")
def xinfo_stream(client: Client, argv: list[bytes]) -> object:
    stream = read_stream(client, argv[2])
    if stream is None:
        raise CommandError(NO_SUCH_KEY)
    argc = len(argv)
    full = False
    count = 10
    if argc > 3:
        if not eq(argv[3], b"full"):
            raise subcommand_syntax_error(argv)
        full = True
        if argc == 6 and eq(argv[4], b"count"):
            count = parse_ll(argv[5])
            if count < 0:
                count = 10  # as Redis: a negative COUNT is the default, 0 is everything
        elif argc != 4:
            raise subcommand_syntax_error(argv)
    info: dict[bytes, object] = {
        b"length": stream.length,
        b"radix-tree-keys": stream.node_count(),
        b"radix-tree-nodes": stream.rax_node_count(),
        b"last-generated-id": format_id(stream.last_id),
        b"max-deleted-entry-id": format_id(stream.max_deleted_entry_id),
        b"entries-added": stream.entries_added,
        b"recorded-first-entry-id": format_id(stream.first_id),
    }
    # Redis 8.6: the idempotent-production limits and counters (expired records dropped first).
    expire_records(client, stream)
    idmp = stream.idmp
    info[b"idmp-duration"] = idmp.duration
    info[b"idmp-maxsize"] = idmp.maxsize
    info[b"pids-tracked"] = idmp.pids_tracked
    info[b"iids-tracked"] = idmp.iids_tracked
    info[b"iids-added"] = idmp.iids_added
    info[b"iids-duplicates"] = idmp.iids_duplicates
    if not full:
        info[b"groups"] = len(stream.cgroups) if stream.cgroups is not None else 0
        first = stream.range(MIN_ID, MAX_ID, 1)
        last = stream.range(MIN_ID, MAX_ID, 1, rev=True)
        info[b"first-entry"] = format_entry(first[0]) if first else None
        info[b"last-entry"] = format_entry(last[0]) if last else None
        return info
    info[b"entries"] = stream.range_reply(MIN_ID, MAX_ID, count)
    hook = _full_groups_hook
    info[b"groups"] = hook(client, stream, count) if hook is not None and stream.cgroups else []
    return info


@command("xinfo|help", 2, "loading stale", categories="@stream @slow",
         summary="Returns helpful text about the different subcommands.", since="5.0.0",
         group="stream")
def xinfo_help(client: Client, argv: list[bytes]) -> object:
    return help_reply("XINFO", [
        "CONSUMERS <key> <groupname>",
        "    Show consumers of <groupname>.",
        "GROUPS <key>",
        "    Show the stream consumer groups.",
        "STREAM <key> [FULL [COUNT <count>]",
        "    Show information about the stream.",
    ])
