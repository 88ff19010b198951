"""DUMP / RESTORE on our server: round trips, WATCH and blocked readers, the AOF, and damaged
payloads (with a valid CRC, so that the value itself is read) that must never hurt the server.
Payloads exchanged with redis-server are in tests/compat/test_dump_compat.py."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator

import pytest
import redis

from server.persistence.dump_payload import crc64
from tests.helpers import ServerProcess


@pytest.fixture
def ours() -> Iterator[ServerProcess]:
    proc = ServerProcess("xstreamd", ["--appendonly", "yes"]).start()
    yield proc
    proc.stop()


@pytest.fixture
def r(ours: ServerProcess) -> Iterator[redis.Redis]:
    client = redis.Redis(host=ours.host, port=ours.port)
    yield client
    client.close()


def _fill(r: redis.Redis, key: str) -> None:
    for i in range(120):
        r.xadd(key, {"a": i, "b": "x" * (i % 9)}, id=f"{i + 1}-0")
    r.xgroup_create(key, "g", id="0")
    r.xreadgroup("g", "c1", {key: ">"}, count=5)
    r.xreadgroup("g", "c2", {key: ">"}, count=2)


def test_round_trip_and_replay_from_the_aof(ours: ServerProcess, r: redis.Redis) -> None:
    _fill(r, "s")
    payload = r.dump("s")
    assert r.restore("copy", 60_000, payload) == b"OK"
    assert r.dump("copy") == payload  # the same value, field for field
    r.set("str", "12345")
    assert r.restore("str2", 0, r.dump("str")) == b"OK"
    expire_at = r.pexpiretime("copy")
    info = r.xinfo_stream("copy", full=True)
    r.close()
    ours.stop(cleanup=False)
    ours.start()
    after = redis.Redis(host=ours.host, port=ours.port)
    try:
        assert after.pexpiretime("copy") == expire_at  # propagated as an absolute TTL
        replayed = after.xinfo_stream("copy", full=True)
        for data in (info, replayed):  # (a replay gives consumers the replay's time)
            for consumer in data["groups"][0]["consumers"]:
                del consumer[b"seen-time"], consumer[b"active-time"]
        assert replayed == info
        assert after.get("str2") == b"12345"
    finally:
        after.close()


def test_restore_touches_watchers_and_wakes_readers(ours: ServerProcess,
                                                    r: redis.Redis) -> None:
    r.xadd("src", {"f": "v"}, id="3-0")
    payload = r.dump("src")
    with r.pipeline() as pipe:
        pipe.watch("dst")
        assert r.restore("dst", 0, payload) == b"OK"
        pipe.multi()
        pipe.get("x")
        with pytest.raises(redis.WatchError):
            pipe.execute()
    got: list[object] = []
    reader = redis.Redis(host=ours.host, port=ours.port)
    thread = threading.Thread(target=lambda: got.append(reader.xread({"dst2": "0"},
                                                                      block=10_000)))
    thread.start()
    try:
        for _ in range(200):
            if b"cmd=xread" in r.execute_command("CLIENT", "LIST"):
                break
            threading.Event().wait(0.01)
        assert r.restore("dst2", 0, payload) == b"OK"
        thread.join(10)
        assert got == [[[b"dst2", [(b"3-0", {b"f": b"v"})]]]]
    finally:
        reader.close()


def _reframe(body: bytes) -> bytes:
    out = bytearray(body) + b"\x0c\x00"
    return bytes(out + crc64(out).to_bytes(8, "little"))


def test_damaged_values_are_refused_and_the_server_lives(r: redis.Redis) -> None:
    _fill(r, "s")
    body = r.dump("s")[:-10]
    rng = random.Random(7)
    outcomes = set()
    for i in range(400):
        damaged = bytearray(body)
        for _ in range(rng.randint(1, 3)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        if i % 4 == 0:
            damaged = damaged[:rng.randrange(1, len(damaged))]
        try:
            outcomes.add(r.restore(f"k{i}", 0, _reframe(bytes(damaged))))
        except redis.ResponseError as exc:
            assert str(exc).startswith("Bad data format"), exc
            outcomes.add("refused")
        if i % 50 == 0:
            assert r.ping()
    assert "refused" in outcomes
    # Whatever was accepted is a consistent stream.
    for key in r.scan_iter("k*"):
        r.xinfo_stream(key, full=True)
        r.xrange(key)
    assert r.xlen("s") == 120
