"""Consumer groups in storage: PELs, consumers, claims, cgroups_ref, lag (no server)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.consumer_group import (
    INVALID_ENTRIES_READ,
    acked_checker,
    create_group,
    delref_hook,
    destroy_group,
    groups,
    lookup_group,
    min_group_last_id,
    referencing_groups,
    remove_references,
    verify,
)
from storage.consumer_group_lag import (
    estimate_distance,
    group_lag,
    range_has_tombstones,
)
from storage.stream import Stream


def make_stream(*ms: int) -> Stream:
    s = Stream()
    for m in ms:
        s.append([b"f", b"v%d" % m], (m, 0))
    return s


def read_new(s, group, consumer, now, count=0, noack=False):
    """What XREADGROUP ``>`` does: deliver entries after the group's last ID."""
    out = []
    start = group.last_id
    for id, _fields in s.iter_range(start, (2**64 - 1, 2**64 - 1)):
        if id <= start:
            continue
        group.deliver(s, id, consumer, now, noack)
        out.append(id)
        if count and len(out) == count:
            break
    return out


# --- groups and consumers ------------------------------------------------------------------


def test_create_lookup_destroy_group():
    s = make_stream(1, 2, 3)
    assert s.cgroups is None and groups(s) == []
    g = create_group(s, b"g1", (0, 0))
    assert g is not None and g.name == b"g1" and g.entries_read == INVALID_ENTRIES_READ
    assert create_group(s, b"g1", (5, 0)) is None  # BUSYGROUP
    assert lookup_group(s, b"g1") is g
    assert lookup_group(s, b"nope") is None
    create_group(s, b"a", (1, 0))
    assert [x.name for x in groups(s)] == [b"a", b"g1"]  # name order
    assert min_group_last_id(s) == (0, 0)
    assert destroy_group(s, b"g1") is True
    assert destroy_group(s, b"g1") is False
    assert [x.name for x in groups(s)] == [b"a"]


def test_entries_read_capped_at_entries_added():
    s = make_stream(1)
    assert create_group(s, b"g", (1, 0), 9999).entries_read == 1
    assert create_group(s, b"h", (1, 0), 0).entries_read == 0
    assert create_group(Stream(), b"g", (0, 0), 5).entries_read == 0


def test_consumers_create_get_delete():
    s = make_stream(1, 2, 3)
    g = create_group(s, b"g", (0, 0))
    c = g.create_consumer(b"alice", 100)
    assert c.seen_time == 100 and c.active_time == -1 and len(c.pel) == 0
    assert g.create_consumer(b"alice", 200) is None
    bob, created = g.get_consumer(b"bob", 300)
    assert created and bob.seen_time == 300
    assert g.get_consumer(b"bob", 400) == (bob, False)
    read_new(s, g, bob, 500, count=2)
    assert g.delete_consumer(s, b"bob") == 2
    assert g.delete_consumer(s, b"bob") is None
    assert len(g.pel) == 0 and len(g.pel_by_time) == 0 and g.lookup_consumer(b"bob") is None
    assert s.cgroups_ref is None or len(s.cgroups_ref) == 0
    verify(s)


# --- delivering and the PEL ---------------------------------------------------------------


def test_deliver_creates_pending_entries_everywhere():
    s = make_stream(1, 2, 3)
    g = create_group(s, b"g", (0, 0))
    c, _ = g.get_consumer(b"c", 10)
    assert read_new(s, g, c, 1000) == [(1, 0), (2, 0), (3, 0)]
    assert g.last_id == (3, 0) and g.entries_read == 3
    assert len(g.pel) == len(c.pel) == len(g.pel_by_time) == 3
    nack = g.find_nack((2, 0))
    assert nack.delivery_time == 1000 and nack.delivery_count == 1 and nack.consumer is c
    assert c.active_time == 1000
    assert referencing_groups(s, (2, 0)) == [g]
    verify(s)


def test_deliver_noack_moves_last_id_only():
    s = make_stream(1, 2)
    g = create_group(s, b"g", (0, 0))
    c, _ = g.get_consumer(b"c", 10)
    read_new(s, g, c, 1000, noack=True)
    assert g.last_id == (2, 0) and g.entries_read == 2
    assert len(g.pel) == 0 and s.cgroups_ref is None
    assert c.active_time == -1


def test_redelivery_after_setid_changes_owner_and_resets_count():
    s = make_stream(1, 2)
    g = create_group(s, b"g", (0, 0))
    a, _ = g.get_consumer(b"a", 0)
    b, _ = g.get_consumer(b"b", 0)
    read_new(s, g, a, 100)
    g.claim(s, (1, 0), a, 150)  # delivery count 2
    g.set_id(s, (0, 0), 5)  # XGROUP SETID g 0 ENTRIESREAD 5
    assert g.entries_read == 2 and g.last_id == (0, 0)  # capped at entries_added
    read_new(s, g, b, 200)
    nack = g.find_nack((1, 0))
    assert nack.consumer is b and nack.delivery_count == 1 and nack.delivery_time == 200
    assert len(a.pel) == 0 and len(b.pel) == 2
    assert referencing_groups(s, (1, 0)) == [g]  # still one reference
    verify(s)


def test_two_groups_reference_the_same_entry():
    s = make_stream(1, 2)
    g1 = create_group(s, b"g1", (0, 0))
    g2 = create_group(s, b"g2", (0, 0))
    c1, _ = g1.get_consumer(b"c", 0)
    c2, _ = g2.get_consumer(b"c", 0)
    read_new(s, g1, c1, 1)
    read_new(s, g2, c2, 2)
    assert {g.name for g in referencing_groups(s, (1, 0))} == {b"g1", b"g2"}
    assert g1.remove_pending(s, (1, 0)) is not None
    assert g1.remove_pending(s, (1, 0)) is None  # XACK twice
    assert referencing_groups(s, (1, 0)) == [g2]
    assert destroy_group(s, b"g2")
    assert referencing_groups(s, (1, 0)) == []
    assert referencing_groups(s, (2, 0)) == [g1]
    verify(s)


def test_read_history_counts_deliveries_and_reports_deleted_entries():
    s = make_stream(1, 2, 3)
    g = create_group(s, b"g", (0, 0))
    c, _ = g.get_consumer(b"c", 0)
    read_new(s, g, c, 100)
    s.delete((2, 0))
    hist = g.read_history(s, c, (0, 0), 0, 500)
    assert hist == [((1, 0), [b"f", b"v1"]), ((2, 0), None), ((3, 0), [b"f", b"v3"])]
    assert g.find_nack((1, 0)).delivery_count == 2
    assert g.find_nack((1, 0)).delivery_time == 500
    assert g.find_nack((2, 0)).delivery_count == 1  # a deleted entry is left alone
    assert g.find_nack((2, 0)).delivery_time == 100
    assert g.read_history(s, c, (2, 0), 1, 600) == [((2, 0), None)]
    assert g.read_history(s, c, (3, 1), 0, 600) == []
    assert c.active_time == 100  # reading history does not count as activity
    verify(s)


# --- claiming -----------------------------------------------------------------------------


def test_claim_statuses():
    s = make_stream(1, 2, 3, 4)
    g = create_group(s, b"g", (0, 0))
    a, _ = g.get_consumer(b"a", 0)
    b, _ = g.get_consumer(b"b", 0)
    read_new(s, g, a, 1000, count=3)
    # not idle enough
    assert g.claim(s, (1, 0), b, 1050, min_idle=100)[0] == "skipped"
    status, nack, fields = g.claim(s, (1, 0), b, 1200, min_idle=100)
    assert status == "claimed" and fields == [b"f", b"v1"]
    assert nack.consumer is b and nack.delivery_count == 2 and nack.delivery_time == 1200
    assert b.active_time == 1200
    # JUSTID keeps the count, returns no fields
    status, nack, fields = g.claim(s, (2, 0), b, 1300, justid=True)
    assert status == "claimed" and fields is None and nack.delivery_count == 1
    # IDLE/TIME and RETRYCOUNT
    status, nack, _ = g.claim(s, (3, 0), b, 1400, delivery_time=900, retry_count=7)
    assert nack.delivery_time == 900 and nack.delivery_count == 7
    # not pending, no FORCE
    assert g.claim(s, (4, 0), b, 1500) == ("skipped", None, None)
    # FORCE creates it, ignoring min-idle; JUSTID keeps the initial count of 1
    status, nack, _ = g.claim(s, (4, 0), b, 1500, min_idle=10**9, force=True, justid=True)
    assert status == "claimed" and nack.delivery_count == 1 and nack.consumer is b
    # FORCE without JUSTID counts the claim as a delivery, as Redis does
    s.append([b"f", b"v5"], (5, 0))
    assert g.claim(s, (5, 0), b, 1600, force=True)[1].delivery_count == 2
    # FORCE on an ID not in the stream does nothing
    assert g.claim(s, (9, 0), b, 1600, force=True) == ("skipped", None, None)
    # an entry gone from the stream is dropped from the PEL
    s.delete((1, 0))
    status, nack, _ = g.claim(s, (1, 0), a, 2000)
    assert status == "deleted" and nack.consumer is b
    assert g.find_nack((1, 0)) is None
    assert len(a.pel) == 0
    verify(s)


def test_claim_same_consumer_keeps_it():
    s = make_stream(1)
    g = create_group(s, b"g", (0, 0))
    a, _ = g.get_consumer(b"a", 0)
    read_new(s, g, a, 0)
    assert g.claim(s, (1, 0), a, 500, min_idle=10)[0] == "claimed"
    assert list(a.pending_ids()) == [(1, 0)]
    verify(s)


def test_autoclaim_cursor_deleted_and_count():
    s = make_stream(1, 2, 3, 4, 5)
    g = create_group(s, b"g", (0, 0))
    a, _ = g.get_consumer(b"a", 0)
    b, _ = g.get_consumer(b"b", 0)
    read_new(s, g, a, 1000)
    cursor, claimed, deleted = g.autoclaim(s, b, 2000, 10, (0, 0), 2)
    assert cursor == (3, 0) and [x[0] for x in claimed] == [(1, 0), (2, 0)] and deleted == []
    assert claimed[0][2] == [b"f", b"v1"] and claimed[0][1].delivery_count == 2
    s.delete((3, 0))
    cursor, claimed, deleted = g.autoclaim(s, b, 2000, 10, cursor, 2)
    # 3-0 is dropped (counts against COUNT), 4-0 claimed; the cursor is 5-0
    assert cursor == (5, 0) and [x[0] for x in claimed] == [(4, 0)]
    assert [d[0] for d in deleted] == [(3, 0)] and deleted[0][1].consumer is a
    cursor, claimed, deleted = g.autoclaim(s, b, 2000, 10, cursor, 10, justid=True)
    assert cursor == (0, 0) and claimed[0][2] is None and claimed[0][1].delivery_count == 1
    # nothing idle enough: entries are scanned but not claimed
    cursor, claimed, _ = g.autoclaim(s, a, 2001, 10_000, (0, 0), 100)
    assert cursor == (0, 0) and claimed == []
    verify(s)


def test_autoclaim_scans_at_most_count_times_ten():
    s = make_stream(*range(1, 31))
    g = create_group(s, b"g", (0, 0))
    a, _ = g.get_consumer(b"a", 0)
    read_new(s, g, a, 1000)
    # nothing idle: 10 attempts for COUNT 1, then the cursor is the 11th entry
    cursor, claimed, _ = g.autoclaim(s, a, 1000, 5, (0, 0), 1)
    assert claimed == [] and cursor == (11, 0)
    cursor, claimed, _ = g.autoclaim(s, a, 1000, 5, cursor, 2)
    assert claimed == [] and cursor == (0, 0)  # 20 attempts reach the end


def test_claim_idle_oldest_first_with_limit():
    s = make_stream(1, 2, 3, 4)
    g = create_group(s, b"g", (0, 0))
    a, _ = g.get_consumer(b"a", 0)
    b, _ = g.get_consumer(b"b", 0)
    read_new(s, g, a, 1000, count=2)
    read_new(s, g, a, 900, count=1)  # 3-0 delivered earlier: longest idle
    g.claim(s, (1, 0), a, 1000, retry_count=5)
    assert g.oldest_delivery_time() == 900
    got = g.claim_idle(s, b, 1100, 150, limit=0)
    assert [(x[0], x[2], x[3]) for x in got] == [((3, 0), 200, 1)]
    got = g.claim_idle(s, b, 1100, 100, limit=1)
    assert [(x[0], x[2], x[3]) for x in got] == [((1, 0), 100, 5)]
    assert g.find_nack((1, 0)).delivery_count == 6 and g.find_nack((1, 0)).consumer is b
    # min-idle 0 takes everything pending exactly once, even what was just claimed
    s.delete((2, 0))
    got = g.claim_idle(s, b, 1100, 0)
    assert sorted(x[0] for x in got) == [(1, 0), (3, 0)]  # 2-0 is gone: passed over
    assert g.find_nack((2, 0)).consumer is a
    assert b.active_time == 1100
    verify(s)


def test_pending_range_and_summary():
    s = make_stream(1, 2, 3, 4)
    g = create_group(s, b"g", (0, 0))
    a, _ = g.get_consumer(b"a", 0)
    b, _ = g.get_consumer(b"b", 0)
    g.get_consumer(b"idle", 0)
    read_new(s, g, a, 1000, count=2)
    read_new(s, g, b, 2000)
    assert g.pending_summary() == (4, (1, 0), (4, 0), [(b"a", 2), (b"b", 2)])
    everything = [x[0] for x in g.pending_range((0, 0), (9, 0), 10)]
    assert everything == [(1, 0), (2, 0), (3, 0), (4, 0)]
    assert [x[0] for x in g.pending_range((2, 0), (3, 0), 10)] == [(2, 0), (3, 0)]
    assert [x[0] for x in g.pending_range((0, 0), (9, 0), 1)] == [(1, 0)]
    assert [x[0] for x in g.pending_range((0, 0), (9, 0), 10, b)] == [(3, 0), (4, 0)]
    idle = g.pending_range((0, 0), (9, 0), 10, now=2500, min_idle=1000)
    assert [x[0] for x in idle] == [(1, 0), (2, 0)]
    assert g.pending_range((3, 0), (1, 0), 10) == []
    assert g.pending_range((0, 0), (9, 0), 0) == []
    empty = create_group(s, b"e", (0, 0))
    assert empty.pending_summary() == (0, None, None, [])


# --- reference policies -------------------------------------------------------------------


def test_remove_references_and_acked_policy():
    s = make_stream(1, 2, 3)
    g1 = create_group(s, b"g1", (0, 0))
    g2 = create_group(s, b"g2", (0, 0))
    c1, _ = g1.get_consumer(b"c", 0)
    c2, _ = g2.get_consumer(b"c", 0)
    read_new(s, g1, c1, 0)
    read_new(s, g2, c2, 0, count=2)  # g2 has not delivered 3-0 yet
    can_delete = acked_checker(s)
    assert not can_delete((1, 0))  # pending in both
    g1.remove_pending(s, (1, 0))
    g2.remove_pending(s, (1, 0))
    g1.remove_pending(s, (3, 0))
    can_delete = acked_checker(s)
    assert can_delete((1, 0))
    assert not can_delete((3, 0))  # g2 could still deliver it
    assert remove_references(s, (2, 0)) == 2
    assert remove_references(s, (2, 0)) == 0
    assert g1.find_nack((2, 0)) is None and g2.find_nack((2, 0)) is None
    assert acked_checker(Stream())((5, 0)) is True  # no groups at all
    verify(s)


def test_trim_with_delref_and_acked_hooks():
    s = make_stream(*range(1, 11))
    g = create_group(s, b"g", (0, 0))
    c, _ = g.get_consumer(b"c", 0)
    read_new(s, g, c, 0, count=6)
    for i in (1, 2, 3):
        g.remove_pending(s, (i, 0))
    # ACKED: 1..3 acknowledged may go; 4..6 pending and 7.. undelivered stay
    removed = s.trim("maxlen", 0, can_delete=acked_checker(s))
    assert removed == 3 and s.first_id == (4, 0)
    # DELREF: trimming drops the pending references too
    removed = s.trim("minid", (6, 0), on_delete=delref_hook(s))
    assert removed == 2
    assert [x[0] for x in g.iter_pending()] == [(6, 0)]
    verify(s)


# --- lag and read counters (the cases of Redis's stream-cgroups.tcl) -------------------------


def info(s, g):
    return g.entries_read if g.entries_read != INVALID_ENTRIES_READ else None, group_lag(s, g)


def test_lag_in_empty_streams():
    s = Stream()
    g = create_group(s, b"g1", (0, 0))
    assert info(s, g) == (None, 0)
    s.append([b"data", b"a"], (1, 0))
    s.delete((1, 0))
    assert s.max_deleted_entry_id == (1, 0) and s.entries_added == 1
    assert info(s, g) == (None, 0)


def test_lag_sanity():
    s = make_stream(1, 2, 3, 4, 5)
    g = create_group(s, b"g1", (0, 0))
    c, _ = g.get_consumer(b"c", 0)
    assert info(s, g) == (None, 5)
    read_new(s, g, c, 0, count=1)
    assert info(s, g) == (1, 4)
    read_new(s, g, c, 0, count=10)
    assert info(s, g) == (5, 0)
    s.append([b"f", b"x"], (6, 0))
    assert info(s, g) == (5, 1)


def test_lag_with_xdels_and_trims():
    s = make_stream(1, 2, 3, 4, 5)
    s.delete((3, 0))
    g1 = create_group(s, b"g1", (0, 0))
    g2 = create_group(s, b"g2", (0, 0))
    c, _ = g1.get_consumer(b"c", 0)
    assert info(s, g1) == (None, None)
    for _ in range(3):
        read_new(s, g1, c, 0, count=1)
        assert info(s, g1) == (None, None)
    read_new(s, g1, c, 0, count=1)
    assert info(s, g1) == (5, 0)
    s.append([b"f", b"x"], (6, 0))
    assert info(s, g1) == (5, 1)
    s.trim("minid", (3, 0))
    assert info(s, g1) == (5, 1) and info(s, g2) == (None, 3)
    s.trim("minid", (5, 0))
    assert info(s, g1) == (5, 1) and info(s, g2) == (None, 2)


def test_lag_with_tombstone_after_last_id():
    s = Stream()
    g = create_group(s, b"g1", (0, 0))
    c, _ = g.get_consumer(b"alice", 0)
    s.append([b"data", b"a"], (1, 0))
    read_new(s, g, c, 0)
    s.append([b"data", b"c"], (2, 0))
    s.append([b"data", b"d"], (3, 0))
    s.delete((2, 0))
    assert info(s, g) == (1, None)
    s.delete((1, 0))
    assert info(s, g) == (1, 1)
    read_new(s, g, c, 0)
    assert info(s, g) == (3, 0)


def test_lag_with_xtrim():
    s = Stream()
    g = create_group(s, b"mygroup", (0, 0))
    c, _ = g.get_consumer(b"alice", 0)
    for i in range(1, 6):
        s.append([b"data", b"x"], (i, 0))
    read_new(s, g, c, 0, count=1)
    assert info(s, g) == (1, 4)
    s.trim("maxlen", 1)
    assert s.max_deleted_entry_id == (0, 0)
    assert info(s, g) == (1, 1)
    read_new(s, g, c, 0)
    assert info(s, g) == (5, 0)
    s.append([b"data", b"f"], (6, 0))
    assert info(s, g) == (5, 1)
    s.trim("maxlen", 0)
    assert info(s, g)[1] == 0


def test_estimate_distance_cases():
    assert estimate_distance(Stream(), (5, 0)) == 0
    s = make_stream(1, 2, 3, 4)
    assert estimate_distance(s, (4, 0)) == 4  # the last ID
    assert estimate_distance(s, (9, 0)) == INVALID_ENTRIES_READ  # the future
    assert estimate_distance(s, (1, 0)) == 1  # the first entry
    assert estimate_distance(s, (0, 5)) == 0  # before the first entry
    assert estimate_distance(s, (2, 0)) == INVALID_ENTRIES_READ  # somewhere inside
    s.delete((3, 0))
    assert estimate_distance(s, (2, 0)) == INVALID_ENTRIES_READ  # before a tombstone
    assert estimate_distance(s, (0, 0)) == INVALID_ENTRIES_READ  # fragmented ahead
    s.trim("maxlen", 0)
    assert estimate_distance(s, (2, 0)) == 4  # empty: all of it is behind


def test_range_has_tombstones():
    s = make_stream(1, 2, 3)
    assert not range_has_tombstones(s)
    s.delete((2, 0))
    assert range_has_tombstones(s)
    assert range_has_tombstones(s, (1, 0), (2, 0))
    assert not range_has_tombstones(s, (2, 1), None)
    assert not range_has_tombstones(s, None, (1, 9))
    s.delete((1, 0))
    # the tombstone is before the first entry, yet still after 1-0
    assert range_has_tombstones(s, (1, 0), None)


# --- random operation sequences keep every index consistent ---------------------------------

_OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "read",
                "noack",
                "ack",
                "claim",
                "autoclaim",
                "idle",
                "history",
                "delconsumer",
                "xdel",
                "delref",
                "trim",
                "setid",
                "destroy",
                "create",
                "force",
            ]
        ),
        st.integers(0, 2),  # group
        st.integers(0, 2),  # consumer
        st.integers(1, 12),  # entry / count
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(_OPS)
def test_random_operations_keep_indexes_consistent(ops):
    s = make_stream(*range(1, 13))
    names = [b"g0", b"g1", b"g2"]
    for name in names:
        create_group(s, name, (0, 0))
    now = 1000
    for op, gi, ci, n in ops:
        now += 7
        g = lookup_group(s, names[gi])
        if op == "create":
            create_group(s, names[gi], (0, 0))
            continue
        if g is None:
            continue
        c, _ = g.get_consumer(b"c%d" % ci, now)
        if op == "read":
            read_new(s, g, c, now, count=n)
        elif op == "noack":
            read_new(s, g, c, now, count=n, noack=True)
        elif op == "ack":
            g.remove_pending(s, (n, 0))
        elif op == "claim":
            g.claim(s, (n, 0), c, now, min_idle=10)
        elif op == "force":
            g.claim(s, (n, 0), c, now, force=True, justid=True)
        elif op == "autoclaim":
            g.autoclaim(s, c, now, 5, (0, 0), n)
        elif op == "idle":
            g.claim_idle(s, c, now, 0, n)
        elif op == "history":
            g.read_history(s, c, (0, 0), n, now)
        elif op == "delconsumer":
            g.delete_consumer(s, c.name)
        elif op == "xdel":
            s.delete((n, 0))
        elif op == "delref":
            s.delete((n, 0))
            remove_references(s, (n, 0))
        elif op == "trim":
            s.trim("maxlen", 12 - n, can_delete=acked_checker(s))
        elif op == "setid":
            g.set_id(s, (n // 2, 0))
        elif op == "destroy":
            destroy_group(s, names[gi])
        verify(s)
        for grp in groups(s):
            lag = group_lag(s, grp)
            assert lag is None or 0 <= lag <= s.entries_added


@pytest.mark.parametrize("t", [-5, 0, 2**64 + 3])
def test_odd_delivery_times_stay_consistent(t):
    s = make_stream(1)
    g = create_group(s, b"g", (0, 0))
    c, _ = g.get_consumer(b"c", 0)
    g.add_pending(s, (1, 0), c, t, 3)
    verify(s)
    g.claim(s, (1, 0), c, 10)
    verify(s)
    assert g.remove_pending(s, (1, 0)).delivery_count == 4
    verify(s)
