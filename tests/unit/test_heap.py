"""server.heap.HeapTrimmer against this process's real glibc heap."""

from __future__ import annotations

import pytest

from server.heap import HeapTrimmer

trimmer = HeapTrimmer()
needs_glibc = pytest.mark.skipif(trimmer.free_bytes() is None, reason="no glibc mallinfo2")


@needs_glibc
def test_trims_once_enough_was_freed() -> None:
    heap = HeapTrimmer()
    heap.trim()  # start from a trimmed heap
    assert not heap.trim_if_freed(1 << 20)  # nothing freed since
    blocks = [bytearray(4000) for _ in range(5000)]  # 20 MB in malloc's heap
    pin = bytearray(4000)  # above them: glibc gives back the heap's top on its own
    free_before = heap.free_bytes()
    del blocks
    free_after = heap.free_bytes()
    assert free_before is not None and free_after is not None
    assert free_after - free_before >= 10 << 20
    trims = heap.trims
    assert heap.trim_if_freed(1 << 20)  # whole pages went back to the system
    assert heap.trims == trims + 1
    assert not heap.trim_if_freed(1 << 20)  # and nothing was freed since
    del pin


@needs_glibc
def test_reused_free_space_lowers_the_bar() -> None:
    """Free space taken again by new allocations is not counted as freed later on."""
    heap = HeapTrimmer()
    blocks = [bytearray(4000) for _ in range(2000)]
    pin = bytearray(4000)  # keeps the blocks off the heap's top (see above)
    del blocks
    heap.trim()
    reused = [bytearray(4000) for _ in range(2000)]  # takes the free chunks back
    assert not heap.trim_if_freed(1 << 20)
    del reused  # freed again: 8 MB more than the bar, which followed the reuse down
    assert heap.trim_if_freed(1 << 20)
    del pin


def test_without_glibc_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    heap = HeapTrimmer()
    monkeypatch.setattr(heap, "_malloc_trim", None)
    monkeypatch.setattr(heap, "_mallinfo2", None)
    assert not heap.available
    assert heap.free_bytes() is None
    assert not heap.trim()
    assert not heap.trim_if_freed(0)
