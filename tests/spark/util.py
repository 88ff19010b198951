"""Helpers shared by the connector tests."""

from __future__ import annotations

import time
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
