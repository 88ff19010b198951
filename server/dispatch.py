"""The command table and the way a command is run: lookup, arity, auth, MULTI queueing,
limits, the handler, statistics.

Handlers have the signature `handler(client, argv) -> reply value` (see protocol.encoder) and
raise server.errors.CommandError for error replies. A handler that must wait for data returns
a server.blocking.BlockRequest.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from protocol.encoder import BULK_HEADERS, CRLF, ErrorReply, Raw, encode_into
from server import command_stats
from server.block_request import POSTPONE, BlockRequest
from server.client import REPLY_MUTED
from server.errors import (
    OOM_TEXT,
    CommandError,
    unknown_command,
    unknown_subcommand,
    wrong_arity,
)
from storage.cold.node import ColdDataError

if TYPE_CHECKING:
    from server.app import Server
    from server.client import Client

Handler = Callable[["Client", list[bytes]], Any]

# The wall clock, read when a command starts and when it ends: the start is the command's
# time (Redis's commandTimeSnapshot, Server.command_time_ns: XADD's * takes its milliseconds),
# and the difference its duration, as in Redis's call() without a hardware monotonic clock.
# (A clock stepped back gives a negative duration: command_stats counts it as 0.)
_now_ns = time.time_ns
# The recent durations call() lets a command keep before counting them (command_stats.fold):
# the cron folds them ten times a second, but a script may run millions of commands first.
_FOLD_AT = 4096
QUEUED = Raw(b"+QUEUED\r\n")
NO_REPLY = Raw(b"")  # a handler's reply when the client must get nothing (SHUTDOWN)

# Commands allowed before AUTH when a password is set.
_NO_AUTH = frozenset({b"auth", b"hello", b"quit", b"reset"})
# Commands run at once even inside MULTI.
_MULTI_IMMEDIATE = frozenset({b"exec", b"discard", b"multi", b"watch", b"quit", b"reset"})
_OOM_IN_MULTI_OK = frozenset({b"exec", b"discard", b"quit", b"reset"})
# What a RESP2 client in Pub/Sub mode may run.
_PUBSUB_CONTEXT_OK = frozenset({"ping", "subscribe", "ssubscribe", "unsubscribe", "sunsubscribe",
                                "psubscribe", "punsubscribe", "quit", "reset"})


@dataclass(slots=True)
class CommandSpec:
    """A command (or a subcommand) as COMMAND INFO describes it."""

    name: str
    arity: int
    flags: tuple[str, ...]
    handler: Handler | None
    first_key: int = 0
    last_key: int = 0
    step: int = 0
    categories: tuple[str, ...] = ()
    summary: str = ""
    since: str = "1.0.0"
    group: str = "generic"
    tips: tuple[str, ...] = ()
    subcommands: dict[bytes, CommandSpec] = field(default_factory=dict)
    parent: CommandSpec | None = None
    # Keys found after a keyword (XREAD/XREADGROUP's STREAMS): half of what follows it.
    key_keyword: str | None = None
    fullname_bytes: bytes = b""  # "client|list", cached for CLIENT LIST's cmd= field
    # Statistics: completed calls by duration in whole microseconds, behind calls, usec and
    # the latency histograms (server/command_stats.py), and latency-tracking's bookkeeping.
    # A call appends its duration to `recent` (one list append); command_stats folds them
    # into `durations` before any reading, and the cron ten times a second.
    durations: dict[int, int] = field(default_factory=dict)
    recent: list[int] = field(default_factory=list)
    untracked: dict[int, int] = field(default_factory=dict)
    off_base: dict[int, int] | None = None
    rejected_calls: int = 0
    failed_calls: int = 0
    is_write: bool = False
    denyoom: bool = False
    may_refuse: bool = False  # is_write or denyoom: OOM / MISCONF may refuse it
    # Inside MULTI it is queued, not run (not EXEC, DISCARD, MULTI, WATCH, QUIT or RESET),
    # and may be (not no-multi): run_commands queues it without _checked's steps.
    queues_plainly: bool = False
    # A readonly command (not Pub/Sub's): a tracking client's read of its keys is remembered
    # for client-side caching (server/tracking.py).
    tracks_reads: bool = False
    allow_busy: bool = False  # runs while a script is busy (CMD_ALLOW_BUSY)
    # run_commands' way for a read that starts with a run of this command (a pipeline):
    # pipelined(client, spec, commands) runs commands[0] and as many of those after it as it
    # takes the same way, each with its reply in client.out and its statistics, and returns
    # how many it ran (0: none; they then go the usual way). It is asked only where nothing
    # would differ per command: the fast path's conditions, no MONITOR, no CLIENT REPLY
    # setting.
    pipelined: Callable[[Client, CommandSpec, list[list[bytes]]], int] | None = None

    def __post_init__(self) -> None:
        self.may_refuse = self.is_write or self.denyoom
        self.allow_busy = "allow-busy" in self.flags
        self.queues_plainly = (self.name.encode() not in _MULTI_IMMEDIATE
                               and "no-multi" not in self.flags)
        # (EVAL_RO's keys are tracked by the script's reads: server/commands/script_cmds.py)
        self.tracks_reads = ("readonly" in self.flags and "pubsub" not in self.flags
                             and self.name not in ("eval_ro", "evalsha_ro"))

    @property
    def calls(self) -> int:
        return command_stats.calls(self)

    @property
    def usec(self) -> int:
        return command_stats.usec(self)

    @property
    def fullname(self) -> str:
        return f"{self.parent.name}|{self.name}" if self.parent else self.name

    def arity_ok(self, argc: int) -> bool:
        return argc == self.arity if self.arity >= 0 else argc >= -self.arity


COMMANDS: dict[bytes, CommandSpec] = {}


def command(
    name: str,
    arity: int,
    flags: str = "",
    keys: tuple[int, int, int] = (0, 0, 0),
    categories: str = "",
    summary: str = "",
    since: str = "1.0.0",
    group: str = "generic",
    tips: str = "",
    key_keyword: str | None = None,
) -> Callable[[Handler], Handler]:
    """Register a handler. For a subcommand use name 'container|sub' (the container is
    registered first with handler=None via `container`)."""

    def decorate(handler: Handler) -> Handler:
        flag_tuple = tuple(flags.split())
        spec = CommandSpec(
            name=name.split("|")[-1].lower(), arity=arity, flags=flag_tuple, handler=handler,
            first_key=keys[0], last_key=keys[1], step=keys[2],
            categories=tuple(categories.split()), summary=summary, since=since, group=group,
            tips=tuple(tips.split()), is_write="write" in flag_tuple,
            denyoom="denyoom" in flag_tuple, key_keyword=key_keyword,
        )
        if "|" in name:
            parent_name = name.split("|")[0].lower().encode()
            parent = COMMANDS[parent_name]
            spec.parent = parent
            parent.subcommands[spec.name.encode()] = spec
        else:
            COMMANDS[spec.name.encode()] = spec
        spec.fullname_bytes = spec.fullname.encode()
        return handler

    return decorate


def container(name: str, arity: int = -2, flags: str = "", summary: str = "",
              since: str = "1.0.0", group: str = "generic") -> CommandSpec:
    """Register a command whose real work is done by subcommands (CLIENT, CONFIG, XINFO...)."""
    spec = CommandSpec(name=name.lower(), arity=arity, flags=tuple(flags.split()), handler=None,
                       summary=summary, since=since, group=group)
    spec.fullname_bytes = spec.name.encode()
    COMMANDS[spec.name.encode()] = spec
    return spec


def find(argv: list[bytes]) -> CommandSpec:
    """lookupCommand: the spec for argv (a container named alone is the container itself);
    raises CommandError with Redis's unknown command / subcommand texts."""
    spec = COMMANDS.get(argv[0].lower())
    if spec is None:
        raise unknown_command(argv)
    if spec.subcommands and len(argv) >= 2:
        sub = spec.subcommands.get(argv[1].lower())
        if sub is None:
            raise unknown_subcommand(argv[1], spec.name)
        spec = sub
    return spec


def lookup(argv: list[bytes]) -> CommandSpec:
    """find() and the arity check; raises CommandError with Redis's texts."""
    spec = find(argv)
    if not spec.arity_ok(len(argv)):
        raise wrong_arity(spec.fullname)
    return spec


# Specs of commands without subcommands by the name exactly as clients send it ("XADD",
# "xadd"): one dict lookup instead of lowercasing every name. Filled by execute's slow path.
_BY_SENT_NAME: dict[bytes, CommandSpec] = {}
_BY_SENT_NAME_MAX = 1024


def clear_fast_lookup() -> None:
    """Send every command through _execute_checked until it refills the table (CLIENT PAUSE:
    the checked path is where a command is postponed)."""
    _BY_SENT_NAME.clear()


def lookup_queued(argv: list[bytes]) -> CommandSpec:
    """lookup() for a command MULTI queued (found and its arity checked then): the name as
    sent when the fast table knows it."""
    spec = _BY_SENT_NAME.get(argv[0])
    return spec if spec is not None else lookup(argv)


def find_by_fullname(name: bytes) -> CommandSpec | None:
    """lookupCommandBySds: 'xadd', or 'config|get' for a subcommand (any case); None when
    there is no such command."""
    parent, _, sub = name.lower().partition(b"|")
    spec = COMMANDS.get(parent)
    if spec is not None and sub:
        return spec.subcommands.get(sub)
    return spec


def all_specs() -> list[CommandSpec]:
    """Every command and subcommand."""
    return [one for spec in COMMANDS.values() for one in (spec, *spec.subcommands.values())]


def commands_processed() -> int:
    """INFO's total_commands_processed. A command counts in its spec's `calls` when it
    completes (call(), Blocking.unblock), and CONFIG RESETSTAT zeroes them all, so the total
    is their sum: the hot path keeps no counter of its own. (The cron samples it ten times a
    second: the specs of commands never run are skipped without a call.)"""
    return sum(command_stats.calls(spec) for spec in all_specs()
               if spec.durations or spec.recent)


def unregister(name: str) -> None:
    """Remove a top-level command (tests register temporary ones)."""
    del COMMANDS[name.lower().encode()]
    _BY_SENT_NAME.clear()


def execute(client: Client, argv: list[bytes]) -> Any:
    """Run one command for client and return its reply value (errors as ErrorReply)."""
    spec = _BY_SENT_NAME.get(argv[0])
    if (spec is not None and client.authenticated and client.multi is None
            and not client.checked_path):
        argc = len(argv)
        arity = spec.arity
        if argc == arity if arity >= 0 else argc >= -arity:
            client.last_cmd = spec.fullname_bytes
            return call(client, spec, argv)
    return _execute_checked(client, argv)


def execute_loaded(client: Client, spec: CommandSpec, argv: list[bytes]) -> Any:
    """Run a command read from the AOF (spec from lookup(argv): found, arity checked) as
    Redis's loader does, the command's own proc on the loading client: no refusal checks,
    no statistics, slowlog or MONITOR feed. A transaction (MULTI, what it queues, EXEC) and
    a client on the checked path go through execute()."""
    if client.multi is not None or client.checked_path or spec.name in ("multi", "exec"):
        return execute(client, argv)
    client.last_cmd = spec.fullname_bytes
    client.server.command_time_ns = _now_ns()
    try:
        return spec.handler(client, argv)  # type: ignore[misc]
    except (CommandError, ColdDataError) as exc:
        return ErrorReply(exc.message)
    except Exception as exc:
        return _handler_failed(client, spec, exc)


def run_commands(client: Client, commands: list[list[bytes]]) -> None:
    """Run a client's commands in order, each reply encoded into client.out, and queue the
    client for the before-sleep write. A command that blocks the client leaves the rest in
    client.pending_cmds, as do commands that arrive while it is blocked or has some waiting.

    Nearly every command comes this way, so execute()'s common case is written out here
    rather than called."""
    if client.pending_cmds or client.blocked is not None:
        client.pending_cmds.extend(commands)
        return
    server = client.server
    try:
        if len(commands) > 1:  # a pipeline: it may start with a run its command takes whole
            argv = commands[0]
            spec = _BY_SENT_NAME.get(argv[0])
            # The refusal checks (MISCONF and the AOF's note of the writer, whose replies
            # wait for the write; READONLY; NOREPLICAS) are asked once for the whole run:
            # what they read does not change before the before-sleep pass. Not while a
            # check reads the amount of data (maxmemory, data_refusals), which the run grows.
            if (spec is not None and spec.pipelined is not None and client.authenticated
                    and client.multi is None and not client.checked_path
                    and not client.reply_flags and not server.monitors
                    and not (server.maxmemory or server.data_refusals)
                    and spec.arity_ok(len(argv))
                    and (not server.refusal_checks
                         or server.refuse_reason(client, spec) is None)):
                ran = spec.pipelined(client, spec, commands)
                if ran:
                    commands = commands[ran:]
        for argv in commands:
            spec = _BY_SENT_NAME.get(argv[0])
            if spec is not None and client.authenticated and not client.checked_path:
                argc = len(argv)
                arity = spec.arity
                if not (argc == arity if arity >= 0 else argc >= -arity):
                    reply = _execute_checked(client, argv)
                    kind = type(reply)
                elif client.multi is not None:
                    # Inside MULTI: _checked's queueing, for a command nothing can refuse
                    # now (no OOM or MISCONF check in force, not EXEC and its kin, not a
                    # no-multi command). The bulk writes of a transaction come this way.
                    if spec.queues_plainly and not (server.maxmemory or server.refusal_checks):
                        client.last_cmd = spec.fullname_bytes
                        client.multi.append(argv)
                        reply = QUEUED
                    else:
                        reply = _execute_checked(client, argv)
                    kind = type(reply)
                else:
                    client.last_cmd = spec.fullname_bytes
                    if spec.may_refuse and (server.maxmemory or server.refusal_checks):
                        reply = call(client, spec, argv)  # (with the OOM and MISCONF checks)
                        kind = type(reply)  # (type() is read once a reply, for all below)
                    else:
                        # call() written out, for a command no check can refuse now (not
                        # blocked, not in EXEC): the handler, the monitors, the statistics.
                        start = server.command_time_ns = _now_ns()
                        try:
                            reply = spec.handler(client, argv)  # type: ignore[misc]
                        except Exception as exc:
                            reply = _handler_failed(client, spec, exc)
                        if server.monitors and _monitored(spec):
                            server.feed_monitors(client, argv)
                        elapsed_us = (_now_ns() - start) // 1000
                        kind = type(reply)
                        if kind is not BlockRequest:
                            spec.recent.append(elapsed_us)  # (command_stats.py)
                        else:
                            client.block_exec_us += max(elapsed_us, 0)
                        if elapsed_us >= server.notable_us:
                            server.note_slow_command(client, spec, argv, elapsed_us, reply)
            else:
                reply = _execute_checked(client, argv)
                kind = type(reply)
            if kind is BlockRequest:
                server.block_or_answer(client, reply, argv)
                if client.blocked is not None:
                    client.pending_cmds.extend(commands[_position(commands, argv) + 1:])
                    break
            elif client.reply_flags:  # CLIENT REPLY OFF or SKIP in force, or SKIP asked for
                if not client.reply_flags & REPLY_MUTED:
                    encode_into(client.out, reply, client.protocol)
                client.command_done()
            elif kind is bytes:
                # A bulk string (XADD's ID, GET's value): encode_into's first case, uncalled
                # (IndexError past the precomputed headers: a try costs nothing until it raises).
                # One piece, not three: the before-sleep join hands a lone piece back uncopied.
                try:
                    client.out.append(BULK_HEADERS[len(reply)] + reply + CRLF)
                except IndexError:
                    encode_into(client.out, reply, client.protocol)
            else:
                # (client.protocol is read per reply: HELLO 3 may switch it mid-batch.)
                encode_into(client.out, reply, client.protocol)
            if client.close_after_reply:
                break
    finally:
        if client.out and not client.pending_write:  # (Server.queue_write, inlined)
            client.pending_write = True
            server.pending_writes.append(client)
            if not server._before_sleep_scheduled:
                server.schedule_before_sleep()


def _position(commands: list[list[bytes]], argv: list[bytes]) -> int:
    """Where argv is in commands: by identity (an equal command may come earlier). Looked up
    only when a command blocks, so the loop over commands counts nothing."""
    for position, one in enumerate(commands):
        if one is argv:
            return position
    raise ValueError("not in the batch")


def _monitored(spec: CommandSpec) -> bool:
    """MONITOR never shows admin commands; EVAL shows itself before the commands it runs."""
    return "admin" not in spec.flags and "skip-monitor" not in spec.flags


def _execute_checked(client: Client, argv: list[bytes]) -> Any:
    """execute() for everything but a known command from an authenticated client outside
    MULTI (and for every command of a client on the checked path): _checked's checks, then
    resetClient's part for client-side caching."""
    reply = _checked(client, argv)
    tracking = client.tracking
    if (tracking is not None and tracking.caching and client.multi is None
            and reply is not POSTPONE and not client.last_cmd.startswith(b"client|")):
        # CLIENT CACHING applies to the next command (or transaction) only; CLIENT
        # subcommands leave it be, as Redis's resetClient does.
        tracking.caching = False
    return reply


def _checked(client: Client, argv: list[bytes]) -> Any:
    """The lookup errors, NOAUTH, the Pub/Sub context, OOM and MISCONF, CLIENT PAUSE, MULTI
    queueing; then call()."""
    server = client.server
    try:
        spec = find(argv)
    except CommandError as exc:
        client.last_cmd = b"NULL"  # CLIENT LIST's cmd=, set before any check as in Redis
        server.stats.rejected_calls += 1
        return _reject(client, argv, exc.message)
    client.last_cmd = spec.fullname_bytes
    if not spec.arity_ok(len(argv)):
        spec.rejected_calls += 1
        return _reject(client, argv, wrong_arity(spec.fullname).message)
    name = argv[0]
    pause = server.pause
    if (not spec.subcommands and spec.parent is None and len(_BY_SENT_NAME) < _BY_SENT_NAME_MAX
            and pause.mode is None and not server.script_busy and not server.command_gates):
        _BY_SENT_NAME[name] = spec
    if not client.authenticated and name.lower() not in _NO_AUTH:
        spec.rejected_calls += 1
        return _reject(client, argv, "NOAUTH Authentication required.")
    if client.acl_checked:
        refusal = server.acl.refusal(client, spec, argv)  # ACL (logged and counted there)
        if refusal is not None:
            spec.rejected_calls += 1
            return _reject(client, argv, refusal)
    if server.tracking.clients:  # tracking-table-max-keys, before any command (processCommand)
        server.tracking.limit_used_slots(client)
    # A RESP2 client in Pub/Sub mode reads messages: only these commands may interleave.
    if (client.subscribed and client.protocol == 2
            and (spec.parent or spec).name not in _PUBSUB_CONTEXT_OK):
        refusal = server.refuse_reason(client, spec) or (
            f"ERR Can't execute '{spec.fullname}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / "
            "PING / QUIT / RESET are allowed in this context")
        spec.rejected_calls += 1
        return _reject(client, argv, refusal)
    # Registered gates (a replica that must not serve stale data: MASTERDOWN). While one is
    # registered every command takes this path (none is kept in _BY_SENT_NAME).
    if server.command_gates:
        refusal = _gate_refusal(client, spec)
        if refusal is not None:
            spec.rejected_calls += 1
            return _reject(client, argv, refusal)
    # A script is busy (server/scripting/busy.py): only the allow-busy commands run.
    # (Redis makes the OOM and MISCONF checks first.)
    if server.script_busy and not spec.allow_busy:
        spec.rejected_calls += 1
        return _reject(client, argv, server.refuse_reason(client, spec) or server.script_busy)
    # EXEC carries its queued commands' flags into the OOM and MISCONF checks: a refusal
    # discards the whole transaction before any of it runs.
    if (client.multi is not None and spec.name == "exec"
            and (server.maxmemory or server.refusal_checks)):
        refusal = _transaction_refusal(client, client.multi)
        if refusal is not None:
            spec.rejected_calls += 1
            return _reject(client, argv, refusal)
    # Out of memory, a transaction queues nothing more: any command but EXEC, DISCARD, QUIT
    # and RESET is refused (queued commands take memory too).
    if (client.multi is not None and server.maxmemory and name.lower() not in _OOM_IN_MULTI_OK
            and server.out_of_memory()):
        spec.rejected_calls += 1
        return _reject(client, argv, OOM_TEXT)
    # CLIENT PAUSE: the command waits for the end of the pause, unless it is refused (Redis
    # makes the OOM and MISCONF checks before the pause's).
    if (pause.mode is not None and pause.holds(client, spec)
            and server.refuse_reason(client, spec) is None):
        return POSTPONE
    if client.multi is not None and name.lower() not in _MULTI_IMMEDIATE:
        refusal = server.refuse_reason(client, spec)
        if refusal is None and "no-multi" in spec.flags:
            refusal = "ERR Command not allowed inside a transaction"
        if refusal is not None:
            spec.rejected_calls += 1
            return _reject(client, argv, refusal)
        client.multi.append(argv)
        return QUEUED
    return call(client, spec, argv)


def _gate_refusal(client: Client, spec: CommandSpec) -> str | None:
    """The first registered gate's refusal of the command; for EXEC, of any command it
    would run (a replica gone stale after they were queued refuses EXEC, as in Redis)."""
    specs = [spec]
    if spec.name == "exec" and client.multi:
        for argv in client.multi:
            try:
                specs.append(find(argv))
            except CommandError:
                continue
    for gate in client.server.command_gates:
        for one in specs:
            refusal = gate(client, one)
            if refusal is not None:
                return refusal
    return None


def _transaction_refusal(client: Client, queued: list[list[bytes]]) -> str | None:
    """processCommand's checks on EXEC: OOM when a queued command may grow memory, then
    the registered checks (MISCONF) for the queued writes. None when EXEC may run."""
    server = client.server
    specs = []
    for argv in queued:
        try:
            spec = find(argv)
        except CommandError:
            continue
        if spec.may_refuse:
            specs.append(spec)
    if server.maxmemory and any(s.denyoom for s in specs) and server.out_of_memory():
        return OOM_TEXT
    for spec in specs:
        for check in server.refusal_checks:
            refusal = check(client, spec)
            if refusal is not None:
                return refusal
    return None


def _refused(server: Server, spec: CommandSpec, text: str) -> ErrorReply:
    spec.rejected_calls += 1
    server.stats.error_reply(text)
    return ErrorReply(text)


def _reject(client: Client, argv: list[bytes], text: str) -> ErrorReply:
    """rejectCommand: the error flags an open transaction; a rejected EXEC discards the
    transaction, open or not (and the WATCHes with it)."""
    if argv[0].lower() == b"exec":
        client.multi = None
        client.multi_error = False
        client.server.unwatch_all(client)
        reason = text[4:] if text.startswith("ERR ") else text
        text = f"EXECABORT Transaction discarded because of: {reason}"
    elif client.multi is not None:
        client.multi_error = True
    client.server.stats.error_reply(text)
    return ErrorReply(text)


def _handler_failed(client: Client, spec: CommandSpec, exc: Exception) -> ErrorReply:
    """The error reply of a handler that raised: a CommandError's text, or for anything else
    (a bug) an internal error, logged: the command fails, the client lives on."""
    if isinstance(exc, (CommandError, ColdDataError)):
        text = exc.message  # (a cold stream node whose file is damaged names the stream)
    else:
        client.server.log.warning(f"Internal error running '{spec.fullname}': {exc!r}\n"
                                  + traceback.format_exc())
        text = f"ERR internal error running '{spec.fullname}' ({type(exc).__name__})"
    spec.failed_calls += 1
    client.server.stats.error_reply(text)
    return ErrorReply(text)


def _run_handler_for(client: Client, spec: CommandSpec, argv: list[bytes]) -> Any:
    """The handler, for a client with CLIENT NO-TOUCH on (its lookups leave keys' access
    times alone, TOUCH excepted), subscriptions or tracking on: the Pub/Sub output and the
    invalidations its own command sends it wait for the command's reply
    (Server.current_client, read by Server.write_push; NOLOOP reads it too)."""
    server = client.server
    untouched = client.no_touch and spec.name != "touch"
    if untouched:
        server.access.touching = False
    running = server.current_client
    server.current_client = client
    try:
        return spec.handler(client, argv)  # type: ignore[misc]
    except Exception as exc:
        return _handler_failed(client, spec, exc)
    finally:
        server.current_client = running
        if untouched:
            server.access.touching = True


def call(client: Client, spec: CommandSpec, argv: list[bytes]) -> Any:
    """Run a looked-up command: limit checks, the handler, statistics, MONITOR feed.

    As in Redis 8, a command counts as processed (its calls, total_commands_processed) once
    it completes: not when it blocks, but when it is served, times out or is unblocked
    (Blocking.unblock counts those); rejected commands never count."""
    server = client.server
    # (a script's commands had theirs already, and EXEC's were checked for the whole
    # transaction when EXEC ran, as Redis's processCommand does)
    if spec.may_refuse and not (client.scripted or client.in_exec):
        # Server.refuse_reason, inlined: OOM, then the registered checks (MISCONF).
        if server.maxmemory and spec.denyoom and server.out_of_memory():
            return _refused(server, spec, OOM_TEXT)
        for check in server.refusal_checks:
            refusal = check(client, spec)
            if refusal is not None:
                return _refused(server, spec, refusal)
    start = _now_ns()
    if not (client.scripted or client.in_exec):
        # A top-level command: its start is the command time. A script's or a transaction's
        # commands keep the EVAL's or EXEC's (all of a script's XADD * share a millisecond).
        server.command_time_ns = start
    if client.checked_path:  # (NO-TOUCH, or Pub/Sub output or invalidations to hold back)
        reply = _run_handler_for(client, spec, argv)
    else:
        try:
            reply = spec.handler(client, argv)  # type: ignore[misc]
        except Exception as exc:
            reply = _handler_failed(client, spec, exc)
    # Monitors see a command once it ran (EXEC after its queued commands), never an admin
    # command, and not again when a blocked client's command is re-run.
    if server.monitors and client.blocked is None and _monitored(spec):
        server.feed_monitors(client, argv)
    elapsed_us = (_now_ns() - start) // 1000
    if type(reply) is not BlockRequest or client.in_exec:  # (EXEC answers it at once)
        recent = spec.recent  # its calls, usec and latency (command_stats.py)
        recent.append(elapsed_us)
        if len(recent) >= _FOLD_AT:  # (a long script's or EXEC's calls, between two crons)
            command_stats.fold(spec)
    else:  # counted when it completes (Blocking.unblock), with the time it ran so far
        client.block_exec_us += max(elapsed_us, 0)
    if elapsed_us >= server.notable_us:  # (the lower of the slowlog and latency thresholds)
        server.note_slow_command(client, spec, argv, elapsed_us, reply)
    # Client-side caching: the keys a tracking client read (even with an error reply, as in
    # Redis). Tracking clients take this path, never run_commands' inlined one.
    if spec.tracks_reads and client.tracking is not None:
        server.tracking.remember_keys(client, spec, argv)
    return reply
