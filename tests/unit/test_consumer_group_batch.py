"""The batch paths of consumer groups (deliver_new, ack and their fast paths: trees built
whole, appended at the end, emptied whole) leave exactly the state the one-entry
primitives (deliver, remove_pending) leave."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from storage.consumer_group import create_group, groups, verify
from storage.stream import Stream

MAX = (2**64 - 1, 2**64 - 1)


def make_stream(n: int) -> Stream:
    s = Stream()
    for i in range(1, n + 1):
        s.append([b"f", b"v%d" % i], (i // 3 + 1, i % 3))
    return s


def state(s: Stream) -> list[tuple]:
    verify(s)
    out = []
    for g in groups(s):
        pel = [(eid, n.consumer.name, n.delivery_time, n.delivery_count)  # type: ignore[union-attr]
               for eid, n in g.iter_pending()]
        owners = sorted((c.name, list(c.pending_ids())) for c in g.iter_consumers())
        out.append((g.name, g.last_id, g.entries_read, pel, owners, len(g.pel_by_time)))
    refs = [] if s.cgroups_ref is None else [
        (k, sorted(x.name for x in v)) for k, v in s.cgroups_ref.items()]  # type: ignore[union-attr]
    return [out, refs]


# One step: (kind, group index, consumer index, count, ids chosen by index into the stream).
step = st.one_of(
    st.tuples(st.just("read"), st.integers(0, 1), st.integers(0, 2), st.integers(0, 6),
              st.booleans()),
    st.tuples(st.just("ack"), st.integers(0, 1), st.lists(st.integers(0, 39), max_size=12)),
    st.tuples(st.just("ackall"), st.integers(0, 1), st.booleans(), st.booleans()),
    st.tuples(st.just("setid"), st.integers(0, 1), st.integers(0, 39)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(step, max_size=30), st.booleans())
def test_batches_match_single_entry_primitives(steps, one_group):
    batch, single = make_stream(40), make_stream(40)
    all_ids = [eid for eid, _ in batch.iter_range((0, 0), MAX)]
    names = [b"g0"] if one_group else [b"g0", b"g1"]
    for s in (batch, single):
        for name in names:
            create_group(s, name, (0, 0))
    now = 1000
    for op in steps:
        now += 7
        gi = op[1] % len(names)
        gb, gs = groups(batch)[gi], groups(single)[gi]
        if op[0] == "read":
            _, _, ci, count, noack = op
            name = b"c%d" % ci
            cb, _ = gb.get_consumer(name, now)
            cs, _ = gs.get_consumer(name, now)
            ids = [eid for eid, _ in batch.range(_next(gb.last_id), MAX, count)]
            gb.deliver_new(batch, ids, cb, now, noack)
            for eid, _ in single.range(_next(gs.last_id), MAX, count):
                gs.deliver(single, eid, cs, now, noack)
        elif op[0] == "ack":
            ids = [all_ids[i] for i in op[2]]
            expect = sum(gs.remove_pending(single, eid) is not None for eid in ids)
            assert gb.ack(batch, ids) == expect
        elif op[0] == "ackall":  # the whole PEL (the drain path), maybe with extra IDs
            ids = [eid for eid, _ in gs.iter_pending()]
            if op[3]:
                ids.reverse()  # (in order, a PEL filled whole by the last read is compared
                # with its own keys; in another order, as a set)
            if op[2]:
                ids = ids + all_ids[:3] + ids[:2]
            expect = sum(gs.remove_pending(single, eid) is not None for eid in ids)
            assert gb.ack(batch, ids) == expect
        else:  # XGROUP SETID back: later reads serve entries that are still pending
            target = all_ids[op[2]]
            gb.set_id(batch, target)
            gs.set_id(single, target)
        assert state(batch) == state(single)


def _next(eid: tuple[int, int]) -> tuple[int, int]:
    return (eid[0], eid[1] + 1) if eid[1] < 2**64 - 1 else (eid[0] + 1, 0)


def test_delivery_into_non_empty_trees_and_drain_of_several_consumers():
    s = make_stream(30)
    g = create_group(s, b"g", (0, 0))
    other = create_group(s, b"h", (0, 0))
    assert g is not None and other is not None
    a, _ = g.get_consumer(b"a", 1)
    b, _ = g.get_consumer(b"b", 1)
    ids = [eid for eid, _ in s.range((0, 0), MAX)]
    g.deliver_new(s, ids[:5], a, 10)  # empty trees: built whole
    g.deliver_new(s, ids[5:9], b, 20)  # b's PEL empty, the group's not
    g.deliver_new(s, ids[9:12], a, 5)  # an older time: pel_by_time takes a plain insert
    z, _ = other.get_consumer(b"z", 1)
    other.deliver_new(s, ids[:4], z, 30)  # cgroups_ref keys exist: the holders grow
    verify(s)
    assert len(g.pel) == 12 and len(a.pel) == 8 and len(b.pel) == 4
    assert g.oldest_delivery_time() == 5 and g.entries_read == 12
    assert sorted(x.name for x in s.cgroups_ref.find(b"".join(  # type: ignore[union-attr]
        eid.to_bytes(8, "big") for eid in ids[0]))) == [b"g", b"h"]
    assert g.ack(s, ids[:12] + ids[:1]) == 12  # covers the PEL: emptied whole
    verify(s)
    assert len(g.pel) == len(a.pel) == len(b.pel) == len(g.pel_by_time) == 0
    assert len(s.cgroups_ref) == 4  # type: ignore[arg-type]  # h still holds its four
    assert other.ack(s, ids[:4]) == 4 and len(s.cgroups_ref) == 0  # type: ignore[arg-type]
    verify(s)
