"""The hot budget: which sealed stream nodes stay in memory (stream-hot-memory).

``ColdTier`` keeps every sealed node that is in memory in a registry, oldest first: nodes
join it when a sweep of the keyspace finds them (each stream is walked from where its last
sweep stopped, so a sweep costs the nodes sealed since) and when a cold node is read back
(it joins at the young end). ``evict`` freezes nodes from the old end while the registry
holds more bytes than the limit: for a stream, that is its oldest entries first, and across
streams the nodes sealed or read back longest ago. A stream's last node, which XADD appends
to, is never frozen; nor is a node that became a stream's last one again (it is sought again
by the next sweep). A node freed by its stream (trimmed, deleted) leaves the registry by a
weak reference.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable

from storage.cold.node import (
    ColdNode,
    ColdRef,
    StreamTag,
    cold_node,
    freeze,
    on_cold_freed,
    on_thaw,
)
from storage.cold.segments import SegmentError, SegmentStore
from storage.stream import Stream
from storage.stream_id import key_to_id
from storage.stream_node import StreamNode, node_last_id
from storage.stream_resp import forget, signature

__all__ = ["ColdTier"]

# A registered hot node: its stream's sweep progress (which holds the stream and its tag),
# its size and its key. Keyed by a weak reference to the node, whose callback drops it.
_Entry = tuple["_Progress", int, bytes]


class _Progress:
    """A stream's sweep position: nodes before ``next_key`` were looked at."""

    __slots__ = ("stream", "tag", "next_key")

    def __init__(self, stream: Stream, tag: StreamTag) -> None:
        self.stream = weakref.ref(stream)
        self.tag = tag
        self.next_key = b""


class ColdTier:
    def __init__(self, store: SegmentStore, limit: int = 0,
                 log: Callable[[str], None] | None = None) -> None:
        self.store = store
        self.limit = limit
        self.log = log or (lambda _message: None)
        self.hot: OrderedDict[weakref.ref, _Entry] = OrderedDict()
        self.hot_bytes = 0
        self.cold_nodes = 0
        self.cold_bytes = 0
        self.cold_reads = 0  # nodes read back from disk
        self.write_errors = 0
        # Why the last node could not be written (a full disk...), until one is written again.
        self.write_error: str | None = None
        self.progress: dict[int, _Progress] = {}
        self.stuck: set[int] = set()  # sparse segments compaction found no node of
        self._hot_freed_call = self._hot_freed  # (one bound method for every weak reference)
        on_thaw.append(self._thawed)
        on_cold_freed.append(self._cold_freed)

    def close(self) -> None:
        if self._thawed in on_thaw:
            on_thaw.remove(self._thawed)
        if self._cold_freed in on_cold_freed:
            on_cold_freed.remove(self._cold_freed)

    # -- finding sealed nodes -----------------------------------------------------------------
    def sweep(self, streams: Iterable[tuple[bytes, Stream]], budget: int = 4096) -> int:
        """Register the sealed, hot nodes of these streams not seen yet, looking at no more
        than about ``budget`` nodes; returns how many were looked at."""
        seen = 0
        alive: set[int] = set()
        for key, stream in streams:
            alive.add(id(stream))
            if seen >= budget:
                continue
            progress = self.progress.get(id(stream))
            if progress is None or progress.stream() is not stream:
                progress = self.progress[id(stream)] = _Progress(
                    stream, StreamTag(bytes(key), id(stream), self.store))
            progress.tag.key = bytes(key)
            seen += self._sweep_stream(stream, progress, budget - seen)
        for sid in [sid for sid in self.progress if sid not in alive]:
            del self.progress[sid]
        return seen

    def _sweep_stream(self, stream: Stream, progress: _Progress, budget: int) -> int:
        rax = stream.rax
        last = rax.last()
        if last is None:
            return 0
        last_key = last[0]
        item = rax.ceiling(progress.next_key) if progress.next_key else rax.first()
        seen = 0
        while item is not None and seen < budget:
            key, node = item
            if key == last_key:
                break
            seen += 1
            if type(node) is StreamNode and weakref.ref(node) not in self.hot:
                self._register(node, progress, len(node.buf), key)  # type: ignore[arg-type]
            progress.next_key = key + b"\x00"  # (the smallest key above this one)
            item = rax.ceiling(key, True)
        return seen

    def _register(self, node: StreamNode, progress: _Progress, size: int, key: bytes) -> None:
        self.hot[weakref.ref(node, self._hot_freed_call)] = (progress, size, key)
        self.hot_bytes += size

    def _hot_freed(self, watch: weakref.ref) -> None:
        entry = self.hot.pop(watch, None)
        if entry is not None:
            self.hot_bytes -= entry[1]

    def _cold_freed(self, ref: ColdRef) -> None:
        if ref.tag.store is not self.store:
            return  # (another tier's)
        segment, _offset, length, _crc = ref.where()
        self.cold_nodes -= 1
        self.cold_bytes -= length
        self.store.free(segment, length)

    def _thawed(self, node: StreamNode, ref: ColdRef) -> None:
        if ref.tag.store is not self.store:
            return
        self.cold_nodes -= 1
        self.cold_bytes -= ref.length
        self.cold_reads += 1
        progress = self.progress.get(ref.tag.stream_id)
        if progress is not None and progress.tag is ref.tag and progress.stream() is not None:
            self._register(node, progress, ref.length, ref.ids[:16])

    # -- nodes loaded from a snapshot that refers to their segments ------------------------------
    def loaded_node(self, tag: StreamTag, segment: int, offset: int, length: int, crc: int,
                    ids: bytes) -> ColdNode:
        """A cold node read from a snapshot; ``adopt`` makes it the tier's with its stream."""
        tag.store = self.store
        return cold_node(ColdRef(tag, segment, offset, length, crc, ids))

    def adopt(self, key: bytes, stream: Stream, tag: StreamTag, nodes: list[ColdNode]) -> None:
        """The loaded stream's cold nodes (made with tag) count as the tier's: their bytes
        are in use, and freeing a node frees them."""
        tag.key = bytes(key)
        tag.stream_id = id(stream)
        progress = _Progress(stream, tag)
        self.progress[id(stream)] = progress
        for node in nodes:
            ref: ColdRef = node.cold  # type: ignore[assignment]
            segment, _offset, length, _crc = ref.where()
            self.store.adopt(segment, length)  # (a missing one: reads give the error)
            self.cold_nodes += 1
            self.cold_bytes += length

    # -- compacting segments ---------------------------------------------------------------------
    def compact(self, max_bytes: int = 4 << 20) -> int:
        """Move the live nodes of one mostly freed segment to the current one (at most
        max_bytes of them a call); the emptied segment is deleted. Returns bytes moved."""
        store = self.store
        number = store.sparse_segment(skip=self.stuck)
        if number is None:
            return 0
        moved = found = 0
        for progress in list(self.progress.values()):  # (the streams' cold nodes: a walk of
            stream = progress.stream()  # their trees, while a segment is being compacted)
            if stream is None:
                continue
            for node in stream.rax.values():
                ref: ColdRef | None = node.cold  # type: ignore[attr-defined]
                if ref is None or ref.tag.store is not store:
                    continue
                where = ref.where()
                if where[0] != number:
                    continue
                found += 1
                if moved >= max_bytes:
                    return moved
                try:
                    data = store.read(*where)
                    segment, offset, crc = store.append(data)
                except (OSError, SegmentError):
                    return moved  # (read again when the node is; the disk may be full)
                store.free(number, where[2])
                ref.moved(segment, offset, crc)
                moved += where[2]
        if not found:
            self.stuck.add(number)  # (its live bytes belong to no stream the tier knows)
        return moved

    # -- moving nodes out -----------------------------------------------------------------------
    def evict(self, max_nodes: int = 1024) -> int:
        """Freeze the oldest registered nodes while the hot bytes exceed the limit; at most
        max_nodes. Returns the bytes moved out."""
        moved = 0
        hot = self.hot
        while self.limit and self.hot_bytes > self.limit and hot and max_nodes > 0:
            watch, (progress, size, key) = hot.popitem(last=False)
            self.hot_bytes -= size
            node = watch()
            stream = progress.stream()
            if node is None or stream is None or type(node) is not StreamNode:
                continue
            rax = stream.rax
            if rax.find(key) is not node:
                continue  # no longer in its stream
            last = rax.last()
            if last is not None and last[1] is node:  # its stream's last node again: the
                # next sweep looks at it again
                if progress.next_key > key:
                    progress.next_key = key
                continue
            resp = node.resp
            if resp is not None and resp.signature != signature(node):
                forget(node)  # (a stale encoding must not outlive the bytes it describes)
            master = key_to_id(key)
            try:
                freed = freeze(node, self.store, progress.tag, master,
                               node_last_id(node.buf, master))
            except OSError as exc:
                self.write_errors += 1
                if self.write_error is None or self.write_errors % 1000 == 0:
                    self.log(f"Cannot move stream nodes to disk ({exc}); they stay in memory")
                self.write_error = exc.strerror or str(exc)
                self._register(node, progress, size, key)
                break
            if self.write_error is not None:
                self.log("Stream nodes are moved to disk again")
                self.write_error = None
            self.cold_nodes += 1
            self.cold_bytes += freed
            moved += freed
            max_nodes -= 1
        return moved
