"""DEBUG DIGEST and DEBUG DIGEST-VALUE: the same data gives the same digests here as in
Debian's redis-server (so two servers' datasets can be compared), and the digests move
with what Redis's move with: entries, fields, order, database, TTL, but not consumer groups."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from tests.helpers import ServerProcess, redis_server_path

pytestmark = pytest.mark.compat

ZERO = b"0" * 40


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[redis.Redis, redis.Redis]]:
    if redis_server_path() is None:
        pytest.skip("redis-server not installed")
    servers = [ServerProcess(kind, extra_args=["--enable-debug-command", "yes",
                                               "--appendonly", "no"]).start()
               for kind in ("xstreamd", "redis")]
    clients = [redis.Redis(host=s.host, port=s.port) for s in servers]
    yield clients[0], clients[1]
    for client, server in zip(clients, servers, strict=True):
        client.close()
        server.stop()


def _fill(r: redis.Redis) -> None:
    r.flushall()
    for i in range(250):  # several nodes, entries of other fields, an empty value
        fields = {"f": f"v{i}", "n": i} if i % 7 else {"other": "x" * (i % 40), "e": ""}
        r.xadd("s", fields, id=f"{100 + i // 3}-{i % 3}")
    r.xdel("s", "105-1", "150-0")
    r.xadd("one", {"k": "v"}, id="1-1")
    r.set("int", "12345")
    r.set("str", "hello")
    r.set("ttl", "x", ex=1000)
    r.xadd("ttl-stream", {"a": "b"}, id="5-5")
    r.expire("ttl-stream", 1000)
    with r.pipeline(transaction=False) as pipe:  # one connection: a key in database 2
        pipe.execute_command("SELECT", "2")
        pipe.xadd("in2", {"a": "1"}, id="9-9")
        pipe.execute_command("SELECT", "0")
        pipe.execute()


def _digests(r: redis.Redis) -> tuple[object, object]:
    return (r.execute_command("DEBUG", "DIGEST"),
            r.execute_command("DEBUG", "DIGEST-VALUE", "s", "one", "int", "str", "ttl",
                              "ttl-stream", "missing"))


def test_digests_match_redis(pair: tuple[redis.Redis, redis.Redis]) -> None:
    ours, ref = pair
    for r in pair:
        r.flushall()
    assert _digests(ours) == _digests(ref)
    assert ours.execute_command("DEBUG", "DIGEST") == ZERO
    for r in pair:
        _fill(r)
    digest, values = _digests(ours)
    assert (digest, values) == _digests(ref)
    assert digest != ZERO and values[-1] == ZERO and len(set(values)) == len(values)
    # Consumer groups are not part of a stream's digest; an entry is.
    for r in pair:
        r.xgroup_create("s", "g", id="0")
        r.xreadgroup("g", "c", {"s": ">"}, count=5)
    assert _digests(ours) == (digest, values)
    for r in pair:
        r.xadd("s", {"f": "v"}, id="999-0")
    changed = _digests(ours)
    assert changed == _digests(ref) and changed[0] != digest and changed[1][0] != values[0]
    # A TTL is part of it: PERSIST changes the key's digest.
    for r in pair:
        r.persist("ttl")
    assert _digests(ours) == _digests(ref)
    assert _digests(ours)[1][4] != values[4]


def test_digest_argument_errors(pair: tuple[redis.Redis, redis.Redis]) -> None:
    ours, ref = pair
    for args in (("DIGEST", "x"), ("DIGEST-VALUE",)):
        replies = []
        for r in pair:
            try:
                replies.append(r.execute_command("DEBUG", *args))
            except redis.ResponseError as exc:
                replies.append(str(exc))
        assert replies[0] == replies[1], args
