"""FCALL, FCALL_RO and FUNCTION: Redis functions (server/scripting/functions.py)."""

from __future__ import annotations

import time
from typing import Any

from protocol.encoder import OK, SimpleString
from server.client import Client
from server.commands.help import help_reply
from server.commands.script_cmds import after_run
from server.dispatch import command, container
from server.errors import BUSY_TEXT, CommandError
from server.parsing import eq, parse_int
from server.persistence import dump_payload
from server.scripting.engine import engine_of
from server.scripting.functions import ENGINE, registry_of
from storage.glob import compile_glob

_CAT = "@slow @scripting"
_FCALL_FLAGS = "noscript stale skip-monitor no-mandatory-keys movablekeys"


# -- FCALL ---------------------------------------------------------------------------------------
def _fcall(client: Client, argv: list[bytes], read_only: bool) -> Any:
    """fcallCommandGeneric: the function found, numkeys checked, then run."""
    server = client.server
    if server.monitors:  # (before the commands it runs, as EVAL)
        server.feed_monitors(client, argv)
    registry = registry_of(server)
    function = registry.functions.get(argv[1].lower())
    if function is None:
        raise CommandError("ERR Function not found")
    try:
        numkeys = parse_int(argv[2])
    except CommandError:
        raise CommandError("ERR Bad number of keys provided") from None
    if numkeys > len(argv) - 3:
        raise CommandError("ERR Number of keys can't be greater than number of args")
    if numkeys < 0:
        raise CommandError("ERR Number of keys can't be negative")
    scripts = registry.scripts
    reply = scripts.run(client, function.script, argv[3:3 + numkeys], argv[3 + numkeys:],
                        read_only, function_env=registry.env, command=argv)
    return after_run(client, argv, scripts, reply)


@command("fcall", -3, _FCALL_FLAGS, categories=_CAT, since="7.0.0", group="scripting",
         summary="Invokes a function.")
def fcall(client: Client, argv: list[bytes]) -> object:
    return _fcall(client, argv, read_only=False)


@command("fcall_ro", -3, f"readonly {_FCALL_FLAGS}", categories=_CAT, since="7.0.0",
         group="scripting", summary="Invokes a read-only function.")
def fcall_ro(client: Client, argv: list[bytes]) -> object:
    return _fcall(client, argv, read_only=True)


# -- FUNCTION ------------------------------------------------------------------------------------
container("function", -2, summary="A container for function commands.", since="7.0.0",
          group="scripting")
_WRITE_CAT = "@write @slow @scripting"


@command("function|load", -3, "write denyoom noscript", categories=_WRITE_CAT, since="7.0.0",
         group="scripting", tips="request_policy:all_shards response_policy:all_succeeded",
         summary="Creates a library.")
def function_load(client: Client, argv: list[bytes]) -> object:
    replace = False
    for option in argv[2:-1]:
        if not eq(option, b"replace"):
            raise CommandError(f"ERR Unknown option given: {option.decode(errors='replace')}")
        replace = True
    server = client.server
    # (no time limit while the AOF loads: Redis's mustObeyClient)
    name = registry_of(server).load(argv[-1], replace, timeout=not server.loading)
    server.propagate(client.db, [b"FUNCTION", b"LOAD", *([b"REPLACE"] if replace else []),
                                 argv[-1]])
    return name


@command("function|delete", 3, "write noscript", categories=_WRITE_CAT, since="7.0.0",
         group="scripting", tips="request_policy:all_shards response_policy:all_succeeded",
         summary="Deletes a library and its functions.")
def function_delete(client: Client, argv: list[bytes]) -> object:
    registry_of(client.server).delete(argv[2])
    client.server.propagate(client.db, [b"FUNCTION", b"DELETE", argv[2]])
    return OK


@command("function|flush", -2, "write noscript", categories=_WRITE_CAT, since="7.0.0",
         group="scripting", tips="request_policy:all_shards response_policy:all_succeeded",
         summary="Deletes all libraries and functions.")
def function_flush(client: Client, argv: list[bytes]) -> object:
    if len(argv) > 3:
        raise CommandError("ERR unknown subcommand or wrong number of arguments for "
                           f"'{argv[1].decode(errors='replace')}'. Try FUNCTION HELP.")
    if len(argv) == 3 and not (eq(argv[2], b"sync") or eq(argv[2], b"async")):
        raise CommandError("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
    registry_of(client.server).flush()
    client.server.propagate(client.db, [b"FUNCTION", b"FLUSH"])
    return OK


@command("function|list", -2, "noscript", categories=_CAT, since="7.0.0", group="scripting",
         tips="nondeterministic_output_order",
         summary="Returns information about all libraries.")
def function_list(client: Client, argv: list[bytes]) -> object:
    with_code = False
    pattern = None
    i = 2
    while i < len(argv):
        arg = argv[i]
        if not with_code and eq(arg, b"withcode"):
            with_code = True
        elif pattern is None and eq(arg, b"libraryname"):
            if i >= len(argv) - 1:
                raise CommandError("ERR library name argument was not given")
            i += 1
            pattern = argv[i]
        else:
            raise CommandError(f"ERR Unknown argument {arg.decode(errors='replace')}")
        i += 1
    # (matched regardless of case, as stringmatchlen's nocase)
    matches = compile_glob(pattern.lower()) if pattern is not None else None
    out = []
    for library in registry_of(client.server).libraries.values():
        if matches is not None and not matches(library.name.lower()):
            continue
        entry: dict[bytes, Any] = {
            b"library_name": library.name,
            b"engine": ENGINE.encode(),
            b"functions": [{b"name": f.name, b"description": f.description,
                            b"flags": {SimpleString(flag) for flag in f.flags}}
                           for f in library.functions.values()],
        }
        if with_code:
            entry[b"library_code"] = library.code
        out.append(entry)
    return out


@command("function|stats", 2, "noscript allow-busy", categories=_CAT, since="7.0.0",
         group="scripting", tips="nondeterministic_output request_policy:all_shards "
         "response_policy:special",
         summary="Returns information about a function during execution.")
def function_stats(client: Client, argv: list[bytes]) -> object:
    registry = registry_of(client.server)
    state = registry.scripts.running
    if state is not None and state.env is None:  # (an EVAL's script is running)
        raise CommandError(BUSY_TEXT)
    running = None
    if state is not None:
        running = {b"name": state.script.sha.encode(), b"command": list(state.command or []),
                   b"duration_ms": int((time.monotonic() - state.started) * 1000)}
    return {b"running_script": running,
            b"engines": {ENGINE.encode(): {b"libraries_count": len(registry.libraries),
                                           b"functions_count": len(registry.functions)}}}


@command("function|kill", 2, "noscript allow-busy", categories=_CAT, since="7.0.0",
         group="scripting", tips="request_policy:all_shards response_policy:one_succeeded",
         summary="Terminates a function during execution.")
def function_kill(client: Client, argv: list[bytes]) -> object:
    # (Only ever read from another client while a function is busy: server/scripting/busy.py.)
    engine_of(client.server).kill(eval_mode=False)
    return OK


@command("function|dump", 2, "noscript", categories=_CAT, since="7.0.0", group="scripting",
         summary="Dumps all libraries into a serialized binary payload.")
def function_dump(client: Client, argv: list[bytes]) -> object:
    return dump_payload.dump_functions(registry_of(client.server).payloads())


@command("function|restore", -3, "write denyoom noscript", categories=_WRITE_CAT,
         since="7.0.0", group="scripting",
         tips="request_policy:all_shards response_policy:all_succeeded",
         summary="Restores all libraries from a payload.")
def function_restore(client: Client, argv: list[bytes]) -> object:
    if len(argv) > 4:
        raise CommandError(f"ERR unknown subcommand or wrong number of arguments for "
                           f"'{argv[1].decode(errors='replace')}'. Try FUNCTION HELP.")
    policy = argv[3].lower() if len(argv) == 4 else b"append"
    if policy not in (b"flush", b"append", b"replace"):
        raise CommandError("ERR Wrong restore policy given, value should be either FLUSH, "
                           "APPEND or REPLACE.")
    payload = argv[2]
    if not dump_payload.verify(payload):
        raise CommandError("ERR DUMP payload version or checksum are wrong")
    try:
        codes = dump_payload.restore_functions(payload)
    except dump_payload.PayloadError as exc:
        raise CommandError(f"ERR {exc}") from None
    registry_of(client.server).restore(codes, policy.decode())
    client.server.propagate(client.db, [b"FUNCTION", b"RESTORE", payload, policy.upper()])
    return OK


@command("function|help", 2, "loading stale", categories=_CAT, since="7.0.0",
         group="scripting", summary="Returns helpful text about the different subcommands.")
def function_help(client: Client, argv: list[bytes]) -> object:
    return help_reply("FUNCTION", [
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Create a new library with the given library name and code.",
        "DELETE <LIBRARY NAME>",
        "    Delete the given library.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Return general information on all the libraries:",
        "    * Library name",
        "    * The engine used to run the Library",
        "    * Library description",
        "    * Functions list",
        "    * Library code (if WITHCODE is given)",
        "    It also possible to get only function that matches a pattern using LIBRARYNAME "
        "argument.",
        "STATS",
        "    Return information about the current function running:",
        "    * Function name",
        "    * Command used to run the function",
        "    * Duration in MS that the function is running",
        "    If no function is running, return nil",
        "    In addition, returns a list of available engines.",
        "KILL",
        "    Kill the current running function.",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the libraries.",
        "    * SYNC: Synchronously flush the libraries.",
        "DUMP",
        "    Return a serialized payload representing the current libraries, can be restored "
        "using FUNCTION RESTORE command",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Restore the libraries represented by the given payload, it is possible to give a "
        "restore policy to",
        "    control how to handle existing libraries (default APPEND):",
        "    * FLUSH: delete all existing libraries.",
        "    * APPEND: appends the restored libraries to the existing libraries. On collision, "
        "abort.",
        "    * REPLACE: appends the restored libraries to the existing libraries, On collision, "
        "replace the old",
        "      libraries with the new libraries (notice that even on this option there is a "
        "chance of failure",
        "      in case of functions name collision with another library).",
    ])
