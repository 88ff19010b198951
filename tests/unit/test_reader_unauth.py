"""The reader's unauthenticated mode: Redis's stricter frame limits and one command a call."""

from __future__ import annotations

import pytest

from protocol.errors import UNAUTH_BULK_LEN, UNAUTH_MULTIBULK_LEN
from protocol.reader import ProtocolError, make_reader


def frame(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


@pytest.fixture(params=[True, False], ids=["hiredis", "python"])
def reader(request: pytest.FixtureRequest):
    r = make_reader(use_hiredis=request.param)
    r.unauthenticated = True
    return r


def test_multibulk_over_ten_is_refused(reader) -> None:
    reader.feed(b"*11\r\n")
    with pytest.raises(ProtocolError) as err:
        reader.get_commands()
    assert str(err.value) == UNAUTH_MULTIBULK_LEN
    assert err.value.reply == b"-ERR Protocol error: unauthenticated multibulk length\r\n"


def test_ten_arguments_and_16k_bulk_are_allowed(reader) -> None:
    reader.feed(frame(*[b"a"] * 10) + frame(b"x" * 16384))
    assert reader.get_commands() == [[b"a"] * 10]
    assert reader.get_commands() == [[b"x" * 16384]]
    assert reader.get_commands() == []


def test_bulk_over_16k_is_refused(reader) -> None:
    reader.feed(b"*1\r\n$16385\r\n")
    with pytest.raises(ProtocolError) as err:
        reader.get_commands()
    assert str(err.value) == UNAUTH_BULK_LEN


def test_invalid_length_wins_over_unauthenticated(reader) -> None:
    reader.feed(b"*1\r\n$-1\r\n")
    with pytest.raises(ProtocolError) as err:
        reader.get_commands()
    assert str(err.value) == "ERR Protocol error: invalid bulk length"


def test_one_command_per_call_then_limits_lifted(reader) -> None:
    """AUTH followed by a big command in the same packet: the second frame is only parsed
    after the server had the chance to lift the limits."""
    big = frame(b"XADD", b"s", b"*", *[b"f"] * 20)
    reader.feed(frame(b"AUTH", b"pw") + big)
    assert reader.get_commands() == [[b"AUTH", b"pw"]]
    reader.unauthenticated = False
    assert reader.get_commands() == [[b"XADD", b"s", b"*", *[b"f"] * 20]]


def test_error_after_a_command_is_kept_for_the_next_call(reader) -> None:
    reader.feed(frame(b"PING") + b"*11\r\n")
    assert reader.get_commands() == [[b"PING"]]
    with pytest.raises(ProtocolError):
        reader.get_commands()
    assert reader.error is not None


def test_many_small_commands_come_out_in_order(reader) -> None:
    commands = [[b"PING", str(i).encode()] for i in range(5000)]
    reader.feed(b"".join(frame(*c) for c in commands) + b"*2\r\n$4\r\nPI")
    got = []
    while batch := reader.get_commands():
        assert len(batch) == 1
        got += batch
    assert got == commands
    assert reader.pending_bytes() == len(b"PI")  # the headers are read already
    reader.feed(b"NG\r\n$1\r\nz\r\n")
    assert reader.get_commands() == [[b"PING", b"z"]]


def test_inline_commands_are_not_limited(reader) -> None:
    reader.feed(b" ".join([b"a"] * 20) + b"\r\nPING\r\n")
    assert reader.get_commands() == [[b"a"] * 20]
    assert reader.get_commands() == [[b"PING"]]
