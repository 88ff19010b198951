"""EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT: Lua scripts (server/scripting)."""

from __future__ import annotations

from typing import Any

from protocol.encoder import OK, ErrorReply
from server.client import Client
from server.commands.help import help_reply
from server.dispatch import command, container, find
from server.errors import CommandError
from server.parsing import eq, parse_int
from server.scripting.engine import ScriptEngine, engine_of

_CAT = "@slow @scripting"
_EVAL_FLAGS = "noscript stale skip-monitor no-mandatory-keys movablekeys"
NOSCRIPT = "NOSCRIPT No matching script. Please use EVAL."


def engine(client: Client) -> ScriptEngine:
    return engine_of(client.server)


def _eval(client: Client, argv: list[bytes], by_sha: bool, read_only: bool) -> Any:
    """evalGenericCommand: numkeys checked, the script found (or compiled), then run."""
    server = client.server
    if server.monitors:  # (before any check, and before the commands it runs: call() shows
        server.feed_monitors(client, argv)  # those)
    numkeys = parse_int(argv[2])
    if numkeys > len(argv) - 3:
        raise CommandError("ERR Number of keys can't be greater than number of args")
    if numkeys < 0:
        raise CommandError("ERR Number of keys can't be negative")
    scripts = engine(client)
    if by_sha:
        script = scripts.find(argv[1])
        if script is None:
            raise CommandError(NOSCRIPT)
    else:
        script = scripts.load(argv[1])
    keys = argv[3:3 + numkeys]
    reply = scripts.run(client, script, keys, argv[3 + numkeys:], read_only)
    return after_run(client, argv, scripts, reply)


def after_run(client: Client, argv: list[bytes], scripts: ScriptEngine, reply: Any) -> Any:
    """What follows a script's run (EVAL's or FCALL's): the command's failed_calls, and the
    declared keys of a script that read for a tracking client."""
    if isinstance(reply, ErrorReply):  # (a failed call, however the error came)
        find(argv).failed_calls += 1
    if client.tracking is not None and scripts.last_run_read:
        # Client-side caching: a script that read tracks the keys it declared (Redis 7+).
        client.server.tracking.remember_keys(client, find(argv), argv)
    return reply


@command("eval", -3, _EVAL_FLAGS, categories=_CAT, since="2.6.0", group="scripting",
         summary="Executes a server-side Lua script.")
def eval_(client: Client, argv: list[bytes]) -> object:
    return _eval(client, argv, by_sha=False, read_only=False)


@command("evalsha", -3, _EVAL_FLAGS, categories=_CAT, since="2.6.0", group="scripting",
         summary="Executes a server-side Lua script by SHA1 digest.")
def evalsha(client: Client, argv: list[bytes]) -> object:
    return _eval(client, argv, by_sha=True, read_only=False)


@command("eval_ro", -3, f"readonly {_EVAL_FLAGS}", categories=_CAT, since="7.0.0",
         group="scripting", summary="Executes a read-only server-side Lua script.")
def eval_ro(client: Client, argv: list[bytes]) -> object:
    return _eval(client, argv, by_sha=False, read_only=True)


@command("evalsha_ro", -3, f"readonly {_EVAL_FLAGS}", categories=_CAT, since="7.0.0",
         group="scripting", summary="Executes a read-only server-side Lua script by SHA1 "
         "digest.")
def evalsha_ro(client: Client, argv: list[bytes]) -> object:
    return _eval(client, argv, by_sha=True, read_only=True)


container("script", -2, summary="A container for Lua scripts management commands.",
          since="2.6.0", group="scripting")


@command("script|load", 3, "noscript stale", categories=_CAT, since="2.6.0",
         group="scripting", tips="request_policy:all_nodes response_policy:all_succeeded",
         summary="Loads a server-side Lua script to the script cache.")
def script_load(client: Client, argv: list[bytes]) -> object:
    return engine(client).load(argv[2]).sha.encode()


@command("script|exists", -3, "noscript", categories=_CAT, since="2.6.0", group="scripting",
         tips="request_policy:all_shards response_policy:agg_logical_and",
         summary="Determines whether server-side Lua scripts exist in the script cache.")
def script_exists(client: Client, argv: list[bytes]) -> object:
    scripts = engine(client)
    return [1 if scripts.find(sha) is not None else 0 for sha in argv[2:]]


@command("script|flush", -2, "noscript", categories=_CAT, since="2.6.0", group="scripting",
         tips="request_policy:all_nodes response_policy:all_succeeded",
         summary="Removes all server-side Lua scripts from the script cache.")
def script_flush(client: Client, argv: list[bytes]) -> object:
    if len(argv) > 3 or (len(argv) == 3 and not (eq(argv[2], b"sync")
                                                 or eq(argv[2], b"async"))):
        raise CommandError("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
    engine(client).flush()
    return OK


@command("script|kill", 2, "noscript allow-busy", categories=_CAT, since="2.6.0",
         group="scripting", tips="request_policy:all_shards response_policy:one_succeeded",
         summary="Terminates a server-side Lua script during execution.")
def script_kill(client: Client, argv: list[bytes]) -> object:
    # (Only ever read from another client while a script is busy: server/scripting/busy.py.)
    engine(client).kill(eval_mode=True)
    return OK


@command("script|help", 2, "loading stale", categories=_CAT, since="5.0.0",
         group="scripting", summary="Returns helpful text about the different subcommands.")
def script_help(client: Client, argv: list[bytes]) -> object:
    return help_reply("SCRIPT", [  # (SCRIPT DEBUG, the Lua debugger, is not implemented)
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
    ])

