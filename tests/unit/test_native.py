"""The C loops (storage/_native.c) against the Python ones they stand for: the same bytes for
random stream nodes and entries, None (not a crash) for bytes that do not parse, and the
Python loops alone when XSTREAMD_PURE_PYTHON is set."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import native as resp_native
from protocol.encoder import encode_command, encode_command_python, encode_commands
from storage import native, stream_resp
from storage.stream import Stream
from storage.stream_node import enc_diff, encode_entry, node_layout
from storage.stream_seek import build_marks

pytestmark = pytest.mark.skipif(not native.available(),
                                reason="storage._native was not built (no C compiler)")
needs_c_protocol = pytest.mark.skipif(resp_native.encode_command is None,
                                      reason="protocol._native was not built (no C compiler)")

# Values of every listpack encoding: ints of each width and their edges, texts that look
# like ints but are not canonical, strings of 6-bit, 12-bit and 32-bit lengths.
_VALUES = [b"0", b"-0", b"007", b"+5", b"-1", b"127", b"128", b"-4096", b"4095", b"4096",
           b"-32768", b"32768", b"8388607", b"-8388609", b"2147483647", b"-2147483649",
           b"9223372036854775807", b"9223372036854775808", b"-9223372036854775808",
           b"-9223372036854775809", b"123456789012345678901", b"1e3", b" 1", b"", b"x" * 63,
           b"x" * 64, b"y" * 125, b"y" * 126, b"z" * 4095, b"z" * 4096, b"w" * 20000]

values = st.one_of(st.sampled_from(_VALUES), st.binary(max_size=80),
                   st.integers(-2**63, 2**63 - 1).map(lambda v: b"%d" % v))


@settings(max_examples=300, deadline=None)
@given(st.integers(-2**64, 2**64), st.integers(-2**64, 2**64),
       st.lists(values, min_size=1, max_size=6), st.booleans())
def test_append_entry_writes_encode_entry(ms_diff: int, seq_diff: int, vals: list[bytes],
                                          master_fields: bool) -> None:
    """The entry's elements, written in place of the end byte, are encode_entry's: with
    SAMEFIELDS when the names are the master entry's, for every value encoding and ID
    differences wrapped to int64 (past 2**63 both ways)."""
    fields = [item for i, value in enumerate(vals) for item in (b"f%d" % i, value)]
    names = fields[0::2] if master_fields else [b"other"]
    buf = bytearray(b"head\xff")
    count = native.append_entry(buf, ms_diff, seq_diff, fields, names, 10**9)
    body, elements = encode_entry(fields, enc_diff(ms_diff), enc_diff(seq_diff), master_fields)
    assert bytes(buf) == b"head" + body + b"\xff"
    assert count == elements


def _random_stream(rng: random.Random) -> Stream:
    """Nodes of up to 8 entries: master fields and others, deletions, IDs far apart (diffs
    of every width, and past 2**63)."""
    s = Stream()
    ms = rng.choice([1, 2**40, 2**63 - 50, 2**64 - 10**6])
    seq = 0
    for _ in range(rng.randrange(1, 60)):
        step = rng.choice([0, 1, 100, 5000, 2**20, 2**33])
        ms += step
        if ms >= 2**64:
            break
        seq = seq + 1 if not step else rng.choice([0, 0, 0, 2**64 - 100, 2**40])
        if seq >= 2**64:
            break
        kind = rng.randrange(3)
        if kind == 0:
            fields = [b"a", rng.choice(_VALUES), b"b", rng.choice(_VALUES)]
        elif kind == 1:
            fields = [b"%d" % rng.randrange(-5, 5), rng.choice(_VALUES)]
        else:
            fields = [x for i in range(rng.randrange(1, 4)) for x in (b"k%d" % i,
                                                                      rng.choice(_VALUES))]
        s.append(fields, (ms, seq), True,
                 max_bytes=0, max_entries=8)
    ids = [entry_id for entry_id, _ in s.range((0, 0), (2**64 - 1, 2**64 - 1))]
    for entry_id in rng.sample(ids, k=rng.randrange(len(ids) + 1) // 2):
        s.delete(entry_id)
    return s


@pytest.mark.parametrize("seed", range(40))
def test_encode_node_is_the_python_loop(seed: int) -> None:
    s = _random_stream(random.Random(seed))
    for key, node in s.rax.items():
        expected = stream_resp.encode_node_python(node, key)
        assert stream_resp.encode_node(node, key) == expected


@pytest.mark.parametrize("seed", range(20))
def test_encode_node_never_crashes_on_damaged_bytes(seed: int) -> None:
    """Flipped, cut and lengthened bytes: the C loop returns None or an encoding, and
    never reads past the buffer (a crash here would be the server's)."""
    rng = random.Random(seed)
    s = _random_stream(rng)
    for key, node in s.rax.items():
        names, _template, off = stream_resp.node_layout(node)
        mms, mseq = stream_resp._unpack_key(key)
        good = bytes(node.buf)
        for _ in range(200):
            bad = bytearray(good)
            how = rng.randrange(3)
            if how == 0:
                for _ in range(rng.randrange(1, 4)):
                    bad[rng.randrange(off, len(bad))] = rng.randrange(256)
            elif how == 1:
                del bad[rng.randrange(off, len(bad)):]
                bad.append(0xFF)
            else:
                bad[-1:-1] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
            done = native.encode_node(bytes(bad), off, mms, mseq, names)
            assert done is None or (type(done) is tuple and len(done) == 3)
        for off_arg in (-1, len(good), len(good) + 10):
            assert native.encode_node(good, off_arg, mms, mseq, names) is None


def test_pure_python_setting_turns_the_c_loops_off() -> None:
    code = ("from storage import native; from protocol import native as resp; "
            "print(native.available(), resp.frames_end, resp.encode_command, "
            "resp.encode_commands, resp.has_big_count, native.id_keys)")
    env = dict(os.environ, XSTREAMD_PURE_PYTHON="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "False None None None None None"


@needs_c_protocol
@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=40))
def test_encode_command_in_c_is_the_python_encoding(argv: list[bytes]) -> None:
    assert resp_native.encode_command is not None
    assert resp_native.encode_command(argv) == encode_command_python(argv)


@needs_c_protocol
@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.binary(max_size=100), max_size=12), max_size=10))
def test_encode_commands_in_c_is_each_encoding_joined(argvs: list[list[bytes]]) -> None:
    assert resp_native.encode_commands is not None
    assert resp_native.encode_commands(argvs) == b"".join(map(encode_command_python, argvs))


@needs_c_protocol
def test_encode_commands_leaves_what_is_not_bytes_to_python() -> None:
    assert resp_native.encode_commands is not None
    assert resp_native.encode_commands([[b"SET", b"k", b"v"], [b"SET", b"k", 1]]) is None
    assert resp_native.encode_commands([[b"PING"], (b"PING",)]) is None
    assert encode_commands([[b"SET", b"k", b"v"], [b"INCRBY", b"k", 2]]) == (
        encode_command_python([b"SET", b"k", b"v"]) + encode_command_python([b"INCRBY", b"k", 2]))


@needs_c_protocol
@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"*", b"1", b"0", b"9", b"12", b"1234", b"\r\n", b"$", b"x",
                                 b"*999", b"*1000", b"-"]), max_size=30).map(b"".join))
def test_has_big_count_is_the_reader_regex(data: bytes) -> None:
    from protocol.reader import _BIG_COUNT_RE

    assert resp_native.has_big_count is not None
    expected = _BIG_COUNT_RE.search(data) is not None
    assert resp_native.has_big_count(data) is expected
    assert resp_native.has_big_count(bytearray(data)) is expected


@needs_c_protocol
def test_encode_command_in_c_leaves_other_arguments_to_python() -> None:
    """Not a list, or an argument that is not exact bytes: None, and encode_command's
    Python way answers."""
    assert resp_native.encode_command is not None
    for argv in ([b"SET", "k", b"v"], [b"SELECT", 3], [bytearray(b"x")], (b"PING",)):
        assert resp_native.encode_command(argv) is None  # type: ignore[arg-type]
    mixed = [b"SELECT", "3", 7]
    assert encode_command(mixed) == b"*3\r\n$6\r\nSELECT\r\n$1\r\n3\r\n$1\r\n7\r\n"  # type: ignore[arg-type]
    big = [b"x" * 100_000, b"y" * 12_345]
    assert encode_command(big) == encode_command_python(big)


def _filled(ops: list) -> Stream:
    s = Stream()
    for fields, id_spec, now_ms, max_bytes, max_entries in ops:
        s.append(list(fields), id_spec, True, now_ms, max_bytes, max_entries)
    return s


@pytest.mark.parametrize("seed", range(30))
def test_append_builds_the_same_nodes_with_and_without_the_c_step(seed: int,
                                                                   monkeypatch) -> None:
    """Stream.append with append_entry (the size test and the entry in one C call) and with
    the Python way: the same node bytes, counts and IDs, through full nodes (by bytes and by
    entries), master fields and others, and every value encoding."""
    rng = random.Random(seed)
    ops = []
    ms = 1
    limits = rng.choice([(4096, 100), (0, 0), (300, 5), (120, 0), (4096, 3)])
    for _ in range(rng.randrange(1, 200)):
        step = rng.randrange(0, 3)
        ms += step
        names = rng.choice([[b"a"], [b"a", b"b"], [b"x", b"y", b"z"], [b"-7", b"8"]])
        fields = [x for name in names for x in (name, rng.choice(_VALUES[:24]))]
        explicit = (ms, 0) if step and rng.random() < 0.3 else None  # (above the last ID)
        ops.append((fields, explicit, ms, *limits))
    built = []
    for c_step in (True, False):
        if not c_step:
            monkeypatch.setattr("storage.stream._append_entry", None)
        s = _filled(ops)
        built.append(([(key, bytes(lp.buf)) for key, lp in s.rax.items()], s.length,
                      s.last_id, s.range((0, 0), (2**64 - 1, 2**64 - 1))))
    assert built[0] == built[1]
    assert built[0][1] == len(ops)


def test_append_entry_leaves_a_full_node_alone() -> None:
    s = Stream()
    s.append([b"f", b"v"], (1, 0))
    node = next(iter(s.rax.items()))[1]
    buf = node.buf
    before = bytes(buf)
    assert native.append_entry(buf, 0, 1, [b"f", b"x" * 100], [b"f"], len(buf) + 100) == -1
    assert bytes(buf) == before
    with pytest.raises(ValueError):
        native.append_entry(buf, 0, 1, [b"f"], [b"f"], 10**6)
    with pytest.raises(TypeError):
        native.append_entry(buf, 0, 1, [b"f", 7], [b"f"], 10**6)
    assert bytes(buf) == before
    assert native.append_entry(buf, 0, 1, [b"f", b"x"], [b"f"], 10**6) == 5  # SAMEFIELDS
    assert native.append_entry(buf, 0, 2, [b"g", b"x"], [b"f"], 10**6) == 7


_id_texts = st.one_of(
    st.builds(lambda a, b: b"%d-%d" % (a, b), st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)),
    st.sampled_from([b"0-0", b"01-2", b"1-", b"-1", b"1", b"1-2-3", b"+1-2", b"1-+2", b" 1-2",
                     b"9999999999999999999-9999999999999999999", b"18446744073709551615-0",
                     b"1-18446744073709551616", b"", b"-", b"1\x00-2", b"\xd9-1"]),
    st.binary(max_size=24),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_id_texts, max_size=12))
def test_id_keys_in_c_is_the_strict_parser(args: list[bytes]) -> None:
    """id_keys gives the keys of plain ms-seq IDs of at most 19 digits each, as the strict
    parser reads them, and None when any argument is something else (the Python parser
    then gives the keys, or the error)."""
    from server.commands.stream_args import parse_strict_id
    from server.errors import CommandError
    from storage.stream_id import id_to_key

    assert native.id_keys is not None
    keys = native.id_keys(args)
    plain = [a.partition(b"-") for a in args]
    simple = all(sep and 0 < len(ms) < 20 and 0 < len(seq) < 20 and ms.isdigit()
                 and seq.isdigit() for ms, sep, seq in plain)
    assert (keys is not None) == simple
    if keys is not None:
        assert keys == [id_to_key(parse_strict_id(a)) for a in args]
    for a in args:  # the arguments the C step leaves alone still parse (or fail) in Python
        try:
            parse_strict_id(a)
        except CommandError:
            pass


def _node_state(s: Stream) -> tuple:
    return (s.length, s.last_id, s.first_id, s.entries_added,
            [(key, bytes(lp.buf)) for key, lp in s.rax.items()],
            [(eid, fields) for eid, fields in s.range((0, 0), (2**64 - 1, 2**64 - 1))])


def _marks_are_whole(s: Stream) -> None:
    """Every node's seek marks (where it has them) are those a walk of it finds."""
    for _, node in s.rax.items():
        if node.marks is not None:
            names, _, first_off = node_layout(node)
            assert node.marks == build_marks(bytes(node.buf), first_off, len(names))


@pytest.mark.parametrize("way", ["add", "run"])
@pytest.mark.parametrize("seed", range(30))
def test_tail_appender_builds_what_append_builds(seed: int, way: str) -> None:
    """A run through Stream.tail_appender (append() taking over where it declines, as
    xadd_pipelined does) leaves the stream append() alone leaves: node bytes, counts, IDs,
    across full nodes (by bytes and by entries), master counts past 127 (no entry limit),
    a sequence that reaches 2**64-1 and clocks that stand still or step back. Both of its
    ways: add() an entry at a time, and run() (the C loop over the commands, with the
    replies, effects and durations xadd_pipelined's Python loop would give), which keeps a
    tail's seek marks whole."""
    rng = random.Random(seed)
    limits = rng.choice([(4096, 100), (0, 0), (300, 5), (120, 0), (4096, 3), (1 << 20, 0)])
    ms = rng.choice([10, 1_700_000_000_000])
    runs = []
    for _ in range(rng.randrange(1, 12)):
        run = []
        for _ in range(rng.randrange(1, 80)):
            ms += rng.choice([0, 0, 1, -1])
            names = rng.choice([[b"a"], [b"a", b"b"], [b"x", b"y", b"z"]])
            run.append(([x for name in names for x in (name, rng.choice(_VALUES[:24]))], ms))
        runs.append(run)
    by_append, by_run = Stream(), Stream()
    for s in (by_append, by_run):
        # (a first ID ahead of the clock: the run's IDs count up its sequence, past 2**64-1)
        s.append([b"a", b"first"], (ms + 20, 2**64 - 30 if seed % 3 == 0 else 0), True, ms,
                 *limits)
    for run in runs:
        ids = [by_append.append(list(fields), None, True, now_ms, *limits)
               for fields, now_ms in run]
        tail = by_run._load_tail()
        if tail is not None and rng.random() < 0.7:  # (as a seek into the tail leaves it)
            names, _, first_off = node_layout(tail)
            tail.marks = build_marks(bytes(tail.buf), first_off, len(names))
        if way == "add":
            _add_one_by_one(by_run, run, limits)
        else:
            _run_in_c(by_run, run, limits, ids)
        assert _node_state(by_run) == _node_state(by_append)
        _marks_are_whole(by_run)
    by_run.rax.verify()


def _add_one_by_one(s: Stream, run: list[tuple[list[bytes], int]], limits: tuple) -> None:
    appender = s.tail_appender(*limits)
    add, done = appender[:2] if appender is not None else (None, None)
    for fields, now_ms in run:
        new = None if add is None else add(list(fields), now_ms)
        if new is None:
            if done is not None:
                done()
                add = done = None
            s.append(list(fields), None, True, now_ms, *limits)
            appender = s.tail_appender(*limits)
            if appender is not None:
                add, done = appender[:2]
    if done is not None:
        done()


def _run_in_c(s: Stream, run: list[tuple[list[bytes], int]], limits: tuple,
              ids: list[tuple[int, int]]) -> None:
    """xadd_pipelined's loop: run() where it goes, add() / append() for the command it
    stops before. Its clock steps 1 us into each command's millisecond (the run's clock
    reading after a command is the next one's start); every 5th command is notable."""
    commands = [[b"XADD", b"s", b"*", *fields] for fields, _ in run]
    starts = [now_ms * 1_000_000 + 1000 * (k % 7) for k, (_, now_ms) in enumerate(run)]
    readings = iter([*starts[1:], starts[-1] + 5000])
    recent: list[int] = []
    effects: list[list[bytes]] = []
    out: list[bytes] = []
    slow: list[tuple[int, bytes]] = []
    appender = s.tail_appender(*limits)
    add, done, run_c = appender if appender is not None else (None, None, None)
    j = 0
    now = starts[0]
    while j < len(commands):
        if run_c is not None:
            j, now, start, slow_us, slow_id = run_c(
                commands, j, b"s", b"XADD", now, readings.__next__, recent,
                999_999 if j % 5 else 0, effects, out)
            assert start == starts[j - 1] or start == now
            if slow_id is not None:
                slow.append((slow_us, slow_id))
                continue
            if j == len(commands):
                break
        fields = commands[j][3:]
        new = None if add is None else add(list(fields), now // 1_000_000)
        if new is None:
            if done is not None:
                done()
                add = done = None
            new = s.append(list(fields), None, True, now // 1_000_000, *limits)
            appender = s.tail_appender(*limits)
            if appender is not None:
                add, done, run_c = appender
        id_bytes = b"%d-%d" % new
        effects.append([b"XADD", b"s", id_bytes, *fields])
        out.append(b"$%d\r\n%s\r\n" % (len(id_bytes), id_bytes))
        later = readings.__next__()
        recent.append((later - now) // 1000)
        now = later
        j += 1
    if done is not None:
        done()
    id_texts = [b"%d-%d" % new_id for new_id in ids]
    assert b"".join(out) == b"".join(b"$%d\r\n%s\r\n" % (len(t), t) for t in id_texts)
    assert effects == [[b"XADD", b"s", t, *fields] for t, (fields, _) in zip(id_texts, run,
                                                                              strict=True)]
    ends = [*starts[1:], starts[-1] + 5000]
    durations = [(b - a) // 1000 for a, b in zip(starts, ends, strict=True)]
    assert recent == durations
    assert all(slow_id in id_texts and slow_us in durations for slow_us, slow_id in slow)
