"""Server commands: INFO, CONFIG, TIME, ROLE, WAIT, WAITAOF, DEBUG, SHUTDOWN, SLOWLOG, ACL WHOAMI,
MODULE. MONITOR lives in server.commands.monitor, COMMAND in server.commands.command_cmd, MEMORY
in server.commands.memory_cmds."""

from __future__ import annotations

import gc
import math
import os
import re
import time

from protocol.encoder import OK, Push, Raw, SetReply, SimpleString, Verbatim, encode
from server import command_stats, shutdown_flags
from server.blocking import BlockRequest
from server.client import Client
from server.commands import command_cmd, monitor  # noqa: F401 - register COMMAND, MONITOR
from server.commands.help import help_reply
from server.config import ConfigError
from server.config_rewrite import rewrite_config_file
from server.dispatch import NO_REPLY, all_specs, command, container
from server.errors import SYNTAX, CommandError
from server.info import render_info
from server.object_census import census
from server.parsing import parse_block_timeout, parse_int
from server.persistence.aof_wait import AOF_OFF_TEXT
from server.persistence.dump_payload import dump
from server.shutdown import request_shutdown, shutdown_during_script
from storage.digest import dataset_digest, value_digest
from storage.keyspace import object_encoding
from storage.stream import Stream

_ADMIN = "@admin @slow @dangerous"


@command("info", -1, "loading stale", categories="@slow @dangerous",
         summary="Returns information and statistics about the server.", group="server",
         tips="nondeterministic_output")
def info(client: Client, argv: list[bytes]) -> object:
    sections = [a.decode(errors="replace") for a in argv[1:]]
    return Verbatim(render_info(client.server, sections))


@command("time", 1, "loading stale fast", categories="@fast", summary="Returns the server time.",
         since="2.6.0", group="server", tips="nondeterministic_output")
def time_(client: Client, argv: list[bytes]) -> object:
    now_us = time.time_ns() // 1000
    return [str(now_us // 1_000_000).encode(), str(now_us % 1_000_000).encode()]


@command("waitaof", 4, "blocking", categories="@slow @blocking @connection",
         summary="Blocks until all of the preceding write commands sent by the connection are "
         "written to the append-only file of the master and/or replicas.", since="7.2.0",
         tips="request_policy:all_shards response_policy:agg_min")
def waitaof(client: Client, argv: list[bytes]) -> object:
    numlocal = parse_int(argv[1])
    if not 0 <= numlocal <= 1:
        raise CommandError("ERR value is out of range, value must between 0 and 1")
    numreplicas = parse_int(argv[2])
    if numreplicas < 0:
        raise CommandError("ERR value is out of range, must be positive")
    timeout_ms = parse_block_timeout(argv[3], time.time_ns() // 1_000_000)
    persistence = client.server.persistence
    if numlocal and not persistence.aof_on:
        raise CommandError(AOF_OFF_TEXT)
    waiters = persistence.aof_waiters
    woff = waiters.client_offset(client)
    acklocal = waiters.local_acks(woff)
    # No replica ever acknowledges: a replica count asked for waits out the timeout. (Inside
    # MULTI the server answers the timeout reply at once: the counts as they are.)
    if acklocal >= numlocal and not numreplicas:
        return [acklocal, 0]
    waiters.wait(client, woff, numlocal, numreplicas)
    return BlockRequest([], timeout_ms, argv, lambda: waiters.reply_now(client))


# -- CONFIG ----------------------------------------------------------------------------------
container("config", -2, summary="A container for server configuration commands.", since="2.0.0",
          group="server")


@command("config|get", -3, "admin noscript loading stale", categories=_ADMIN, since="2.0.0",
         group="server", summary="Returns the effective values of configuration parameters.")
def config_get(client: Client, argv: list[bytes]) -> object:
    config = client.server.config
    result: dict[bytes, bytes] = {}
    for pattern in argv[2:]:
        text = pattern.decode(errors="replace")
        if not any(c in text for c in "*?["):
            # A plain name is looked up directly and answered under the name as given.
            spec = config.spec(text)
            if spec is not None and pattern not in result:
                result[pattern] = config.render(spec.name).encode()
            continue
        for name in config.matching(text):
            result.setdefault(name.encode(), config.render(name).encode())
    return result


def _config_set_error(name: str, reason: object) -> CommandError:
    return CommandError(f"ERR CONFIG SET failed (possibly related to argument '{name}') - "
                        f"{reason}")


@command("config|set", -4, "admin noscript loading stale", categories=_ADMIN, since="2.0.0",
         group="server", summary="Sets configuration parameters in-flight.")
def config_set(client: Client, argv: list[bytes]) -> object:
    if len(argv) % 2:
        raise CommandError(SYNTAX)
    config = client.server.config
    pairs = [(argv[i].decode(errors="replace"), argv[i + 1].decode(errors="replace"))
             for i in range(2, len(argv), 2)]
    seen: set[str] = set()
    for name, _ in pairs:
        spec = config.spec(name)
        if spec is None:
            raise CommandError(
                f"ERR Unknown option or number of arguments for CONFIG SET - '{name}'")
        if spec.name in seen:
            raise _config_set_error(name, "duplicate parameter")
        seen.add(spec.name)
    # All or nothing: validate every value first, then apply.
    for name, value in pairs:
        spec = config.spec(name)
        assert spec is not None
        try:
            if not spec.mutable:
                raise ConfigError("can't set immutable config")
            spec.parse(value)
        except ConfigError as exc:
            raise _config_set_error(name, exc) from None
    for name, value in pairs:
        try:
            config.set_from_text(name, value, at_runtime=True)
        except (ConfigError, OSError) as exc:
            raise _config_set_error(name, exc) from None
    return OK


@command("config|resetstat", 2, "admin noscript loading stale", categories=_ADMIN,
         since="2.0.0", group="server",
         summary="Resets the server's statistics.")
def config_resetstat(client: Client, argv: list[bytes]) -> object:
    server = client.server
    server.stats.reset()
    for spec in all_specs():
        command_stats.reset(spec)
        spec.rejected_calls = spec.failed_calls = 0
    return OK


@command("config|rewrite", 2, "admin noscript loading stale", categories=_ADMIN, since="2.8.0",
         group="server", summary="Persists the effective configuration to file.")
def config_rewrite(client: Client, argv: list[bytes]) -> object:
    server = client.server
    if not server.config.config_file:
        raise CommandError("ERR The server is running without a config file")
    try:
        # `dir` is written as the working directory, which the server chdir()ed into.
        users = None if server.config["aclfile"] else [
            line.decode(errors="surrogateescape") for line in server.acl.users.describe_lines()]
        rewrite_config_file(server.config, os.getcwd(), users)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        server.log.warning(f"CONFIG REWRITE failed: {reason}")
        raise CommandError(f"ERR Rewriting config file: {reason}") from None
    server.log.warning("CONFIG REWRITE executed with success.")  # at warning level, as Redis
    return OK


@command("config|help", 2, "loading stale", categories="@slow", since="5.0.0", group="server",
         summary="Returns helpful text about the different subcommands.")
def config_help(client: Client, argv: list[bytes]) -> object:
    return help_reply("CONFIG", [
        "GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
        "SET <directive> <value>", "    Set the configuration <directive> to <value>.",
        "RESETSTAT", "    Reset statistics reported by the INFO command.",
        "REWRITE", "    Rewrite the configuration file.",
    ])


# -- DEBUG -----------------------------------------------------------------------------------
_DEBUG_NOT_ALLOWED = (
    "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", "
    "you can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server.")
_STRTOD = re.compile(rb"\s*[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)")


def _strtod(arg: bytes) -> float:
    """C's strtod as DEBUG SLEEP uses it: the longest numeric prefix, 0 when there is none."""
    found = _STRTOD.match(arg)
    return float(found.group()) if found else 0.0


def _atoi(arg: bytes) -> int:
    """C's atoi: the leading integer, 0 when there is none."""
    found = re.match(rb"\s*[+-]?\d+", arg)
    return int(found.group()) if found else 0


_PROTOCOL_TYPES = ("string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|"
                   "false")
_BIGNUM = b"1234567999999999999999999999999999999"


def _debug_protocol(client: Client, name: bytes) -> object:
    """DEBUG PROTOCOL <type>: one reply of each RESP type, for testing clients (and scripts'
    conversions). Written out for the client's protocol where the encoder has no type."""
    resp3 = client.protocol >= 3
    simple: dict[bytes, object] = {
        b"string": b"Hello World", b"integer": 12345, b"double": 3.141, b"null": None,
        b"array": [0, 1, 2], b"set": SetReply([0, 1, 2]), b"map": {0: False, 1: True, 2: False},
        b"true": True, b"false": False, b"verbatim": Verbatim("This is a verbatim\nstring"),
    }
    if name in simple:
        return simple[name]
    if name == b"bignum":
        return Raw(b"(" + _BIGNUM + b"\r\n") if resp3 else _BIGNUM
    if name == b"attrib":
        following = b"Some real reply following the attribute"
        if not resp3:
            return following
        return Raw(b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n"
                   + encode(following, 3))
    if name == b"push":
        if not resp3:
            raise CommandError("ERR RESP2 is not supported by this command")
        return Raw(encode(Push([b"server-cpu-usage", 42]), 3)
                   + encode(b"Some real reply following the push reply", 3))
    raise CommandError("ERR Wrong protocol type name. Please use one of the following: "
                       + _PROTOCOL_TYPES)


def _debug_allowed(client: Client) -> bool:
    mode = client.server.config["enable-debug-command"]
    if mode == "yes":
        return True
    return mode == "local" and client.addr.startswith(("127.", "[::1]", "[::ffff:127."))


def _debug_syntax(argv: list[bytes]) -> CommandError:
    return CommandError(f"ERR unknown subcommand or wrong number of arguments for "
                        f"'{argv[1].decode(errors='replace')}'. Try DEBUG HELP.")


@command("debug", -2, "admin noscript loading stale protected", categories=_ADMIN,
         summary="A container for debugging commands.", group="server")
def debug(client: Client, argv: list[bytes]) -> object:
    if not _debug_allowed(client):
        raise CommandError(_DEBUG_NOT_ALLOWED)
    sub = argv[1].lower()
    if sub == b"sleep" and len(argv) == 3:
        seconds = _strtod(argv[2])
        if seconds > 0 and math.isfinite(seconds):
            time.sleep(seconds)  # blocks the whole server, exactly as Redis does
        return OK
    if sub == b"set-active-expire" and len(argv) == 3:
        enabled = _strtod(argv[2]) != 0
        for db in client.server.dbs:
            db.active_expire_enabled = enabled
        return OK
    if sub == b"set-disable-deny-scripts" and len(argv) == 3:
        # Scripts may call noscript commands (DEBUG PROTOCOL, CLIENT...): for tests.
        client.server.script_deny_disabled = _atoi(argv[2]) != 0
        return OK
    if sub == b"protocol" and len(argv) == 3:
        return _debug_protocol(client, argv[2].lower())
    if sub == b"digest" and len(argv) == 2:
        return SimpleString(dataset_digest(client.server.dbs))
    if sub == b"digest-value":
        return [SimpleString(value_digest(client.db, key)) for key in argv[2:]]
    if sub == b"object" and len(argv) == 3:
        return _debug_object(client, argv[2])
    if sub == b"set-cyclic-gc" and len(argv) == 3:
        # Off, memory that only a reference cycle holds stays held: tests look for such
        # leaks with it off (server/object_census.py).
        if _atoi(argv[2]):
            gc.enable()
        else:
            gc.disable()
        return OK
    if sub == b"client-objects" and len(argv) == 2:
        return census(client.server)
    handler = client.server.debug_handlers.get(sub.decode(errors="replace"))
    if handler is not None:  # DEBUG RELOAD & co, registered by persistence
        return handler(client, argv)
    if sub == b"help" and len(argv) == 2:
        return help_reply("DEBUG", [
            "CLIENT-OBJECTS",
            "    Count the client, connection and request reader objects alive, and the",
            "    clients connected: with SET-CYCLIC-GC 0, any beyond those connected leak.",
            "DIGEST",
            "    Output a hex signature representing the current DB content.",
            "DIGEST-VALUE <key> [<key> ...]",
            "    Output a hex signature of the values of all the specified keys.",
            "OBJECT <key>",
            "    Show low level info about `key` and associated value.",
            "PROTOCOL <type>",
            "    Reply with a test value of the specified type. <type> can be: string,",
            "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
            "    true, false.",
            "RELOAD",
            "    Save the dataset to disk, flush it and load it back.",
            "SET-ACTIVE-EXPIRE <0|1>",
            "    Setting it to 0 disables expiring keys in background when they are not",
            "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
            "    default.",
            "SET-CYCLIC-GC <0|1>",
            "    Setting it to 0 turns Python's cyclic garbage collector off, so that memory",
            "    only a reference cycle holds stays held (a leak shows). 1 turns it back on.",
            "SLEEP <seconds>",
            "    Stop the server for <seconds>. Decimals allowed.",
        ])
    raise _debug_syntax(argv)


def _debug_object(client: Client, key: bytes) -> object:
    """DEBUG OBJECT: the value's address, its encoding, the length of its RDB serialization
    (DUMP's payload without the type byte, version and checksum) and its `lru` field."""
    value = client.db.data.get(key)  # (as stored: an expired key not deleted yet too)
    if value is None:
        raise CommandError("ERR no such key")
    access = client.server.access
    text = (f"Value at:{id(value):#x} refcount:1 encoding:{object_encoding(value)} "
            f"serializedlength:{len(dump(value)) - 11} lru:{value.lru} "
            f"lru_seconds_idle:{access.idle_ms(value.lru) // 1000}")
    if isinstance(value, Stream) and client.server.config["stream-hot-memory"]:
        # With the cold tier on: the stream's node bytes in memory and on disk (what MEMORY
        # USAGE's one integer cannot tell apart).
        hot = cold = cold_nodes = 0
        for _key, node in value.rax.items():
            ref = node.cold  # type: ignore[attr-defined]
            if ref is None:
                hot += len(node.buf)  # type: ignore[attr-defined]
            else:
                cold += ref.length
                cold_nodes += 1
        text += f" stream_hot_bytes:{hot} stream_cold_bytes:{cold} stream_cold_nodes:{cold_nodes}"
    return SimpleString(text)


# -- SHUTDOWN --------------------------------------------------------------------------------
@command("shutdown", -1, "admin noscript loading stale no-multi sentinel allow-busy",
         categories=_ADMIN, summary="Synchronously saves the database(s) to disk and shuts down "
         "the Redis server.", group="server")
def shutdown(client: Client, argv: list[bytes]) -> object:
    flags = 0
    abort = False
    for opt in argv[1:]:
        low = opt.lower()
        if low == b"abort":
            abort = True
        elif low in _SHUTDOWN_FLAGS:
            flags |= _SHUTDOWN_FLAGS[low]
        else:
            raise CommandError(SYNTAX)
    if (flags & shutdown_flags.SAVE and flags & shutdown_flags.NOSAVE) or (
            abort and len(argv) > 2):
        raise CommandError(SYNTAX)
    if abort:  # shutdown here never waits (no replicas), so there is nothing to abort
        raise CommandError("ERR No shutdown in progress.")
    if client.multi is not None or client.in_exec:
        raise CommandError("ERR Command not allowed inside a transaction")
    if client.server.script_busy:  # (server/scripting/busy.py)
        if not flags & shutdown_flags.NOSAVE:
            raise CommandError(client.server.script_busy)
        shutdown_during_script(client.server)
    request_shutdown(client.server, flags, client=client)
    # Like Redis, a successful SHUTDOWN answers nothing: the connection just closes.
    return NO_REPLY


_SHUTDOWN_FLAGS = {b"save": shutdown_flags.SAVE, b"nosave": shutdown_flags.NOSAVE,
                   b"now": shutdown_flags.NOW, b"force": shutdown_flags.FORCE}


# -- SLOWLOG ---------------------------------------------------------------------------------
container("slowlog", -2, summary="A container for slow log commands.", since="2.2.12",
          group="server")


@command("slowlog|get", -2, "admin loading stale", categories=_ADMIN, since="2.2.12",
         group="server", summary="Returns the slow log's entries.",
         tips="request_policy:all_nodes nondeterministic_output")
def slowlog_get(client: Client, argv: list[bytes]) -> object:
    count = 10
    if len(argv) == 3:
        try:
            count = parse_int(argv[2])
        except CommandError:
            raise CommandError(_SLOWLOG_COUNT) from None
        if count < -1:
            raise CommandError(_SLOWLOG_COUNT)
    elif len(argv) > 3:
        raise CommandError("ERR unknown subcommand or wrong number of arguments for "
                           f"'{argv[1].decode(errors='replace')}'. Try SLOWLOG HELP.")
    entries = list(client.server.slowlog)
    if count >= 0:
        entries = entries[:count]
    return [[e.id, e.time, e.duration, list(e.argv), e.addr, e.name] for e in entries]


_SLOWLOG_COUNT = "ERR count should be greater than or equal to -1"


@command("slowlog|len", 2, "admin loading stale", categories=_ADMIN, since="2.2.12",
         group="server",
         summary="Returns the number of entries in the slow log.")
def slowlog_len(client: Client, argv: list[bytes]) -> object:
    return len(client.server.slowlog)


@command("slowlog|reset", 2, "admin loading stale", categories=_ADMIN, since="2.2.12",
         group="server",
         summary="Clears all entries from the slow log.")
def slowlog_reset(client: Client, argv: list[bytes]) -> object:
    client.server.slowlog.clear()
    return OK


@command("slowlog|help", 2, "loading stale", categories="@slow", since="6.2.0", group="server",
         summary="Show helpful text about the different subcommands")
def slowlog_help(client: Client, argv: list[bytes]) -> object:
    return help_reply("SLOWLOG", [
        "GET [<count>]",
        "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
        "    Entries are made of:",
        "    id, timestamp, time in microseconds, arguments array, client IP and port,",
        "    client name",
        "LEN", "    Return the length of the slowlog.",
        "RESET", "    Reset the slowlog.",
    ])


# -- MODULE (no module can be loaded: the list is empty) ---------------------------------------
container("module", -2, summary="A container for module commands.", since="4.0.0",
          group="server")


@command("module|list", 2, "admin noscript", categories=_ADMIN, since="4.0.0", group="server",
         tips="nondeterministic_output_order", summary="Returns all loaded modules.")
def module_list(client: Client, argv: list[bytes]) -> object:
    return []  # a Redis with no module loaded answers the same


@command("module|help", 2, "loading stale", categories="@slow", since="5.0.0", group="server",
         summary="Returns helpful text about the different subcommands.")
def module_help(client: Client, argv: list[bytes]) -> object:
    return help_reply("MODULE", [  # the subcommands implemented, in Redis's words
        "LIST",
        "    Return a list of loaded modules.",
    ])
