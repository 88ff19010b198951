"""The old xsnap snapshot format, which the server still loads (it writes RDB files now):
files made by the former writer (tests/xsnap_writer.py) load exactly, strings, expiry, streams
(nodes byte for byte, metadata) and consumer groups; checksum, truncation and listpack
validation."""

from __future__ import annotations

import io
import random
import struct
import time
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.persistence.snapshot import SnapshotError, parse_snapshot
from storage.consumer_group import verify
from storage.keyspace import Database, StringValue
from storage.stream import Stream
from tests.unit.dataset_samples import NOW, busy_stream, db_state
from tests.xsnap_writer import HEADER, save_file, write_snapshot


def _dump(dbs: list[Database]) -> bytes:
    out = io.BytesIO()
    write_snapshot(out, dbs, now_ms=NOW)
    return out.getvalue()


def test_round_trip_strings_expiry_streams_and_groups(tmp_path) -> None:
    rng = random.Random(7)
    dbs = [Database(i) for i in range(4)]
    dbs[0].data[b"str"] = StringValue(b"hello\r\nworld")
    dbs[0].data[b"ttl"] = StringValue(b"x")
    dbs[0].expires[b"ttl"] = time.time_ns() // 1_000_000 + 600_000  # load_file uses the clock
    dbs[0].data[b"s"] = busy_stream(rng, 200)
    dbs[2].data[b"empty"] = Stream()
    empty_with_id = Stream()
    empty_with_id.set_id((5, 5), entries_added=9, max_deleted=(5, 5))
    dbs[2].data[b"empty-with-id"] = empty_with_id
    dbs[3].data[b"big"] = busy_stream(rng, 1000, with_groups=False)
    path = str(tmp_path / "dump.xsnap")
    keys = save_file(path, dbs)
    assert keys == 6
    loaded = parse_snapshot((tmp_path / "dump.xsnap").read_bytes(), 4)
    assert db_state(loaded.dbs) == db_state(dbs)
    assert loaded.keys_loaded == 6
    for db in loaded.dbs:
        for value in db.data.values():
            if isinstance(value, Stream):
                verify(value)  # PEL, pel_by_time, consumer PELs, cgroups_ref agree


def test_loaded_stream_keeps_working() -> None:
    rng = random.Random(3)
    s = busy_stream(rng, 50)
    db = Database(0)
    db.data[b"s"] = s
    loaded = parse_snapshot(_dump([db]), 1, now_ms=NOW).dbs[0].data[b"s"]
    assert isinstance(loaded, Stream)
    new_id = loaded.append([b"a", b"b"])
    assert loaded.get(new_id) == [b"a", b"b"]
    assert loaded.length == s.length + 1


def test_expired_keys_are_skipped_on_load() -> None:
    db = Database(0)
    db.data[b"old"] = StringValue(b"1")
    db.expires[b"old"] = NOW - 1
    db.data[b"new"] = StringValue(b"2")
    db.expires[b"new"] = NOW + 1
    result = parse_snapshot(_dump([db]), 1, now_ms=NOW)
    assert list(result.dbs[0].data) == [b"new"]
    assert result.keys_expired == 1 and result.keys_loaded == 1


def test_database_out_of_range_is_an_error() -> None:
    dbs = [Database(0), Database(1)]
    dbs[1].data[b"k"] = StringValue(b"v")
    with pytest.raises(SnapshotError, match="out of range"):
        parse_snapshot(_dump(dbs), 1, now_ms=NOW)


@pytest.fixture(scope="module")
def sample() -> bytes:
    db = Database(0)
    db.data[b"s"] = busy_stream(random.Random(11), 60)
    db.data[b"k"] = StringValue(b"v")
    return _dump([db])


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_any_flipped_byte_is_caught_by_the_checksum(sample: bytes, data) -> None:
    pos = data.draw(st.integers(0, len(sample) - 1))
    flip = data.draw(st.integers(1, 255))
    damaged = bytearray(sample)
    damaged[pos] ^= flip
    with pytest.raises(SnapshotError):
        parse_snapshot(bytes(damaged), 16, now_ms=NOW)


def test_truncated_file_is_an_error(sample: bytes) -> None:
    for cut in (0, 3, len(HEADER), len(sample) // 2, len(sample) - 1):
        with pytest.raises(SnapshotError):
            parse_snapshot(sample[:cut], 16, now_ms=NOW)


def _recrc(body: bytes) -> bytes:
    return body + struct.pack(">I", zlib.crc32(body))


def test_bad_listpack_is_caught_even_with_a_valid_checksum(sample: bytes) -> None:
    db = Database(0)
    s = Stream()
    s.append([b"field", b"value"], (1, 1))
    db.data[b"s"] = s
    blob = _dump([db])
    lp = bytes(next(iter(s.nodes()))[1].buf)
    at = blob.index(lp)
    damaged = bytearray(blob[:-4])
    damaged[at + 7] ^= 0x40  # inside the master entry
    with pytest.raises(SnapshotError, match="stream"):
        parse_snapshot(_recrc(bytes(damaged)), 1, now_ms=NOW)


def test_unknown_record_and_trailing_data_are_errors(sample: bytes) -> None:
    body = sample[:-4]
    eof = len(body) - 1
    with pytest.raises(SnapshotError, match="unknown record"):
        parse_snapshot(_recrc(body[:eof] + b"\x42" + body[eof:]), 16, now_ms=NOW)
    with pytest.raises(SnapshotError, match="after the EOF"):
        parse_snapshot(_recrc(body + b"\x00"), 16, now_ms=NOW)


def test_bad_magic_and_version() -> None:
    with pytest.raises(SnapshotError, match="magic"):
        parse_snapshot(_recrc(b"REDIS0011\xff"), 16)
    with pytest.raises(SnapshotError, match="version"):
        parse_snapshot(_recrc(b"XSNAP999\xff"), 16)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 300))
def test_random_streams_round_trip(seed: int, n: int) -> None:
    db = Database(0)
    db.data[b"s"] = busy_stream(random.Random(seed), n)
    loaded = parse_snapshot(_dump([db]), 1, now_ms=NOW).dbs
    assert db_state(loaded) == db_state([db])


def test_access_times_and_counters_are_kept_under_lru_and_lfu_policies() -> None:
    """IDLE records under an LRU policy, FREQ under an LFU one, neither otherwise; loading
    applies whichever the loading server's policy reads (objectSetLRUOrLFU)."""
    from storage.access import AccessClock

    clock = AccessClock(now_ms=NOW)
    db = Database(0, access=clock)
    db.set(b"old", StringValue(b"v"))
    db.set(b"new", StringValue(b"v"))
    db.data[b"old"].lru = clock.lru_clock - 500  # used 500 s ago
    plain = _dump([db])  # noeviction: no record
    clock.lru_policy = True
    with_idle = _dump([db])
    assert len(with_idle) == len(plain) + 3 + 2  # IDLE 500 (2-byte varint), IDLE 0
    loaded = parse_snapshot(with_idle, 1, now_ms=NOW, access=clock).dbs[0].data
    assert clock.idle_ms(loaded[b"old"].lru) == 500_000
    assert clock.idle_ms(loaded[b"new"].lru) == 0
    fresh = parse_snapshot(plain, 1, now_ms=NOW, access=clock).dbs[0].data
    assert clock.idle_ms(fresh[b"old"].lru) == 0  # no record: a new key's
    clock.lru_policy = False
    clock.lfu = True
    db.data[b"old"].lru = (clock.minutes << 8) | 77
    with_freq = _dump([db])
    loaded = parse_snapshot(with_freq, 1, now_ms=NOW, access=clock).dbs[0].data
    assert clock.decayed_counter(loaded[b"old"].lru) == 77


@pytest.mark.parametrize("version", [b"XSNAP001", b"XSNAP002"])
def test_older_versions_still_load(version: bytes) -> None:
    db = Database(0)
    db.set(b"k", StringValue(b"v"))
    body = _dump([db])[:-4]
    assert body.startswith(b"XSNAP003")
    old = _recrc(version + body[8:])
    assert parse_snapshot(old, 1, now_ms=NOW).dbs[0].data[b"k"].data == b"v"


def test_function_libraries_round_trip() -> None:
    """Version 3's FUNCTION records: each library's code, before the databases."""
    db = Database(0)
    db.set(b"k", StringValue(b"v"))
    codes = [b"#!lua name=a\nredis.register_function('f', function() end)", b"#!lua name=b\n"]
    out = io.BytesIO()
    write_snapshot(out, [db], now_ms=NOW, libraries=codes)
    result = parse_snapshot(out.getvalue(), 1, now_ms=NOW)
    assert result.libraries == codes
    assert result.dbs[0].data[b"k"].data == b"v"
