"""Stream commands: XADD, XLEN, XRANGE, XREVRANGE, XDEL, XDELEX, XTRIM, XSETID (t_stream.c).
XREAD lives in xread.py, XINFO in xinfo.py, XCFGSET and XIDMPRECORD in xidmp.py; shared
parsing in stream_args.py. XADD ... IDMP pid iid / IDMPAUTO pid (Redis 8.6) answers a
producer's retry with the ID of the entry it already added."""

from __future__ import annotations

import time

from protocol.encoder import BULK_HEADERS, CRLF, EMPTY_ARRAY, NULL_ARRAY, OK
from server import notify
from server.client import Client
from server.commands import xinfo, xread  # noqa: F401 - register XREAD and XINFO
from server.commands.stream_args import (
    DEL_DELETED,
    TrimArgs,
    apply_trim,
    delete_with_policy,
    entries_reply,
    lookup_or_create,
    lookup_stream,
    node_limits,
    parse_del_args,
    parse_ll,
    parse_range,
    parse_strict_id,
    parse_trim_args,
    read_stream,
    trim_effect_args,
)
from server.commands.xidmp import expire_records, track
from server.dispatch import COMMANDS, CommandSpec, command
from server.errors import NO_SUCH_KEY, SYNTAX, CommandError, WrongTypeError, wrong_arity
from server.parsing import eq
from storage.idmp_hash import IdmpHashUnavailable, auto_iid
from storage.stream import MSG_EXHAUSTED, MSG_ID_ZERO, Stream, StreamError
from storage.stream_id import MAX_ID, format_id

_W = "@write @stream"
_R = "@read @stream"

ERR_SETID_SMALLER_MAXDEL = (
    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
)
ERR_SETID_SMALLER_CURRENT_MAXDEL = (
    "ERR The ID specified in XSETID is smaller than current max_deleted_entry_id"
)
ERR_SETID_SMALLER_TOP = "ERR The ID specified in XSETID is smaller than the target stream top item"
ERR_SETID_ENTRIES_ADDED = (
    "ERR The entries_added specified in XSETID is smaller than the target stream length"
)
ERR_ENTRIES_ADDED_NEGATIVE = "ERR entries_added must be positive"
ERR_IDMP_HASH = "ERR Failed to create idempotency hash"


class _MsText:
    """The decimal text of the last XADD * ID's milliseconds. Formatting a 13-digit int costs
    more than the rest of the reply; under load many IDs share a millisecond (bench/RESULTS.md:
    about 1.2% of an unpipelined XADD's instructions saved at 20 XADDs per ms)."""

    __slots__ = ("ms", "text")

    def __init__(self) -> None:
        self.ms = -1
        self.text = b""


_ms_text = _MsText()
_now_ns = time.time_ns
_SEQ_SUFFIX = [b"-%d" % seq for seq in range(256)]  # "-0" ... "-255"


@command("xadd", -5, "write denyoom fast", keys=(1, 1, 1), categories=f"{_W} @fast",
         summary="Appends a new message to a stream. Creates the key if it doesn't exist.",
         since="5.0.0", group="stream")
def xadd(client: Client, argv: list[bytes]) -> object:
    if argv[2] == b"*" and len(argv) & 1:
        # XADD key * field value ...: most XADDs. No option can follow the ID, so this is
        # the general path below for that form, without the parsing and the calls.
        key = argv[1]
        db = client.db
        stream = db.data.get(key) if not db.expires else db.peek(key)
        if stream is None:
            stream = Stream()
            db.add(key, stream)
        else:
            access = db.access  # Database.get's touch (the key's last access), inlined
            if access.touching and not access.lfu:
                stream.lru = access.lru_clock
            else:
                access.touch(stream)
            if type(stream) is not Stream:
                raise WrongTypeError()
        server = client.server
        try:  # (an exhausted stream raises MSG_EXHAUSTED here)
            if len(argv) == 5:
                new_id = stream.append_pair(argv[3], argv[4], server.command_time_ns // 1_000_000,
                                            server.stream_node_max_bytes,
                                            server.stream_node_max_entries)
            else:
                new_id = stream.append(argv[3:], None, True, server.command_time_ns // 1_000_000,
                                       server.stream_node_max_bytes,
                                       server.stream_node_max_entries)
        except StreamError as exc:
            raise CommandError(str(exc)) from None
        ms, seq = new_id  # format_id, with the milliseconds' text cached
        if ms != _ms_text.ms:
            _ms_text.ms = ms
            _ms_text.text = b"%d" % ms
        id_bytes = _ms_text.text + (_SEQ_SUFFIX[seq] if seq < 256 else b"-%d" % seq)
        if server.propagate_hooks:
            server.propagate(db, [b"XADD", key, id_bytes, *argv[3:]])
        else:
            server.dirty += 1  # all that propagate() does without an AOF
        if server.watched_keys or server.blocking.blocking_keys or server.tracking_active:
            server.key_changed(db, key)  # (key_changed's own tests, inlined)
        if server.notify_flags:
            server.notify(notify.STREAM, b"xadd", key, db.id)
        return id_bytes
    max_bytes, max_entries = node_limits(client)
    args = parse_trim_args(argv, True, max_entries, client.server.loading)
    field_pos = args.id_pos + 1
    nfields = len(argv) - field_pos
    if nfields < 2 or nfields & 1:
        raise wrong_arity("xadd")
    id_spec = args.id_spec
    if id_spec is not None and args.seq_given and id_spec == (0, 0):
        raise CommandError(MSG_ID_ZERO)  # before the key is created or type-checked
    key = argv[1]
    if args.nomkstream:
        stream = lookup_stream(client, key)
        if stream is None:
            return None
    else:
        stream = lookup_or_create(client, key)
    fields = argv[field_pos:]
    idmp = None
    if args.idmp_pid is not None:
        idmp = _idmp_key(args, fields)
        expire_records(client, stream)
        found = stream.idmp.duplicate(*idmp)
        if found is not None:
            # A retry: the original entry's ID, nothing added. Redis counts it a change and
            # propagates the command as it came (the replay finds the same record).
            client.server.propagate(client.db, list(argv))
            return format_id(found)
    if stream.last_id == MAX_ID:
        raise CommandError(MSG_EXHAUSTED)
    # (only * takes the command's time: an explicit ID, as every XADD the AOF replays, needs none)
    now_ms = client.server.command_time_ns // 1_000_000 if id_spec is None else None
    try:
        new_id = stream.append(fields, id_spec, args.seq_given, now_ms, max_bytes, max_entries)
    except StreamError as exc:
        raise CommandError(str(exc)) from None
    id_bytes = format_id(new_id)
    server = client.server
    db = client.db
    head = [b"XADD", key]
    if idmp is not None:
        stream.idmp.record(idmp[0], idmp[1], new_id)
        track(client, key)
        # Replayed with the ID it got (the AOF may give IDMP an explicit ID).
        head += ([b"IDMPAUTO", args.idmp_pid] if args.idmp_auto
                 else [b"IDMP", args.idmp_pid, args.idmp_iid])
    server.notify(notify.STREAM, b"xadd", key, db.id)
    if args.strategy is None:
        server.propagate(db, [*head, id_bytes, *fields])
    else:
        if apply_trim(stream, args):
            server.notify(notify.STREAM, b"xtrim", key, db.id)
        server.propagate(db, [*head, *trim_effect_args(stream, args), id_bytes, *fields])
    server.key_changed(db, key)  # WATCH, and wakes the clients blocked on the key
    return id_bytes


def xadd_pipelined(client: Client, spec: CommandSpec, commands: list[list[bytes]]) -> int:
    """run_commands' way for a pipeline of `XADD key * field value ...` to one stream (a
    producer's batch; the Spark sink writes this way): the key looked up once, then each
    entry appended, answered and timed as xadd's first branch does, and at the end the
    effects propagated together and the key signalled once (WATCH, blocked readers and
    tracking see one change as they would see several). Stops before the first command that
    is anything else (another key, an option, one whose append fails), which goes the usual
    way; 0 when the first one is.
    (commands[0] is known to be an XADD of the right arity, for a client that may run it.)
    Not with keyspace notifications, which come per command, nor in a database with keys
    that may expire."""
    argv = commands[0]
    if argv[2] != b"*" or not len(argv) & 1:
        return 0
    server = client.server
    db = client.db
    if server.notify_flags or db.expires:
        return 0
    key = argv[1]
    stream = db.data.get(key)
    if type(stream) is not Stream:  # (none yet: xadd creates it, and the next one comes here)
        return 0
    name = argv[0]
    access = db.access
    # Database.get's touch, as xadd makes it: the LRU clock does not move during the run, so
    # once does for all; LFU counts each access.
    lfu = not access.touching or access.lfu
    if not lfu:
        stream.lru = access.lru_clock
    max_bytes = server.stream_node_max_bytes
    max_entries = server.stream_node_max_entries
    # The effects, propagated together at the end (Server.propagate_run) when anyone
    # listens: XADD with each entry's ID.
    effects: list[list[bytes]] | None = [] if server.propagate_hooks else None
    recent = spec.recent  # (command_stats.py)
    notable_us = server.notable_us
    out = client.out
    end = len(commands)
    j = 0
    # One clock reading a command: where one ends the next starts (its time, and the end of
    # the duration its statistics count).
    now = _now_ns()
    # Entries go into the tail node through the stream's appender (its counters kept in
    # the closure until done()); where it declines (a new node, say), append() takes over,
    # its counters written back first, and a new appender follows. The appender's run() is
    # this loop in C: it takes the commands it can, and the loop's body below takes the one
    # it stops before (or ends the run there). Not with LFU, which counts each access.
    appender = stream.tail_appender(max_bytes, max_entries)
    add, done, run = appender if appender is not None else (None, None, None)
    try:
        while j < end:
            if run is not None and not lfu:
                j, now, start, slow_us, slow_id = run(commands, j, key, name, now, _now_ns,
                                                      recent, notable_us, effects, out)
                server.command_time_ns = start
                if slow_id is not None:
                    server.note_slow_command(client, spec, commands[j - 1], slow_us, slow_id)
                    continue
                if j == end:
                    break
            argv = commands[j]
            argc = len(argv)
            if (argc < 5 or not argc & 1 or argv[2] != b"*" or argv[1] != key
                    or argv[0] != name):
                break
            start = server.command_time_ns = now
            if lfu:
                access.touch(stream)
            new_id = None if add is None else add(argv[3:], start // 1_000_000)
            if new_id is None:
                if done is not None:
                    done()
                    add = done = None
                try:
                    if argc == 5:
                        new_id = stream.append_pair(argv[3], argv[4], start // 1_000_000,
                                                    max_bytes, max_entries)
                    else:
                        new_id = stream.append(argv[3:], None, True, start // 1_000_000,
                                               max_bytes, max_entries)
                except Exception:  # (StreamError before any change: xadd gives the error)
                    break
                appender = stream.tail_appender(max_bytes, max_entries)
                if appender is not None:
                    add, done, run = appender
            ms, seq = new_id
            if ms != _ms_text.ms:
                _ms_text.ms = ms
                _ms_text.text = b"%d" % ms
            id_bytes = _ms_text.text + (_SEQ_SUFFIX[seq] if seq < 256 else b"-%d" % seq)
            if effects is not None:
                effects.append([b"XADD", key, id_bytes, *argv[3:]])
            out.append(BULK_HEADERS[len(id_bytes)] + id_bytes + CRLF)
            now = _now_ns()
            elapsed_us = (now - start) // 1000
            recent.append(elapsed_us)
            if elapsed_us >= notable_us:
                server.note_slow_command(client, spec, argv, elapsed_us, id_bytes)
            j += 1
    finally:
        if done is not None:
            done()
        if effects:
            server.propagate_run(db, effects)
    if j:
        if effects is None:
            server.dirty += j  # (all that propagate() does without an AOF or replicas)
        client.last_cmd = spec.fullname_bytes
        if server.watched_keys or server.blocking.blocking_keys or server.tracking_active:
            server.key_changed(db, key)
    return j


COMMANDS[b"xadd"].pipelined = xadd_pipelined


def _idmp_key(args: TrimArgs, fields: list[bytes]) -> tuple[bytes, bytes]:
    """(pid, iid) of an XADD IDMP / IDMPAUTO: IDMPAUTO's iid is the hash of the pairs."""
    pid = bytes(args.idmp_pid)  # type: ignore[arg-type]
    if not args.idmp_auto:
        return pid, bytes(args.idmp_iid)  # type: ignore[arg-type]
    try:
        return pid, auto_iid(fields)
    except IdmpHashUnavailable:
        raise CommandError(ERR_IDMP_HASH) from None


@command("xlen", 2, "readonly fast", keys=(1, 1, 1), categories=f"{_R} @fast",
         summary="Return the number of messages in a stream.", since="5.0.0", group="stream")
def xlen(client: Client, argv: list[bytes]) -> object:
    stream = read_stream(client, argv[1])
    return 0 if stream is None else stream.length


def _xrange(client: Client, argv: list[bytes], rev: bool) -> object:
    start, end = parse_range(argv[3], argv[2]) if rev else parse_range(argv[2], argv[3])
    count = -1
    argc = len(argv)
    j = 4
    while j < argc:
        if eq(argv[j], b"count") and j + 1 < argc:
            count = parse_ll(argv[j + 1])
            if count < 0:
                count = 0
            j += 2
        else:
            raise CommandError(SYNTAX)
    stream = read_stream(client, argv[1])
    if stream is None:
        return EMPTY_ARRAY
    if count == 0:
        return NULL_ARRAY
    served = stream.range_resp(start, end, max(count, 0), rev)
    if served is None:
        return stream.range_reply(start, end, max(count, 0), rev)
    return entries_reply(*served)


@command("xrange", -4, "readonly", keys=(1, 1, 1), categories=f"{_R} @slow",
         summary="Returns the messages from a stream within a range of IDs.", since="5.0.0",
         group="stream")
def xrange(client: Client, argv: list[bytes]) -> object:
    return _xrange(client, argv, False)


@command("xrevrange", -4, "readonly", keys=(1, 1, 1), categories=f"{_R} @slow",
         summary="Returns the messages from a stream within a range of IDs in reverse order.",
         since="5.0.0", group="stream")
def xrevrange(client: Client, argv: list[bytes]) -> object:
    return _xrange(client, argv, True)


@command("xdel", -3, "write fast", keys=(1, 1, 1), categories=f"{_W} @fast",
         summary="Returns the number of messages after removing them from a stream.",
         since="5.0.0", group="stream")
def xdel(client: Client, argv: list[bytes]) -> object:
    key = argv[1]
    stream = lookup_stream(client, key)
    if stream is None:
        return 0
    ids = [parse_strict_id(arg) for arg in argv[2:]]  # all or nothing
    deleted = 0
    for entry_id in ids:
        if stream.delete(entry_id):
            deleted += 1
    if deleted:
        client.server.signal_modified_key(client.db, key)
        client.server.notify(notify.STREAM, b"xdel", key, client.db.id)
        client.server.propagate(client.db, list(argv), deleted)
    return deleted


@command("xdelex", -5, "write fast", keys=(1, 1, 1), categories=f"{_W} @fast",
         summary="Deletes one or multiple entries from the stream.", since="8.2.0",
         group="stream")
def xdelex(client: Client, argv: list[bytes]) -> object:
    policy, ids = parse_del_args(argv, 2)
    key = argv[1]
    stream = lookup_stream(client, key)
    if stream is None:
        return [-1] * len(ids)
    results = [delete_with_policy(stream, entry_id, policy) for entry_id in ids]
    if DEL_DELETED in results or policy != "keepref" and stream.cgroups is not None:
        client.server.signal_modified_key(client.db, key)
        client.server.propagate(client.db, list(argv))
    return results


@command("xtrim", -4, "write", keys=(1, 1, 1), categories=f"{_W} @slow",
         summary="Deletes messages from the beginning of a stream.", since="5.0.0",
         group="stream")
def xtrim(client: Client, argv: list[bytes]) -> object:
    _, max_entries = node_limits(client)
    args = parse_trim_args(argv, False, max_entries)
    key = argv[1]
    stream = lookup_stream(client, key)
    if stream is None:
        return 0
    removed = apply_trim(stream, args)
    if removed:
        client.server.signal_modified_key(client.db, key)
        client.server.notify(notify.STREAM, b"xtrim", key, client.db.id)
        client.server.propagate(client.db, [b"XTRIM", key, *trim_effect_args(stream, args)],
                                removed)
    return removed


@command("xsetid", -3, "write denyoom fast", keys=(1, 1, 1), categories=f"{_W} @fast",
         summary="An internal command for replicating stream values.", since="5.0.0",
         group="stream")
def xsetid(client: Client, argv: list[bytes]) -> object:
    new_id = parse_strict_id(argv[2])
    entries_added = -1
    max_deleted = (0, 0)
    argc = len(argv)
    i = 3
    while i < argc:
        more = argc - 1 - i
        if eq(argv[i], b"entriesadded") and more:
            entries_added = parse_ll(argv[i + 1])
            if entries_added < 0:
                raise CommandError(ERR_ENTRIES_ADDED_NEGATIVE)
        elif eq(argv[i], b"maxdeletedid") and more:
            max_deleted = parse_strict_id(argv[i + 1])
            if new_id < max_deleted:
                raise CommandError(ERR_SETID_SMALLER_MAXDEL)
        else:
            raise CommandError(SYNTAX)
        i += 2
    key = argv[1]
    stream = lookup_stream(client, key)
    if stream is None:
        raise CommandError(NO_SUCH_KEY)
    if new_id < stream.max_deleted_entry_id:
        raise CommandError(ERR_SETID_SMALLER_CURRENT_MAXDEL)
    if stream.length:
        top = stream.last_entry_id()
        if top is not None and new_id < top:
            raise CommandError(ERR_SETID_SMALLER_TOP)
        if entries_added != -1 and stream.length > entries_added:
            raise CommandError(ERR_SETID_ENTRIES_ADDED)
    stream.set_id(new_id, entries_added if entries_added != -1 else None,
                  max_deleted if max_deleted != (0, 0) else None)
    # Like Redis, no signalModifiedKey: the entries are unchanged, so WATCH is not touched.
    client.server.notify(notify.STREAM, b"xsetid", key, client.db.id)
    client.server.propagate(client.db, list(argv))
    return OK
