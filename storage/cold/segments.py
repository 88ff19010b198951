"""Segment files: where cold stream nodes' bytes lie.

A segment is an append-only file ``seg-<n>.cold`` in the cold directory. A node going cold
is appended whole to the current segment; its place (segment number, offset, length, CRC-32
of the bytes) is kept in memory by the node (node.ColdRef). Segments roll over at
``SEGMENT_BYTES``. Each segment counts the bytes still in use; when a node is read back (or
its stream drops it) its bytes are freed, and a segment with none left is deleted (once no
snapshot refers to it either, below). A segment mostly
freed is compacted by the tier (its live nodes appended to the current segment,
sparse_segment), so deleted or trimmed cold data gives its disk space back.

Files are read through descriptors opened once and kept (``os.pread``), so a forked child
(BGSAVE, a full sync to a replica) can still read a segment the parent has deleted since.
A store holds an exclusive lock on its directory (``LOCK``) for as long as the process lives,
and creates each segment file new: two servers given the same directory cannot write into
each other's segments (the second one's store refuses to open: SegmentError).

Segments are part of the durable state: snapshots refer to the nodes in them (pins.py), so a
segment is deleted only when no node in memory, no snapshot file on disk and no snapshot being
written refers to it. A store opens the segments it finds (a restart loads a snapshot that
refers to them) and deletes none until ``release`` is called, once the data is loaded: those
that nothing refers to then go. New nodes go to new segments, numbered after the highest
found; a segment's bytes never change once written.

Only the process that opened the store writes or deletes segments: a forked child (a
snapshot) only reads them.
"""

from __future__ import annotations

import fcntl
import os
import re
import zlib

from storage.cold.pins import PinFile

__all__ = ["SEGMENT_BYTES", "SegmentError", "SegmentStore"]

SEGMENT_BYTES = 64 << 20


class SegmentError(Exception):
    """A node's bytes cannot be read back: the reason, for the error that names the node."""


_NAME = re.compile(r"seg-([1-9][0-9]{0,17})\.cold")


class _Segment:
    __slots__ = ("number", "fd", "size", "live", "path", "name")

    def __init__(self, number: int, path: str, existing: bool = False) -> None:
        self.number = number
        self.path = path
        self.name = os.path.basename(path)
        if existing:
            self.fd = os.open(path, os.O_RDONLY)
            self.size = os.fstat(self.fd).st_size
        else:
            self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
            self.size = 0
        self.live = 0


class SegmentStore:
    """The segments of one cold directory."""

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
        self.owner = os.getpid()
        self.segments: dict[int, _Segment] = {}
        self.current: _Segment | None = None
        self.next_number = 1
        self.disk_bytes = 0  # bytes of the segment files that exist
        self.pins = PinFile(os.path.join(directory, "PINS"))
        self.snapshots: list[frozenset[int]] = []  # what the snapshots under way refer to
        self.holding = True  # nothing is deleted before release()
        for name in os.listdir(directory):
            match = _NAME.fullmatch(name)
            if match is None:
                continue
            number = int(match.group(1))
            try:
                seg = _Segment(number, os.path.join(directory, name), existing=True)
            except OSError:
                continue  # (unreadable: a node in it gives its error when read)
            self.segments[number] = seg
            self.disk_bytes += seg.size
            self.next_number = max(self.next_number, number + 1)

    # -- what refers to segments -------------------------------------------------------------
    def adopt(self, segment: int, length: int) -> bool:
        """A node loaded from a snapshot lies in segment: its bytes are in use. False when
        there is no such segment (the node's reads give the error)."""
        seg = self.segments.get(segment)
        if seg is None:
            return False
        seg.live += length
        return True

    def in_use(self) -> frozenset[int]:
        """The segments that hold bytes of nodes in memory (what a snapshot refers to)."""
        return frozenset(n for n, seg in self.segments.items() if seg.live > 0)

    def begin_snapshot(self, kind: str, numbers: frozenset[int]) -> None:
        """A snapshot of `kind` ("rdb", "aof") that refers to these segments is being written;
        OSError if the pin file cannot be written (the snapshot must not go on)."""
        self.pins.widen(kind, numbers)
        self.snapshots.append(numbers)

    def end_snapshot(self, kind: str, numbers: frozenset[int], ok: bool) -> None:
        """The snapshot is in place (ok) or was given up; segments no longer referred to go."""
        if numbers in self.snapshots:
            self.snapshots.remove(numbers)
        if ok:
            try:
                self.pins.set(kind, numbers)
            except OSError:
                pass  # (the wider set stays on disk: nothing needed is lost)
        self.collect()

    def sync(self, numbers: frozenset[int]) -> None:
        """fsync these segments (before a snapshot that refers to them is renamed into place)."""
        for number in numbers:
            seg = self.segments.get(number)
            if seg is not None:
                os.fsync(seg.fd)

    def release(self) -> None:
        """Allow deleting segments from now on (the data is loaded), and delete those nothing
        refers to."""
        self.holding = False
        self.collect()

    def collect(self) -> None:
        """Delete the segments nothing refers to (none while holding)."""
        for seg in list(self.segments.values()):
            if self._unused(seg):
                self._drop(seg)

    def _unused(self, seg: _Segment) -> bool:
        if seg.live > 0 or self.holding or self.pins.keep_all:
            return False
        number = seg.number
        return (number not in self.pins.pinned and os.getpid() == self.owner
                and not any(number in numbers for numbers in self.snapshots))

    def append(self, data: bytes) -> tuple[int, int, int]:
        """Write data to the current segment: (segment, offset, CRC-32). OSError (a full
        disk...) leaves nothing half-counted."""
        if os.getpid() != self.owner:
            raise OSError(1, "a forked child does not write cold segments")
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
        if seg.live <= 0 and self._unused(seg):
            self._drop(seg)

    def sparse_segment(self, ratio: float = 0.5, skip: set[int] | frozenset[int] = frozenset()
                       ) -> int | None:
        """A segment, other than the one being written (or those in skip), whose live bytes
        are below ``ratio`` of its size: worth compacting (the tier moves its live nodes to
        the current one)."""
        for seg in self.segments.values():
            if (seg is not self.current and 0 < seg.live < seg.size * ratio
                    and seg.number not in skip):
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
        if old is not None and self._unused(old):
            self._drop(old)
        return seg

    def _drop(self, seg: _Segment) -> None:
        if seg is self.current:
            self.current = None  # (the next node out starts a new one)
        del self.segments[seg.number]
        self.disk_bytes -= seg.size
        try:
            os.unlink(seg.path)
        except OSError:
            pass
        os.close(seg.fd)
