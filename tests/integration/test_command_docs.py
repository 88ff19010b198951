"""COMMAND DOCS / COMMAND INFO / GETKEYS(ANDFLAGS): Redis's reply shapes, the documentation
table's consistency, comparisons with Debian's redis-server 7.0, redis-py, and redis-cli's
argument hints read through a pseudo-terminal.

Our replies follow Redis 8.4. Against 7.0 the arguments must match field by field except for
the differences listed in V7_RENAMES / V8_ADDED / V7_RESTRUCTURED below (argument renames made
in Redis 7.2, options added in 8.x) and display_text, which 7.2 added to every argument.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shutil
import socket
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

import server.commands  # noqa: F401 - registers every command
from server.commands.command_docs import Arg, SyntaxParseError, parse_syntax
from server.commands.command_docs_table import DOCS
from server.dispatch import COMMANDS, CommandSpec
from tests.helpers import TARGET, ServerProcess
from tests.integration.server_fixtures import module_server
from tests.resp import encode, read_raw

ours_only = pytest.mark.skipif(TARGET == "redis", reason="Redis 8.4 docs; the target is 7.0")


# -- a raw RESP client that keeps the reply types -----------------------------------------------
class Status(str):
    """A +simple string."""


class RSet(list):  # noqa: FURB189 - a list that remembers it was a RESP3 set
    """A ~set (kept in order, so replies can be compared as Redis sent them)."""


class Conn:
    def __init__(self, proc: ServerProcess, protocol: int = 3) -> None:
        self.sock = socket.create_connection((proc.host, proc.port), timeout=10)
        self.file = self.sock.makefile("rb")
        if protocol == 3:
            self.call("HELLO", "3")

    def send(self, *args: str | bytes) -> None:
        self.sock.sendall(encode(*args))

    def call(self, *args: str | bytes) -> Any:
        self.send(*args)
        return self.read()

    def raw(self, *args: str | bytes) -> bytes:
        """The exact bytes of one reply."""
        self.send(*args)
        return read_raw(self.file)

    def read(self) -> Any:
        line = self.file.readline()
        kind, rest = line[:1], line[1:-2].decode()
        if kind == b"+":
            return Status(rest)
        if kind == b"-":
            raise redis.ResponseError(rest)
        if kind == b":":
            return int(rest)
        if kind == b"_" or rest == "-1":
            return None
        if kind == b"$":
            return self.file.read(int(rest) + 2)[:-2].decode()
        if kind in (b"*", b"~"):
            items = [self.read() for _ in range(int(rest))]
            return RSet(items) if kind == b"~" else items
        if kind == b"%":
            out = {}
            for _ in range(int(rest)):
                key = self.read()
                out[key] = self.read()
            return out
        raise AssertionError(f"unexpected reply {line!r}")

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def typed(value: Any) -> Any:
    """A comparable form that keeps the RESP type of every element."""
    if isinstance(value, Status):
        return ("+", str(value))
    if isinstance(value, RSet):
        return ("~", [typed(v) for v in value])
    if isinstance(value, list):
        return ("*", [typed(v) for v in value])
    if isinstance(value, dict):
        return ("%", [(k, typed(v)) for k, v in value.items()])
    return value


ours = module_server()


@pytest.fixture
def conn(ours: ServerProcess) -> Iterator[Conn]:
    c = Conn(ours)
    yield c
    c.close()


@pytest.fixture
def ref_conn(redis_ref: ServerProcess) -> Iterator[Conn]:
    c = Conn(redis_ref)
    yield c
    c.close()


# -- the table itself ---------------------------------------------------------------------------
def _registered() -> list[CommandSpec]:
    out = []
    for spec in COMMANDS.values():
        out.append(spec)
        out.extend(spec.subcommands.values())
    return out


def test_every_registered_command_is_documented() -> None:
    names = {spec.fullname for spec in _registered()}
    assert sorted(names - DOCS.keys()) == [], "commands without a COMMAND DOCS entry"
    assert sorted(DOCS.keys() - names) == [], "documented commands the server does not have"


def _walk(args: list[Arg]) -> Iterator[Arg]:
    for arg in args:
        yield arg
        yield from _walk(arg.subargs)


def test_argument_specs_are_well_formed() -> None:
    for name, doc in DOCS.items():
        args = doc.args
        key_args = [a for a in _walk(args) if a.type == "key"]
        used = {a.key_spec_index for a in key_args}
        specs = set(range(len(doc.key_specs)))
        # As Redis's generate-command-code.py checks: every key argument points at a key spec
        # and every key spec is used by an argument, except in commands with a not_key spec
        # (SSUBSCRIBE / SUNSUBSCRIBE / SPUBLISH: shard channels are string arguments).
        if any("not_key" in ks.flags for ks in doc.key_specs):
            assert used <= specs, name
        else:
            assert used == specs, name
        for arg in _walk(args):
            siblings = [a.name for a in arg.subargs]
            assert len(siblings) == len(set(siblings)), f"{name}: duplicate names {siblings}"
            assert "_" not in arg.name, f"{name}: Redis 7.2+ names use hyphens ({arg.name})"
            if arg.multiple_token:
                assert arg.multiple and arg.token, name
    for bad in ("key#0 [", "x{a}", "y(b)", "LIMIT count:float", "a@7.0", "]"):
        with pytest.raises(SyntaxParseError):
            parse_syntax(bad)


def _min_args(arg: Arg, in_oneof: bool = False) -> int:
    if arg.optional and not in_oneof:
        return 0
    own = 1 if arg.token is not None and arg.type != "pure-token" else 0
    if arg.type == "block":
        return own + sum(_min_args(sub) for sub in arg.subargs)
    if arg.type == "oneof":
        return own + min(_min_args(sub, in_oneof=True) for sub in arg.subargs)
    return own + 1


def _variadic(args: list[Arg]) -> bool:
    return any(a.optional or a.multiple or _variadic(a.subargs) for a in args)


@pytest.mark.parametrize("spec", _registered(), ids=lambda s: s.fullname)
def test_arguments_agree_with_arity(spec: CommandSpec) -> None:
    doc = DOCS[spec.fullname]
    if spec.subcommands or spec.fullname == "debug":
        pytest.skip("containers (and DEBUG, as in Redis) document no arguments")
    need = (2 if spec.parent else 1) + sum(_min_args(a) for a in doc.args)
    if _variadic(doc.args):
        assert spec.arity == -need
    else:
        assert spec.arity in (need, -need)  # QUIT is -1 with no arguments, as in Redis


# -- reply shapes (RESP3 types and field order) -------------------------------------------------
@ours_only
def test_docs_reply_shape(conn: Conn) -> None:
    reply = conn.call("COMMAND", "DOCS", "xadd")
    doc = reply["xadd"]
    assert list(doc) == ["summary", "since", "group", "complexity", "history", "arguments"]
    assert doc["group"] == "stream" and doc["since"] == "5.0.0"
    assert doc["complexity"].startswith("O(1) when adding a new entry")
    assert isinstance(doc["history"], RSet)
    assert doc["history"][0] == ["6.2.0", "Added the `NOMKSTREAM` option, `MINID` trimming "
                                          "strategy and the `LIMIT` option."]
    args = doc["arguments"]
    assert [a["name"] for a in args] == ["key", "nomkstream", "condition", "idempotency", "trim",
                                         "id-selector", "data"]
    key, nomkstream, condition = args[:3]
    assert list(key) == ["name", "type", "display_text", "key_spec_index"]
    assert key == {"name": "key", "type": "key", "display_text": "key", "key_spec_index": 0}
    assert list(nomkstream) == ["name", "type", "display_text", "token", "since", "flags"]
    assert nomkstream["flags"] == ["optional"] and isinstance(nomkstream["flags"], RSet)
    assert isinstance(nomkstream["flags"][0], Status)
    assert list(condition) == ["name", "type", "flags", "arguments"]  # no display_text
    assert [(a["token"], a["display_text"]) for a in condition["arguments"]] == [
        ("KEEPREF", "keepref"), ("DELREF", "delref"), ("ACKED", "acked")]
    assert args[6]["flags"] == ["multiple"]
    assert [a["name"] for a in args[6]["arguments"]] == ["field", "value"]


@ours_only
def test_docs_of_stream_8x_commands(conn: Conn) -> None:
    docs = conn.call("COMMAND", "DOCS", "xdelex", "xackdel", "xreadgroup", "xtrim")
    assert list(docs) == ["xdelex", "xackdel", "xreadgroup", "xtrim"]
    for name, before_ids in (("xdelex", ["key"]), ("xackdel", ["key", "group"])):
        args = docs[name]["arguments"]
        assert [a["name"] for a in args] == [*before_ids, "condition", "ids"]
        ids = args[-1]
        assert ids["token"] == "IDS" and ids["type"] == "block"
        assert [(a["name"], a["type"], a.get("flags")) for a in ids["arguments"]] == [
            ("numids", "integer", None), ("id", "string", ["multiple"])]
    claim = docs["xreadgroup"]["arguments"][5]
    assert claim == {"name": "min-idle-time", "type": "integer", "display_text": "min-idle-time",
                     "token": "CLAIM", "flags": ["optional"]}
    trim = docs["xtrim"]["arguments"][1]["arguments"]
    assert [a["name"] for a in trim] == ["strategy", "operator", "threshold", "count",
                                         "condition"]


@ours_only
def test_docs_of_containers_subcommands_and_flags(conn: Conn) -> None:
    xgroup = conn.call("COMMAND", "DOCS", "xgroup")["xgroup"]
    assert xgroup["complexity"] == "Depends on subcommand."
    subs = xgroup["subcommands"]
    assert set(subs) == {"xgroup|" + s for s in
                         ("create", "createconsumer", "delconsumer", "destroy", "help", "setid")}
    setid = subs["xgroup|setid"]["arguments"]
    assert setid[-1] == {"name": "entriesread", "type": "integer",
                         "display_text": "entries-read", "token": "ENTRIESREAD",
                         "flags": ["optional"]}
    assert conn.call("COMMAND", "DOCS", "xgroup|create") == {"xgroup|create": subs[
        "xgroup|create"]}
    kill = conn.call("COMMAND", "DOCS", "client|kill")["client|kill"]["arguments"][0]
    old = kill["arguments"][0]
    assert old == {"name": "old-format", "type": "string", "display_text": "ip:port",
                   "deprecated_since": "2.8.12"}
    quit_doc = conn.call("COMMAND", "DOCS", "quit")["quit"]
    assert quit_doc["doc_flags"] == ["deprecated"] and quit_doc["deprecated_since"] == "7.2.0"
    assert conn.call("COMMAND", "DOCS", "debug")["debug"]["doc_flags"] == [Status("syscmd")]
    everything = conn.call("COMMAND", "DOCS")
    assert set(everything) == {name.decode() for name in COMMANDS}
    assert all("arguments" in everything[n] for n in ("get", "xadd", "xread", "scan"))


@ours_only
def test_docs_in_resp2_are_flat(ours: ServerProcess) -> None:
    c = Conn(ours, protocol=2)
    try:
        raw = c.raw("COMMAND", "DOCS", "xlen")
        assert raw.startswith(b"*2\r\n$4\r\nxlen\r\n*10\r\n$7\r\nsummary\r\n")
        assert b"$9\r\narguments\r\n*1\r\n*8\r\n$4\r\nname\r\n$3\r\nkey\r\n" in raw
        assert c.raw("COMMAND", "DOCS", "nosuch") == b"*0\r\n"
    finally:
        c.close()


# -- comparisons with Redis 7.0 -----------------------------------------------------------------
# Argument renames made in Redis 7.2 (underscores became hyphens, some blocks got new names):
# command -> {(7.0 name, its token or else its type): 8.4 name}.
V7_RENAMES: dict[str, dict[tuple[str, str], str]] = {
    "acl|cat": {("categoryname", "string"): "category"},
    "client|unblock": {("timeout_error", "oneof"): "unblock-type"},
    "client|reply": {("on_off_skip", "oneof"): "action"},
    "client|kill": {("ip:port", "string"): "old-format", ("normal_master_slave_pubsub", "TYPE"):
                    "client-type", ("ip:port", "ADDR"): "addr", ("ip:port", "LADDR"): "laddr"},
    "client|list": {("normal_master_replica_pubsub", "TYPE"): "client-type"},
    "hello": {("username_password", "AUTH"): "auth"},
    "mset": {("key_value", "block"): "data"},
    "msetnx": {("key_value", "block"): "data"},
    "flushall": {("async", "oneof"): "flush-type"},
    "flushdb": {("async", "oneof"): "flush-type"},
    "script|flush": {("async", "oneof"): "flush-type"},
    "function|flush": {("async", "oneof"): "flush-type"},
    "config|set": {("parameter_value", "block"): "data"},
    "shutdown": {("nosave_save", "oneof"): "save-selector"},
    "xadd": {("id_or_auto", "oneof"): "id-selector", ("auto_id", "*"): "auto-id",
             ("field_value", "block"): "data"},
    "xreadgroup": {("group_consumer", "GROUP"): "group-block"},
    "xsetid": {("entries_added", "ENTRIESADDED"): "entries-added",
               ("max_deleted_entry_id", "MAXDELETEDID"): "max-deleted-id"},
    "xclaim": {("id", "LASTID"): "lastid"},
    "xinfo|consumers": {("groupname", "string"): "group"},
    "xgroup|create": {("groupname", "string"): "group", ("id", "oneof"): "id-selector",
                      ("new_id", "$"): "new-id", ("entries_read", "ENTRIESREAD"): "entries-read"},
    "xgroup|setid": {("groupname", "string"): "group", ("id", "oneof"): "id-selector",
                     ("new_id", "$"): "new-id", ("entries_read", "ENTRIESREAD"): "entriesread"},
    "xgroup|createconsumer": {("groupname", "string"): "group",
                              ("consumername", "string"): "consumer"},
    "xgroup|delconsumer": {("groupname", "string"): "group",
                           ("consumername", "string"): "consumer"},
    "xgroup|destroy": {("groupname", "string"): "group"},
}
# Arguments Redis added after 7.0 (paths of names from the command's argument list).
V8_ADDED: dict[str, list[tuple[str, ...]]] = {
    "xadd": [("condition",), ("idempotency",)],  # 8.2 KEEPREF | DELREF | ACKED, 8.6 IDMP
    "xtrim": [("trim", "condition")],  # 8.2
    "xreadgroup": [("min-idle-time",), ("maxcount",), ("maxsize",)],  # 8.4 CLAIM, 8.10
    "xread": [("maxcount",), ("maxsize",)],  # 8.10 MAXCOUNT, MAXSIZE
    "client|kill": [("filter", "new-format", "maxage")],  # 8.0 MAXAGE
}


def _skipme_as_oneof(args: list[dict]) -> None:
    """7.2 made CLIENT KILL's SKIPME a choice of two pure tokens (7.0: a string "yes/no")."""
    new_format = args[0]["arguments"][1]["arguments"]
    index = next(i for i, a in enumerate(new_format) if a.get("token") == "SKIPME")
    new_format[index] = {"name": "skipme", "type": "oneof", "token": "SKIPME",
                         "flags": ["optional"], "arguments": [
                             {"name": "yes", "type": "pure-token", "token": "YES"},
                             {"name": "no", "type": "pure-token", "token": "NO"}]}


def _client_id_unwrapped(args: list[dict]) -> None:
    """7.2: CLIENT LIST's ID is one multiple integer instead of a block holding it."""
    block = args[1]
    args[1] = {"name": "client-id", "type": "integer", "token": "ID", "since": block["since"],
               "flags": ["optional", "multiple"]}


def _parameter_unwrapped(args: list[dict]) -> None:
    """7.2: CONFIG GET's parameter is one multiple string instead of a block holding it."""
    args[0] = {"name": "parameter", "type": "string", "flags": ["multiple"]}


def _full_block(args: list[dict]) -> None:
    """7.2: XINFO STREAM's FULL became a pure token inside an untokened block."""
    full = args[1]
    args[1] = {"name": "full-block", "type": "block", "flags": full["flags"], "arguments": [
        {"name": "full", "type": "pure-token", "token": "FULL"}, *full["arguments"]]}


def _pattern_unwrapped(args: list[dict]) -> None:
    """7.2: PSUBSCRIBE's pattern is one multiple pattern instead of a block holding it."""
    args[0] = {"name": "pattern", "type": "pattern", "flags": ["multiple"]}


V7_RESTRUCTURED: dict[str, Callable[[list[dict]], None]] = {
    "client|kill": _skipme_as_oneof, "client|list": _client_id_unwrapped,
    "config|get": _parameter_unwrapped, "xinfo|stream": _full_block,
    "psubscribe": _pattern_unwrapped,
}
# 7.0 documented no arguments for these; Redis 7.2+ does.
V7_UNDOCUMENTED = {"command|getkeys", "command|getkeysandflags"}
# Complexities Redis 7.2 rewrote (7.0 counted the client's existing subscriptions; 7.2+ counts
# the channels or patterns given): command -> 7.0's text.
V7_COMPLEXITIES = {
    "psubscribe": "O(N) where N is the number of patterns the client is already subscribed to.",
    "punsubscribe": "O(N+M) where N is the number of patterns the client is already subscribed "
                    "and M is the number of total patterns subscribed in the system (by any "
                    "client).",
    "unsubscribe": "O(N) where N is the number of clients already subscribed to a channel.",
    "sunsubscribe": "O(N) where N is the number of clients already subscribed to a shard "
                    "channel.",
}


def _renamed(args: list[dict], renames: dict[tuple[str, str], str]) -> list[dict]:
    out = []
    for arg in args:
        arg = dict(arg)
        arg["name"] = renames.get((arg["name"], arg.get("token", arg["type"])), arg["name"])
        if "arguments" in arg:
            arg["arguments"] = _renamed(arg["arguments"], renames)
        out.append(arg)
    return out


def _without(args: list[dict], path: tuple[str, ...]) -> list[dict]:
    if len(path) == 1:
        return [a for a in args if a["name"] != path[0]]
    return [dict(a, arguments=_without(a["arguments"], path[1:])) if a["name"] == path[0]
            else a for a in args]


def _plain(args: list[Any], ours: bool = False) -> list[dict]:
    """Drop display_text (checking ours has it on exactly the non-container arguments) and RESP
    subclasses, for comparing our 8.4 arguments with 7.0's."""
    out = []
    for arg in args:
        arg = dict(arg)
        if ours:
            assert ("display_text" in arg) == (arg["type"] not in ("oneof", "block")), arg
        arg.pop("display_text", None)
        if "flags" in arg:
            arg["flags"] = [str(f) for f in arg["flags"]]
        if "arguments" in arg:
            arg["arguments"] = _plain(arg["arguments"], ours)
        out.append(arg)
    return out


def _docs_of_both(conn: Conn, ref_conn: Conn) -> Iterator[tuple[str, dict, dict]]:
    theirs = ref_conn.call("COMMAND", "DOCS")
    mine = conn.call("COMMAND", "DOCS")
    for name, doc in mine.items():
        if name not in theirs:
            continue
        yield name, doc, theirs[name]
        for sub, sub_doc in doc.get("subcommands", {}).items():
            if sub in theirs[name].get("subcommands", {}):
                yield sub, sub_doc, theirs[name]["subcommands"][sub]


@ours_only
def test_arguments_match_redis_7_0(conn: Conn, ref_conn: Conn) -> None:
    compared = 0
    for name, mine, theirs in _docs_of_both(conn, ref_conn):
        if name in V7_UNDOCUMENTED:
            assert "arguments" not in theirs and "arguments" in mine
            continue
        assert ("arguments" in mine) == ("arguments" in theirs), name
        if "arguments" not in theirs:
            continue
        expected = _plain(theirs["arguments"])
        if name in V7_RESTRUCTURED:
            V7_RESTRUCTURED[name](expected)
        expected = _renamed(expected, V7_RENAMES.get(name, {}))
        got = _plain(mine["arguments"], ours=True)
        for path in V8_ADDED.get(name, []):
            got = _without(got, path)
        assert got == expected, name
        compared += 1
    assert compared >= 60  # every 7.0 command we have that takes arguments


@ours_only
def test_docs_fields_match_redis_7_0(conn: Conn, ref_conn: Conn) -> None:
    """Complexity and the RESP3 types of every field are Redis's; history differs only by the
    entries added after 7.0."""
    for name, mine, theirs in _docs_of_both(conn, ref_conn):
        if name in V7_COMPLEXITIES:
            assert theirs["complexity"] == V7_COMPLEXITIES[name], name
            assert mine["complexity"] == DOCS[name].complexity, name
        else:
            assert mine.get("complexity") == theirs.get("complexity"), name
        history = theirs.get("history", [])
        assert mine.get("history", [])[:len(history)] == history, name
        for key in ("summary", "since", "group", "complexity"):
            if key in theirs:
                assert type(mine[key]) is type(theirs[key]), (name, key)
        for key in ("history", "doc_flags"):
            if key in theirs:
                assert isinstance(mine[key], RSet), (name, key)


# COMMAND INFO entries that must be identical to 7.0's (8.x changed the tips of SCAN,
# RANDOMKEY, CLIENT SETNAME and CONFIG RESETSTAT, so they are not listed).
SAME_INFO = [
    "get", "set", "del", "unlink", "exists", "touch", "type", "ttl", "pttl", "expire", "pexpire",
    "expireat", "pexpireat", "expiretime", "pexpiretime", "persist", "move", "rename",
    "renamenx", "keys", "dbsize", "flushdb", "flushall", "swapdb", "watch", "multi", "exec",
    "discard", "unwatch", "ping", "auth", "hello", "quit", "reset", "select", "time", "info",
    "lastsave", "save", "bgsave", "bgrewriteaof", "monitor", "shutdown", "debug",
    "object|encoding", "object|refcount", "object|help", "memory|usage", "config|get",
    "config|set", "config|help", "slowlog|get", "slowlog|len", "slowlog|reset", "client|id",
    "client|list", "client|info", "client|kill", "client|getname", "client|unblock",
    "command|info", "command|docs", "command|list", "command|count", "command|help",
    "xadd", "xread", "xreadgroup", "xrange", "xrevrange", "xlen", "xdel", "xtrim", "xack",
    "xclaim", "xautoclaim", "xpending", "xsetid", "xgroup|create", "xgroup|createconsumer",
    "xgroup|delconsumer", "xgroup|destroy", "xgroup|setid", "xgroup|help", "xinfo|stream",
    "xinfo|groups", "xinfo|consumers", "xinfo|help",
    "incr", "decr", "incrby", "decrby", "append", "mget", "mset", "msetnx", "setnx", "setex",
    "psetex", "getset", "getdel", "getex", "getrange", "substr", "setrange", "strlen",
]


@ours_only
@pytest.mark.parametrize("protocol", [2, 3])
def test_command_info_matches_redis_7_0(ours: ServerProcess, redis_ref: ServerProcess,
                                        protocol: int) -> None:
    mine, theirs = Conn(ours, protocol), Conn(redis_ref, protocol)
    try:
        for name in SAME_INFO:
            assert mine.raw("COMMAND", "INFO", name) == theirs.raw("COMMAND", "INFO", name), name
        # Containers: the same head (flags, categories...); their subcommands differ in number.
        for name in ("xinfo", "xgroup", "client", "config", "object", "command", "slowlog"):
            got, want = mine.call("COMMAND", "INFO", name)[0], theirs.call("COMMAND", "INFO",
                                                                           name)[0]
            assert typed(got[:9]) == typed(want[:9]), name
    finally:
        mine.close()
        theirs.close()


GETKEYS_CASES = [
    ("XREAD", "COUNT", "2", "STREAMS", "a", "b", "0", "0"),
    ("XREAD", "STREAMS", "a", "b", "c"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s1", "s2", ">", ">"),
    ("XADD", "s", "*", "f", "v"),
    ("XGROUP", "CREATE", "s", "g", "$"),
    ("XINFO", "STREAM", "s"),
    ("RENAME", "a", "b"),
    ("SET", "k", "v", "GET"),
    ("SET", "k", "v", "EX", "1"),
    ("MSET", "a", "1", "b", "2"),
    ("MSETNX", "a", "1", "b"),
    ("MGET", "a", "b", "c"),
    ("GETEX", "k", "PERSIST"),
    ("DEL", "a", "b", "c"),
    ("MEMORY", "USAGE", "k"),
    ("WATCH", "a", "b"),
    ("PING", "x"),
    ("GET", "a", "b"),
    ("NOSUCH", "x"),
    # Shard channels are key specs flagged not_key: "The command has no key arguments".
    ("SPUBLISH", "ch", "msg"),
    ("SSUBSCRIBE", "a", "b"),
    ("SUNSUBSCRIBE", "a"),
    ("PUBLISH", "ch", "msg"),
]


@ours_only
@pytest.mark.parametrize("protocol", [2, 3])
def test_getkeys_and_flags_match_redis_7_0(ours: ServerProcess, redis_ref: ServerProcess,
                                           protocol: int) -> None:
    mine, theirs = Conn(ours, protocol), Conn(redis_ref, protocol)
    try:
        for case in GETKEYS_CASES:
            for sub in ("GETKEYS", "GETKEYSANDFLAGS"):
                args = ("COMMAND", sub, *case)
                assert mine.raw(*args) == theirs.raw(*args), args
    finally:
        mine.close()
        theirs.close()


@ours_only
def test_getkeys_arity_is_redis_8(conn: Conn) -> None:
    """Redis 7.2 relaxed GETKEYS/GETKEYSANDFLAGS to arity -3 (7.0: -4)."""
    for sub in ("GETKEYS", "GETKEYSANDFLAGS"):
        assert conn.raw("COMMAND", sub, "PING") == b"-ERR The command has no key arguments\r\n"
        assert conn.raw("COMMAND", sub, "GET") == (
            b"-ERR Invalid number of arguments specified for command\r\n")
        assert conn.raw("COMMAND", sub) == (
            f"-ERR wrong number of arguments for 'command|{sub.lower()}' command\r\n".encode())
    assert conn.call("COMMAND", "GETKEYSANDFLAGS", "XREADGROUP", "GROUP", "g", "c", "CLAIM",
                     "10", "STREAMS", "s", ">") == [["s", ["RO", "access"]]]


@pytest.mark.parametrize("sub", ["GETKEYS", "GETKEYSANDFLAGS"])
@pytest.mark.parametrize("case", [("SPUBLISH", "ch", "msg"), ("SSUBSCRIBE", "a", "b")],
                         ids=lambda c: c[0])
def test_getkeys_of_shard_channels_is_no_key_error(conn: Conn, ref_conn: Conn, sub: str,
                                                   case: tuple[str, ...]) -> None:
    """Shard channels have key specs (for cluster routing) flagged not_key, which Redis's
    doesCommandHaveKeys ignores, while COMMAND INFO still shows them."""
    args = ("COMMAND", sub, *case)
    want = b"-ERR The command has no key arguments\r\n"
    assert ref_conn.raw(*args) == want
    assert conn.raw(*args) == want
    info = conn.call("COMMAND", "INFO", case[0])[0]
    assert [ks["flags"] for ks in info[8]] == [["not_key"]]


# -- redis-py -----------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_reads_the_command_table(ours: ServerProcess, protocol: int) -> None:
    r = redis.Redis(host=ours.host, port=ours.port, protocol=protocol)
    try:
        table = r.command()
        xread = table["xread"]
        assert set(xread["flags"]) >= {"readonly", "blocking", "movablekeys"}
        assert xread["arity"] == -4 and xread["first_key_pos"] == 0
        assert r.command_getkeysandflags("XREAD", "STREAMS", "a", "b", "0", "0") == [
            [b"a", [b"RO", b"access"]], [b"b", [b"RO", b"access"]]]
        # redis-py decodes GETKEYS replies in RESP2 only
        assert r.command_getkeys("XGROUP", "CREATE", "s", "g", "$") in (["s"], [b"s"])
        assert b"xgroup|create" in r.command_list()
        # redis-py leaves COMMAND DOCS unparsed; it must read it (sets of arrays included).
        docs = r.execute_command("COMMAND DOCS", "xadd")
        fields = docs[b"xadd"] if protocol == 3 else dict(
            zip(docs[1][::2], docs[1][1::2], strict=True))
        assert fields[b"group"] == b"stream"
    finally:
        r.close()


# -- redis-cli hints through a pseudo-terminal --------------------------------------------------
HINT = re.compile(rb"\x1b\[0;90;49m(.*?)\x1b\[0m")


def cli_hint(port: int, typed_text: str, timeout: float = 10.0) -> str:
    """Type text into an interactive redis-cli (a real terminal, 200 columns) and return the
    hint it shows after it; nothing is sent to the server but the startup commands."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
    proc = subprocess.Popen(["redis-cli", "-h", "127.0.0.1", "-p", str(port)], stdin=slave,
                            stdout=slave, stderr=slave, close_fds=True,
                            env=dict(os.environ, TERM="xterm"))
    os.close(slave)
    try:
        prompt = f"127.0.0.1:{port}> ".encode()
        seen = _read_until(master, lambda buf: prompt in buf, timeout)
        assert prompt in seen, seen[-300:]
        os.write(master, typed_text.encode())
        seen = _read_until(master, lambda buf: typed_text.encode() + b"\x1b[0;90;49m" in buf
                           and buf.endswith(b"C"), timeout)
        hints = HINT.findall(seen)
        assert hints, seen[-500:]
        return hints[-1].decode()
    finally:
        proc.kill()
        proc.wait(timeout=10)
        os.close(master)


def _read_until(fd: int, done: Callable[[bytes], bool], timeout: float) -> bytes:
    buf = b""
    deadline = time.monotonic() + timeout
    while not done(buf) and (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], min(left, 0.2))
        if ready:
            try:
                buf += os.read(fd, 65536)
            except OSError:
                break
    return buf


needs_cli = pytest.mark.skipif(shutil.which("redis-cli") is None, reason="redis-cli absent")


@ours_only
@needs_cli
def test_redis_cli_hints_from_our_docs(ours: ServerProcess, redis_ref: ServerProcess) -> None:
    xadd_70 = ("[NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value "
               "[field value ...]")
    # The same redis-cli shows Redis 7.0's XADD like this...
    assert cli_hint(redis_ref.port, "XADD mystream ") == xadd_70
    # ...and ours with the 8.2 option, built from our COMMAND DOCS.
    assert cli_hint(ours.port, "XADD mystream ") == xadd_70.replace(
        "[NOMKSTREAM] ", "[NOMKSTREAM] [KEEPREF|DELREF|ACKED] [IDMPAUTO pid|IDMP pid iid] ")
    assert cli_hint(ours.port, "XREADGROUP ") == (
        "GROUP group consumer [COUNT count] [MAXCOUNT maxcount] [MAXSIZE maxsize] "
        "[BLOCK milliseconds] [CLAIM min-idle-time] [NOACK] STREAMS key [key ...] id [id ...]")
    assert cli_hint(ours.port, "XDELEX s ") == "[KEEPREF|DELREF|ACKED] IDS numids id [id ...]"
    assert cli_hint(ours.port, "XRANGE s ") == cli_hint(redis_ref.port, "XRANGE s ")


@ours_only
@needs_cli
def test_redis_cli_help_shows_syntax(ours: ServerProcess) -> None:
    out = subprocess.run(["redis-cli", "-p", str(ours.port), "HELP", "XACKDEL"],
                         capture_output=True, timeout=20, check=True).stdout
    text = re.sub(rb"\x1b\[[0-9;]*m", b"", out).decode()
    assert "XACKDEL key group [KEEPREF|DELREF|ACKED] IDS numids id [id ...]" in text
    assert "group: stream" in text and "since: 8.2.0" in text
