"""storage: a stream's IDMP state (stream_idmp, idmp_hash) and a group's NACK zone
(consumer_group_nack), with property tests against simple models."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.consumer_group import create_group, verify
from storage.consumer_group_nack import FAIL, FATAL, SILENT
from storage.consumer_group_pel import MAX_DELIVERY_COUNT
from storage.idmp_hash import auto_iid, available
from storage.stream import Stream
from storage.stream_idmp import RECORD_CONFLICT, RECORD_NEW, RECORD_SAME, IdmpState


def test_record_lookup_and_eviction() -> None:
    state = IdmpState(100, 2)
    state.record(b"p", b"a", (1, 0))
    state.record(b"p", b"b", (2, 0))
    assert state.duplicate(b"p", b"a") == (1, 0) and state.iids_duplicates == 1
    state.record(b"p", b"c", (3, 0))  # past the maxsize: "a" goes
    assert state.lookup(b"p", b"a") is None
    assert (state.pids_tracked, state.iids_tracked, state.iids_added) == (1, 2, 3)
    assert state.lookup_or_record(b"p", b"b", (2, 0)) == RECORD_SAME
    assert state.lookup_or_record(b"p", b"b", (9, 0)) == RECORD_CONFLICT
    assert state.lookup_or_record(b"q", b"b", (9, 0)) == RECORD_NEW


def test_expire_by_entry_age_and_configure() -> None:
    state = IdmpState(10, 100)
    state.record(b"p", b"old", (1_000, 0))
    state.record(b"p", b"new", (20_000, 0))
    state.record(b"q", b"old", (5_000, 0))
    assert state.expire(15_000)  # threshold 5000: ms <= 5000 go
    assert list(state.records()) == [(b"p", b"new", (20_000, 0))]
    assert not state.configure(10, 100)  # the same values clear nothing
    assert state.iids_tracked == 1
    assert state.configure(None, 5) and state.iids_tracked == 0 and state.maxsize == 5


@given(st.lists(st.tuples(st.sampled_from([b"p", b"q", b"r"]), st.binary(min_size=1,
                                                                          max_size=3)),
                max_size=60),
       st.integers(1, 5))
@settings(max_examples=80, deadline=None)
def test_records_round_trip_and_model(ops: list[tuple[bytes, bytes]], maxsize: int) -> None:
    state = IdmpState(100, maxsize)
    model: dict[bytes, dict[bytes, tuple[int, int]]] = {}
    for n, (pid, iid) in enumerate(ops):
        if state.duplicate(pid, iid) is None:
            state.record(pid, iid, (n, 0))
            iids = model.setdefault(pid, {})
            iids[iid] = (n, 0)
            if len(iids) > maxsize:
                del iids[next(iter(iids))]
    assert state.producers == model
    copy = IdmpState.from_records(state.duration, state.maxsize, state.records(),
                                  state.iids_added, state.iids_duplicates)
    assert copy.producers == state.producers
    assert {p: list(v) for p, v in copy.producers.items()} == {
        p: list(v) for p, v in model.items()}  # each producer's iids oldest first


@pytest.mark.skipif(not available(), reason="no libxxhash")
def test_auto_iid_is_order_independent_and_length_separated() -> None:
    assert auto_iid([b"a", b"1", b"b", b"2"]) == auto_iid([b"b", b"2", b"a", b"1"])
    assert auto_iid([b"ab", b"c"]) != auto_iid([b"a", b"bc"])
    assert len(auto_iid([b"f", b"v"])) == 16


def _stream_with_group(n: int) -> tuple[Stream, object]:
    s = Stream()
    for i in range(1, n + 1):
        s.append([b"f", b"v"], (i, 0))
    group = create_group(s, b"g", (0, 0))
    assert group is not None
    consumer, _ = group.get_consumer(b"c", 0)
    group.deliver_new(s, [(i, 0) for i in range(1, n + 1)], consumer, 1000)
    return s, group


def test_nack_modes_and_zone() -> None:
    s, group = _stream_with_group(4)
    assert group.nack(s, [(3, 0), (1, 0)], FAIL) == 2
    assert group.nack(s, [(2, 0)], SILENT) == 1
    assert group.nack(s, [(9, 0)], FATAL) == 0
    assert [eid for eid, _ in group.iter_nacked()] == [(3, 0), (1, 0), (2, 0)]
    assert group.find_nack((2, 0)).delivery_count == 0
    assert group.nack(s, [(1, 0)], FATAL) == 1  # re-released: to the zone's end
    assert [eid for eid, _ in group.iter_nacked()] == [(3, 0), (2, 0), (1, 0)]
    assert group.find_nack((1, 0)).delivery_count == MAX_DELIVERY_COUNT
    verify(s)
    other, _ = group.get_consumer(b"d", 0)
    taken = group.claim_idle(s, other, 2000, 10**9)
    assert [t[0] for t in taken] == [(3, 0), (2, 0), (1, 0)]
    assert group.find_nack((1, 0)).delivery_count == MAX_DELIVERY_COUNT  # saturated
    assert not group.nacked
    verify(s)


def test_force_creates_unowned_entries_for_live_entries_only() -> None:
    s, group = _stream_with_group(2)
    group.ack(s, [(1, 0), (2, 0)])
    assert group.nack(s, [(1, 0), (7, 0)], SILENT, retry_count=5, force=True) == 1
    assert group.find_nack((1, 0)).delivery_count == 5
    assert group.find_nack((7, 0)) is None
    verify(s)


@given(st.lists(st.tuples(st.sampled_from(["nack", "ack", "claim", "xclaim"]),
                          st.integers(1, 6), st.sampled_from([SILENT, FAIL, FATAL]),
                          st.booleans()), max_size=40))
@settings(max_examples=80, deadline=None)
def test_pel_trees_stay_consistent(ops: list[tuple[str, int, str, bool]]) -> None:
    s, group = _stream_with_group(6)
    consumer, _ = group.get_consumer(b"x", 0)
    now = 5000
    for op, n, mode, force in ops:
        now += 1
        if op == "nack":
            group.nack(s, [(n, 0)], mode, force=force)
        elif op == "ack":
            group.ack(s, [(n, 0)])
        elif op == "claim":
            group.claim_idle(s, consumer, now, 0, 2)
        else:
            group.claim(s, (n, 0), consumer, now, force=force)
        verify(s)
        # the zone is exactly the unowned entries, each with delivery time 0
        unowned = {eid for eid, nack in group.iter_pending() if nack.consumer is None}
        assert unowned == {eid for eid, _ in group.iter_nacked()}
