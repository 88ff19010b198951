"""Segment files: where cold stream nodes' bytes lie.

A segment is an append-only file ``seg-<n>.cold`` in the cold directory. A node going cold
is appended whole to the current segment; its place (segment number, offset, length, CRC-32
of the bytes) is kept in memory by the node (node.ColdRef). Segments roll over at
``SEGMENT_BYTES``. Each segment counts the bytes still in use; when a node is read back (or
its stream drops it) its bytes are freed, and a segment with none left, other than the one
being written, is deleted. A segment mostly freed is compacted by the tier (its live nodes
appended to the current segment, sparse_segment), so deleted or trimmed cold data gives its
disk space back.

Files are read through descriptors opened once and kept (``os.pread``), so a forked child
(BGSAVE, a full sync to a replica) can still read a segment the parent has deleted since.
A store holds an exclusive lock on its directory (``LOCK``) for as long as the process lives,
and creates each segment file new: two servers given the same directory cannot write into
each other's segments (the second one's store refuses to open: SegmentError).
"""

from __future__ import annotations

import fcntl
import os
import zlib

__all__ = ["SEGMENT_BYTES", "SegmentError", "SegmentStore"]

SEGMENT_BYTES = 64 << 20


class SegmentError(Exception):
    """A node's bytes cannot be read back: the reason, for the error that names the node."""


class _Segment:
    __slots__ = ("number", "fd", "size", "live", "path", "name")

    def __init__(self, number: int, path: str) -> None:
        self.number = number
        self.path = path
        self.name = os.path.basename(path)
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        self.size = 0
        self.live = 0


class SegmentStore:
    """The segments of one cold directory (created empty: see ``wipe``)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        self.lock_fd = os.open(os.path.join(directory, "LOCK"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self.lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self.lock_fd)
            raise SegmentError(f"the cold directory {directory} is in use by another "
                               "process") from None
        self.segments: dict[int, _Segment] = {}
        self.current: _Segment | None = None
        self.next_number = 1
        self.disk_bytes = 0  # bytes of the segment files that exist

    def wipe(self) -> None:
        """Empty the directory of segments (cold data does not outlive the process: the AOF
        and snapshots hold every entry)."""
        directory = self.directory
        for name in os.listdir(directory):
            if name.startswith("seg-") and name.endswith(".cold"):
                os.unlink(os.path.join(directory, name))

    def append(self, data: bytes) -> tuple[int, int, int]:
        """Write data to the current segment: (segment, offset, CRC-32). OSError (a full
        disk...) leaves nothing half-counted."""
        seg = self.current
        if seg is None or seg.size >= SEGMENT_BYTES:
            seg = self._new_segment()
        written = os.write(seg.fd, data)
        if written != len(data):  # (a short write: the disk is full)
            os.ftruncate(seg.fd, seg.size)
            raise OSError(28, "short write to a cold segment (disk full?)")
        offset = seg.size
        seg.size += written
        seg.live += written
        self.disk_bytes += written
        return seg.number, offset, zlib.crc32(data)

    def read(self, segment: int, offset: int, length: int, crc: int) -> bytes:
        seg = self.segments.get(segment)
        if seg is None:
            raise SegmentError(f"segment {segment} is gone")
        try:
            data = os.pread(seg.fd, length, offset)
        except OSError as exc:
            raise SegmentError(f"segment file {seg.name}: {exc.strerror}") from None
        if len(data) != length:
            raise SegmentError(f"segment file {seg.name} is shorter than expected (offset "
                               f"{offset})")
        if zlib.crc32(data) != crc:
            raise SegmentError(f"segment file {seg.name}: checksum mismatch at offset {offset}")
        return data

    def free(self, segment: int, length: int) -> None:
        seg = self.segments.get(segment)
        if seg is None:
            return
        seg.live -= length
        if seg.live <= 0 and seg is not self.current:
            self._drop(seg)

    def sparse_segment(self, ratio: float = 0.5) -> int | None:
        """A segment, other than the one being written, whose live bytes are below ``ratio``
        of its size: worth compacting (the tier moves its live nodes to the current one)."""
        for seg in self.segments.values():
            if seg is not self.current and seg.size and seg.live < seg.size * ratio:
                return seg.number
        return None

    def close(self) -> None:
        for seg in list(self.segments.values()):
            os.close(seg.fd)
        self.segments.clear()
        self.current = None
        os.close(self.lock_fd)  # (and with it the lock)

    def _new_segment(self) -> _Segment:
        old = self.current
        number = self.next_number
        self.next_number += 1
        seg = _Segment(number, os.path.join(self.directory, f"seg-{number}.cold"))
        self.segments[number] = seg
        self.current = seg
        if old is not None and old.live <= 0:
            self._drop(old)
        return seg

    def _drop(self, seg: _Segment) -> None:
        del self.segments[seg.number]
        self.disk_bytes -= seg.size
        try:
            os.unlink(seg.path)
        except OSError:
            pass
        os.close(seg.fd)
