"""What the replication tests share: servers linked as primary and replica, waiting for a link
or an offset, and a dataset read back in full so that two servers can be compared."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import redis

from tests.helpers import ServerProcess


def client(proc: ServerProcess) -> redis.Redis:
    return redis.Redis(host=proc.host, port=proc.port, socket_timeout=20)


def info(proc: ServerProcess, section: str = "replication") -> dict[str, Any]:
    return client(proc).info(section)


def wait_for(what: Callable[[], Any], timeout: float = 30.0, message: str = "") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = what()
        except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError) as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting: {message or what} (last: {last!r})")


def link_up(replica: ServerProcess) -> bool:
    return info(replica).get("master_link_status") == "up"


def wait_link_up(replica: ServerProcess, timeout: float = 30.0) -> None:
    wait_for(lambda: link_up(replica), timeout, f"the link of {replica.kind} replica to be up")


def wait_caught_up(primary: ServerProcess, replica: ServerProcess,
                   timeout: float = 30.0) -> None:
    """The replica applied everything the primary's stream holds now."""
    target = info(primary)["master_repl_offset"]
    wait_for(lambda: info(replica).get("slave_repl_offset", -1) >= target, timeout,
             f"the replica to reach offset {target}")


def start_replica(kind: str, primary: ServerProcess, *extra: str) -> ServerProcess:
    args = ["--replicaof", primary.host, str(primary.port), *extra]
    if kind != "redis":
        args += ["--appendonly", "no", "--save", ""]
    return ServerProcess(kind, args).start()


def dataset(proc: ServerProcess, ttl_tolerance_ms: int = 0) -> dict[tuple[int, bytes], Any]:
    """Every key of every database with everything a replica must hold the same: a stream's
    entries, its last / max-deleted IDs and entries-added, each group's last ID and read
    counter, its PEL (ID, consumer, deliveries) and consumers; a string's value; whether a
    key has a TTL (and, with a tolerance, how long)."""
    out: dict[tuple[int, bytes], Any] = {}
    for db in range(16):
        r = redis.Redis(host=proc.host, port=proc.port, db=db, socket_timeout=20)
        for key in r.scan_iter(count=1000):
            kind = r.type(key)
            ttl = r.pttl(key)
            item: dict[str, Any] = {"type": kind, "ttl": ttl > 0}
            if ttl > 0 and ttl_tolerance_ms:
                item["ttl_bucket"] = ttl // ttl_tolerance_ms
            if kind == b"string":
                item["value"] = r.get(key)
            elif kind == b"stream":
                item.update(_stream(r, key))
            out[(db, key)] = item
    return out


def _stream(r: redis.Redis, key: bytes) -> dict[str, Any]:
    full = r.xinfo_stream(key, full=True)
    groups = []
    for g in full["groups"]:
        pel = [(e[0], e[1], e[3]) for e in g["pending"]]
        consumers = sorted(c[b"name"] for c in g["consumers"])
        groups.append((g["name"], g["last-delivered-id"], g.get("entries-read"), pel,
                       consumers))
    return {"entries": r.xrange(key), "last": full["last-generated-id"],
            "max_deleted": full.get("max-deleted-entry-id"),
            "added": full.get("entries-added"), "groups": groups}


def fill(r: redis.Redis, prefix: str = "", streams: int = 3, entries: int = 300) -> None:
    """Streams with deleted entries, a trim, groups with pending entries and consumers;
    strings with and without a TTL; keys in another database."""
    for s in range(streams):
        key = f"{prefix}s{s}"
        pipe = r.pipeline(transaction=False)
        for i in range(entries):
            pipe.xadd(key, {"n": i, "f": "x" * (i % 7)})
        pipe.execute()
        first = r.xrange(key, count=3)
        r.xdel(key, first[1][0])
        r.xtrim(key, maxlen=entries - 10)
        r.xgroup_create(key, "g1", id="0")
        r.xgroup_create(key, "g2", id="$")
        r.xreadgroup("g1", "alice", {key: ">"}, count=20)
        r.xreadgroup("g1", "bob", {key: ">"}, count=5)
        r.xack(key, "g1", r.xrange(key, count=2)[0][0])
    for i in range(50):
        r.set(f"{prefix}str{i}", f"value-{i}")
    for i in range(10):
        r.set(f"{prefix}ttl{i}", i, px=600_000)
    other = redis.Redis(host=r.connection_pool.connection_kwargs["host"],
                        port=r.connection_pool.connection_kwargs["port"], db=3)
    other.xadd(f"{prefix}db3stream", {"k": "v"})
    other.set(f"{prefix}db3string", "v3")
