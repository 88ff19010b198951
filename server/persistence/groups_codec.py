"""Consumer groups in the snapshot: per group its name, last ID, read counter, consumers (name,
seen-time, active-time) and PEL (ID, delivery time, delivery count, owner). Signed values are
zigzag varints. Loading rebuilds the group through storage.consumer_group, so the PEL,
pel_by_time, the consumers' PELs and the stream's cgroups_ref agree by construction.
An entry released by XNACK is written with owner 0 and read back into the NACK zone; the
format does not keep the zone's order (it is reloaded in ID order), nor a stream's IDMP
state: both wait for the RDB encoding (RDB_TYPE_STREAM_LISTPACKS_4/5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from storage.consumer_group import create_group, groups
from storage.stream import Stream

if TYPE_CHECKING:
    from server.persistence.snapshot import SnapshotReader, SnapshotWriter


def _zigzag(value: int) -> int:
    return value * 2 if value >= 0 else -value * 2 - 1


def _unzigzag(value: int) -> int:
    return value >> 1 if not value & 1 else -((value + 1) >> 1)


def write_groups(w: SnapshotWriter, s: Stream) -> None:
    all_groups = groups(s)
    w.varint(len(all_groups))
    for group in all_groups:
        w.string(group.name)
        w.stream_id(group.last_id)
        w.varint(_zigzag(group.entries_read))
        index: dict[int, int] = {}
        consumers = list(group.iter_consumers())
        w.varint(len(consumers))
        for i, consumer in enumerate(consumers):
            index[id(consumer)] = i + 1
            w.string(consumer.name)
            w.varint(_zigzag(consumer.seen_time))
            w.varint(_zigzag(consumer.active_time))
        w.varint(len(group.pel))
        for eid, nack in group.iter_pending():
            w.stream_id(eid)
            w.varint(_zigzag(nack.delivery_time))
            w.varint(_zigzag(nack.delivery_count))
            owner = nack.consumer
            w.varint(index.get(id(owner), 0) if owner is not None else 0)


def read_groups(r: SnapshotReader, s: Stream, at: int) -> None:
    from server.persistence.snapshot import SnapshotError

    for _ in range(r.varint()):
        name = r.string()
        last_id = r.stream_id()
        entries_read = _unzigzag(r.varint())
        if entries_read < -1:
            raise r.fail("bad consumer group read counter")
        group = create_group(s, name, last_id, entries_read)
        if group is None:
            raise SnapshotError(f"duplicate consumer group in the stream at offset {at}")
        group.entries_read = entries_read  # exactly as saved
        consumers = []
        for _ in range(r.varint()):
            cname = r.string()
            consumer = group.create_consumer(cname, _unzigzag(r.varint()))
            if consumer is None:
                raise r.fail("duplicate consumer")
            consumer.active_time = _unzigzag(r.varint())
            consumers.append(consumer)
        for _ in range(r.varint()):
            eid = r.stream_id()
            delivery_time = _unzigzag(r.varint())
            delivery_count = _unzigzag(r.varint())
            owner = r.varint()
            if owner > len(consumers):
                raise r.fail("pending entry without a valid owner")
            if group.find_nack(eid) is not None:
                raise r.fail("duplicate pending entry")
            if not owner:  # released by XNACK: the NACK zone (in ID order, see the docstring)
                group.add_released(s, eid, delivery_count)
                continue
            group.add_pending(s, eid, consumers[owner - 1], delivery_time, delivery_count)
