"""Lua scripting (EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT) against Debian's redis-server.

Tables of scripts run on our server and on redis-server 7.0.15, in RESP2 and in RESP3 (HELLO 3),
and their replies must be the same bytes: return value conversions, redis.call replies seen
from Lua, error texts, the bit and cjson libraries, the sandbox's globals. Side effects (the
script cache, MULTI/EXEC, WATCH, the AOF, keyspace events, MONITOR, ACL, INFO, COMMAND GETKEYS,
redis-py's Lock and register_script) are checked on ours, and compared where they can be.

Where Redis 7.0 and 8.4 differ, ours follows 8.4 and is checked on its own:
- doubles in replies ({double=...}) and numbers passed to redis.call: 7.0 writes them with
  %.17g, 7.2+ with the shortest round-trip form (and integers as integers);
- ACL refusals inside scripts: "ACL failure in script: User <u> has no permissions ..."
  (7.0: "The user executing the script can't run this command or subcommand");
- 7.4+ has an `os` table with os.clock() only.
The Debian 7.0.15 build carries the October 2025 Lua fixes of 8.2.2 (no getfenv, setfenv or
newproxy), so those are compared. math.random is seeded per script in 7+ (never compared);
error({}) crashes redis-server 7.0.15 (never sent to it).

A test showing a difference from Redis is marked xfail(strict=True) with the difference as
its reason. The module describes Redis 8.4, so it is skipped when the suite runs against
redis-server (XSTREAMD_TEST_TARGET=redis).
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import hiredis
import pytest
import redis

from tests.helpers import TARGET, ServerProcess
from tests.integration.server_fixtures import module_server
from tests.integration.test_keyspace_events import events_of
from tests.integration.test_persistence_support import started
from tests.resp import Conn, ParsedConn

pytestmark = pytest.mark.skipif(TARGET == "redis",
                                reason="describes Redis 8.4's scripting (redis-server is 7.0)")

srv = module_server()  # (its own server: a script that breaks the sandbox stays here)

Command = tuple[str | bytes, ...]


def ev(script: str, *keys: str, args: Sequence[str] = ()) -> Command:
    """EVAL script with these keys (numkeys counted) and arguments."""
    return ("EVAL", script, str(len(keys)), *keys, *args)


def known(value: Any, reason: str) -> Any:
    """A case whose reply differs from Redis's: a strict xfail with the difference (a tuple
    holds the values of several parameters)."""
    values = value if isinstance(value, tuple) else (value,)
    return pytest.param(*values, marks=pytest.mark.xfail(reason=reason, strict=True))


def replies(proc: ServerProcess, commands: Sequence[Command], protocol: int = 2) -> list[bytes]:
    """The exact bytes of each command's reply, run in order after FLUSHALL and SCRIPT FLUSH
    (a fresh interpreter) on one connection speaking RESP `protocol`."""
    conn = Conn(proc)
    try:
        if protocol == 3:
            assert conn.call("HELLO", "3").startswith(b"%")
        conn.call("FLUSHALL")
        conn.call("SCRIPT", "FLUSH")
        return [conn.call(*command) for command in commands]
    finally:
        conn.close()


def assert_same(ours: ServerProcess, ref: ServerProcess, commands: Sequence[Command],
                protocol: int = 2) -> list[bytes]:
    """Run commands on both servers; each reply must be the same bytes. Ours are returned."""
    mine = replies(ours, commands, protocol)
    theirs = replies(ref, commands, protocol)
    for command, got, want in zip(commands, mine, theirs, strict=True):
        assert got == want, command
    return mine


def one(proc: ServerProcess, script: str, protocol: int = 2) -> bytes:
    """The reply to `EVAL script 0` on a fresh interpreter."""
    return replies(proc, [ev(script)], protocol)[0]


def sha_of(reply: bytes) -> str:
    """The sha1 of the script in an error's " script: <sha>, on ..." suffix."""
    match = re.search(rb"script: ([0-9a-f]{40}),", reply)
    assert match, reply
    return match.group(1).decode()


PROTOCOLS = pytest.mark.parametrize("protocol", [2, 3])
# The script's own protocol for redis.call replies: RESP2, or RESP3 after redis.setresp(3).
SCRIPT_RESP = pytest.mark.parametrize("setresp", ["", "redis.setresp(3) "],
                                      ids=["resp2-script", "resp3-script"])


# == 1. The script's return value -> the reply =================================================
RETURNS = [
    "return 1", "return -1", "return 0", "return 3.99", "return -3.99", "return 0.5",
    "return 1e20", "return -1e20", "return 2^63", "return 2^53+1", "return 0/0", "return 1/0",
    "return -1/0", "return 'hello'", "return ''", "return 'a\\0b'", "return true", "return false",
    "return nil", "return", "return {}", "return {1,2,{3,'x',{true,false}}}", "return {1,nil,3}",
    "return {nil,1}", "return {1,2,3,nil}", "return {1, 'two', 3.7, true, false}",
    "local t = {} for i=1,10 do t[i]=i end return t", "return {a=1, b=2}",
    "return {ok='fine'}", "return {ok='a\\r\\nb'}", "return {ok=''}", "return {ok=1}",
    "return {ok={}}", "return {err='BAD thing'}", "return {err='bad'}", "return {err=''}",
    "return {err='a\\r\\nb'}", "return {err=1}", "return {err={}}", "return {ok='s', err='e'}",
    "return {err='-X y'}",
    "return redis.status_reply('OK2')", "return redis.status_reply('')",
    "return redis.error_reply('MY err')", "return redis.error_reply('-MY err')",
    "return redis.error_reply('noerrcode')", "return redis.error_reply('-noerrcode')",
    "return redis.error_reply('-')", "return redis.error_reply('')",
    "return redis.error_reply()", "return redis.status_reply(1)", "return redis.error_reply(1)",
    "return redis.status_reply('a', 'b')",
    "return {1,{err='inner e'},{ok='inner s'}}", "return {1,redis.error_reply('x y')}",
    "return {double=3.5}", "return {double=3}", "return {double=-2.25}", "return {double='x'}",
    "return {double=1/0}", "return {double=-1/0}",
    known("return {double=-0.0}", "{double=-0.0}: Redis replies -0, ours 0"),
    "return {map={a=1}}", "return {map={}}", "return {map={a={1,2}}}", "return {map={[1]='one'}}",
    "return {map={x={map={y='z'}}}}", "return {set={a=true}}", "return {set={}}",
    "return {set={a=true, b=true, c=true}}", "return {1,{double=2.5},{map={x='y'}},{set={q=true}}}",
    "return {big_number='123456789012345678901234567890'}", "return {big_number='1\\r\\n2'}",
    "return {big_number=5}",
    "return {verbatim_string={format='txt',string='hi'}}",
    "return {verbatim_string={format='mkd',string='a\\nb'}}",
    "return {verbatim_string={format='txt'}}",
    known("return {verbatim_string={format='toolong',string='x'}}",
          "a verbatim format longer than 3 bytes: Redis uses its first 3 ('too:x'), "
          "ours replies an empty array"),
    "return function() end", "return coroutine.create(function() end)",
]


@pytest.mark.parametrize("script", RETURNS)
@SCRIPT_RESP
@PROTOCOLS
def test_return_values_match_redis(srv: ServerProcess, redis_ref: ServerProcess, script: str,
                                   setresp: str, protocol: int) -> None:
    """Numbers truncated, booleans, nil, tables up to the first nil, {ok}, {err}, {double},
    {map}, {set}, {big_number}, {verbatim_string}; from RESP2 and RESP3 scripts and callers."""
    assert_same(srv, redis_ref, [ev(setresp + script)], protocol)


# Redis 7.2+ writes doubles as the shortest form that reads back the same (7.0: %.17g).
DOUBLES_8X = [
    ("return {double=0.1}", 2, b"$3\r\n0.1\r\n"),
    ("return {double=0.1}", 3, b",0.1\r\n"),
    ("return {double=1e300}", 3, b",1e+300\r\n"),
    ("return {double=1/3}", 3, b",0.3333333333333333\r\n"),
    ("return {double=0/0}", 2, b"$3\r\nnan\r\n"),
    ("return {double=0/0}", 3, b",nan\r\n"),
]


@pytest.mark.parametrize(("script", "protocol", "expected"), DOUBLES_8X)
def test_doubles_as_redis_8(srv: ServerProcess, script: str, protocol: int,
                            expected: bytes) -> None:
    """{double=...} replies as Redis 8 writes them (d2string: shortest form, nan)."""
    assert one(srv, script, protocol) == expected


def test_simple_replies_lose_their_newlines(srv: ServerProcess) -> None:
    """A status or error with CR/LF is written on one line (they would end the reply)."""
    assert one(srv, "return {ok='a\\r\\nb'}") == b"+a  b\r\n"
    assert one(srv, "return redis.error_reply('E a\\nb')") == b"-E a b\r\n"


# == 2. redis.call's replies as Lua values, and back ============================================
CALL_SETUP: list[Command] = [
    ("SET", "s", "v"), ("SET", "n", "10"), ("XADD", "st", "1-1", "f", "v"),
    ("XADD", "st", "2-1", "a", "1", "b", "2"), ("XGROUP", "CREATE", "st", "g", "0"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "st", ">"),
]

CALLS = [
    "return redis.call('get','missing')", "return type(redis.call('get','missing'))",
    "return redis.call('get','s')", "return type(redis.call('get','s'))",
    "return redis.call('ping')", "return type(redis.call('ping'))", "return redis.call('ping').ok",
    "return redis.call('ping', 'x')", "return redis.call('echo', 'hi')",
    "return redis.call('incr','n')", "return type(redis.call('incr','n'))",
    "return redis.call('set','s','new','get')", "return redis.call('set','s2','new','get')",
    "return type(redis.call('set','s3','new','get'))", "return redis.call('set','s','x','nx')",
    "return type(redis.call('set','s','x','nx'))",
    "return redis.call('mget','s','missing','n')",
    "local t = redis.call('mget','s','missing','n') return {type(t[1]),type(t[2]),type(t[3])}",
    "return redis.call('exists','s','n','nope')", "return redis.call('type','st')",
    "return type(redis.call('type','st'))", "return redis.call('type','st').ok",
    "return redis.call('xadd','st','3-1','x','y')", "return redis.call('xlen','st')",
    "return redis.call('xrange','st','-','+')",
    "return redis.call('xrange','st','-','+','count',1)",
    "return redis.call('xrevrange','st','+','-')", "return #redis.call('xrange','st','-','+')",
    "return redis.call('xrange','st','-','+')[2][2][3]",
    "return redis.call('xread','streams','st','0')",
    "return redis.call('xread','count','1','streams','st','0')",
    "return redis.call('xread','streams','nost','0')",
    "return type(redis.call('xread','streams','nost','0'))",
    # (the whole XINFO STREAM reply has Redis 8.6's IDMP fields, which 7.0 lacks)
    "local r = redis.call('xinfo','stream','st') if r.map then return r.map['last-generated-id'] "
    "end return r[8]", "return type(redis.call('xinfo','stream','st'))",
    "local r = redis.call('xinfo','stream','st') return r.map and 'map' or 'array'",
    "local r = redis.call('xinfo','stream','st') return r.map and r.map['length'] or r[2]",
    "return redis.call('xinfo','groups','st')", "return redis.call('xpending','st','g')",
    "return redis.call('xpending','st','g')[4]", "return redis.call('xack','st','g','1-1')",
    "return redis.call('xdel','st','2-1')", "return redis.call('xtrim','st','maxlen','0')",
    "return redis.call('xgroup','create','st','g2','$')",
    "return redis.call('xgroup','createconsumer','st','g','c9')",
    "return redis.call('xreadgroup','group','g','c','streams','st','>')",
    "return type(redis.call('xreadgroup','group','g','c','streams','st','>'))",
    "return redis.call('xreadgroup','group','g','c','streams','st','0')",
    "return redis.call('xsetid','st','9-9')", "return redis.call('del','st','s')",
    "return redis.call('ttl','s')", "return redis.call('dbsize')",
    "return redis.call('object','encoding','s')", "return redis.call('strlen','s')",
    "return redis.pcall('get','st')", "return type(redis.pcall('get','st'))",
    "return redis.pcall('get','st').err", "local t = redis.pcall('incr','s') return t",
    "return redis.call('hello')", "return redis.call('hello','3')",
    "return redis.call('client','id')", "return redis.call('config','get','maxmemory')",
]


@pytest.mark.parametrize("script", CALLS)
@SCRIPT_RESP
@PROTOCOLS
def test_call_replies_match_redis(srv: ServerProcess, redis_ref: ServerProcess, script: str,
                                  setresp: str, protocol: int) -> None:
    """Status -> {ok}, error -> {err}, null -> false (RESP2) or nil (RESP3), maps -> {map} in
    RESP3 (XINFO STREAM), and those values returned again; HELLO refused in scripts."""
    assert_same(srv, redis_ref, [*CALL_SETUP, ev(setresp + script)], protocol)


@pytest.mark.parametrize("script", [
    "return redis.call('xread','block','0','streams','st','$')",
    "return redis.pcall('xread','block','0','streams','nost','0')",
    "return redis.call('xreadgroup','group','g','c','block','0','streams','st','>')",
    "return redis.pcall('xreadgroup','group','g','c','block','100','streams','st','>')",
    "return redis.call('xreadgroup','group','g','c','streams','st','>')",
    "return redis.call('xread','streams','st','$')",
])
@PROTOCOLS
def test_blocking_reads_in_scripts_match_redis(srv: ServerProcess, redis_ref: ServerProcess,
                                               script: str, protocol: int) -> None:
    """XREAD / XREADGROUP from a script on an empty stream: without BLOCK they reply nil, with
    BLOCK Redis refuses them ("xread command is not allowed with BLOCK option from scripts")."""
    setup: list[Command] = [("XGROUP", "CREATE", "st", "g", "$", "MKSTREAM")]
    assert_same(srv, redis_ref, [*setup, ev(script)], protocol)


def test_blocking_read_in_a_script_does_not_block(srv: ServerProcess) -> None:
    """XREAD BLOCK 0 on an empty stream inside a script replies at once (refused, as Redis
    does), never waiting for an entry."""
    conn = ParsedConn(srv)
    try:
        conn.call("DEL", "empty")
        start = time.monotonic()
        conn.send(*ev("return redis.pcall('xread','block','0','streams','empty','$')"))
        reply = conn.read(timeout=5)
        assert time.monotonic() - start < 2
        assert isinstance(reply, Exception)
        assert str(reply) == "ERR xread command is not allowed with BLOCK option from scripts"
    finally:
        conn.close()


# == 3. Errors ===================================================================================
NO_POSITION = ("an error raised by a Python-written library function (cjson, bit) lacks Lua's "
               "'user_script:1: ' position prefix")
TAIL_CALL = ("an error raised in a tail call ('return f()') is placed 'on =(tail call):-1.' "
             "instead of 'on @user_script:1.'")

ERRORS = [
    "return nil + 1", "local a = nil; return a + 1", "return {} .. 'x'", "return #nil",
    "return undefined_global", "x = 1", "myglobal = 5 return 1", "_G.x = 1",
    "local function f() y = 1 end f()",
    "error('x')", "error('x', 0)", "error('x', 2)", "error({err='CODE msg'})",
    "error({err='nocode'})", "error({err='-CODE msg'})",
    "error(nil)", "error(42)", "error(true)",
    "\nreturn nil + 1", "\n\n error('line3')", "\n\nreturn redis.call('incr','s')",
    "local function f() return redis.call('incr','s') end\nreturn f()",
    "local function f()\n  redis.call('incr','s')\nend\nf()",
    "assert(1 == 2)", "return assert(false, 'assert msg')", "return assert(nil)",
    "return redis.call('nosuchcmd')", "return redis.pcall('nosuchcmd')",
    "return redis.call('get')", "return redis.pcall('get')", "return redis.call('get','a','b')",
    "return redis.call('xread','streams','st')",
    "return redis.call('eval','return 1','0')", "return redis.pcall('eval','return 1','0')",
    "return redis.call('evalsha','abc','0')", "return redis.call('eval_ro','return 1','0')",
    "return redis.call('script','load','return 1')", "return redis.call('script','flush')",
    "return redis.call('multi')", "return redis.call('exec')", "return redis.call('discard')",
    "return redis.call('watch','x')", "return redis.call('unwatch')",
    "return redis.call('subscribe','c')", "return redis.call('psubscribe','c')",
    "return redis.call('monitor')", "return redis.call('auth','x')",
    "return redis.call('save')", "return redis.call('bgsave')", "return redis.call('shutdown')",
    "return redis.call('wait','0','0')", "return redis.call('debug','sleep','0')",
    "return redis.call('acl','whoami')", "return redis.call('client','list')",
    "return redis.call('reset')", "return redis.call('quit')",
    "return redis.call('incr','s')", "return redis.pcall('incr','s')",
    "return redis.pcall('incr','s').err", "return redis.call('xadd','s','*','f','v')",
    "return redis.pcall('xadd','s','*','f','v')", "return redis.call('get','st')",
    "return redis.call('xgroup','create','nost','g','$')",
    "return redis.call('xadd','st','1-1','f','v')", "return redis.call('select', 100)",
    "return redis.call()", "return redis.pcall()", "return redis.call({})",
    "return redis.pcall({})", "return redis.call('get', {})", "return redis.call('get', true)",
    "return redis.call('get', nil)", "return redis.call('echo', 'a', nil)",
    "return redis.call(1)", "return redis.call(nil, 'get')",
    "local ok, e = pcall(error, 'boom'); return e",
    "local ok, e = pcall(error, {err='X boom'}); return e",
    "local ok, e = pcall(function() return nil + 1 end); return e",
    "local ok, e = pcall(redis.call); return e",
    "return pcall(redis.call,'incr','s')",
    "return {pcall(redis.call,'incr','s')}", "local ok, e = pcall(redis.call,'incr','s'); return e",
    "local ok, e = pcall(redis.call,'nosuch'); return e",
    "local ok, e = xpcall(function() error('x') end, function(m) return 'h:' .. m end) return e",
    "return redis.sha1hex('a','b') .. 'x'",
    "local x = redis.sha1hex() return x",
    "return redis.sha1hex()",
    "local x = redis.log(5, 'x') return x",
    "return redis.log(5, 'x')", "return redis.log('x', 'y')",
    "return redis.log(1)",
    "return redis.setresp(4)", "return redis.setresp()",
    "return redis.set_repl(99)",
    "return redis.acl_check_cmd('nosuch')", "return redis.acl_check_cmd()",
    known("return math.random(0)", TAIL_CALL), known("return math.random(2, 1)", TAIL_CALL),
    known("return math.random(1,2,3)", TAIL_CALL),
    "local x = redis.setresp(4) return x", "local x = math.random(0) return x",
    "return 1 +", "return (", "local", "x = ", "return 'unterminated", "+", "return 1 end",
    "for", "return 1\n  +", "\n\nlocal x = = 2", "return --[[ unterminated",
]


@pytest.mark.parametrize("script", ERRORS)
@PROTOCOLS
def test_errors_match_redis(srv: ServerProcess, redis_ref: ServerProcess, script: str,
                            protocol: int) -> None:
    """Runtime and compile errors, globals protection, error(), redis.call errors (with the
    " script: <sha>, on @user_script:<line>." suffix) and redis.pcall's (without)."""
    setup: list[Command] = [("SET", "s", "v"), ("XADD", "st", "1-1", "f", "v")]
    assert_same(srv, redis_ref, [*setup, ev(script)], protocol)


def test_error_texts(srv: ServerProcess) -> None:
    """A few texts spelled out (the comparisons above hold them against redis-server)."""
    reply = replies(srv, [("SET", "s", "v"), ev("return redis.call('incr','s')")])[1]
    assert reply == (b"-ERR value is not an integer or out of range script: "
                     + sha_of(reply).encode() + b", on @user_script:1.\r\n")
    assert one(srv, "return redis.pcall('nosuch')") == (
        b"-ERR Unknown Redis command called from script\r\n")
    assert one(srv, "return 1 +") == (b"-ERR Error compiling script (new function): "
                                      b"user_script:1: unexpected symbol near '<eof>'\r\n")
    assert one(srv, "x = 1").startswith(b"-ERR user_script:1: Attempt to modify a readonly table")


def test_error_table_without_err_does_not_break_the_server(srv: ServerProcess) -> None:
    """error({}) (it crashes redis-server 7.0.15): an error reply, and the server lives on."""
    reply = one(srv, "error({})")
    assert reply.startswith(b"-")
    assert one(srv, "return 1") == b":1\r\n"


# -- the arguments of EVAL / EVALSHA, EVAL_RO and shebangs ---------------------------------------
UNKNOWN_SHA = "ffffffffffffffffffffffffffffffffffffffff"

ARGUMENTS: list[Command] = [
    ("EVALSHA", UNKNOWN_SHA, "0"), ("EVALSHA", "abc", "0"), ("EVALSHA_RO", UNKNOWN_SHA, "0"),
    ("EVALSHA", UNKNOWN_SHA, "-1"), ("EVALSHA", UNKNOWN_SHA, "5"),
    ("EVAL", "return 1", "-1"), ("EVAL", "return 1", "1"), ("EVAL", "return 1", "x"),
    ("EVAL", "return 1", ""), ("EVAL", "return 1", "1.5"), ("EVAL", "return 1", " 1"),
    ("EVAL", "return 1", "99999999999999999999"), ("EVAL", "return 1", "2", "a"),
    ("EVAL", "return 1 +", "-1"), ("EVAL", "return 1 +", "5"), ("EVAL", "return 1"), ("EVAL",),
    ("EVALSHA", UNKNOWN_SHA), ("EVAL_RO", "return 1"),
    ("EVAL", "return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], #KEYS, #ARGV}", "2", "a", "b", "c", "d"),
    ("EVAL", "return {#KEYS, #ARGV, ARGV[1]}", "0", "x", "y"),
    ("EVAL", "return {#KEYS, #ARGV}", "0"), ("EVAL", "return type(KEYS[1])", "1", "123"),
    ("EVAL", "return KEYS[1] .. ARGV[1]", "1", "", ""),
    ("EVAL", "return ARGV[1]", "0", "bin\x00ary"), ("EVAL", "return #ARGV[1]", "0", "x" * 1000),
    ("EVAL", "KEYS[1] = 'x' return KEYS[1]", "1", "k"), ("EVAL", "return KEYS", "3", "a", "b", "c"),
    ("EVAL_RO", "return redis.call('set','k','v')", "1", "k"),
    ("EVAL_RO", "return redis.pcall('set','k','v')", "1", "k"),
    ("EVAL_RO", "return redis.call('get','k')", "1", "k"), ("EVAL_RO", "return 1", "0"),
    ("EVAL_RO", "return redis.call('xadd','st','*','f','v')", "1", "st"),
    ("EVAL_RO", "return redis.call('publish', 'ch', 'm')", "0"),
    ("EVAL_RO", "return redis.call('xgroup','create','st','g','$','mkstream')", "0"),
    ("EVAL_RO", "return redis.call('xreadgroup','group','g','c','streams','st','>')", "0"),
    ("EVAL_RO", "return redis.call('incr', 'n')", "0"),
    ("EVAL", "#!lua flags=no-writes\nreturn redis.call('set','k','v')", "1", "k"),
    ("EVAL", "#!lua flags=no-writes\nreturn redis.pcall('set','k','v')", "1", "k"),
    ("EVAL", "#!lua flags=no-writes\nreturn redis.call('get','k')", "1", "k"),
    ("EVAL", "#!lua flags=no-writes\nreturn redis.call('publish', 'ch', 'm')", "0"),
    ("EVAL", "#!lua flags=no-writes,allow-oom\nreturn 1", "0"),
    ("EVAL", "#!lua\nreturn redis.call('set','k','v')", "1", "k"),
    ("EVAL", "#!lua\nreturn redis.call('set','k','v')", "0"),
    ("EVAL", "#!lua flags=allow-cross-slot-keys\nreturn 1", "0"),
    ("EVAL", "#!lua flags=no-cluster\nreturn 1", "0"),
    ("EVAL", "#!lua flags=allow-stale\nreturn 1", "0"),
    ("EVAL", "#!lua flags=bogus\nreturn 1", "0"),
    ("EVAL", "#!lua flags=no-writes,bogus\nreturn 1", "0"),
    ("EVAL", "#!lua flags=no-writes,,allow-oom\nreturn 1", "0"),
    ("EVAL", "#!lua flags=\nreturn 1", "0"),
    ("EVAL", "#!lua flags=\nreturn redis.call('set','k','v')", "0"),
    ("EVAL", "#!lua flags=NO-WRITES\nreturn 1", "0"),
    ("EVAL", "#!lua FLAGS=no-writes\nreturn 1", "0"),
    ("EVAL", "#!lua bogus=1\nreturn 1", "0"), ("EVAL", "#!lua name=x\nreturn 1", "0"),
    ("EVAL", "#!python\nreturn 1", "0"), ("EVAL", "#!LUA\nreturn 1", "0"),
    ("EVAL", "#!luax\nreturn 1", "0"), ("EVAL", "#! lua\nreturn 1", "0"),
    ("EVAL", "#!\nreturn 1", "0"), ("EVAL", "#!lua", "0"), ("EVAL", "#!lua flags=no-writes", "0"),
    ("EVAL", "#!lua  flags=no-writes  \nreturn 2", "0"), ("EVAL", "#!lua\r\nreturn 1", "0"),
    ("EVAL", "#!lua\tflags=no-writes\nreturn redis.call('set','a','b')", "0"),
    ("EVAL", "#!lua flags=no-writes flags=allow-oom\nreturn redis.call('set','a','b')", "0"),
    ("EVAL", "#!lua flags=no-writes\n\nreturn redis.call('set','a','b')", "0"),
    ("EVAL", "#!lua\nerror('x')", "0"), ("EVAL", "#!lua\n\nreturn nil + 1", "0"),
    ("EVAL", "#!lua\nreturn 1 +", "0"), ("EVAL", "#!lua\n", "0"), ("EVAL", " #!lua\nreturn 1", "0"),
    ("EVAL", "#!lua\nreturn 1\n#!lua", "0"),
    ("EVAL_RO", "#!lua\nreturn 1", "0"), ("EVAL_RO", "#!lua flags=no-writes\nreturn 1", "0"),
    ("EVAL_RO", "#!lua flags=allow-oom\nreturn 1", "0"),
    ("SCRIPT", "LOAD", "#!lua flags=bogus\nreturn 1"), ("SCRIPT", "LOAD", "return 1 +"),
]


@pytest.mark.parametrize("command", ARGUMENTS, ids=range(len(ARGUMENTS)))
@PROTOCOLS
def test_arguments_and_shebangs_match_redis(srv: ServerProcess, redis_ref: ServerProcess,
                                            command: Command, protocol: int) -> None:
    """numkeys (negative, too big, not a number), NOSCRIPT, KEYS and ARGV, EVAL_RO and
    `#!lua flags=no-writes` refusing writes, shebang errors, _RO of a writing shebang script."""
    assert_same(srv, redis_ref, [command], protocol)


@pytest.mark.parametrize("script", [
    known('#!lua "flags=no-writes"\nreturn 1', "quoted shebang arguments (Redis splits the "
          "line with sdssplitargs): Redis accepts, ours 'Unknown lua shebang option'"),
    known("#!lua 'flags=no-writes'\nreturn redis.call('set','k','v')",
          "quoted shebang arguments: Redis applies no-writes, ours refuses the option"),
    known('#!lua "unbalanced\nreturn 1', "an unbalanced quote in the shebang: Redis "
          "'Invalid engine in script shebang', ours 'Unknown lua shebang option'"),
    known("#!lua\x00\nreturn 1", "a NUL in the shebang line: Redis 'Invalid script shebang', "
          "ours 'Unexpected engine in script shebang: #!lua\\x00'"),
])
def test_shebang_parsing_matches_redis(srv: ServerProcess, redis_ref: ServerProcess,
                                       script: str) -> None:
    """The shebang line split as Redis splits it (sdssplitargs)."""
    assert_same(srv, redis_ref, [ev(script)])


# == 4. Libraries ================================================================================
BIT_ROUNDING = ("LuaBitOp rounds a fractional argument to the nearest integer (even on ties): "
                "ours floors it")
BIT_BIG = ("LuaBitOp takes a number beyond 2^53 (or NaN, inf) modulo 2^32 of the double's "
           "mantissa bits (1e20 -> 2025163840, NaN -> 0): ours takes the exact integer, or "
           "fails with a Python error for NaN and inf")
BIT_ARGS = ("bit argument errors: Redis \"user_script:1: bad argument #1 to 'tobit' (number "
            "expected, got no value)\", ours a Python message (\"<lambda>() missing 1 required "
            "positional argument: 'v'\", \"could not convert string to float: b'x'\")")


def bit_values(value: str) -> str:
    return (f"return {{bit.tobit({value}), bit.bnot({value}), bit.tohex({value}), "
            f"bit.bswap({value})}}")


def bit_shifts(value: str) -> str:
    calls = [f"bit.{op}({value},{n})" for n in ("0", "1", "4", "31", "32", "33", "-1")
             for op in ("lshift", "rshift", "arshift", "rol", "ror")]
    return "return {" + ", ".join(calls) + "}"


LIBRARIES = [
    *[bit_values(v) for v in ("0", "1", "-1", "0x7fffffff", "0x80000000", "0xffffffff", "2^32",
                              "2^32+5", "-2^31", "2^53", "-2^53", "-1.5", "2.5", "0.4999",
                              "12345678", "'12'")],
    bit_values("1.5"), bit_values("-2.5"),
    "return bit.tobit(-0.5)", "return bit.band(1.9, 3)",
    "return bit.tohex(255, 2.7)",
    bit_values("1e20"), bit_values("-1e20"),
    bit_values("0/0"), bit_values("1/0"),
    *[bit_shifts(v) for v in ("0x12345678", "-1", "0xdeadbeef", "5")],
    *[f"return {{bit.tohex(0x12abCDef, {d}), bit.tohex(-1, {d})}}"
      for d in ("0", "1", "2", "4", "8", "9", "-1", "-4", "-8", "-9", "100", "-100")],
    "return bit.band(0xff, 0x0f, 0x3)", "return bit.bor(1,2,4,8,16,32,64,128)",
    "return bit.bxor(0xff,0x0f,0x1)", "return bit.band(1)", "return bit.bor('3','4')",
    "return bit.tohex(1, '4')", "return tostring(bit.tobit(3))", "return type(bit)",
    "local t={} for k in pairs(bit) do t[#t+1]=k end table.sort(t) return t",
    "local x = bit.band() return x",
    "local x = bit.tobit() return x",
    "local x = bit.tobit({}) return x",
    "local x = bit.lshift(1) return x",
    "local x = bit.band('x', 1) return x",
    "local x = bit.tohex(1, 'x') return x",
    # cjson.encode
    "return cjson.encode({1,2,3})", "return cjson.encode({})", "return cjson.encode({{}, {{}}})",
    "return cjson.encode({a={b={c=1}}})", "return cjson.encode({a='x'})",
    "return cjson.encode({[1]='a',[2]='b'})", "return cjson.encode({'a', {b={1, {c=true}}}})",
    *[f"return cjson.encode({n})" for n in (
        "1", "-1", "0", "1.5", "-2.25", "0.1", "1e300", "-1e300", "1e15", "1234567890123456",
        "2^53", "1/3", "1e-5", "1e-300", "100", "3.14159265358979", "1e-7", "12345.678")],
    "return cjson.encode(1e14)", "return cjson.encode(123456789012345)",  # (%.14g)
    known("return cjson.encode(-0.0)", "cjson.encode(-0.0): Redis -0, ours 0"),
    "return cjson.encode('a\"b')", "return cjson.encode('a/b')", "return cjson.encode('a\\\\b')",
    "return cjson.encode('\\n\\r\\t\\b\\f')", "return cjson.encode('\\1\\31\\127')",
    "return cjson.encode('\\0x')", "return cjson.encode('')", "return cjson.encode({['a\"']=1})",
    "return cjson.encode('\\195\\169')",
    "return cjson.encode('\\255')",
    "return cjson.encode(true)", "return cjson.encode(false)", "return cjson.encode(nil)",
    "return cjson.encode(cjson.null)", "return cjson.encode({cjson.null, 1})",
    "return cjson.encode({1, nil, 3})", "return cjson.encode({[1]=1,[5]=5})",
    "return cjson.encode({[0]=1})", "return cjson.encode({[-1]=1})",
    "return cjson.encode({[1.5]=1})", "return cjson.encode({[2]=2})",
    "return cjson.encode({{{{{{{{{{{{{{{{{{{{{{{{{{{{{{}}}}}}}}}}}}}}}}}}}}}}}}}}}}}})",
    "local x = cjson.encode(0/0) return x", "local x = cjson.encode(function() end) return x",
    "local x = cjson.encode({[1]=1,[20]=5}) return x", "return cjson.encode(1/0)",
    "local ok, e = pcall(cjson.encode, 0/0) return e",
    "local ok, e = pcall(cjson.decode, 'nul') return e",
    known("return cjson.encode()", "cjson.encode() without an argument: Redis \"bad argument #1 "
          "to 'encode' (expected 1 argument)\", ours a Python message (\"_json_encode() missing 1 "
          "required positional argument\")"),
    "return cjson.encode({[true]=1})",
    "local t = {} t[1] = t return cjson.encode(t)",
    # cjson.decode
    "return cjson.decode('[1,2,3]')", "return cjson.decode('{\"a\":{\"b\":[1,2]}}').a.b",
    "return cjson.decode('\"x\"')", "return cjson.decode('1.5')",
    "return tostring(cjson.decode('1.5'))", "return tostring(cjson.decode('1e300'))",
    "return cjson.decode('1e300') == 1e300",
    known("return tostring(cjson.decode('-0'))", "cjson.decode('-0'): Redis -0, ours 0"),
    "return table.concat(cjson.decode('[0.0, -5e3, -1, 0.3e-3, 1023.2, 0e10]'), ' ')",
    "return cjson.decode('null') == cjson.null", "return type(cjson.null)",
    "return cjson.decode('true')", "return cjson.decode('false')",
    "return type(cjson.decode('false'))", "return cjson.decode('\"\\\\u00e9\"')",
    "return cjson.decode('\"\\\\ud83d\\\\ude00\"')", "return cjson.decode('\"a\\\\/b\\\\n\\\\t\"')",
    "return cjson.decode('\"\\\\u0000\"')", "return cjson.decode('[1,null,3]')[3]",
    "return #cjson.decode('[1,null,3]')", "return cjson.decode('  1  ')",
    "return cjson.decode('{\"1\":2}')['1']", "return cjson.decode('[[[[]]]]')",
    "return cjson.decode('{}')", "return cjson.decode('[]')",
    "return cjson.encode(cjson.decode('{\"k\":[1,2.5,\"s\",true,false,null]}'))",
    "return cjson.decode(cjson.encode({'a', 'b', {c='d'}}))[3].c",
    "return cjson.encode(cjson.decode('\"\\\\\"q\\\\\" \\\\\\\\ \\\\/\"'))",
    "local x = cjson.decode('nul') return x",
    *[known(f"local x = cjson.decode('{text}') return x", "cjson.decode errors: Redis names the "
            "token found ('T_END', 'T_ARR_END', 'invalid escape code', 'invalid number'), ours "
            "always says 'invalid token'")
      for text in ("", "[", "{", "[1,]", '{"a":}', "1 2", '"\\\\x"', "[1]x", "-")],
    known("return cjson.decode('NaN')", "cjson.decode accepts NaN, Infinity, hex and leading "
          "zeros as Redis's does: ours refuses them"),
    known("return cjson.decode('0x10')", "cjson.decode('0x10'): Redis 16, ours an error"),
    known("return cjson.decode('01')", "cjson.decode('01'): Redis 1, ours an error"),
    known("return cjson.decode('\"\\1\"')", "a control character inside a JSON string: Redis "
          "accepts it, ours refuses"),
    known("return cjson.decode(1)", "cjson.decode(1): Redis decodes the number's text, ours "
          "\"bad argument #1 to 'decode' (string expected)\""),
    "return tostring(cjson.null)",
    known("local t = {} for k in pairs(cjson) do t[#t+1]=k end table.sort(t) return t",
          "cjson.new is missing"),
    "return type(cmsgpack)",
    "return type(struct)",
    # redis.sha1hex, redis.log, and the rest of the redis table
    "return redis.sha1hex('')", "return redis.sha1hex('Pizza & Mandolino')",
    "return redis.sha1hex(123)", "return redis.sha1hex(1.5)",
    "return redis.sha1hex(nil)",
    "return redis.log(redis.LOG_WARNING, 'hello')", "return redis.log(redis.LOG_DEBUG, 'a', 1)",
    "return type(redis.log(redis.LOG_NOTICE, 'x', 'y'))",
    "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}",
    "return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, "
    "redis.REPL_ALL}",
    "return redis.set_repl(redis.REPL_ALL)", "return redis.replicate_commands()",
    "return redis.breakpoint()", "return redis.debug('x')",
    "return redis.acl_check_cmd('get', 'x')", "return redis.acl_check_cmd('set', 'x', 'y')",
    "return redis.acl_check_cmd('get')",
    "return redis.setresp('3')",
    "return type(redis.REDIS_VERSION)", "return type(redis.REDIS_VERSION_NUM)",
    # numbers, strings, tables
    *[f"return tostring({n})" for n in ("1", "1.5", "1e15", "1e16", "1e100", "0.1", "-0.0",
                                        "1/3", "2^53", "2^63", "0/0", "1/0", "-1/0",
                                        "123456789012", "0x10")],
    "return 1 .. ''", "return 3.0 .. ''", "return 10 / 4 .. ''", "return 7 % 3",
    "return string.format('%d %s %5.2f %x %q', 42, 'str', 3.14159, 255, 'a\\nb')",
    "return string.format('%g %e %G', 1e20, 12345.678, 1e-10)",
    "return string.format('%5s|%-5s|', 'a', 'b')", "return string.format('%c%c', 72, 105)",
    "return string.format('%d', 3.9)", "return string.format('%s %s', nil, true)",
    "return string.format('%d', 'x')", "return string.format('%10.3s|', 'abcdef')",
    "return string.format('%%')", "return string.format('%i', 5)",
    "return string.format('%q', '\\0\\r\\n\"')", "return string.format('%05.1f', 2.25)",
    "return table.concat({1,2,3}, ',')", "return table.concat({'a','b'})",
    "return table.concat({}, ',')", "return table.concat({1,{},3}, ',')",
    "return table.concat({1,2,3}, '-', 2, 3)",
    "return {unpack({1,2,3})}", "return {unpack({1,2,3}, 2)}", "return select('#', 1, nil, 3)",
    "return select(2, 'a', 'b', 'c')", "return {select(-1, 'a', 'b')}", "return select('#')",
    "return type(loadstring)", "return loadstring('return 1+1')()",
    "local f, e = loadstring('return +') return e", "return type(load)",
    "return type(loadstring('return 1', 'name'))", "return loadstring('x = 5')()",
    "local f = loadstring('y = 1') local ok, e = pcall(f) return e",
    "local f = loadstring('return x_unknown') return pcall(f)",
    "return math.floor(3.7)", "return math.max(1, 5, 3)", "return math.huge > 0",
    "return math.fmod(7, 3)", "return string.len('abc')", "return ('x'):rep(3)",
    "return string.byte('A')", "return string.char(72)", "return string.sub('hello', 2, 4)",
    "return {string.find('hello', 'l+')}", "return string.gsub('hello', 'l', 'L')",
    "return {string.match('k=v', '(%w+)=(%w+)')}", "return string.reverse('abc')",
    "return tonumber('0x10')", "return tonumber('10', 2)", "return tonumber('  5  ')",
    "return tonumber('5x')", "return tonumber('1e2')",
    "local t = {3,1,2} table.sort(t) return t",
    "local t = {} table.insert(t, 'a') table.insert(t, 1, 'b') return t",
    "local t = {1,2,3} table.remove(t, 1) return t", "return table.getn({1,2})",
    "return table.maxn({1,2,nil,4})",
    "local co = coroutine.create(function() coroutine.yield(1) end) "
    "local ok, v = coroutine.resume(co) return v",
    "return math.random() < 1", "return math.random(10) <= 10", "return math.random(5, 6) >= 5",
    "math.randomseed(1) return 1", "return type(math.random)",
]


@pytest.mark.parametrize("script", LIBRARIES)
@PROTOCOLS
def test_libraries_match_redis(srv: ServerProcess, redis_ref: ServerProcess, script: str,
                               protocol: int) -> None:
    """bit over a range of values, cjson round trips and errors, redis.sha1hex / log and the
    rest of the redis table, tostring of numbers, string.format, table.concat, unpack/select,
    loadstring."""
    assert_same(srv, redis_ref, [ev(script)], protocol)


def test_redis_log_returns_nothing_and_logs(srv: ServerProcess) -> None:
    """redis.log returns nothing (nil) and writes the message to the server's log."""
    assert one(srv, "return redis.log(redis.LOG_WARNING, 'scripting-test', 'marker')") == (
        b"$-1\r\n")
    deadline = time.monotonic() + 5
    while "scripting-test marker" not in srv.read_log():
        assert time.monotonic() < deadline, "the message did not reach the log"
        time.sleep(0.05)


# == 5. Globals, KEYS / ARGV, numbers passed to redis.call ======================================
GLOBALS = [
    *[f"return tostring({name})" for name in (
        "io", "print", "loadfile", "dofile", "require", "module", "package", "python")],
    known("return tostring(debug)", "`debug`: Redis errors (\"Script attempted to access "
          "nonexistent global variable 'debug'\"), ours gives nil"),
    *[f"return type({name})" for name in ("getfenv", "setfenv", "newproxy")],
    "return type(_G)", "return _VERSION", "return type(coroutine)", "return type(string.dump)",
    "return type(collectgarbage('count'))", "return gcinfo() > 0", "return type(gcinfo)",
    "return rawequal(_G, _G)", "return #_G", "return next({})", "return rawget(_G, 'nothing')",
    "return type(__redis__err__handler)", "return type(unpack)", "return type(loadstring)",
    known("local t = {} for k in pairs(_G) do t[#t+1]=k end table.sort(t) return t",
          "the globals: ours has an `os` table (7.4+'s, os.clock only), 7.0 none"),
    "local t = {} for k in pairs(string) do t[#t+1]=k end table.sort(t) return t",
    "local t = {} for k in pairs(math) do t[#t+1]=k end table.sort(t) return t",
    "local t = {} for k in pairs(table) do t[#t+1]=k end table.sort(t) return t",
    "local t = {} for k in pairs(coroutine) do t[#t+1]=k end table.sort(t) return t",
    "local t = {} for k in pairs(redis) do t[#t+1]=k end table.sort(t) return t",
    "local mt = getmetatable('') return type(mt)",
    "string.rep = nil", "string.foo = 1", "math.pi = 3", "table.insert = nil",
    "cjson.encode = nil", "bit.band = nil", "redis.call = nil", "redis.x = 1",
    "local mt = getmetatable('') mt.__index = {} return 1",
    "getmetatable('').__index.upper = nil", "_G.redis.call = nil", "_G.string.x = 1",
    "return rawget(redis, 'call') ~= nil", "return next(redis) ~= nil",
    "return type(getmetatable(redis))", "rawset(redis, 'x', 1)", "setmetatable(redis, {})",
    "local t = 0 for k in pairs(_G) do t = t + 1 end return t > 10",
    "local a = pairs(nil)", "local a = next(nil)", "local a = next()", "local a = pairs()",
    "local a = rawget(nil, 1)", "local a = rawget({})", "local a = getmetatable()",
    "local a = next(5)",
    "KEYS = 1", "redis = nil", "rawset(string, 'x', 1) return string.x",
    "rawset(redis, 'call', nil) return 1", "rawset(_G, 'x', 1) return x",
    "setmetatable(_G, nil) return 1", "local mt = getmetatable(_G) mt.__index = nil return 1",
    "_G = {}", "setmetatable(_G, {})", "local g = getmetatable(_G) g.__index = {}",
    "return loadstring('z = 1')()", "local t = setmetatable({}, {__index = function() "
    "return 5 end}) rawset(t, 'y', 1) return {t.x, t.y}",
    "return type(getmetatable(_G))",
]


@pytest.mark.parametrize("script", GLOBALS)
@PROTOCOLS
def test_globals_match_redis(srv: ServerProcess, redis_ref: ServerProcess, script: str,
                             protocol: int) -> None:
    """What exists (no os, io, print, loadfile, dofile, require, module), and that the
    globals and the library tables cannot be changed."""
    assert_same(srv, redis_ref, [ev(script)], protocol)


SETFENV = ("setfenv (which Redis removes) changes the environment of the interpreter's thread "
           "for every later script")


@pytest.mark.parametrize("scripts", [
    ["x = 1", "return 1"], ["string.rep = nil", "return ('x'):rep(3)"],
    ["rawset(_G, 'leak', 1)", "return leak"], ["setmetatable(_G, nil)", "return undefined_global"],
    ["getmetatable('').__index = {upper = function() return 'pwned' end}",
     "return ('x'):upper()"],
    ["getmetatable('').__index.upper = function() return 'p' end", "return ('x'):upper()"],
    ["redis.call = function() return 'fake' end", "return redis.call('ping')"],
    ["local r = redis for k in pairs(r) do r[k] = nil end", "return redis.call('ping')"],
    ["KEYS = {'a'}", "return KEYS"], ["math.floor = nil", "return math.floor(1.5)"],
    ["getmetatable(_G).__index = function() return 7 end", "return nothere"],
    ["local mt = getmetatable(_G) mt.__newindex = nil", "z = 1 return z"],
    ["setfenv(0, {redis = redis})", "return type(string)"],
    ["local g = getfenv(0) setfenv(0, setmetatable({}, {__index = g}))", "x = 5 return x"],
], ids=["global", "string.rep", "rawset", "setmetatable", "string-metatable", "string-method",
        "redis.call", "redis-table", "KEYS", "math.floor", "G-index", "G-newindex", "setfenv",
        "setfenv-globals"])
def test_one_script_cannot_change_the_next(srv: ServerProcess, redis_ref: ServerProcess,
                                           scripts: list[str]) -> None:
    """Scripts share one interpreter; what one script changes must not reach the next (the
    first script's own reply is compared in test_globals_match_redis)."""
    commands = [ev(script) for script in scripts]
    assert replies(srv, commands)[-1] == replies(redis_ref, commands)[-1]


OS_CLOCK = "Redis 7.4+ has an `os` table with os.clock() only (redis#12971): ours has no os"


@pytest.mark.parametrize(("script", "expected"), [
    pytest.param("return {type(os), type(os.clock), type(os.time), type(os.execute)}",
           b"*4\r\n$5\r\ntable\r\n$8\r\nfunction\r\n$3\r\nnil\r\n$3\r\nnil\r\n"),
    pytest.param("return os.clock() >= 0", b":1\r\n"),
], ids=["table", "clock"])
def test_os_clock_as_redis_8(srv: ServerProcess, script: str, expected: bytes) -> None:
    """os.clock() exists in Redis 8 (7.0 has no os at all: checked on ours only)."""
    assert one(srv, script) == expected


def numbers_in_calls() -> list[Command]:
    """SET k <number> from a script, then GET k, for numbers formatted alike in 7.0 and 8.x."""
    commands: list[Command] = []
    for number in ("3.5", "1e20", "-1e20", "2^53", "2^53+1", "-0.5", "100", "-7", "1e15",
                   "1e16", "3.0", "2^31", "0.5", "-2^40", "0.25"):
        commands += [ev(f"return redis.call('set', 'k', {number})"), ("GET", "k")]
    return commands


def test_numbers_passed_to_redis_call_match_redis(srv: ServerProcess,
                                                  redis_ref: ServerProcess) -> None:
    """Numbers as redis.call arguments: 3.5 -> "3.5", 1e20 -> "1e+20", 2^53 in full."""
    got = assert_same(srv, redis_ref, [
        *numbers_in_calls(), ev("return redis.call('incrby', 'n', 2.7)"),
        ev("return redis.call('xadd', 'st', 1.5, 'f', 1)"),
        ev("return redis.call('xadd', 'st', '5-1', 'f', 2.5)"),
        ev("return redis.call('xrange', 'st', '-', '+')"),
        ev("return redis.call('set', 'k', 'v', 'ex', 100.9)"),
        ev("return redis.call('set', 'k', 'v', 'ex', 100)"), ("TTL", "k")])
    assert got[1] == b"$3\r\n3.5\r\n" and got[3] == b"$5\r\n1e+20\r\n"
    assert got[7] == b"$16\r\n9007199254740992\r\n"


NUMBER_ARGS = ("Redis 7.2+ passes a number to redis.call as an integer when it is one, else "
               "in the shortest form (fpconv_dtoa): ours uses %.17g as 7.0 did")


@pytest.mark.parametrize(("number", "expected"), [
    pytest.param("0.1", b"0.1"),
    pytest.param("1/3", b"0.3333333333333333"),
    pytest.param("99999999999999999", b"100000000000000000"),
    pytest.param("123456789012345678", b"123456789012345680"),
    ("-0.0", b"0"), ("2^53", b"9007199254740992"), ("1e15", b"1000000000000000"),
], ids=["0.1", "1/3", "1e17", "big", "-0", "2^53", "1e15"])
def test_numbers_passed_to_redis_call_as_redis_8(srv: ServerProcess, number: str,
                                                 expected: bytes) -> None:
    """What Redis 8's luaArgsToRedisArgv writes for a number (7.0 wrote %.17g)."""
    reply = one(srv, f"redis.call('set', 'k', {number}) return redis.call('get', 'k')")
    assert reply == b"$%d\r\n%s\r\n" % (len(expected), expected)


# == 6. Side effects =============================================================================
def sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def test_script_cache_matches_redis(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    """SCRIPT LOAD then EVALSHA (also in upper case), SCRIPT EXISTS, SCRIPT FLUSH then NOSCRIPT,
    SCRIPT KILL -> NOTBUSY, SCRIPT FLUSH's bad arguments, EVAL caching its script."""
    sha = sha1("return 1")
    writer = "#!lua\nreturn redis.call('set','k','v')"
    reader = "#!lua flags=no-writes\nreturn redis.call('get', 'k')"
    got = assert_same(srv, redis_ref, [
        ("SCRIPT", "LOAD", "return 1"), ("EVALSHA", sha, "0"), ("EVALSHA", sha.upper(), "0"),
        ("EVALSHA_RO", sha, "0"), ("SCRIPT", "EXISTS", sha, sha.upper(), "a", UNKNOWN_SHA),
        ("SCRIPT", "EXISTS"), ("SCRIPT", "LOAD", "return 1"), ("SCRIPT", "FLUSH"),
        ("EVALSHA", sha, "0"), ("SCRIPT", "EXISTS", sha), ("EVAL", "return 1", "0"),
        ("SCRIPT", "EXISTS", sha), ("EVALSHA", sha, "0"), ("SCRIPT", "FLUSH", "SYNC"),
        ("SCRIPT", "FLUSH", "async"), ("SCRIPT", "FLUSH", "bad"),
        ("SCRIPT", "FLUSH", "SYNC", "ASYNC"), ("SCRIPT", "KILL"), ("SCRIPT", "KILL", "x"),
        ("SCRIPT", "LOAD"), ("SCRIPT", "LOAD", "a", "b"), ("SCRIPT", "NOSUCH"), ("SCRIPT",),
        ("SCRIPT", "LOAD", ""), ("EVALSHA", sha1(""), "0"),
        ("SCRIPT", "LOAD", writer), ("EVALSHA_RO", sha1(writer), "0"),
        ("EVALSHA", sha1(writer), "0"), ("SCRIPT", "LOAD", reader),
        ("EVALSHA_RO", sha1(reader), "0"), ("EVALSHA", sha1(reader), "0"),
        ("SCRIPT", "LOAD", "#!lua flags=bogus\nreturn 1"), ("SCRIPT", "LOAD", "return 1 +"),
        ("SCRIPT", "EXISTS", sha1("return 1 +"))])
    assert got[0] == b"$40\r\n%s\r\n" % sha.encode() and got[2] == b":1\r\n"
    assert got[8] == b"-NOSCRIPT No matching script. Please use EVAL.\r\n"
    assert got[17] == b"-NOTBUSY No scripts in execution right now.\r\n"


@pytest.mark.xfail(reason="SCRIPT DEBUG is not implemented: Redis replies +OK to SCRIPT DEBUG "
                   "NO and lists DEBUG in SCRIPT HELP and COMMAND INFO script", strict=True)
def test_script_debug_matches_redis(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    assert_same(srv, redis_ref, [("SCRIPT", "DEBUG", "no"), ("SCRIPT", "HELP")])


@PROTOCOLS
def test_scripts_in_transactions_match_redis(srv: ServerProcess, redis_ref: ServerProcess,
                                             protocol: int) -> None:
    """EVAL and EVALSHA inside MULTI/EXEC: queued, then run (errors in EXEC's array)."""
    sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
    assert_same(srv, redis_ref, [
        ("MULTI",), ev("return redis.call('set','a','1')"), ev("return redis.call('incr','a')"),
        ev("return redis.call('nosuch')"), ev("return 1 +"), ev("return redis.pcall('incr','x')"),
        ("EXEC",), ("GET", "a"),
        ("MULTI",), ("EVALSHA", UNKNOWN_SHA, "0"), ("EXEC",),
        ("MULTI",), ("EVAL", "return 1"), ("EXEC",),
        ("MULTI",), ("SCRIPT", "LOAD", "return 1"), ("EVALSHA", sha, "0"), ("EXEC",),
        ("MULTI",), ("EVAL_RO", "return redis.call('set','a','2')", "0"), ("EXEC",)], protocol)


def test_select_in_a_script_matches_redis(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    """SELECT inside a script changes the script's database, never the caller's."""
    got = assert_same(srv, redis_ref, [
        ("SET", "k", "db0"),
        ev("redis.call('select', 1) redis.call('set', 'k', 'db1') return redis.call('get', 'k')"),
        ("GET", "k"), ("SELECT", "1"), ("GET", "k"), ev("return redis.call('get', 'k')"),
        ev("redis.call('select', 0) return redis.call('get', 'k')"), ("GET", "k"),
        ("SELECT", "0"), ev("return redis.call('select', 100)"),
        ev("return redis.pcall('select', 'x')")])
    assert got[2] == b"$3\r\ndb0\r\n" and got[7] == b"$3\r\ndb1\r\n"


def watch_then_script(proc: ServerProcess, script: str) -> list[bytes]:
    """WATCH k on one connection, `script` run by another, then MULTI / GET k / EXEC."""
    watcher, other = Conn(proc), Conn(proc)
    try:
        watcher.call("FLUSHALL")
        watcher.call("SET", "k", "1")
        out = [watcher.call("WATCH", "k"), other.call(*ev(script, "k"))]
        out += [watcher.call("MULTI"), watcher.call("GET", "k"), watcher.call("EXEC")]
        return out
    finally:
        watcher.close()
        other.close()


@pytest.mark.parametrize(("script", "aborts"), [
    ("return redis.call('set', KEYS[1], '2')", True), ("return redis.call('incr', KEYS[1])", True),
    ("return redis.call('del', KEYS[1])", True), ("return redis.call('get', KEYS[1])", False),
    ("return redis.pcall('xadd', KEYS[1], '*', 'f', 'v')", False),
    ("return redis.call('set', 'other', 1)", False),
    ("redis.call('set', KEYS[1], '3') return redis.call('set', KEYS[1], '1')", True),
])
def test_watch_and_scripts_match_redis(srv: ServerProcess, redis_ref: ServerProcess,
                                       script: str, aborts: bool) -> None:
    """A script that changes a watched key makes EXEC abort (nil); a read does not."""
    mine = watch_then_script(srv, script)
    assert mine == watch_then_script(redis_ref, script)
    assert (mine[-1] == b"*-1\r\n") is aborts


def test_info_counts_cached_scripts(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    """INFO memory's number_of_cached_scripts follows SCRIPT LOAD, EVAL and SCRIPT FLUSH."""
    for proc in (srv, redis_ref):
        client = redis.Redis(host=proc.host, port=proc.port)
        try:
            client.script_flush()
            counts = [client.info("memory")["number_of_cached_scripts"]]
            client.script_load("return 1")
            client.script_load("return 2")
            client.script_load("return 1")
            counts.append(client.info("memory")["number_of_cached_scripts"])
            client.eval("return 3", 0)
            client.eval("return 3", 0)
            with pytest.raises(redis.ResponseError):
                client.eval("return 4 +", 0)
            counts.append(client.info("memory")["number_of_cached_scripts"])
            client.script_flush()
            counts.append(client.info("memory")["number_of_cached_scripts"])
            assert counts == [0, 2, 3, 0], proc.kind
            assert "used_memory_scripts_eval" in client.info("memory")
        finally:
            client.close()


def test_command_getkeys_matches_redis(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    """EVAL's keys are its numkeys arguments after the script; none when numkeys is too big."""
    got = assert_same(srv, redis_ref, [
        ("COMMAND", "GETKEYS", "EVAL", "return 1", "2", "a", "b", "x"),
        ("COMMAND", "GETKEYS", "EVAL", "return 1", "5", "a"),
        ("COMMAND", "GETKEYS", "EVAL", "return 1", "0"),
        ("COMMAND", "GETKEYS", "EVAL", "return 1", "0", "x"),
        ("COMMAND", "GETKEYS", "EVALSHA", "abc", "1", "k"),
        ("COMMAND", "GETKEYS", "EVAL_RO", "return 1", "1", "k", "v"),
        ("COMMAND", "GETKEYS", "EVALSHA_RO", "abc", "2", "k", "l"),
        ("COMMAND", "GETKEYS", "EVAL", "return 1", "-1", "a"),
        ("COMMAND", "GETKEYS", "EVAL", "return 1", "x", "a"),
        ("COMMAND", "GETKEYSANDFLAGS", "EVAL", "return 1", "2", "a", "b", "x"),
        ("COMMAND", "GETKEYSANDFLAGS", "EVAL_RO", "return 1", "1", "a"),
        ("COMMAND", "INFO", "eval", "evalsha", "eval_ro", "evalsha_ro")])
    assert got[0] == b"*2\r\n$1\r\na\r\n$1\r\nb\r\n" and got[1] == b"*0\r\n"


def stat_lines(conn: Conn, section: str, *names: str) -> list[str]:
    text = conn.call("INFO", section).decode()
    return sorted(line for line in text.split("\r\n") if any(name in line for name in names))


@pytest.mark.parametrize("script", [
    "redis.pcall('incr', 's') return 1", "local ok = pcall(redis.call, 'nosuch') return 1",
    "return redis.call('get', 's')", "return redis.pcall('incr', 's')",
    "return redis.error_reply('MY e')", "return {err='OWN e'}", "return redis.call('incr', 's')",
    "error('x')", "return redis.call('nosuch')",
])
def test_error_statistics_match_redis(srv: ServerProcess, redis_ref: ServerProcess,
                                      script: str) -> None:
    """INFO errorstats and the failed calls of eval and of the commands a script runs."""
    stats = []
    for proc in (srv, redis_ref):
        conn = Conn(proc)
        try:
            conn.call("FLUSHALL")
            conn.call("SET", "s", "x")
            conn.call("CONFIG", "RESETSTAT")
            conn.call(*ev(script))
            calls = [re.sub(r"usec=[^,]*,usec_per_call=[^,]*,", "", line)
                     for line in stat_lines(conn, "commandstats", "cmdstat_eval", "cmdstat_incr")]
            stats.append((stat_lines(conn, "errorstats", "errorstat_"), calls,
                          stat_lines(conn, "stats", "total_error_replies")))
        finally:
            conn.close()
    assert stats[0] == stats[1]


def without_time(line: bytes) -> str:
    """A MONITOR line with its time and client address left out: "[<db> client] ..." or
    "[<db> lua] ..." (a command run by a script)."""
    match = re.fullmatch(rb"[0-9.]+ \[(\d+) (\S+)\] (.*)", line, re.DOTALL)
    assert match, line
    who = "lua" if match.group(2) == b"lua" else "client"
    return f"[{match.group(1).decode()} {who}] {match.group(3).decode()}"


def monitored(proc: ServerProcess, commands: Sequence[Command]) -> list[str]:
    """The MONITOR lines the commands produce (without_time)."""
    mon, conn = ParsedConn(proc), Conn(proc)
    try:
        assert mon.call("MONITOR") == b"OK"
        conn.call("FLUSHALL")
        for command in commands:
            conn.call(*command)
        conn.call("PING", "monitor-end")
        lines: list[str] = []
        while not lines or "monitor-end" not in lines[-1]:
            line = mon.read()
            assert isinstance(line, bytes)
            lines.append(without_time(line))
        return lines[1:-1]  # (without the FLUSHALL and the PING)
    finally:
        mon.close()
        conn.close()


def test_monitor_shows_the_script_then_its_commands(srv: ServerProcess,
                                                    redis_ref: ServerProcess) -> None:
    """MONITOR shows EVAL's line, then one "[db lua]" line per command the script runs."""
    commands: list[Command] = [
        ("SELECT", "2"),
        ev("redis.call('set', KEYS[1], ARGV[1]) redis.call('select', 3) "
           "return redis.call('get', KEYS[1])", "k", args=["v"]),
        ev("return redis.call('nosuch')"), ev("return redis.call('ping', 1.5)"),
        ev("return redis.pcall('incr', 'k')"), ("SELECT", "0"),
    ]
    mine = monitored(srv, commands)
    assert mine == monitored(redis_ref, commands)
    assert mine[2:5] == ['[2 lua] "set" "k" "v"', '[3 lua] "select" "3"', '[3 lua] "get" "k"']


def test_monitor_shows_refused_scripts(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    commands: list[Command] = [("EVALSHA", UNKNOWN_SHA, "0"), ev("return 1 +"),
                               ("EVAL", "return 1", "-1")]
    assert monitored(srv, commands) == monitored(redis_ref, commands)


def test_keyspace_events_of_scripts_match_redis(srv: ServerProcess,
                                                redis_ref: ServerProcess) -> None:
    """A script's XADD, SET and DEL send the same notifications as the commands would."""
    commands: list[tuple[object, ...]] = [
        ev("return redis.call('xadd', KEYS[1], '1-1', 'f', 'v')", "st"),
        ev("redis.call('set', 'a', 1) redis.call('xtrim', 'st', 'maxlen', 0) "
           "return redis.call('del', 'a')"),
        ev("return redis.call('xgroup', 'create', 'st', 'g', '$')"),
        ev("return redis.call('get', 'a')"),
    ]
    mine = events_of(srv, "KEA", commands)
    assert mine == events_of(redis_ref, "KEA", commands)
    assert (b"__keyevent@0__:xadd", b"st") in mine


# -- ACL ------------------------------------------------------------------------------------------
@pytest.fixture
def acl_users(srv: ServerProcess, redis_ref: ServerProcess) -> Iterator[list[ServerProcess]]:
    """Users `nosetter` (everything but SET) and `scoped` (@scripting and GET / SET on ~a:*) on
    both servers, removed afterwards."""
    procs = [srv, redis_ref]
    for proc in procs:
        admin = Conn(proc)
        admin.call("ACL", "LOG", "RESET")
        assert admin.call("ACL", "SETUSER", "nosetter", "on", "nopass", "~*", "+@all",
                          "-set") == b"+OK\r\n"
        assert admin.call("ACL", "SETUSER", "scoped", "on", "nopass", "~a:*", "+@scripting",
                          "+get", "+set") == b"+OK\r\n"
        admin.close()
    yield procs
    for proc in procs:
        admin = Conn(proc)
        admin.call("ACL", "DELUSER", "nosetter", "scoped")
        admin.call("ACL", "LOG", "RESET")
        admin.close()


def as_user(proc: ServerProcess, user: str, commands: Sequence[Command]) -> list[bytes]:
    conn = Conn(proc)
    try:
        assert conn.call("AUTH", user, "x") == b"+OK\r\n"
        return [conn.call(*command) for command in commands]
    finally:
        conn.close()


def acl_log(proc: ServerProcess) -> list[dict[bytes, Any]]:
    conn = ParsedConn(proc)
    try:
        entries = conn.call("ACL", "LOG")
        assert isinstance(entries, list)
        return [dict(zip(entry[::2], entry[1::2], strict=True)) for entry in entries]
    finally:
        conn.close()


def test_acl_refuses_commands_inside_scripts(acl_users: list[ServerProcess]) -> None:
    """A user without +set gets "ACL failure in script" from redis.call('set') (Redis 8's text;
    7.0's is checked by its start) and an ACL LOG entry with context "lua"."""
    commands: list[Command] = [ev("return redis.call('set','k','v')"),
                               ev("return redis.pcall('set','k','v')"),
                               ev("return redis.acl_check_cmd('set','k','v')"),
                               ev("return redis.acl_check_cmd('get','k')"),
                               ev("return redis.call('get','k')")]
    ours, theirs = (as_user(proc, "nosetter", commands) for proc in acl_users)
    sha = sha_of(ours[0])
    denied = "ERR ACL failure in script: User nosetter has no permissions to run the 'set' command"
    assert ours[0] == f"-{denied} script: {sha}, on @user_script:1.\r\n".encode()
    assert ours[1] == f"-{denied}\r\n".encode()
    assert theirs[0].startswith(b"-ERR ") and theirs[1].startswith(b"-ERR ")
    assert ours[2:] == theirs[2:] == [b"$-1\r\n", b":1\r\n", b"$-1\r\n"]
    for proc in acl_users:
        entry = acl_log(proc)[0]
        assert (entry[b"reason"], entry[b"context"], entry[b"object"], entry[b"username"]) == (
            b"command", b"lua", b"set", b"nosetter"), proc.kind


def test_acl_checks_the_keys_of_eval(acl_users: list[ServerProcess]) -> None:
    """A user with ~a:* calling EVAL with KEYS b:1 is refused by EVAL's own key check; a key
    reached inside the script is refused by the script's check (context "lua")."""
    commands: list[Command] = [ev("return 1", "b:1"), ev("return 1", "a:1"),
                               ev("return redis.call('get','b:1')", "a:1"),
                               ev("return redis.pcall('get','b:1')", "a:1"),
                               ev("return redis.call('get','a:1')")]
    ours, theirs = (as_user(proc, "scoped", commands) for proc in acl_users)
    assert ours[0] == b"-NOPERM No permissions to access a key\r\n"
    assert theirs[0].startswith(b"-NOPERM ")
    assert ours[1] == theirs[1] == b":1\r\n" and ours[4] == theirs[4] == b"$-1\r\n"
    denied = "ERR ACL failure in script: User scoped has no permissions to access the 'b:1' key"
    assert ours[2] == f"-{denied} script: {sha_of(ours[2])}, on @user_script:1.\r\n".encode()
    assert ours[3] == f"-{denied}\r\n".encode()
    assert theirs[2].startswith(b"-ERR ") and theirs[3].startswith(b"-ERR ")
    for proc in acl_users:
        reasons = [(e[b"reason"], e[b"context"], e[b"object"]) for e in acl_log(proc)]
        assert reasons[-1] == (b"key", b"toplevel", b"b:1"), proc.kind
        assert (b"key", b"lua", b"b:1") in reasons, proc.kind


# -- the AOF --------------------------------------------------------------------------------------
def aof_commands(workdir: str) -> list[list[bytes]]:
    """The commands of the AOF's incremental file, in order."""
    path = os.path.join(workdir, "appendonlydir", "appendonly.aof.1.incr.aof")
    with open(path, "rb") as fh:
        reader = hiredis.Reader()
        reader.feed(fh.read())
    commands = []
    while (command := reader.gets()) is not False:
        commands.append([command[0].upper(), *command[1:]])
    return commands


def test_aof_holds_the_effects_of_scripts(tmp_path: Path) -> None:
    """Two writes are written as MULTI ... EXEC, one write alone, a read-only script not at
    all (nor a script whose writes all failed); the AOF replays after a restart."""
    workdir = str(tmp_path)
    with started(workdir, "--appendonly", "yes", "--appendfsync", "always") as proc:
        client = redis.Redis(host=proc.host, port=proc.port)
        client.eval("redis.call('set','a','1') redis.call('xadd','s','5-1','f','v') return 1", 0)
        client.eval("return redis.call('incr','n')", 0)
        client.eval("return redis.call('get','a')", 0)
        client.execute_command("EVAL_RO", "return redis.call('xlen','s')", 0)
        client.eval("redis.pcall('incr','s') return 1", 0)
        client.eval("redis.call('select', 1) return redis.call('set', 'db1', 'x')", 0)
        client.close()
        written = aof_commands(workdir)
    assert written == [
        [b"SELECT", b"0"], [b"MULTI"], [b"SET", b"a", b"1"], [b"XADD", b"s", b"5-1", b"f", b"v"],
        [b"EXEC"], [b"INCR", b"n"], [b"SELECT", b"1"], [b"SET", b"db1", b"x"],
    ]
    with started(workdir, "--appendonly", "yes") as proc:
        client = redis.Redis(host=proc.host, port=proc.port)
        assert client.get("a") == b"1" and client.get("n") == b"1" and client.xlen("s") == 1
        assert client.execute_command("SELECT", 1) and client.get("db1") == b"x"
        client.close()


# -- redis-py -------------------------------------------------------------------------------------
@pytest.fixture
def client(srv: ServerProcess) -> Iterator[redis.Redis]:
    conn = redis.Redis(host=srv.host, port=srv.port)
    conn.flushall()
    yield conn
    conn.close()


def test_redis_py_lock(client: redis.Redis) -> None:
    """redis-py's Lock (Lua scripts for release, extend and reacquire) works."""
    lock = client.lock("resource", timeout=10)
    assert lock.acquire(blocking=False)
    assert 9000 < client.pttl("resource") <= 10000
    assert not client.lock("resource", timeout=10).acquire(blocking=False)
    assert lock.extend(5) and 14000 < client.pttl("resource") <= 15000
    assert lock.extend(3, replace_ttl=True) and client.pttl("resource") <= 3000
    assert lock.reacquire() and 9000 < client.pttl("resource") <= 10000
    assert lock.owned() and lock.locked()
    lock.release()
    assert not client.exists("resource")
    with pytest.raises(redis.exceptions.LockError):
        lock.release()
    with pytest.raises(redis.exceptions.LockError):
        lock.extend(1)
    with client.lock("other", timeout=5, blocking_timeout=1):
        assert client.exists("other")
    assert not client.exists("other")


def test_redis_py_register_script(client: redis.Redis) -> None:
    """register_script: EVALSHA, and EVAL again after SCRIPT FLUSH (NOSCRIPT)."""
    script = client.register_script(
        "local n = redis.call('incrby', KEYS[1], ARGV[1]) return {n, KEYS[1], ARGV[2]}")
    assert script(keys=["counter"], args=[5, "x"]) == [5, b"counter", b"x"]
    assert client.script_exists(script.sha) == [True]
    client.script_flush()
    assert script(keys=["counter"], args=[2, "y"]) == [7, b"counter", b"y"]
    with client.pipeline() as pipe:
        script(keys=["counter"], args=[1, "z"], client=pipe)
        pipe.get("counter")
        assert pipe.execute() == [[8, b"counter", b"z"], b"8"]
