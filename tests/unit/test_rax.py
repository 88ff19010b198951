"""Tests for storage.rax: the compressed radix tree and its iterator."""

from __future__ import annotations

import bisect
import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.rax import Rax, RaxIterator

SEEK_OPS = ("^", "$", "=", ">=", ">", "<=", "<")


def build(keys, value_of=lambda k: k) -> Rax:
    r = Rax()
    for k in keys:
        r.insert(k, value_of(k))
    r.verify()
    return r


def shape(r: Rax) -> tuple:
    """The exact node structure (labels, key flags, nesting), from the internals."""

    def dump(node) -> tuple:
        kids = tuple(dump(c) for c in node.children) if node.children is not None else None
        return (node.label, node.is_key, kids)

    return dump(r._root)


def model_target(sorted_keys: list[bytes], op: str, key: bytes) -> bytes | None:
    """The element a seek should land on, computed on a sorted list."""
    if not sorted_keys:
        return None
    if op == "^":
        return sorted_keys[0]
    if op == "$":
        return sorted_keys[-1]
    if op == "=":
        i = bisect.bisect_left(sorted_keys, key)
        return key if i < len(sorted_keys) and sorted_keys[i] == key else None
    if op == ">=":
        i = bisect.bisect_left(sorted_keys, key)
        return sorted_keys[i] if i < len(sorted_keys) else None
    if op == ">":
        i = bisect.bisect_right(sorted_keys, key)
        return sorted_keys[i] if i < len(sorted_keys) else None
    if op == "<=":
        i = bisect.bisect_right(sorted_keys, key)
        return sorted_keys[i - 1] if i > 0 else None
    if op == "<":
        i = bisect.bisect_left(sorted_keys, key)
        return sorted_keys[i - 1] if i > 0 else None
    raise AssertionError(op)


def walk(it: RaxIterator, forward: bool, limit: int = 10**9) -> list[bytes]:
    out = []
    step = it.next if forward else it.prev
    while len(out) < limit and step():
        out.append(it.key)
    return out


def id_key(ms: int, seq: int) -> bytes:
    return struct.pack(">QQ", ms, seq)


# -- basic map behaviour ---------------------------------------------------------------


def test_empty_tree():
    r = Rax()
    r.verify()
    assert len(r) == 0
    assert r.node_count() == 1
    assert b"" not in r
    assert r.find(b"x", 7) == 7
    assert r.first() is None and r.last() is None
    assert list(r.items()) == []
    assert r.remove(b"") == (False, None)
    it = r.iterator()
    assert it.eof()
    for op in SEEK_OPS:
        assert it.seek(op, b"a") is True
        assert it.eof()
        assert not it.next() and not it.prev()


def test_insert_find_overwrite_remove():
    r = Rax()
    assert r.insert(b"hello", 1) is True
    assert r.insert(b"hello", 2) is False
    assert r.find(b"hello") == 2
    assert r.try_insert(b"hello", 3) is False
    assert r.find(b"hello") == 2
    assert r.try_insert(b"help", 4) is True
    assert r.find(b"help") == 4
    assert len(r) == 2
    assert b"hel" not in r and r.find(b"hel", "d") == "d"
    assert b"hello!" not in r and b"h" not in r and b"" not in r
    assert r.remove(b"hel") == (False, None)
    assert r.remove(b"hello") == (True, 2)
    assert r.remove(b"hello") == (False, None)
    assert len(r) == 1 and list(r.items()) == [(b"help", 4)]
    r.verify()


def test_none_value_is_still_a_key():
    r = Rax()
    assert r.insert(b"k") is True
    assert b"k" in r and len(r) == 1
    assert r.find(b"k", "missing") is None
    assert r.remove(b"k") == (True, None)
    assert b"k" not in r and len(r) == 0


def test_empty_key():
    r = Rax()
    assert r.insert(b"", "root") is True
    assert b"" in r and r.find(b"") == "root"
    assert r.node_count() == 1
    r.insert(b"a", 1)
    r.insert(b"b", 2)
    assert list(r.items()) == [(b"", "root"), (b"a", 1), (b"b", 2)]
    assert r.first() == (b"", "root")
    it = r.iterator()
    it.seek("<", b"a")
    assert it.prev() and it.key == b""
    assert not it.prev()
    assert r.remove(b"") == (True, "root")
    r.verify()
    assert r.node_count() == build([b"a", b"b"]).node_count()
    assert list(r.keys()) == [b"a", b"b"]


def test_prefix_keys():
    keys = [b"a", b"ab", b"abc", b"abcd", b"abd", b"b"]
    r = build(keys)
    assert list(r.keys()) == sorted(keys)
    assert list(k for k, _ in r.items(reverse=True)) == sorted(keys, reverse=True)
    for k in keys:
        assert r.find(k) == k
    for k in (b"", b"abcde", b"ac", b"abce", b"ba"):
        assert k not in r
    # remove the middle prefixes: the chain must re-compress
    assert r.remove(b"ab")[0] and r.remove(b"abc")[0]
    r.verify()
    assert r.node_count() == build([b"a", b"abcd", b"abd", b"b"]).node_count()
    assert list(r.keys()) == [b"a", b"abcd", b"abd", b"b"]


def test_bytearray_and_memoryview_keys_are_copied():
    r = Rax()
    k = bytearray(b"abc")
    r.insert(k, 1)
    k[0] = ord("z")
    assert r.find(b"abc") == 1 and b"zbc" not in r
    r.insert(memoryview(b"abd"), 2)
    assert list(r.keys()) == [b"abc", b"abd"]
    r.verify()


def test_first_last_and_all_byte_values():
    keys = [bytes([b]) for b in range(256)] + [b"\x00\x00", b"\xff\xff\xff", b"\x7f\x80"]
    r = build(keys)
    assert r.first() == (b"\x00", b"\x00")
    assert r.last() == (b"\xff\xff\xff", b"\xff\xff\xff")
    assert list(r.keys()) == sorted(keys)
    # empty a 256-way branch in random order (large branches are edited in place)
    rnd = random.Random(1)
    rnd.shuffle(keys)
    for n, k in enumerate(keys):
        assert r.remove(k) == (True, k)
        if n % 16 == 0:
            r.verify()
            assert shape(r) == shape(build(keys[n + 1 :]))
    assert len(r) == 0 and r.node_count() == 1


# -- shape: splitting and re-compression ---------------------------------------------------


def test_split_shapes_and_node_counts():
    r = Rax()
    r.insert(b"abcdef")
    assert r.node_count() == 2  # compressed root "abcdef" -> key leaf
    r.insert(b"abc")  # key ends inside the edge: one new key node
    assert r.node_count() == 3
    r.insert(b"abx")  # diverges inside "abc": branch "cx" plus a leaf
    r.verify()
    assert r.node_count() == build([b"abcdef", b"abc", b"abx"]).node_count()
    for k in (b"abcdef", b"abc", b"abx"):
        assert r.remove(k)[0]
        r.verify()
    assert r.node_count() == 1 and len(r) == 0


def test_remove_restores_fresh_shape_exhaustively():
    """For every subset removed from a set of overlapping keys, the shape equals a
    fresh build of what remains (node count and memory estimate)."""
    keys = [b"", b"a", b"ab", b"abc", b"abd", b"abde", b"b", b"ba", b"bcd", b"xyz", b"xy"]
    for mask in range(1 << len(keys)):
        gone = [k for i, k in enumerate(keys) if mask >> i & 1]
        kept = [k for i, k in enumerate(keys) if not mask >> i & 1]
        r = build(keys)
        for k in gone:
            assert r.remove(k) == (True, k)
        r.verify()
        fresh = build(kept)
        assert r.node_count() == fresh.node_count()
        assert shape(r) == shape(fresh)
        assert r.memory_usage() == fresh.memory_usage()
        assert list(r.items()) == [(k, k) for k in sorted(kept)]


def test_insert_order_does_not_change_shape():
    rnd = random.Random(5)
    keys = list({bytes(rnd.choice(b"ab") for _ in range(rnd.randint(0, 6))) for _ in range(60)})
    counts = set()
    for _ in range(10):
        rnd.shuffle(keys)
        counts.add(build(keys).node_count())
    assert len(counts) == 1


def test_memory_usage_grows_with_keys():
    small = build([id_key(1, i) for i in range(10)])
    big = build([id_key(1, i) for i in range(1000)])
    assert 0 < small.memory_usage() < big.memory_usage()


# -- stream ID keys ------------------------------------------------------------------------


def test_stream_id_keys_order_and_seek():
    ids = [(0, 1), (1, 0), (1, 1), (1, 2**64 - 1), (2**32, 0), (2**64 - 1, 2**64 - 1)]
    r = build([id_key(*i) for i in ids])
    assert [struct.unpack(">QQ", k) for k in r] == ids
    it = r.iterator()
    it.seek(">=", id_key(1, 1))
    assert walk(it, True) == [id_key(*i) for i in ids[2:]]
    it.seek("<=", id_key(2**32, 0))
    assert it.prev() and it.key == id_key(2**32, 0)
    it.seek("<", id_key(1, 5))
    assert it.prev() and it.key == id_key(1, 1)
    # the stream pattern: find the node holding an ID, then walk forward from it
    it.seek("<=", id_key(1, 7))
    assert walk(it, True) == [id_key(*i) for i in ids[2:]]
    it.seek("<=", id_key(0, 0))
    assert not it.next() and it.eof()


def test_many_sequential_id_keys():
    n = 100_000
    r = Rax()
    for i in range(n):
        assert r.insert(id_key(1_700_000_000_000 + i // 3, i % 3), i)
    assert len(r) == n
    r.verify()
    keys = list(r.keys())
    assert len(keys) == n and keys == sorted(keys)
    assert r.find(id_key(1_700_000_000_000 + 12345, 1)) == 12345 * 3 + 1
    it = r.iterator()
    it.seek(">", id_key(1_700_000_000_000 + 20000, 2))
    assert it.next() and it.value == 60003
    it.seek("$")
    assert it.prev() and it.value == n - 1
    assert it.prev() and it.value == n - 2
    # trim from the head like XTRIM does: seek "^", remove, repeat
    for expect in range(n // 2):
        it.seek("^")
        assert it.next() and it.value == expect
        assert r.remove(it.key) == (True, expect)
    r.verify()
    assert len(r) == n - n // 2
    fresh = Rax()
    for k, v in r.items():
        fresh.insert(k, v)
    assert fresh.node_count() == r.node_count()


# -- iterator -------------------------------------------------------------------------------


KEYS = sorted({b"a", b"ab", b"abc", b"abd", b"b", b"ba", b"bb", b"c", b"cab", b"x\x00", b"x\xff"})
PROBES = sorted(
    set(KEYS)
    | {b"", b"0", b"aa", b"abb", b"abcd", b"abe", b"ac", b"b0", b"bz", b"ca", b"caa"}
    | {b"cb", b"d", b"x", b"x\x00\x00", b"x\x01", b"y", b"\xff", b"ab\x00", b"c\xff\xff"}
)


@pytest.mark.parametrize("op", SEEK_OPS)
def test_every_seek_op_against_model(op):
    r = build(KEYS)
    it = r.iterator()
    for probe in PROBES:
        target = model_target(KEYS, op, probe)
        for forward in (True, False):
            assert it.seek(op, probe) is True
            got = walk(it, forward)
            if target is None:
                assert got == [] and it.eof()
                continue
            pos = KEYS.index(target)
            want = KEYS[pos:] if forward else KEYS[: pos + 1][::-1]
            assert got == want, (op, probe, forward)
            assert it.eof() and not it.next() and not it.prev()


def test_seek_then_zigzag():
    r = build(KEYS)
    it = r.iterator()
    it.seek(">=", b"b0")
    assert it.next() and it.key == b"ba" and it.value == b"ba"
    assert it.next() and it.key == b"bb"
    assert it.prev() and it.key == b"ba"
    assert it.prev() and it.key == b"b"
    assert it.prev() and it.key == b"abd"
    assert it.next() and it.key == b"b"
    it.seek("<=", b"abcd")
    assert it.next() and it.key == b"abc"  # target first, even when walking forward
    assert it.next() and it.key == b"abd"


def test_invalid_seek_op():
    it = build(KEYS).iterator()
    with pytest.raises(ValueError):
        it.seek("<>", b"a")


def test_iterator_protocol_and_reverse_items():
    r = build(KEYS)
    it = r.iterator()
    it.seek(">", b"b")
    assert [k for k, _ in it] == KEYS[KEYS.index(b"ba") :]
    assert [k for k, _ in r.items(reverse=True)] == KEYS[::-1]
    assert list(r.values()) == KEYS


# -- property tests ---------------------------------------------------------------------------

small_keys = st.binary(max_size=5).map(lambda b: bytes(x % 3 + 97 for x in b))


@settings(max_examples=300, deadline=None)
@given(st.lists(small_keys, max_size=40), st.lists(small_keys, max_size=20))
def test_build_then_remove_matches_fresh(inserted, removed):
    r = Rax()
    model: dict[bytes, int] = {}
    for i, k in enumerate(inserted):
        assert r.insert(k, i) == (k not in model)
        model[k] = i
    for k in removed:
        expect = (True, model.pop(k)) if k in model else (False, None)
        assert r.remove(k) == expect
    r.verify()
    assert list(r.items()) == sorted(model.items())
    fresh = build(model, value_of=model.get)
    assert r.node_count() == fresh.node_count()
    assert shape(r) == shape(fresh)


op_strategy = st.one_of(
    st.tuples(st.just("insert"), small_keys),
    st.tuples(st.just("try_insert"), small_keys),
    st.tuples(st.just("remove"), small_keys),
    st.tuples(st.just("seek"), st.sampled_from(SEEK_OPS), small_keys),
    st.tuples(st.just("next")),
    st.tuples(st.just("prev")),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(op_strategy, max_size=80))
def test_random_operations_against_sorted_model(ops):
    r = Rax()
    model: dict[bytes, int] = {}
    it = r.iterator()
    # model cursor: index into the sorted key list, plus "pending"/eof flags
    pos: int | None = None
    pending = False
    snapshot: list[bytes] = []
    for n, op in enumerate(ops):
        kind = op[0]
        if kind in ("insert", "try_insert", "remove"):
            key = op[1]
            if kind == "insert":
                assert r.insert(key, n) == (key not in model)
                model[key] = n
            elif kind == "try_insert":
                new = key not in model
                assert r.try_insert(key, n) == new
                if new:
                    model[key] = n
            else:
                expect = (True, model.pop(key)) if key in model else (False, None)
                assert r.remove(key) == expect
            r.verify()
            # modifications invalidate the iterator: re-seek on the key just touched
            snapshot = sorted(model)
            it.seek(">=", key)
            target = model_target(snapshot, ">=", key)
            pos = None if target is None else snapshot.index(target)
            pending = True
        elif kind == "seek":
            _, sop, key = op
            snapshot = sorted(model)
            it.seek(sop, key)
            target = model_target(snapshot, sop, key)
            pos = None if target is None else snapshot.index(target)
            pending = True
        else:
            forward = kind == "next"
            got = it.next() if forward else it.prev()
            if pos is not None and not pending:
                pos = pos + 1 if forward else pos - 1
                if not 0 <= pos < len(snapshot):
                    pos = None
            pending = False
            assert got == (pos is not None)
            assert it.eof() == (pos is None)
            if got:
                assert it.key == snapshot[pos]
                assert it.value == model[it.key]
        assert len(r) == len(model)
    r.verify()
    assert list(r.keys()) == sorted(model)
    assert r.first() == (min(model.items()) if model else None)
    assert r.last() == (max(model.items()) if model else None)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.binary(max_size=20), max_size=60),
    st.lists(st.tuples(st.sampled_from(SEEK_OPS), st.binary(max_size=20)), max_size=20),
)
def test_seek_arbitrary_binary_keys(keys, seeks):
    r = build(keys)
    skeys = sorted(set(keys))
    it = r.iterator()
    for op, probe in seeks:
        target = model_target(skeys, op, probe)
        it.seek(op, probe)
        if target is None:
            assert not it.prev()
            continue
        pos = skeys.index(target)
        assert walk(it, True, 3) == skeys[pos : pos + 3]
        it.seek(op, probe)
        assert walk(it, False, 3) == skeys[max(0, pos - 2) : pos + 1][::-1]


# floor / ceiling: the iterator-free lookups, as seeks "<=", "<", ">=", ">".
BOUNDS = (("floor", False, "<="), ("floor", True, "<"), ("ceiling", False, ">="),
          ("ceiling", True, ">"))  # fmt: skip


def check_bounds(r: Rax, skeys: list[bytes], probe: bytes) -> None:
    for method, strict, op in BOUNDS:
        target = model_target(skeys, op, probe)
        got = getattr(r, method)(probe, strict)
        assert got == (None if target is None else (target, target)), (method, strict, probe)


def test_floor_ceiling_against_model():
    r = build(KEYS)
    for probe in PROBES:
        check_bounds(r, KEYS, probe)
    empty = Rax()
    for method, strict, _ in BOUNDS:
        assert getattr(empty, method)(b"a", strict) is None
        assert getattr(empty, method)(b"", strict) is None
    only_empty_key = build([b""])
    check_bounds(only_empty_key, [b""], b"")
    check_bounds(only_empty_key, [b""], b"a")


def test_floor_ceiling_stream_keys():
    keys = [struct.pack(">QQ", 1_700_000_000_000 + i // 3, i % 3) for i in range(0, 3000, 7)]
    r = build(keys)
    rng = random.Random(11)
    for _ in range(300):
        probe = struct.pack(">QQ", 1_700_000_000_000 + rng.randrange(-5, 1010), rng.randrange(4))
        check_bounds(r, keys, probe)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.binary(max_size=6), max_size=40),
    st.lists(st.binary(max_size=7), max_size=20),
    st.lists(st.binary(max_size=6), max_size=10),
)
def test_floor_ceiling_arbitrary_keys(keys, probes, removed):
    r = build(keys)
    for k in removed:
        r.remove(k)
    skeys = sorted(set(keys) - set(removed))
    for probe in probes + keys[:5] + removed[:3]:
        check_bounds(r, skeys, probe)


# -- append_max: the insert-at-the-end fast path -------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.lists(small_keys, max_size=40), st.lists(small_keys, max_size=40))
def test_append_max_against_model(initial, appended):
    """append_max inserts exactly the keys above the current maximum, leaves the tree
    untouched otherwise, and builds the same shape as plain inserts."""
    r = build(initial)
    model = set(initial)
    for key in appended:
        expect = not model or key > max(model)
        before = shape(r)
        assert r.append_max(key, key) == expect
        r.verify()
        if expect:
            model.add(key)
        else:
            assert shape(r) == before
        assert len(r) == len(model)
    assert list(r.items()) == [(k, k) for k in sorted(model)]
    assert shape(r) == shape(build(sorted(model)))


def test_append_max_edge_cases():
    r = Rax()
    assert r.append_max(b"") and len(r) == 1
    assert not r.append_max(b"")  # equal
    assert r.append_max(b"a", 1) and not r.append_max(b"a", 2) and r.find(b"a") == 1
    assert r.append_max(b"ab") and r.append_max(b"b") and not r.append_max(b"aa")
    assert not r.append_max(b"a")  # a prefix of larger keys
    assert r.append_max(bytearray(b"c")) and r.find(b"c") is None and b"c" in r
    r.verify()
    ids = Rax()
    for ms in range(1000, 1300):
        for seq in range(3):
            assert ids.append_max(id_key(ms, seq), (ms, seq))
    ids.verify()
    assert not ids.append_max(id_key(1100, 0))
    assert [v for v in ids.values()] == [(ms, s) for ms in range(1000, 1300) for s in range(3)]


# -- fill_sorted: building an empty tree from sorted keys ----------------------------------


@settings(max_examples=200, deadline=None)
@given(st.sets(small_keys, max_size=40))
def test_fill_sorted_matches_inserts(keys):
    ordered = sorted(keys)
    r = Rax()
    r.fill_sorted(ordered, [k + b"!" for k in ordered])
    r.verify()
    assert shape(r) == shape(build(ordered))
    assert r.node_count() == build(ordered).node_count()
    assert list(r.items()) == [(k, k + b"!") for k in ordered]
    for k in ordered[::2]:  # the built tree edits like any other
        assert r.remove(k) == (True, k + b"!")
    r.verify()
    assert shape(r) == shape(build(ordered[1::2]))


def test_fill_sorted_stream_keys_and_errors():
    keys = [id_key(ms, seq) for ms in (5, 6, 300, 70000) for seq in (0, 1, 2, 255, 256)]
    r = Rax()
    r.fill_sorted(keys)
    r.verify()
    assert shape(r) == shape(build(keys)) and list(r.values()) == [None] * len(keys)
    with pytest.raises(ValueError):
        r.fill_sorted([b"z"])  # not empty
    e = Rax()
    with pytest.raises(ValueError):
        e.fill_sorted([b"b", b"a"])
    with pytest.raises(ValueError):
        e.fill_sorted([b"a", b"a"])
    with pytest.raises(ValueError):
        e.fill_sorted([b"a"], [1, 2])
    assert len(e) == 0 and e.node_count() == 1
    e.fill_sorted([])
    e.fill_sorted([b""], [7])
    assert e.find(b"") == 7 and len(e) == 1
    e.verify()


def test_fill_sorted_unchecked_shares_the_lists_until_the_tree_is_walked():
    keys = [id_key(5, seq) for seq in range(6)]
    values: list[object] = [b"v%d" % i for i in range(6)]
    r = Rax()
    r.fill_sorted(keys, values, False)
    lazy = r.lazy_items()
    assert lazy is not None and lazy[0] is keys and lazy[1] is values  # not copied
    checked = Rax()
    checked.fill_sorted(keys, values)
    copied = checked.lazy_items()
    assert copied is not None and copied[0] == keys and copied[0] is not keys
    assert r.find(keys[3]) == b"v3"  # a walk builds the nodes: nothing lazy is left
    assert r.lazy_items() is None and list(r.items()) == list(zip(keys, values, strict=True))
    r.verify()
    assert Rax().lazy_items() is None


# -- a filled tree is built on first use: every operation sees the same tree ----------------


@settings(max_examples=150, deadline=None)
@given(st.sets(small_keys, min_size=1, max_size=30), small_keys, st.integers(0, 9))
def test_fill_sorted_lazy_tree_answers_like_a_built_one(keys, probe, op):
    """Each operation, as the first one on a freshly filled tree, answers as on a tree
    built by inserts, and leaves a tree that verifies."""
    ordered = sorted(keys)
    values = [k + b"!" for k in ordered]
    lazy, built = Rax(), build(ordered, lambda k: k + b"!")
    lazy.fill_sorted(ordered, values)
    assert len(lazy) == len(built)
    calls = [
        lambda r: r.find(probe),
        lambda r: (probe in r),
        lambda r: (r.first(), r.last()),
        lambda r: (list(r.items()), list(r.items(reverse=True))),
        lambda r: (r.floor(probe), r.ceiling(probe), r.floor(probe, True)),
        lambda r: (r.append_max(probe + b"\xff" * 3, 1), list(r.items())),
        lambda r: (r.insert(probe, 2), list(r.items())),
        lambda r: (r.remove(probe), list(r.items())),
        lambda r: (r.node_count(), shape(r)),
        lambda r: _seeked(r, probe),
    ]
    assert calls[op](lazy) == calls[op](built)
    lazy.verify()
    assert shape(lazy) == shape(built)
    lazy.clear()
    assert len(lazy) == 0 and list(lazy.items()) == [] and lazy.node_count() == 1


def _seeked(r, key):
    it = r.iterator()
    it.seek(">=", key)
    out = []
    while it.next():
        out.append((it.key, it.value))
    return out
