"""Driver-side planning: resolve offsets, find the end of a micro-batch, split ranges.

Positions are IDs of the last entry already read; a batch reads ``(start[s], end[s]]``
for every stream. ``Offsets`` maps streams to such IDs; the streaming reader wraps them
in ``Position`` objects, which also carry what loss detection needs across restarts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import redis

from spark_connector import ids, streams
from spark_connector.options import parse_offsets_json

Offsets = dict[str, str]


@dataclass(frozen=True, slots=True)
class Position:
    """A stream's place in a streaming query's offset: ``{"id": ..., ...}`` in JSON.

    ``id`` is the last entry read. Redis does not record which IDs trimming removed, so
    the planner also notes what it knew when it chose this position: the entry right
    after it (``next``) when the batch stopped mid-stream, or the stream's entries-added
    counter (``added``) when ``id`` was the stream's tail. The next batch compares them
    with the stream as it is then (see ``range_read.gap_loss``), even after a restart,
    because the offset is in Spark's checkpoint.
    """

    id: str
    next_id: str | None = None
    entries_added: int | None = None

    def to_json(self) -> dict[str, str | int]:
        out: dict[str, str | int] = {"id": self.id}
        if self.next_id is not None:
            out["next"] = self.next_id
        if self.entries_added is not None:
            out["added"] = self.entries_added
        return out

    @classmethod
    def from_json(cls, value: object) -> Position:
        if isinstance(value, str):  # a bare ID is accepted too
            return cls(ids.normalize(value))
        if isinstance(value, dict) and "id" in value:
            nxt = value.get("next")
            added = value.get("added")
            return cls(
                ids.normalize(str(value["id"])),
                ids.normalize(str(nxt)) if nxt is not None else None,
                int(added) if added is not None else None,
            )
        raise ValueError(f"not a stream offset: {value!r}")


@dataclass(frozen=True, slots=True)
class Fetched:
    """What one admission probe found for a stream: IDs within the cap, whether the
    stream has nothing more to give up to the cap, and (plain reads) the ID of the entry
    right after the last one, when the probe saw it."""

    ids: list[str]
    exhausted: bool
    next_id: str | None = None


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


def resolve_positions(
    client: redis.Redis, spec: str, stream_keys: Sequence[str]
) -> dict[str, Position]:
    """Exclusive start positions for ``startingOffsets`` (``0-0`` means earliest), with
    what loss detection can know about them from the same XINFO snapshot."""
    wanted = per_stream_spec(spec, stream_keys)
    info = streams.infos(client, list(stream_keys))
    out: dict[str, Position] = {}
    for key in stream_keys:
        want, found = wanted[key], info[key]
        if want == "earliest" or want == ids.ZERO:
            if found is not None and found.first_id is not None:
                out[key] = Position(ids.predecessor(found.first_id), next_id=found.first_id)
            elif found is not None:
                out[key] = Position(found.last_generated_id, entries_added=found.entries_added)
            else:
                out[key] = Position(ids.ZERO)
        elif want == "latest":
            if found is not None:
                out[key] = Position(found.last_generated_id, entries_added=found.entries_added)
            else:
                out[key] = Position(ids.ZERO)
        else:
            out[key] = Position(want)
    return out


def resolve_start(client: redis.Redis, spec: str, stream_keys: Sequence[str]) -> Offsets:
    """Exclusive start IDs for ``startingOffsets``."""
    return {k: p.id for k, p in resolve_positions(client, spec, stream_keys).items()}


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
            streams.xrange(pipe, key, pos, caps[key], count + 1)  # one more: a peek
        out = []
        for (_key, _pos, count), reply in zip(requests, pipe.execute(), strict=True):
            found = [streams.entry_id(entry) for entry in reply or []]
            peek = found[count] if len(found) > count else None
            out.append(Fetched(found[:count], len(found) < count, peek))
        return out

    return fetch


def plan_end(
    start: Offsets,
    caps: Offsets,
    max_rows: int | None,
    fetch: FetchFn | None,
    probe_chunk: int = 10_000,
    peeks: dict[str, str | None] | None = None,
) -> Offsets:
    """The end offset of the next batch: at most ``max_rows`` entries over all streams.

    Each stream may advance to its cap (its last ID now, or the Trigger.AvailableNow
    target). With a row limit the budget is shared evenly; a stream that has fewer
    entries than its share gives the rest back to the others, and when the budget is
    smaller than the number of streams the ones furthest behind go first. ``fetch`` is
    None when no probing is needed (plain reads without a limit). ``peeks``, when given,
    receives for each probed stream the ID of the entry right after its end, if seen.
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
            if peeks is not None:
                peeks[key] = found.next_id
            if found.exhausted:
                end[key] = ids.id_max(end[key], caps[key])
                active.remove(key)
    return end


@dataclass(frozen=True, slots=True)
class RangeSpec:
    """One partition's work: ``(lo, hi]`` of one stream.

    ``expect`` is the first entry ID of the range when the planner looked (None when
    unknown or the range was empty); the reader reports data loss if that entry is gone
    and lies before the stream's head, i.e. it was trimmed.

    ``sync`` is set when the range may be read from a replica (option ``readFrom``): the
    ID the replica's stream must have reached (its last-generated-id) before it serves the
    range, i.e. ``hi`` or, if lower, the primary's last ID when the range was planned.
    """

    stream: str
    lo: str
    hi: str
    expect: str | None = None
    sync: str | None = None


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
        for sub_lo, sub_hi in ids.split_range(lo, hi, parts, first):
            out.append(RangeSpec(key, sub_lo, sub_hi))
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


def with_expectations(client: redis.Redis, specs: list[RangeSpec]) -> list[RangeSpec]:
    """Fill in each range's first entry ID, as it is now (one pipelined round trip)."""
    if not specs:
        return specs
    pipe = client.pipeline(transaction=False)
    for spec in specs:
        streams.xrange(pipe, spec.stream, spec.lo, spec.hi, 1)
    return [
        replace(spec, expect=streams.entry_id(reply[0]) if reply else None)
        for spec, reply in zip(specs, pipe.execute(), strict=True)
    ]


def with_sync(client: redis.Redis, specs: list[RangeSpec]) -> list[RangeSpec]:
    """Mark each range readable from a replica that has reached its end, or the primary's
    last ID now if that is lower (one XINFO STREAM per stream, pipelined)."""
    if not specs:
        return specs
    tails = streams.last_ids(client, sorted({spec.stream for spec in specs}))
    return [replace(spec, sync=ids.id_min(spec.hi, tails[spec.stream])) for spec in specs]
