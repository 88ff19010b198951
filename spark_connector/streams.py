"""Thin, explicit wrappers over the stream commands the connector sends.

The client returns raw replies (see ``options.client``), so each helper states the reply
shape it parses. Only commands Redis 7.0 already has are used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis

from spark_connector import ids

RawEntry = list[Any]  # [id: bytes, [field, value, ...] | None]


@dataclass(frozen=True, slots=True)
class StreamInfo:
    """The parts of XINFO STREAM the connector needs."""

    length: int
    first_id: str | None  # None when the stream is empty
    last_generated_id: str
    entries_added: int | None  # None when the server does not report it


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def parse_xinfo_stream(reply: Any) -> StreamInfo | None:
    """Parse a raw XINFO STREAM reply (flat key/value list, or a dict under RESP3)."""
    if reply is None or isinstance(reply, redis.ResponseError):
        return None
    if isinstance(reply, dict):
        pairs = {_text(k): v for k, v in reply.items()}
    else:
        pairs = {_text(reply[i]): reply[i + 1] for i in range(0, len(reply) - 1, 2)}
    first = pairs.get("first-entry")
    first_id = _text(first[0]) if first else None
    return StreamInfo(
        length=int(pairs.get("length", 0)),
        first_id=first_id,
        last_generated_id=_text(pairs.get("last-generated-id", ids.ZERO)),
        entries_added=int(pairs["entries-added"]) if "entries-added" in pairs else None,
    )


def infos(client: redis.Redis, keys: Sequence[str]) -> dict[str, StreamInfo | None]:
    """XINFO STREAM for several keys in one round trip; None for a missing key."""
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.execute_command("XINFO", "STREAM", key)
    replies = pipe.execute(raise_on_error=False)
    out: dict[str, StreamInfo | None] = {}
    for key, reply in zip(keys, replies, strict=True):
        if isinstance(reply, redis.ResponseError) and "no such key" not in str(reply).lower():
            raise reply
        out[key] = parse_xinfo_stream(reply)
    return out


def last_ids(client: redis.Redis, keys: Sequence[str]) -> dict[str, str]:
    """Each stream's last-generated-id ("0-0" for a missing stream)."""
    return {
        key: (info.last_generated_id if info else ids.ZERO)
        for key, info in infos(client, keys).items()
    }


def entry_id(entry: RawEntry) -> str:
    return entry[0].decode()


def xrange(client: Any, key: str, lo_exclusive: str, hi: str, count: int) -> Any:
    """Queue or run ``XRANGE key succ(lo) hi COUNT count`` (raw reply: list of entries)."""
    start = ids.successor(lo_exclusive) or hi
    return client.execute_command("XRANGE", key, start, hi, "COUNT", count)


def head(client: Any, key: str) -> Any:
    """Queue or run ``XRANGE key - + COUNT 1``: the stream's first entry, if any."""
    return client.execute_command("XRANGE", key, "-", "+", "COUNT", 1)


def is_wrongtype(exc: BaseException) -> bool:
    return isinstance(exc, redis.ResponseError) and str(exc).startswith("WRONGTYPE")
