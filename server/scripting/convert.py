"""Conversions between Redis replies and Lua values, by Redis's rules (script_lua.c).

A command's reply reaches Lua the way Redis hands it over: encoded in the protocol the
script chose (redis.setresp, 2 by default) and parsed back, so that every reply shape a
handler can return converts the same way. RESP2: integer -> number, bulk -> string, null
bulk or array -> false, array -> table, status -> {ok=...}, error -> {err=...}. RESP3 adds
null -> nil, booleans, {double=n}, {big_number=s}, {map={...}}, {set={[x]=true}},
{verbatim_string={format=..., string=...}}.

The script's own result goes the other way: string -> bulk, number -> integer (truncated),
boolean -> 1 / null (RESP2 scripts) or true / false, {err=...} -> error, {ok=...} -> status,
{double=...}, {big_number=...}, {map=...}, {set=...}, {verbatim_string=...}, any other table
-> array (up to its first nil), anything else -> null.
"""

from __future__ import annotations

from typing import Any

from lupa.lua51 import lua_type

from protocol.encoder import ErrorReply, Raw, SetReply, SimpleString, Verbatim, encode
from server.scripting.lua_env import LuaEnv

# Nesting a reply may have: Redis stops at its Lua stack's limit.
MAX_DEPTH = 300


def error_table_text(message: bytes) -> bytes:
    """luaPushErrorBuff: "-CODE msg" or "msg" -> "CODE msg" (ERR when there is no code)."""
    if message.startswith(b"-"):
        code, space, rest = message[1:].partition(b" ")
        if not space:
            code, rest = b"ERR", message[1:]
    else:
        code, rest = b"ERR", message
    return code + b" " + rest.strip(b"\r\n")


# -- replies -> Lua -------------------------------------------------------------------------------
def reply_to_lua(env: LuaEnv, reply: Any, resp: int) -> Any:
    data = encode(reply, resp)
    value, _ = _parse(env, data, 0)
    return value


def _line(data: bytes, pos: int) -> tuple[bytes, int]:
    end = data.index(b"\r\n", pos)
    return data[pos:end], end + 2


def _parse(env: LuaEnv, data: bytes, pos: int) -> tuple[Any, int]:
    kind = data[pos:pos + 1]
    text, pos = _line(data, pos + 1)
    if kind == b"+":
        return env.table({b"ok": text}), pos
    if kind == b"-":
        return env.table({b"err": error_table_text(b"-" + text),
                          b"ignore_error_stats_update": True}), pos
    if kind == b":":
        return int(text), pos
    if kind in (b"$", b"="):
        size = int(text)
        if size < 0:
            return False, pos
        body, pos = data[pos:pos + size], pos + size + 2
        if kind == b"$":
            return body, pos
        return env.table({b"verbatim_string": env.table(
            {b"format": body[:3], b"string": body[4:]})}), pos
    if kind in (b"*", b">"):
        count = int(text)
        if count < 0:
            return False, pos
        items = []
        for _ in range(count):
            item, pos = _parse(env, data, pos)
            items.append(item)
        return env.table(items), pos
    if kind == b"%":
        mapping = env.new_table()
        for _ in range(int(text)):
            key, pos = _parse(env, data, pos)
            value, pos = _parse(env, data, pos)
            mapping[key] = value
        return env.table({b"map": mapping}), pos
    if kind == b"~":
        members = env.new_table()
        for _ in range(int(text)):
            member, pos = _parse(env, data, pos)
            members[member] = True
        return env.table({b"set": members}), pos
    if kind == b"_":
        return None, pos
    if kind == b"#":
        return text == b"t", pos
    if kind == b",":
        return env.table({b"double": float(text)}), pos
    if kind == b"(":
        return env.table({b"big_number": text}), pos
    if kind == b"|":  # attributes are not shown to scripts
        for _ in range(2 * int(text)):
            _, pos = _parse(env, data, pos)
        return _parse(env, data, pos)
    raise ValueError(f"unexpected reply type {kind!r}")


# -- the script's result -> a reply ---------------------------------------------------------------
class ScriptError:
    """An error the script ended with: its text, and whether it was already counted in the
    error statistics (a redis.call error the script returned or raised)."""

    __slots__ = ("text", "counted")

    def __init__(self, text: str, counted: bool) -> None:
        self.text = text
        self.counted = counted


def error_from_table(table: Any, sha: str, raw: Any) -> ScriptError:
    """luaExtractErrorInformation + the final message: "msg script: <sha>, on <source>:<line>."
    when the error was raised (the handler added where)."""
    message = _text(raw(table, b"err"))
    source, line = raw(table, b"source"), raw(table, b"line")
    if source is not None and line is not None:
        message += f" script: {sha}, on {_text(source)}:{_number_text(line)}."
    return ScriptError(message.replace("\r", " ").replace("\n", " "),
                       raw(table, b"ignore_error_stats_update") is True)


def lua_to_reply(env: LuaEnv, value: Any, script_resp: int, caller_resp: int,
                 sha: str) -> Any:
    """luaReplyToRedisReply; a ScriptError for an error (at the top level only: a nested
    {err=...} is an error element of the array). Fields are read raw (rawget), so that a
    table's metatable plays no part, as in Redis."""
    raw = env.rawget
    if lua_type(value) == "table" and isinstance(raw(value, b"err"), bytes):
        return error_from_table(value, sha, raw)
    return _Converter(raw, script_resp, caller_resp, sha).reply(value, 0)


class _Converter:
    __slots__ = ("raw", "script_resp", "caller_resp", "sha")

    def __init__(self, raw: Any, script_resp: int, caller_resp: int, sha: str) -> None:
        self.raw = raw
        self.script_resp = script_resp
        self.caller_resp = caller_resp
        self.sha = sha

    def reply(self, value: Any, depth: int) -> Any:
        if isinstance(value, bytes):
            return value
        if isinstance(value, bool):
            if self.script_resp == 2:
                return 1 if value else None
            return value
        if isinstance(value, (int, float)):
            return _truncate(value)
        if lua_type(value) != "table":
            return None
        if depth >= MAX_DEPTH:  # (a table that holds itself)
            return ErrorReply("ERR reached lua stack limit")
        raw = self.raw
        err = raw(value, b"err")
        if isinstance(err, bytes):
            return ErrorReply("-" + error_from_table(value, self.sha, raw).text)
        ok = raw(value, b"ok")
        if isinstance(ok, bytes):
            return SimpleString(_text(ok).replace("\r", " ").replace("\n", " "))
        double = raw(value, b"double")
        if isinstance(double, (int, float)) and not isinstance(double, bool):
            return float(double)
        big = raw(value, b"big_number")
        if isinstance(big, bytes):
            big = big.replace(b"\r", b" ").replace(b"\n", b" ")
            return Raw(b"(" + big + b"\r\n") if self.caller_resp == 3 else big
        verbatim = raw(value, b"verbatim_string")
        if lua_type(verbatim) == "table":
            fmt, text = raw(verbatim, b"format"), raw(verbatim, b"string")
            if isinstance(fmt, bytes) and isinstance(text, bytes) and len(fmt) == 3:
                return Verbatim(text, fmt.decode(errors="replace"))
        mapping = raw(value, b"map")
        if lua_type(mapping) == "table":
            return {_hashable(self.reply(k, depth + 1)): self.reply(v, depth + 1)
                    for k, v in mapping.items()}
        members = raw(value, b"set")
        if lua_type(members) == "table":
            return SetReply(self.reply(k, depth + 1) for k in members)
        items = []
        index = 1
        while True:
            item = raw(value, index)
            if item is None:
                return items
            items.append(self.reply(item, depth + 1))
            index += 1


def _hashable(key: Any) -> Any:
    """A map key that is itself an array or a map (a nested table) as a tuple, which the
    encoder writes as the same array."""
    if isinstance(key, list):
        return tuple(_hashable(item) for item in key)
    if isinstance(key, dict):
        return tuple(_hashable(item) for pair in key.items() for item in pair)
    return key


def _truncate(number: float) -> int:
    """(long long) of a Lua number: toward zero; NaN and overflows as x86 gives them."""
    if number != number or number >= 2.0**63 or number < -(2.0**63):
        return -(1 << 63)
    return int(number)


def _number_text(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _text(raw: Any) -> str:
    return raw.decode("utf-8", errors="surrogateescape") if isinstance(raw, bytes) else str(raw)
