"""The cold tier on its own: a stream whose sealed nodes go to disk (and come back when
read) answers every read and write exactly as a twin that stays in memory; segment files
are freed; a damaged segment gives an error naming the stream and the IDs."""

from __future__ import annotations

import os
import random

import pytest

from protocol.encoder import encode
from storage import stream_resp
from storage.cold import ColdDataError, ColdNode, ColdTier, SegmentStore
from storage.stream import Stream
from storage.stream_node import StreamNode

MAX_ID = (2**64 - 1, 2**64 - 1)


def _fields(rng: random.Random) -> list[bytes]:
    if rng.random() < 0.7:
        return [b"sensor", b"%d" % rng.randrange(10**6), b"site", b"lab-%d" % rng.randrange(5)]
    return [b"other", b"x" * rng.randrange(100)]


def _cold_nodes(s: Stream) -> int:
    return sum(1 for _k, node in s.rax.items() if type(node) is ColdNode)


@pytest.fixture
def tier(tmp_path):
    store = SegmentStore(str(tmp_path))
    store.release()  # (an empty directory: nothing to keep)
    t = ColdTier(store, limit=1)
    yield t
    t.close()
    store.close()


@pytest.mark.parametrize("seed", range(12))
def test_a_cold_stream_answers_as_a_hot_one(tier: ColdTier, seed: int) -> None:
    rng = random.Random(seed)
    cold, hot = Stream(), Stream()
    ms = 1
    saw_cold = 0
    for _step in range(400):
        op = rng.random()
        if op < 0.6:
            ms += rng.randrange(0, 3)
            fields = _fields(rng)
            assert cold.append(fields, None, True, ms, 4096, 8) == hot.append(
                fields, None, True, ms, 4096, 8)
        elif op < 0.7 and hot.length:
            victim = rng.choice([eid for eid, _ in hot.range((0, 0), MAX_ID)])
            assert cold.delete(victim) == hot.delete(victim)
        elif op < 0.73 and hot.length:
            n = rng.randrange(hot.length + 1)
            approx = rng.random() < 0.5
            assert cold.trim("maxlen", n, approx) == hot.trim("maxlen", n, approx)
        else:
            a = (rng.randrange(ms + 2), rng.randrange(3))
            b = (rng.randrange(ms + 2), rng.randrange(3))
            start, end = min(a, b), max(a, b)
            count = rng.choice([0, 1, 5, 50])
            rev = rng.random() < 0.3
            assert cold.range(start, end, count, rev) == hot.range(start, end, count, rev)
            got = cold.range_resp(start, end, count, rev)
            want = encode(hot.range_reply(start, end, count, rev))
            if got is not None:
                assert b"*%d\r\n" % got[1] + b"".join(got[0]) == want
        tier.sweep([(b"s", cold)])
        tier.evict()
        saw_cold = max(saw_cold, _cold_nodes(cold))
        assert (cold.length, cold.first_id, cold.last_id, cold.entries_added) == (
            hot.length, hot.first_id, hot.last_id, hot.entries_added)
    assert saw_cold > 0
    assert cold.range((0, 0), MAX_ID) == hot.range((0, 0), MAX_ID)
    assert [bytes(n.buf) for _k, n in cold.rax.items()] == [bytes(n.buf) for _k, n in
                                                             hot.rax.items()]


def test_nodes_go_out_oldest_first_and_come_back_when_read(tier: ColdTier) -> None:
    s = Stream()
    for i in range(1, 1001):
        s.append([b"n", b"%d" % i], (i, 0), True, None, 4096, 100)
    tier.limit = 3 * 500  # about three nodes of 100 small entries
    tier.sweep([(b"s", s)])
    tier.evict()
    kinds = [type(node) for _k, node in s.rax.items()]
    assert kinds[0] is ColdNode and kinds[-1] is StreamNode  # the last node never goes
    assert tier.cold_nodes == kinds.count(ColdNode) > 5
    assert tier.store.disk_bytes >= tier.cold_bytes > 0
    assert s.memory_usage() < 20_000  # the bytes of cold nodes are not in memory
    assert s.range((1, 0), (1, 0)) == [((1, 0), [b"n", b"1"])]  # reads the first node back
    assert type(s.rax.first()[1]) is StreamNode and tier.cold_reads == 1
    assert s.delete((2, 0))  # writes work on a node read back
    tier.evict()
    assert type(s.rax.first()[1]) is StreamNode  # just read: the youngest of the registry
    s.trim("maxlen", 0)  # trimming frees the disk space of the cold nodes it drops
    assert tier.cold_nodes == 0 and tier.cold_bytes == 0
    assert all(seg.live == 0 for seg in tier.store.segments.values())
    assert len(tier.store.segments) <= 1  # (only the segment being written stays)


def test_a_damaged_segment_names_the_stream_and_the_ids(tier: ColdTier, tmp_path) -> None:
    s = Stream()
    for i in range(1, 301):
        s.append([b"n", b"%d" % i], (i, 0), True, None, 4096, 100)
    tier.sweep([(b"orders", s)])
    tier.evict()
    assert type(s.rax.first()[1]) is ColdNode
    path = next(p for p in os.listdir(tmp_path) if p.endswith(".cold"))
    with open(os.path.join(tmp_path, path), "r+b") as fh:
        fh.seek(20)
        fh.write(b"\xff\xff")
    with pytest.raises(ColdDataError) as err:
        s.range((1, 0), (2, 0))
    assert "stream 'orders'" in err.value.message and "entries 1-0 to 100-0" in err.value.message
    assert s.range((250, 0), (250, 0)) == [((250, 0), [b"n", b"250"])]  # the rest is served


def test_a_full_disk_leaves_nodes_in_memory(tier: ColdTier) -> None:
    s = Stream()
    for i in range(1, 301):
        s.append([b"n", b"%d" % i], (i, 0), True, None, 4096, 100)
    tier.sweep([(b"s", s)])
    messages: list[str] = []
    tier.log = messages.append

    def refuse(_data: bytes) -> None:
        raise OSError(28, "No space left on device")

    tier.store.append = refuse  # type: ignore[method-assign,assignment]
    tier.evict()
    assert all(type(node) is StreamNode for _k, node in s.rax.items())
    assert tier.write_errors == 1 and "No space left" in messages[0]
    assert tier.write_error == "No space left on device"
    assert s.length == 300
    del tier.store.append  # (space again: the next node written clears the error)
    tier.evict()
    assert tier.write_error is None and messages[-1] == "Stream nodes are moved to disk again"


def test_cached_replies_of_cold_nodes_are_served_without_reading_them(tier: ColdTier) -> None:
    stream_resp.set_max_bytes(64 << 20)
    s = Stream()
    for i in range(1, 301):
        s.append([b"n", b"%d" % i], (i, 0), True, None, 4096, 100)
    first = s.range_resp((0, 0), MAX_ID)
    tier.sweep([(b"s", s)])
    tier.evict()
    reads = tier.cold_reads
    assert s.range_resp((0, 0), MAX_ID) == first and tier.cold_reads == reads


def test_a_directory_serves_one_store_at_a_time(tmp_path) -> None:
    from storage.cold.segments import SegmentError

    first = SegmentStore(str(tmp_path))
    with pytest.raises(SegmentError, match="in use by another process"):
        SegmentStore(str(tmp_path))
    first.close()
    SegmentStore(str(tmp_path)).close()  # free again once the first one closed


def test_a_snapshot_of_cold_nodes_leaves_them_cold(tier: ColdTier) -> None:
    from server.persistence import dump_payload

    cold, hot = Stream(), Stream()
    for i in range(1, 1001):
        for s in (cold, hot):
            s.append([b"n", b"%d" % i], (i, 0), True, None, 4096, 100)
    tier.sweep([(b"s", cold)])
    tier.evict()
    before = _cold_nodes(cold)
    assert before >= 8
    assert dump_payload.dump(cold) == dump_payload.dump(hot)  # the RDB encoding of both
    assert _cold_nodes(cold) == before and tier.cold_reads == 0


def test_a_mostly_freed_segment_is_compacted(tmp_path) -> None:
    import storage.cold.segments as segments

    store = SegmentStore(str(tmp_path))
    store.release()
    tier = ColdTier(store, limit=1)
    old_size, segments.SEGMENT_BYTES = segments.SEGMENT_BYTES, 6_000  # small segments
    try:
        keep, drop = Stream(), Stream()
        for i in range(1, 2001):
            keep.append([b"n", b"%d" % i], (i, 0), True, None, 4096, 100)
            drop.append([b"n", b"%d" % i], (i, 0), True, None, 4096, 100)
        tier.sweep([(b"keep", keep), (b"drop", drop)])
        tier.evict(100_000)
        before = store.disk_bytes
        assert len(store.segments) > 2
        drop.trim("maxlen", 0)  # half of every segment is freed
        assert store.sparse_segment() is not None
        while tier.compact():
            pass
        assert store.sparse_segment() is None
        assert store.disk_bytes < before * 0.75
        assert keep.range((0, 0), MAX_ID) == [((i, 0), [b"n", b"%d" % i]) for i in range(1, 2001)]
    finally:
        segments.SEGMENT_BYTES = old_size
        tier.close()
        store.close()


def test_an_aof_rewrite_of_commands_leaves_cold_nodes_cold(tier: ColdTier) -> None:
    from server.persistence.rewrite import stream_commands

    cold, hot = Stream(), Stream()
    for i in range(1, 1001):
        for s in (cold, hot):
            s.append([b"n", b"%d" % i], (i, 0), True, None, 4096, 100)
    for s in (cold, hot):
        s.delete((500, 0))
    tier.sweep([(b"s", cold)])
    tier.evict()
    before = _cold_nodes(cold)
    assert before >= 8
    assert list(stream_commands(b"s", cold)) == list(stream_commands(b"s", hot))
    assert _cold_nodes(cold) == before and tier.cold_reads == 0


def test_pinned_segments_outlive_their_nodes_and_a_store_reopens_them(tmp_path) -> None:
    store = SegmentStore(str(tmp_path))
    store.release()
    place = store.append(b"x" * 100)
    assert place[0] == 1
    store.begin_snapshot("rdb", store.in_use())
    store.end_snapshot("rdb", frozenset({1}), ok=True)
    store.free(1, 100)  # (the node went; dump.rdb still refers to its bytes)
    assert (tmp_path / "seg-1.cold").exists()
    store.close()

    again = SegmentStore(str(tmp_path))  # (a restart: the pins come from PINS)
    assert again.pins.sets == {"rdb": frozenset({1})} and again.segments[1].size == 100
    assert again.adopt(1, 100) and not again.adopt(7, 100)
    assert again.read(1, 0, 100, place[2]) == b"x" * 100
    assert again.append(b"y")[0] == 2  # (new nodes go to a new segment)
    again.free(1, 100)
    again.release()
    assert (tmp_path / "seg-1.cold").exists()  # still pinned
    again.begin_snapshot("rdb", frozenset({2}))
    again.end_snapshot("rdb", frozenset({2}), ok=True)
    assert not (tmp_path / "seg-1.cold").exists() and (tmp_path / "seg-2.cold").exists()
    again.close()


def test_nothing_is_deleted_before_release_or_while_a_snapshot_refers_to_it(tmp_path) -> None:
    store = SegmentStore(str(tmp_path))
    store.append(b"a" * 10)
    store.free(1, 10)
    assert (tmp_path / "seg-1.cold").exists()  # holding: the data is not loaded yet
    store.release()
    assert not (tmp_path / "seg-1.cold").exists()
    store.append(b"b" * 10)  # segment 2
    store.begin_snapshot("aof", store.in_use())
    store.free(2, 10)
    assert (tmp_path / "seg-2.cold").exists()
    store.end_snapshot("aof", frozenset({2}), ok=False)  # given up: the wider pin stays
    assert (tmp_path / "seg-2.cold").exists()
    store.begin_snapshot("aof", frozenset())
    store.end_snapshot("aof", frozenset(), ok=True)
    assert not (tmp_path / "seg-2.cold").exists()
    store.close()


def test_a_damaged_pin_file_keeps_every_segment(tmp_path) -> None:
    store = SegmentStore(str(tmp_path))
    store.release()
    store.append(b"a" * 10)
    store.close()
    (tmp_path / "PINS").write_text("{not json")
    again = SegmentStore(str(tmp_path))
    again.release()
    assert again.pins.keep_all and (tmp_path / "seg-1.cold").exists()
    again.close()
