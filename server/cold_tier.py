"""stream-hot-memory: the server's side of the cold tier (storage/cold).

The tier is made when the option is first above 0 (the directory ``cold`` under ``dir`` is
then created, or emptied of old segments). On every cron pass the keyspace's streams are
swept for sealed nodes and the oldest are moved to disk while the sealed nodes in memory
exceed the limit, and a segment file that is mostly freed is compacted; after each event-loop
batch nodes are moved out too if a read brought back a lot (past 1.25 times the limit).
CONFIG SET to a lower value moves nodes out on the next pass; 0 stops moving them (cold
nodes come back as they are read). INFO memory reports it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from storage import stream_resp
from storage.cold import ColdTier, SegmentStore
from storage.cold.segments import SegmentError
from storage.stream import Stream

if TYPE_CHECKING:
    from server.core import ServerCore

COLD_DIRECTORY = "cold"
_SWEEP_NODES = 4096  # nodes looked at per cron pass
_EVICT_NODES = 2048  # nodes moved out per pass at most


class ColdTierService:
    def __init__(self, server: ServerCore) -> None:
        self.server = server
        self.tier: ColdTier | None = None
        config = server.config
        self.set_limit(config["stream-hot-memory"])
        config.on_change("stream-hot-memory", self.set_limit)
        server.cron_hooks.append(self.cron)
        server.before_sleep_hooks.append(self.before_sleep)

    def set_limit(self, limit: int) -> None:
        if limit and self.tier is None:
            directory = os.path.abspath(COLD_DIRECTORY)
            try:
                store = SegmentStore(directory)
                store.wipe()
            except (SegmentError, OSError) as exc:
                # (another server in the same dir, a directory that cannot be made: nodes
                # stay in memory; CONFIG SET may try again)
                self.server.log.warning(f"stream-hot-memory: cannot use {directory}: {exc}")
                return
            self.tier = ColdTier(store, limit, self.server.log.warning)
        if self.tier is not None:
            self.tier.limit = limit

    def _streams(self) -> Iterator[tuple[bytes, Stream]]:
        for db in self.server.dbs:
            for key, value in db.data.items():
                if type(value) is Stream:
                    yield key, value

    def cron(self) -> None:
        tier = self.tier
        if tier is None or not tier.limit or self.server.loading:
            return
        tier.sweep(list(self._streams()), _SWEEP_NODES)
        tier.evict(_EVICT_NODES)
        tier.compact()

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
