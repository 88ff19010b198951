"""Consumer-group mode: the group hands entries to this query's consumer, Spark's
checkpoint still holds the offsets.

- Planning (driver) claims new entries with ``XREADGROUP ... >``; the batch end is the
  last ID claimed. Entries this consumer already holds pending after the start position
  (claimed by a run that crashed before logging its offsets) are taken first.
- Executors read a range ``(lo, hi]`` from the consumer's own pending list with
  ``XREADGROUP ... STREAMS key <lo>``, so replaying a batch gives the same entries.
- Entries are acknowledged once Spark is done with them: at ``commit(end)``, and at every
  planning call for everything up to its start, because Spark only plans the next batch
  after the previous one has completed. That covers the batch ``commit()`` is never
  called for (the last one) as soon as the query plans again, including after a restart.
"""

from __future__ import annotations

from typing import Any

import redis

from spark_connector import ids, streams
from spark_connector.planning import Fetched, FetchFn, Offsets

ACK_CHUNK = 1000


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def ensure_group(client: redis.Redis, key: str, group: str, create_at: str) -> bool:
    """Create the group at ``create_at`` ("$" for the tail) unless it exists.

    Returns True when this call created it."""
    try:
        client.execute_command("XGROUP", "CREATE", key, group, create_at, "MKSTREAM")
    except redis.ResponseError as exc:
        if "BUSYGROUP" in str(exc):
            return False
        raise
    return True


def group_last_delivered(client: redis.Redis, key: str, group: str) -> str:
    """The group's last-delivered-id from XINFO GROUPS."""
    for row in client.execute_command("XINFO", "GROUPS", key) or []:
        if isinstance(row, dict):
            fields = {_text(k): v for k, v in row.items()}
        else:
            fields = {_text(row[i]): row[i + 1] for i in range(0, len(row) - 1, 2)}
        if _text(fields.get("name", b"")) == group:
            return _text(fields.get("last-delivered-id", ids.ZERO))
    raise redis.ResponseError(f"NOGROUP consumer group {group!r} does not exist on {key!r}")


def pending_ids(
    client: Any, key: str, group: str, consumer: str, lo: str, hi: str, count: int
) -> Any:
    """Run or queue the extended XPENDING for this consumer's IDs in ``[lo, hi]``."""
    return client.execute_command("XPENDING", key, group, lo, hi, count, consumer)


def initial_position(client: redis.Redis, key: str, group: str, consumer: str) -> str:
    """Where a query without a checkpoint starts: just before this consumer's oldest
    pending entry (so entries a previous run claimed but never acknowledged are read
    again), else the group's last-delivered-id."""
    rows = pending_ids(client, key, group, consumer, "-", "+", 1)
    if rows:
        return ids.predecessor(_text(rows[0][0]))
    return group_last_delivered(client, key, group)


def ack_upto(client: redis.Redis, key: str, group: str, consumer: str, upto: str) -> int:
    """XACK every entry this consumer holds pending with an ID up to ``upto``."""
    total = 0
    while True:
        try:
            rows = pending_ids(client, key, group, consumer, "-", upto, ACK_CHUNK)
        except redis.ResponseError as exc:
            if "NOGROUP" in str(exc):
                return total
            raise
        if not rows:
            return total
        total += int(client.execute_command("XACK", key, group, *[row[0] for row in rows]))
        if len(rows) < ACK_CHUNK:
            return total


def claim_fetch(client: redis.Redis, group: str, consumer: str) -> FetchFn:
    """Admission probe for group mode: own pending entries first, then new ones.

    Entries past the cap (only possible with Trigger.AvailableNow) stay pending for this
    consumer and are picked up first by the next run.
    """

    def fetch(requests: list[tuple[str, str, int]], caps: Offsets) -> list[Fetched]:
        pipe = client.pipeline(transaction=False)
        for key, pos, count in requests:
            pending_ids(pipe, key, group, consumer, ids.successor(pos) or pos, caps[key], count)
        held = [[_text(row[0]) for row in reply or []] for reply in pipe.execute()]
        pipe = client.pipeline(transaction=False)
        asked: list[int] = []
        for (key, pos, count), got in zip(requests, held, strict=True):
            want = count - len(got)
            last = got[-1] if got else pos
            if want > 0 and ids.id_less(last, caps[key]):
                pipe.execute_command(
                    "XREADGROUP", "GROUP", group, consumer, "COUNT", want, "STREAMS", key, ">"
                )
                asked.append(want)
            else:
                asked.append(0)
        replies = iter(pipe.execute()) if any(asked) else iter(())
        out: list[Fetched] = []
        for (key, _pos, count), got, want in zip(requests, held, asked, strict=True):
            new: list[str] = []
            if want:
                reply = next(replies)
                for _name, entries in reply or []:
                    new.extend(streams.entry_id(entry) for entry in entries)
            within = [i for i in new if not ids.id_less(caps[key], i)]
            exhausted = len(got) + len(new) < count or len(within) < len(new)
            out.append(Fetched(got + within, exhausted))
        return out

    return fetch
