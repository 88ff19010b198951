"""Redis functions (FUNCTION LOAD / DELETE / FLUSH / LIST / STATS / KILL / DUMP / RESTORE /
HELP, FCALL, FCALL_RO) against Debian's redis-server 7.0.15, reply for reply, and on ours:
persistence of the libraries (AOF, its rewrite in both forms, the snapshot, DEBUG RELOAD),
INFO's fields, a busy function and FUNCTION KILL.

Where 7.0 and 8.4 differ ours follows 8.4; FUNCTION LIST's order is the libraries' load order
here (a dict's in Redis, which documents it as unordered), so lists are compared sorted.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence

import pytest
import redis

from tests.helpers import TARGET, ServerProcess
from tests.integration.ops_helpers import call, connect, running
from tests.integration.server_fixtures import module_server
from tests.integration.test_persistence_support import started
from tests.resp import Conn

pytestmark = pytest.mark.skipif(TARGET == "redis",
                                reason="xstreamd's processes are started here")

srv = module_server("--enable-debug-command", "yes")

Command = tuple[str | bytes, ...]


def lib(name: str, body: str) -> str:
    return f"#!lua name={name}\n{body}"


def load(name: str, body: str, *options: str) -> Command:
    return ("FUNCTION", "LOAD", *options, lib(name, body))


def replies(proc: ServerProcess, commands: Sequence[Command]) -> list[bytes]:
    """The bytes of each reply, in order, after FUNCTION FLUSH and FLUSHALL."""
    conn = Conn(proc)
    try:
        conn.call("FLUSHALL")
        conn.call("FUNCTION", "FLUSH")
        return [conn.call(*command) for command in commands]
    finally:
        conn.close()


def assert_same(ours: ServerProcess, ref: ServerProcess, commands: Sequence[Command]) -> None:
    for command, got, want in zip(commands, replies(ours, commands), replies(ref, commands),
                                  strict=True):
        assert got == want, command


F_ECHO = "redis.register_function('echo', function(keys, args) return {keys, args} end)"
F_SET = ("redis.register_function{function_name='setter', callback=function(keys, args) "
         "return redis.call('set', keys[1], args[1]) end, description='sets'}")
F_GET = ("redis.register_function{function_name='getter', callback=function(keys, args) "
         "return redis.call('get', keys[1]) end, flags={'no-writes'}}")

LOADING = [
    # Metadata.
    ("FUNCTION", "LOAD", "redis.register_function('f', function() end)"),
    ("FUNCTION", "LOAD", "#!lua name=x"),
    ("FUNCTION", "LOAD", "#!lua\nreturn 1"),
    ("FUNCTION", "LOAD", "#!lua name=a name=b\nreturn 1"),
    ("FUNCTION", "LOAD", "#!lua name=a foo=bar\nreturn 1"),
    ("FUNCTION", "LOAD", "#!js name=a\nreturn 1"),
    ("FUNCTION", "LOAD", "#!lua name=a-b\nreturn 1"),
    ("FUNCTION", "LOAD", "#!lua name=\nreturn 1"),
    ("FUNCTION", "LOAD", "#!LUA name=upper\n" + F_ECHO),
    ("FUNCTION", "LOAD", "BADOPT", lib("x", F_ECHO)),
    ("FUNCTION", "LOAD", "replace"),
    # What the code may do while it loads.
    load("l1", "return 1"),
    load("l1", "error('boom')"),
    load("l1", "local x = string.len('a')"),
    load("l1", "redis.call('ping')"),
    load("l1", "x = 1"),
    load("l1", "redis.register_function('f', function() return 1 end"),
    load("l1", "redis.log(redis.LOG_WARNING, 'loading') "
               "redis.register_function('v', function() return redis.REDIS_VERSION ~= nil end)"),
    # register_function's arguments.
    load("l2", "redis.register_function()"),
    load("l2", "redis.register_function('a')"),
    load("l2", "redis.register_function('a', 1)"),
    load("l2", "redis.register_function(1, function() end)"),
    load("l2", "redis.register_function({}, function() end)"),
    load("l2", "redis.register_function('a', function() end, 3)"),
    load("l2", "redis.register_function{function_name='a', callback=function() end, "
               "flags={'bad'}}"),
    load("l2", "redis.register_function{function_name='a', callback=function() end, "
               "flags='no-writes'}"),
    load("l2", "redis.register_function{function_name='a', callback=function() end, foo=1}"),
    load("l2", "redis.register_function{function_name='a', callback=1}"),
    load("l2", "redis.register_function{function_name={}, callback=function() end}"),
    load("l2", "redis.register_function{function_name='a', callback=function() end, "
               "description={}}"),
    load("l2", "redis.register_function{callback=function() end}"),
    load("l2", "redis.register_function{function_name='a'}"),
    load("l2", "redis.register_function{[1]='a'}"),
    load("l2", "redis.register_function('a-b', function() end)"),
    load("l2", "redis.register_function('a', function() end) "
               "redis.register_function('a', function() end)"),
    # Libraries and functions that exist already.
    load("l3", F_ECHO),
    load("l3", F_ECHO),
    load("l4", F_ECHO),
    load("l3", F_SET, "REPLACE"),
    load("l3", F_SET, "replace"),
    ("FCALL", "echo", "0"),
    load("l4", F_ECHO),
    ("FCALL", "echo", "2", "k1", "k2", "a1"),
    ("FUNCTION", "LIST", "LIBRARYNAME", "l4", "WITHCODE"),
    ("FUNCTION", "STATS"),
    # Function names are case-insensitive, library names not; LIBRARYNAME's pattern neither.
    ("FCALL", "ECHO", "0"),
    load("L4", "redis.register_function('Other', function() return 'o' end)"),
    load("l5", "redis.register_function('oTHER', function() return 1 end)"),
    ("FCALL", "other", "0"),
    ("FUNCTION", "DELETE", "l4"),
    ("FUNCTION", "LIST", "LIBRARYNAME", "l4"),  # (L4 only, matched regardless of case)
    # The metadata line is split as Redis splits arguments (quotes, no escapes outside them).
    ("FUNCTION", "LOAD", '#!lua "name=q1"\nredis.register_function("q1", function() end)'),
    ("FUNCTION", "LOAD", "#!lua name=\"q2\"\nredis.register_function('q2', function() end)"),
    ("FUNCTION", "LOAD", '#!lua name="q3\nredis.register_function("q3", function() end)'),
    ("FUNCTION", "LOAD", "#!lua name=bad\\0name\nredis.register_function('q4', function() end)"),
    load("l6", "redis.register_function('a\\0b', function() end)"),
    ("FUNCTION", "FLUSH", "SYNC", "extra"),
]

CALLING = [
    load("lib", f"{F_ECHO}\n{F_SET}\n{F_GET}"),
    ("FCALL", "echo", "0"),
    ("FCALL", "echo", "1", "k"),
    ("FCALL", "echo", "1", "k", "a", "b"),
    ("FCALL", "echo", "3", "k"),
    ("FCALL", "echo", "-1"),
    ("FCALL", "echo", "x"),
    ("FCALL", "nosuch", "0"),
    ("FCALL", "setter", "1", "k", "v"),
    ("FCALL", "getter", "1", "k"),
    ("FCALL_RO", "getter", "1", "k"),
    ("FCALL_RO", "setter", "1", "k", "v"),
    ("FCALL_RO", "echo", "0"),
    load("runtime", "redis.register_function('rf', function() "
                    "return redis.register_function('z', function() end) end)\n"
                    "redis.register_function('uses_keys', function() return KEYS end)\n"
                    "redis.register_function('err', function() error('bad') end)\n"
                    "redis.register_function('errtable', function() "
                    "return redis.error_reply('MY failure') end)\n"
                    "redis.register_function('pcalls', function(keys) "
                    "return redis.pcall('incr', keys[1]) end)\n"
                    "local function helper() return string.upper('x') end\n"
                    "redis.register_function('helped', function(keys, args) "
                    "return helper() .. #keys .. #args end)"),
    ("FCALL", "rf", "0"),
    ("FCALL", "uses_keys", "0"),
    ("FCALL", "err", "0"),
    ("FCALL", "errtable", "0"),
    ("FCALL", "pcalls", "1", "k"),
    ("FCALL", "helped", "2", "a", "b", "c"),
    ("FUNCTION", "DELETE", "runtime"),
    ("FUNCTION", "DELETE", "runtime"),
    ("FCALL", "rf", "0"),
    ("FUNCTION", "FLUSH", "bad"),
    ("FUNCTION", "FLUSH", "SYNC"),
    ("FUNCTION", "LIST"),
    ("FUNCTION", "LIST", "bad"),
    ("FUNCTION", "LIST", "LIBRARYNAME"),
    ("FUNCTION", "RESTORE", "abc"),
    ("FUNCTION", "RESTORE", "abc", "BADPOLICY"),
    ("FUNCTION", "STATS"),
    ("FUNCTION", "KILL"),
    ("FUNCTION", "NOSUCH"),
    ("FUNCTION", "HELP"),
    ("FCALL",),
]


# What a function sees of the globals and libraries, and that it cannot change them.
SANDBOX = [
    load("sandbox", "redis.register_function('api', function() local t = {} "
                    "for k in pairs(redis) do t[#t+1] = k end table.sort(t) return t end)\n"
                    "redis.register_function('strings', function() local t = {} "
                    "for k in pairs(string) do t[#t+1] = k end table.sort(t) return t end)\n"
                    "redis.register_function('rep', function() string.rep = nil end)\n"
                    "redis.register_function('call', function() redis.call = nil end)\n"
                    "redis.register_function('global', function() x = 1 end)\n"
                    "redis.register_function('rawset', function() rawset(redis, 'x', 1) end)\n"
                    "redis.register_function('meta', function() "
                    "return {type(getmetatable(_G)), type(getmetatable(redis))} end)"),
    *[("FCALL", name, "0") for name in ("api", "strings", "rep", "call", "global", "rawset",
                                        "meta", "api")],
]


@pytest.mark.parametrize("commands", [LOADING, CALLING, SANDBOX],
                         ids=["loading", "calling", "sandbox"])
def test_same_replies_as_redis(srv: ServerProcess, redis_ref: ServerProcess,
                               commands: list[Command]) -> None:
    assert_same(srv, redis_ref, commands)


def test_list_and_stats_hold_every_library(srv: ServerProcess,
                                           redis_ref: ServerProcess) -> None:
    """FUNCTION LIST (order aside) and STATS with several libraries."""
    commands = [load("one", F_ECHO), load("two", f"{F_SET}\n{F_GET}")]
    for proc in (srv, redis_ref):
        replies(proc, commands)
    lists, stats = [], []
    for proc in (srv, redis_ref):
        client = redis.Redis(port=proc.port)
        listed = client.function_list(withcode=True)
        for entry in listed:  # (a library's functions come in a dict's order in Redis)
            entry[5].sort(key=lambda function: function[1])
        lists.append(sorted(listed, key=lambda entry: entry[1]))
        stats.append(client.function_stats())
        client.function_flush()
    assert lists[0] == lists[1]
    assert stats[0] == stats[1]
    assert stats[0] == {b"running_script": None,
                        b"engines": {b"LUA": {b"libraries_count": 2, b"functions_count": 3}}}


def test_dump_and_restore(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    """A payload holds every library; RESTORE's policies; our payload is Redis's format
    (redis-server 7.0 takes it back, RDB version aside: its own is 10, ours 12)."""
    client = redis.Redis(port=srv.port)
    replies(srv, [load("one", F_ECHO), load("two", F_SET)])
    payload = client.function_dump()
    assert payload is not None and payload[0] == 245
    with pytest.raises(redis.ResponseError, match="Library one already exists"):
        client.function_restore(payload)
    assert client.function_restore(payload, "REPLACE")
    client.function_delete("two")
    with pytest.raises(redis.ResponseError, match="Library one already exists"):
        client.function_restore(payload)
    assert [entry[1] for entry in client.function_list()] == [b"one"]  # all or nothing
    assert client.function_restore(payload, "FLUSH")
    assert sorted(entry[1] for entry in client.function_list()) == [b"one", b"two"]
    client.function_flush()
    assert client.function_restore(payload)
    assert client.fcall("setter", 1, "k", "v") == b"OK"
    with pytest.raises(redis.ResponseError, match="DUMP payload version or checksum are wrong"):
        client.function_restore(payload[:-1] + bytes([payload[-1] ^ 1]))
    # Redis's own payload restores here.
    ref = redis.Redis(port=redis_ref.port)
    replies(redis_ref, [load("theirs", F_GET)])
    client.function_flush()
    assert client.function_restore(ref.function_dump())
    assert client.fcall("getter", 1, "k") == b"v"
    ref.function_flush()
    client.function_flush()


def test_libraries_survive_restarts(tmp_path: str) -> None:
    """The AOF (FUNCTION LOAD / DELETE replayed, and a rewrite in both forms), the snapshot
    and DEBUG RELOAD keep the libraries; an FCALL's writes are in the AOF as its effects."""
    workdir = str(tmp_path)
    with started(workdir, "--appendonly", "yes", "--enable-debug-command", "yes") as proc:
        client = redis.Redis(port=proc.port)
        assert client.function_load(lib("keep", F_SET)) == b"keep"
        assert client.function_load(lib("gone", F_GET)) == b"gone"
        assert client.function_delete("gone")
        assert client.fcall("setter", 1, "k", "v1") == b"OK"
    with started(workdir, "--appendonly", "yes", "--enable-debug-command", "yes") as proc:
        client = redis.Redis(port=proc.port)
        assert [entry[1] for entry in client.function_list()] == [b"keep"]
        assert client.get("k") == b"v1"
        for preamble in ("yes", "no"):
            client.config_set("aof-use-rdb-preamble", preamble)
            client.bgrewriteaof()
            deadline = time.monotonic() + 20
            while client.info("persistence")["aof_rewrite_in_progress"]:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        base = [name for name in os.listdir(os.path.join(workdir, "appendonlydir"))
                if ".base." in name]
        with open(os.path.join(workdir, "appendonlydir", base[0]), "rb") as fh:
            assert fh.read().startswith(b"*3\r\n$8\r\nFUNCTION\r\n$4\r\nLOAD\r\n")
    with started(workdir, "--appendonly", "yes", "--enable-debug-command", "yes") as proc:
        client = redis.Redis(port=proc.port)
        assert client.fcall("setter", 1, "k", "v2") == b"OK"
        client.config_set("appendonly", "no")
        assert client.save()
        assert client.execute_command("DEBUG", "RELOAD") == b"OK"
        assert client.fcall("setter", 1, "k", "v3") == b"OK"
        assert client.save()
    with started(workdir, "--appendonly", "no") as proc:
        client = redis.Redis(port=proc.port)
        assert [entry[1] for entry in client.function_list()] == [b"keep"]
        assert client.get("k") == b"v3"


def test_info_counts_the_libraries(srv: ServerProcess) -> None:
    client = redis.Redis(port=srv.port)
    client.function_flush()
    client.function_load(lib("one", f"{F_ECHO}\n{F_SET}"))
    memory = client.info("memory")
    assert memory["number_of_libraries"] == 1 and memory["number_of_functions"] == 2
    assert memory["used_memory_vm_functions"] > 0
    assert memory["used_memory_functions"] == len(lib("one", f"{F_ECHO}\n{F_SET}"))
    client.function_flush()
    # SCRIPT FLUSH leaves the functions alone, FUNCTION FLUSH the scripts.
    client.function_load(lib("one", F_ECHO))
    client.script_load("return 1")
    client.script_flush()
    assert client.fcall("echo", 0) == [[], []]
    client.function_flush()


@pytest.fixture()
def busy_proc() -> Iterator[ServerProcess]:
    with running(["--busy-reply-threshold", "100"]) as proc:
        yield proc


def test_a_busy_function_is_killed_by_function_kill(busy_proc: ServerProcess) -> None:
    port = busy_proc.port
    client = redis.Redis(port=port)
    client.function_load(lib("slow", "redis.register_function('spin', function() "
                                     "while true do end end)"))
    result: dict[str, str] = {}

    def run() -> None:
        try:
            redis.Redis(port=port, socket_timeout=30).fcall("spin", 0)
        except redis.ResponseError as exc:
            result["error"] = str(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    other = connect(port)
    deadline = time.monotonic() + 10
    while not isinstance(call(other, "PING"), Exception):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    busy = ("BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN "
            "NOSAVE.")
    assert str(call(other, "GET", "x")) == busy
    assert str(call(other, "SCRIPT", "KILL")) == busy  # (SCRIPT KILL is for EVAL's scripts)
    stats = call(other, "FUNCTION", "STATS")
    assert isinstance(stats, list) and stats[0] == b"running_script"
    running_script = stats[1]
    assert running_script[:4] == [b"name", b"spin", b"command", [b"FCALL", b"spin", b"0"]]
    assert call(other, "FUNCTION", "KILL") == b"OK"
    thread.join(10)
    assert result["error"].startswith("Script killed by user with SCRIPT KILL...")
    assert "using the FUNCTION KILL command. Script name is: spin." in busy_proc.read_log()
    assert call(other, "PING") == b"PONG"
