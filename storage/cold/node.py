"""Cold nodes: a stream node whose bytes are on disk, read back the moment anything asks.

``freeze`` writes a sealed node's listpack to a segment, keeps where (a ``ColdRef``) in the
node's ``cold`` slot, drops the bytes and turns the object into a ``ColdNode``: the same
object, still in its stream's rax under the same key, with its field names (``master``).
``ColdNode.buf`` is a property: the first read (or write) of the bytes, by any code at all,
calls ``thaw``, which reads them back, checks their CRC, turns the object back into a plain
StreamNode and frees their place on disk. Nothing else in storage needs to know. A node freed
while cold (its entries trimmed, its stream deleted) frees its place from its finalizer
(``on_cold_freed``).

A node that cannot be read back stays cold and the read raises ColdDataError, whose message
names the stream and the IDs the node holds.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from storage.cold.segments import SegmentError, SegmentStore
from storage.listpack import Listpack
from storage.stream_id import StreamID, format_id, id_to_key, key_to_id
from storage.stream_node import StreamNode

__all__ = ["ColdDataError", "ColdNode", "ColdRef", "StreamTag", "cold_node", "freeze",
           "node_bytes", "thaw"]

_BUF = Listpack.__dict__["buf"]  # the slot descriptor under ColdNode's property


class StreamTag:
    """The key a stream is stored under, as last seen (for error messages), the id() of the
    stream object (where the tier keeps its sweep progress) and the segment store its cold
    nodes are in. One per stream, shared by its cold nodes' refs."""

    __slots__ = ("key", "stream_id", "store")

    def __init__(self, key: bytes, stream_id: int = 0,
                 store: SegmentStore | None = None) -> None:
        self.key = key
        self.stream_id = stream_id
        self.store: SegmentStore = store  # type: ignore[assignment]


# A cold node's place, packed: segment, offset, length, CRC-32, then its first and last IDs as
# two 16-byte keys (for the error message): 52 bytes in one bytes object.
_PLACE = struct.Struct(">IQII")
_IDS_AT = _PLACE.size


class ColdRef:
    """Where a cold node's bytes lie and its stream's tag. One per cold node, so kept small:
    two slots, the place packed in one bytes object (about 150 bytes in all)."""

    __slots__ = ("place", "tag")

    def __init__(self, tag: StreamTag, segment: int, offset: int, length: int, crc: int,
                 ids: bytes) -> None:
        self.place = _PLACE.pack(segment, offset, length, crc) + ids
        self.tag = tag

    def where(self) -> tuple[int, int, int, int]:
        """(segment, offset, length, CRC-32)."""
        return _PLACE.unpack_from(self.place)  # type: ignore[return-value]

    def moved(self, segment: int, offset: int, crc: int) -> None:
        """The bytes were copied to segment at offset (compaction)."""
        self.place = _PLACE.pack(segment, offset, self.length, crc) + self.ids

    @property
    def store(self) -> SegmentStore:
        return self.tag.store

    @property
    def segment(self) -> int:
        return _PLACE.unpack_from(self.place)[0]  # type: ignore[no-any-return]

    @property
    def offset(self) -> int:
        return _PLACE.unpack_from(self.place)[1]  # type: ignore[no-any-return]

    @property
    def length(self) -> int:
        return _PLACE.unpack_from(self.place)[2]  # type: ignore[no-any-return]

    @property
    def crc(self) -> int:
        return _PLACE.unpack_from(self.place)[3]  # type: ignore[no-any-return]

    @property
    def ids(self) -> bytes:
        return self.place[_IDS_AT:]

    @property
    def first(self) -> StreamID:
        return key_to_id(self.place[_IDS_AT:_IDS_AT + 16])

    @property
    def last(self) -> StreamID:
        return key_to_id(self.place[_IDS_AT + 16:])


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
# Called with the ref of each cold node freed while cold (trimmed, deleted with its stream):
# the tier frees its place on disk.
on_cold_freed: list[Callable[[ColdRef], None]] = []


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

    def __del__(self) -> None:
        # (Only a node still cold when freed gets here: a thawed one is a StreamNode again.
        # Cheaper than a weak reference per cold node.)
        try:
            ref = self.cold
            if ref is not None:
                for hook in on_cold_freed:
                    hook(ref)
        except Exception:  # noqa: S110 - (at interpreter exit the hooks may be gone)
            pass


def freeze(node: StreamNode, store: SegmentStore, tag: StreamTag, first: StreamID,
           last: StreamID) -> int:
    """Move a sealed node's bytes to disk; returns how many bytes left memory. OSError
    (nothing changed) when they cannot be written."""
    data = _BUF.__get__(node)
    segment, offset, crc = store.append(bytes(data))
    tag.store = store
    node.cold = ColdRef(tag, segment, offset, len(data), crc, id_to_key(first) + id_to_key(last))
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
    segment, offset, length, crc = ref.where()
    store = ref.tag.store
    try:
        data = store.read(segment, offset, length, crc)
    except SegmentError as exc:
        raise ColdDataError(ref, str(exc)) from None
    _BUF.__set__(node, bytearray(data))
    node.__class__ = StreamNode
    node.cold = None
    store.free(segment, length)
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
        return ref.tag.store.read(*ref.where())
    except SegmentError as exc:
        raise ColdDataError(ref, str(exc)) from None
