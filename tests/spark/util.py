"""Helpers shared by the connector tests."""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import redis


def wait_for(condition: Callable[[], Any], timeout: float = 60.0, what: str = "condition") -> Any:
    """Poll until ``condition()`` is truthy (a readiness wait, not a speed assertion)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def add_entries(
    client: redis.Redis, key: str, count: int, start: int = 0, **extra: str
) -> list[str]:
    """XADD ``count`` entries ``{n: i, ...extra}``; returns their IDs."""
    pipe = client.pipeline(transaction=False)
    for i in range(start, start + count):
        pipe.xadd(key, {"n": str(i), **extra})
    return [i.decode() for i in pipe.execute()]


def stream_values(client: redis.Redis, key: str, field: str = "n") -> list[str]:
    return [fields[field.encode()].decode() for _id, fields in client.xrange(key)]


def start_copy(
    spark: Any,
    conn: dict[str, str],
    checkpoint: str,
    source: dict[str, Any],
    sink: dict[str, Any],
    trigger: dict[str, Any] | None = None,
) -> Any:
    """Start ``xstream -> xstream``: the source's rows land in the sink stream, with the
    source stream name and the entry's fields (IDs and timestamps are dropped)."""
    df = (
        spark.readStream.format("xstream")
        .options(**conn)
        .options(**{k: str(v) for k, v in source.items()})
        .load()
    )
    writer = (
        df.writeStream.format("xstream")
        .options(**conn)
        .option("dropColumns", "id,ts")
        .options(**{k: str(v) for k, v in sink.items()})
        .option("checkpointLocation", checkpoint)
        .trigger(**(trigger or {"availableNow": True}))
    )
    return writer.start()


def run_available_now(*args: Any, **kwargs: Any) -> Any:
    query = start_copy(*args, **kwargs)
    query.awaitTermination(180)
    if query.exception() is not None:
        raise AssertionError(str(query.exception()))
    return query


def copied(r: redis.Redis, key: str) -> Counter[tuple[str, str]]:
    """(source stream, n) of every entry in the sink stream, with multiplicity."""
    return Counter(
        (f[b"stream"].decode(), f[b"n"].decode()) for _id, f in r.xrange(key)
    )


def forget_commit(checkpoint: str, batch_id: int) -> None:
    """Delete a batch's entry in the commit log (and its checksum file)."""
    commits = os.path.join(checkpoint, "commits")
    os.remove(os.path.join(commits, str(batch_id)))
    crc = os.path.join(commits, f".{batch_id}.crc")
    if os.path.exists(crc):
        os.remove(crc)


def input_rows(query: Any) -> list[int]:
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
