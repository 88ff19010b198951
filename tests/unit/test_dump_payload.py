"""The DUMP payload codec on its own: CRC-64, LZF, lengths, strings and streams, bad input."""

from __future__ import annotations

import pytest

from server.persistence import dump_payload as dp
from server.persistence.rdb_encoding import Reader, put_length, put_string
from storage.consumer_group import create_group, verify
from storage.keyspace import StringValue
from storage.stream import Stream


def test_crc64_is_redis_crc64() -> None:
    # Redis's own check value for its crc64 (src/crc64.c's test: "123456789").
    assert dp.crc64(b"123456789") == 0xE9C6D914C4B8D9CA
    assert dp.crc64(b"") == 0
    assert dp.crc64(b"6789", dp.crc64(b"12345")) == 0xE9C6D914C4B8D9CA  # resumable


def test_lzf_literals_and_overlapping_references() -> None:
    # "abcabcabcabc": a literal run of 3, then a reference 3 back of length 9 (overlapping).
    packed = bytes([2]) + b"abc" + bytes([(7 << 5) | 0, 9 - 2 - 7, 2])
    assert dp.lzf_decompress(packed, 12) == b"abcabcabcabc"
    short = bytes([2]) + b"abc" + bytes([(1 << 5) | 0, 2])  # 3 bytes back, length 3
    assert dp.lzf_decompress(short, 6) == b"abcabc"
    for bad, size in ((bytes([5]) + b"ab", 6),  # run past the end
                      (bytes([0x20, 9]), 3),  # reference before the start
                      (bytes([2]) + b"abc", 4),  # wrong announced size
                      (bytes([2]) + b"abc" + bytes([0xE0, 255, 2]) * 4, 20),  # expands past it
                      (bytes([2]) + b"abc", 1 << 40)):  # more than any value here
        with pytest.raises(dp.PayloadError):
            dp.lzf_decompress(bad, size)


def test_strings_take_redis_integer_encodings() -> None:
    for text, body in ((b"12345", b"\xc1\x39\x30"), (b"-1", b"\xc0\xff"),
                       (b"2147483647", b"\xc2\xff\xff\xff\x7f"), (b"007", b"\x03007"),
                       (b"2147483648", b"\x0a2147483648"), (b"", b"\x00")):
        payload = dp.dump(StringValue(text))
        assert payload[1:-10] == body
        assert dp.verify(payload)
        restored = dp.restore(payload)
        assert isinstance(restored, StringValue) and restored.data == text


def test_lengths_of_every_width_round_trip() -> None:
    for n in (0, 63, 64, 16383, 16384, 2**32 - 1, 2**32, 2**64 - 1):
        out = bytearray()
        put_length(out, n)
        assert Reader(bytes(out)).length() == n


def _stream() -> Stream:
    s = Stream()
    for i in range(300):
        s.append([b"f", b"%d" % i, b"g", b"x" * (i % 5)], (i + 1, i % 3), True)
    s.delete((7, 0))
    group = create_group(s, b"g", (20, 1))
    alice = group.create_consumer(b"alice", 1000)
    bob = group.create_consumer(b"123", 2000)  # a numeric name takes the integer encoding
    bob.active_time = -1
    for i, owner in ((1, alice), (2, alice), (3, bob)):
        group.add_pending(s, (i, i % 3), owner, 5000 + i, i)
    create_group(s, b"empty", (0, 0))
    return s


def test_streams_round_trip_with_their_groups() -> None:
    s = _stream()
    payload = dp.dump(s)
    assert payload[0] == dp.TYPE_STREAM_LISTPACKS_3
    assert payload[-10:-8] == b"\x0c\x00"  # RDB version 12
    copy = dp.restore(payload)
    assert isinstance(copy, Stream)
    verify(copy)
    assert dp.dump(copy) == payload  # every field survived
    assert copy.length == 299 and copy.last_id == (300, 2) and copy.entries_added == 300
    assert copy.max_deleted_entry_id == (7, 0)


def test_a_damaged_payload_is_refused() -> None:
    payload = bytearray(dp.dump(_stream()))
    assert not dp.verify(bytes(payload[:9]))
    flipped = bytearray(payload)
    flipped[20] ^= 1
    assert not dp.verify(bytes(flipped))  # the CRC catches it
    newer = bytearray(payload)
    newer[-10] = 13
    assert not dp.verify(bytes(newer))  # a version this server does not read


def _framed(body: bytes) -> bytes:
    out = bytearray(body) + b"\x0c\x00"
    return bytes(out + dp.crc64(out).to_bytes(8, "little"))


@pytest.mark.parametrize("cut", [1, 5, 40, 200])
def test_a_truncated_value_with_a_good_crc_is_bad_data(cut: int) -> None:
    body = dp.dump(_stream())[:-10]
    payload = _framed(body[:-cut])
    assert dp.verify(payload)
    with pytest.raises(dp.PayloadError):
        dp.restore(payload)


def test_other_types_are_named_not_stored() -> None:
    with pytest.raises(dp.UnsupportedType, match="RDB type 4"):
        dp.restore(_framed(b"\x04\x00"))


def test_a_pending_entry_without_consumer_is_bad_data() -> None:
    s = Stream()
    s.append([b"f", b"v"], (1, 0), True)
    body = bytearray(dp.dump(s)[:-10])
    assert body[-1] == 0  # no groups
    body[-1] = 1
    body += b"\x01g\x00\x00\x00"  # group "g", last ID 0-0, read counter 0
    body += b"\x01" + bytes(15) + b"\x01" + bytes(8) + b"\x01"  # one PEL entry, 1-0
    body += b"\x00"  # no consumers
    with pytest.raises(dp.PayloadError, match="without a consumer"):
        dp.restore(_framed(bytes(body)))


def test_redis_5_streams_type_15_estimate_what_they_lack() -> None:
    """Type 15 has no first/max-deleted IDs, entries-added or read counters: entries-added is
    the length, the max deleted ID 0-0, a group's read counter Redis's estimate."""
    s = Stream()
    for i in range(1, 11):
        s.append([b"f", b"%d" % i], (i, 0), True)
    out = bytearray([dp.TYPE_STREAM_LISTPACKS])
    put_length(out, s.node_count())
    for key, lp in s.rax.items():
        put_string(out, key)
        put_string(out, lp.buf)
    for value in (10, 10, 0):  # length, last ID
        put_length(out, value)
    put_length(out, 2)  # two groups
    for name, last in ((b"all", 10), (b"none", 0)):
        put_string(out, name)
        for value in (last, 0, 0, 0):  # last ID, empty PEL, no consumers
            put_length(out, value)
    restored = dp.restore(_framed(bytes(out)))
    assert isinstance(restored, Stream)
    assert restored.entries_added == 10 and restored.max_deleted_entry_id == (0, 0)
    by_name = {g.name: g for g in restored.cgroups.values()}  # type: ignore[union-attr]
    assert by_name[b"all"].entries_read == 10  # at the last entry: exactly the count
    assert by_name[b"none"].entries_read == 0


def _nacked_stream_body() -> bytearray:
    """A type 27 body: entry 1-0, group "g" with 1-0 pending and released (no owner)."""
    s = Stream()
    s.append([b"f", b"v"], (1, 0), True)
    g = create_group(s, b"g", (1, 0), 1)
    g.nack(s, [(1, 0)], "fail", force=True)
    payload = dp.dump(s)
    assert payload[0] == 27
    return bytearray(payload[:-10])


def _framed14(body: bytes) -> bytes:
    out = bytearray(body) + b"\x0e\x00"
    return bytes(out + dp.crc64(out).to_bytes(8, "little"))


def test_a_nack_zone_entry_must_be_pending_and_unowned() -> None:
    body = _nacked_stream_body()
    assert isinstance(dp.restore(_framed14(bytes(body))), Stream)
    # The IDMP block closes the body: duration, maxsize, no producers, two counters (7 bytes
    # with duration 100 as 0x40 0x64); before it, the zone's one raw ID.
    zone_at = len(body) - 7 - 16
    assert body[zone_at - 1] == 1
    assert bytes(body[zone_at:zone_at + 16]) == (1).to_bytes(8, "big") + bytes(8)
    wrong = bytearray(body)
    wrong[zone_at + 7] = 2  # 2-0: not in the PEL
    with pytest.raises(dp.PayloadError, match="not found in the group's PEL"):
        dp.restore(_framed14(bytes(wrong)))
    empty_zone = body[:zone_at - 1] + b"\x00" + body[zone_at + 16:]
    with pytest.raises(dp.PayloadError, match="without a consumer"):
        dp.restore(_framed14(bytes(empty_zone)))
    twice = body[:zone_at - 1] + b"\x02" + body[zone_at:zone_at + 16] * 2 + body[zone_at + 16:]
    with pytest.raises(dp.PayloadError, match="listed twice"):
        dp.restore(_framed14(bytes(twice)))


def test_idmp_limits_out_of_range_are_bad_data() -> None:
    body = _nacked_stream_body()
    idmp_at = len(body) - 7
    assert body[idmp_at:idmp_at + 2] == b"\x40\x64"  # 100, as a 14-bit length
    body[idmp_at:idmp_at + 2] = b"\x00"  # a duration of 0
    with pytest.raises(dp.PayloadError, match="IDMP settings out of range"):
        dp.restore(_framed14(bytes(body[:idmp_at + 1] + body[idmp_at + 2:])))
