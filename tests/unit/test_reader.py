"""Request reader: Redis's networking.c rules, on both implementations.

Expected texts and behaviours were checked against Debian's redis-server 7.0.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import protocol.reader as reader_mod
from protocol.reader import (
    HiredisRequestReader,
    ProtocolError,
    PythonRequestReader,
    RequestReader,
    make_reader,
)

IMPLS = [PythonRequestReader, HiredisRequestReader]

INVALID_MBULK = "ERR Protocol error: invalid multibulk length"
INVALID_BULK = "ERR Protocol error: invalid bulk length"
TOO_BIG_MBULK = "ERR Protocol error: too big mbulk count string"
TOO_BIG_BULK = "ERR Protocol error: too big bulk count string"
TOO_BIG_INLINE = "ERR Protocol error: too big inline request"
UNBALANCED = "ERR Protocol error: unbalanced quotes in request"


@pytest.fixture(params=IMPLS, ids=["python", "hiredis"])
def impl(request: pytest.FixtureRequest) -> type[RequestReader]:
    return request.param


@pytest.fixture(autouse=True, params=["c-check", "python-checks"])
def _frame_check(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test twice: the hiredis reader's check of its frames in C (protocol/native.py)
    and in Python."""
    if request.param == "python-checks":
        monkeypatch.setattr(reader_mod, "_frames_end", None)
    elif reader_mod._frames_end is None:
        pytest.skip("protocol._native was not built")


def enc(*argv: bytes) -> bytes:
    return b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in argv)


def parse(impl: type[RequestReader], data: bytes, **kw: int) -> list[list[bytes]]:
    r = impl(**kw)
    r.feed(data)
    return r.get_commands()


def error_of(impl: type[RequestReader], data: bytes, **kw: int) -> str:
    """The error text, asserting no command came before it."""
    r = impl(**kw)
    r.feed(data)
    with pytest.raises(ProtocolError) as ei:
        r.get_commands()
    return str(ei.value)


def outcomes(r: RequestReader, chunks: list[bytes], via_parse: bool = False) -> list[object]:
    """What each feed+get_commands step (or parse() call) gives: a list of commands, or
    ('error', text)."""
    res: list[object] = []
    for chunk in chunks:
        try:
            if via_parse:
                res.append(r.parse(chunk))
            else:
                r.feed(chunk)
                res.append(r.get_commands())
        except ProtocolError as e:
            res.append(("error", str(e)))
    return res


def flatten(res: list[object]) -> tuple[list[list[bytes]], str | None]:
    cmds: list[list[bytes]] = []
    for item in res:
        if isinstance(item, tuple):
            return cmds, item[1]
        cmds.extend(item)  # type: ignore[arg-type]
    return cmds, None


# ---------------------------------------------------------------- factory and API


def test_make_reader_picks_implementation() -> None:
    assert isinstance(make_reader(), HiredisRequestReader)
    assert isinstance(make_reader(use_hiredis=False), PythonRequestReader)
    r = make_reader(proto_max_bulk_len=1234, use_hiredis=False)
    assert r.proto_max_bulk_len == 1234
    assert make_reader().proto_max_bulk_len == 512 * 1024 * 1024
    assert make_reader().max_multibulk_len == 2**31 - 1


def test_empty_reader(impl: type[RequestReader]) -> None:
    r = impl()
    assert r.get_commands() == []
    r.feed(b"")
    assert r.get_commands() == []
    assert r.pending_bytes() == 0
    assert r.error is None


# ---------------------------------------------------------------- multibulk


def test_simple_multibulk(impl: type[RequestReader]) -> None:
    assert parse(impl, enc(b"PING")) == [[b"PING"]]
    assert parse(impl, enc(b"SET", b"k", b"v") + enc(b"GET", b"k")) == [
        [b"SET", b"k", b"v"],
        [b"GET", b"k"],
    ]


def test_binary_safe_payloads(impl: type[RequestReader]) -> None:
    argv = [b"XADD", b"s\r\n", b"*", b"\r\n", b"\x00\xff*1\r\n$3\r\n", b"", b"+OK\r\n=(~|"]
    assert parse(impl, enc(*argv) * 3) == [argv] * 3


def test_empty_and_negative_counts_are_skipped(impl: type[RequestReader]) -> None:
    data = b"*0\r\n" + enc(b"A") + b"*-1\r\n*-5\r\n" + enc(b"B") + b"*0\r\n"
    assert parse(impl, data) == [[b"A"], [b"B"]]
    assert parse(impl, b"*0\r\n*-1\r\n") == []


def test_count_limits(impl: type[RequestReader]) -> None:
    assert error_of(impl, b"*2147483648\r\n") == INVALID_MBULK
    r = impl()
    r.feed(b"*1048576\r\n$1\r\na\r\n")
    assert r.get_commands() == []  # allowed, waiting for the other arguments
    assert error_of(impl, b"*4\r\n", max_multibulk_len=3) == INVALID_MBULK


def test_hiredis_never_reads_a_big_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """hiredis allocates an array when it reads the header (16 GiB for *2147483647) and nests
    arrays a thousand deep (63 KB of "*999999\r\n" took it seconds): a header of 1000 or
    more reaches hiredis only at the start of what it is fed, with room for its elements
    (big commands keep the fast reading); the Python rules read the others, and the frames
    around them are still read right."""
    fed: list[bytes] = []
    real_reader = reader_mod.hiredis.Reader

    class Recording:
        def __init__(self) -> None:
            self.inner = real_reader()

        def feed(self, data: bytes | bytearray, start: int = 0, length: int = -1) -> None:
            end = len(data) if length < 0 else start + length
            fed.append(bytes(data[start:end]))
            self.inner.feed(data, start, end - start)

        def gets(self) -> object:
            return self.inner.gets()

    monkeypatch.setattr(reader_mod.hiredis, "Reader", Recording)
    ping = b"*1\r\n$4\r\nPING\r\n"
    payload = b"*1234567"  # inside an argument: harmless, read by the Python rules
    echo = b"*2\r\n$4\r\nECHO\r\n$8\r\n" + payload + b"\r\n"
    many = [b"XACK", b"s", b"g"] + [b"%d-0" % i for i in range(1, 998)]  # 1000 arguments
    cases = [
        (b"*2147483647\r\n$4\r\nPING\r\n", []),  # waits for the other arguments
        (ping * 3 + b"*2000000000\r\n", [[b"PING"]] * 3),
        (ping + echo + ping, [[b"PING"], [b"ECHO", payload], [b"PING"]]),
        (ping + enc(*many) + ping, [[b"PING"], many, [b"PING"]]),
        (enc(*many) + ping, [many, [b"PING"]]),
    ]
    big_header = re.compile(rb"\*([0-9]{4,})")

    def safe(chunk: bytes) -> bool:
        return all(m.start() == 0 and int(m.group(1)) * 6 <= len(chunk)
                   for m in big_header.finditer(chunk))

    for data, expected in cases:
        fed.clear()
        assert make_reader().parse(data) == expected
        assert all(map(safe, fed))
    assert fed[0].startswith(b"*1000\r\n")  # the last case's big frame: hiredis read it
    fed.clear()
    with pytest.raises(ProtocolError, match="expected '\\$', got '\\*'"):
        make_reader().parse(b"*999999\r\n" * 7000)
    assert all(map(safe, fed))


@pytest.mark.parametrize(
    "header",
    [
        b"*\r\n",
        b"*x\r\n",
        b"*01\r\n",
        b"*-0\r\n",
        b"*+1\r\n",
        b"* 1\r\n",
        b"*1 \r\n",
        b"*1x\r\n",
        b"*" + b"1" * 21 + b"\r\n",
        b"*99999999999999999999\r\n",
        b"*-\r\n",
    ],
)
def test_invalid_multibulk_length(impl: type[RequestReader], header: bytes) -> None:
    assert error_of(impl, header) == INVALID_MBULK


@pytest.mark.parametrize(
    "header",
    [
        b"$\r\n",
        b"$x\r\n",
        b"$-1\r\n",
        b"$-0\r\n",
        b"$01\r\n",
        b"$+1\r\n",
        b"$1 \r\n",
        b"$ 1\r\n",
        b"$" + b"1" * 21 + b"\r\n",
        b"$536870913\r\n",
    ],
)
def test_invalid_bulk_length(impl: type[RequestReader], header: bytes) -> None:
    assert error_of(impl, b"*1\r\n" + header) == INVALID_BULK


def test_bulk_limit_is_checked_on_the_header_alone(impl: type[RequestReader]) -> None:
    assert error_of(impl, b"*1\r\n$600000000\r\n") == INVALID_BULK
    r = impl()
    r.feed(b"*1\r\n$536870912\r\n")  # exactly the default limit: accepted, waits for data
    assert r.get_commands() == []


def test_bulk_limit_can_change_at_run_time(impl: type[RequestReader]) -> None:
    r = impl(proto_max_bulk_len=10)
    r.feed(enc(b"x" * 10))
    assert r.get_commands() == [[b"x" * 10]]
    r.proto_max_bulk_len = 20
    r.feed(enc(b"y" * 20))
    assert r.get_commands() == [[b"y" * 20]]
    r.proto_max_bulk_len = 5
    r.feed(enc(b"z" * 6))
    with pytest.raises(ProtocolError, match="invalid bulk length"):
        r.get_commands()


def test_limits_changed_at_run_time_apply_to_whole_reads(impl: type[RequestReader]) -> None:
    # parse() reads a clean read without buffering it: new limits must reach that path too.
    r = impl()
    assert r.parse(enc(b"x" * 30)) == [[b"x" * 30]]
    r.proto_max_bulk_len = 5
    with pytest.raises(ProtocolError, match="invalid bulk length"):
        r.parse(enc(b"z" * 6))
    r = impl()
    r.max_multibulk_len = 2
    with pytest.raises(ProtocolError, match="invalid multibulk length"):
        r.parse(enc(b"a", b"b", b"c"))
    r = impl()
    r.unauthenticated = True
    assert r.parse(enc(b"AUTH", b"pw") + enc(b"PING")) == [[b"AUTH", b"pw"]]  # one a call


def test_complete_frame_over_the_limit(impl: type[RequestReader]) -> None:
    # The whole oversized frame arrives at once: still refused, after the good ones.
    r = impl(proto_max_bulk_len=8)
    r.feed(enc(b"ok") + enc(b"a", b"b" * 9) + enc(b"never"))
    assert r.get_commands() == [[b"ok"]]
    with pytest.raises(ProtocolError) as ei:
        r.get_commands()
    assert str(ei.value) == INVALID_BULK
    r = impl(max_multibulk_len=2)
    r.feed(enc(b"a", b"b") + enc(b"a", b"b", b"c"))
    assert r.get_commands() == [[b"a", b"b"]]
    with pytest.raises(ProtocolError, match="invalid multibulk length"):
        r.get_commands()


@pytest.mark.parametrize(
    ("second", "shown"),
    [
        (b"PING\r\n", "P"),
        (b":5\r\n", ":"),
        (b"+OK\r\n", "+"),
        (b"-ERR\r\n", "-"),
        (b"*1\r\n$1\r\na\r\n", "*"),
        (b"=5\r\ntxt:a\r\n", "="),
        (b"(12\r\n", "("),
        (b",1.5\r\n", ","),
        (b"#t\r\n", "#"),
        (b"_\r\n", "_"),
        (b"%1\r\n", "%"),
        (b"~1\r\n", "~"),
        (b">1\r\n", ">"),
        (b"|1\r\n", "|"),
        (b"\r\n", " "),
        (b"\n\r\n", " "),
    ],
)
def test_expected_dollar(impl: type[RequestReader], second: bytes, shown: str) -> None:
    # '\r' and '\n' are shown as spaces, as addReplyErrorFormat does.
    err = error_of(impl, b"*2\r\n$4\r\nECHO\r\n" + second)
    assert err == f"ERR Protocol error: expected '$', got '{shown}'"


@pytest.mark.parametrize("via_parse", [False, True])
def test_nested_arrays_whose_sizes_add_up_are_refused(impl: type[RequestReader],
                                                      via_parse: bool) -> None:
    # Arguments of 0, 0 and 1 bytes take 23 bytes as one canonical frame, and so does this
    # frame of three nested arrays: the size alone cannot tell, the argument types must.
    data = b"*3\r\n*0\r\n*0\r\n*1\r\n$1\r\na\r\n"
    assert len(data) == len(enc(b"", b"", b"a"))
    r = impl()
    with pytest.raises(ProtocolError) as ei:
        if via_parse:
            r.parse(data)
        else:
            r.feed(data)
            r.get_commands()
    assert str(ei.value) == "ERR Protocol error: expected '$', got '*'"


def test_expected_dollar_non_ascii_byte(impl: type[RequestReader]) -> None:
    r = impl()
    r.feed(b"*1\r\n\xff\r\n")
    with pytest.raises(ProtocolError) as ei:
        r.get_commands()
    assert ei.value.reply == b"-ERR Protocol error: expected '$', got '\xff'\r\n"


def test_payload_is_followed_by_any_two_bytes(impl: type[RequestReader]) -> None:
    # Redis skips the two bytes after a payload without looking at them.
    assert parse(impl, b"*2\r\n$4\r\nECHO\r\n$2\r\nhiXY*1\r\n$1\r\nQ\r\n") == [
        [b"ECHO", b"hi"],
        [b"Q"],
    ]
    r = impl()
    r.feed(b"*1\r\n$4\r\nPING\r")
    assert r.get_commands() == []  # needs a second byte after the payload
    r.feed(b"!")
    assert r.get_commands() == [[b"PING"]]


def test_header_line_ends_at_first_cr(impl: type[RequestReader]) -> None:
    # strchr('\r') then skip one byte, whatever it is.
    assert parse(impl, b"*1\rX$4\rxPING\r\n") == [[b"PING"]]
    r = impl()
    r.feed(b"*1\r")
    assert r.get_commands() == []
    r.feed(b"\n$1\r")
    assert r.get_commands() == []
    r.feed(b"\na\r\n")
    assert r.get_commands() == [[b"a"]]


def test_nul_hides_the_header_end(impl: type[RequestReader]) -> None:
    # strchr() stops at NUL: Redis just waits (then hits the 64 KiB limit).
    for data in (b"*1\x00\r\n", b"*1\r\n\x00\r\n", b"*1\r\n$1\x00\r\na\r\n"):
        r = impl()
        r.feed(data + enc(b"PING"))
        assert r.get_commands() == []
    r = impl()
    r.feed(b"*1\x00\r\n" + b"x" * 65536)
    with pytest.raises(ProtocolError, match="too big mbulk count string"):
        r.get_commands()
    r = impl()
    r.feed(b"*1\r\n$\x00" + b"x" * 65535)
    with pytest.raises(ProtocolError, match="too big bulk count string"):
        r.get_commands()
    # A NUL inside a payload is just data.
    assert parse(impl, enc(b"a\x00b")) == [[b"a\x00b"]]


def test_too_big_mbulk_count_string(impl: type[RequestReader]) -> None:
    r = impl()
    r.feed(b"*" + b"1" * 65535)  # 65536 bytes without '\r': still waiting
    assert r.get_commands() == []
    r.feed(b"1")
    with pytest.raises(ProtocolError) as ei:
        r.get_commands()
    assert str(ei.value) == TOO_BIG_MBULK


def test_too_big_bulk_count_string(impl: type[RequestReader]) -> None:
    r = impl()
    r.feed(b"*1\r\n$" + b"1" * 65535)  # 65536 bytes from the '$'
    assert r.get_commands() == []
    r.feed(b"1")
    with pytest.raises(ProtocolError) as ei:
        r.get_commands()
    assert str(ei.value) == TOO_BIG_BULK


def test_long_header_with_cr_is_invalid_not_too_big(impl: type[RequestReader]) -> None:
    # With its '\r' in the buffer the line is parsed (and is not a valid number).
    assert error_of(impl, b"*" + b"1" * 70000 + b"\r\n") == INVALID_MBULK
    assert error_of(impl, b"*1\r\n$" + b"1" * 70000 + b"\r\n") == INVALID_BULK


def test_large_payload_in_pieces(impl: type[RequestReader]) -> None:
    payload = bytes(range(256)) * 1000
    data = enc(b"SET", b"k", payload) + enc(b"GET", b"k")
    r = impl()
    got = []
    for i in range(0, len(data), 4096):
        r.feed(data[i : i + 4096])
        got += r.get_commands()
    assert got == [[b"SET", b"k", payload], [b"GET", b"k"]]
    assert r.pending_bytes() == 0


# ---------------------------------------------------------------- inline


@pytest.mark.parametrize(
    ("line", "argv"),
    [
        (b"PING", [b"PING"]),
        (b"SET k v", [b"SET", b"k", b"v"]),
        (b"  SET \t k   v  ", [b"SET", b"k", b"v"]),
        (b"\x0bPING", [b"PING"]),  # \v is a blank before an argument...
        (b"ECHO a\x0bb", [b"ECHO", b"a\x0bb"]),  # ...but does not end one
        (b"ECHO a\x0cb", [b"ECHO", b"a\x0cb"]),
        (b"ECHO a\rb", [b"ECHO", b"a", b"b"]),
        (b'ECHO "a b"', [b"ECHO", b"a b"]),
        (b'ECHO ""', [b"ECHO", b""]),
        (b"ECHO ''", [b"ECHO", b""]),
        (b'ECHO "\\n\\r\\t\\b\\a\\\\\\"\\q"', [b"ECHO", b'\n\r\t\b\a\\"q']),
        (b'ECHO "\\x41\\x7a\\xFF\\x00"', [b"ECHO", b"Az\xff\x00"]),
        (b'ECHO "\\x4"', [b"ECHO", b"x4"]),
        (b'ECHO "\\xzz"', [b"ECHO", b"xzz"]),
        (b"ECHO 'a\\'b'", [b"ECHO", b"a'b"]),
        (b"ECHO 'a\\nb\"'", [b"ECHO", b'a\\nb"']),
        (b'ECHO foo"bar baz"', [b"ECHO", b"foobar baz"]),
        (b"ECHO foo'bar baz' x", [b"ECHO", b"foobar baz", b"x"]),
        (b'ECHO "a"\tb', [b"ECHO", b"a", b"b"]),
        (b'ECHO "a"\x0bb', [b"ECHO", b"a", b"b"]),
        (b"ECHO \xff\x80", [b"ECHO", b"\xff\x80"]),
        (b'"*1"', [b"*1"]),
    ],
)
def test_inline_split(impl: type[RequestReader], line: bytes, argv: list[bytes]) -> None:
    assert parse(impl, line + b"\r\n") == [argv]
    assert parse(impl, line + b"\n") == [argv]


@pytest.mark.parametrize(
    "line",
    [
        b'ECHO "abc',
        b"ECHO 'abc",
        b'ECHO "a"b',
        b"ECHO 'a'b",
        b'ECHO "\\"',
        b'ECHO """"',
        b'ECHO "abc\\',
        b"ECHO 'a\\'",
    ],
)
def test_inline_unbalanced_quotes(impl: type[RequestReader], line: bytes) -> None:
    assert error_of(impl, line + b"\r\n") == UNBALANCED


def test_inline_blank_lines_are_skipped(impl: type[RequestReader]) -> None:
    assert parse(impl, b"\r\n\n  \r\n\t\r\nPING\r\n") == [[b"PING"]]
    assert parse(impl, b"\r\n") == []


def test_inline_line_endings(impl: type[RequestReader]) -> None:
    # Only one '\r' before the '\n' is dropped; others are blanks.
    assert parse(impl, b"PING\r\r\n") == [[b"PING"]]
    assert parse(impl, b"A\rB\n") == [[b"A", b"B"]]
    r = impl()
    r.feed(b"PING\r")
    assert r.get_commands() == []
    r.feed(b"\n")
    assert r.get_commands() == [[b"PING"]]


def test_inline_too_big(impl: type[RequestReader]) -> None:
    r = impl()
    r.feed(b"a" * 65536)
    assert r.get_commands() == []
    assert r.pending_bytes() == 65536
    r.feed(b"a")
    with pytest.raises(ProtocolError) as ei:
        r.get_commands()
    assert str(ei.value) == TOO_BIG_INLINE


def test_inline_nul_hides_newline(impl: type[RequestReader]) -> None:
    r = impl()
    r.feed(b"PING\x00\r\nPING\r\n")
    assert r.get_commands() == []
    r.feed(b"x" * 65536)
    with pytest.raises(ProtocolError, match="too big inline request"):
        r.get_commands()


def test_pipelined_mix_of_inline_and_multibulk(impl: type[RequestReader]) -> None:
    data = (
        b"PING\r\n"
        + enc(b"ECHO", b"a b")
        + b'SET k "v 1"\n'
        + b"\r\n"
        + enc(b"GET", b"k")
        + b"*0\r\n"
        + b"QUIT\r\n"
    ) * 50
    want = [[b"PING"], [b"ECHO", b"a b"], [b"SET", b"k", b"v 1"], [b"GET", b"k"], [b"QUIT"]] * 50
    assert parse(impl, data) == want
    r = impl()
    got = []
    for i in range(len(data)):
        r.feed(data[i : i + 1])
        got += r.get_commands()
    assert got == want


# ---------------------------------------------------------------- errors contract


def test_commands_before_the_bad_frame_come_first(impl: type[RequestReader]) -> None:
    r = impl()
    r.feed(enc(b"A") + b"PING\r\n" + enc(b"B") + b"*x\r\n" + enc(b"C"))
    assert r.get_commands() == [[b"A"], [b"PING"], [b"B"]]
    err = r.error
    assert isinstance(err, ProtocolError) and str(err) == INVALID_MBULK
    with pytest.raises(ProtocolError) as ei:
        r.get_commands()
    assert str(ei.value) == str(err)
    # The reader is dead: more data is ignored, the same error keeps coming (as copies: the
    # kept one is never raised, see test_reader_release.py).
    r.feed(enc(b"D"))
    with pytest.raises(ProtocolError) as ei2:
        r.get_commands()
    assert str(ei2.value) == str(err) and ei2.value is not err
    assert err.reply == b"-ERR Protocol error: invalid multibulk length\r\n"


def test_error_without_preceding_commands_raises_at_once(impl: type[RequestReader]) -> None:
    r = impl()
    r.feed(enc(b"A"))
    assert r.get_commands() == [[b"A"]]
    r.feed(b'ECHO "x\r\n')
    with pytest.raises(ProtocolError, match="unbalanced"):
        r.get_commands()
    assert r.error is not None


def test_error_after_partial_frame(impl: type[RequestReader]) -> None:
    r = impl()
    r.feed(enc(b"A") + b"*2\r\n$1\r\nx\r\n")
    assert r.get_commands() == [[b"A"]]
    r.feed(b"$-3\r\n")
    with pytest.raises(ProtocolError, match="invalid bulk length"):
        r.get_commands()


@pytest.mark.parametrize(
    "bad",
    [
        b"*1\r\n+OK\r\n",
        b"*1\r\n=7\r\ntxt:abc\r\n",
        b"*1\r\n(123\r\n",
        b"*1\r\n:1\r\n",
        b"*1\r\n*1\r\n$1\r\na\r\n",
        b"*2\r\n$1\r\na\r\n%1\r\n$1\r\na\r\n$1\r\nb\r\n",
        b"*1\r\n_\r\n",
        b"*1\r\n#t\r\n",
        b"*1\r\n,1.5\r\n",
        b"*1\r\n-ERR x\r\n",
        b"*1\r\n$-1\r\n",
        b"*2\r\n|1\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n",
    ],
)
def test_resp3_types_inside_a_request(impl: type[RequestReader], bad: bytes) -> None:
    """hiredis reads these; Redis refuses them. Good commands around still come first."""
    r = impl()
    r.feed(enc(b"A", b"1") * 3 + bad + enc(b"B"))
    assert r.get_commands() == [[b"A", b"1"]] * 3
    with pytest.raises(ProtocolError, match=r"expected '\$'|invalid bulk length"):
        r.get_commands()


@pytest.mark.parametrize(
    ("frame", "argv"),
    [
        (b"~2\r\n$1\r\na\r\n$1\r\nb\r\n", [b"~2"]),
        (b">1\r\n$1\r\na\r\n", [b">1"]),
        (b"%1\r\n$1\r\na\r\n$1\r\nb\r\n", [b"%1"]),
        (b"+PING\r\n", [b"+PING"]),
        (b"|1\r\n$1\r\na\r\n$1\r\nb\r\n", [b"|1"]),
    ],
)
def test_resp3_aggregates_at_top_level_are_inline(
    impl: type[RequestReader], frame: bytes, argv: list[bytes]
) -> None:
    # Anything not starting with '*' is an inline command, line by line.
    cmds = parse(impl, enc(b"A") + frame + enc(b"B"))
    assert cmds[0] == [b"A"] and cmds[1] == argv and cmds[-1] == [b"B"]
    assert cmds == [[b"A"]] + [line.split() for line in frame.split(b"\r\n") if line] + [[b"B"]]


def test_protocol_error_reply_bytes() -> None:
    e = ProtocolError("ERR Protocol error: too big inline request")
    assert e.reply == b"-ERR Protocol error: too big inline request\r\n"
    assert e.text == str(e)


# ---------------------------------------------------------------- pending_bytes


def test_pending_bytes(impl: type[RequestReader]) -> None:
    r = impl()
    part = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nval"
    r.feed(enc(b"PING") + part)
    assert r.get_commands() == [[b"PING"]]
    assert r.pending_bytes() == len(b"val")  # SET and k are read, and the header of value
    r.feed(b"ue\r\n")
    assert r.get_commands() == [[b"SET", b"k", b"value"]]
    assert r.pending_bytes() == 0
    r.feed(b"PIN")
    assert r.pending_bytes() == 3  # counted before get_commands() too
    r.get_commands()
    assert r.pending_bytes() == 3


# ---------------------------------------------------------------- the hiredis fast path


def test_hiredis_path_does_not_parse_per_command_in_python(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = 0
    real = reader_mod._RespParser._parse_frame

    def counting(self: reader_mod._RespParser) -> list[bytes] | None:
        nonlocal calls
        calls += 1
        return real(self)

    monkeypatch.setattr(reader_mod._RespParser, "_parse_frame", counting)
    data = b"".join(enc(b"XADD", b"s", b"*", b"f", b"%d" % i) for i in range(5000))
    r = HiredisRequestReader()
    got = 0
    for i in range(0, len(data), 16384):
        r.feed(data[i : i + 16384])
        got += len(r.get_commands())
    assert got == 5000
    # At most the frame split by each feed (plus its completion) goes through Python.
    assert calls <= 2 * (len(data) // 16384 + 1)


def test_hiredis_path_with_suspect_bytes_in_payloads() -> None:
    # '+', '=', '(' , '~', '|' in payloads force the per-frame check, which must accept.
    argv = [b"XADD", b"s", b"*", b"b64", b"aGVsbG8+d29ybGQ=", b"t", b"(x)|~y", b"\r\n+OK"]
    data = enc(*argv) * 300
    for r in (HiredisRequestReader(), PythonRequestReader()):
        got = []
        for i in range(0, len(data), 1000):
            r.feed(data[i : i + 1000])
            got += r.get_commands()
        assert got == [argv] * 300


def test_hiredis_reader_recovers_after_fallback() -> None:
    r = HiredisRequestReader()
    r.feed(b"*1\rX$1\r\na\r\n" + enc(b"B") * 10 + b"PING\r\n" + enc(b"C") * 10)
    assert r.get_commands() == [[b"a"]] + [[b"B"]] * 10 + [[b"PING"]] + [[b"C"]] * 10
    r.feed(enc(b"D") * 10)
    assert r.get_commands() == [[b"D"]] * 10


def test_array_split_between_elements() -> None:
    # hiredis's has_data() is false here although it holds half an array.
    for impl in IMPLS:
        r = impl()
        r.feed(b"*2\r\n$1\r\na\r\n")
        assert r.get_commands() == []
        r.feed(b"$1\r\nb\r\n" + enc(b"c"))
        assert r.get_commands() == [[b"a", b"b"], [b"c"]]


def test_direct_size_bound_cannot_be_fooled() -> None:
    """direct() accepts a read once the frames' size, counting one length digit per argument,
    reaches the read's. A '+' element (3 bytes shorter than that count) and three arguments of
    10 bytes (one longer each) add up to exactly the read here: the check of the type bytes
    must still refuse it, and parse() give Redis's error."""
    ten = b"0123456789"
    data = b"*4\r\n+a\r\n" + b"$10\r\n" + ten + b"\r\n" + b"$10\r\n" + ten + b"\r\n" + \
        b"$10\r\n" + ten + b"\r\n"
    bound = 3 + len(b"4") + (1 + 6) + 3 * (10 + 6)
    assert bound == len(data)
    reader = HiredisRequestReader()
    assert reader.direct(data) is None
    with pytest.raises(ProtocolError, match="expected '\\$', got '\\+'"):
        reader.parse(data)


@pytest.mark.parametrize("args", [
    [b"XADD", b"s", b"*", b"f", b"v"],  # every argument under 10 bytes: the bound is exact
    [b"XACK", b"s", b"g", b"1700000000000-0", b"1700000000000-1"],  # longer: the exact sum
    [b"XADD", b"s", b"*", b"payload", b"x" * 200],
])
def test_direct_takes_complete_reads_and_leaves_partial_ones(args: list[bytes]) -> None:
    frame = enc(*args)
    reader = HiredisRequestReader()
    assert reader.direct(frame * 3) == [args] * 3
    # A partial frame after complete ones, cut inside an argument or between two of them
    # (where hiredis's has_data() says nothing is left): the buffer's rules take the read.
    between = frame.index(b"$", frame.index(b"$") + 1)
    for cut in (len(frame) - 1, between, 4):
        reader = HiredisRequestReader()
        assert reader.direct(frame + frame[:cut]) is None
        assert reader.parse(frame + frame[:cut]) == [args]
        assert reader.parse(frame[cut:]) == [args]
        assert reader.direct(frame) == [args]  # (its hiredis reader was replaced, not reused)


# ---------------------------------------------------------------- property tests

argv_st = st.lists(st.binary(max_size=40), min_size=1, max_size=6)
command_st = st.one_of(
    argv_st.map(lambda argv: (argv, enc(*argv))),
    st.lists(st.from_regex(rb"\A[a-zA-Z0-9_:.-]{1,8}\Z"), min_size=1, max_size=4).map(
        lambda argv: (argv, b" ".join(argv) + b"\r\n")
    ),
)


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cmds=st.lists(command_st, min_size=1, max_size=12), cuts=st.lists(st.integers(0, 10**6)))
def test_roundtrip_any_chunking(cmds: list[tuple[list[bytes], bytes]], cuts: list[int]) -> None:
    data = b"".join(wire for _, wire in cmds)
    want = [argv for argv, _ in cmds]
    for impl in IMPLS:
        r = impl()
        r.feed(data)
        assert r.get_commands() == want
        r = impl()
        got: list[list[bytes]] = []
        for chunk in split_at(data, cuts):
            r.feed(chunk)
            got += r.get_commands()
        assert got == want
        assert r.pending_bytes() == 0
        r = impl()
        got = []
        for chunk in split_at(data, cuts):
            got += r.parse(chunk)
        assert got == want
        assert r.pending_bytes() == 0


def test_parse_fast_path_rejects_other_resp_types() -> None:
    """Frames hiredis reads as bytes but Redis refuses ('+', '=' inside a request) or reads
    differently must not slip through the fast path of parse()."""
    for data in (b"*1\r\n+PING\r\n", b"*2\r\n$4\r\nECHO\r\n=5\r\ntxt:a\r\n",
                 b"*2\r\n$1\r\na\r\n+a\r\n*1\r\n$4\r\nPING\r\n"):
        fast, slow = HiredisRequestReader(), PythonRequestReader()
        slow.feed(data)
        with pytest.raises(ProtocolError) as want:
            slow.get_commands()
        with pytest.raises(ProtocolError) as got:
            fast.parse(data)
        assert str(got.value) == str(want.value)
    # '+' inside arguments (XRANGE - +) is data, and the fast path keeps it.
    assert HiredisRequestReader().parse(enc(b"XRANGE", b"s", b"-", b"+")) == [
        [b"XRANGE", b"s", b"-", b"+"]]


def test_roundtrip_one_byte_at_a_time(impl: type[RequestReader]) -> None:
    argvs = [[b"XADD", b"s", b"*", b"f\r\n", b"v" * 300], [b"PING"], [b"", b"\x00"]]
    data = b"".join(enc(*a) for a in argvs) + b"ECHO 'x y'\r\n"
    r = impl()
    got = []
    for i in range(len(data)):
        r.feed(data[i : i + 1])
        got += r.get_commands()
    assert got == argvs + [[b"ECHO", b"x y"]]


garbage_token = st.sampled_from(
    [
        b"*",
        b"$",
        b"\r\n",
        b"\r",
        b"\n",
        b"0",
        b"1",
        b"2",
        b"3",
        b"-1",
        b"10",
        b"+OK",
        b":1",
        b"~",
        b"=",
        b"(",
        b"|",
        b"%",
        b">",
        b"_",
        b"#t",
        b",",
        b"-",
        b" ",
        b'"',
        b"'",
        b"\\",
        b"\\x4",
        b"\x00",
        b"\xff",
        b"a",
        b"PING",
        b"*1\r\n$1\r\na\r\n",
        b"*2\r\n",
        b"$1\r\nx\r\n",
    ]
)
garbage_st = st.one_of(
    st.binary(max_size=200),
    st.lists(garbage_token, max_size=60).map(b"".join),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=garbage_st, cuts=st.lists(st.integers(0, 10**6), max_size=8))
def test_garbage_same_outcome_on_both_paths(data: bytes, cuts: list[int]) -> None:
    chunks = split_at(data, cuts)
    results = []
    # parse() (the server's call) takes the hiredis reader's fast path straight from the
    # chunk when nothing is buffered: it must agree with feed() + get_commands().
    for impl, via_parse in ((PythonRequestReader, False), (HiredisRequestReader, False),
                            (HiredisRequestReader, True)):
        r = impl(proto_max_bulk_len=64)
        res = outcomes(r, chunks, via_parse)
        # Call once more: a kept error surfaces, and nothing else ever escapes.
        res += outcomes(r, [b""], via_parse)
        results.append(res)
        cmds, err = flatten(res)
        assert all(isinstance(c, list) and c for c in cmds)
        assert all(type(a) is bytes for c in cmds for a in c)
        assert err is None or err.startswith("ERR Protocol error: ")
    assert results[0] == results[1] == results[2]


@settings(max_examples=100, deadline=None)
@given(data=garbage_st)
def test_garbage_whole_equals_bytewise_when_valid(data: bytes) -> None:
    """Without an error, the commands do not depend on how the bytes were split
    (limits aside, which this input is far below)."""
    for impl in IMPLS:
        whole = flatten(outcomes(impl(), [data, b""]))
        bytewise = flatten(outcomes(impl(), [data[i : i + 1] for i in range(len(data))] + [b""]))
        if whole[1] is None and bytewise[1] is None:
            assert whole[0] == bytewise[0]
