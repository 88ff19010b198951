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

from collections.abc import Callable

from storage.cold.segments import Place, SegmentError, SegmentStore
from storage.listpack import Listpack
from storage.stream_id import StreamID, format_id
from storage.stream_node import StreamNode

__all__ = ["ColdDataError", "ColdNode", "ColdRef", "StreamTag", "freeze", "thaw"]

_BUF = Listpack.__dict__["buf"]  # the slot descriptor under ColdNode's property


class StreamTag:
    """The key a stream is stored under, as last seen (for error messages)."""

    __slots__ = ("key",)

    def __init__(self, key: bytes) -> None:
        self.key = key


class ColdRef:
    """Where a cold node's bytes lie, and what the node holds (for the error message)."""

    __slots__ = ("place", "store", "tag", "first", "last")

    def __init__(self, place: Place, store: SegmentStore, tag: StreamTag, first: StreamID,
                 last: StreamID) -> None:
        self.place = place
        self.store = store
        self.tag = tag
        self.first = first
        self.last = last


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
    node.cold = ColdRef(place, store, tag, first, last)
    _BUF.__set__(node, None)
    node.__class__ = ColdNode
    return len(data)


def thaw(node: StreamNode) -> None:
    """Bring a cold node's bytes back (ColdDataError if they cannot be read)."""
    ref: ColdRef = node.cold  # type: ignore[assignment]
    try:
        data = ref.store.read(ref.place)
    except SegmentError as exc:
        raise ColdDataError(ref, str(exc)) from None
    _BUF.__set__(node, bytearray(data))
    node.__class__ = StreamNode
    node.cold = None
    ref.store.free(ref.place)
    for hook in on_thaw:
        hook(node, ref)
