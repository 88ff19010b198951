"""Unit and property tests for storage.stream (+ stream_node, stream_iter, stream_trim)."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.listpack import HEADER_SIZE, Listpack, decode_element
from storage.stream import (
    MSG_EXHAUSTED,
    MSG_ID_TOO_SMALL,
    MSG_ID_ZERO,
    MSG_TOO_LARGE,
    Stream,
    StreamError,
    StreamIDError,
)
from storage.stream_id import (
    MAX_ID,
    MIN_ID,
    UINT64_MAX,
    format_id,
    id_to_key,
    incr_id,
    key_to_id,
)
from storage.stream_node import (
    FLAG_DELETED,
    FLAG_SAMEFIELDS,
    MAX_NODE_BYTES,
    StreamCorruption,
    StreamNode,
    check_node,
    locate_entry,
    master_info,
    node_layout,
    read_master,
)
from storage.stream_seek import MARK_EVERY, build_marks

F3 = [b"sensor", b"7", b"temp", b"21.5", b"site", b"lab-a"]


def live_entries(s: Stream) -> list[tuple[tuple[int, int], list[bytes]]]:
    return s.range(MIN_ID, MAX_ID)


def check_invariants(s: Stream) -> None:
    """Every node valid; no empty nodes; counts, length, first_id and the tail cache agree."""
    total = 0
    prev_last = None
    keys = list(s.rax.keys())
    assert keys == sorted(keys)
    for master, lp in s.nodes():
        info = check_node(master, lp)  # validates listpack + layout + count/deleted
        assert info.count > 0, "empty node kept"
        assert info.ids[0] == master
        if prev_last is not None:
            assert info.ids[0] > prev_last
        prev_last = info.ids[-1]
        assert prev_last <= s.last_id
        total += info.count
    assert total == s.length == len(s)
    ids = [e[0] for e in live_entries(s)]
    assert len(ids) == s.length
    assert s.first_id == (ids[0] if ids else MIN_ID)
    assert s.first_entry_id() == (ids[0] if ids else None)
    assert s.last_entry_id() == (ids[-1] if ids else None)
    assert s.node_count() == len(s.rax)
    if s._tail is not None:
        key, lp = s.rax.last()  # type: ignore[misc]
        assert lp is s._tail
        count, deleted, names, _ = read_master(lp.buf)
        assert (s._tail_count, s._tail_total) == (count, count + deleted)
        assert s._tail_master == key_to_id(key) and s._tail_names == names
        assert s._tail_field == (names[0] if len(names) == 1 else None)
        assert s._tail_key == key
    for _, lp in s.nodes():
        assert isinstance(lp, StreamNode)
        count, deleted, names, first_off = read_master(lp.buf)
        assert node_layout(lp) == (names, master_info(names, 0)[1], first_off)
        if lp.marks is not None:  # complete whenever present
            assert lp.marks == build_marks(lp.buf, first_off, len(names))


def elements(lp: Listpack) -> list[bytes | int]:
    return list(lp)


# --- appending and IDs ----------------------------------------------------------------


def test_empty_stream() -> None:
    s = Stream()
    assert s.length == 0 and s.last_id == MIN_ID and s.first_id == MIN_ID
    assert s.max_deleted_entry_id == MIN_ID and s.entries_added == 0
    assert s.cgroups is None and s.cgroups_ref is None
    assert s.range(MIN_ID, MAX_ID) == [] and s.range(MIN_ID, MAX_ID, rev=True) == []
    assert s.first_entry_id() is None and s.last_entry_id() is None
    assert s.get((1, 1)) is None and s.delete((1, 1)) is False
    assert s.trim("maxlen", 0) == 0 and s.trim("minid", MAX_ID) == 0
    assert s.node_count() == 0
    check_invariants(s)


def test_auto_ids() -> None:
    s = Stream()
    assert s.append(F3, now_ms=1000) == (1000, 0)
    assert s.append(F3, now_ms=1000) == (1000, 1)
    assert s.append(F3, now_ms=999) == (1000, 2)  # clock went back: never go backwards
    assert s.append(F3, now_ms=1001) == (1001, 0)
    assert s.append(F3) > (1001, 0)  # wall clock
    assert s.entries_added == 5 and s.length == 5 and s.first_id == (1000, 0)
    check_invariants(s)


def test_auto_id_seq_rollover() -> None:
    s = Stream()
    s.append(F3, (5, UINT64_MAX))
    assert s.append(F3, now_ms=3) == (6, 0)  # streamIncrID carries into ms


def test_ms_star_ids() -> None:
    s = Stream()
    assert s.append(F3, (0, 0), seq_given=False) == (0, 1)  # as Redis: 0-* on empty is 0-1
    assert s.append(F3, (0, 0), seq_given=False) == (0, 2)
    assert s.append(F3, (5, 0), seq_given=False) == (5, 0)
    with pytest.raises(StreamIDError) as exc:
        s.append(F3, (3, 0), seq_given=False)
    assert str(exc.value) == MSG_ID_TOO_SMALL
    s.append(F3, (7, UINT64_MAX))
    with pytest.raises(StreamIDError, match="equal or smaller"):
        s.append(F3, (7, 0), seq_given=False)  # seq would overflow


def test_explicit_ids_and_errors() -> None:
    s = Stream()
    with pytest.raises(StreamIDError) as exc:
        s.append(F3, (0, 0))
    assert str(exc.value) == MSG_ID_ZERO
    assert s.length == 0 and s.node_count() == 0
    assert s.append(F3, (0, 1)) == (0, 1)
    with pytest.raises(StreamIDError) as exc:
        s.append(F3, (0, 1))
    assert str(exc.value) == MSG_ID_TOO_SMALL
    assert s.append(F3, MAX_ID) == MAX_ID
    for spec, given_seq in ((None, True), ((1, 1), True), (MAX_ID, False)):
        with pytest.raises(StreamIDError) as exc:
            s.append(F3, spec, seq_given=given_seq)
        assert str(exc.value) == MSG_EXHAUSTED
    with pytest.raises(StreamIDError) as exc:
        s.append(F3, (0, 0))  # 0-0 is reported before exhaustion, as xaddCommand
    assert str(exc.value) == MSG_ID_ZERO
    assert s.entries_added == 2
    check_invariants(s)


def test_next_id_matches_append() -> None:
    s = Stream()
    s.append(F3, (10, 5))
    assert s.next_id(None, now_ms=4) == (10, 6)
    assert s.next_id((10, 0), seq_given=False) == (10, 6)
    assert s.next_id((11, 9)) == (11, 9)
    assert s.length == 1


def test_bad_fields() -> None:
    s = Stream()
    for fields in ([], [b"a"], [b"a", b"1", b"b"]):
        with pytest.raises(ValueError):
            s.append(fields)  # type: ignore[arg-type]
    assert s.length == 0
    # The same refused when a tail node exists, whatever its field names.
    for names in ([b"a"], [b"a", b"b"]):
        s = Stream()
        s.append([x for name in names for x in (name, b"1")])
        for fields in ([], [b"a"], [b"a", b"1", b"b"], [b"a", b"1", b"a"]):
            with pytest.raises(ValueError):
                s.append(fields)  # type: ignore[arg-type]
        assert s.length == 1
        check_invariants(s)


def test_too_large(monkeypatch: pytest.MonkeyPatch) -> None:
    import storage.stream as stream_mod

    monkeypatch.setattr(stream_mod, "MAX_NODE_BYTES", 10)
    s = Stream()
    with pytest.raises(StreamError) as exc:
        s.append([b"field", b"value!"])
    assert str(exc.value) == MSG_TOO_LARGE
    assert s.length == 0 and s.last_id == MIN_ID


def test_duplicate_fields_and_order_kept() -> None:
    s = Stream()
    f = [b"a", b"1", b"a", b"2", b"b", b"x"]
    eid = s.append(f, (1, 1))
    assert s.get(eid) == f
    assert s.range(MIN_ID, MAX_ID) == [(eid, f)]


def test_values_roundtrip_as_bytes() -> None:
    s = Stream()
    values = [
        b"0",
        b"-1",
        b"127",
        b"128",
        b"-4096",
        b"4096",
        b"9223372036854775807",
        b"-9223372036854775808",
        b"9223372036854775808",
        b"007",
        b"-0",
        b"",
        b"x" * 63,
        b"y" * 64,
        b"z" * 4095,
        b"w" * 4096,
        b"3.14",
        b"\x00\xff",
    ]
    fields = [v for i, val in enumerate(values) for v in (b"f%d" % i, val)]
    eid = s.append(fields, (1, 0))
    s.append([b"12", b"34"], (2, 0))
    assert s.get(eid) == fields
    assert s.get((2, 0)) == [b"12", b"34"]
    assert s.range(MIN_ID, MAX_ID, rev=True)[1] == (eid, fields)
    check_invariants(s)


def test_integer_values_of_every_encoding_read_back_in_order() -> None:
    """Entries with the master's fields (SAMEFIELDS) whose values take every listpack integer
    encoding, at its bounds: forward and backward reads, in both shapes, give the text back."""
    values = [b"%d" % v for v in (
        0, 127, 128, 4095, -4096, 4096, -4097, 32767, -32768, 32768, -32769,
        8388607, -8388608, 8388608, -8388609, 2147483647, -2147483648, 2147483648,
        9223372036854775807, -9223372036854775808)]
    s = Stream()
    for i, value in enumerate(values):
        s.append([b"n", value, b"s", b"x"], (1, i))
    expected = [((1, i), [b"n", v, b"s", b"x"]) for i, v in enumerate(values)]
    assert s.range(MIN_ID, MAX_ID) == expected
    assert s.range(MIN_ID, MAX_ID, rev=True) == expected[::-1]
    assert s.range_reply(MIN_ID, MAX_ID) == [[b"1-%d" % i, f] for (_, i), f in expected]
    check_invariants(s)


# --- node layout --------------------------------------------------------------------


def test_raw_layout_element_by_element() -> None:
    s = Stream()
    s.append([b"a", b"1", b"b", b"hello"], (100, 5))
    s.append([b"a", b"2", b"b", b"x"], (100, 6))  # same fields -> SAMEFIELDS
    s.append([b"c", b"zz"], (105, 0))  # different fields, seq diff 0 - 5 = -5
    s.append([b"b", b"1", b"a", b"2"], (105, 3))  # same names, other order -> not SAMEFIELDS
    [(master, lp)] = list(s.nodes())
    assert master == (100, 5)
    assert list(s.rax.keys()) == [id_to_key((100, 5))]
    assert elements(lp) == [
        # master entry: count, deleted, num-fields, names, 0
        4,
        0,
        2,
        b"a",
        b"b",
        0,
        # flags, ms-diff, seq-diff, values, lp-count (3 + 2)
        FLAG_SAMEFIELDS,
        0,
        0,
        1,
        b"hello",
        5,
        FLAG_SAMEFIELDS,
        0,
        1,
        2,
        b"x",
        5,
        # flags, ms-diff, seq-diff, num-fields, field, value, lp-count (4 + 2*1)
        0,
        5,
        -5,
        1,
        b"c",
        b"zz",
        6,
        0,
        5,
        -2,
        2,
        b"b",
        1,
        b"a",
        2,
        8,
    ]
    # Decode the raw bytes element by element too: the header and the encodings.
    buf = lp.buf
    assert int.from_bytes(buf[0:4], "little") == len(buf)
    assert int.from_bytes(buf[4:6], "little") == len(elements(lp))
    assert buf[-1] == 0xFF
    assert buf[HEADER_SIZE : HEADER_SIZE + 2] == b"\x04\x01"  # 7-bit uint 4, backlen 1
    off = HEADER_SIZE
    seen = []
    while off < len(buf) - 1:
        v, off = decode_element(buf, off)
        seen.append(v)
    assert seen == elements(lp)
    # The -5 seq-diff is a 13-bit int: 110xxxxx yyyyyyyy, then backlen 2.
    assert bytes.fromhex("dffb02") in bytes(buf)

    s.delete((100, 6))
    assert elements(lp)[:2] == [3, 1]
    assert elements(lp)[12] == FLAG_SAMEFIELDS | FLAG_DELETED
    check_invariants(s)


def test_large_diffs_wrap_like_int64() -> None:
    s = Stream()
    s.append([b"a", b"1"], (5, UINT64_MAX))
    s.append([b"a", b"2"], (UINT64_MAX, 0))
    s.append([b"a", b"3"], (UINT64_MAX, UINT64_MAX))
    [(master, lp)] = list(s.nodes())
    el = elements(lp)
    # ms-diff 2**64-1-5 does not fit int64: stored as -6; seq-diff 0 - (2**64-1) is 1.
    assert el[5:8] == [FLAG_SAMEFIELDS, 0, 0]
    assert el[10:13] == [FLAG_SAMEFIELDS, -6, 1]
    assert el[15:18] == [FLAG_SAMEFIELDS, -6, 0]
    assert [e[0] for e in live_entries(s)] == [(5, UINT64_MAX), (UINT64_MAX, 0), MAX_ID]
    check_invariants(s)


def test_node_split_by_entries() -> None:
    s = Stream()
    for i in range(10):
        s.append(F3, (1, i), max_entries=3)
    assert [m for m, _ in s.nodes()] == [(1, 0), (1, 3), (1, 6), (1, 9)]
    # Deleted entries count towards the limit (count + deleted).
    s2 = Stream()
    s2.append(F3, (1, 0), max_entries=2)
    s2.append(F3, (1, 1), max_entries=2)
    s2.delete((1, 1))
    s2.append(F3, (1, 2), max_entries=2)
    assert [m for m, _ in s2.nodes()] == [(1, 0), (1, 2)]
    check_invariants(s)
    check_invariants(s2)


def test_node_split_by_bytes_uses_field_lengths() -> None:
    # As streamAppendItem: new node when lp_bytes + (sum of field/value lengths) >= max.
    s = Stream()
    s.append([b"a", b"xxxx"], (1, 0), max_bytes=100, max_entries=0)
    [(_, lp)] = list(s.nodes())
    size = lp.nbytes
    room = 100 - size  # an entry whose field+value lengths reach this opens a new node
    s.append([b"a", b"y" * (room - 2)], (1, 1), max_bytes=100, max_entries=0)
    assert s.node_count() == 1
    size = next(iter(s.nodes()))[1].nbytes
    s.append([b"a", b"z" * (100 - size - 1)], (1, 2), max_bytes=100, max_entries=0)
    assert s.node_count() == 2
    check_invariants(s)


def test_max_bytes_zero_means_one_gib_and_entries_zero_no_limit() -> None:
    s = Stream()
    for i in range(300):
        s.append(F3, (1, i), max_bytes=0, max_entries=0)
    assert s.node_count() == 1
    assert MAX_NODE_BYTES == 1 << 30


def test_full_node_is_shrunk() -> None:
    s = Stream()
    for i in range(4):
        s.append(F3, (1, i), max_entries=2)
    first = next(iter(s.nodes()))[1]
    assert len(first.buf) == first.nbytes


# --- reading --------------------------------------------------------------------------


def build(n: int, max_entries: int = 4, per_ms: int = 3) -> Stream:
    s = Stream()
    for i in range(n):
        s.append(
            [b"i", b"%d" % i, b"name", b"n%d" % (i % 5)],
            now_ms=10 + i // per_ms,
            max_entries=max_entries,
        )
    return s


def test_range_forward_backward_count() -> None:
    s = build(40)
    ids = [e[0] for e in live_entries(s)]
    assert len(ids) == 40
    assert s.range(ids[5], ids[9]) == [e for e in live_entries(s) if ids[5] <= e[0] <= ids[9]]
    assert [e[0] for e in s.range(ids[5], ids[30], count=3)] == ids[5:8]
    assert [e[0] for e in s.range(ids[5], ids[30], count=3, rev=True)] == ids[30:27:-1]
    assert [e[0] for e in s.range(MIN_ID, MAX_ID, rev=True)] == ids[::-1]
    assert s.range(ids[9], ids[5]) == [] and s.range(ids[9], ids[5], rev=True) == []
    # Bounds between entries.
    assert ids[8][0] < ids[9][0]
    mid = (ids[8][0], ids[8][1] + 100)
    assert [e[0] for e in s.range(mid, MAX_ID, count=1)] == [ids[9]]
    assert [e[0] for e in s.range(MIN_ID, mid, count=1, rev=True)] == [ids[8]]
    assert s.range((ids[-1][0] + 1, 0), MAX_ID) == []
    assert s.range(MIN_ID, (0, 5)) == []
    for e in s.iter_range(MIN_ID, MAX_ID):
        assert e[1][0::2] == [b"i", b"name"]


def test_range_skips_deleted() -> None:
    s = build(20)
    ids = [e[0] for e in live_entries(s)]
    for i in (0, 3, 4, 10, 19):
        assert s.delete(ids[i])
    left = [x for i, x in enumerate(ids) if i not in (0, 3, 4, 10, 19)]
    assert [e[0] for e in live_entries(s)] == left
    assert [e[0] for e in s.range(MIN_ID, MAX_ID, rev=True)] == left[::-1]
    assert s.range(ids[3], ids[4]) == []
    check_invariants(s)


def test_get() -> None:
    s = build(30)
    ids = [e[0] for e in live_entries(s)]
    for i, eid in enumerate(ids):
        assert s.get(eid) == [b"i", b"%d" % i, b"name", b"n%d" % (i % 5)]
    assert s.get((ids[3][0], ids[3][1] + 50)) is None
    assert s.get(MAX_ID) is None and s.get(MIN_ID) is None
    s.delete(ids[4])
    assert s.get(ids[4]) is None


def test_iteration_survives_modification() -> None:
    s = build(30)
    it = s.iter_range(MIN_ID, MAX_ID)
    first = next(it)
    s.delete(first[0])
    s.append([b"i", b"new"], now_ms=10_000)
    rest = list(it)
    assert len(rest) == 30  # 29 old + the new one (reached after re-seeking)
    check_invariants(s)


def test_locate_entry_both_directions() -> None:
    s = Stream()
    for i in range(60):
        s.append(F3, (1000 + i // 7, i % 7), max_entries=0)
    [(master, lp)] = list(s.nodes())
    count, deleted, names, first_off = read_master(lp.buf)
    info = check_node(master, lp)
    offsets = []
    off = first_off
    for _ in info.ids:
        offsets.append(off)
        off = locate_entry(lp.buf, master, len(names), first_off, (0, 0))  # == first_off
        break
    for k, eid in enumerate(info.ids):
        off = locate_entry(lp.buf, master, len(names), first_off, eid, count + deleted)
        assert decode_element(lp.buf, off + 2)[0] == eid[0] - master[0]
        nxt = (eid[0], eid[1] + 1)
        off2 = locate_entry(lp.buf, master, len(names), first_off, nxt, count + deleted)
        if k + 1 < len(info.ids):
            assert off2 > off
        else:
            assert off2 == len(lp.buf) - 1


def test_repeated_lookups_use_index_and_stay_right() -> None:
    s = build(200, max_entries=100, per_ms=1000)
    ids = [e[0] for e in live_entries(s)]
    for _ in range(2):
        for eid in ids:
            assert s.get(eid) is not None
    for eid in ids[::3]:
        assert s.delete(eid)
    for i, eid in enumerate(ids):
        assert (s.get(eid) is None) == (i % 3 == 0)
    s.append([b"i", b"x"], now_ms=1)
    assert s.get(s.last_id) == [b"i", b"x"]
    check_invariants(s)


def check_lookups(s: Stream, probes: int = 0) -> None:
    """get / range / range_reply from every entry (or every ``probes``-th) against
    a full walk, forward and backward."""
    entries = live_entries(s)
    ids = [e[0] for e in entries]
    assert [s.get(eid) for eid in ids] == [f for _, f in entries]
    step = max(1, len(ids) // probes) if probes else 1
    for k in range(0, len(ids), step):
        eid = ids[k]
        after = (eid[0], eid[1] + 1)
        assert s.get(after) == (entries[k + 1][1] if after in ids else None)
        assert s.range(eid, MAX_ID, 3) == entries[k : k + 3]
        assert s.range(after, MAX_ID, 2) == entries[k + 1 : k + 3]
        assert s.range(MIN_ID, eid, 3, rev=True) == entries[max(0, k - 2) : k + 1][::-1]
        assert s.range_reply(eid, MAX_ID, 2) == [[format_id(i), f] for i, f in entries[k : k + 2]]
        rev = entries[max(0, k - 1) : k + 1][::-1]
        assert s.range_reply(MIN_ID, eid, 2, rev=True) == [[format_id(i), f] for i, f in rev]


def test_marks_complete_and_lookups_exact_in_big_nodes() -> None:
    # One huge node (no limits), mixed shapes, seq-diffs that go negative (13-bit)
    # and wrap, deletions; every lookup bisects the marks.
    s = Stream()
    for i in range(700):
        fields = [b"a", b"%d" % i, b"b", b"x" * (i % 70)]
        if i % 11 == 0:
            fields = [b"other", b"-%d" % (i * 1000)]
        seq = i % 40 * (3 if i % 80 < 40 else 200) + (5000 if i < 40 else 0)  # master seq: 5000
        s.append(fields, (1000 + i // 40, seq), max_bytes=0, max_entries=0)
    [(_, lp)] = list(s.nodes())
    assert len(lp.marks) == 2 * ((700 - 1) // MARK_EVERY)
    for eid in [e[0] for e in live_entries(s)][::5]:
        assert s.delete(eid)
    check_invariants(s)
    check_lookups(s)


def test_marks_built_lazily_for_loaded_nodes() -> None:
    s = build(300, max_entries=100)
    t = Stream.from_nodes([(m, bytes(lp.buf)) for m, lp in s.nodes()], s.last_id,
                          s.entries_added)  # fmt: skip
    assert all(lp.marks is None for _, lp in t.nodes())
    check_lookups(t, 40)
    assert all(lp.marks is not None for _, lp in t.nodes())
    for i in range(150):  # appends keep the tail's marks complete
        t.append([b"i", b"%d" % i], now_ms=10_000 + i, max_entries=100)
    check_invariants(t)
    check_lookups(t, 40)


def test_nodes_beyond_mark_range() -> None:
    # Offsets past 65535 get no mark: lookups there walk further, still exact.
    s = Stream()
    for i in range(200):
        s.append([b"v", b"%d" % i + b"y" * 1000], (5, i + 1), max_bytes=0, max_entries=0)
    [(_, lp)] = list(s.nodes())
    assert len(lp.buf) > 150_000 and 0 < len(lp.marks) < 2 * (199 // MARK_EVERY)
    check_invariants(s)
    check_lookups(s, 50)


def test_ascending_lookups_resume_and_survive_changes() -> None:
    # _find's hint: runs of ascending lookups, with nodes appended, emptied and
    # trimmed between them.
    s = Stream()
    for i in range(250):
        s.append([b"i", b"%d" % i], (100 + i // 50, i % 50), max_entries=30)
    ids = [e[0] for e in live_entries(s)]
    assert [s.get(eid) for eid in ids] == [[b"i", b"%d" % i] for i in range(250)]
    assert s.get((104, 49)) is not None and s.get((104, 50)) is None  # past the tail's end
    s.append([b"i", b"new"], (104, 60), max_entries=30)  # into the tail the hint is on
    assert s.get((104, 60)) == [b"i", b"new"]
    for i in range(30):  # a new node after the hinted one
        s.append([b"i", b"n%d" % i], (200, i), max_entries=30)
    assert s.get((200, 3)) == [b"i", b"n3"]
    assert s.get((104, 60)) == [b"i", b"new"] and s.get((200, 29)) == [b"i", b"n29"]
    assert s.get((100, 5)) == [b"i", b"5"]
    for eid in ids[30:60]:  # empty the second node: removed
        assert s.delete(eid)
    assert s.get((101, 9)) is None and s.get((101, 10)) == [b"i", b"60"]
    s.get((100, 20))
    s.trim("maxlen", 100)
    assert s.get((100, 25)) is None
    check_lookups(s)
    check_invariants(s)


def live_by_node(s: Stream) -> list[tuple[tuple[int, int], set]]:
    return [(m, set(check_node(m, lp).live_ids)) for m, lp in s.nodes()]


@pytest.mark.parametrize("reply", [False, True])
def test_cursor_reads_resume_and_survive_changes(reply: bool) -> None:
    # COUNT-limited reads from the last ID read: each resumes from the previous one.
    s = Stream()
    for i in range(300):
        s.append([b"i", b"%d" % i], (100 + i // 3, i % 3), max_entries=40)
    entries = live_entries(s)
    for count in (1, 3, 10, 41):
        cur, got, changed = MIN_ID, [], False
        while True:
            if reply:
                part = [((int(a), int(b)), f) for a, b, f in
                        ((i.partition(b"-")[0], i.partition(b"-")[2], f)
                         for i, f in s.range_reply(incr_id(cur), MAX_ID, count))]  # fmt: skip
            else:
                part = s.range(incr_id(cur), MAX_ID, count)
            if not part:
                break
            got += part
            cur = part[-1][0]
            if len(got) >= 150 and not changed:  # changes between two reads
                changed = True
                late = (10_000 + count, 0)
                s.append([b"i", b"late"], late, max_entries=40)
                entries.append((late, [b"i", b"late"]))
                # Empty (so remove) the node after the one being read.
                after = [ids for m, ids in live_by_node(s) if m > cur]
                gone = after[0] if after else set()
                for eid in sorted(gone):
                    assert s.delete(eid)
                entries = [e for e in entries if e[0] not in gone]
                k = len(got)
                assert s.range(entries[k - 1][0], MAX_ID, 2) == entries[k - 1 : k + 1]
        assert got == entries
    check_invariants(s)


def test_wrapped_diffs_decode_in_every_path() -> None:
    s = Stream()
    ids = [(5, UINT64_MAX - 1), (5, UINT64_MAX), (6, 0), (6, 3), (6, 200), (6, 5000),
           (2**63 + 9, 1), (UINT64_MAX, 0), (UINT64_MAX, 7)]  # fmt: skip
    for eid in ids:
        s.append([b"f", b"v"], eid, max_entries=0)
    assert [e[0] for e in live_entries(s)] == ids
    check_lookups(s)


# --- deleting -----------------------------------------------------------------------


def test_delete_updates_counts_and_removes_empty_nodes() -> None:
    s = build(9, max_entries=3)
    ids = [e[0] for e in live_entries(s)]
    assert s.node_count() == 3
    assert s.delete(ids[1])
    assert not s.delete(ids[1])  # already deleted
    assert not s.delete((ids[1][0], ids[1][1] + 1000))
    assert s.max_deleted_entry_id == ids[1]
    assert s.delete(ids[0])
    assert s.first_id == ids[2]
    assert s.delete(ids[2])  # last live entry of the first node: node removed
    assert s.node_count() == 2
    assert s.first_id == ids[3]
    assert s.max_deleted_entry_id == ids[2]
    assert s.delete(ids[4])
    assert s.max_deleted_entry_id == ids[4]
    check_invariants(s)
    for eid in ids[3:]:
        s.delete(eid)
    assert s.length == 0 and s.first_id == MIN_ID and s.node_count() == 0
    assert s.last_id == ids[-1]
    check_invariants(s)
    # Appending after deleting everything starts a new node.
    assert s.append(F3, now_ms=1) > ids[-1]
    assert s.first_id == s.last_id
    check_invariants(s)


def test_delete_in_tail_then_append() -> None:
    s = Stream()
    for i in range(3):
        s.append(F3, (1, i), max_entries=4)
    s.delete((1, 2))
    s.append(F3, (1, 3), max_entries=4)  # count + deleted = 3 < 4: same node
    assert s.node_count() == 1
    s.append(F3, (1, 4), max_entries=4)
    assert s.node_count() == 2
    check_invariants(s)


def test_delete_count_encoding_growth() -> None:
    s = Stream()
    for i in range(300):
        s.append([b"a", b"%d" % i], (1, i), max_entries=0)
    for i in range(0, 300, 2):
        s.delete((1, i))
    [(master, lp)] = list(s.nodes())
    assert elements(lp)[:2] == [150, 150]
    check_invariants(s)


# --- trimming ----------------------------------------------------------------------


def test_trim_maxlen_exact_and_approx() -> None:
    s = build(20, max_entries=5)
    ids = [e[0] for e in live_entries(s)]
    assert s.trim("maxlen", 18, approx=True) == 0  # can't drop a whole node
    assert s.trim("maxlen", 14, approx=True) == 5
    assert s.length == 15 and s.first_id == ids[5]
    assert s.trim("maxlen", 12) == 3
    assert [e[0] for e in live_entries(s)] == ids[8:]
    assert s.first_id == ids[8]
    assert s.trim("maxlen", 12) == 0
    assert s.max_deleted_entry_id == MIN_ID  # trimming does not set it
    check_invariants(s)
    assert s.trim("maxlen", 0) == 12
    assert s.length == 0 and s.node_count() == 0 and s.first_id == MIN_ID
    check_invariants(s)


def test_trim_minid() -> None:
    s = build(20, max_entries=5)
    ids = [e[0] for e in live_entries(s)]
    assert s.trim("minid", ids[7], approx=True) == 5
    assert s.trim("minid", ids[7]) == 2
    assert [e[0] for e in live_entries(s)] == ids[7:]
    assert s.trim("minid", ids[7]) == 0
    assert s.trim("minid", MIN_ID) == 0
    assert s.trim("minid", MAX_ID) == 13
    check_invariants(s)


def test_trim_limit_is_per_node() -> None:
    s = build(20, max_entries=5)
    assert s.trim("maxlen", 0, approx=True, limit=12) == 10
    assert s.trim("maxlen", 0, approx=True, limit=4) == 0
    assert s.trim("maxlen", 0, limit=5) == 5
    check_invariants(s)


def test_trim_drops_node_left_without_live_entries() -> None:
    # redis#15815: 1-0 live + 2-0 tombstone in one node; MINID = 2-0 deletes 1-0.
    s = Stream()
    s.append(F3, (1, 0))
    s.append(F3, (2, 0))
    s.delete((2, 0))
    assert s.trim("minid", (2, 0)) == 1
    assert s.length == 0 and s.node_count() == 0
    check_invariants(s)


def test_trim_with_can_delete_skips_and_continues() -> None:
    s = build(20, max_entries=5)
    ids = [e[0] for e in live_entries(s)]
    protected = {ids[1], ids[12]}
    removed = s.trim("minid", ids[15], approx=True, can_delete=lambda i: i not in protected)
    # Nodes 0..2 are eligible: walked per entry, protected entries stay.
    assert removed == 13
    assert [e[0] for e in live_entries(s)] == [ids[1], ids[12], *ids[15:]]
    assert s.first_id == ids[1]
    check_invariants(s)
    # MAXLEN counts the protected entries and deletes later deletable ones instead.
    assert s.trim("maxlen", 3, can_delete=lambda i: i not in protected) == 4
    assert [e[0] for e in live_entries(s)] == [ids[1], ids[12], ids[19]]
    check_invariants(s)


def test_trim_on_delete_sees_removed_entries_and_tombstones() -> None:
    s = build(10, max_entries=5)
    ids = [e[0] for e in live_entries(s)]
    s.delete(ids[2])
    seen: list[tuple[int, int]] = []
    assert s.trim("minid", ids[7], on_delete=seen.append) == 6
    assert seen == ids[:7]  # includes the tombstone ids[2]
    assert s.max_deleted_entry_id == ids[2]
    check_invariants(s)


def test_trim_hook_exception_leaves_stream_consistent() -> None:
    s = build(10, max_entries=10)
    ids = [e[0] for e in live_entries(s)]

    def boom(eid: tuple[int, int]) -> None:
        if eid == ids[4]:
            raise RuntimeError("hook failed")

    with pytest.raises(RuntimeError):
        s.trim("maxlen", 2, on_delete=boom)
    assert [e[0] for e in live_entries(s)] == ids[4:]
    check_invariants(s)


def test_repeated_exact_trims_in_one_node() -> None:
    # Exercises the head-node tombstone hint: trims, deletes and appends interleaved.
    s = Stream()
    model = []
    for i in range(150):
        model.append(s.append([b"i", b"%d" % i], (1, i), max_entries=0))
    for step in range(60):
        if step % 7 == 3:
            victim = model[len(model) // 2]
            assert s.delete(victim)
            model.remove(victim)
        if step % 11 == 5:
            model.append(s.append([b"i", b"x"], now_ms=1, max_entries=0))
        assert s.trim("maxlen", len(model) - 2) == 2
        model = model[2:]
        assert [e[0] for e in live_entries(s)] == model
        assert s.first_id == model[0]
    seen: list[tuple[int, int]] = []
    assert s.trim("maxlen", len(model) - 1, on_delete=seen.append) == 1
    assert len(seen) > 1 and seen[-1] == model[0]  # tombstones before it were passed too
    check_invariants(s)


def test_trim_bad_args() -> None:
    s = build(3)
    with pytest.raises(ValueError):
        s.trim("maxage", 1)
    with pytest.raises(ValueError):
        s.trim("maxlen", -1)


# --- nodes, memory, loading ----------------------------------------------------------


def test_from_nodes_roundtrip() -> None:
    s = build(50, max_entries=7)
    for eid in [e[0] for e in live_entries(s)][::4]:
        s.delete(eid)
    snap = [(id_to_key(m), bytes(lp.buf)) for m, lp in s.nodes()]
    t = Stream.from_nodes(
        reversed(snap), s.last_id, s.entries_added, s.max_deleted_entry_id, length=s.length
    )
    assert live_entries(t) == live_entries(s)
    assert (t.length, t.first_id, t.last_id, t.entries_added, t.max_deleted_entry_id) == (
        s.length,
        s.first_id,
        s.last_id,
        s.entries_added,
        s.max_deleted_entry_id,
    )
    check_invariants(t)
    t.append(F3, now_ms=1, max_entries=7)
    check_invariants(t)
    u = Stream.from_nodes(
        [(m, Listpack(bytearray(lp.buf))) for m, lp in s.nodes()], s.last_id, s.entries_added
    )
    assert live_entries(u) == live_entries(s)


def test_from_nodes_rejects_corruption() -> None:
    s = build(10, max_entries=5)
    nodes = [(m, bytes(lp.buf)) for m, lp in s.nodes()]
    good = (s.last_id, s.entries_added)
    with pytest.raises(StreamCorruption):
        Stream.from_nodes(nodes, (0, 1), 10)  # IDs above last_id
    with pytest.raises(StreamCorruption):
        Stream.from_nodes(nodes, *good, length=11)
    with pytest.raises(StreamCorruption):
        Stream.from_nodes(nodes + nodes[:1], *good)  # duplicate
    with pytest.raises(StreamCorruption):
        Stream.from_nodes(nodes[:1] + [((nodes[0][0][0], nodes[0][0][1] + 1), nodes[1][1])], *good)
    with pytest.raises(StreamCorruption):
        Stream.from_nodes([(b"short", nodes[0][1])], *good)
    raw = bytearray(nodes[0][1])
    raw[-2] ^= 0x01  # last lp-count
    with pytest.raises(StreamCorruption):
        Stream.from_nodes([(nodes[0][0], bytes(raw))], *good)
    with pytest.raises(StreamCorruption):
        Stream.from_nodes([(nodes[0][0], nodes[0][1][:-3])], *good)
    lp = Listpack()
    lp.extend([0, 0, 1, b"a", 0])  # a node with no entries
    with pytest.raises(StreamCorruption):
        Stream.from_nodes([((1, 0), bytes(lp.buf))], *good)
    lp = Listpack()
    lp.extend([1, 0, 1, b"a", 0, FLAG_SAMEFIELDS, 0, 0, b"v", 5])  # bad lp-count (4)
    with pytest.raises(StreamCorruption):
        Stream.from_nodes([((1, 0), bytes(lp.buf))], *good)
    lp = Listpack()
    lp.extend([2, 0, 1, b"a", 0, 2, 0, 0, b"v", 4, 2, 0, 0, b"w", 4])  # repeated ID
    with pytest.raises(StreamCorruption):
        Stream.from_nodes([((1, 0), bytes(lp.buf))], *good)
    a = Stream.from_nodes(nodes[:1], *good)  # nodes may be a subset: length from nodes
    assert a.length == 5


def test_set_id() -> None:
    s = build(3)
    s.set_id((500, 1), entries_added=77, max_deleted=(400, 0))
    assert s.last_id == (500, 1) and s.entries_added == 77
    assert s.max_deleted_entry_id == (400, 0)
    assert s.append(F3, now_ms=1) == (500, 2)
    s.set_id((600, 0))
    assert s.entries_added == 78


def test_memory_usage_grows_and_is_compact() -> None:
    s = Stream()
    base = s.memory_usage()
    assert base > 0
    for i in range(2000):
        s.append(
            [b"sensor", b"%d" % (i % 100), b"temp", b"21.%d" % (i % 10), b"site", b"lab-a"],
            now_ms=1_700_000_000_000 + i // 20,
        )
    per_entry = (s.memory_usage() - base) / 2000
    lp_bytes = sum(lp.nbytes for _, lp in s.nodes())
    assert lp_bytes / 2000 < per_entry < 45
    assert s.rax_node_count() >= s.node_count()


# --- property test against a model ----------------------------------------------------

VALUES = [b"0", b"1", b"-7", b"127", b"128", b"70000", b"v", b"lab-a", b"3.25", b"", b"x" * 70]
NAMES = [b"a", b"b", b"10"]
BIG = [0, 1, 2, 5, 2**63 - 1, 2**63, 2**64 - 2, UINT64_MAX]


def model_trim(
    s: Stream, strategy: str, thr: object, approx: bool, limit: int, protected: set | None
) -> list[tuple[int, int]]:
    """The trim algorithm restated over node snapshots (ids + live sets)."""
    nodes = []
    for m, lp in s.nodes():
        info = check_node(m, lp)
        nodes.append((info.ids, set(info.live_ids)))
    length = s.length
    removed: list[tuple[int, int]] = []
    per_entry = protected is not None
    for ids, live in nodes:
        if strategy == "maxlen" and length <= thr:  # type: ignore[operator]
            break
        if limit and len(removed) + len(live) > limit:
            break
        if strategy == "maxlen":
            eligible = length - len(live) >= thr  # type: ignore[operator]
        else:
            eligible = ids[-1] < thr  # type: ignore[operator]
        if eligible and not per_entry:
            removed.extend(sorted(live))
            length -= len(live)
            continue
        if approx and not eligible:
            break
        for eid in ids:
            if strategy == "maxlen" and length <= thr:  # type: ignore[operator]
                break
            if strategy == "minid" and eid >= thr:  # type: ignore[operator]
                break
            if eid in live and (protected is None or eid not in protected):
                removed.append(eid)
                length -= 1
        if not eligible:
            break
    return removed


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_against_model(data: st.DataObject) -> None:
    max_entries = data.draw(st.sampled_from([0, 1, 2, 3, 5]), label="max_entries")
    max_bytes = data.draw(st.sampled_from([0, 30, 60, 120, 4096]), label="max_bytes")
    s = Stream()
    model: dict[tuple[int, int], list[bytes]] = {}
    last = MIN_ID
    added = 0
    max_deleted = MIN_ID
    for _ in range(data.draw(st.integers(1, 45), label="steps")):
        op = data.draw(st.sampled_from(["add", "add", "add", "del", "trim", "range"]))
        if op == "add":
            nf = data.draw(st.integers(1, 3))
            fields = []
            for _ in range(nf):
                fields += [data.draw(st.sampled_from(NAMES)), data.draw(st.sampled_from(VALUES))]
            mode = data.draw(st.sampled_from(["auto", "star", "explicit"]))
            big = data.draw(st.booleans())
            near = st.integers(last[0], min(last[0] + 3, UINT64_MAX))
            ms = data.draw(st.sampled_from(BIG) if big else near)
            seq = data.draw(st.sampled_from(BIG) if big else st.integers(0, 4))
            try:
                if mode == "auto":
                    eid = s.append(
                        fields, None, now_ms=ms, max_bytes=max_bytes, max_entries=max_entries
                    )
                    expect = (ms, 0) if ms > last[0] else None
                elif mode == "star":
                    eid = s.append(
                        fields, (ms, 0), False, max_bytes=max_bytes, max_entries=max_entries
                    )
                    expect = (ms, last[1] + 1) if ms == last[0] else (ms, 0)
                else:
                    eid = s.append(fields, (ms, seq), max_bytes=max_bytes, max_entries=max_entries)
                    expect = (ms, seq)
            except StreamIDError:
                assert last == MAX_ID or mode != "auto"
                if mode == "explicit":
                    assert (ms, seq) <= last
                continue
            if expect is not None:
                assert eid == expect
            assert eid > last
            last = eid
            added += 1
            model[eid] = fields
        elif op == "del" and model:
            eid = data.draw(st.sampled_from(sorted(model)))
            if data.draw(st.booleans()):
                eid = (eid[0], eid[1] ^ 1)
            assert s.delete(eid) == (eid in model)
            if eid in model:
                del model[eid]
                max_deleted = max(max_deleted, eid)
        elif op == "trim":
            strategy = data.draw(st.sampled_from(["maxlen", "minid"]))
            if strategy == "maxlen":
                thr: object = data.draw(st.integers(0, len(model) + 1))
            else:
                cands = sorted(model) + [MIN_ID, MAX_ID, (last[0], last[1] // 2)]
                thr = data.draw(st.sampled_from(cands))
            approx = data.draw(st.booleans())
            limit = data.draw(st.sampled_from([0, 0, 1, 3, 7]))
            protected = None
            can_delete = None
            if model and data.draw(st.booleans()):
                protected = set(data.draw(st.lists(st.sampled_from(sorted(model)), max_size=4)))
                can_delete = protected.__contains__
            expected = model_trim(s, strategy, thr, approx, limit, protected)
            got = s.trim(
                strategy,
                thr,  # type: ignore[arg-type]
                approx,
                limit,
                can_delete=None if can_delete is None else (lambda i, c=can_delete: not c(i)),
            )
            assert got == len(expected)
            for eid in expected:
                del model[eid]
        elif op == "range" and model:
            keys = sorted(model)
            a = data.draw(st.sampled_from(keys + [MIN_ID]))
            b = data.draw(st.sampled_from(keys + [MAX_ID]))
            if data.draw(st.booleans()):
                a = (a[0], a[1] + 1) if a[1] < UINT64_MAX else a
            count = data.draw(st.integers(0, 4))
            rev = data.draw(st.booleans())
            want = [(k, model[k]) for k in keys if a <= k <= b]
            if rev:
                want.reverse()
            if count:
                want = want[:count]
            assert s.range(a, b, count, rev) == want
            if want:
                assert s.get(want[0][0]) == want[0][1]
        assert s.last_id == last and s.entries_added == added
        assert s.max_deleted_entry_id == max_deleted
        assert s.length == len(model)
    check_invariants(s)
    assert live_entries(s) == sorted(model.items())
    assert s.range(MIN_ID, MAX_ID, rev=True) == sorted(model.items(), reverse=True)


def test_tail_counts_caught_up_before_any_read() -> None:
    """append() leaves the tail's header and master count behind while the count stays below
    128; everything that reads or changes the node sees them written first."""
    s = Stream()
    for i in range(100):
        s.append([b"a", b"%d" % i], (1, i), max_entries=0, max_bytes=0)
    assert s._tail_behind
    [(_, lp)] = list(s.nodes())
    assert not s._tail_behind
    assert elements(lp)[:2] == [100, 0]
    for i in range(100, 5000):  # (from 128 on, every append writes them)
        s.append([b"a", b"%d" % i], (1, i), max_entries=0, max_bytes=0)
    assert elements(lp)[:2] == [5000, 0]
    assert check_node((1, 0), lp).count == 5000
    s.append([b"a", b"x"], (1, 5000), max_entries=0, max_bytes=0)
    assert s.delete((1, 5000)) and s.delete((1, 4999))  # the count, read from the bytes
    assert elements(next(iter(s.nodes()))[1])[:2] == [4999, 2]
    s.append([b"a", b"y"], (1, 5001), max_entries=0, max_bytes=0)
    assert s.get((1, 5001)) == [b"a", b"y"] and s.get((1, 4998)) == [b"a", b"4998"]
    assert s.trim("maxlen", 10) == 4990
    check_invariants(s)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_tail_left_behind_ends_byte_identical(data: st.DataObject) -> None:
    """The same operations on two streams, one of which catches its tail up after every
    step (through the rax), end with the same nodes, byte for byte, and the same marks."""
    max_entries = data.draw(st.sampled_from([0, 3, 100, 200]), label="max_entries")
    max_bytes = data.draw(st.sampled_from([0, 90, 4096]), label="max_bytes")
    lazy, eager = Stream(), Stream()
    ms = 1
    for _ in range(data.draw(st.integers(1, 30), label="steps")):
        op = data.draw(st.sampled_from(["add", "add", "add", "del", "trim", "get", "range"]))
        n = data.draw(st.integers(1, 150), label="entries or seq")
        ms += op == "add"
        results = []
        for s in (lazy, eager):
            if op == "add":
                for i in range(n):
                    fields = [b"a", VALUES[i % len(VALUES)]] if i % 7 else F3
                    s.append(fields, None, now_ms=ms, max_bytes=max_bytes,
                             max_entries=max_entries)
            elif op == "del":
                results.append(s.delete((ms, n)))
            elif op == "trim":
                results.append(s.trim("maxlen", 2 * n, approx=n % 2 == 1))
            elif op == "get":
                results.append(s.get((ms, n)))
            else:
                results.append(s.range((ms, 0), MAX_ID, 5))
            if s is eager:
                s.rax  # noqa: B018 (catches the tail up)
        assert results[:len(results) // 2] == results[len(results) // 2:]
    lazy_nodes = [(key, bytes(lp.buf), lp.marks) for key, lp in lazy.rax.items()]
    eager_nodes = [(key, bytes(lp.buf), lp.marks) for key, lp in eager.rax.items()]
    assert lazy_nodes == eager_nodes
    check_invariants(lazy)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_append_pair_is_append_of_one_pair(data: st.DataObject) -> None:
    """append_pair (XADD key * field value) and append() given the same pairs end with the
    same IDs, nodes (byte for byte), marks and counts: in its usual case (written out), and
    in every case it leaves to append() (new nodes, other fields, a clock gone back, an
    exhausted sequence, limits of 0 or past a node's maximum)."""
    max_entries = data.draw(st.sampled_from([0, 1, 3, 100, 200]), label="max_entries")
    max_bytes = data.draw(st.sampled_from([0, 60, 90, 4096, MAX_NODE_BYTES + 1]),
                          label="max_bytes")
    pairs, plain = Stream(), Stream()
    ms = 5
    for _ in range(data.draw(st.integers(1, 25), label="steps")):
        op = data.draw(st.sampled_from(["add", "add", "add", "many", "del", "trim", "top"]))
        if op in ("add", "many"):
            n = data.draw(st.integers(1, 150 if op == "many" else 3), label="n")
            for i in range(n):
                field = data.draw(st.sampled_from([b"a", b"a", b"b", b"x" * 40]), label="f")
                value = VALUES[i % len(VALUES)]
                ms = max(ms + data.draw(st.sampled_from([0, 0, 1, -2]), label="clock"), 0)
                got = pairs.append_pair(field, value, ms, max_bytes, max_entries)
                want = plain.append([field, value], None, True, ms, max_bytes, max_entries)
                assert got == want
        elif op == "del" and plain.length:
            eid = data.draw(st.sampled_from([e[0] for e in live_entries(plain)]), label="del")
            assert pairs.delete(eid) and plain.delete(eid)
        elif op == "trim":
            n = data.draw(st.integers(0, 20), label="maxlen")
            assert pairs.trim("maxlen", n) == plain.trim("maxlen", n)
        elif op == "top":  # the sequence at its end: the next * needs a new millisecond
            last = (plain.last_id[0], UINT64_MAX)
            pairs.set_id(last)
            plain.set_id(last)
        for s in (pairs, plain):
            check_invariants(s)
    for attr in ("length", "last_id", "first_id", "entries_added", "max_deleted_entry_id"):
        assert getattr(pairs, attr) == getattr(plain, attr)
    assert ([(key, bytes(lp.buf), lp.marks) for key, lp in pairs.rax.items()]
            == [(key, bytes(lp.buf), lp.marks) for key, lp in plain.rax.items()])


# --- byte-exact comparison with redis-server -----------------------------------------


def _rdb_len(b: bytes, i: int) -> tuple[int, int]:
    t = b[i] >> 6
    if t == 0:
        return b[i] & 63, i + 1
    if t == 1:
        return ((b[i] & 63) << 8) | b[i + 1], i + 2
    if b[i] == 0x80:
        return int.from_bytes(b[i + 1 : i + 5], "big"), i + 5
    assert b[i] == 0x81
    return int.from_bytes(b[i + 1 : i + 9], "big"), i + 9


def _dump_nodes(payload: bytes) -> list[tuple[tuple[int, int], bytes]]:
    """The (master ID, listpack bytes) list at the start of a stream's DUMP payload."""
    n, i = _rdb_len(payload, 1)
    out = []
    for _ in range(n):
        kl, i = _rdb_len(payload, i)
        key = payload[i : i + kl]
        i += kl
        ll, i = _rdb_len(payload, i)
        out.append((key_to_id(key), payload[i : i + ll]))
        i += ll
    return out


@pytest.mark.compat
def test_nodes_byte_identical_to_redis(redis_ref) -> None:  # type: ignore[no-untyped-def]
    import random

    import redis

    r = redis.Redis(host=redis_ref.host, port=redis_ref.port)
    saved = {
        k: r.config_get(k)[k]
        for k in ("rdbcompression", "stream-node-max-bytes", "stream-node-max-entries")
    }
    rng = random.Random(1234)
    key = "test_stream:layout"
    try:
        r.config_set("rdbcompression", "no")
        for _ in range(25):
            mb = rng.choice([0, 60, 200, 4096])
            me = rng.choice([0, 1, 3, 100])
            r.config_set("stream-node-max-bytes", mb)
            r.config_set("stream-node-max-entries", me)
            r.delete(key)
            s = Stream()
            ms = 1
            for _ in range(rng.randint(1, 60)):
                x = rng.random()
                if x < 0.7:
                    ms += rng.choice([0, 1, 300, 2**40])
                    fields = []
                    for _ in range(rng.randint(1, 3)):
                        fields += [
                            rng.choice([b"a", b"12", b"-5", b"x" * 70]),
                            rng.choice([b"1", b"128", b"-4096", b"v", b"y" * 130]),
                        ]
                    eid = (ms, rng.choice([0, 1, 2**63 + 3]))
                    if eid <= s.last_id:
                        continue
                    s.append(fields, eid, max_bytes=mb, max_entries=me)
                    r.execute_command("XADD", key, b"%d-%d" % eid, *fields)
                elif s.length and x < 0.85:
                    eid = rng.choice([e[0] for e in live_entries(s)])
                    assert s.delete(eid)
                    assert r.xdel(key, b"%d-%d" % eid) == 1
                elif s.length:
                    n = rng.randint(0, s.length)
                    approx = rng.random() < 0.5
                    got = s.trim("maxlen", n, approx=approx)
                    mode = "~" if approx else "="
                    assert r.execute_command("XTRIM", key, "MAXLEN", mode, n) == got
            if not s.length:
                continue
            theirs = _dump_nodes(r.dump(key))
            assert theirs == [(m, bytes(lp.buf)) for m, lp in s.nodes()]
            info = r.xinfo_stream(key)
            assert info["length"] == s.length
            assert info["radix-tree-keys"] == s.node_count()
            assert info["radix-tree-nodes"] == s.rax_node_count()
    finally:
        r.delete(key)
        for k, v in saved.items():
            r.config_set(k, v)
        r.close()


@pytest.mark.parametrize("seed", range(30))
def test_last_entry_id_follows_deletes_trims_and_setid(seed: int) -> None:
    """last_entry_id answers from last_id while XADD's entry is known to be the newest live
    one (top_is_last_id), and walks otherwise: both agree through XDEL of the newest entry,
    XSETID past it, trims that skip entries they may not delete, and emptying."""
    rng = random.Random(seed)
    s = Stream()
    ms = 0
    for _ in range(300):
        op = rng.random()
        if op < 0.6:
            ms += rng.randrange(1, 3)
            s.append([b"f", b"%d" % ms], (ms, 0), True, max_entries=rng.choice([2, 5, 100]))
        elif op < 0.75 and s.length:
            s.delete(rng.choice([s.last_id, (rng.randrange(ms + 1), 0)]))
        elif op < 0.8:
            ms += 3
            s.set_id((ms, 0))
        elif op < 0.95:
            keep = frozenset((rng.randrange(ms + 1), 0) for _ in range(5))
            s.trim("maxlen", rng.randrange(4),
                   can_delete=keep.__contains__ if rng.random() < 0.5 else None)
        else:
            s.trim("maxlen", 0)
        walked = s._collect(MIN_ID, MAX_ID, 1, True, False)
        assert s.last_entry_id() == (walked[0][0] if walked else None)
