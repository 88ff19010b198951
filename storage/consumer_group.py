"""Consumer groups: groups, consumers, pending entries lists (t_stream.c's streamCG,
streamConsumer, streamNACK), and the stream's reverse index of pending references.

A group holds ``last_id``, ``entries_read`` and three rax trees:

* ``pel``: 16-byte ID key -> NACK (delivery_time, delivery_count, consumer);
* ``pel_by_time``: 8-byte big-endian delivery time + 16-byte ID key -> None, so
  idle entries are found oldest first (XREADGROUP CLAIM);
* ``consumers``: name -> Consumer, each with its own ``pel`` rax sharing the
  group's NACK objects.

Entries released by XNACK (Redis 8.8) have no owner and are not in ``pel_by_time``: they
form the "NACK zone", ``nacked`` (ID key -> NACK, in the order they were released, each
with delivery time 0), which XREADGROUP CLAIM serves before anything else
(storage/consumer_group_nack.py).

``stream.cgroups`` is None until the first group, then a rax name -> group;
``stream.cgroups_ref`` is None or a rax ID key -> list of the groups that have
the ID pending.  Every PEL insert and removal goes through this module so the
four trees always agree (``verify()`` checks it).  It serves the KEEPREF /
DELREF / ACKED policies of XDELEX, XACKDEL, XTRIM and XADD.  Claiming (XCLAIM,
XAUTOCLAIM, XREADGROUP CLAIM) lives in storage/consumer_group_claim.py, behind
delegating methods, and edits the PEL only through this module's primitives.

No clock is read here: every time is a ``now`` argument in Unix milliseconds.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from storage import consumer_group_claim as _claim
from storage import consumer_group_nack as _nack
from storage.consumer_group_lag import INVALID_ENTRIES_READ, advance_read_counter_many
from storage.consumer_group_pel import NACK, PEL_TIME, next_delivery_count
from storage.consumer_group_pel import time_key as _time_key
from storage.consumer_group_pel import time_prefix as _time_prefix
from storage.consumer_group_refs import (
    acked_checker,
    delref_hook,
    entry_referenced,
    min_group_last_id,
    ref_add,
    ref_remove,
    referencing_groups,
    remove_references,
)
from storage.rax import Rax
from storage.stream_id import StreamID, id_to_key, key_to_id

if TYPE_CHECKING:
    from storage.stream import Stream

__all__ = [
    "INVALID_ENTRIES_READ",
    "NACK",
    "Consumer",
    "ConsumerGroup",
    "acked_checker",
    "create_group",
    "delref_hook",
    "destroy_group",
    "entry_referenced",
    "groups",
    "lookup_group",
    "min_group_last_id",
    "referencing_groups",
    "remove_references",
    "verify",
]

_TIME = PEL_TIME
_ID_KEY = struct.Struct(">QQ")  # id_to_key's layout, packed inline in the batch loops


def _add_sorted(tree: Rax, keys: list[bytes], values: list[object] | None) -> None:
    """Insert strictly ascending ``keys`` (values None when ``values`` is None): built
    whole into an empty tree (which then shares the lists: the caller leaves them be),
    else appended at the end, else inserted."""
    if not len(tree):
        tree.fill_sorted(keys, values, False)
        return
    for i, key in enumerate(keys):
        value = None if values is None else values[i]
        if not tree.append_max(key, value):
            tree.insert(key, value)


class Consumer:
    """``seen_time``: last attempt to read or claim; ``active_time``: last
    successful read or claim (-1 never); ``pel``: ID key -> NACK."""

    __slots__ = ("name", "seen_time", "active_time", "pel")

    def __init__(self, name: bytes, now: int) -> None:
        self.name = name
        self.seen_time = now
        self.active_time = -1
        self.pel = Rax()

    def __repr__(self) -> str:
        return f"<Consumer {self.name!r} pending={len(self.pel)}>"

    def pending_ids(self) -> Iterator[StreamID]:
        for key in self.pel:
            yield key_to_id(key)


class ConsumerGroup:
    __slots__ = ("name", "last_id", "entries_read", "pel", "pel_by_time", "consumers", "nacked")

    def __init__(self, name: bytes, last_id: StreamID, entries_read: int) -> None:
        self.name = name
        self.last_id: StreamID = (last_id[0], last_id[1])
        self.entries_read = entries_read
        self.pel = Rax()
        self.pel_by_time = Rax()
        self.consumers = Rax()
        self.nacked: dict[bytes, NACK] = {}  # the NACK zone, oldest release first

    def __repr__(self) -> str:
        return (
            f"<ConsumerGroup {self.name!r} last_id={self.last_id[0]}-{self.last_id[1]} "
            f"pending={len(self.pel)} consumers={len(self.consumers)}>"
        )

    def set_id(
        self, s: Stream, last_id: StreamID, entries_read: int = INVALID_ENTRIES_READ
    ) -> None:
        """XGROUP SETID: a new last delivered ID and read counter (capped at the
        stream's entries_added)."""
        self.last_id = (last_id[0], last_id[1])
        self.entries_read = min(entries_read, s.entries_added)

    # --- consumers ------------------------------------------------------------------

    def lookup_consumer(self, name: bytes) -> Consumer | None:
        return self.consumers.find(name)  # type: ignore[return-value]

    def create_consumer(self, name: bytes, now: int) -> Consumer | None:
        """A new consumer, or None if the name exists (XGROUP CREATECONSUMER)."""
        consumer = Consumer(bytes(name), now)
        if not self.consumers.try_insert(consumer.name, consumer):
            return None
        return consumer

    def get_consumer(self, name: bytes, now: int) -> tuple[Consumer, bool]:
        """The named consumer, created if missing: ``(consumer, created)``."""
        consumer = self.consumers.find(name)
        if consumer is not None:
            return consumer, False  # type: ignore[return-value]
        consumer = Consumer(bytes(name), now)
        self.consumers.insert(consumer.name, consumer)
        return consumer, True

    def delete_consumer(self, s: Stream, name: bytes) -> int | None:
        """Remove a consumer and its pending entries (XGROUP DELCONSUMER); returns
        how many entries it had pending, or None if there is no such consumer."""
        consumer: Consumer | None = self.consumers.find(name)  # type: ignore[assignment]
        if consumer is None:
            return None
        pending = len(consumer.pel)
        for key, nack in consumer.pel.items():
            self.pel.remove(key)
            self.pel_by_time.remove(_time_key(nack.delivery_time, key))  # type: ignore[union-attr]
            ref_remove(s, key, self)
        self.consumers.remove(consumer.name)
        return pending

    # --- PEL primitives -------------------------------------------------------------

    def find_nack(self, id: StreamID) -> NACK | None:
        return self.pel.find(id_to_key(id))  # type: ignore[return-value]

    def _insert_nack(self, s: Stream, key: bytes, nack: NACK) -> None:
        """Add a NACK absent from the PEL (its consumer, if any, gets it too; one without
        a consumer goes to the end of the NACK zone)."""
        self.pel.insert(key, nack)
        if nack.consumer is not None:
            self.pel_by_time.insert(_time_key(nack.delivery_time, key))
            nack.consumer.pel.insert(key, nack)
        else:
            self.nacked[key] = nack
        ref_add(s, key, self)

    def _append_nack(self, s: Stream, key: bytes, nack: NACK) -> bool:
        """``_insert_nack`` of a NACK with an owner when ``key`` is above every key of the
        PEL (XCLAIM FORCE of the IDs an AOF replays, ascending), each tree taking it by
        ``Rax.append_max`` where it can.  False, with nothing changed, when it is not."""
        if not self.pel.append_max(key, nack):
            return False
        consumer = nack.consumer
        assert consumer is not None
        tkey = _time_key(nack.delivery_time, key)
        if not self.pel_by_time.append_max(tkey):
            self.pel_by_time.insert(tkey)
        if not consumer.pel.append_max(key, nack):
            consumer.pel.insert(key, nack)
        refs = s.cgroups_ref
        if refs is None or not refs.append_max(key, [self]):
            ref_add(s, key, self)
        return True

    def add_pending(
        self, s: Stream, id: StreamID, consumer: Consumer, delivery_time: int, delivery_count: int
    ) -> NACK:
        """Create or overwrite the pending entry ``id`` with exactly these values
        (for loading a snapshot or a replayed XCLAIM)."""
        key = id_to_key(id)
        nack: NACK | None = self.pel.find(key)  # type: ignore[assignment]
        if nack is None:
            nack = NACK(delivery_time, delivery_count, consumer)
            self._insert_nack(s, key, nack)
            return nack
        self._set_time(nack, key, delivery_time)
        nack.delivery_count = delivery_count
        self._assign(nack, key, consumer)
        return nack

    def add_released(self, s: Stream, id: StreamID, delivery_count: int) -> NACK:
        """Append ``id`` (not pending) to the end of the NACK zone with this delivery count
        (for loading a snapshot)."""
        nack = NACK(0, delivery_count, None)
        self._insert_nack(s, id_to_key(id), nack)
        return nack

    def remove_pending(self, s: Stream, id: StreamID) -> NACK | None:
        """Drop ``id`` from the PEL (XACK); returns the NACK or None if not pending."""
        return self._remove_key(s, id_to_key(id))

    def _remove_key(self, s: Stream, key: bytes) -> NACK | None:
        found, nack = self.pel.remove(key)
        if not found:
            return None
        assert isinstance(nack, NACK)
        if self.nacked.pop(key, None) is None:
            self.pel_by_time.remove(_time_key(nack.delivery_time, key))
        if nack.consumer is not None:
            nack.consumer.pel.remove(key)
        ref_remove(s, key, self)
        return nack

    def _set_time(self, nack: NACK, key: bytes, t: int) -> None:
        """A new delivery time; an entry of the NACK zone leaves it (it is being claimed)."""
        if self.nacked and self.nacked.pop(key, None) is not None:
            nack.delivery_time = t
            self.pel_by_time.insert(_time_key(t, key))
            return
        if nack.delivery_time != t:
            self.pel_by_time.remove(_time_key(nack.delivery_time, key))
            nack.delivery_time = t
            self.pel_by_time.insert(_time_key(t, key))

    @staticmethod
    def _assign(nack: NACK, key: bytes, consumer: Consumer) -> None:
        old = nack.consumer
        if old is consumer:
            return
        if old is not None:
            old.pel.remove(key)
        consumer.pel.insert(key, nack)
        nack.consumer = consumer

    # --- reading --------------------------------------------------------------------

    def deliver(
        self, s: Stream, id: StreamID, consumer: Consumer, now: int, noack: bool = False
    ) -> NACK | None:
        """One entry served to ``consumer`` by XREADGROUP ``>`` (deliver_new of one ID);
        returns its NACK, None with ``noack``."""
        if id <= self.last_id:  # served again after XGROUP SETID moved the group back
            if noack:
                return None
            return self._deliver_pending(s, id_to_key(id), consumer, now)
        self.deliver_new(s, [id], consumer, now, noack)
        return None if noack else self.pel.find(id_to_key(id))  # type: ignore[return-value]

    def deliver_new(
        self, s: Stream, ids: list[StreamID], consumer: Consumer, now: int, noack: bool = False,
        keys: list[bytes] | None = None,
    ) -> None:
        """Entries served to ``consumer`` by XREADGROUP ``>``: ``ids`` ascending, all
        after the group's last ID.  The group's last ID and read counter advance and
        (unless ``noack``) each entry becomes pending for the consumer, delivered ``now``
        once.  An entry already pending (after XGROUP SETID moved the group back)
        changes owner and restarts with one delivery, as in Redis.  ``keys``, when the
        caller has them, are the ids' 16-byte keys (id_to_key).

        New IDs are normally above every key of the four trees, so each goes in by
        ``Rax.append_max`` (a walk down the right edge), falling back to a general
        insert when not."""
        if not ids:
            return
        advance_read_counter_many(s, self, ids)
        if noack:
            return
        pel = self.pel
        if keys is None:
            pack = _ID_KEY.pack
            keys = [pack(ms, seq) for ms, seq in ids]
        nacks = [NACK(now, 1, consumer) for _ in keys]
        # (ids ascend, so keys do: the trees filled whole below share these two lists,
        # which nothing changes afterwards)
        if not len(pel):  # a group whose consumers keep up: the PEL is built whole
            pel.fill_sorted(keys, nacks, False)  # type: ignore[arg-type]
        else:
            fresh: list[bytes] = []
            fresh_nacks: list[NACK] = []
            for key, nack in zip(keys, nacks, strict=True):
                if pel.append_max(key, nack):
                    fresh.append(key)
                    fresh_nacks.append(nack)
                elif pel.find(key) is not None:
                    self._deliver_pending(s, key, consumer, now)
                else:
                    self._insert_nack(s, key, nack)
            keys = fresh
            nacks = fresh_nacks
        tprefix = _time_prefix(now)
        _add_sorted(self.pel_by_time, [tprefix + key for key in keys], None)
        _add_sorted(consumer.pel, keys, nacks)  # type: ignore[arg-type]
        refs = s.cgroups_ref
        if refs is None:
            refs = s.cgroups_ref = Rax()
        if not len(refs):
            refs.fill_sorted(keys, [[self] for _ in keys], False)
        else:
            for key in keys:
                if not refs.append_max(key, [self]):
                    ref_add(s, key, self)
        consumer.active_time = now

    def _deliver_pending(self, s: Stream, key: bytes, consumer: Consumer, now: int) -> NACK:
        """A `>` read serves an entry already pending (or newly so, if absent)."""
        nack: NACK | None = self.pel.find(key)  # type: ignore[assignment]
        if nack is None:
            nack = NACK(now, 1, consumer)
            self._insert_nack(s, key, nack)
        else:
            self._set_time(nack, key, now)
            nack.delivery_count = 1
            self._assign(nack, key, consumer)
        consumer.active_time = now
        return nack

    def ack(self, s: Stream, ids: list[StreamID]) -> int:
        """XACK: drop these IDs from the PEL; returns how many were pending."""
        pack = _ID_KEY.pack
        return self.ack_keys(s, [pack(ms, seq) for ms, seq in ids])

    def ack_keys(self, s: Stream, keys: list[bytes]) -> int:
        """ack() of IDs given as their 16-byte keys (id_to_key)."""
        pel = self.pel
        # With a single group, an ID in cgroups_ref is held by this group alone.
        alone = s.cgroups is not None and len(s.cgroups) == 1
        if 0 < len(pel) <= len(keys):
            drained = self._drain(s, keys, alone)
            if drained:
                return drained
        by_time = self.pel_by_time
        nacked = self.nacked
        refs = s.cgroups_ref
        last_time = -1
        tprefix = b""
        acked = 0
        for key in keys:
            found, nack = pel.remove(key)
            if not found:
                continue
            acked += 1
            if nacked and nacked.pop(key, None) is not None:
                by_time_key = False
            else:
                by_time_key = True
            t = nack.delivery_time  # type: ignore[union-attr]
            if t != last_time:  # a command's entries mostly share their delivery time
                last_time = t
                tprefix = _time_prefix(t)
            if by_time_key:
                by_time.remove(tprefix + key)
            owner = nack.consumer  # type: ignore[union-attr]
            if owner is not None:
                owner.pel.remove(key)
            if alone:
                refs.remove(key)  # type: ignore[union-attr]
            else:
                ref_remove(s, key, self)
        return acked

    def _drain(self, s: Stream, keys: list[bytes], alone: bool) -> int:
        """XACK of every pending entry (a group whose consumers keep up): the trees are
        emptied whole instead of key by key.  Returns how many entries were pending, or
        0 (nothing changed) when ``keys`` does not cover the whole PEL."""
        lazy = self.pel.lazy_items()
        if lazy is not None and lazy[0] == keys:
            # The usual case: the IDs of the last delivery, in order (the PEL as filled then).
            pending, nacks = lazy
        else:
            wanted = set(keys)
            items = list(self.pel.items())
            for key, _ in items:
                if key not in wanted:
                    return 0
            pending = [key for key, _ in items]
            nacks = [nack for _, nack in items]
        self.pel.clear()
        self.pel_by_time.clear()
        self.nacked.clear()
        # Consumer PELs are parts of the group's: every one of them is empty now.
        first = nacks[0].consumer  # type: ignore[attr-defined]
        if first is not None and len(first.pel) == len(nacks):
            first.pel.clear()  # (one consumer had them all)
        else:
            last = None
            for nack in nacks:
                owner = nack.consumer  # type: ignore[attr-defined]
                if owner is not last and owner is not None:
                    owner.pel.clear()
                    last = owner
        if alone:
            s.cgroups_ref.clear()  # type: ignore[union-attr]
        else:
            for key in pending:
                ref_remove(s, key, self)
        return len(nacks)

    def read_history(
        self, s: Stream, consumer: Consumer, start: StreamID, count: int, now: int,
        accept: Callable[[list[bytes] | None], bool] | None = None,
    ) -> list[tuple[StreamID, list[bytes] | None]]:
        """XREADGROUP with an ID: the consumer's pending entries with ID >= start
        (at most ``count``, 0 = all; ``accept``, if given, may stop the read before an
        entry).  An entry deleted from the stream comes back with None fields and is
        left as it is; the others count one more delivery."""
        out: list[tuple[StreamID, list[bytes] | None]] = []
        it = consumer.pel.iterator()
        it.seek(">=", id_to_key(start))
        touched: list[tuple[bytes, NACK]] = []
        while (not count or len(out) < count) and it.next():
            key = it.key
            id = key_to_id(key)
            fields = s.get(id)
            if accept is not None and not accept(fields):
                break
            out.append((id, fields))
            if fields is not None:
                touched.append((key, it.value))  # type: ignore[arg-type]
        for key, nack in touched:  # pel_by_time is another tree: safe to edit now
            self._set_time(nack, key, now)
            nack.delivery_count = next_delivery_count(nack.delivery_count)
        return out

    # --- claiming (storage/consumer_group_claim.py) -----------------------------------

    def claim(
        self,
        s: Stream,
        id: StreamID,
        consumer: Consumer,
        now: int,
        min_idle: int = 0,
        delivery_time: int | None = None,
        retry_count: int = -1,
        force: bool = False,
        justid: bool = False,
    ) -> tuple[str, NACK | None, list[bytes] | None]:
        """One ID of XCLAIM: ``(status, nack, fields)``, see consumer_group_claim.claim."""
        return _claim.claim(
            self, s, id, consumer, now, min_idle, delivery_time, retry_count, force, justid
        )

    def autoclaim(
        self,
        s: Stream,
        consumer: Consumer,
        now: int,
        min_idle: int,
        start: StreamID,
        count: int,
        justid: bool = False,
    ) -> tuple[
        StreamID,
        list[tuple[StreamID, NACK, list[bytes] | None]],
        list[tuple[StreamID, NACK]],
    ]:
        """XAUTOCLAIM: ``(cursor, claimed, deleted)``, see consumer_group_claim.autoclaim."""
        return _claim.autoclaim(self, s, consumer, now, min_idle, start, count, justid)

    def nack(self, s: Stream, ids: list[StreamID], mode: str, retry_count: int = -1,
             force: bool = False) -> int:
        """XNACK: release entries to the NACK zone, see consumer_group_nack.nack."""
        return _nack.nack(self, s, ids, mode, retry_count, force)

    def _to_nack_zone(self, key: bytes, nack: NACK) -> None:
        """Move a pending entry to the end of the NACK zone: no owner, delivery time 0."""
        owner = nack.consumer
        if owner is not None:
            owner.pel.remove(key)
            nack.consumer = None
        if self.nacked.pop(key, None) is None:
            self.pel_by_time.remove(_time_key(nack.delivery_time, key))
        nack.delivery_time = 0
        self.nacked[key] = nack

    def iter_nacked(self) -> Iterator[tuple[StreamID, NACK]]:
        """The NACK zone in release order."""
        for key, nack in self.nacked.items():
            yield key_to_id(key), nack

    def oldest_delivery_time(self, s: Stream | None = None) -> int | None:
        """Delivery time of the longest-idle pending entry (with ``s``: of those still in
        the stream), None if none."""
        return _claim.oldest_delivery_time(self, s)

    def claim_idle(
        self, s: Stream, consumer: Consumer, now: int, min_idle: int, limit: int = 0,
        accept: Callable[[list[bytes] | None], bool] | None = None,
    ) -> list[tuple[StreamID, list[bytes], int, int, NACK]]:
        """XREADGROUP CLAIM: ``(id, fields, idle, deliveries before, nack)`` per entry
        taken, see consumer_group_claim.claim_idle."""
        return _claim.claim_idle(self, s, consumer, now, min_idle, limit, accept)

    # --- inspection -----------------------------------------------------------------

    def pending_range(
        self,
        start: StreamID,
        end: StreamID,
        count: int,
        consumer: Consumer | None = None,
        now: int = 0,
        min_idle: int = 0,
    ) -> list[tuple[StreamID, NACK]]:
        """XPENDING's extended form: pending entries start <= ID <= end, of one
        consumer or of the group, idle >= min_idle (0 = any), at most count."""
        out: list[tuple[StreamID, NACK]] = []
        if count <= 0 or start > end:
            return out
        end_key = id_to_key(end)
        it = (self.pel if consumer is None else consumer.pel).iterator()
        it.seek(">=", id_to_key(start))
        while it.next():
            key = it.key
            if key > end_key:
                break
            nack: NACK = it.value  # type: ignore[assignment]
            # (an entry of the NACK zone has no owner and passes any IDLE filter)
            if min_idle and nack.consumer is not None and now - nack.delivery_time < min_idle:
                continue
            out.append((key_to_id(key), nack))
            if len(out) >= count:
                break
        return out

    def pending_summary(
        self,
    ) -> tuple[int, StreamID | None, StreamID | None, list[tuple[bytes, int]]]:
        """XPENDING's summary: count, smallest and largest pending ID, and
        ``(consumer name, pending count)`` for consumers with pending entries."""
        n = len(self.pel)
        if not n:
            return 0, None, None, []
        first = self.pel.first()
        last = self.pel.last()
        assert first is not None and last is not None
        owners = [(name, len(c.pel)) for name, c in self.consumers.items() if len(c.pel)]  # type: ignore[union-attr]
        return n, key_to_id(first[0]), key_to_id(last[0]), owners

    def iter_pending(self) -> Iterator[tuple[StreamID, NACK]]:
        for key, nack in self.pel.items():
            yield key_to_id(key), nack  # type: ignore[misc]

    def iter_consumers(self) -> Iterator[Consumer]:
        return self.consumers.values()  # type: ignore[return-value]


# --- groups of a stream ------------------------------------------------------------------


def lookup_group(s: Stream, name: bytes) -> ConsumerGroup | None:
    if s.cgroups is None:
        return None
    return s.cgroups.find(name)  # type: ignore[return-value]


def create_group(
    s: Stream, name: bytes, last_id: StreamID, entries_read: int = INVALID_ENTRIES_READ
) -> ConsumerGroup | None:
    """A new group (streamCreateCG), or None if the name is taken.  A read counter
    above the stream's entries_added is capped to it."""
    if s.cgroups is None:
        s.cgroups = Rax()
    if entries_read > s.entries_added:
        entries_read = s.entries_added
    group = ConsumerGroup(bytes(name), last_id, entries_read)
    if not s.cgroups.try_insert(group.name, group):
        return None
    return group


def destroy_group(s: Stream, name: bytes) -> bool:
    """XGROUP DESTROY: remove the group and its references in cgroups_ref."""
    group = lookup_group(s, name)
    if group is None:
        return False
    for key in group.pel:
        ref_remove(s, key, group)
    assert s.cgroups is not None
    s.cgroups.remove(group.name)
    return True


def groups(s: Stream) -> list[ConsumerGroup]:
    """The stream's groups in name order."""
    if s.cgroups is None:
        return []
    return list(s.cgroups.values())  # type: ignore[arg-type]


# --- consistency ---------------------------------------------------------------------------


def verify(s: Stream) -> None:
    """Check that every group's PEL, pel_by_time and consumer PELs agree with each
    other and with cgroups_ref; raise AssertionError otherwise (for tests)."""
    expected: dict[bytes, list[int]] = {}
    for group in groups(s):
        pel_keys = set()
        for key, nack in group.pel.items():
            assert isinstance(nack, NACK)
            pel_keys.add(key)
            expected.setdefault(key, []).append(id(group))
            if nack.consumer is None:  # the NACK zone
                assert group.nacked.get(key) is nack, "unowned entry outside the NACK zone"
                assert nack.delivery_time == 0, "NACK zone entry with a delivery time"
                assert _time_key(0, key) not in group.pel_by_time, "NACKed entry in pel_by_time"
                continue
            assert key not in group.nacked, "owned entry in the NACK zone"
            owner = group.consumers.find(nack.consumer.name)
            assert owner is nack.consumer, "owner is not a consumer of the group"
            assert nack.consumer.pel.find(key) is nack, "consumer PEL misses a NACK"
            assert _time_key(nack.delivery_time, key) in group.pel_by_time, "pel_by_time miss"
        assert len(group.pel_by_time) + len(group.nacked) == len(group.pel), \
            "pel_by_time and the NACK zone do not add up"
        total = 0
        for consumer in group.consumers.values():
            assert isinstance(consumer, Consumer)
            for key, nack in consumer.pel.items():
                assert group.pel.find(key) is nack, "consumer NACK not in the group PEL"
                assert nack.consumer is consumer  # type: ignore[union-attr]
            total += len(consumer.pel)
        assert total + len(group.nacked) == len(group.pel), "consumer PELs do not add up"
    refs = s.cgroups_ref
    actual: dict[bytes, list[int]] = {}
    if refs is not None:
        for key, holders in refs.items():
            assert holders, "empty cgroups_ref list"
            actual[key] = [id(g) for g in holders]  # type: ignore[union-attr]
    assert {k: sorted(v) for k, v in expected.items()} == {
        k: sorted(v) for k, v in actual.items()
    }, "cgroups_ref does not match the PELs"
