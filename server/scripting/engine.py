"""The script cache and the running of scripts (eval.c, script.c).

Scripts run to completion inside the command that started them, as in Redis: nothing else
runs meanwhile. The commands a script calls run through dispatch.call() as the script's own
client (its database starts as the caller's, its user is the caller's), after Redis's checks
for scripts: known command and arity, not flagged noscript, the caller's ACL rules, no write
from a read-only script, OOM before the script's first write. A script's writes reach the
AOF as one transaction (MULTI/EXEC around two or more), as EXEC's do.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lupa.lua51 import lua_type

from protocol.encoder import ErrorReply
from server import dispatch
from server.acl.registry import check_command
from server.acl.selector import ALLOWED
from server.block_request import BlockRequest, timeout_reply
from server.client import Client
from server.dispatch import call, find
from server.errors import BUSY_FUNCTION_TEXT, BUSY_TEXT, OOM_TEXT, CommandError
from server.scripting import busy, convert, lua_libs
from server.scripting.lua_env import LuaEnv
from server.version import VERSION
from storage.keyspace import now_ms

if TYPE_CHECKING:
    from server.app import Server

NO_WRITES = "no-writes"
ALLOW_OOM = "allow-oom"
SHEBANG_FLAGS = (NO_WRITES, ALLOW_OOM, "allow-stale", "no-cluster", "allow-cross-slot-keys")
_LOG_LEVELS = ("debug", "verbose", "notice", "warning")


@dataclass(slots=True)
class Script:
    sha: str
    body: bytes
    function: Any  # the compiled Lua function
    flags: frozenset[str] | None  # the shebang's flags; None without a shebang (EVAL mode)


@dataclass(slots=True)
class RunState:
    caller: Client
    script: Script
    read_only: bool  # EVAL_RO / EVALSHA_RO, or a no-writes script
    oom_at_start: bool  # pre_command_oom_state
    resp: int = 2  # redis.setresp
    wrote: bool = False  # a write command ran (SCRIPT_WRITE_DIRTY)
    read: bool = False  # a read-only command ran: a tracking caller tracks the script's keys
    started: float = 0.0  # time.monotonic() at the start
    # Past busy-reply-threshold: the other clients are served (BUSY) meanwhile.
    busy: busy.BusyPeriod | None = None
    env: LuaEnv | None = None  # a function's interpreter (functions.py); None for EVAL's
    command: list[bytes] | None = None  # the caller's command (FUNCTION STATS)
    kill_requested: bool = False  # SCRIPT KILL asked for the script's end
    allow_oom: bool = False


class ScriptEngine:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.scripts: dict[str, Script] = {}
        self._env: LuaEnv | None = None
        self._client: Client | None = None
        self.running: RunState | None = None
        self.last_run_read = False  # the last script ran a read-only command

    # -- the interpreter ------------------------------------------------------------------------
    @property
    def env(self) -> LuaEnv:
        """The running script's interpreter: EVAL's, or the functions' during FCALL."""
        state = self.running
        if state is not None and state.env is not None:
            return state.env
        return self.eval_env

    @property
    def eval_env(self) -> LuaEnv:
        if self._env is None:
            self._env = self.new_env({"eval_api": True})
        return self._env

    def new_env(self, extra: dict[str, Any]) -> LuaEnv:
        """An interpreter with the scripts' API (and `extra` host functions)."""
        return LuaEnv({
            "call": self._call_raising,
            "pcall": self._pcall,
            "unwrap": _unwrap,
            "busy_check": self._busy_check,
            "acl_check": self._acl_check,
            "error_table": self._error_table,
            "sha1hex": self._sha1hex,
            "log": self._log,
            "setresp": self._setresp,
            "set_repl": self._set_repl,
            "version": self._version,
            "json_encode": self._json_encode,
            "json_decode": self._json_decode,
            "register_function": _not_loading,
            "load_timed_out": lambda: False,
            "eval_api": False,  # redis.replicate_commands, breakpoint and debug: EVAL's only
            **extra,
        })

    def flush(self) -> None:
        """SCRIPT FLUSH: the cache, and the interpreter with any state scripts left in it."""
        self.scripts.clear()
        self._env = None

    def lua_memory(self) -> int:
        """The interpreter's heap (INFO's used_memory_vm_eval); 0 before the first script."""
        return self._env.memory() if self._env is not None else 0

    def cache_memory(self) -> int:
        """What the cached scripts take (INFO's used_memory_scripts_eval): their bodies and
        digests, about as Redis counts them."""
        return sum(len(script.body) + 2 * 64 for script in self.scripts.values())

    # -- the cache ------------------------------------------------------------------------------
    def load(self, body: bytes) -> Script:
        """luaCreateFunction: the cached script, or compile it; CommandError with Redis's
        text for a bad shebang or a script that does not compile."""
        sha = hashlib.sha1(body).hexdigest()
        script = self.scripts.get(sha)
        if script is not None:
            return script
        flags, skip = _shebang(body)
        function, error = self.eval_env.compile(body[skip:] if skip else body)
        if function is None:
            raise CommandError("ERR Error compiling script (new function): "
                               + _bytes(error).decode(errors="replace"))
        script = Script(sha, body, function, flags)
        self.scripts[sha] = script
        return script

    def find(self, sha: bytes) -> Script | None:
        return self.scripts.get(sha.decode(errors="replace").lower())

    # -- running --------------------------------------------------------------------------------
    def run(self, caller: Client, script: Script, keys: list[bytes], args: list[bytes],
            read_only_command: bool, function_env: LuaEnv | None = None,
            command: list[bytes] | None = None) -> Any:
        """Run a script (or with `function_env`, a function registered in that interpreter:
        functions.py), `command` being what the caller sent."""
        server = self.server
        flags = script.flags
        out_of_memory = bool(server.maxmemory) and server.out_of_memory()
        if flags is not None:
            refusal = self._refuse_at_start(caller, flags, read_only_command, out_of_memory)
            if refusal is not None:
                raise CommandError(refusal)
        state = RunState(caller, script,
                         read_only_command or (flags is not None and NO_WRITES in flags),
                         out_of_memory,
                         allow_oom=flags is not None and bool({ALLOW_OOM, NO_WRITES} & flags))
        state.env = function_env
        state.command = command
        client = self._script_client(caller)
        state.started = time.monotonic()
        self.running = state
        # The time stands still while a script runs (Redis 7+): keys do not expire midway.
        clocks = [db.clock for db in server.dbs]
        frozen = now_ms()
        for db in server.dbs:
            db.clock = lambda: frozen
        server.begin_propagation_batch()
        try:
            if function_env is None:
                ok, value = self.eval_env.run(script.function, keys, args)
            else:
                ok, value = function_env.call_function(script.function, keys, args)
        finally:
            for db, clock in zip(server.dbs, clocks, strict=True):
                db.clock = clock
            self.running = None
            self.last_run_read = state.read
            if state.busy is not None:
                server.script_busy = ""
                state.busy.end()
            server.end_propagation_batch()
            client.user = server.acl.users.default
        env = function_env or self.eval_env
        if not ok:
            value = value if lua_type(value) == "table" else env.table(
                {b"err": b"ERR " + _bytes(value)})
            result: Any = convert.error_from_table(value, script.sha, env.rawget)
        else:
            result = convert.lua_to_reply(env, value, state.resp, caller.protocol, script.sha)
        if isinstance(result, convert.ScriptError):
            if not result.counted:
                server.stats.error_reply(result.text)
            # "-" + the message, written as it is (a message starting with "-" keeps it)
            return ErrorReply("-" + result.text)
        return result

    def _refuse_at_start(self, caller: Client, flags: frozenset[str], read_only_command: bool,
                         out_of_memory: bool) -> str | None:
        """scriptPrepareForRun's checks for a script with a shebang."""
        if NO_WRITES not in flags:
            persistence = self.server.persistence
            reason = persistence.misconf() if persistence is not None else None
            if reason is not None:
                return _script_misconf(reason)
            if read_only_command:
                return "ERR Can not execute a script with write flag using *_ro command."
            for check in self.server.script_write_checks:  # (READONLY, NOREPLICAS)
                refusal = check(caller)
                if refusal is not None:
                    return refusal
        if out_of_memory and not ({ALLOW_OOM, NO_WRITES} & flags):
            return OOM_TEXT  # (the script counts as a denyoom command, as in Redis)
        return None

    def _script_client(self, caller: Client) -> Client:
        """The client the script's commands run as (Redis's lua_client): no connection, the
        caller's database and user, RESP2 replies unless redis.setresp says otherwise."""
        client = self._client
        if client is None:
            client = self._client = Client(0, self.server, None, addr="lua")
            client.scripted = True
        client.db = caller.db
        client.user = caller.user
        client.logged_in = client.authenticated = True
        client.protocol = 2
        client.refresh_checked_path()
        return client

    # -- the Lua API ----------------------------------------------------------------------------
    def _call_raising(self, *args: Any) -> Any:
        """redis.call: the reply as Lua sees it, or a Lua error (the {err=...} table)."""
        ok, value = self._call(args)
        if not ok:
            raise RaisedError(value)
        return value

    def _pcall(self, *args: Any) -> Any:
        """redis.pcall: the reply, or the {err=...} table."""
        return self._call(args)[1]

    def _call(self, args: tuple[Any, ...]) -> tuple[bool, Any]:
        """(True, the reply as Lua sees it) or (False, {err=...})."""
        state = self.running
        client = self._client
        if state is None or client is None:
            return False, self._err("ERR redis.call/pcall can only be called inside a script "
                                    "invocation")
        if not args:
            return False, self._err("ERR Please specify at least one argument for this redis "
                                    "lib call")
        if not all(isinstance(arg, (bytes, int, float)) and not isinstance(arg, bool)
                   for arg in args):
            return False, self._err("ERR Lua redis lib command arguments must be strings or "
                                    "integers")
        argv = [_arg(arg) for arg in args]
        refusal, spec = self._check(state, client, argv)
        if refusal is not None:
            # (counted as the command's rejection, as Redis's afterErrorReply does)
            self.server.stats.error_reply(refusal)
            if spec is not None:
                spec.rejected_calls += 1
            return False, self._err(refusal, counted=True)
        if spec.is_write:
            state.wrote = True
        elif spec.tracks_reads:
            state.read = True
        reply = call(client, spec, argv)
        if type(reply) is BlockRequest:  # a blocking command does not block in a script
            reply = timeout_reply(reply.timeout_reply)
        value = convert.reply_to_lua(self.env, reply, state.resp)
        return not isinstance(reply, ErrorReply), value

    def _check(self, state: RunState, client: Client, argv: list[bytes]) -> tuple[str | None, Any]:
        """scriptCall's checks: (None, the command's spec), or the refusal and the spec (None
        for an unknown command)."""
        server = self.server
        try:
            spec = find(argv)
        except CommandError:
            return "ERR Unknown Redis command called from script", None
        if not spec.arity_ok(len(argv)):
            return "ERR Wrong number of args calling Redis command from script", None
        if "noscript" in spec.flags and not server.script_deny_disabled:
            return "ERR This Redis command is not allowed from script", spec
        if client.acl_checked:  # (logged with the caller's CLIENT INFO, as Redis does)
            refusal = server.acl.script_refusal(state.caller, spec, argv)
            if refusal is not None:
                return refusal, spec
        if state.read_only and (spec.is_write or "may-replicate" in spec.flags):
            return "ERR Write commands are not allowed from read-only scripts.", spec
        if spec.is_write and not state.wrote:
            for check in server.refusal_checks:  # (MISCONF; the caller's reply may wait for
                refusal = check(state.caller, spec)  # the AOF write, as a write's does)
                if refusal is not None:
                    return refusal, spec
        if spec.denyoom and not state.allow_oom and not state.wrote and state.oom_at_start:
            return OOM_TEXT, spec
        return None, spec

    def _acl_check(self, *args: Any) -> bool:
        """redis.acl_check_cmd: whether the caller's user may run the command."""
        if not args:
            raise RaisedError(self._err("ERR Please specify at least one argument for this "
                                        "redis lib call"))
        if not all(isinstance(arg, (bytes, int, float)) and not isinstance(arg, bool)
                   for arg in args):
            raise RaisedError(self._err("ERR Lua redis lib command arguments must be strings "
                                        "or integers"))
        argv = [_arg(arg) for arg in args]
        try:
            spec = find(argv)
        except CommandError:
            spec = None
        if spec is None:  # (Redis checks no arity here)
            raise RaisedError(self._err("ERR Invalid command passed to redis.acl_check_cmd()"))
        state = self.running
        user = state.caller.user if state is not None else self.server.acl.users.default
        return check_command(user, spec, argv)[0] == ALLOWED

    def _err(self, text: str, counted: bool = False) -> Any:
        table = {b"err": convert.error_table_text(b"-" + text.encode())}
        if counted:
            table[b"ignore_error_stats_update"] = True
        return self.env.table(table)

    def _error_table(self, message: bytes) -> Any:
        """redis.error_reply: "-" added when missing, then luaPushErrorBuff."""
        message = _bytes(message)
        return self.env.table({b"err": convert.error_table_text(
            message if message.startswith(b"-") else b"-" + message)})

    def _busy_check(self) -> bool:
        """The instruction hook's call: past busy-reply-threshold, serve the other clients
        (server/scripting/busy.py); True once SCRIPT KILL asked for the script's end."""
        state = self.running
        if state is None:
            return False
        if state.busy is None:
            threshold = self.server.config["busy-reply-threshold"]
            elapsed_ms = (time.monotonic() - state.started) * 1000
            if not threshold or elapsed_ms < threshold:
                return False
            kill = "SCRIPT KILL" if state.env is None else "FUNCTION KILL"
            self.server.log.warning(
                f"Slow script detected: still in execution after {int(elapsed_ms)} "
                f"milliseconds. You can try killing the script using the {kill} command. "
                f"Script name is: {state.script.sha}.")
            state.busy = busy.BusyPeriod(self.server, state.caller)
            self.server.script_busy = BUSY_TEXT if state.env is None else BUSY_FUNCTION_TEXT
            dispatch.clear_fast_lookup()  # (every command takes the checked path meanwhile)
        state.busy.serve()
        return state.kill_requested

    def kill(self, eval_mode: bool) -> None:
        """SCRIPT KILL (eval_mode) or FUNCTION KILL, from another client while a script is
        busy (scriptKill)."""
        state = self.running
        if state is None or state.busy is None:
            raise CommandError("NOTBUSY No scripts in execution right now.")
        if state.wrote:
            raise CommandError(busy.UNKILLABLE_TEXT)
        if eval_mode != (state.env is None):  # (each command kills its own kind only)
            raise CommandError(self.server.script_busy)
        state.kill_requested = True
        self.server.log.warning("Lua script killed by user with SCRIPT KILL.")

    def _raise(self, text: str) -> None:
        raise RaisedError(self._err(text))

    def _sha1hex(self, *args: Any) -> bytes:
        if len(args) != 1:
            self._raise("ERR wrong number of arguments")
        return hashlib.sha1(lua_string(args[0]) or b"").hexdigest().encode()

    def _log(self, *args: Any) -> tuple[()]:
        """redis.log(level, ...): the strings and numbers, space-separated."""
        if len(args) < 2:
            self._raise("ERR redis.log() requires two arguments or more.")
        level = _lua_number(args[0])
        if level is None:
            self._raise("ERR First argument must be a number (log level).")
        if not 0 <= level <= 3:
            self._raise("ERR Invalid debug level.")
        parts = [text for text in map(lua_string, args[1:]) if text is not None]
        getattr(self.server.log, _LOG_LEVELS[int(level)])(
            b" ".join(parts).decode(errors="replace"))
        return ()  # (no value at all, as Redis's C function returns)

    def _setresp(self, *args: Any) -> tuple[()]:
        if len(args) != 1:
            self._raise("ERR redis.setresp() requires one argument.")
        resp = _lua_number(args[0])
        if resp not in (2, 3):
            self._raise("ERR RESP version must be 2 or 3.")
        if self.running is not None and self._client is not None:
            self.running.resp = self._client.protocol = int(resp)  # type: ignore[arg-type]
        return ()

    def _set_repl(self, *args: Any) -> tuple[()]:
        """redis.set_repl: checked; the AOF gets every write whatever the flags say."""
        if len(args) != 1:
            self._raise("ERR redis.set_repl() requires two arguments.")
        flags = int(_lua_number(args[0]) or 0)
        if flags & ~3:
            self._raise("ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL "
                        "or REPL_NONE.")
        return ()

    def _version(self) -> tuple[bytes, int]:
        major, minor, patch = (int(part) for part in VERSION.split("."))
        return VERSION.encode(), (major << 16) | (minor << 8) | patch

    def _json_encode(self, value: Any) -> bytes:
        """cjson.encode; a Lua error with lua-cjson's message."""
        settings = self.env.json_settings
        encoder = lua_libs.JsonEncoder(int(settings[b"precision"]), int(settings[b"encode_depth"]),
                               bool(settings[b"encode_invalid"]))
        try:
            # (one character per byte: strings' bytes are written as they are)
            return encoder.encode(value, 1).encode("latin-1")
        except lua_libs.JsonError as exc:
            raise LuaMessage(str(exc)) from None
        except RecursionError:  # (a table that holds itself, deeper than Python goes)
            raise LuaMessage(f"Cannot serialise, excessive nesting ({encoder.max_depth + 1})"
                             ) from None

    def _json_decode(self, text: Any) -> Any:
        """cjson.decode; a Lua error with a message like lua-cjson's."""
        if not isinstance(text, bytes):
            raise LuaMessage("bad argument #1 to 'decode' (string expected)")
        try:
            value = lua_libs.json_decode(text)
        except lua_libs.JsonError as exc:
            raise LuaMessage(str(exc)) from None
        max_depth = int(self.env.json_settings[b"decode_depth"])
        too_deep = lua_libs.json_too_deep_at(text, max_depth)
        if too_deep is not None:
            raise LuaMessage(f"Found too many nested data structures ({max_depth + 1}) at "
                             f"character {too_deep}")
        return self._to_lua(value)

    def _to_lua(self, value: Any) -> Any:
        if value is None:
            return self.env.json_null
        if isinstance(value, str):
            return value.encode("utf-8", errors="surrogateescape")
        if isinstance(value, list):
            return self.env.table([self._to_lua(item) for item in value])
        if isinstance(value, dict):
            return self.env.table({key.encode("utf-8", errors="surrogateescape"):
                                   self._to_lua(item) for key, item in value.items()})
        return value


def _not_loading(*args: Any) -> None:
    raise LuaMessage("redis.register_function can only be called on FUNCTION LOAD command")


def engine_of(server: Server) -> ScriptEngine:
    """The server's script engine (made on first use)."""
    scripts = getattr(server, "scripts", None)
    if scripts is None:
        scripts = server.scripts = ScriptEngine(server)  # type: ignore[attr-defined]
    return scripts


class LuaMessage(Exception):
    """A Lua error with this message, raised by a Python function of the Lua API."""


def _unwrap(error: Any) -> Any:
    """The error handler's view of an exception raised in Python: redis.call's error
    table, a message, or None for anything else."""
    if isinstance(error, RaisedError):
        return error.table
    if isinstance(error, (LuaMessage, lua_libs.BitArgumentError)):
        return str(error).encode()
    return None


class RaisedError(Exception):
    """redis.call's error, raised through Lua: the error handler takes the table back."""

    def __init__(self, table: Any) -> None:
        super().__init__("redis.call error")
        self.table = table


def _shebang(body: bytes) -> tuple[frozenset[str] | None, int]:
    """evalExtractShebangFlags: (the flags, the shebang's length) for "#!lua ..." scripts;
    (None, 0) without a shebang."""
    if not body.startswith(b"#!"):
        return None, 0
    end = body.find(b"\n")
    if end < 0:
        raise CommandError("ERR Invalid script shebang")
    parts = body[:end].decode(errors="replace").split()
    if not parts:
        raise CommandError("ERR Invalid engine in script shebang")
    if parts[0] != "#!lua":
        raise CommandError(f"ERR Unexpected engine in script shebang: {parts[0]}")
    flags: set[str] = set()
    for part in parts[1:]:
        if not part.startswith("flags="):
            raise CommandError(f"ERR Unknown lua shebang option: {part}")
        for flag in part[6:].split(",") if part[6:] else ():  # ("flags=" alone: none)
            if flag not in SHEBANG_FLAGS:
                raise CommandError(f"ERR Unexpected flag in script shebang: {flag}")
            flags.add(flag)
    return frozenset(flags), end


def _script_misconf(refusal: str) -> str:
    if "RDB" in refusal:
        return ("MISCONF Redis is configured to save RDB snapshots, but it's currently unable "
                "to persist to disk. Writable scripts are blocked. Use 'no-writes' flag for "
                "read only scripts.")
    reason = refusal.rpartition("AOF error: ")[2] if "AOF error: " in refusal else ""
    return ("MISCONF Redis is configured to persist data to AOF, but it's currently unable to "
            "persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only "
            f"scripts. AOF error: {reason}")


def _arg(value: Any) -> bytes:
    """A redis.call argument (luaArgsToRedisArgv): strings as they are, integral numbers as
    integers, others in their shortest form."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, bool):  # (refused by the Lua side before this)
        return b""
    number = float(value)  # (a Lua number is a double)
    if number.is_integer() and abs(number) < 2.0**63:
        return b"%d" % int(number)
    return repr(number).encode()  # the shortest text that reads back the same (Redis 7.2+)


def _bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8", errors="surrogateescape")


def _lua_number(value: Any) -> float | None:
    """lua_tonumber: numbers, and strings that read as numbers; None otherwise."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if isinstance(value, bytes):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def lua_string(value: Any) -> bytes | None:
    """lua_tolstring: strings, and numbers as Lua prints them (%.14g); None otherwise."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return b"%.14g" % float(value)
