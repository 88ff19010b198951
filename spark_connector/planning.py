"""Driver-side planning: resolve offsets, find the end of a micro-batch, split ranges.

An offset is a dict ``{stream: id}`` where ``id`` is the last entry already read; a batch
reads ``(start[s], end[s]]`` for every stream.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import redis

from spark_connector import ids, streams
from spark_connector.options import parse_offsets_json

Offsets = dict[str, str]


@dataclass(frozen=True, slots=True)
class Fetched:
    """What one admission probe found for a stream: IDs within the cap, and whether the
    stream has nothing more to give up to the cap."""

    ids: list[str]
    exhausted: bool


# fetch(requests) -> one Fetched per (stream, position, count) request, in order
FetchFn = Callable[[list[tuple[str, str, int]], Offsets], list[Fetched]]


def per_stream_spec(spec: str, stream_keys: Sequence[str]) -> dict[str, str]:
    """Expand an offsets option into ``{stream: "earliest" | "latest" | id}``.

    Streams missing from a JSON spec start at ``earliest``.
    """
    lowered = spec.strip().lower()
    if lowered in ("earliest", "latest"):
        return dict.fromkeys(stream_keys, lowered)
    given = parse_offsets_json(spec, "offsets")
    return {key: given.get(key, "earliest") for key in stream_keys}


def earliest_position(info: streams.StreamInfo | None) -> str:
    """The position just before the first entry that exists now.

    Starting here rather than at 0-0 keeps entries trimmed before the query began from
    counting as data loss.
    """
    if info is None:
        return ids.ZERO
    if info.first_id is not None:
        return ids.predecessor(info.first_id)
    return info.last_generated_id


def resolve_start(client: redis.Redis, spec: str, stream_keys: Sequence[str]) -> Offsets:
    """Exclusive start positions for ``startingOffsets``: ``0-0`` means earliest."""
    wanted = per_stream_spec(spec, stream_keys)
    info = streams.infos(client, list(stream_keys))
    out: Offsets = {}
    for key in stream_keys:
        want = wanted[key]
        if want == "earliest" or want == ids.ZERO:
            out[key] = earliest_position(info[key])
        elif want == "latest":
            found = info[key]
            out[key] = found.last_generated_id if found else ids.ZERO
        else:
            out[key] = want
    return out


def resolve_end(client: redis.Redis, spec: str, start: Offsets) -> Offsets:
    """Inclusive end positions for a batch read's ``endingOffsets`` (never before start)."""
    keys = list(start)
    wanted = per_stream_spec(spec, keys)
    tails = streams.last_ids(client, keys)
    out: Offsets = {}
    for key in keys:
        want = wanted[key]
        if want == "latest":
            end = tails[key]
        elif want == "earliest":
            end = start[key]
        else:
            end = want
        out[key] = ids.id_max(end, start[key])
    return out


def xrange_fetch(client: redis.Redis) -> FetchFn:
    """Admission probe for plain reads: XRANGE after the position, up to the cap."""

    def fetch(requests: list[tuple[str, str, int]], caps: Offsets) -> list[Fetched]:
        pipe = client.pipeline(transaction=False)
        for key, pos, count in requests:
            streams.xrange(pipe, key, pos, caps[key], count)
        out = []
        for (_key, _pos, count), reply in zip(requests, pipe.execute(), strict=True):
            found = [streams.entry_id(entry) for entry in reply or []]
            out.append(Fetched(found, len(found) < count))
        return out

    return fetch


def plan_end(
    start: Offsets,
    caps: Offsets,
    max_rows: int | None,
    fetch: FetchFn | None,
    probe_chunk: int = 10_000,
) -> Offsets:
    """The end offset of the next batch: at most ``max_rows`` entries over all streams.

    Each stream may advance to its cap (its last ID now, or the Trigger.AvailableNow
    target). With a row limit the budget is shared evenly; a stream that has fewer
    entries than its share gives the rest back to the others, and when the budget is
    smaller than the number of streams the ones furthest behind go first. ``fetch`` is
    None when no probing is needed (plain reads without a limit).
    """
    end = dict(start)
    active = [key for key in start if ids.id_less(start[key], caps[key])]
    if fetch is None:
        for key in active:
            end[key] = caps[key]
        return end
    remaining = max_rows
    # Every round either uses budget or exhausts a stream, so the loop ends.
    while active and (remaining is None or remaining > 0):
        if remaining is None:
            shares = dict.fromkeys(active, probe_chunk)
        else:
            ordered = sorted(active, key=lambda k: ids.parse_id(end[k]))
            base, extra = divmod(remaining, len(ordered))
            shares = {}
            for i, key in enumerate(ordered):
                share = base + (1 if i < extra else 0)
                if share > 0:
                    shares[key] = share
        requests = [(key, end[key], n) for key, n in shares.items()]
        for (key, _pos, _count), found in zip(requests, fetch(requests, caps), strict=True):
            if found.ids:
                end[key] = ids.id_max(end[key], found.ids[-1])
                if remaining is not None:
                    remaining -= len(found.ids)
            if found.exhausted:
                end[key] = ids.id_max(end[key], caps[key])
                active.remove(key)
    return end


@dataclass(frozen=True, slots=True)
class RangeSpec:
    """One partition's work: ``(lo, hi]`` of one stream.

    ``open_end`` marks the last sub-range of a stream in its batch: its ``hi`` is the
    batch end, so finding the whole rest of the range trimmed away is data loss.
    """

    stream: str
    lo: str
    hi: str
    open_end: bool


def plan_ranges(
    start: Offsets, end: Offsets, parts: int, firsts: dict[str, str | None] | None = None
) -> list[RangeSpec]:
    """Split each stream's ``(start, end]`` into up to ``parts`` ordered sub-ranges.

    ``firsts`` optionally gives the first entry ID in each range (batch reads know it),
    which makes the time-based split follow the data; without it the split depends only
    on the offsets, so re-planning a streaming batch after a restart gives the same
    partitions.
    """
    out: list[RangeSpec] = []
    for key, hi in end.items():
        lo = start.get(key, hi)
        first = firsts.get(key) if firsts else None
        if firsts is not None and key in firsts and first is None:
            continue  # nothing in range
        pieces = ids.split_range(lo, hi, parts, first)
        for i, (sub_lo, sub_hi) in enumerate(pieces):
            out.append(RangeSpec(key, sub_lo, sub_hi, i == len(pieces) - 1))
    return out


def first_ids(client: redis.Redis, start: Offsets, end: Offsets) -> dict[str, str | None]:
    """The first entry ID in each ``(start, end]`` (None when the range is empty)."""
    keys = [key for key in end if ids.id_less(start.get(key, end[key]), end[key])]
    pipe = client.pipeline(transaction=False)
    for key in keys:
        streams.xrange(pipe, key, start[key], end[key], 1)
    out: dict[str, str | None] = {}
    for key, reply in zip(keys, pipe.execute(), strict=True):
        out[key] = streams.entry_id(reply[0]) if reply else None
    return out
