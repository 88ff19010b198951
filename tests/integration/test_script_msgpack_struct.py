"""The cmsgpack and struct libraries of scripts, against Debian's redis-server 7.0.15.

Scripts run on our server and on redis-server, and their replies must be the same bytes: the
strings cmsgpack.pack and struct.pack make (every msgpack type and size boundary, floats that
fit a float 32 or not, nesting past 16 levels, tables holding themselves, map order), what
unpack gives back (shown by a Lua function that writes numbers with %.17g, strings with %q and
tables in their iteration order with their length, so that table layout is compared too),
offsets of unpack_one / unpack_limit, the Lua stack limits, and every error text. The two
libraries are the same in Redis 7.0 and 8.4.

A case showing a difference from Redis is marked xfail(strict=True) with the difference as
its reason.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pytest

from tests.helpers import TARGET, ServerProcess
from tests.integration.server_fixtures import module_server
from tests.resp import Conn

srv = module_server()

IS_OURS = TARGET != "redis"

# Lua helpers put before a script: bin('0a ff') makes bytes from hex, hex(s) the other way,
# show(v) writes any value deterministically (a table: its pairs in iteration order, then #).
HELPERS = r"""
local function bin(h) return (h:gsub('%s', ''):gsub('%x%x', function(x)
  return string.char(tonumber(x, 16)) end)) end
local function hex(s) return (s:gsub('.', function(c)
  return string.format('%02x', c:byte()) end)) end
local function show(v, depth)
  depth = depth or 0
  local kind = type(v)
  if kind == 'number' then return string.format('%.17g', v) end
  if kind == 'string' then return string.format('%q', v) end
  if kind ~= 'table' then return tostring(v) end
  if depth > 40 then return '{...}' end
  local parts = {}
  for k, x in pairs(v) do parts[#parts + 1] = show(k, depth + 1) .. '=' .. show(x, depth + 1) end
  return '{' .. table.concat(parts, ',') .. '}#' .. #v
end
local function all(...) local r = {n = select('#', ...), ...}
  local parts = {} for i = 1, r.n do parts[i] = show(r[i]) end
  return r.n .. ':' .. table.concat(parts, ' ') end
"""


def known(value: Any, reason: str) -> Any:
    """A case whose reply differs from Redis's: a strict xfail on our server."""
    return pytest.param(value, marks=pytest.mark.xfail(IS_OURS, reason=reason, strict=True))


def replies(proc: ServerProcess, scripts: Sequence[str]) -> list[bytes]:
    """The exact bytes of `EVAL HELPERS+script 0` for each script, on one connection after
    SCRIPT FLUSH."""
    conn = Conn(proc)
    try:
        conn.call("SCRIPT", "FLUSH")
        return [conn.call("EVAL", HELPERS + script, "0") for script in scripts]
    finally:
        conn.close()


def assert_same(ours: ServerProcess, ref: ServerProcess, *scripts: str) -> list[bytes]:
    mine = replies(ours, scripts)
    theirs = replies(ref, scripts)
    for script, got, want in zip(scripts, mine, theirs, strict=True):
        assert got == want, script
    return mine


# == cmsgpack.pack ============================================================================
NUMBERS = [
    "0", "1", "127", "128", "255", "256", "65535", "65536", "2^31-1", "2^31", "2^32-1", "2^32",
    "2^53", "2^53+1", "2^63-1024", "2^63", "2^64", "-1", "-32", "-33", "-128", "-129",
    "-32768", "-32769", "-2^31", "-2^31-1", "-2^32", "-2^53", "-2^63", "-2^63-4096", "-2^64",
    "0.1", "0.5", "-2.5", "1.5", "1/3", "1e300", "-1e300", "1e-300", "1e38", "1e39",
    "3.4028234663852886e38", "3.4028235677973366e38", "2^-149", "2^-150", "1.17549435e-38",
    "-0.0", "0/0", "-(0/0)", "1/0", "-1/0", "math.pi", "123456.75", "16777217", "2^24+0.5",
]
STRINGS = ["''", "'a'", "'a\\0b'", "'\\255\\254'", *[f"('x'):rep({n})" for n in (
    31, 32, 255, 256, 65535, 65536, 100000)]]
TABLES = [
    "{}", "{1, 2, 3}", "{1, nil, 3}", "{nil, 2}", "{[1] = 1, [2] = 2, [4] = 4}", "{a = 1}",
    "{[0] = 1}", "{[1.5] = 1}", "{[-1] = 1}", "{[2^31] = 1}", "{[2^31 - 1] = 1}",
    "{[1] = 'a', [2] = 'b', x = 'c'}", "{1, 2, x = 3}", "{true, false}", "{{}, {{}}}",
    "{[true] = 1}", "{[{}] = 1}", "{a = {b = {c = {}}}}",
    "{a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7}",
    "{function() end, coroutine.create(function() end), cjson.null, 1}",
    "{[1] = 1, [2] = 2, [3] = 3, [10] = 10}", "{[2] = 2}", "{[1] = 1, [3] = 3}",
    "(function() local t = {} for i = 1, 15 do t[i] = i end return t end)()",
    "(function() local t = {} for i = 1, 16 do t[i] = i end return t end)()",
    "(function() local t = {} for i = 1, 65535 do t[i] = i end return t end)()",
    "(function() local t = {} for i = 1, 65536 do t[i] = i % 7 end return t end)()",
    "(function() local t = {} for i = 1, 15 do t['k' .. i] = i end return t end)()",
    "(function() local t = {} for i = 1, 16 do t['k' .. i] = i end return t end)()",
    "(function() local t = {} for i = 1, 65536 do t['k' .. i] = i end return t end)()",
    "(function() local t = {} for i = 1, 100 do t[i * 1.5] = i end return t end)()",
    "(function() local t = {1, 2, 3} t[2] = nil return t end)()",
    "(function() local t = {} for i = 1, 10 do t[i] = i end for i = 1, 9 do t[i] = nil end "
    "return t end)()",
]


def nested(depth: int) -> str:
    """A table `depth` levels deep ({{...{1}...}})."""
    return f"(function() local t = {{1}} for i = 2, {depth} do t = {{t}} end return t end)()"


NESTING = [nested(depth) for depth in (1, 15, 16, 17, 18, 40)]
CIRCULAR = [
    "(function() local a = {x = nil, y = 5} local b = {x = a} a.x = b return a end)()",
    "(function() local a = {} a[1] = a return a end)()",
    "(function() local a = {} a.me = a a.n = 1 return a end)()",
    "(function() local a = {} a[a] = a return a end)()",
]
PACK_VALUES = [*NUMBERS, *STRINGS, *TABLES, *NESTING, *CIRCULAR, "nil", "true", "false",
               "function() end", "coroutine.create(function() end)", "cjson.null", "redis.call",
               "KEYS", "ARGV"]


@pytest.mark.parametrize("value", PACK_VALUES)
def test_pack_matches_redis(srv: ServerProcess, redis_ref: ServerProcess, value: str) -> None:
    """The exact bytes cmsgpack.pack writes, and what unpacking them gives back."""
    assert_same(srv, redis_ref, f"return cmsgpack.pack({value})",
                f"return show(cmsgpack.unpack(cmsgpack.pack({value})))")


PACK_CALLS = [
    "return cmsgpack.pack(1, 'a', {}, nil, true)", "return cmsgpack.pack(nil, nil)",
    "return cmsgpack.pack(unpack({1, 2, 3}))",
    "local t = {} for i = 1, 4000 do t[i] = i end return #cmsgpack.pack(unpack(t))",
    "local t = {} for i = 1, 4001 do t[i] = i end return cmsgpack.pack(unpack(t))",
    "return cmsgpack.pack()",
    known("return {pcall(cmsgpack.pack)}", "a library function called by pcall itself: Redis "
          "names it '?' in a bad-argument error, ours by its name"),
    known("local ok, e = pcall(function() return cmsgpack.pack() end) return {ok, e}",
          "an error of a library function caught by pcall: Redis's message starts with the "
          "script's position ('user_script:1: '), ours has none (as for bit and cjson)"),
    "return all(cmsgpack.unpack(cmsgpack.pack(1, 'a', {}, nil, true, 0.25)))",
    "local t = {} for i = 1, 1000 do t[i] = {i, tostring(i), i + 0.5, {x = i}} end "
    "local s = cmsgpack.pack(t) return {#s, redis.sha1hex(s), "
    "redis.sha1hex(cmsgpack.pack(cmsgpack.unpack(s)))}",
]


@pytest.mark.parametrize("script", PACK_CALLS)
def test_pack_calls_match_redis(srv: ServerProcess, redis_ref: ServerProcess,
                                script: str) -> None:
    """Several values at once, no value, too many (a C function's stack: 8000 slots)."""
    assert_same(srv, redis_ref, script)


# == cmsgpack.unpack ==========================================================================
UNPACK_INPUTS = [
    # every type byte the library reads
    "00", "7f", "e0", "ff", "cc80", "ccff", "cd0100", "cdffff", "ce00010000", "ceffffffff",
    "cf0000000100000000", "cf0020000000000001", "cf7fffffffffffffff", "cf8000000000000000",
    "cfffffffffffffffff", "d080", "d0ff", "d18000", "d1ff00", "d2ffffffff", "d280000000",
    "d3ffffffff00000000", "d38000000000000000", "d30020000000000001",
    "ca3f800000", "ca3fc00000", "ca7f800000", "caff800000", "ca7fc00000", "ca00000001",
    "cb3fb999999999999a", "cb7ff8000000000000", "cbfff8000000000000", "cb8000000000000000",
    "c0", "c2", "c3", "a0", "a3616263", "bf" + "61" * 31, "d900", "d903616263",
    "da0003616263", "db00000003616263", "da0000", "db00000000",
    "90", "93010203", "9f" + "01" * 15, "dc0003010203", "dc0000", "dd00000003010203",
    "80", "82a16101a16202", "de0001a16101", "df00000001a16101", "8f" + "".join(
        f"a2{ord('a') + i:02x}{ord('a') + i:02x}{i:02x}" for i in range(15)),
    # nil and NaN in tables, repeated keys, keys Python would merge
    "93c001c0", "9401c00304", "94c0c0c003", "9301c0c0", "81a161c0", "82a16101a161c0",
    "82a16101a16102", "82c30101c2", "82ca3f800000a17801a179", "820001cb000000000000000002",
    "83a16101a162c0a16103", "81900a", "8191010a", "829101a1619101a162",
    # several top-level values
    "010203", "a161a162c0c0", "9101810102", "c0c0c0",
    # errors: unknown type bytes, missing bytes
    "c1", "c40100", "c5000100", "c6000000010a", "c7010100", "c800010100", "c9000000010100",
    "d40100", "d5010000", "d601" + "00" * 4, "d701" + "00" * 8, "d801" + "00" * 16,
    "cc", "cd00", "ce000000", "cf00000000000000", "d0", "d1ff", "d2ffffff", "d3ff",
    "ca3f80", "cb3fb9", "a361", "bf", "d9", "d90361", "da00", "da000361", "db000000",
    "db0000000361", "9301", "93", "dc00", "dc000101", "dd000000", "dd0000000201",
    "82a16101", "81a161", "81", "de00", "de0002a16101", "df00000001", "0102c1", "01cc",
    "81c0c1", "81c0", "81c001", "81cb7ff800000000000001", "9181c001", "81c0cc",
    # a bad byte inside a table, after a nil key
    "8201c1", "82c001c1",
]


@pytest.mark.parametrize("data", UNPACK_INPUTS)
def test_unpack_matches_redis(srv: ServerProcess, redis_ref: ServerProcess, data: str) -> None:
    """unpack, unpack_one and unpack_limit of one input: values (numbers with %.17g, tables
    in iteration order, with #), offsets, errors."""
    assert_same(srv, redis_ref,
                f"return all(cmsgpack.unpack(bin('{data}')))",
                f"return all(cmsgpack.unpack_one(bin('{data}')))",
                f"return all(cmsgpack.unpack_limit(bin('{data}'), 2))")


NIL_INDEX = ("a nil (or NaN) table index in unpack, caught by pcall: ours 'ERR table index is "
             "nil', Redis 'table index is nil'")


@pytest.mark.parametrize("data", [
    known(data, NIL_INDEX) if data in ("81c001", "81cb7ff800000000000001", "9181c001",
                                       "82c001c1") else data
    for data in UNPACK_INPUTS])
def test_unpack_under_pcall_matches_redis(srv: ServerProcess, redis_ref: ServerProcess,
                                          data: str) -> None:
    """pcall(cmsgpack.unpack, s): the error message without the script's position."""
    assert_same(srv, redis_ref, f"return {{pcall(cmsgpack.unpack, bin('{data}'))}}")


UNPACK_CALLS = [
    "return all(cmsgpack.unpack(''))", "return all(cmsgpack.unpack_one(''))",
    "return all(cmsgpack.unpack_one('', 0))", "return all(cmsgpack.unpack_limit('', 3))",
    *[f"return all(cmsgpack.unpack_one(bin('01a16202c3'), {offset}))"
      for offset in ("0", "1", "2", "3", "4", "5", "6", "-1", "1.9", "'2'", "' 3 '", "'0x1'",
                     "nil", "2^31", "2^32 + 1", "-2^32 - 1", "0/0", "'x'", "{}", "true")],
    *[f"return all(cmsgpack.unpack_limit(bin('01a16202c3'), {limit}))"
      for limit in ("0", "1", "2", "3", "4", "10", "-1", "'2'", "1.5", "nil", "'x'", "{}")],
    *[f"return all(cmsgpack.unpack_limit(bin('01a16202c3'), {limit}, {offset}))"
      for limit, offset in (("0", "0"), ("0", "1"), ("0", "5"), ("1", "0"), ("1", "1"),
                            ("2", "3"), ("3", "4"), ("1", "6"), ("-1", "1"), ("1", "-1"),
                            ("0", "-3"), ("2", "'x'"), ("2", "nil"))],
    "return all(cmsgpack.unpack_limit(bin('01a16202c3')))",
    "return all(cmsgpack.unpack(123))", "return all(cmsgpack.unpack(1.5))",
    "return all(cmsgpack.unpack_one(-7, 0))", "return all(cmsgpack.unpack())",
    "return all(cmsgpack.unpack(nil))", "return all(cmsgpack.unpack({}))",
    "return all(cmsgpack.unpack(true))", "return all(cmsgpack.unpack_one())",
    "return all(cmsgpack.unpack_one({}, 'x'))", "return all(cmsgpack.unpack_limit({}, 1))",
    "return all(cmsgpack.unpack_limit())", "return all(cmsgpack.unpack(bin('01'), 'extra'))",
    "return all(cmsgpack.unpack(function() end))", "return all(cmsgpack.unpack(cjson.null))",
    # the Lua stack: values at once, nesting
    "return select('#', cmsgpack.unpack(('\\0'):rep(7999)))",
    "return select('#', cmsgpack.unpack(('\\0'):rep(8000)))",
    "return select('#', cmsgpack.unpack(('\\0'):rep(7998), 1))",
    "return select('#', cmsgpack.unpack(('\\0'):rep(7999), 1))",
    "return select('#', cmsgpack.unpack_limit(('\\0'):rep(9000), 7999))",
    "return select('#', cmsgpack.unpack_limit(('\\0'):rep(9000), 8000))",
    "return type(cmsgpack.unpack(('\\145'):rep(3999) .. '\\0'))",
    "return type(cmsgpack.unpack(('\\145'):rep(4000) .. '\\0'))",
    "return type(cmsgpack.unpack(('\\145'):rep(4000)))",
    "return type(cmsgpack.unpack(('\\129\\0'):rep(3999) .. '\\0'))",
    "return type(cmsgpack.unpack(('\\129\\0'):rep(4000) .. '\\0'))",
    "return type(cmsgpack.unpack(('\\129\\0'):rep(8000) .. '\\0'))",
    "return type(cmsgpack.unpack(('\\129\\145'):rep(2666) .. '\\0'))",
    "return type(cmsgpack.unpack(('\\129\\145'):rep(2667) .. '\\0'))",
    "return select('#', cmsgpack.unpack(('\\0'):rep(7990) .. ('\\145'):rep(6) .. '\\0'))",
    "return select('#', cmsgpack.unpack(('\\0'):rep(7990) .. ('\\145'):rep(5) .. '\\0'))",
    "return {pcall(cmsgpack.unpack, ('\\0'):rep(8000))}",
    # table layout: # and iteration order of what unpack builds
    "local t = cmsgpack.unpack(bin('9a01c0030405c0c0c009c0')) return {#t, show(t)}",
    "local t = cmsgpack.unpack(bin('dc0011' .. ('c0'):rep(16) .. '01')) return {#t, show(t)}",
    "local t = cmsgpack.unpack(cmsgpack.pack({a = 1, b = {1, 2}, c = 'x', [5] = 5, [1] = 0})) "
    "return show(t)",
    "local t = {} for i = 1, 50 do t['key' .. i] = i end "
    "return show(cmsgpack.unpack(cmsgpack.pack(t)))",
    "local t = {} for i = 1, 50 do t[i * 2] = i end return show(cmsgpack.unpack(cmsgpack.pack(t)))",
]


@pytest.mark.parametrize("script", UNPACK_CALLS)
def test_unpack_calls_match_redis(srv: ServerProcess, redis_ref: ServerProcess,
                                  script: str) -> None:
    """Offsets and limits, arguments of the wrong type, the stack's limits, table layout."""
    assert_same(srv, redis_ref, script)


ROUND_TRIPS = [
    # the smoke test of Redis's own suite, shortened
    """local some_map = {s1 = ('x'):rep(30), s2 = ('x'):rep(250), s3 = ('x'):rep(65530),
       s4 = ('x'):rep(100000), d1 = 0.1, i1 = 1, i2 = 250, i3 = 65530, i4 = 100000, i5 = 2^40,
       i6 = -1, i7 = -120, i8 = -32000, i9 = -100000, i10 = -3147483648, a1 = {1, 2, 3, 4, 5},
       m1 = {a = 1, b = 2}, b1 = false, b2 = true, n = nil}
       local encoded = cmsgpack.pack(some_map)
       local decoded = cmsgpack.unpack(encoded)
       local offset, one = cmsgpack.unpack_one(encoded, 0)
       return {#encoded, redis.sha1hex(encoded), show(decoded) == show(some_map),
               show(one) == show(some_map), offset}""",
    """local s = cmsgpack.pack(('x'):rep(30), ('x'):rep(250), ('x'):rep(65530), ('x'):rep(1e5))
       local out, offset, obj = {}, 0, nil
       repeat offset, obj = cmsgpack.unpack_limit(s, 1, offset) out[#out + 1] = {offset, #obj}
       until offset == -1
       return out""",
    # the circular-reference test of Redis's own suite
    """local a = {x = nil, y = 5} local b = {x = a} a['x'] = b
       local encoded = cmsgpack.pack(a) local re = cmsgpack.unpack(encoded)
       return {hex(encoded), re.x.x.y == re.y, re.x.x.x.x.y == re.y, show(re)}""",
]


@pytest.mark.parametrize("script", ROUND_TRIPS)
def test_round_trips_match_redis(srv: ServerProcess, redis_ref: ServerProcess,
                                 script: str) -> None:
    assert_same(srv, redis_ref, script)


# == struct ===================================================================================
INT_VALUES = ["0", "1", "-1", "127", "128", "255", "256", "-128", "-129", "32767", "65535",
              "-32769", "2^31", "2^32", "2^32 + 5", "-2^31 - 1", "2^53 + 2", "2^63", "2^64",
              "2^64 + 2^12", "2^70", "-2^63", "-2^64", "1e30", "-1e30", "1/0", "-1/0", "0/0",
              "-(0/0)", "1.5", "-1.5", "0.99", "-0.99", "'10'", "' 0x10 '", "'1e2'", "'-3.7'",
              "'inf'", "'nan'", "'0x1p4'", "'10\\0x'"]
INT_FORMATS = ["b", "B", "h", "H", ">h", "<H", "l", "L", "T", ">T", "i", "I", "i1", "I2", "i3",
               ">I3", "i5", ">i7", "i8", ">I8", "i9", ">i9", "I12", ">I16", "i32", ">i32", "i0"]


@pytest.mark.parametrize("fmt", INT_FORMATS)
def test_struct_integers_match_redis(srv: ServerProcess, redis_ref: ServerProcess,
                                     fmt: str) -> None:
    """Integers of every size and both byte orders, from numbers in and out of range: the
    bytes, and what unpack reads back (signed or not)."""
    scripts = []
    for value in INT_VALUES:
        scripts.append(f"return hex(struct.pack('{fmt}', {value}))")
        scripts.append(f"return all(struct.unpack('{fmt}', struct.pack('{fmt}', {value})))")
    scripts.append(f"return all(struct.unpack('{fmt}', ('\\255'):rep(40)))")
    scripts.append(f"return all(struct.unpack('{fmt}', ('\\128'):rep(40)))")
    scripts.append(f"return all(struct.unpack('{fmt}', bin('0102030405060708090a0b0c0d0e0f10"
                   "1112131415161718191a1b1c1d1e1f20')))")
    scripts.append(f"return struct.size('{fmt}')")
    assert_same(srv, redis_ref, *scripts)


FLOAT_VALUES = ["0", "0.1", "-2.5", "1e39", "-1e39", "3.4028235677973366e38",
                "3.4028234663852886e38", "1e-46", "2^-149", "1e300", "1/0", "-1/0", "0/0",
                "-(0/0)", "'1.25'", "2^63"]


@pytest.mark.parametrize("fmt", ["f", ">f", "d", ">d", "<d"])
def test_struct_floats_match_redis(srv: ServerProcess, redis_ref: ServerProcess,
                                   fmt: str) -> None:
    scripts = []
    for value in FLOAT_VALUES:
        scripts.append(f"return hex(struct.pack('{fmt}', {value}))")
        scripts.append(f"return all(struct.unpack('{fmt}', struct.pack('{fmt}', {value})))")
    assert_same(srv, redis_ref, *scripts)


STRUCT_CALLS = [
    # strings
    "return struct.pack('c3', 'abc')", "return struct.pack('c3', 'abcdef')",
    "return struct.pack('c3', 'ab')", "return struct.pack('c0', 'hello')",
    "return struct.pack('c', 'hello')", "return struct.pack('c10', ('x'):rep(10))",
    "return struct.pack('s', 'abc')", "return struct.pack('s', 'a\\0b')",
    "return struct.pack('ss', '', 'x')", "return struct.pack('c2', 5)",
    "return struct.pack('c1', 5)", "return struct.pack('c3', 1.5)", "return struct.pack('s', 7)",
    "return struct.pack('c0', 0/0)", "return struct.pack('s', 2^63)",
    "return struct.pack('bc3', 1, 'ab')", "return struct.pack('s', nil)",
    "return struct.pack('c2', {})", "return struct.pack('c', true)",
    # padding and alignment
    "return hex(struct.pack('x'))", "return hex(struct.pack('xxbx', 7))",
    "return hex(struct.pack('!4 b i', 1, 2))", "return hex(struct.pack('!b i', 1, 2))",
    "return hex(struct.pack('! b d', 1, 2))", "return hex(struct.pack('!2 b d', 1, 2))",
    "return hex(struct.pack('!16 b d', 1, 2))",
    "return hex(struct.pack('!8 b i3 b i5', 1, 2, 3, 4))",
    "return hex(struct.pack('!1 b i', 1, 2))", "return hex(struct.pack('b!4i', 1, 2))",
    "return hex(struct.pack('!8 b h b i b l b f b d b T', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12))",
    "return hex(struct.pack('!4 s i', 'ab', 2))", "return hex(struct.pack('!4 c3 i', 'abc', 2))",
    "return hex(struct.pack('!4 b x i', 1, 2))", "return hex(struct.pack('!4 b c0 i', 1, 'xy', 2))",
    "return hex(struct.pack('>h<h', 1, 1))", "return hex(struct.pack('  b  ', 1))",
    "return hex(struct.pack('', 1))", "return hex(struct.pack('b\\0q', 1))",
    # format errors
    "return struct.pack('q', 1)", "return struct.pack('Q')", "return struct.pack('?')",
    "return struct.pack('5')", "return struct.pack('b5', 1)", "return struct.pack('\\255')",
    "return struct.pack('bq', 1)", "return struct.pack('bq', 'x')", "return struct.pack('!3')",
    "return struct.pack('!0')", "return struct.pack('!6 b', 1)", "return struct.pack('i33', 1)",
    "return struct.pack('I99', 1)", "return struct.pack('c99999999999', 'x')",
    "return struct.pack('i2147483648', 1)", "return struct.pack('!2147483648')",
    "return struct.pack('c2147483647', 'x')", "return struct.pack('i2147483647', 1)",
    "return struct.pack('b i33', 'x')",
    # argument errors
    "return struct.pack('i')", "return struct.pack('i', 'x')", "return struct.pack('i', nil)",
    "return struct.pack('i', true)", "return struct.pack('i', {})",
    "return struct.pack('bbd', 1, 2)",
    "return struct.pack('f', function() end)", "return struct.pack(nil)", "return struct.pack()",
    "return struct.pack(12)", "return struct.pack({})", "return struct.pack('b', 1, 2, 3)",
    "return {pcall(struct.pack, 'b', 1)}", "return {pcall(struct.unpack, 'b', 'abc', 3)}",
    known("return {pcall(struct.pack, 'i')}", "a library function called by pcall itself: "
          "Redis names it '?' in a bad-argument error, ours by its name"),
    # unpack: positions, strings, errors
    "return all(struct.unpack('b', 'abc'))", "return all(struct.unpack('b', 'abc', 3))",
    "return all(struct.unpack('b', 'abc', 4))", "return all(struct.unpack('b', 'abc', 0))",
    "return all(struct.unpack('b', 'abc', -1))", "return all(struct.unpack('b', 'abc', 2.9))",
    "return all(struct.unpack('b', 'abc', '2'))", "return all(struct.unpack('b', 'abc', 'x'))",
    "return all(struct.unpack('b', 'abc', nil))", "return all(struct.unpack('', 'abc', 10))",
    "return all(struct.unpack('', 'abc', -5))", "return all(struct.unpack('', ''))",
    "return all(struct.unpack('>', 'a', 5))", "return all(struct.unpack('i', 'abc'))",
    "return all(struct.unpack('bi', 'abcd'))", "return all(struct.unpack('bbbbbbbbb', 'abc'))",
    "return all(struct.unpack('c0', 'abc'))", "return all(struct.unpack('bc0', '\\3abc'))",
    "return all(struct.unpack('bc0', '\\3ab'))", "return all(struct.unpack('c1c0', '3abc'))",
    "return all(struct.unpack('c1c0', 'xabc'))", "return all(struct.unpack('bc0', '\\255abc'))",
    "return all(struct.unpack('bc0', '\\0abc'))", "return all(struct.unpack('xc0', 'abc'))",
    "return all(struct.unpack('s', 'abc'))", "return all(struct.unpack('ss', 'a\\0b\\0'))",
    "return all(struct.unpack('s', '\\0'))", "return all(struct.unpack('sb', 'ab\\0\\5'))",
    "return all(struct.unpack('c3', 'abcdef', 2))", "return all(struct.unpack('c', 'abc'))",
    "return all(struct.unpack('x', ''))", "return all(struct.unpack('xb', 'ab'))",
    "return all(struct.unpack('q', ''))", "return all(struct.unpack('q', 'a', 3))",
    "return all(struct.unpack('!3', ''))", "return all(struct.unpack('!3', '', 2))",
    "return all(struct.unpack('i33', 'a'))", "return all(struct.unpack('bq', 'a'))",
    "return all(struct.unpack('!4 b i', bin('01000000 02000000')))",
    "return all(struct.unpack('!4 b i', bin('01000000 020000')))",
    "return all(struct.unpack('!8 b d', struct.pack('!8 b d', 1, 0.5)))",
    "return all(struct.unpack('>h<h', bin('00010100')))",
    "return all(struct.unpack('b', 'a', 2^63))", "return all(struct.unpack('b', 'a', -2^63))",
    "return all(struct.unpack('b', 'a', 1/0))",
    "return all(struct.unpack(nil, 'a'))", "return all(struct.unpack('b', nil))",
    "return all(struct.unpack('b'))", "return all(struct.unpack('b', 123))",
    "return all(struct.unpack(98, 'a'))", "return all(struct.unpack('b', 'a', 1, 'extra'))",
    "return all(struct.unpack('b\\0q', 'a'))",
    "return select('#', struct.unpack(('b'):rep(7997), ('\\0'):rep(7997)))",
    "return select('#', struct.unpack(('b'):rep(7998), ('\\0'):rep(7998)))",
    "return select('#', struct.unpack(('x'):rep(9000), ('\\0'):rep(9000)))",
    "return select('#', struct.unpack(('b'):rep(7996), ('\\0'):rep(7996), 1, 2))",
    "return select('#', struct.unpack(('b'):rep(7997), ('\\0'):rep(7997), 1, 2))",
    # size
    "return struct.size('i')", "return struct.size('!4 b i')", "return struct.size('! b d')",
    "return struct.size('q')", "return struct.size('bqb')", "return struct.size('s')",
    "return struct.size('c0')", "return struct.size('c')", "return struct.size('c5')",
    "return struct.size('?')", "return struct.size('!3')", "return struct.size('i33')",
    "return struct.size('x')", "return struct.size('!8 b d')", "return struct.size('')",
    "return struct.size('b\\0i')", "return struct.size('5')", "return struct.size('b5i')",
    "return struct.size(nil)", "return struct.size(12)", "return struct.size('!4 b q i')",
    "return struct.size('!8 b i3 b i5')", "return struct.size('>i<d')",
    "return struct.size('\\255')", "return struct.size('bs')", "return struct.size('q!3')",
    "return struct.size('i99999999999')", "return struct.size('c2147483647c2147483647')",
    "return struct.size('!16 b d')",
]


@pytest.mark.parametrize("script", STRUCT_CALLS)
def test_struct_matches_redis(srv: ServerProcess, redis_ref: ServerProcess, script: str) -> None:
    """struct.pack, unpack and size: strings, padding and alignment, positions, and every
    error text."""
    assert_same(srv, redis_ref, script)


# == the libraries as tables ==================================================================
TABLE_SCRIPTS = [
    "return type(cmsgpack)", "return type(struct)",
    "local t = {} for k, v in pairs({cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, "
    "cmsgpack._DESCRIPTION}) do t[k] = v end return t",
    "cmsgpack.pack = function() return 1 end", "cmsgpack.anything = 1", "struct.pack = nil",
    "struct.x = 1", "return {pcall(function() cmsgpack.unpack = 1 end)}",
    "return struct.nothing", "return cmsgpack.nothing",
    "local p = cmsgpack.pack return p(1)", "local s = struct return s.size('i')",
    "return type(cmsgpack_safe)",
    # an error's line is the script's, in a tail call or not, in a function or not
    "local a = 1\nlocal b = 2\nreturn struct.pack('q')",
    "local a = 1\nlocal s = cmsgpack.unpack('\\193')\nreturn s",
    "local function f(x)\n  return cmsgpack.unpack_one(x, 5)\nend\nreturn f('ab')",
    "local function f(x)\n  local v = struct.unpack('i', x)\n  return v\nend\nreturn f('ab')",
    "return struct.size('\\0s')",
    known("local t = {} for k in pairs(cmsgpack) do t[#t + 1] = k end table.sort(t) return t",
          "pairs(cmsgpack) and pairs(struct): ours lists nothing (the globals are empty "
          "read-only stand-ins for the library tables), Redis the functions"),
    known("return type(cmsgpack.pack)", "the functions are Python functions: type() says "
          "'userdata' (as for bit and cjson), Redis 'function'"),
    known("return tostring(getmetatable(cmsgpack))", "getmetatable(cmsgpack): ours false "
          "(a protected metatable), Redis nil"),
    "rawset(cmsgpack, 'x', 1) return 1",
    "setmetatable(struct, {}) return 1",
    known("return {pcall(function() return cmsgpack.unpack('\\193') end)}",
          "an error of a library function caught by pcall: Redis's message starts with the "
          "script's position ('user_script:1: '), ours has none (as for bit and cjson)"),
    known("return {pcall(cmsgpack.unpack, '\\129\\192\\1')}",
          "a nil table index in unpack, caught by pcall: ours 'ERR table index is nil', "
          "Redis 'table index is nil'"),
    known("return {pcall(struct.pack, 'q')}", "a library function called by pcall itself: "
          "Redis names it '?' in a bad-argument error, ours by its name"),
    known("local p = struct.pack return p('q')", "a library function called through a local: "
          "Redis names it by the local ('p') in a bad-argument error, ours by its name"),
    known("return cmsgpack.pack(cmsgpack, struct)", "the library tables packed: ours are "
          "empty read-only stand-ins (empty arrays), Redis's hold the functions (maps)"),
    known("return hex(struct.pack('d', -0.0))", "-0.0 reaches Python as the integer 0 (lupa): "
          "struct.pack writes +0.0"),
]


@pytest.mark.parametrize("script", TABLE_SCRIPTS)
def test_library_tables_match_redis(srv: ServerProcess, redis_ref: ServerProcess,
                                    script: str) -> None:
    """The globals are read-only tables, with lua-cmsgpack's fields."""
    assert_same(srv, redis_ref, script)


def test_a_script_cannot_change_the_libraries_for_the_next(srv: ServerProcess,
                                                           redis_ref: ServerProcess) -> None:
    """rawset on the library tables is refused, and the next script sees them whole."""
    scripts = [
        "rawset(cmsgpack, 'pack', function() return 'evil' end) "
        "rawset(struct, 'size', 5) return {cmsgpack.pack(1), struct.size}",
        "return {cmsgpack.pack(1), struct.size('i')}",
    ]
    got = replies(srv, scripts)
    assert got == replies(redis_ref, scripts)
    assert got[0].startswith(b"-ERR Attempt to modify a readonly table script: ")


@pytest.mark.skipif(not IS_OURS, reason="timing of our server")
def test_packing_many_values_is_quick(srv: ServerProcess) -> None:
    """100,000 elements packed and unpacked, and 20,000 struct calls, in a few seconds."""
    started = time.monotonic()
    got = replies(srv, [
        "local t = {} for i = 1, 100000 do t[i] = i * 3 end "
        "local s = cmsgpack.pack(t) local back = cmsgpack.unpack(s) return {#s, #back, back[99]}",
        "local t = {} for i = 1, 20000 do t[i] = struct.pack('>iHd', i, i % 65536, i / 3) end "
        "local n = 0 for i = 1, 20000 do n = n + struct.unpack('>i', t[i]) end return n",
    ])
    assert got == [b"*3\r\n:456188\r\n:100000\r\n:297\r\n", b":200010000\r\n"]
    assert time.monotonic() - started < 10
