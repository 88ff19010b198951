"""Cold nodes: a stream node whose bytes are on disk, read back the moment anything asks.

``freeze`` writes a sealed node's listpack to a segment, keeps where (a ``ColdRef``) in the
node's ``cold`` slot, drops the bytes and turns the object into a ``ColdNode``: the same
object, still in its stream's rax under the same key, with its master-entry summary and its
lookup marks. ``ColdNode.buf`` is a property: the first read (or write) of the bytes, by any
code at all, calls ``thaw``, which reads them back, checks their CRC, turns the object back
into a plain StreamNode and frees their place on disk. Nothing else in storage needs to know.

A node that cannot be read back stays cold and the read raises ColdDataError, whose message
names the stream and the IDs the node holds.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

from storage.cold.segments import SegmentError, SegmentStore
from storage.listpack import Listpack
from storage.stream_id import StreamID, format_id, id_to_key, key_to_id
from storage.stream_node import StreamNode

__all__ = ["ColdDataError", "ColdNode", "ColdRef", "StreamTag", "cold_node", "freeze",
           "node_bytes", "thaw"]

_BUF = Listpack.__dict__["buf"]  # the slot descriptor under ColdNode's property


class StreamTag:
    """The key a stream is stored under, as last seen (for error messages), and the id()
    of the stream object (where the tier keeps its sweep progress)."""

    __slots__ = ("key", "stream_id")

    def __init__(self, key: bytes, stream_id: int = 0) -> None:
        self.key = key
        self.stream_id = stream_id


class ColdRef:
    """Where a cold node's bytes lie (segment, offset, length, CRC-32), the stream's tag and
    the node's first and last IDs as two 16-byte keys (for the error message), and the tier's
    weak reference to the node (``watch``). Kept small: one per cold node."""

    __slots__ = ("segment", "offset", "length", "crc", "store", "tag", "ids", "watch")

    def __init__(self, store: SegmentStore, place: tuple[int, int, int], length: int,
                 tag: StreamTag, first: StreamID, last: StreamID) -> None:
        self.segment, self.offset, self.crc = place
        self.length = length
        self.store = store
        self.tag = tag
        self.ids = id_to_key(first) + id_to_key(last)
        self.watch: weakref.ref | None = None

    @classmethod
    def at(cls, store: SegmentStore, segment: int, offset: int, length: int, crc: int,
           tag: StreamTag, ids: bytes) -> ColdRef:
        """A reference read back from a snapshot (ids: the first and last keys)."""
        ref = cls.__new__(cls)
        ref.segment, ref.offset, ref.length, ref.crc = segment, offset, length, crc
        ref.store = store
        ref.tag = tag
        ref.ids = ids
        ref.watch = None
        return ref

    @property
    def first(self) -> StreamID:
        return key_to_id(self.ids[:16])

    @property
    def last(self) -> StreamID:
        return key_to_id(self.ids[16:])


class ColdDataError(Exception):
    """A cold node's bytes cannot be read back; ``message`` is the error reply's text."""

    def __init__(self, ref: ColdRef, reason: str) -> None:
        key = ref.tag.key.decode("utf-8", errors="backslashreplace")
        first, last = format_id(ref.first).decode(), format_id(ref.last).decode()
        self.message = (f"ERR cold data of stream '{key}' (entries {first} to {last}) cannot "
                        f"be read: {reason}")
        super().__init__(self.message)


# Called with each thawed node (and its ref): the tier counts it as hot again.
on_thaw: list[Callable[[StreamNode, ColdRef], None]] = []


class ColdNode(StreamNode):
    """A StreamNode whose bytes are on disk (see the module's docstring)."""

    __slots__ = ()

    @property  # type: ignore[override]
    def buf(self) -> bytearray:
        thaw(self)
        return _BUF.__get__(self)  # type: ignore[no-any-return]

    @buf.setter
    def buf(self, value: bytearray) -> None:
        thaw(self)
        _BUF.__set__(self, value)


def freeze(node: StreamNode, store: SegmentStore, tag: StreamTag, first: StreamID,
           last: StreamID) -> int:
    """Move a sealed node's bytes to disk; returns how many bytes left memory. OSError
    (nothing changed) when they cannot be written."""
    data = _BUF.__get__(node)
    place = store.append(bytes(data))
    node.cold = ColdRef(store, place, len(data), tag, first, last)
    _BUF.__set__(node, None)
    node.marks = None  # (rebuilt when a lookup needs them)
    node.__class__ = ColdNode
    return len(data)


def cold_node(ref: ColdRef) -> ColdNode:
    """A node whose bytes are at ref (loaded from a snapshot that refers to them)."""
    node = StreamNode()
    _BUF.__set__(node, None)
    node.cold = ref
    node.__class__ = ColdNode
    return node  # type: ignore[return-value]


def thaw(node: StreamNode) -> None:
    """Bring a cold node's bytes back (ColdDataError if they cannot be read)."""
    ref: ColdRef = node.cold  # type: ignore[assignment]
    try:
        data = ref.store.read(ref.segment, ref.offset, ref.length, ref.crc)
    except SegmentError as exc:
        raise ColdDataError(ref, str(exc)) from None
    _BUF.__set__(node, bytearray(data))
    node.__class__ = StreamNode
    node.cold = None
    ref.store.free(ref.segment, ref.length)
    for hook in on_thaw:
        hook(node, ref)


def node_bytes(node: StreamNode) -> bytes | bytearray:
    """A node's listpack for a reader that only copies it out (a snapshot, DUMP): a cold
    node's bytes come from its file and the node stays cold, so writing out a backlog
    larger than memory does not bring it back into memory."""
    ref: ColdRef | None = node.cold
    if ref is None:
        return node.buf
    try:
        return ref.store.read(ref.segment, ref.offset, ref.length, ref.crc)
    except SegmentError as exc:
        raise ColdDataError(ref, str(exc)) from None
