"""Reply encoder: byte-exact RESP2 and RESP3."""

from __future__ import annotations

import enum
import math
from typing import Any

import hiredis
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.encoder import (
    EMPTY_ARRAY,
    NULL_ARRAY,
    NULL_BULK2,
    OK,
    PONG,
    QUEUED,
    ErrorReply,
    Push,
    Raw,
    SetReply,
    SimpleString,
    Verbatim,
    encode,
    encode_command,
    encode_into,
    format_double,
)
from protocol.errors import ProtocolError, expected_dollar

# (value, RESP2 bytes, RESP3 bytes)
CASES: list[tuple[str, Any, bytes, bytes]] = [
    ("bytes", b"hello", b"$5\r\nhello\r\n", b"$5\r\nhello\r\n"),
    ("empty bytes", b"", b"$0\r\n\r\n", b"$0\r\n\r\n"),
    ("binary", b"a\r\nb\x00", b"$5\r\na\r\nb\x00\r\n", b"$5\r\na\r\nb\x00\r\n"),
    ("bytearray", bytearray(b"xy"), b"$2\r\nxy\r\n", b"$2\r\nxy\r\n"),
    ("memoryview", memoryview(b"xyz"), b"$3\r\nxyz\r\n", b"$3\r\nxyz\r\n"),
    ("str", "héllo", b"$6\r\nh\xc3\xa9llo\r\n", b"$6\r\nh\xc3\xa9llo\r\n"),
    ("int 0", 0, b":0\r\n", b":0\r\n"),
    ("int cached", 9999, b":9999\r\n", b":9999\r\n"),
    ("int big", 10000, b":10000\r\n", b":10000\r\n"),
    ("int negative", -1, b":-1\r\n", b":-1\r\n"),
    ("int64", 2**63 - 1, b":9223372036854775807\r\n", b":9223372036854775807\r\n"),
    ("true", True, b":1\r\n", b"#t\r\n"),
    ("false", False, b":0\r\n", b"#f\r\n"),
    ("float", 1.5, b"$3\r\n1.5\r\n", b",1.5\r\n"),
    ("float small", 0.1, b"$3\r\n0.1\r\n", b",0.1\r\n"),
    ("float integral", 3.0, b"$1\r\n3\r\n", b",3\r\n"),
    ("float neg", -2.25, b"$5\r\n-2.25\r\n", b",-2.25\r\n"),
    ("float zero", 0.0, b"$1\r\n0\r\n", b",0\r\n"),
    ("float neg zero", -0.0, b"$2\r\n-0\r\n", b",-0\r\n"),
    ("inf", math.inf, b"$3\r\ninf\r\n", b",inf\r\n"),
    ("-inf", -math.inf, b"$4\r\n-inf\r\n", b",-inf\r\n"),
    ("nan", math.nan, b"$3\r\nnan\r\n", b",nan\r\n"),
    ("none", None, b"$-1\r\n", b"_\r\n"),
    ("null array", NULL_ARRAY, b"*-1\r\n", b"_\r\n"),
    ("empty list", [], b"*0\r\n", b"*0\r\n"),
    ("empty tuple", (), b"*0\r\n", b"*0\r\n"),
    ("list", [b"a", 1, None], b"*3\r\n$1\r\na\r\n:1\r\n$-1\r\n", b"*3\r\n$1\r\na\r\n:1\r\n_\r\n"),
    (
        "tuple",
        (b"a", (b"b",)),
        b"*2\r\n$1\r\na\r\n*1\r\n$1\r\nb\r\n",
        b"*2\r\n$1\r\na\r\n*1\r\n$1\r\nb\r\n",
    ),
    (
        "null in nested array",
        [[None, b"x"], NULL_ARRAY],
        b"*2\r\n*2\r\n$-1\r\n$1\r\nx\r\n*-1\r\n",
        b"*2\r\n*2\r\n_\r\n$1\r\nx\r\n_\r\n",
    ),
    ("empty dict", {}, b"*0\r\n", b"%0\r\n"),
    (
        "dict",
        {b"k": b"v", b"n": 2},
        b"*4\r\n$1\r\nk\r\n$1\r\nv\r\n$1\r\nn\r\n:2\r\n",
        b"%2\r\n$1\r\nk\r\n$1\r\nv\r\n$1\r\nn\r\n:2\r\n",
    ),
    (
        "array of maps",
        [{b"a": [1]}, {}],
        b"*2\r\n*2\r\n$1\r\na\r\n*1\r\n:1\r\n*0\r\n",
        b"*2\r\n%1\r\n$1\r\na\r\n*1\r\n:1\r\n%0\r\n",
    ),
    (
        "map of maps",
        {"x": {"y": None}},
        b"*2\r\n$1\r\nx\r\n*2\r\n$1\r\ny\r\n$-1\r\n",
        b"%1\r\n$1\r\nx\r\n%1\r\n$1\r\ny\r\n_\r\n",
    ),
    (
        "set reply",
        SetReply([b"a", b"b"]),
        b"*2\r\n$1\r\na\r\n$1\r\nb\r\n",
        b"~2\r\n$1\r\na\r\n$1\r\nb\r\n",
    ),
    ("empty set", set(), b"*0\r\n", b"~0\r\n"),
    ("frozenset", frozenset([b"a"]), b"*1\r\n$1\r\na\r\n", b"~1\r\n$1\r\na\r\n"),
    (
        "push",
        Push([b"message", b"ch", b"hi"]),
        b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n",
        b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n",
    ),
    ("simple", SimpleString("OK"), b"+OK\r\n", b"+OK\r\n"),
    ("simple newline", SimpleString("a\r\nb"), b"+a  b\r\n", b"+a  b\r\n"),
    ("error", ErrorReply("ERR syntax error"), b"-ERR syntax error\r\n", b"-ERR syntax error\r\n"),
    (
        "error code",
        ErrorReply("WRONGTYPE Operation against a key holding the wrong kind of value"),
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    ),
    ("error with dash", ErrorReply("-NOGROUP x"), b"-NOGROUP x\r\n", b"-NOGROUP x\r\n"),
    (
        "error newline",
        ErrorReply("ERR bad\r\nthing\n"),
        b"-ERR bad  thing \r\n",
        b"-ERR bad  thing \r\n",
    ),
    (
        "error in array",
        [ErrorReply("ERR x"), b"y"],
        b"*2\r\n-ERR x\r\n$1\r\ny\r\n",
        b"*2\r\n-ERR x\r\n$1\r\ny\r\n",
    ),
    ("verbatim", Verbatim("Some string"), b"$11\r\nSome string\r\n", b"=15\r\ntxt:Some string\r\n"),
    ("verbatim md", Verbatim(b"# hi", "mkd"), b"$4\r\n# hi\r\n", b"=8\r\nmkd:# hi\r\n"),
    ("raw", Raw(b"+CUSTOM\r\n"), b"+CUSTOM\r\n", b"+CUSTOM\r\n"),
    ("raw in array", [OK, QUEUED], b"*2\r\n+OK\r\n+QUEUED\r\n", b"*2\r\n+OK\r\n+QUEUED\r\n"),
    (
        "long bulk",
        b"x" * 2000,
        b"$2000\r\n" + b"x" * 2000 + b"\r\n",
        b"$2000\r\n" + b"x" * 2000 + b"\r\n",
    ),
    ("long array", [1] * 1500, b"*1500\r\n" + b":1\r\n" * 1500, b"*1500\r\n" + b":1\r\n" * 1500),
    (
        "bool in array",
        [True, False, 1, 0],
        b"*4\r\n:1\r\n:0\r\n:1\r\n:0\r\n",
        b"*4\r\n#t\r\n#f\r\n:1\r\n:0\r\n",
    ),
]


@pytest.mark.parametrize(("name", "value", "resp2", "resp3"), CASES, ids=[c[0] for c in CASES])
def test_encoding(name: str, value: Any, resp2: bytes, resp3: bytes) -> None:
    assert encode(value) == resp2
    assert encode(value, 2) == resp2
    assert encode(value, 3) == resp3
    out = [b"prefix"]
    encode_into(out, value, 2)
    encode_into(out, value, 3)
    assert all(type(chunk) in (bytes, Raw) for chunk in out)
    assert b"".join(out) == b"prefix" + resp2 + resp3


def test_constants() -> None:
    assert OK == b"+OK\r\n" and isinstance(OK, Raw)
    assert PONG == b"+PONG\r\n"
    assert QUEUED == b"+QUEUED\r\n"
    assert EMPTY_ARRAY == b"*0\r\n"
    assert NULL_BULK2 == b"$-1\r\n"
    for c in (OK, PONG, QUEUED, EMPTY_ARRAY, NULL_BULK2):
        assert encode(c, 2) == encode(c, 3) == bytes(c)
    assert repr(NULL_ARRAY) == "NULL_ARRAY"


def test_xrange_like_reply() -> None:
    reply = [
        [b"1-0", [b"f", b"v"]],
        [b"2-0", [b"a", b"1", b"b", b"2"]],
    ]
    want = (
        b"*2\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
        b"*2\r\n$3\r\n2-0\r\n*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n"
    )
    assert encode(reply, 2) == want
    assert encode(reply, 3) == want
    # XREAD in RESP3 is a map of stream name -> entries.
    assert encode({b"s": reply}, 3) == b"%1\r\n$1\r\ns\r\n" + want
    assert encode({b"s": reply}, 2) == b"*2\r\n$1\r\ns\r\n" + want


class Color(enum.IntEnum):
    RED = 7


class MyBytes(bytes):
    pass


class MyList(list):
    pass


def test_subclasses() -> None:
    assert encode(Color.RED) == b":7\r\n"
    assert encode(MyBytes(b"ab")) == b"$2\r\nab\r\n"
    assert encode(MyList([b"a"])) == b"*1\r\n$1\r\na\r\n"
    assert encode([Color.RED, MyBytes(b"x")], 3) == b"*2\r\n:7\r\n$1\r\nx\r\n"


def test_unsupported_type() -> None:
    with pytest.raises(TypeError):
        encode(object())
    with pytest.raises(TypeError):
        encode([b"ok", object()], 3)


def test_verbatim_format_must_be_three_chars() -> None:
    with pytest.raises(ValueError):
        Verbatim("x", "text")
    assert Verbatim("a") == Verbatim("a", "txt")
    assert Verbatim("a") != Verbatim("a", "mkd")


def test_format_double() -> None:
    assert format_double(1e20) == "1e+20"
    assert format_double(123456789.0) == "123456789"
    assert format_double(2.0**62) == str(2**62)
    assert format_double(-3.5) == "-3.5"


def test_surrogate_escaped_error_roundtrip() -> None:
    # A ProtocolError quoting a raw byte encodes back to that byte.
    err = expected_dollar(0xFF)
    assert encode(ErrorReply(str(err))) == b"-ERR Protocol error: expected '$', got '\xff'\r\n"
    assert err.reply == encode(ErrorReply(str(err)))
    assert isinstance(err, ProtocolError)


# ---------------------------------------------------------------- hiredis as an oracle

leaf = st.one_of(
    st.binary(max_size=20),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.none(),
    st.booleans(),
    st.text(max_size=10),
)
value_st = st.recursive(
    leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(st.binary(max_size=5), children, max_size=4),
    ),
    max_leaves=25,
)


def expected(v: Any, p3: bool) -> Any:
    """What hiredis should read back."""
    if isinstance(v, bool):
        return v if p3 else int(v)
    if isinstance(v, str):
        return v.encode()
    if isinstance(v, list):
        return [expected(x, p3) for x in v]
    if isinstance(v, dict):
        if p3:
            return {expected(k, p3): expected(x, p3) for k, x in v.items()}
        flat: list[Any] = []
        for k, x in v.items():
            flat += [expected(k, p3), expected(x, p3)]
        return flat
    return v


@settings(max_examples=200, deadline=None)
@given(value=value_st)
def test_hiredis_reads_back(value: Any) -> None:
    for proto in (2, 3):
        data = encode(value, proto)
        r = hiredis.Reader()
        r.feed(data)
        got = r.gets()
        assert got == expected(value, proto == 3)
        assert r.gets() is False  # exactly one reply, nothing left over
        out: list[bytes] = []
        encode_into(out, value, proto)
        assert b"".join(out) == data


def _generic_entries(entries: list) -> bytes:
    """Stream entries encoded the long way (what _entries' fast path must equal)."""
    out = [b"*%d\r\n" % len(entries)]
    for e in entries:
        out.append(b"*%d\r\n" % len(e))
        for x in e:
            if isinstance(x, list):
                out.append(b"*%d\r\n" % len(x))
                out += [b"$%d\r\n%b\r\n" % (len(f), f) for f in x]
            else:
                out.append(b"$%d\r\n%b\r\n" % (len(x), x))
    return b"".join(out)


@pytest.mark.parametrize("protocol", [2, 3])
def test_stream_entries_fast_path(protocol: int) -> None:
    entries = [[b"1700000000000-%d" % i, [b"f", b"v%d" % i, b"", b"x" * 100]] for i in range(5)]
    entries.append([b"1-1", []])
    assert encode(entries, protocol) == _generic_entries(entries)
    out = [b"+pre\r\n"]
    encode_into(out, entries, protocol)
    assert b"".join(out) == b"+pre\r\n" + _generic_entries(entries)
    # Nested (XREAD's RESP2 shape) and a long value (beyond the precomputed headers).
    xread = [[b"key", entries], [b"k2", [[b"2-2", [b"f", b"y" * 5000]]]]]
    body = b"".join(b"*2\r\n$%d\r\n%b\r\n" % (len(k), k) + _generic_entries(e) for k, e in xread)
    assert encode(xread, protocol) == b"*2\r\n" + body


@pytest.mark.parametrize(
    "entry",
    [
        [b"1-1", None],  # XREADGROUP: a deleted pending entry
        [b"1-1", [b"f", 5]],
        [b"1-1", [b"f", Raw(b"+OK\r\n")]],
        [b"1-1", (b"f", b"v")],
        (b"1-1", [b"f", b"v"]),
        [b"1-1", [b"f", b"v"], b"x"],
        [7, [b"f", b"v"]],
        [b"1-1", [b"f", "str"]],
    ],
)
def test_stream_entries_shape_mismatch_falls_back(entry: Any) -> None:
    # The first entry has the fast path's shape, the second not: same bytes as each
    # value encoded alone (the generic path), whatever the protocol.
    good = [b"1-0", [b"a", b"b"]]
    for protocol in (2, 3):
        expected = b"*2\r\n" + encode(good, protocol) + encode(entry, protocol)
        assert encode([good, entry], protocol) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (2**63 - 1, b":9223372036854775807\r\n"),
        (-(2**63), b":-9223372036854775808\r\n"),
        (2**63, b":-9223372036854775808\r\n"),  # a uint64 counter past LLONG_MAX, as Redis
        (2**64 - 1, b":-1\r\n"),
        (2**64 + 5, b":5\r\n"),
        (-(2**63) - 1, b":9223372036854775807\r\n"),
    ],
)
def test_integers_outside_int64_are_replied_as_a_long_long(value: int, expected: bytes) -> None:
    """RESP integers are signed 64-bit: a reply never carries one a client cannot parse."""

    class Big(int):
        pass

    for protocol in (2, 3):
        assert encode(value, protocol) == expected
        assert encode([value], protocol) == b"*1\r\n" + expected
        assert encode(Big(value), protocol) == expected
        out: list[bytes] = []
        encode_into(out, value, protocol)
        assert b"".join(out) == expected
        reader = hiredis.Reader()
        reader.feed(expected)
        assert -(2**63) <= reader.gets() < 2**63


# -- commands (RESP arrays of bulk strings: requests, the AOF) ---------------------------------
def test_encode_command_is_resp_array_of_bulk_strings() -> None:
    assert encode_command([b"SET", b"k", b""]) == b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"
    assert encode_command([b"X", b"a\r\nb"]) == b"*2\r\n$1\r\nX\r\n$4\r\na\r\nb\r\n"


def test_encode_command_past_the_tables_and_other_argument_types() -> None:
    """Arguments longer than the precomputed "$<len>" lines, commands longer than the "*<n>"
    ones, and bytes-like or str/int arguments all give the canonical encoding."""
    def canonical(argv: list[bytes]) -> bytes:
        return b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%b\r\n" % (len(a), a) for a in argv)

    long_arg = bytes(range(256)) * 40  # 10,240 bytes
    assert encode_command([b"SET", b"k", long_arg]) == canonical([b"SET", b"k", long_arg])
    many = [b"XADD", b"s", b"1-1", *(b"f%d" % i for i in range(2000))]
    assert encode_command(many) == canonical(many)
    assert encode_command([b"SET", bytearray(b"k"), memoryview(b"v")]) == canonical(
        [b"SET", b"k", b"v"])
    assert encode_command([b"SELECT", "3", 7]) == canonical([b"SELECT", b"3", b"7"])  # type: ignore[list-item]
