"""DUMP / RESTORE between xstreamd and Debian's redis-server (7.0, RDB version 10).

Redis's payloads (streams of type 19 with LZF-compressed listpacks, integer- and LZF-encoded
strings) restore here to the same value. Ours carry RDB version 12, which 7.0 refuses; with
the version field set to 10 and the CRC redone, 7.0 restores them, which checks our CRC-64,
string encodings and stream layout (for streams whose consumers carry no active time, the
one field type 21 adds over 7.0's type 19)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from server.persistence.dump_payload import crc64
from tests.compat.newer_fields import strip_dict
from tests.helpers import ServerProcess

pytestmark = pytest.mark.compat


@pytest.fixture
def pair(server: ServerProcess, redis_ref: ServerProcess) -> Iterator[tuple[redis.Redis,
                                                                         redis.Redis]]:
    ours = redis.Redis(host=server.host, port=server.port)
    ref = redis.Redis(host=redis_ref.host, port=redis_ref.port)
    ours.flushall()
    ref.flushall()
    yield ours, ref
    ours.close()
    ref.close()


def _fill(r: redis.Redis, key: str, consumers: bool = True) -> None:
    for i in range(300):  # several nodes, values that compress
        r.xadd(key, {"field": f"value-{i % 10}", "n": i, "pad": "ab" * (i % 30)},
               id=f"{1000 + i}-{i % 4}")
    r.xdel(key, "1005-1", "1100-0")
    r.xgroup_create(key, "g1", id="0")
    r.xgroup_create(key, "g2", id="1050-2")
    r.xgroup_create(key, "777", id="$")  # a numeric group name
    if consumers:
        r.xreadgroup("g1", "alice", {key: ">"}, count=7)
        r.xreadgroup("g1", "bob", {key: ">"}, count=3)
        r.xack(key, "g1", "1001-1")
        r.xgroup_createconsumer(key, "g2", "idle-one")


def _full(r: redis.Redis, key: str) -> dict:
    """XINFO STREAM FULL without the fields 7.0 lacks or that move with the clock."""
    info = strip_dict(r.xinfo_stream(key, full=True))
    for group in info["groups"]:
        for consumer in group["consumers"]:
            for field in (b"active-time", b"seen-time"):
                consumer.pop(field, None)
    return info


def _as_version_10(payload: bytes, stream_type: int | None = None) -> bytes:
    body = bytearray(payload[:-10])
    if stream_type is not None:
        body[0] = stream_type
    body += b"\x0a\x00"
    return bytes(body + crc64(body).to_bytes(8, "little"))


def test_redis_stream_payloads_restore_here(pair: tuple[redis.Redis, redis.Redis]) -> None:
    ours, ref = pair
    _fill(ref, "s")
    payload = ref.dump("s")
    assert payload[0] == 19 and payload[-10:-8] == b"\x0a\x00"
    assert ours.restore("s", 0, payload) == b"OK"
    assert ours.xrange("s") == ref.xrange("s")
    assert _full(ours, "s") == _full(ref, "s")
    pending = [(p["message_id"], p["consumer"], p["times_delivered"])
               for p in ours.xpending_range("s", "g1", "-", "+", 100)]
    assert pending == [(p["message_id"], p["consumer"], p["times_delivered"])
                       for p in ref.xpending_range("s", "g1", "-", "+", 100)]
    # The restored stream works: new entries, reads, acks.
    ours.xadd("s", {"x": "1"}, id="5000-0")
    assert ours.xreadgroup("g2", "c", {"s": ">"}, count=1)[0][1][0][0] == b"1051-3"


def test_redis_string_payloads_restore_here(pair: tuple[redis.Redis, redis.Redis]) -> None:
    ours, ref = pair
    values = [b"", b"v", b"12345", b"-7", b"2147483648", b"007", b"x" * 500,
              b"hello world " * 40, bytes(range(256)) * 3]
    for i, value in enumerate(values):
        ref.set(f"k{i}", value)
        assert ours.restore(f"k{i}", 0, ref.dump(f"k{i}")) == b"OK"
        assert ours.get(f"k{i}") == value
    # Our string payloads carry the same body as Redis's (we never compress: short ones).
    for value in (b"12345", b"-7", b"short text", b"007"):
        ref.set("k", value)
        ours.set("k", value)
        assert ours.dump("k")[:-10] == ref.dump("k")[:-10]


def test_our_payloads_restore_in_redis(pair: tuple[redis.Redis, redis.Redis]) -> None:
    ours, ref = pair
    for value in (b"12345", b"text", b"x" * 300, bytes(range(256))):
        ours.set("k", value)
        ref.restore("k", 0, _as_version_10(ours.dump("k")), replace=True)
        assert ref.get("k") == value
    _fill(ours, "s", consumers=False)
    ref.restore("s", 0, _as_version_10(ours.dump("s"), stream_type=19))
    assert ref.xrange("s") == ours.xrange("s")
    assert _full(ref, "s") == _full(ours, "s")


def test_errors_match_redis(pair: tuple[redis.Redis, redis.Redis]) -> None:
    ours, ref = pair
    for r in pair:
        r.set("k", "v")
    good = ref.dump("k")
    bad_crc = good[:-1] + bytes([good[-1] ^ 1])
    cases = [
        ("RESTORE", "k", "0", good),
        ("RESTORE", "n", "-1", good),
        ("RESTORE", "n", "x", good),
        ("RESTORE", "n", "0", bad_crc),
        ("RESTORE", "n", "0", b"short"),
        ("RESTORE", "n", "0", good, "IDLETIME", "-1"),
        ("RESTORE", "n", "0", good, "IDLETIME", "5", "FREQ", "5"),
        ("RESTORE", "n", "0", good, "FREQ", "256"),
        ("RESTORE", "n", "0", good, "FREQ"),
        ("RESTORE", "n", "0", good, "BOGUS"),
        ("RESTORE", "n", "0"),
        ("DUMP",),
        ("DUMP", "missing"),
    ]
    for args in cases:
        replies = []
        for r in pair:
            try:
                replies.append(("ok", r.execute_command(*args)))
            except redis.ResponseError as exc:
                replies.append(("error", str(exc)))
        assert replies[0] == replies[1], args


def test_restore_options_and_ttls(pair: tuple[redis.Redis, redis.Redis]) -> None:
    for r in pair:
        r.set("k", "v")
        payload = r.dump("k")
        assert r.restore("k", 0, payload, replace=True) == b"OK"
        assert r.restore("t", 100_000, payload) == b"OK"
        assert 0 < r.pttl("t") <= 100_000
        assert r.restore("a", 4_000_000_000_000, payload, absttl=True) == b"OK"
        assert r.pexpiretime("a") == 4_000_000_000_000
        assert r.restore("gone", 1, payload, absttl=True) == b"OK"  # already expired
        assert r.exists("gone") == 0
        assert r.restore("k", 1, payload, replace=True, absttl=True) == b"OK"
        assert r.exists("k") == 0  # replaced by an expired key: deleted
        assert r.restore("i", 0, payload, idletime=10) == b"OK"
        assert r.restore("f", 0, payload, frequency=10) == b"OK"
