"""Consumer-group commands: XGROUP (CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER,
HELP), XACK and XACKDEL; this module also wires the groups into the stream commands
(DELREF/ACKED reference hooks, the groups of XINFO STREAM FULL) and imports the other
group families: xreadgroup.py, xclaim.py (XCLAIM, XAUTOCLAIM), xnack.py, xpending.py,
xinfo_groups.py.
"""

from __future__ import annotations

from protocol.encoder import OK
from server import notify
from server.client import Client
from server.commands import xclaim, xinfo_groups, xnack, xpending, xreadgroup  # noqa: F401
from server.commands.group_common import nogroup_for_key, now_ms
from server.commands.help import help_reply
from server.commands.stream_args import (
    ACKED,
    DEL_NO_ID,
    DEL_REFERENCED,
    DELREF,
    lookup_stream,
    parse_del_args,
    parse_ll,
    parse_loose_id,
    parse_strict_id,
    parse_strict_id_keys,
    read_stream,
    register_ref_hooks,
)
from server.dispatch import command, container
from server.errors import CommandError, subcommand_syntax_error
from server.parsing import eq
from storage.consumer_group import (
    INVALID_ENTRIES_READ,
    create_group,
    destroy_group,
    entry_referenced,
    lookup_group,
    remove_references,
)
from storage.stream import Stream
from storage.stream_id import StreamID

_W = "@write @stream"

ERR_KEY_REQUIRED = (
    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to "
    "use the MKSTREAM option to create an empty stream automatically."
)
ERR_ENTRIES_READ = "ERR value for ENTRIESREAD must be positive or -1"
ERR_BUSYGROUP = "BUSYGROUP Consumer Group name already exists"


class _GroupRefs:
    """The RefHooks of stream_args: how DELREF and ACKED see the groups."""

    @staticmethod
    def is_referenced(stream: Stream, entry_id: StreamID) -> bool:
        return entry_referenced(stream, entry_id)

    @staticmethod
    def drop_refs(stream: Stream, entry_id: StreamID) -> bool:
        return remove_references(stream, entry_id) > 0


register_ref_hooks(_GroupRefs())


# -- XGROUP ---------------------------------------------------------------------------------


def _prepare(client: Client, argv: list[bytes], sub: bytes) -> tuple[Stream | None, int, bool]:
    """What xgroupCommand does before dispatching: parse CREATE/SETID options, look the key
    up and check it exists (unless MKSTREAM) and, for the subcommands needing one, that the
    group exists. Returns (stream or None, entries_read, mkstream)."""
    create = sub == b"create"
    setid = sub == b"setid"
    mkstream = False
    entries_read = INVALID_ENTRIES_READ
    argc = len(argv)
    i = 5
    while i < argc:
        if create and eq(argv[i], b"mkstream"):
            mkstream = True
            i += 1
        elif (create or setid) and eq(argv[i], b"entriesread") and i + 1 < argc:
            entries_read = parse_ll(argv[i + 1])
            if entries_read < 0 and entries_read != INVALID_ENTRIES_READ:
                raise CommandError(ERR_ENTRIES_READ)
            i += 2
        else:
            raise subcommand_syntax_error(argv)
    key = argv[2]
    stream = lookup_stream(client, key)
    if not mkstream:
        if stream is None:
            raise CommandError(ERR_KEY_REQUIRED)
        if sub != b"create" and sub != b"destroy" and lookup_group(stream, argv[3]) is None:
            raise nogroup_for_key(key, argv[3])
    return stream, entries_read, mkstream


container("xgroup", -2, summary="A container for consumer groups commands.", since="5.0.0",
          group="stream")


@command("xgroup|create", -5, "write denyoom", keys=(2, 2, 1), categories=f"{_W} @slow",
         summary="Creates a consumer group.", since="5.0.0", group="stream")
def xgroup_create(client: Client, argv: list[bytes]) -> object:
    stream, entries_read, _ = _prepare(client, argv, b"create")
    if len(argv) > 8:
        raise subcommand_syntax_error(argv)
    key = argv[2]
    if argv[4] == b"$":
        last_id = stream.last_id if stream is not None else (0, 0)
    else:
        last_id = parse_strict_id(argv[4])
    server = client.server
    if stream is None:  # MKSTREAM, now that nothing can fail
        stream = Stream()
        client.db.add(key, stream)
        server.signal_modified_key(client.db, key)
    if create_group(stream, argv[3], last_id, entries_read) is None:
        raise CommandError(ERR_BUSYGROUP)
    server.notify(notify.STREAM, b"xgroup-create", key, client.db.id)
    server.propagate(client.db, list(argv))
    return OK


@command("xgroup|setid", -5, "write", keys=(2, 2, 1), categories=f"{_W} @slow",
         summary="Sets the last-delivered ID of a consumer group.", since="5.0.0",
         group="stream")
def xgroup_setid(client: Client, argv: list[bytes]) -> object:
    stream, entries_read, _ = _prepare(client, argv, b"setid")
    if len(argv) not in (5, 7):
        raise subcommand_syntax_error(argv)
    assert stream is not None
    group = lookup_group(stream, argv[3])
    assert group is not None
    last_id = stream.last_id if argv[4] == b"$" else parse_loose_id(argv[4])
    group.set_id(stream, last_id, entries_read)
    client.server.notify(notify.STREAM, b"xgroup-setid", argv[2], client.db.id)
    client.server.propagate(client.db, list(argv))
    return OK


@command("xgroup|destroy", 4, "write", keys=(2, 2, 1), categories=f"{_W} @slow",
         summary="Destroys a consumer group.", since="5.0.0", group="stream")
def xgroup_destroy(client: Client, argv: list[bytes]) -> object:
    stream, _, _ = _prepare(client, argv, b"destroy")
    assert stream is not None
    if not destroy_group(stream, argv[3]):
        return 0
    server = client.server
    server.notify(notify.STREAM, b"xgroup-destroy", argv[2], client.db.id)
    server.propagate(client.db, list(argv))
    # The clients blocked in XREADGROUP on this group re-run and answer NOGROUP.
    server.signal_key_as_ready(client.db, argv[2])
    return 1


@command("xgroup|createconsumer", 5, "write denyoom", keys=(2, 2, 1),
         categories=f"{_W} @slow", summary="Creates a consumer in a consumer group.",
         since="6.2.0", group="stream")
def xgroup_createconsumer(client: Client, argv: list[bytes]) -> object:
    stream, _, _ = _prepare(client, argv, b"createconsumer")
    assert stream is not None
    group = lookup_group(stream, argv[3])
    assert group is not None
    if group.create_consumer(argv[4], now_ms()) is None:
        return 0
    client.server.notify(notify.STREAM, b"xgroup-createconsumer", argv[2], client.db.id)
    client.server.propagate(client.db, list(argv))
    return 1


@command("xgroup|delconsumer", 5, "write", keys=(2, 2, 1), categories=f"{_W} @slow",
         summary="Deletes a consumer from a consumer group.", since="5.0.0", group="stream")
def xgroup_delconsumer(client: Client, argv: list[bytes]) -> object:
    stream, _, _ = _prepare(client, argv, b"delconsumer")
    assert stream is not None
    group = lookup_group(stream, argv[3])
    assert group is not None
    pending = group.delete_consumer(stream, argv[4])
    if pending is None:
        return 0
    client.server.notify(notify.STREAM, b"xgroup-delconsumer", argv[2], client.db.id)
    client.server.propagate(client.db, list(argv))
    return pending


@command("xgroup|help", 2, "loading stale", categories="@stream @slow",
         summary="Returns helpful text about the different subcommands.", since="5.0.0",
         group="stream")
def xgroup_help(client: Client, argv: list[bytes]) -> object:
    return help_reply("XGROUP", [
        "CREATE <key> <groupname> <id|$> [option]",
        "    Create a new consumer group. Options are:",
        "    * MKSTREAM",
        "      Create the empty stream if it does not exist.",
        "    * ENTRIESREAD entries_read",
        "      Set the group's entries_read counter (internal use).",
        "CREATECONSUMER <key> <groupname> <consumer>",
        "    Create a new consumer in the specified group.",
        "DELCONSUMER <key> <groupname> <consumer>",
        "    Remove the specified consumer.",
        "DESTROY <key> <groupname>",
        "    Remove the specified group.",
        "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        "    Set the current group ID and entries_read counter.",
    ])


# -- XACK / XACKDEL -------------------------------------------------------------------------


@command("xack", -4, "write fast", keys=(1, 1, 1), categories=f"{_W} @fast",
         summary="Returns the number of messages that were successfully acknowledged by the "
         "consumer group member of a stream.", since="5.0.0", group="stream")
def xack(client: Client, argv: list[bytes]) -> object:
    stream = read_stream(client, argv[1])  # (a read lookup in Redis, for XACK and XACKDEL)
    group = lookup_group(stream, argv[2]) if stream is not None else None
    if stream is None or group is None:
        return 0  # nothing to acknowledge
    keys = parse_strict_id_keys(argv[3:])  # all or nothing
    acked = group.ack_keys(stream, keys)
    if acked:
        client.server.propagate(client.db, list(argv), acked)
    return acked


@command("xackdel", -6, "write fast", keys=(1, 1, 1), categories=f"{_W} @fast",
         summary="Acknowledges and conditionally deletes one or multiple entries for a stream "
         "consumer group.", since="8.2.0", group="stream")
def xackdel(client: Client, argv: list[bytes]) -> object:
    policy, ids = parse_del_args(argv, 3)
    key = argv[1]
    stream = read_stream(client, key)
    group = lookup_group(stream, argv[2]) if stream is not None else None
    if stream is None or group is None:
        return [DEL_NO_ID] * len(ids)
    results: list[int] = []
    deleted = False
    for entry_id in ids:
        if group.remove_pending(stream, entry_id) is None:
            results.append(DEL_NO_ID)
            continue
        if policy == ACKED and entry_referenced(stream, entry_id):
            results.append(DEL_REFERENCED)
            continue
        if policy == DELREF:
            remove_references(stream, entry_id)
        if stream.delete(entry_id):
            deleted = True
        results.append(1)  # acknowledged, and gone from the stream
    if len(results) > results.count(DEL_NO_ID):
        server = client.server
        if deleted:
            server.signal_modified_key(client.db, key)
        server.propagate(client.db, list(argv))
    return results
