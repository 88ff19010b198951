"""The replication backlog: the last `repl-backlog-size` bytes of the replication stream, so a
replica that lost its link can continue from the offset it had (PSYNC's +CONTINUE) instead of
loading everything again.

Offsets count the bytes of the stream since the replication ID began (master_repl_offset).
The backlog holds the bytes from `first_offset` (repl_backlog_first_byte_offset) to `offset`
inclusive, as Redis's does: a replica that has everything up to offset N asks for N + 1.
"""

from __future__ import annotations

from collections import deque


class Backlog:
    __slots__ = ("size", "offset", "_chunks", "_held", "_chunk_start")

    def __init__(self, size: int, offset: int) -> None:
        self.size = max(size, 1)
        self.offset = offset  # master_repl_offset: the last byte's offset
        self._chunks: deque[bytes] = deque()
        self._held = 0  # bytes in _chunks
        self._chunk_start = offset + 1  # the offset of _chunks[0]'s first byte

    @property
    def first_offset(self) -> int:
        """repl_backlog_first_byte_offset: the first byte still held."""
        return self.offset + 1 - self.histlen

    @property
    def histlen(self) -> int:
        """repl_backlog_histlen: how many bytes are held."""
        return min(self._held, self.size)

    def append(self, data: bytes) -> None:
        self.offset += len(data)
        self._chunks.append(data)
        self._held += len(data)
        # Whole chunks that fall entirely outside the window go; a partial one stays (and
        # the window is cut inside it when read).
        while self._held - len(self._chunks[0]) >= self.size:
            dropped = self._chunks.popleft()
            self._held -= len(dropped)
            self._chunk_start += len(dropped)

    def resize(self, size: int) -> None:
        """CONFIG SET repl-backlog-size: the window changes; what it still covers stays."""
        self.size = max(size, 1)
        while self._chunks and self._held - len(self._chunks[0]) >= self.size:
            dropped = self._chunks.popleft()
            self._held -= len(dropped)
            self._chunk_start += len(dropped)

    def has(self, offset: int) -> bool:
        """Whether a replica that asks for the stream from `offset` can be served from here
        (offset - 1 is the last byte it has; offset == self.offset + 1: nothing is missing)."""
        return self.first_offset <= offset <= self.offset + 1

    def read_from(self, offset: int) -> bytes:
        """The bytes from `offset` to the end (has(offset) must hold)."""
        data = b"".join(self._chunks)
        return data[offset - self._chunk_start:]

    def clear(self, offset: int) -> None:
        """Start again empty at `offset` (a new replication history)."""
        self.offset = offset
        self._chunks.clear()
        self._held = 0
        self._chunk_start = offset + 1
