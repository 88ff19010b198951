"""The replication backlog keeps the last repl-backlog-size bytes of the stream, by offset, as
Redis's does: what it holds, what a PSYNC from an offset can be served, and resizing."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from server.replication.backlog import Backlog


def test_a_new_backlog_is_empty_at_its_offset() -> None:
    b = Backlog(100, 41)
    assert (b.offset, b.histlen, b.first_offset) == (41, 0, 42)
    assert b.has(42)  # nothing is missing for a replica that has everything up to 41
    assert not b.has(41)
    assert not b.has(43)


def test_appends_move_the_offset_and_stay_readable() -> None:
    b = Backlog(100, 0)
    b.append(b"hello ")
    b.append(b"world")
    assert (b.offset, b.histlen, b.first_offset) == (11, 11, 1)
    assert b.read_from(1) == b"hello world"
    assert b.read_from(7) == b"world"
    assert b.read_from(12) == b""


def test_only_the_last_size_bytes_are_served() -> None:
    b = Backlog(8, 0)
    for chunk in (b"aaaa", b"bbbb", b"cccc"):
        b.append(chunk)
    assert b.histlen == 8
    assert b.first_offset == 5
    assert not b.has(4)
    assert b.read_from(5) == b"bbbbcccc"
    assert b.read_from(9) == b"cccc"


def test_a_chunk_larger_than_the_window_is_cut_when_read() -> None:
    b = Backlog(4, 10)
    b.append(b"0123456789")
    assert b.first_offset == 17
    assert b.read_from(17) == b"6789"


def test_resizing_keeps_what_the_window_still_covers() -> None:
    b = Backlog(100, 0)
    for _ in range(10):
        b.append(b"0123456789")
    b.resize(25)
    assert b.histlen == 25
    assert b.read_from(b.first_offset) == (b"0123456789" * 10)[-25:]
    b.resize(1000)
    assert b.histlen == 30  # what stayed held when the window shrank


def test_clear_starts_a_new_history() -> None:
    b = Backlog(10, 0)
    b.append(b"abc")
    b.clear(500)
    assert (b.offset, b.histlen) == (500, 0)
    assert b.has(501)


@given(size=st.integers(1, 64), chunks=st.lists(st.binary(max_size=40), max_size=30),
       start=st.integers(0, 10_000))
def test_the_window_is_the_streams_tail(size: int, chunks: list[bytes], start: int) -> None:
    b = Backlog(size, start)
    stream = b""
    for chunk in chunks:
        b.append(chunk)
        stream += chunk
    assert b.offset == start + len(stream)
    assert b.histlen == min(size, len(stream))
    tail = stream[len(stream) - b.histlen:]
    for offset in range(b.first_offset, b.offset + 2):
        assert b.has(offset)
        assert b.read_from(offset) == tail[offset - b.first_offset:]
    assert not b.has(b.first_offset - 1)
