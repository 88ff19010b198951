"""The Lua interpreter scripts run in, set up as Redis's scriptingInit does it.

Lua 5.1 (lupa.lua51, the version Redis embeds) with: the base, table, string and math
libraries, `bit`, `cjson`, `cmsgpack` and `struct`; no io, os, package, loadfile or dofile;
Python itself out of reach (no `python` global, no attribute access on the Python functions
handed to Lua). The globals are locked once set up: reading an unknown one or assigning one is
an error, as in Redis. The Lua side of the `redis` API is written in Lua below; it calls the Python
functions of engine.py (given to `_setup`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import lupa.lua51 as lua51

from server.scripting import lua_libs, lua_msgpack, lua_struct

# Chunk name of the code below: the error handler skips its frames, so that an error raised
# by redis.call points at the script's line, as Redis's C functions do.
INTERNAL = b"=xstreamd"

PRELUDE = rb"""
local host, bitlib, lrand48, lseed = ...
local error, type, select, unpack, tostring, rawget, rawset, setmetatable, xpcall, pairs, next =
      error, type, select, unpack, tostring, rawget, rawset, setmetatable, xpcall, pairs, next
local lua_setmetatable, lua_rawset = setmetatable, rawset
local lua_pcall, lua_loadstring, lua_load = pcall, loadstring, load
local lua_setfenv = setfenv

local function pack(...) return {n = select('#', ...), ...} end

local function checked_args(...)
  local n = select('#', ...)
  if n == 0 then
    return nil, {err = 'ERR Please specify at least one argument for this redis lib call'}
  end
  local args = {...}
  for i = 1, n do
    local kind = type(args[i])
    if kind ~= 'string' and kind ~= 'number' then
      return nil, {err = 'ERR Lua redis lib command arguments must be strings or integers'}
    end
  end
  return args, nil, n
end

-- redis.call and redis.pcall are Python functions (C functions to Lua, as in Redis: an
-- error they raise, and a `return redis.call(...)`, keep the script's line).
local redis = {}
redis.call = host.call
redis.pcall = host.pcall
redis.error_reply = function(...)
  local msg = ...
  if select('#', ...) ~= 1 or type(msg) ~= 'string' then
    return {err = 'ERR wrong number or type of arguments'}
  end
  return host.error_table(msg)
end
redis.status_reply = function(...)
  local msg = ...
  if select('#', ...) ~= 1 or type(msg) ~= 'string' then
    return {err = 'ERR wrong number or type of arguments'}
  end
  return {ok = msg}
end
-- (C-level Python functions: an error they raise keeps the script's line even in a
-- `return redis.xxx(...)` tail call, as Redis's C functions do)
redis.sha1hex = host.sha1hex
redis.log = host.log
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.setresp = host.setresp
redis.set_repl = host.set_repl
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL =
  0, 1, 2, 2, 3
if host.eval_api then  -- (EVAL's only: a function's redis table has none of them, as in Redis)
  redis.replicate_commands = function() return true end
  redis.breakpoint = function() return false end
  redis.debug = function() end
end
redis.acl_check_cmd = host.acl_check
redis.REDIS_VERSION, redis.REDIS_VERSION_NUM = host.version()

-- Binary chunks (string.dump's) are refused, as in Redis.
local function is_binary(chunk)
  return type(chunk) == 'string' and chunk:sub(1, 1) == '\27'
end
local script_env  -- (set below, once the globals are locked)
loadstring = function(chunk, ...)
  if is_binary(chunk) then return nil, 'binary chunks are not allowed' end
  local fn, err = lua_loadstring(chunk, ...)
  if not fn then return nil, err end
  if script_env then lua_setfenv(fn, script_env) end
  return fn
end
load = function(reader, ...)
  if type(reader) == 'function' then
    local parts = {}
    while true do
      local part = reader()
      if part == nil or part == '' then break end
      parts[#parts + 1] = part
    end
    reader = table.concat(parts)
  end
  return loadstring(reader, ...)
end

-- Redis's pcall hands back an error table's message rather than the table.
pcall = function(f, ...)
  local r = pack(lua_pcall(f, ...))
  if not r[1] and type(r[2]) == 'userdata' then  -- (an error raised in Python)
    r[2] = host.unwrap(r[2]) or r[2]
  end
  if not r[1] and type(r[2]) == 'table' and type(r[2].err) == 'string' then
    r[2] = r[2].err
  end
  return unpack(r, 1, r.n)
end

-- Redis's math.random: rand48, randomly seeded before every script (math.randomseed sets it).
math.random = function(...)
  local n = select('#', ...)
  local r = (lrand48() % 2147483647) / 2147483647
  if n == 0 then return r end
  local m, u = ...
  if n == 1 then
    if not (1 <= m) then error('bad argument #1 to \'random\' (interval is empty)', 2) end
    return math.floor(r * m) + 1
  elseif n == 2 then
    if not (m <= u) then error('bad argument #2 to \'random\' (interval is empty)', 2) end
    return math.floor(r * (u - m + 1)) + m
  end
  error('wrong number of arguments', 2)
end
math.randomseed = function(seed) lseed(seed) end

bit = bitlib
local json = host.json_settings
local function setting(name, check)
  return function(value)
    if value ~= nil then
      if check then check(value) end
      json[name] = value
    end
    return json[name]
  end
end
cjson = {
  encode = host.json_encode,  -- (Python functions: C functions to Lua, as lua-cjson's are)
  decode = host.json_decode,
  null = host.json_null,
  encode_keep_buffer = setting('keep_buffer'),
  encode_max_depth = setting('encode_depth'),
  decode_max_depth = setting('decode_depth'),
  encode_invalid_numbers = setting('encode_invalid'),
  decode_invalid_numbers = setting('decode_invalid'),
  encode_number_precision = setting('precision', function(n)
    if type(n) ~= 'number' or n < 1 or n > 14 then
      error("bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)", 3)
    end
  end),
  encode_sparse_array = function() return false, 2, 10 end,
  _NAME = 'cjson', _VERSION = '2.1.0',
}

-- The error handler: an error becomes {err=..., source=..., line=...}, the line being the
-- script's (not the Lua API function's that raised it).
local dbg = debug
function __redis__err__handler(err)
  local level = 2
  local i = dbg.getinfo(level, 'nSl')
  if i and i.what == 'C' then
    level = 3
    i = dbg.getinfo(level, 'nSl')
  end
  while i and i.source == '=xstreamd' do
    level = level + 1
    i = dbg.getinfo(level, 'nSl')
  end
  if type(err) == 'userdata' then  -- (an error raised in Python: a table, or a message)
    err = host.unwrap(err) or err
    if type(err) == 'string' and i and i.currentline > 0 then
      err = i.short_src .. ':' .. i.currentline .. ': ' .. err
    end
  end
  if type(err) ~= 'table' or type(rawget(err, 'err')) ~= 'string' then
    err = {err = 'ERR ' .. tostring(err)}
  end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end
local handler = __redis__err__handler
_G.redis = redis

-- Redis 8 keeps os.clock only, and (since its 2025 sandbox fixes) drops getfenv, setfenv and
-- newproxy, with which a script could reach the real globals.
local clock = os.clock
io, os, package, module, require, dofile, loadfile, print, python, debug =
  nil, {clock = clock}, nil, nil, nil, nil, nil, nil, nil, nil
getfenv, setfenv, newproxy = nil, nil, nil

-- Redis makes the globals and the libraries read-only tables. Stock Lua cannot, so a script
-- that works around the lock (rawset, setmetatable) changes them only until it ends: they
-- are put back as they were after every script.
local dbg_setmetatable = dbg.setmetatable
local locked = {_G, redis, string, table, math, bit, cjson, coroutine, os}
local saved = {}
local locked_meta = {}  -- (the metatable restore() gives a locked table back: see cmsgpack)
local string_meta = getmetatable('')
local string_meta_saved = {}
local globals_meta

local function snapshot(t)
  local copy = {}
  for k, v in next, t do copy[k] = v end
  return copy
end

local function put_back(t, copy)
  local extra = {}
  for k in next, t do
    if copy[k] == nil then extra[#extra + 1] = k end
  end
  for i = 1, #extra do rawset(t, extra[i], nil) end
  for k, v in next, copy do
    if rawget(t, k) ~= v then rawset(t, k, v) end
  end
end

local function restore()
  for i = 1, #locked do
    local t = locked[i]
    put_back(t, saved[t])
    if t ~= globals_meta then dbg_setmetatable(t, locked_meta[t]) end
  end
  dbg_setmetatable(_G, globals_meta)
  put_back(string_meta, string_meta_saved)
  dbg_setmetatable('', string_meta)
end

-- Run a script (with KEYS and ARGV set), through the error handler.
-- Every 100,000 instructions the host looks at how long the script has run (past
-- busy-reply-threshold it answers the other clients BUSY, and takes SCRIPT KILL). A killed
-- script gets an error at every line from then on, so that pcall cannot keep it alive.
-- (The error is raised in the script's code only: never in this chunk's, which runs the
-- script and must not fail.)
local KILLED = {err = 'ERR Script killed by user with SCRIPT KILL...'}
local function in_script()
  local info = dbg.getinfo(3, 'S')
  return info ~= nil and info.source ~= '=xstreamd'
end
local function killed_hook()
  if in_script() then error(KILLED) end
end
local function busy_hook()
  if host.busy_check() then
    dbg.sethook(killed_hook, 'l')
    if in_script() then error(KILLED) end
  end
end

local script_globals  -- (what scripts' global names read: set below)
local function run(fn, keys, argv)
  rawset(_G, 'KEYS', keys)
  rawset(_G, 'ARGV', argv)
  rawset(script_globals, 'KEYS', keys)
  rawset(script_globals, 'ARGV', argv)
  dbg.sethook(busy_hook, '', 100000)
  local ok, result = xpcall(fn, handler)
  dbg.sethook()
  restore()
  return ok, result
end

-- FUNCTION LOAD: a library's code runs in an environment of its own, empty, whose names are
-- looked up in `api`: while the code runs the load-time API (a `redis` table with
-- register_function, log and the version), afterwards the globals; so the functions it
-- registers see the globals when they run, as in Redis (whose function engine switches its
-- globals' __index the same way).
local function missing_global(_, name)
  error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
end
local function readonly()
  error("Attempt to modify a readonly table", 2)
end
local protected = {__index = missing_global, __newindex = readonly}
local function load_library(chunk)
  local load_redis = {register_function = host.register_function, log = redis.log,
                      REDIS_VERSION = redis.REDIS_VERSION,
                      REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM}
  for _, level in ipairs({'LOG_DEBUG', 'LOG_VERBOSE', 'LOG_NOTICE', 'LOG_WARNING'}) do
    load_redis[level] = redis[level]
  end
  local api = {redis = setmetatable(load_redis, protected)}
  local env = setmetatable({}, {
    __index = function(_, name)
      local value = rawget(api, name)
      if value == nil then
        error("Script attempted to access nonexistent global variable '"
              .. tostring(name) .. "'", 2)
      end
      return value
    end,
    __newindex = readonly,
  })
  lua_setfenv(chunk, env)
  dbg.sethook(function()
    if host.load_timed_out() then error('FUNCTION LOAD timeout') end
  end, '', 100000)
  local ok, err = xpcall(chunk, handler)
  dbg.sethook()
  api = script_globals
  return ok, err
end

-- FCALL: a registered function gets its keys and arguments as its two arguments.
local function call_function(callback, keys, args)
  return run(function() return callback(keys, args) end, nil, nil)
end

-- cmsgpack and struct (lua_msgpack.py, lua_struct.py), read-only as in Redis: each global is an
-- empty table whose metatable (hidden: getmetatable gives false) reads the library and refuses
-- writes, so that assigning a field fails as it does in Redis. (rawset still writes into the
-- empty table, until the script ends.)
local function refuse_write()
  error("Attempt to modify a readonly table", 2)
end
for _, name in ipairs({'cmsgpack', 'struct'}) do
  local meta = {__index = host[name], __newindex = refuse_write, __metatable = false}
  local proxy = setmetatable({}, meta)
  rawset(_G, name, proxy)
  locked[#locked + 1] = proxy
  locked_meta[proxy] = meta
end

-- Lock the globals, as Redis does once they are set up.
-- (lupa looks `debug` up itself on every call from Python: it must find nil, not an error)
globals_meta = {
  __index = function(_, name)
    if name == 'debug' then return nil end
    error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
  end,
  __newindex = function(_, name)
    error("Attempt to modify a readonly table", 2)
  end,
}
locked[#locked + 1] = globals_meta  -- (getmetatable(_G) hands it out)
for i = 1, #locked do saved[locked[i]] = snapshot(locked[i]) end
string_meta_saved = snapshot(string_meta)
saved[_G].KEYS, saved[_G].ARGV = nil, nil
setmetatable(_G, globals_meta)

-- Redis's globals and libraries are read-only tables (a patched Lua). Here scripts run in an
-- empty environment that refuses every assignment and reads `script_globals`: the globals,
-- with a read-only view in place of each library table (and of _G and the string metatable).
-- A view is an empty table whose metatable reads the real one and refuses writes; next,
-- pairs and rawget see through it, getmetatable gives what the real table's would (nil for a
-- library), and setmetatable and rawset refuse it. So `redis.call = f` fails as in Redis.
-- (A chunk that reaches the real tables anyway changes them until the script ends only:
-- restore() puts them back.)
-- (The wrappers call next, rawget, pairs and getmetatable by those names, and not as tail
-- calls: an argument error then names the function as Redis's does.)
local getmetatable = getmetatable
local backing, view_meta, view_of = {}, {}, {}
local function view(t, meta)
  local v = lua_setmetatable({}, {__index = t, __newindex = readonly, __metatable = false})
  backing[v], view_meta[v], view_of[t] = t, meta, v
  return v
end
for _, lib in ipairs({redis, string, table, math, bit, cjson, coroutine, os}) do view(lib) end
local function viewed(t)  -- a copy of t whose library values are their views
  local copy = {}
  for k, v in next, t do copy[k] = view_of[v] or v end
  return copy
end
script_globals = lua_setmetatable(viewed(_G), globals_meta)  -- (an unknown name: an error)
local string_meta_view = view(viewed(string_meta))
script_globals._G = view(script_globals)  -- (its metatable's view is set below)
-- Their argument errors are Lua's texts, at the script's line. (Lua functions, unlike the C
-- ones they stand for, lose that line in a `return next(nil)` tail call.)
local function bad_argument(n, name, expected, given, ...)
  local got = select('#', ...) >= n and ' got ' .. type(given) or ' got no value'
  error("bad argument #" .. n .. " to '" .. name .. "' (" .. expected .. ',' .. got .. ')', 3)
end
local function view_next(...)
  local t, k = ...
  if type(t) ~= 'table' then bad_argument(1, 'next', 'table expected', t, ...) end
  local key, value = next(backing[t] or t, k)
  return key, value
end
script_globals.next = view_next
script_globals.pairs = function(...)
  local t = ...
  if type(t) ~= 'table' then bad_argument(1, 'pairs', 'table expected', t, ...) end
  return view_next, t, nil
end
script_globals.rawget = function(...)
  local t, k = ...
  if type(t) ~= 'table' then bad_argument(1, 'rawget', 'table expected', t, ...) end
  if select('#', ...) < 2 then error("bad argument #2 to 'rawget' (value expected)", 2) end
  local value = rawget(backing[t] or t, k)
  return value
end
script_globals.getmetatable = function(...)
  if select('#', ...) == 0 then error("bad argument #1 to 'getmetatable' (value expected)", 2) end
  local x = ...
  if backing[x] then return view_meta[x] end
  local mt = getmetatable(x)
  if mt == string_meta then return string_meta_view end
  return mt
end
local is_locked = {}
for i = 1, #locked do is_locked[locked[i]] = true end
for v in next, backing do is_locked[v] = true end
is_locked[script_globals] = true
-- (the globals: `setmetatable` and `rawset` are locals in this chunk; their errors carry no
-- position, as those of Redis's C functions)
local function locked_setmetatable(t, mt)
  if is_locked[t] then error("Attempt to modify a readonly table", 0) end
  return lua_setmetatable(t, mt)
end
local function locked_rawset(t, k, v)
  if is_locked[t] then error("Attempt to modify a readonly table", 0) end
  return lua_rawset(t, k, v)
end
lua_rawset(_G, 'setmetatable', locked_setmetatable)
lua_rawset(_G, 'rawset', locked_rawset)
script_globals.setmetatable, script_globals.rawset = locked_setmetatable, locked_rawset
globals_meta.__metatable = lua_setmetatable({}, {__index = globals_meta, __newindex = readonly})
view_meta[script_globals._G] = globals_meta.__metatable
script_env = lua_setmetatable({}, {__index = script_globals, __newindex = readonly,
                                   __metatable = false})
for i = 1, #locked do saved[locked[i]] = snapshot(locked[i]) end
saved[_G].KEYS, saved[_G].ARGV = nil, nil
return run, load_library, call_function
"""


def _deny_attributes(obj: object, name: object, setting: bool) -> object:
    raise AttributeError("not accessible from Lua")


class LuaEnv:
    """One interpreter: scripts are compiled into it and run in it, one at a time."""

    def __init__(self, host: dict[str, Callable[..., Any]]) -> None:
        self.runtime = lua51.LuaRuntime(encoding=None, register_eval=False,
                                        register_builtins=False, unpack_returned_tuples=True,
                                        attribute_filter=_deny_attributes)
        self.rand = lua_libs.Rand48()
        setup = self.runtime.execute(b"return loadstring(...)", PRELUDE, INTERNAL)
        # lua-cjson's settings (encode_keep_buffer and decode_invalid_numbers change nothing
        # here), read by the Python encoder and decoder.
        self.json_settings = self.runtime.table_from({
            b"keep_buffer": True, b"encode_depth": 1000, b"decode_depth": 1000,
            b"precision": 14, b"encode_invalid": False, b"decode_invalid": True})
        host_table = self.runtime.table_from({
            b"json_null": self.runtime.eval(  # (a NULL lightuserdata in Redis)
                b"(function() local p = newproxy(true) "
                b"getmetatable(p).__tostring = function() return 'userdata: (nil)' end "
                b"return p end)()"),
            b"json_settings": self.json_settings,
            **{name.encode(): fn for name, fn in host.items()},
        })
        self._add_libraries(host_table, host.get("unwrap"))
        bits = self.runtime.table_from({name.encode(): fn
                                        for name, fn in lua_libs.BIT_FUNCTIONS.items()})
        self._run, self._load_library, self._call_function = setup(
            host_table, bits, self.rand.next, self.rand.seed)
        self._loadstring = self.runtime.eval(b"loadstring")
        self.rawget = self.runtime.eval(b"rawget")
        self._gc_count = self.runtime.eval(b"function() return collectgarbage('count') end")
        self._gc_step = self.runtime.eval(b"function() collectgarbage('step', 50) end")
        self._runs = 0
        self.json_null = host_table[b"json_null"]

    def _add_libraries(self, host_table: Any, unwrap: Callable[[Any], Any] | None) -> None:
        """cmsgpack and struct for the prelude (host.cmsgpack, host.struct), and their errors
        for the error handler and pcall (host.unwrap)."""
        table_from = self.runtime.table_from
        host_table[b"cmsgpack"] = table_from({
            **{name.encode(): fn for name, fn in lua_msgpack.functions(
                table_from, self.runtime.table).items()},
            **{name.encode(): value for name, value in lua_msgpack.INFO.items()}})
        host_table[b"struct"] = table_from({name.encode(): fn
                                            for name, fn in lua_struct.FUNCTIONS.items()})

        def unwrap_library_errors(error: Any) -> Any:
            # A luaL_error message gets the script's position from the handler; an error Lua
            # raises inside a C function (a nil table index) has none: it is given as a table.
            if isinstance(error, lua_struct.LuaLibError):
                if error.positioned:
                    return error.message
                return table_from({b"err": b"ERR " + error.message})
            return unwrap(error) if unwrap is not None else None

        host_table[b"unwrap"] = unwrap_library_errors

    def compile(self, body: bytes) -> tuple[Any, bytes | None]:
        """(the function, None), or (None, Lua's compile error)."""
        result = self._loadstring(body, b"@user_script")
        if isinstance(result, tuple):  # (nil, message)
            return None, result[1]
        return result, None

    def run(self, function: Any, keys: list[bytes], argv: list[bytes]) -> tuple[bool, Any]:
        """Run a compiled script: (True, its value) or (False, the error table)."""
        self.rand.seed(random.getrandbits(32))  # (Redis 7+: a new sequence each run)
        table_from = self.runtime.table_from
        result = self._run(function, table_from(keys), table_from(argv))
        # A GC step every 50 scripts, as Redis takes, keeps the garbage of many small scripts
        # from piling up between Lua's own collections.
        self._runs += 1
        if self._runs % 50 == 0:
            self._gc_step()
        if not isinstance(result, tuple):  # (the script returned nothing)
            return result, None
        return result[0], result[1]

    def load_library(self, code: bytes) -> tuple[Any, Any]:
        """Compile a library's code (chunk name @user_function) and run it with the load-time
        API as its globals: (True, None), (False, the error table) or (None, the compile
        error)."""
        result = self._loadstring(code, b"@user_function")
        if isinstance(result, tuple):
            return None, result[1]
        outcome = self._load_library(result)
        return (outcome[0], outcome[1]) if isinstance(outcome, tuple) else (outcome, None)

    def call_function(self, callback: Any, keys: list[bytes],
                      args: list[bytes]) -> tuple[bool, Any]:
        """Run a registered function: (True, its value) or (False, the error table)."""
        self.rand.seed(random.getrandbits(32))
        table_from = self.runtime.table_from
        result = self._call_function(callback, table_from(keys), table_from(args))
        if not isinstance(result, tuple):
            return result, None
        return result[0], result[1]

    def memory(self) -> int:
        return int(self._gc_count() * 1024)

    def table(self, items: Any) -> Any:
        return self.runtime.table_from(items)

    def new_table(self) -> Any:
        return self.runtime.table()
