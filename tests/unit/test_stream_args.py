"""Shared stream argument parsing (server/commands/stream_args.py) and, in process, the exact
effects the stream commands propagate (what the AOF records)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.encoder import ErrorReply
from server.app import Server
from server.client import Client
from server.commands import stream_args as sa
from server.config import Config
from server.dispatch import execute
from server.errors import CommandError
from storage.stream import Stream

U64 = 2**64 - 1


def b(*args: str) -> list[bytes]:
    return [a.encode() for a in args]


def err(fn, *args) -> str:
    with pytest.raises(CommandError) as info:
        fn(*args)
    return info.value.message


# -- trim options -------------------------------------------------------------------------------
def test_xadd_options_fast_path() -> None:
    args = sa.parse_trim_args(b("XADD", "s", "*", "f", "v"), True, 100)
    assert (args.strategy, args.id_pos, args.id_spec, args.seq_given) == (None, 2, None, True)
    assert args.policy == sa.KEEPREF and not args.nomkstream


def test_xadd_options_all() -> None:
    args = sa.parse_trim_args(
        b("XADD", "s", "nomkstream", "DELREF", "maxlen", "~", "10", "LIMIT", "5", "7-*", "f", "v"),
        True, 100)
    assert args.strategy == sa.MAXLEN and args.maxlen == 10 and args.approx
    assert args.limit == 5 and args.limit_given and args.nomkstream
    assert args.policy == sa.DELREF
    assert args.id_pos == 9 and args.id_spec == (7, 0) and args.seq_given is False


def test_approx_default_limit_is_100_nodes() -> None:
    args = sa.parse_trim_args(b("XTRIM", "s", "MINID", "~", "5"), False, 7)
    assert args.strategy == sa.MINID and args.minid == (5, 0) and args.limit == 700
    exact = sa.parse_trim_args(b("XTRIM", "s", "MAXLEN", "=", "5"), False, 7)
    assert exact.limit == 0 and not exact.approx


def test_last_policy_wins_and_equal_sign_optional() -> None:
    args = sa.parse_trim_args(b("XTRIM", "s", "MAXLEN", "3", "acked", "keepref"), False, 100)
    assert args.policy == sa.KEEPREF and args.maxlen == 3 and not args.approx


@pytest.mark.parametrize(("argv", "xadd", "message"), [
    (("XTRIM", "s", "foo", "1"), False, sa.SYNTAX),
    (("XTRIM", "s", "MAXLEN", "-1"), False, sa.ERR_MAXLEN_NEGATIVE),
    (("XTRIM", "s", "MAXLEN", "x"), False, "ERR value is not an integer or out of range"),
    (("XTRIM", "s", "MAXLEN", "1", "LIMIT", "10"), False, sa.ERR_LIMIT_NO_APPROX),
    (("XTRIM", "s", "MAXLEN", "~", "1", "LIMIT", "-1"), False, sa.ERR_LIMIT_NEGATIVE),
    (("XTRIM", "s", "LIMIT", "10"), False, sa.ERR_LIMIT_NO_STRATEGY),
    (("XTRIM", "s", "KEEPREF"), False, sa.ERR_XTRIM_NO_STRATEGY),
    (("XTRIM", "s", "MAXLEN", "1", "MINID", "1"), False, sa.ERR_MAXLEN_MINID),
    (("XTRIM", "s", "MINID", "+"), False, sa.INVALID_ID_MSG),
    (("XTRIM", "s", "MAXLEN"), False, sa.SYNTAX),
    (("XADD", "s", "MAXLEN"), True, sa.INVALID_ID_MSG),
    (("XADD", "s", "foo", "f", "v"), True, sa.INVALID_ID_MSG),
    (("XADD", "s", "LIMIT", "5", "foo", "f", "v"), True, sa.INVALID_ID_MSG),  # ID error first
    (("XADD", "s", "LIMIT", "5", "*", "f", "v"), True, sa.ERR_LIMIT_NO_STRATEGY),
    (("XADD", "s", "+", "f", "v"), True, sa.INVALID_ID_MSG),
])
def test_trim_option_errors(argv: tuple[str, ...], xadd: bool, message: str) -> None:
    assert err(sa.parse_trim_args, b(*argv), xadd, 100) == message


# -- XDELEX / XACKDEL IDS block ------------------------------------------------------------------
def test_del_args() -> None:
    assert sa.parse_del_args(b("XDELEX", "s", "IDS", "2", "1-1", "2"), 2) == (
        sa.KEEPREF, [(1, 1), (2, 0)])
    assert sa.parse_del_args(b("XDELEX", "s", "ids", "1", "1-1", "acked"), 2) == (
        sa.ACKED, [(1, 1)])


@pytest.mark.parametrize(("tail", "message"), [
    (("IDS", "abc", "1-1"), sa.ERR_NUMIDS_POSITIVE),
    (("IDS", "0", "1-1"), sa.ERR_NUMIDS_POSITIVE),
    (("IDS", "-5", "1-1"), sa.ERR_NUMIDS_POSITIVE),
    (("IDS", "3", "1-1", "2-2"), sa.ERR_NUMIDS_MISMATCH),
    (("IDS", "1", "1-1", "2-2"), sa.SYNTAX),
    (("KEEPREF", "DELREF", "IDS", "1", "1-1"), sa.SYNTAX),
    (("BOGUS", "IDS", "1", "1-1"), sa.SYNTAX),
    (("KEEPREF", "x", "y"), sa.SYNTAX),
    (("KEEPREF",), sa.ERR_IDS_REQUIRED),
    (("IDS", "1", "+"), sa.INVALID_ID_MSG),
])
def test_del_args_errors(tail: tuple[str, ...], message: str) -> None:
    assert err(sa.parse_del_args, b("XDELEX", "s", *tail), 2) == message


# -- integers and IDs------------------------------------------------------------------------------
def test_block_timeout() -> None:
    assert sa.parse_block_timeout(b"0", 1000) == 0
    assert sa.parse_block_timeout(b"1500", 1000) == 1500
    assert err(sa.parse_block_timeout, b"-1", 0) == "ERR timeout is negative"
    assert err(sa.parse_block_timeout, b"1.5", 0) == "ERR timeout is not an integer or out of range"
    assert err(sa.parse_block_timeout, b"abc", 0) == "ERR timeout is not an integer or out of range"
    assert err(sa.parse_block_timeout, b"9223372036854775000", 10**6) == (
        "ERR timeout is out of range")


def test_count_and_ranges() -> None:
    assert sa.parse_count(b"-3") == 0 and sa.parse_count(b"7") == 7
    assert sa.parse_range(b"-", b"+") == ((0, 0), (U64, U64))
    assert sa.parse_range(b"5", b"6") == ((5, 0), (6, U64))
    assert sa.parse_range(b"(5-1", b"(6-0") == ((5, 2), (5, U64))
    assert err(sa.parse_range, b"(-", b"+") == sa.INVALID_ID_MSG
    assert err(sa.parse_range, b"(%d-%d" % (U64, U64), b"+") == (
        "ERR invalid start ID for the interval")
    assert err(sa.parse_range, b"-", b"(0-0") == "ERR invalid end ID for the interval"
    assert sa.parse_loose_id(b"+") == (U64, U64)
    assert err(sa.parse_strict_id, b"-") == sa.INVALID_ID_MSG


@settings(max_examples=200, deadline=None)
@given(st.integers(0, U64), st.integers(0, U64))
def test_strict_id_round_trip(ms: int, seq: int) -> None:
    text = b"%d-%d" % (ms, seq)
    assert sa.parse_strict_id(text) == (ms, seq)
    assert sa.format_entry(((ms, seq), [b"f", b"v"])) == [text, [b"f", b"v"]]


def test_policy_of() -> None:
    assert sa.policy_of(b"KeepRef") == sa.KEEPREF
    assert sa.policy_of(b"ACKED") == sa.ACKED
    assert sa.policy_of(b"delrefs") is None


# -- reference hooks-------------------------------------------------------------------------------
class FakeHooks:
    def __init__(self, referenced: set[tuple[int, int]]) -> None:
        self.referenced = referenced
        self.dropped: list[tuple[int, int]] = []

    def is_referenced(self, stream: Stream, entry_id: tuple[int, int]) -> bool:
        return entry_id in self.referenced

    def drop_refs(self, stream: Stream, entry_id: tuple[int, int]) -> bool:
        self.dropped.append(entry_id)
        return entry_id in self.referenced


@pytest.fixture
def hooks() -> Iterator[FakeHooks]:
    fake = FakeHooks({(2, 0)})
    sa.register_ref_hooks(fake)
    yield fake
    sa.register_ref_hooks(None)


def _stream(n: int, with_groups: bool) -> Stream:
    s = Stream()
    for i in range(1, n + 1):
        s.append([b"f", b"%d" % i], (i, 0))
    if with_groups:
        s.cgroups = object()  # type: ignore[assignment] - only "not None" matters here
    return s


def test_policies_act_as_keepref_without_groups(hooks: FakeHooks) -> None:
    s = _stream(3, with_groups=False)
    assert sa.delete_with_policy(s, (2, 0), sa.ACKED) == sa.DEL_DELETED
    assert sa.delete_with_policy(s, (9, 0), sa.DELREF) == sa.DEL_NO_ID
    assert hooks.dropped == []


def test_policies_with_groups(hooks: FakeHooks) -> None:
    s = _stream(4, with_groups=True)
    assert sa.delete_with_policy(s, (2, 0), sa.ACKED) == sa.DEL_REFERENCED
    assert sa.delete_with_policy(s, (1, 0), sa.ACKED) == sa.DEL_DELETED
    assert sa.delete_with_policy(s, (9, 0), sa.DELREF) == sa.DEL_NO_ID
    assert hooks.dropped == [(9, 0)]  # DELREF drops references even of missing entries
    args = sa.parse_trim_args(b("XTRIM", "s", "MAXLEN", "0", "ACKED"), False, 100)
    assert sa.apply_trim(s, args) == 2  # 3 and 4 go, 2 is still referenced
    assert [eid for eid, _ in s.range((0, 0), (U64, U64))] == [(2, 0)]
    args = sa.parse_trim_args(b("XTRIM", "s", "MAXLEN", "0", "DELREF"), False, 100)
    assert sa.apply_trim(s, args) == 1 and (2, 0) in hooks.dropped


def test_trim_effect_args() -> None:
    s = _stream(250, with_groups=False)
    exact = sa.parse_trim_args(b("XTRIM", "s", "MAXLEN", "10"), False, 100)
    assert sa.trim_effect_args(s, exact) == [b"MAXLEN", b"=", b"10"]
    approx = sa.parse_trim_args(b("XTRIM", "s", "MAXLEN", "~", "10", "DELREF"), False, 100)
    assert sa.apply_trim(s, approx) == 200  # two whole nodes of 100
    assert sa.trim_effect_args(s, approx) == [b"MAXLEN", b"=", b"50", b"DELREF"]
    minid = sa.parse_trim_args(b("XTRIM", "s", "MINID", "~", "230"), False, 100)
    assert sa.apply_trim(s, minid) == 0  # the node holding 201..250 is not wholly below
    assert sa.trim_effect_args(s, minid) == [b"MINID", b"=", b"201-0"]


# -- the effects the commands propagate------------------------------------------------------------
@pytest.fixture
def local() -> Iterator[tuple[Client, list[list[bytes]]]]:
    server = Server(Config())
    recorded: list[list[bytes]] = []
    server.propagate_hooks.append(lambda db, argv: recorded.append(argv))
    yield Client(1, server, None), recorded


def run(client: Client, *args: str) -> object:
    return execute(client, b(*args))


def test_xadd_propagates_concrete_id_and_exact_trim(local) -> None:
    client, recorded = local
    reply = run(client, "XADD", "s", "*", "f", "v")
    assert isinstance(reply, bytes) and recorded == [[b"XADD", b"s", reply, b"f", b"v"]]
    recorded.clear()
    run(client, "XADD", "u", "5-5", "f", "v")
    assert run(client, "XADD", "u", "5-*", "f", "v") == b"5-6"
    assert recorded[-1] == [b"XADD", b"u", b"5-6", b"f", b"v"]
    for i in range(300):
        run(client, "XADD", "t", f"{i + 1}-1", "f", "v")
    recorded.clear()
    assert run(client, "XADD", "t", "NOMKSTREAM", "MAXLEN", "~", "150", "LIMIT", "1000",
               "301-1", "f", "v") == b"301-1"
    assert recorded == [[b"XADD", b"t", b"MAXLEN", b"=", b"201", b"301-1", b"f", b"v"]]
    recorded.clear()
    run(client, "XADD", "t", "ACKED", "MINID", "250", "302-1", "f", "v")
    assert recorded == [[b"XADD", b"t", b"MINID", b"=", b"250-0", b"ACKED", b"302-1", b"f", b"v"]]


def test_writes_propagate_only_effects(local) -> None:
    client, recorded = local
    for i in range(1, 6):
        run(client, "XADD", "s", f"{i}-0", "f", "v")
    recorded.clear()
    assert run(client, "XDEL", "s", "9-0") == 0
    assert run(client, "XTRIM", "s", "MAXLEN", "10") == 0
    assert run(client, "XDELEX", "s", "IDS", "1", "9-0") == [-1]
    assert recorded == []  # nothing changed, nothing logged
    assert run(client, "XDEL", "s", "1-0", "9-0") == 1
    assert run(client, "XTRIM", "s", "MINID", "3") == 1
    assert run(client, "XDELEX", "s", "IDS", "1", "3-0") == [1]
    assert run(client, "XSETID", "s", "7-0", "ENTRIESADDED", "9") is not None
    assert recorded == [
        [b"XDEL", b"s", b"1-0", b"9-0"],
        [b"XTRIM", b"s", b"MINID", b"=", b"3-0"],
        [b"XDELEX", b"s", b"IDS", b"1", b"3-0"],
        [b"XSETID", b"s", b"7-0", b"ENTRIESADDED", b"9"],
    ]


def test_failed_xadd_propagates_nothing(local) -> None:
    client, recorded = local
    assert isinstance(run(client, "XADD", "s", "0-0", "f", "v"), ErrorReply)
    assert run(client, "XADD", "s", "NOMKSTREAM", "*", "f", "v") is None
    assert recorded == [] and client.db.get(b"s") is None
