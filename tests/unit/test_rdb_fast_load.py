"""The fast ways an RDB file loads give exactly what the general ways give: consumer groups
built in bulk (rdb_stream_read) against rdb_values' entry-by-entry inserts, and an AOF base
decoded without the per-node deep check when its checksum verifies (alone or followed by
commands), with the deep check's errors kept for a file that does not verify."""

from __future__ import annotations

import io
import random

import pytest

from server.persistence.rdb_encoding import Reader, Sink
from server.persistence.rdb_reader import RdbLoadError, parse_rdb
from server.persistence.rdb_stream_read import read_stream
from server.persistence.rdb_values import (
    STREAM_TYPES,
    TYPE_STREAM_LISTPACKS,
    TYPE_STREAM_LISTPACKS_5,
    read_value,
    write_value,
)
from server.persistence.rdb_writer import write_rdb
from storage.consumer_group import create_group, groups, verify
from storage.keyspace import Database
from storage.stream import Stream
from tests.unit.dataset_samples import NOW, busy_stream, db_state, stream_state

MAX_ID = (2**64 - 1, 2**64 - 1)


def _grouped_stream(seed: int) -> Stream:
    """Entries, three groups sharing pending entries (so cgroups_ref lists several groups
    for an ID), consumers with and without pending entries, and a NACK zone."""
    rng = random.Random(seed)
    s = busy_stream(rng, 300)
    ids = [eid for eid, _ in s.iter_range((0, 0), MAX_ID)]
    for name in (b"a", b"b", b"c"):
        g = create_group(s, name, (0, 0), 0)
        assert g is not None
        consumers = [g.get_consumer(b"c%d" % i, NOW)[0] for i in range(3)]
        g.create_consumer(b"never-read", NOW - 7)
        for eid in ids[:rng.randrange(20, 120)]:
            g.deliver(s, eid, rng.choice(consumers), NOW + rng.randrange(10_000))
        pending = [eid for eid, _ in g.iter_pending()]
        g.ack(s, rng.sample(pending, len(pending) // 3))
        still = [eid for eid, _ in g.iter_pending()]
        g.nack(s, rng.sample(still, 4), "fail", retry_count=3)
    return s


def _encode(s: Stream, kind: int) -> bytes:
    sink = Sink()
    write_value(sink, s, kind)
    return bytes(sink.buf)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", STREAM_TYPES)
def test_bulk_groups_equal_the_general_reading(seed: int, kind: int) -> None:
    source = _grouped_stream(seed)
    if kind < TYPE_STREAM_LISTPACKS_5:
        for g in groups(source):  # (older types have no NACK zone to write)
            for eid, _ in list(g.iter_nacked()):
                g.remove_pending(source, eid)
    data = _encode(source, kind)
    general = read_value(Reader(data), kind)
    fast = read_stream(Reader(data), kind)
    verify(fast)
    assert stream_state(fast) == stream_state(general)
    assert sum(len(g.pel) for g in groups(fast)) > 0
    assert [(k, [g.name for g in v]) for k, v in fast.cgroups_ref.items()] == \
        [(k, [g.name for g in v]) for k, v in general.cgroups_ref.items()]
    for a, b in zip(groups(fast), groups(general), strict=True):
        assert list(a.pel_by_time.keys()) == list(b.pel_by_time.keys())
        assert list(a.nacked) == list(b.nacked)


def test_pending_entries_listed_out_of_order_load_the_same() -> None:
    """A hand-made file may list a PEL or a consumer's entries out of ID order."""
    s = Stream()
    for ms in range(1, 9):
        s.append([b"f", b"%d" % ms], (ms, 0), True)
    g = create_group(s, b"g", (8, 0), 8)
    c = g.create_consumer(b"c", NOW)
    for ms in range(1, 9):
        g.deliver(s, (ms, 0), c, NOW + 9 - ms)
    data = bytearray(_encode(s, TYPE_STREAM_LISTPACKS_5))
    keys = [(ms).to_bytes(8, "big") + bytes(8) for ms in range(1, 9)]
    # The group PEL (after the node, whose key is also 1-0): key, time (8 bytes), count (1).
    pel_at = data.index(keys[0], data.index(keys[0]) + 16)
    record = 16 + 8 + 1
    pel = [bytes(data[pel_at + i * record:pel_at + (i + 1) * record]) for i in range(8)]
    data[pel_at:pel_at + 8 * record] = b"".join(reversed(pel))
    own_at = data.index(b"".join(keys))  # the consumer's PEL: the keys one after another
    data[own_at:own_at + 16 * 8] = b"".join(reversed(keys))
    general = read_value(Reader(bytes(data)), TYPE_STREAM_LISTPACKS_5)
    fast = read_stream(Reader(bytes(data)), TYPE_STREAM_LISTPACKS_5)
    verify(fast)
    assert stream_state(fast) == stream_state(general)


@pytest.mark.parametrize(("what", "error"), [
    ("duplicate group", "duplicate consumer group name"),
    ("duplicate pending", "duplicate pending entry"),
    ("unowned", "pending entry without a consumer"),
])
def test_bad_groups_give_the_general_errors(what: str, error: str) -> None:
    s = Stream()
    s.append([b"f", b"v"], (1, 0), True)
    s.append([b"f", b"v"], (2, 0), True)
    g = create_group(s, b"g", (2, 0), 2)
    c = g.create_consumer(b"c", NOW)
    g.deliver(s, (1, 0), c, NOW)
    g.deliver(s, (2, 0), c, NOW)
    create_group(s, b"h", (0, 0), 0)
    data = bytearray(_encode(s, TYPE_STREAM_LISTPACKS))
    if what == "duplicate group":
        at = data.index(b"\x01h")
        data[at:at + 2] = b"\x01g"
    elif what == "duplicate pending":
        first = (1).to_bytes(8, "big") + bytes(8)
        second = (2).to_bytes(8, "big") + bytes(8)
        at = data.index(second)  # (in the group PEL, the first place the key appears)
        data[at:at + 16] = first
    else:
        at = data.index(b"\x01c") + 2 + 8  # the consumer's pending count, after seen time
        data[at] = 1
        data[at + 1 + 16:at + 1 + 32] = b""
    messages = []
    for read in (read_value, read_stream):
        with pytest.raises(Exception) as exc:
            read(Reader(bytes(data)), TYPE_STREAM_LISTPACKS)
        messages.append(str(exc.value))
    assert error in messages[0]
    assert messages[0] == messages[1]


# -- AOF bases ------------------------------------------------------------------------------------
def _rdb(dbs: list[Database]) -> bytes:
    out = io.BytesIO()
    write_rdb(out, dbs, now_ms=NOW)
    return out.getvalue()


def _sample() -> list[Database]:
    db = Database(0)
    db.data[b"s"] = _grouped_stream(3)
    db.data[b"t"] = busy_stream(random.Random(5), 80)
    return [db]


def test_an_aof_base_with_commands_after_it_loads_the_same() -> None:
    data = _rdb(_sample())
    expected = db_state(parse_rdb(data, 1, now_ms=NOW).dbs)
    alone = parse_rdb(data, 1, now_ms=NOW, aof_base=True)
    followed = parse_rdb(data + b"*1\r\n$4\r\nPING\r\n", 1, now_ms=NOW, aof_base=True)
    assert db_state(alone.dbs) == expected == db_state(followed.dbs)
    assert alone.end == followed.end == len(data)


def _corrupt_node(data: bytes) -> tuple[bytes, bytes]:
    """The file with a byte flipped inside a stream entry (a master entry's field count),
    the checksum recomputed: what only the per-node deep check catches."""
    db = Database(0)
    s = Stream()
    s.append([b"field", b"value"], (1, 1))
    db.data[b"the-stream"] = s
    data = bytearray(_rdb([db]))
    lp = bytes(next(iter(s.nodes()))[1].buf)
    data[data.index(lp) + 7] ^= 0x40
    return bytes(data[:-8]), bytes(data)


def test_an_aof_base_that_does_not_verify_is_checked_node_by_node() -> None:
    body, _ = _corrupt_node(b"")
    # A checksum of 0 (not computed) and commands after it: nothing vouches for the nodes.
    with pytest.raises(RdbLoadError, match="corrupt stream.*'the-stream' \\(db 0\\)"):
        parse_rdb(body + bytes(8) + b"*1\r\n$4\r\nPING\r\n", 1, now_ms=NOW, aof_base=True)
    # A damaged checksum: the deep check names the damage first, as before.
    with pytest.raises(RdbLoadError, match="corrupt stream.*'the-stream'"):
        parse_rdb(body + b"\x01" * 8 + b"*1\r\n$4\r\nPING\r\n", 1, now_ms=NOW,
                  aof_base=True)
