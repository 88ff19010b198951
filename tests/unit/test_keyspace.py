"""storage.keyspace (databases, expiry, SCAN) and storage.glob (Redis's stringmatch)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import storage.keyspace as keyspace
from storage.glob import compile_glob, glob_match
from storage.keyspace import Database, StringValue, object_encoding, type_name


class Clock:
    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def make_db(clock: Clock | None = None) -> tuple[Database, list[bytes]]:
    db = Database(0, clock or Clock())
    expired: list[bytes] = []
    db.on_expire = lambda _db, key: expired.append(key)
    return db, expired


def scan_all(db: Database, count: int = 3, **kw: object) -> list[bytes]:
    cursor, seen = 0, []
    while True:
        cursor, keys = db.scan(cursor, count, kw.get("pattern"), kw.get("type_filter"))  # type: ignore[arg-type]
        seen.extend(keys)
        if cursor == 0:
            return seen


# -- basic storage and expiry -----------------------------------------------------------------
def test_set_get_delete_and_ttl_kept_or_cleared() -> None:
    db, _ = make_db()
    db.set(b"k", StringValue(b"v"))
    assert isinstance(db.get(b"k"), StringValue) and len(db) == 1
    db.set_expire(b"k", 2_000_000)
    db.set(b"k", StringValue(b"w"), keep_ttl=True)
    assert db.get_expire(b"k") == 2_000_000
    db.set(b"k", StringValue(b"x"))
    assert db.get_expire(b"k") is None
    assert db.delete(b"k") is True
    assert db.delete(b"k") is False
    assert db.get(b"k") is None


def test_lazy_expiry_on_access_calls_on_expire() -> None:
    clock = Clock()
    db, expired = make_db(clock)
    db.set(b"a", StringValue(b"1"))
    db.set_expire(b"a", clock.now + 10)
    clock.now += 9
    assert b"a" in db and expired == []
    clock.now += 1  # the expire time itself counts as expired
    assert db.get(b"a") is None
    assert expired == [b"a"] and len(db) == 0 and not db.expires


def test_delete_of_an_expired_key_reports_nothing_deleted() -> None:
    clock = Clock()
    db, expired = make_db(clock)
    db.set(b"a", StringValue(b"1"))
    db.set_expire(b"a", clock.now - 1)
    assert db.delete(b"a") is False
    assert expired == [b"a"]


def test_persist() -> None:
    db, _ = make_db()
    db.set(b"a", StringValue(b"1"))
    assert db.persist(b"a") is False
    db.set_expire(b"a", 5_000_000)
    assert db.persist(b"a") is True and db.get_expire(b"a") is None


def test_active_expire_removes_expired_keys_only() -> None:
    clock = Clock()
    db, expired = make_db(clock)
    for i in range(3000):
        key = b"k%d" % i
        db.set(key, StringValue(b"v"))
        if i % 2 == 0:
            db.set_expire(key, clock.now - 1)  # already past
        elif i % 3 == 0:
            db.set_expire(key, clock.now + 100_000)
    removed: list[bytes] = []
    for _ in range(400):
        removed += db.active_expire().removed
        if len(removed) == 1500:
            break
    assert sorted(removed) == sorted(b"k%d" % i for i in range(0, 3000, 2))
    assert sorted(expired) == sorted(removed)
    assert len(db) == 1500
    assert all(when > clock.now for when in db.expires.values())


def test_active_expire_reports_what_it_sampled_and_whether_it_stopped_early() -> None:
    clock = Clock()
    db, _ = make_db(clock)
    for i in range(1000):
        db.set(b"k%d" % i, StringValue(b"v"))
        db.set_expire(b"k%d" % i, clock.now - 1)
    # Every sample is all expired: it goes on for its 16 rounds of 20 and stops with keys
    # left to expire (Redis stops at its time limit instead).
    cycle = db.active_expire()
    assert (len(cycle.removed), cycle.sampled, cycle.stopped_early) == (320, 320, True)
    for i in range(1000):  # live keys with a TTL: the first sample ends the cycle
        db.set(b"live%d" % i, StringValue(b"v"))
        db.set_expire(b"live%d" % i, clock.now + 100_000)
    while any(when <= clock.now for when in db.expires.values()):
        db.active_expire()
    cycle = db.active_expire()
    assert cycle == ([], 20, False)


def test_active_expire_can_be_disabled() -> None:
    clock = Clock()
    db, expired = make_db(clock)
    db.set(b"a", StringValue(b"1"))
    db.set_expire(b"a", clock.now - 1)
    db.active_expire_enabled = False
    assert db.active_expire() == ([], 0, False) and len(db) == 1
    db.active_expire_enabled = True
    assert db.active_expire() == ([b"a"], 1, False) and expired == [b"a"]


def test_paused_expiry_hides_expired_keys_without_deleting_them() -> None:
    clock = Clock()
    db, expired = make_db(clock)
    db.set(b"a", StringValue(b"1"))
    db.set_expire(b"a", clock.now - 1)
    db.set(b"b", StringValue(b"2"))
    db.expiry_paused = True
    assert db.get(b"a") is None and b"a" not in db
    assert db.delete(b"a") is False
    assert db.keys_matching(b"*") == [b"b"]
    assert db.active_expire() == ([], 0, False)
    assert len(db) == 2 and expired == []  # still held, nothing propagated
    db.add(b"a", StringValue(b"new"))  # a new key in its place has no TTL
    assert db.get(b"a").data == b"new" and db.get_expire(b"a") is None  # type: ignore[union-attr]
    db.set_expire(b"b", clock.now - 1)
    db.expiry_paused = False
    assert db.get(b"b") is None and expired == [b"b"] and len(db) == 1


def test_avg_ttl() -> None:
    clock = Clock()
    db, _ = make_db(clock)
    assert db.avg_ttl() == 0
    for i, left in enumerate((1000, 3000)):
        db.set(b"k%d" % i, StringValue(b"v"))
        db.set_expire(b"k%d" % i, clock.now + left)
    db.set(b"plain", StringValue(b"v"))
    assert db.avg_ttl() == 2000


def test_clear_and_swap_contents() -> None:
    a, _ = make_db()
    b = Database(1, a.clock)
    a.set(b"x", StringValue(b"1"))
    a.set_expire(b"x", 9_000_000)
    b.set(b"y", StringValue(b"2"))
    a.swap_contents(b)
    assert (a.id, b.id) == (0, 1)
    assert list(a.data) == [b"y"] and list(b.data) == [b"x"]
    assert b.get_expire(b"x") == 9_000_000 and not a.expires
    assert b.clear() == 1 and len(b) == 0 and not b.expires


def test_random_key_skips_expired_keys() -> None:
    clock = Clock()
    db, expired = make_db(clock)
    assert db.random_key() is None
    db.set(b"dead", StringValue(b"v"))
    db.set_expire(b"dead", clock.now - 1)
    db.set(b"live", StringValue(b"v"))
    for _ in range(20):
        assert db.random_key() == b"live"
    assert len(db) == 1 and expired == [b"dead"]


def test_random_key_large_db() -> None:
    db, _ = make_db()
    for i in range(5000):
        db.set(b"k%d" % i, StringValue(b"v"))
    assert len({db.random_key() for _ in range(50)}) > 10


def test_keys_matching() -> None:
    clock = Clock()
    db, _ = make_db(clock)
    for key in (b"user:1", b"user:2", b"order:1", b"u"):
        db.set(key, StringValue(b"v"))
    db.set_expire(b"user:2", clock.now - 1)
    assert sorted(db.keys_matching(b"user:*")) == [b"user:1"]
    assert sorted(db.keys_matching(b"*")) == [b"order:1", b"u", b"user:1"]
    assert db.keys_matching(b"?") == [b"u"]


def test_type_name_and_object_encoding() -> None:
    assert type_name(StringValue(b"x")) == "string"

    class Stream:  # storage.stream.Stream is recognised by name, without importing it
        pass

    assert type_name(Stream()) == "stream"
    assert object_encoding(Stream()) == "stream"
    assert type_name(object()) == "none"
    cases = {b"0": "int", b"-1": "int", b"12": "int", b"9223372036854775807": "int",
             b"-9223372036854775808": "int", b"9223372036854775808": "embstr", b"01": "embstr",
             b"+1": "embstr", b" 1": "embstr", b"": "embstr", b"x" * 44: "embstr",
             b"x" * 45: "raw"}
    for data, encoding in cases.items():
        assert object_encoding(StringValue(data)) == encoding, data


# -- SCAN --------------------------------------------------------------------------------------
def test_scan_visits_every_key_once_when_nothing_changes() -> None:
    db, _ = make_db()
    keys = {b"key:%d" % i for i in range(500)}
    for key in keys:
        db.set(key, StringValue(b"v"))
    seen = scan_all(db, count=7)
    assert len(seen) == len(keys) and set(seen) == keys


def test_scan_empty_db_and_huge_cursor() -> None:
    db, _ = make_db()
    assert db.scan(0, 10, None, None) == (0, [])
    db.set(b"a", StringValue(b"v"))
    assert db.scan(2**64 - 1, 10, None, None)[0] == 0


def test_scan_match_and_type_filters() -> None:
    db, _ = make_db()

    class Stream:
        pass

    for i in range(50):
        db.set(b"s:%d" % i, StringValue(b"v"))
        db.add(b"x:%d" % i, Stream())
    assert sorted(scan_all(db, pattern=b"s:1*")) == sorted(
        [b"s:1"] + [b"s:1%d" % i for i in range(10)])
    assert len(scan_all(db, type_filter="stream")) == 50
    assert scan_all(db, type_filter="hash") == []


def test_scan_keys_sharing_a_hash_come_together(monkeypatch: pytest.MonkeyPatch) -> None:
    # A coarse hash puts many keys on each position; a cursor between two of them would skip.
    monkeypatch.setattr(keyspace, "scan_hash", lambda key: len(key) % 3)
    db, _ = make_db()
    keys = {b"k" * n for n in range(1, 40)}
    for key in keys:
        db.set(key, StringValue(b"v"))
    seen = scan_all(db, count=2)
    assert sorted(seen) == sorted(keys)


@settings(max_examples=60, deadline=None)
@given(
    initial=st.sets(st.binary(min_size=1, max_size=4), max_size=60),
    steps=st.lists(st.tuples(st.booleans(), st.binary(min_size=1, max_size=4)), max_size=40),
    count=st.integers(min_value=1, max_value=8),
)
def test_scan_guarantee_under_changes(initial: set[bytes], steps: list[tuple[bool, bytes]],
                                      count: int) -> None:
    """Keys present for the whole iteration are returned; returned keys existed at some point."""
    db, _ = make_db()
    for key in initial:
        db.set(key, StringValue(b"v"))
    ever = set(initial)
    always = set(initial)
    cursor, seen, i = 0, set(), 0
    while True:
        cursor, keys = db.scan(cursor, count, None, None)
        seen.update(keys)
        if i < len(steps):  # change the keyspace between calls
            add, key = steps[i]
            i += 1
            if add:
                db.set(key, StringValue(b"v"))
                ever.add(key)
            else:
                db.delete(key)
                always.discard(key)
        if cursor == 0:
            break
    assert always <= seen <= ever


def test_scan_lists_a_deleted_and_recreated_key_once() -> None:
    db, _ = make_db()
    db.set(b"k", StringValue(b"v"))
    assert db.scan(0, 10, None, None) == (0, [b"k"])  # builds the index
    for _ in range(50):
        db.delete(b"k")
        db.set(b"k", StringValue(b"v"))
        db.scan(0, 10, None, None)
    assert db.scan(0, 10, None, None) == (0, [b"k"])


@settings(max_examples=80, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from(["add", "del", "scan"]),
                                st.binary(min_size=1, max_size=2)), max_size=80),
       count=st.integers(min_value=1, max_value=8))
def test_scan_after_any_changes_lists_every_key_exactly_once(
        steps: list[tuple[str, bytes]], count: int) -> None:
    """Whatever was added, deleted and scanned before, a full iteration with no changes
    during it returns each live key once."""
    db, _ = make_db()
    for action, key in steps:
        if action == "add":
            db.set(key, StringValue(b"v"))
        elif action == "del":
            db.delete(key)
        else:
            db.scan(0, count, None, None)
    listed = scan_all(db, count=count)
    assert sorted(listed) == sorted(db.data)


# -- glob ---------------------------------------------------------------------------------------
def reference_match(p: bytes, s: bytes) -> bool:
    """A direct recursive reading of Redis's stringmatchlen, as an oracle. Its loop runs
    while both pattern and string are left, so an empty string matches only the empty
    pattern ("*" included: KEYS * and SCAN MATCH * list every key by their own shortcut)."""
    return not p if not s else _reference_match(p, s)


def _reference_match(p: bytes, s: bytes) -> bool:
    if not p:
        return not s
    c = p[0]
    if c == ord("*"):
        while len(p) > 1 and p[1] == ord("*"):
            p = p[1:]
        if len(p) == 1:
            return True
        return any(_reference_match(p[1:], s[i:]) for i in range(len(s)))
    if not s:
        return False
    if c == ord("?"):
        return _reference_match(p[1:], s[1:])
    if c == ord("["):
        i = 1
        negate = i < len(p) and p[i] == ord("^")
        if negate:
            i += 1
        hit = False
        while True:
            if i < len(p) and p[i] == ord("\\") and len(p) - i >= 2:
                i += 1
                hit |= p[i] == s[0]
            elif i < len(p) and p[i] == ord("]"):
                break
            elif i >= len(p):
                i -= 1
                break
            elif len(p) - i >= 3 and p[i + 1] == ord("-"):
                lo, hi = sorted((p[i], p[i + 2]))
                hit |= lo <= s[0] <= hi
                i += 2
            else:
                hit |= p[i] == s[0]
            i += 1
        if hit == negate:
            return False
        return _reference_match(p[i + 1:], s[1:])
    if c == ord("\\") and len(p) >= 2:
        p = p[1:]
        c = p[0]
    return c == s[0] and _reference_match(p[1:], s[1:])


@pytest.mark.parametrize(
    ("pattern", "key", "expected"),
    [(b"*", b"", False), (b"**", b"", False), (b"", b"", True), (b"*", b"abc", True),
     (b"a*", b"a", True), (b"a*c", b"abbbc", True),
     (b"a*c", b"abbb", False), (b"h?llo", b"hello", True), (b"h?llo", b"hllo", False),
     (b"h[ae]llo", b"hallo", True), (b"h[ae]llo", b"hillo", False), (b"h[^e]llo", b"hallo", True),
     (b"h[^e]llo", b"hello", False), (b"h[a-b]llo", b"hbllo", True), (b"[z-a]", b"m", True),
     (b"\\*", b"*", True), (b"\\*", b"a", False), (b"a\\", b"a\\", True), (b"[abc", b"b", True),
     (b"[]]", b"]", False), (b"[\\]]", b"]", True), (b"*.txt", b"x.txt", True),
     (b"pre*", b"prefix", True), (b"*mid*", b"a mid b", True), (b"exact", b"exact", True),
     (b"exact", b"exactly", False), (b"\x00*", b"\x00\xff", True)],
)
def test_glob_cases(pattern: bytes, key: bytes, expected: bool) -> None:
    assert glob_match(pattern, key) is expected
    assert reference_match(pattern, key) is expected


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=7).map(lambda b: bytes(b"ab*?[]^-\\"[x % 9] for x in b)),
       st.binary(max_size=7).map(lambda b: bytes(b"ab*]-\\c"[x % 7] for x in b)))
def test_glob_agrees_with_reference(pattern: bytes, key: bytes) -> None:
    assert compile_glob(pattern)(key) == reference_match(pattern, key)


def test_glob_has_no_exponential_blowup() -> None:
    # Nested stars against a long non-matching key: quadratic at worst, so this is instant.
    assert not glob_match(b"*a*a*a*a*a*a*a*a*a*a*b", b"a" * 3000)


def test_scan_reindexes_after_the_data_dict_is_replaced() -> None:
    db, _ = make_db()
    db.set(b"old", StringValue(b"v"))
    assert scan_all(db) == [b"old"]
    db.data = {b"new:%d" % i: StringValue(b"v") for i in range(20)}  # as a reload does
    assert sorted(scan_all(db)) == sorted(db.data)
