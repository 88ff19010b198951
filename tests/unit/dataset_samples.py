"""Sample datasets for the persistence codec tests (no tests here): busy streams with deleted
entries, consumer groups, consumers and pending entries (one of them deleted from the stream),
and a comparable dump of databases."""

from __future__ import annotations

import random

from storage.consumer_group import create_group, groups
from storage.keyspace import Database, StringValue
from storage.stream import Stream

NOW = 1_700_000_000_000
MAX_ID = (2**64 - 1, 2**64 - 1)


def stream_state(s: Stream) -> dict:
    """Everything a stream holds: node bytes, counters, groups, PELs, NACK zones,
    consumers, the IDMP state."""
    idmp = s.idmp
    state = {
        "nodes": [(mid, bytes(lp.buf)) for mid, lp in s.nodes()],
        "length": s.length, "last_id": s.last_id, "first_id": s.first_id,
        "max_deleted": s.max_deleted_entry_id, "entries_added": s.entries_added,
        "idmp": (idmp.duration, idmp.maxsize, list(idmp.records()), idmp.iids_added,
                 idmp.iids_duplicates),
        "groups": [],
    }
    for g in groups(s):
        state["groups"].append({
            "name": g.name, "last_id": g.last_id, "entries_read": g.entries_read,
            "pel": [(eid, n.delivery_time, n.delivery_count,
                     n.consumer.name if n.consumer is not None else None)
                    for eid, n in g.iter_pending()],
            "nacked": [eid for eid, _ in g.iter_nacked()],
            "consumers": [(c.name, c.seen_time, c.active_time, list(c.pending_ids()))
                          for c in g.iter_consumers()],
        })
    return state


def db_state(dbs: list[Database]) -> list:
    """Every key of every database: kind, value (or stream state), expiry."""
    out = []
    for db in dbs:
        keys = {}
        for key, value in db.data.items():
            if isinstance(value, StringValue):
                keys[key] = ("string", value.data, db.expires.get(key))
            else:
                keys[key] = ("stream", stream_state(value), db.expires.get(key))
        out.append(keys)
    return out


def busy_stream(rng: random.Random, n: int, with_groups: bool = True) -> Stream:
    """n entries over small nodes, a quarter deleted; with groups: "g1" with three consumers
    (one idle) and up to 12 pending entries, the first of which is then deleted from the
    stream, and an empty group "empty"."""
    s = Stream()
    ms = 1000
    for _ in range(n):
        fields = [b"f%d" % rng.randrange(3), b"v" * rng.randrange(0, 40)]
        if rng.random() < 0.3:
            fields += [b"other", b"%d" % rng.randrange(10**6)]
        ms += rng.randrange(1, 5)
        s.append(fields, (ms, rng.randrange(3)), max_bytes=300, max_entries=7)
    ids = [eid for eid, _ in s.iter_range((0, 0), MAX_ID)]
    for eid in rng.sample(ids, len(ids) // 4):
        s.delete(eid)
    if with_groups and ids:
        g = create_group(s, b"g1", (0, 0), 0)
        assert g is not None
        alice, _ = g.get_consumer(b"alice", NOW)
        bob, _ = g.get_consumer(b"bob", NOW + 5)
        g.create_consumer(b"idle", NOW - 100)
        for eid, _ in s.range((0, 0), MAX_ID, count=12):
            g.deliver(s, eid, rng.choice([alice, bob]), NOW + rng.randrange(1000))
        create_group(s, b"empty", s.last_id, -1)
        # a pending entry whose stream entry is deleted afterwards
        pending = list(g.iter_pending())
        if pending:
            s.delete(pending[0][0])
    return s
