"""Handing freed heap memory back to the system, so that memory use falls when data goes.

The memory checked against maxmemory (and shown as used_memory) is the process's resident
size. Redis's allocator, jemalloc, returns the pages of freed memory to the system on its own
within seconds. glibc's malloc, which holds our listpacks (anything over 512 bytes; smaller
objects live in Python's own arenas, which go back once empty), returns only the top of its
heap: without help, deleting a stream frees its memory for reuse but the process stays as big,
and a server that reached maxmemory would go on refusing writes with an empty keyspace.
malloc_trim(0) gives back every whole free page in the heap; the server calls it from its
cron once enough was freed (looking after writes, and at the next tick after a client that
held big buffers closed), and at once when it is over maxmemory.

Where glibc is missing (another libc) nothing is trimmed and the size stays the resident one.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable


class _MallInfo2(ctypes.Structure):
    """glibc's struct mallinfo2 (2.33 and later): sizes in bytes, as size_t."""

    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _load_libc() -> tuple[Callable[[int], int] | None, Callable[[], _MallInfo2] | None]:
    """glibc's malloc_trim and mallinfo2, each None where this libc lacks it."""
    try:  # glibc's soname first: a dlopen, where find_library runs `ldconfig -p` (~1 ms)
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        except OSError:
            return None, None
    trim = getattr(libc, "malloc_trim", None)
    if trim is not None:
        trim.argtypes = [ctypes.c_size_t]
        trim.restype = ctypes.c_int
    info = getattr(libc, "mallinfo2", None)
    if info is not None:
        info.argtypes = []
        info.restype = _MallInfo2
    return trim, info


class HeapTrimmer:
    """malloc_trim(0) when the heap holds enough memory freed since the last trim."""

    def __init__(self) -> None:
        self._malloc_trim, self._mallinfo2 = _load_libc()
        self._free_after_trim = 0  # the heap's free bytes right after the last trim
        self.trims = 0
        # Something big outside the dataset was freed (a closed client's buffers): the
        # cron looks at the heap at its next tick, rather than only after writes.
        self.requested = False

    def request(self) -> None:
        self.requested = True

    @property
    def available(self) -> bool:
        return self._malloc_trim is not None

    def free_bytes(self) -> int | None:
        """Bytes free inside malloc's heap (mallinfo2's fordblks); None if unknown."""
        if self._mallinfo2 is None:
            return None
        return int(self._mallinfo2().fordblks)

    def trim(self) -> bool:
        """Return every whole free page of the heap to the system. True if any went back."""
        if self._malloc_trim is None:
            return False
        released = bool(self._malloc_trim(0))
        self.trims += 1
        free = self.free_bytes()
        self._free_after_trim = free if free is not None else 0
        return released

    def trim_if_freed(self, min_bytes: int) -> bool:
        """trim() when at least min_bytes were freed in the heap since the last one (always
        when the free bytes can't be read). True if memory went back to the system."""
        self.requested = False
        if self._malloc_trim is None:
            return False
        free = self.free_bytes()
        if free is not None:
            # Free space that was reused since does not count: the bar follows it down.
            self._free_after_trim = min(self._free_after_trim, free)
            if free - self._free_after_trim < min_bytes:
                return False
        return self.trim()
