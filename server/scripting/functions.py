"""Redis functions (functions.c, function_lua.c): libraries of Lua functions loaded with
FUNCTION LOAD, called with FCALL / FCALL_RO, and kept by the AOF and the snapshot.

A library is Lua code starting with a "#!lua name=<library>" line. Loading it runs the code
once, in an interpreter of its own (not EVAL's: SCRIPT FLUSH leaves the functions alone),
with only a `redis` table of register_function, log and the version in reach; the functions
it registers run later with the same API as EVAL's scripts (engine.py runs them), their keys
and arguments given as their two arguments.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lupa.lua51 import lua_type

from protocol.inline import split_args
from protocol.reader import ProtocolError
from server.errors import CommandError
from server.scripting.engine import SHEBANG_FLAGS, RaisedError, Script, engine_of, lua_string

if TYPE_CHECKING:
    from server.scripting.engine import ScriptEngine
    from server.scripting.lua_env import LuaEnv

ENGINE = "LUA"
LOAD_TIMEOUT_S = 0.5  # LOAD_TIMEOUT_MS
_NAME_RE = re.compile(rb"[A-Za-z0-9_]+\Z")
_BAD_NAME = ("Library names can only contain letters, numbers, or underscores(_) and must be "
             "at least one character long")


@dataclass(slots=True)
class Function:
    name: bytes
    library: Library
    script: Script  # what engine.run takes: the callback, the flags, the name for errors
    description: bytes | None
    flags: tuple[str, ...]  # in SHEBANG_FLAGS' order (FUNCTION LIST's)


@dataclass(slots=True)
class Library:
    name: bytes
    code: bytes  # the whole FUNCTION LOAD payload, shebang included
    functions: dict[bytes, Function] = field(default_factory=dict)


class Functions:
    """The loaded libraries and their functions (Redis's functionsLibCtx). Library names are
    case-sensitive, function names not: `functions` and each library's are keyed by the
    lowercased name."""

    def __init__(self, scripts: ScriptEngine) -> None:
        self.scripts = scripts
        self.libraries: dict[bytes, Library] = {}
        self.functions: dict[bytes, Function] = {}
        self._env: LuaEnv | None = None
        self._loading: Library | None = None  # the library FUNCTION LOAD is running
        self._load_deadline = 0.0

    @property
    def env(self) -> LuaEnv:
        if self._env is None:
            self._env = self.scripts.new_env({
                "register_function": self._register_function,
                "load_timed_out": self._load_timed_out,
            })
        return self._env

    # -- loading ---------------------------------------------------------------------------------
    def load(self, payload: bytes, replace: bool = False, timeout: bool = True) -> bytes:
        """functionsCreateWithLibraryCtx: the library's name, or CommandError with Redis's
        text. `timeout` False lifts the 500 ms limit (loading the AOF or a snapshot)."""
        engine, name, code = _metadata(payload)
        if not _NAME_RE.match(name):
            raise CommandError(f"ERR {_BAD_NAME}")
        if engine.upper() != ENGINE.encode():  # (engine names are case-insensitive)
            raise CommandError(f"ERR Engine '{_text(engine)}' not found")
        old = self.libraries.get(name)
        if old is not None and not replace:
            raise CommandError(f"ERR Library '{_text(name)}' already exists")
        library = Library(name, payload)
        env = self.env
        self._loading = library
        self._load_deadline = time.monotonic() + LOAD_TIMEOUT_S if timeout else 0.0
        try:
            ok, error = env.load_library(code)
        finally:
            self._loading = None
        if ok is None:
            raise CommandError(f"ERR Error compiling function: {_text(error)}")
        if not ok:
            raise CommandError(f"ERR Error registering functions: {_error_message(env, error)}")
        if not library.functions:
            raise CommandError("ERR No functions registered")
        for key, function in library.functions.items():
            owner = self.functions.get(key)
            if owner is not None and owner.library is not old:
                raise CommandError(f"ERR Function {_text(function.name)} already exists")
        if old is not None:
            self._unlink(old)
        self._link(library)
        return name

    def _load_timed_out(self) -> bool:
        return bool(self._load_deadline) and time.monotonic() > self._load_deadline

    def _register_function(self, *args: Any) -> None:
        """redis.register_function(name, callback) or redis.register_function{...}."""
        library = self._loading
        if library is None:
            raise self._error("redis.register_function can only be called on FUNCTION LOAD "
                             "command")
        if not 1 <= len(args) <= 2:
            raise self._error("wrong number of arguments to redis.register_function")
        if len(args) == 2:
            name, callback = args
            if not isinstance(name, (bytes, int, float)) or isinstance(name, bool):
                raise self._error("first argument to redis.register_function must be a string")
            if lua_type(callback) != "function":
                raise self._error("second argument to redis.register_function must be a "
                                 "function")
            name, description, flags = lua_string(name), None, ()
        else:
            name, callback, description, flags = self._named_args(args[0])
        if not _NAME_RE.match(name):
            raise self._error(_BAD_NAME)
        if name.lower() in library.functions:  # (function names are case-insensitive)
            raise self._error("Function already exists in the library")
        script = Script(_text(name), b"", callback, frozenset(flags))
        library.functions[name.lower()] = Function(name, library, script, description, flags)

    def _error(self, message: str) -> RaisedError:
        """register_function's errors: Redis gives them no position (luaPushError)."""
        return RaisedError(self.env.table({b"err": b"ERR " + message.encode()}))

    def _named_args(self, table: Any) -> tuple[bytes, Any, bytes | None, tuple[str, ...]]:
        if lua_type(table) != "table":
            raise self._error("calling redis.register_function with a single argument is only "
                             "applicable to Lua table (representing named arguments).")
        name = description = callback = None
        flags: tuple[str, ...] = ()
        for key, value in table.items():
            if not isinstance(key, (bytes, int, float)) or isinstance(key, bool):
                raise self._error("named argument key given to redis.register_function is not "
                                 "a string")
            lowered = lua_string(key).lower()
            if lowered == b"function_name":
                if not isinstance(value, (bytes, int, float)) or isinstance(value, bool):
                    raise self._error("function_name argument given to redis.register_function "
                                     "must be a string")
                name = lua_string(value)
            elif lowered == b"description":
                if not isinstance(value, (bytes, int, float)) or isinstance(value, bool):
                    raise self._error("description argument given to redis.register_function "
                                     "must be a string")
                description = lua_string(value)
            elif lowered == b"callback":
                if lua_type(value) != "function":
                    raise self._error("callback argument given to redis.register_function must "
                                     "be a function")
                callback = value
            elif lowered == b"flags":
                if lua_type(value) != "table":
                    raise self._error("flags argument to redis.register_function must be a "
                                     "table representing function flags")
                flags = _flags(value)
                if flags is None:
                    raise self._error("unknown flag given")
            else:
                raise self._error("unknown argument given to redis.register_function")
        if name is None:
            raise self._error("redis.register_function must get a function name argument")
        if callback is None:
            raise self._error("redis.register_function must get a callback argument")
        return name, callback, description, flags

    # -- the registry ----------------------------------------------------------------------------
    def _link(self, library: Library) -> None:
        self.libraries[library.name] = library
        for name, function in library.functions.items():
            self.functions[name] = function

    def _unlink(self, library: Library) -> None:
        del self.libraries[library.name]
        for name in library.functions:
            self.functions.pop(name, None)

    def delete(self, name: bytes) -> None:
        library = self.libraries.get(name)
        if library is None:
            raise CommandError("ERR Library not found")
        self._unlink(library)

    def flush(self) -> None:
        """FUNCTION FLUSH: every library, and the interpreter they were loaded in."""
        self.libraries.clear()
        self.functions.clear()
        self._env = None

    def restore(self, codes: list[bytes], policy: str) -> None:
        """FUNCTION RESTORE's libraries, all or none: `policy` flush (the old ones go),
        append (a library of the same name is an error) or replace."""
        saved = dict(self.libraries), dict(self.functions)
        try:
            if policy == "flush":
                self.libraries.clear()
                self.functions.clear()
            elif policy == "append":
                for code in codes:
                    name = _metadata(code)[1]
                    if name in self.libraries:
                        raise CommandError(f"ERR Library {_text(name)} already exists")
            for code in codes:
                self.load(code, replace=policy == "replace", timeout=False)
        except CommandError:
            self.libraries, self.functions = saved
            raise

    def payloads(self) -> list[bytes]:
        """Every library's code, for the AOF rewrite and the snapshot."""
        return [library.code for library in self.libraries.values()]

    def memory(self) -> int:
        """The interpreter's heap (INFO's used_memory_vm_functions)."""
        return self._env.memory() if self._env is not None else 0


def registry_of(server: Any) -> Functions:
    """The server's function libraries (made on first use)."""
    registry = getattr(server, "functions", None)
    if registry is None:
        registry = server.functions = Functions(engine_of(server))
    return registry


def libraries_of(server: Any) -> list[bytes]:
    """The libraries' code, for the AOF and the snapshot ([] when none was ever loaded)."""
    registry = getattr(server, "functions", None)
    return registry.payloads() if registry is not None else []


def install(server: Any, libraries: list[bytes]) -> None:
    """Load the libraries a snapshot held, in place of any loaded before (no time limit, as
    for the AOF's FUNCTION LOADs)."""
    registry = registry_of(server)
    registry.flush()
    for code in libraries:
        registry.load(code, replace=False, timeout=False)


def _metadata(payload: bytes) -> tuple[bytes, bytes, bytes]:
    """functionExtractLibMetaData: (the engine, the library name, its code: the payload from
    the end of the shebang line on, so that line numbers stay right)."""
    if not payload.startswith(b"#!"):
        raise CommandError("ERR Missing library metadata")
    end = payload.find(b"\n")
    if end < 0:
        raise CommandError("ERR Invalid library metadata")
    try:
        parts = split_args(payload[:end])  # (sdssplitargs)
    except ProtocolError:
        parts = []
    if not parts:
        raise CommandError("ERR Invalid library metadata")
    engine = parts[0][2:]
    name = None
    for part in parts[1:]:
        if part[:5].lower() == b"name=":
            if name is not None:
                raise CommandError("ERR Invalid metadata value, name argument was given "
                                   "multiple times")
            name = part[5:]
            continue
        raise CommandError(f"ERR Invalid metadata value given: {_text(part)}")
    if name is None:
        raise CommandError("ERR Library name was not given")
    return engine, name, payload[end:]


def _flags(table: Any) -> tuple[str, ...] | None:
    """luaRegisterFunctionReadFlags: the flags, in Redis's order; None for an unknown one."""
    given: set[str] = set()
    for _, value in table.items():
        if not isinstance(value, bytes) or value.decode(errors="replace") not in SHEBANG_FLAGS:
            return None
        given.add(value.decode())
    return tuple(flag for flag in SHEBANG_FLAGS if flag in given)


def _error_message(env: LuaEnv, error: Any) -> str:
    """luaExtractErrorInformation's message of a load-time error."""
    if lua_type(error) == "table":
        message = env.rawget(error, b"err")
        if isinstance(message, bytes):
            return _text(message)
    return _text(error if isinstance(error, bytes) else str(error).encode())


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
