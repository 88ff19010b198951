"""A group's pending entries and its consumers' lists, read in place by rdb_stream_read,
give what rdb_values' reading one field at a time gives: the same groups for good data
(delivery counts of one and of several bytes), and the same error at the same offset for
bad data (keys not pending, owned twice, cut short anywhere)."""

from __future__ import annotations

import pytest

from server.persistence.rdb_encoding import Reader
from server.persistence.rdb_stream_read import read_stream
from server.persistence.rdb_values import TYPE_STREAM_LISTPACKS_5, read_value
from storage.consumer_group import create_group, verify
from storage.stream import Stream
from tests.unit.dataset_samples import NOW, stream_state
from tests.unit.test_rdb_fast_load import _encode

KIND = TYPE_STREAM_LISTPACKS_5


def _key(ms: int) -> bytes:
    return ms.to_bytes(8, "big") + bytes(8)


def _stream(counts: dict[int, int] | None = None) -> Stream:
    """Ten entries; group g: c1 has 1-5, c2 has 6-8 (delivery counts from ``counts``)."""
    s = Stream()
    for ms in range(1, 11):
        s.append([b"f", b"v%d" % ms], (ms, 0), True)
    g = create_group(s, b"g", (10, 0), 10)
    c1 = g.create_consumer(b"c1", NOW)
    c2 = g.create_consumer(b"c2", NOW)
    for ms in range(1, 9):
        g.add_pending(s, (ms, 0), c1 if ms <= 5 else c2, NOW + ms, (counts or {}).get(ms, 1))
    return s


def _both(data: bytes) -> list[object]:
    """What each reading gives: the stream's state, or the error's type and message."""
    out: list[object] = []
    for read in (read_value, read_stream):
        try:
            s = read(Reader(data), KIND)
        except Exception as exc:  # noqa: BLE001 - the errors are what is compared
            out.append((type(exc).__name__, str(exc)))
        else:
            verify(s)
            out.append(stream_state(s))
    return out


def test_delivery_counts_of_every_length_encoding() -> None:
    s = _stream({1: 0, 2: 63, 3: 64, 4: 16383, 5: 16384, 6: 2**32, 7: 2**40})
    general, fast = _both(_encode(s, KIND))
    assert general == fast
    assert fast == stream_state(s)


def _consumer_list(data: bytes, name: bytes, n: int) -> int:
    """Where consumer ``name``'s n keys start: after its name, seen and active times and
    its count (one byte)."""
    at = data.index(b"\x02" + name) + 3 + 16
    assert data[at] == n
    return at + 1


@pytest.mark.parametrize(("what", "error"), [
    ("not pending", "consumer entry not found in the group's PEL"),
    ("owned by two", "pending entry owned twice"),
    ("listed twice", "pending entry owned twice"),
])
def test_bad_consumer_lists_give_the_general_error(what: str, error: str) -> None:
    data = bytearray(_encode(_stream(), KIND))
    c1 = _consumer_list(data, b"c1", 5)
    c2 = _consumer_list(data, b"c2", 3)
    if what == "not pending":
        data[c1 + 32:c1 + 48] = _key(9)  # the third key of c1
    elif what == "owned by two":
        data[c2 + 16:c2 + 32] = _key(2)  # c2's second key is c1's
    else:
        data[c1 + 48:c1 + 64] = _key(2)  # c1 lists 2 twice
    general, fast = _both(bytes(data))
    assert error in general[1]
    assert fast == general


def test_every_cut_gives_the_general_error() -> None:
    data = _encode(_stream({3: 300}), KIND)
    pel = data.index(_key(1))  # the group's PEL, then the consumers' lists
    for cut in range(pel - 2, len(data)):
        general, fast = _both(data[:cut])
        assert fast == general, cut
