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

from storage.cold.node import ColdRef, StreamTag, freeze, on_thaw
from storage.cold.segments import SegmentStore
from storage.stream import Stream
from storage.stream_id import id_to_key, key_to_id
from storage.stream_node import StreamNode, node_last_id
from storage.stream_resp import forget, signature

__all__ = ["ColdTier"]

_Entry = tuple[weakref.ref, weakref.ref, StreamTag, int, bytes]  # node, stream, tag, bytes, key


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
        self.hot: OrderedDict[int, _Entry] = OrderedDict()
        self.hot_bytes = 0
        self.cold_nodes = 0
        self.cold_bytes = 0
        self.cold_reads = 0  # nodes read back from disk
        self.write_errors = 0
        self.progress: dict[int, _Progress] = {}
        # Cold nodes, so that one freed by its stream (trimmed, deleted) frees its place.
        self.cold: dict[int, weakref.ref] = {}
        on_thaw.append(self._thawed)

    def close(self) -> None:
        if self._thawed in on_thaw:
            on_thaw.remove(self._thawed)

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
                progress = self.progress[id(stream)] = _Progress(stream, StreamTag(bytes(key)))
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
            if type(node) is StreamNode and id(node) not in self.hot:
                self._register(node, stream, progress.tag, len(node.buf), key)  # type: ignore[arg-type]
            progress.next_key = key + b"\x00"  # (the smallest key above this one)
            item = rax.ceiling(key, True)
        return seen

    def _register(self, node: StreamNode, stream: Stream, tag: StreamTag, size: int,
                  key: bytes) -> None:
        nid = id(node)
        self.hot[nid] = (weakref.ref(node, lambda _ref, nid=nid: self._freed(nid)),
                         weakref.ref(stream), tag, size, key)
        self.hot_bytes += size

    def _freed(self, nid: int) -> None:
        entry = self.hot.pop(nid, None)
        if entry is not None:
            self.hot_bytes -= entry[3]

    def _cold_freed(self, nid: int, ref: ColdRef) -> None:
        if self.cold.pop(nid, None) is not None:
            self.cold_nodes -= 1
            self.cold_bytes -= ref.place.length
            ref.store.free(ref.place)

    def _thawed(self, node: StreamNode, ref: ColdRef) -> None:
        self.cold.pop(id(node), None)
        self.cold_nodes -= 1
        self.cold_bytes -= ref.place.length
        self.cold_reads += 1
        stream = None
        for progress in self.progress.values():
            if progress.tag is ref.tag:
                stream = progress.stream()
                break
        if stream is not None:
            self._register(node, stream, ref.tag, ref.place.length, id_to_key(ref.first))

    # -- moving nodes out -----------------------------------------------------------------------
    def evict(self, max_nodes: int = 1024) -> int:
        """Freeze the oldest registered nodes while the hot bytes exceed the limit; at most
        max_nodes. Returns the bytes moved out."""
        moved = 0
        hot = self.hot
        while self.limit and self.hot_bytes > self.limit and hot and max_nodes > 0:
            nid, (node_ref, stream_ref, tag, size, key) = hot.popitem(last=False)
            self.hot_bytes -= size
            node = node_ref()
            stream = stream_ref()
            if node is None or stream is None or type(node) is not StreamNode:
                continue
            rax = stream.rax
            if rax.find(key) is not node:
                continue  # no longer in its stream
            last = rax.last()
            if last is not None and last[1] is node:  # its stream's last node again: the
                # next sweep looks at it again
                progress = self.progress.get(id(stream))
                if progress is not None and progress.next_key > key:
                    progress.next_key = key
                continue
            resp = node.resp
            if resp is not None and resp.signature != signature(node):
                forget(node)  # (a stale encoding must not outlive the bytes it describes)
            master = key_to_id(key)
            try:
                freed = freeze(node, self.store, tag, master, node_last_id(node.buf, master))
            except OSError as exc:
                self.write_errors += 1
                if self.write_errors == 1 or self.write_errors % 1000 == 0:
                    self.log(f"Cannot move stream nodes to disk ({exc}); they stay in memory")
                self._register(node, stream, tag, size, key)
                break
            ref = node.cold
            self.cold[nid] = weakref.ref(node, lambda _r, nid=nid, ref=ref: self._cold_freed(
                nid, ref))
            self.cold_nodes += 1
            self.cold_bytes += freed
            moved += freed
            max_nodes -= 1
        return moved
