"""stream-hot-memory: the server's side of the cold tier (storage/cold).

The tier is made when the option is first above 0 (the directory ``cold`` under ``dir`` is
then created), or at start when that directory is there: the files a restart loads may refer
to its segments. Snapshots written for restarts (dump.rdb, the AOF's RDB base) refer to cold
nodes where they lie instead of carrying their bytes (``snapshot_refs``: which segments they
refer to is pinned, so those outlive the nodes in memory), and loading one makes those nodes
cold nodes again without reading them: a restart costs the hot data and the index. Segments
that nothing refers to are deleted once the data is loaded. On every cron pass the
keyspace's streams are swept for sealed nodes and the oldest are moved to disk while the
sealed nodes in memory exceed the limit, and a segment file that is mostly freed is
compacted; after each event-loop batch nodes are moved out too if a read brought back a lot
(past 1.25 times the limit). CONFIG SET to a lower value moves nodes out on the next pass; 0
stops moving them (cold nodes come back as they are read). INFO memory reports it. While nodes
cannot be written (a full disk) and the limit is exceeded, commands that may add data are
refused with an OOM error, until a node is written again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from storage import stream_resp
from storage.cold import ColdTier, SegmentStore
from storage.cold.segments import SegmentError
from storage.stream import Stream

if TYPE_CHECKING:
    from server.client import Client
    from server.core import ServerCore
    from server.dispatch import CommandSpec

COLD_DIRECTORY = "cold"
_SWEEP_NODES = 4096  # nodes looked at per cron pass
_EVICT_NODES = 2048  # nodes moved out per pass at most


class SnapshotRefs:
    """The segments a snapshot being written refers to (pinned until a newer snapshot of its
    kind is in place). ``sync`` runs in the child, before its file is renamed into place;
    ``done`` in the parent once it is in place (or given up)."""

    __slots__ = ("store", "kind", "numbers", "refers")

    def __init__(self, store: SegmentStore, kind: str, numbers: frozenset[int],
                 refers: bool) -> None:
        self.store = store
        self.kind = kind
        self.numbers = numbers
        self.refers = refers

    def sync(self) -> None:
        self.store.sync(self.numbers)

    def done(self, ok: bool) -> None:
        self.store.end_snapshot(self.kind, self.numbers, ok)


class ColdTierService:
    def __init__(self, server: ServerCore) -> None:
        self.server = server
        self.tier: ColdTier | None = None
        self.directory = os.path.abspath(COLD_DIRECTORY)
        config = server.config
        if os.path.isdir(self.directory):
            try:
                self._open()  # (the files loaded next may refer to its segments)
            except (SegmentError, OSError) as exc:
                server.log.warning(f"Cannot use the cold directory {self.directory}: {exc}")
        self.set_limit(config["stream-hot-memory"])
        config.on_change("stream-hot-memory", self.set_limit)
        server.cron_hooks.append(self.cron)
        server.before_sleep_hooks.append(self.before_sleep)
        server.loading_hooks.append(self.while_loading)
        self.moved_while_loading = 0
        self.refusing = False  # refuse() is in server.refusal_checks

    def _open(self) -> ColdTier:
        """The tier, its store opened on the cold directory; raises SegmentError or OSError
        (another server holds the directory, it cannot be made)."""
        if self.tier is None:
            store = SegmentStore(self.directory)
            self.tier = ColdTier(store, self.server.config["stream-hot-memory"],
                                 self.server.log.warning)
        return self.tier

    def set_limit(self, limit: int) -> None:
        if limit and self.tier is None:
            try:
                self._open()
            except (SegmentError, OSError) as exc:
                # (another server in the same dir, a directory that cannot be made: nodes
                # stay in memory; CONFIG SET may try again)
                self.server.log.warning(f"stream-hot-memory: cannot use {self.directory}: "
                                        f"{exc}")
                return
        if self.tier is not None:
            self.tier.limit = limit

    def _unpin_missing_files(self) -> None:
        """A kind of file that is no longer there (removed by hand, the AOF turned off and its
        directory gone) refers to nothing: its pinned segments may go."""
        config = self.server.config
        for kind, present in (("rdb", os.path.isfile(config["dbfilename"])),
                              ("aof", os.path.isdir(config["appenddirname"]))):
            if not present:
                self.unpin(kind)

    def unpin(self, kind: str) -> None:
        """The file of `kind` was replaced by one that refers to no segment."""
        tier = self.tier
        if tier is not None and kind in tier.store.pins.sets:
            try:
                tier.store.pins.set(kind, frozenset())
            except OSError:
                return  # (kept: nothing needed is lost)
            tier.store.collect()

    # -- snapshots and loading ------------------------------------------------------------------
    def for_loading(self) -> ColdTier:
        """The tier a file that refers to cold nodes loads them into (opened if need be)."""
        return self._open()

    def snapshot_refs(self, kind: str, refers: bool = True) -> SnapshotRefs | None:
        """For a snapshot of `kind` ("rdb": dbfilename, "aof": the AOF base) about to be
        written: the segments it refers to, pinned now; None when it carries every byte
        (no tier, or the pin file cannot be written). `refers` False: the file will refer to
        nothing (a replica's copy, a base of commands), which unpins its kind once in place."""
        tier = self.tier
        if tier is None:
            return None
        store = tier.store
        if os.path.abspath(COLD_DIRECTORY) != store.directory:
            # (CONFIG SET dir since the store was opened: a file in the new dir would refer to
            # segments a restart there does not find)
            refers = False
        numbers = store.in_use() if refers else frozenset()
        try:
            store.begin_snapshot(kind, numbers)
        except OSError as exc:
            self.server.log.warning(f"Cannot write {store.pins.path} ({exc}): the snapshot "
                                    "carries the cold nodes' bytes")
            return None
        return SnapshotRefs(store, kind, numbers, refers)

    def _streams(self) -> Iterator[tuple[bytes, Stream]]:
        for db in self.server.dbs:
            for key, value in db.data.items():
                if type(value) is Stream:
                    yield key, value

    def cron(self) -> None:
        tier = self.tier
        if tier is None or self.server.loading:
            return
        if tier.store.holding:
            self._unpin_missing_files()
            tier.store.release()  # (the data is loaded: unreferenced segments can go)
        if self.moved_while_loading:
            self.server.log.notice(f"{self.moved_while_loading} bytes of stream nodes moved to "
                                   "disk while loading")
            self.moved_while_loading = 0
        if not tier.limit:
            return
        self._move_out(tier)
        tier.compact()
        self._arm_refusal(tier.write_error is not None)

    def _arm_refusal(self, on: bool) -> None:
        if on != self.refusing:
            self.refusing = on
            checks = self.server.refusal_checks
            if on:
                checks.append(self.refuse)
                self.server.data_refusals += 1
            else:
                checks.remove(self.refuse)
                self.server.data_refusals -= 1

    def refuse(self, client: Client, spec: CommandSpec) -> str | None:
        """While nodes cannot be written to disk and the limit is exceeded, commands that may
        add data are refused, as maxmemory refuses them (deleting and trimming still work)."""
        tier = self.tier
        if (not spec.denyoom or self.server.loading or tier is None or tier.write_error is None
                or not tier.limit or tier.hot_bytes <= tier.limit):
            return None
        return (f"OOM command not allowed when stream-hot-memory is exceeded and stream nodes "
                f"cannot be written to disk: {tier.write_error}")

    def while_loading(self) -> None:
        """During an AOF replay: what the cron does, so that a replayed backlog larger than
        the limit does not all stay in memory until the end."""
        tier = self.tier
        if tier is not None and tier.limit:
            self.moved_while_loading += self._move_out(tier)

    def _move_out(self, tier: ColdTier) -> int:
        """A pass: sealed nodes found, the oldest moved out while over the limit (bytes)."""
        tier.sweep(list(self._streams()), _SWEEP_NODES)
        return tier.evict(_EVICT_NODES)

    def before_sleep(self) -> None:
        tier = self.tier
        if tier is not None and tier.limit and tier.hot_bytes > tier.limit * 1.25:
            tier.evict(_EVICT_NODES // 8)

    def info_fields(self) -> list[tuple[str, object]]:
        tier = self.tier
        limit = self.server.config["stream-hot-memory"]
        if tier is None:
            return [("stream_hot_memory", limit), ("stream_hot_bytes", 0),
                    ("stream_cold_nodes", 0), ("stream_cold_bytes", 0),
                    ("stream_cold_disk_bytes", 0), ("stream_cold_reads", 0),
                    ("stream_cold_cache_hits", 0)]
        # (cold_reads: nodes read back from disk; cache hits: reads of cold nodes the reply
        # cache served without the disk)
        return [("stream_hot_memory", limit), ("stream_hot_bytes", tier.hot_bytes),
                ("stream_cold_nodes", tier.cold_nodes), ("stream_cold_bytes", tier.cold_bytes),
                ("stream_cold_disk_bytes", tier.store.disk_bytes),
                ("stream_cold_reads", tier.cold_reads),
                ("stream_cold_cache_hits", stream_resp.cold_hits())]


def attach(server: ServerCore) -> ColdTierService:
    return ColdTierService(server)


def cold_refs_of(refs: SnapshotRefs | None) -> Callable[[], None] | None:
    """What a snapshot writer takes as `cold_refs`: None to carry every byte."""
    return refs.sync if refs is not None and refs.refers else None
