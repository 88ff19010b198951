"""XCLAIM in storage: a FORCE of an ID above every pending one goes in by the trees' right
edge (what an AOF's propagated XCLAIMs do), and a JUSTID claim checks the entry without
reading its fields. The trees must end as the general path leaves them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from storage.consumer_group import create_group, verify
from storage.stream import Stream

FIELDS = [b"f1", b"value-1", b"f2", b"12345"]


def stream_of(n: int) -> Stream:
    s = Stream()
    for i in range(1, n + 1):
        s.append(FIELDS, (1000 + i // 3, i % 3), True, None, 200, 5)  # small nodes
    return s


def ids_of(s: Stream) -> list[tuple[int, int]]:
    return [eid for eid, _ in s.iter_range((0, 0), (2**64 - 1, 2**64 - 1))]


def pel_state(s: Stream) -> dict[bytes, list[tuple[tuple[int, int], int, int, bytes]]]:
    """Each group's pending entries: (id, delivery time, count, owner), in ID order."""
    out = {}
    for group in (s.cgroups.values() if s.cgroups is not None else ()):
        out[group.name] = [(eid, n.delivery_time, n.delivery_count, n.consumer.name)
                           for eid, n in group.iter_pending()]
    return out


def test_force_ascending_builds_the_same_trees_as_one_by_one():
    s = stream_of(60)
    ids = ids_of(s)
    g = create_group(s, b"g", (0, 0))
    other = create_group(s, b"h", (0, 0))  # also holds some of the IDs: shared refs
    c, _ = g.get_consumer(b"c", 0)
    d, _ = other.get_consumer(b"d", 0)
    for i, eid in enumerate(ids[10:30]):
        other.claim(s, eid, d, 50, delivery_time=40 + i, force=True, justid=True)
    for i, eid in enumerate(ids):
        status, nack, fields = g.claim(s, eid, c, 100, delivery_time=10 + i // 4,
                                       retry_count=1 + i % 3, force=True, justid=True)
        assert status == "claimed" and fields is None
        assert (nack.delivery_time, nack.delivery_count, nack.consumer) == (10 + i // 4,
                                                                            1 + i % 3, c)
    verify(s)
    assert [eid for eid, _ in g.iter_pending()] == ids
    assert list(c.pending_ids()) == ids
    assert c.active_time == 100


def test_force_counts_without_justid_or_retrycount():
    s = stream_of(4)
    ids = ids_of(s)
    g = create_group(s, b"g", (0, 0))
    c, _ = g.get_consumer(b"c", 0)
    status, nack, fields = g.claim(s, ids[0], c, 500, force=True)
    assert status == "claimed" and fields == FIELDS
    assert (nack.delivery_time, nack.delivery_count) == (500, 2)  # a delivery, then a claim
    status, nack, fields = g.claim(s, ids[1], c, 600, force=True, justid=True)
    assert fields is None and (nack.delivery_time, nack.delivery_count) == (600, 1)
    status, nack, _ = g.claim(s, ids[2], c, 700, delivery_time=650, retry_count=0, force=True)
    assert (nack.delivery_time, nack.delivery_count) == (650, 0)
    verify(s)


def test_force_below_the_pending_ones_and_over_a_pending_one():
    s = stream_of(10)
    ids = ids_of(s)
    g = create_group(s, b"g", (0, 0))
    a, _ = g.get_consumer(b"a", 0)
    b, _ = g.get_consumer(b"b", 0)
    g.claim(s, ids[8], a, 100, force=True, justid=True)
    # below the highest pending ID: the general insert
    status, nack, _ = g.claim(s, ids[2], b, 200, delivery_time=150, force=True, justid=True)
    assert status == "claimed" and (nack.delivery_time, nack.consumer) == (150, b)
    # already pending (the highest one): it changes owner and time, keeps its count
    status, nack, _ = g.claim(s, ids[8], b, 300, delivery_time=250, force=True, justid=True)
    assert (nack.delivery_time, nack.delivery_count, nack.consumer) == (250, 1, b)
    assert len(a.pel) == 0 and list(b.pending_ids()) == [ids[2], ids[8]]
    verify(s)


def test_justid_of_a_deleted_entry_drops_it():
    s = stream_of(6)
    ids = ids_of(s)
    g = create_group(s, b"g", (0, 0))
    a, _ = g.get_consumer(b"a", 0)
    b, _ = g.get_consumer(b"b", 0)
    for eid in ids[:3]:
        g.claim(s, eid, a, 100, force=True, justid=True)
    s.delete(ids[1])
    status, nack, fields = g.claim(s, ids[1], b, 200, force=True, justid=True)
    assert status == "deleted" and nack.consumer is a and fields is None
    assert g.find_nack(ids[1]) is None
    # FORCE of a deleted entry that is not pending does nothing
    assert g.claim(s, ids[1], b, 300, force=True, justid=True) == ("skipped", None, None)
    # an ID above the stream's last one
    assert g.claim(s, (9999, 0), b, 300, force=True, justid=True) == ("skipped", None, None)
    verify(s)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 29), st.sampled_from([b"a", b"b"]),
                          st.integers(0, 50), st.integers(-1, 3), st.booleans(),
                          st.booleans()), max_size=60),
       st.sets(st.integers(0, 29), max_size=6))
def test_random_claims_agree_with_the_rules(claims, deleted):
    """Any order of claims: each one's effect is XCLAIM's, and the trees agree."""
    s = stream_of(30)
    ids = ids_of(s)
    for i in deleted:
        s.delete(ids[i])
    g = create_group(s, b"g", (0, 0))
    model: dict[tuple[int, int], tuple[int, int, bytes]] = {}
    for step, (i, name, when, retry, force, justid) in enumerate(claims):
        consumer, _ = g.get_consumer(name, 0)
        now = 1000 + step
        eid = ids[i]
        status, nack, fields = g.claim(s, eid, consumer, now, delivery_time=when,
                                       retry_count=retry, force=force, justid=justid)
        if i in deleted:
            assert status in ("deleted", "skipped") and fields is None
            assert (status == "deleted") == (eid in model)
            model.pop(eid, None)
            continue
        if eid not in model and not force:
            assert (status, nack, fields) == ("skipped", None, None)
            continue
        assert status == "claimed"
        assert fields == (None if justid else FIELDS)
        old = model.get(eid)
        if retry >= 0:
            count = retry
        elif old is None:
            count = 1 if justid else 2
        else:
            count = old[1] if justid else old[1] + 1
        model[eid] = (when, count, name)
        assert (nack.delivery_time, nack.delivery_count, nack.consumer.name) == model[eid]
    verify(s)
    assert pel_state(s).get(b"g", []) == sorted((eid, *v) for eid, v in model.items())
