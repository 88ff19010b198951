"""The batch reader and the streaming reader.

Both split the work into ``RangeSpec`` partitions, ``(lo, hi]`` of one stream each,
which executors read with XRANGE (or, in consumer-group mode, from the consumer's
pending list). Readers hold options only; connections are opened where they are used.

Planning always talks to the primary; each planning call runs as one operation that is
retried as a whole after a failover (``connect.call``): it only reads, or claims entries
that the next attempt takes over as the consumer's own pending ones. Partitions read
the primary, or a replica that has their range (option ``readFrom``).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pyarrow as pa
import redis
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from spark_connector import connect, ids, planning, streams
from spark_connector import group as grp
from spark_connector import options as opt
from spark_connector.convert import BatchBuilder
from spark_connector.planning import Offsets, Position, RangeSpec
from spark_connector.range_read import LossReporter, gap_loss, read_range
from spark_connector.streams import StreamInfo

T = TypeVar("T")


def partition_link(ropts: opt.ReadOptions, spec: RangeSpec) -> connect.Link:
    """Where a partition reads: the primary, or (``readFrom``) a replica that has its range;
    partitions start at different replicas (by a hash of the range)."""
    if ropts.read_from == opt.PRIMARY or spec.sync is None:
        return connect.Primary(ropts.conn)
    seed = zlib.crc32(f"{spec.stream}\0{spec.lo}".encode())
    return connect.Replica(ropts, spec.stream, spec.sync, seed)


def _read_partition(
    partition: InputPartition, ropts: opt.ReadOptions, builder: BatchBuilder
) -> Iterator[pa.RecordBatch]:
    spec = partition.value
    if not isinstance(spec, RangeSpec):
        return  # Spark's placeholder partition when there was nothing to plan
    for chunk in read_range(partition_link(ropts, spec), spec, ropts):
        yield builder.build(spec.stream, chunk)


def _plan_partitions(
    client: redis.Redis, ropts: opt.ReadOptions, specs: list[RangeSpec]
) -> list[InputPartition]:
    if not ropts.group:
        specs = planning.with_expectations(client, specs)
    if ropts.read_from != opt.PRIMARY:
        specs = planning.with_sync(client, specs)
    return [InputPartition(spec) for spec in specs]


class XStreamBatchReader(DataSourceReader):
    """``spark.read.format("xstream")``: ``(startingOffsets, endingOffsets]`` per stream,
    resolved when the query is planned."""

    def __init__(self, ropts: opt.ReadOptions, builder: BatchBuilder) -> None:
        self.ropts = ropts
        self.builder = builder

    def partitions(self) -> list[InputPartition]:
        return connect.call(self.ropts.conn, self._partitions, "planning a batch read")

    def _partitions(self, client: redis.Redis) -> list[InputPartition]:
        ropts = self.ropts
        start = planning.resolve_start(client, ropts.starting_offsets, ropts.streams)
        end = planning.resolve_end(client, ropts.ending_offsets, start)
        firsts = planning.first_ids(client, start, end) if ropts.partitions_per_stream > 1 else None
        specs = planning.plan_ranges(start, end, ropts.partitions_per_stream, firsts)
        return _plan_partitions(client, ropts, specs)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read_partition(partition, self.ropts, self.builder)


Json = dict[str, Any]


def _ids(offset: Json) -> Offsets:
    return {key: Position.from_json(value).id for key, value in offset.items()}


class XStreamStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("xstream")``.

    The offset is ``{stream: {"id": last ID read, ...}}`` (see ``planning.Position``).
    Admission control: ``maxRecordsPerBatch`` becomes the default ReadMaxRows limit,
    shared across the streams; Trigger.AvailableNow reads up to the streams' tails as
    they were when the query started.
    """

    def __init__(self, ropts: opt.ReadOptions, builder: BatchBuilder) -> None:
        self.ropts = ropts
        self.builder = builder
        self._target: dict[str, StreamInfo | None] | None = None
        self._client: redis.Redis | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None  # connections are never pickled
        return state

    def _call(self, fn: Callable[[redis.Redis], T], what: str) -> T:
        """``fn(client)`` on the primary, run again after a failover (``connect.call``)."""

        def attempt(client: redis.Redis) -> T:
            self._client = client
            return fn(client)

        return connect.call(self.ropts.conn, attempt, what)

    # -- offsets ---------------------------------------------------------------------

    def _initial(self, client: redis.Redis, keys: list[str]) -> dict[str, Position]:
        ropts = self.ropts
        if not ropts.group:
            return planning.resolve_positions(client, ropts.starting_offsets, keys)
        assert ropts.consumer is not None
        wanted = planning.per_stream_spec(ropts.starting_offsets, keys)
        out: dict[str, Position] = {}
        for key in keys:
            want = wanted[key]
            create_at = {"earliest": "0", "latest": "$"}.get(want, want)
            grp.ensure_group(client, key, ropts.group, create_at)
            out[key] = Position(grp.initial_position(client, key, ropts.group, ropts.consumer))
        return out

    def initialOffset(self) -> Json:  # noqa: N802 - Spark's name
        keys = list(self.ropts.streams)
        found = self._call(lambda c: self._initial(c, keys), "finding the initial offset")
        return {k: p.to_json() for k, p in found.items()}

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
        n = self.ropts.max_records_per_batch
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        # The target: every stream's tail now; later entries wait for the next run.
        keys = list(self.ropts.streams)
        self._target = self._call(lambda c: streams.infos(c, keys), "reading the streams' tails")

    def latestOffset(self, start: Json, limit: ReadLimit) -> Json:  # noqa: N802
        return self._call(lambda c: self._latest(c, start, limit), "planning a micro-batch")

    def _latest(self, client: redis.Redis, start: Json, limit: ReadLimit) -> Json:
        ropts = self.ropts
        # streams dropped from the options leave the offset; new ones join at their
        # starting position and are read from the next batch on
        begin = {k: Position.from_json(v) for k, v in start.items() if k in ropts.streams}
        joined = self._initial(client, [k for k in ropts.streams if k not in begin])
        known = {k: p.id for k, p in begin.items()}
        if ropts.group:
            # Spark plans a batch only after the previous one completed: everything up to
            # start is processed, including the last batch of a previous run.
            self._ack(client, known)
        now = streams.infos(client, list(known))
        limits = self._target if self._target is not None else now
        cap_info = {k: limits.get(k) for k in known}
        caps = {
            k: ids.id_max(info.last_generated_id if info else ids.ZERO, known[k])
            for k, info in cap_info.items()
        }
        if not ropts.group:
            for key, seen in begin.items():
                problem = gap_loss(seen, now.get(key))
                if problem:
                    where = f"stream {key!r} after {seen.id}"
                    LossReporter(where, ropts.fail_on_data_loss).report(problem)
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        fetch: planning.FetchFn | None
        if ropts.group:
            assert ropts.consumer is not None
            fetch = grp.claim_fetch(client, ropts.group, ropts.consumer)
        elif max_rows is not None:
            fetch = planning.xrange_fetch(client)
        else:
            fetch = None
        peeks: dict[str, str | None] = {}
        end = planning.plan_end(known, caps, max_rows, fetch, peeks=peeks)
        out: Json = {}
        for key in ropts.streams:
            if key in joined:
                out[key] = joined[key].to_json()
                continue
            pos = end[key]
            if pos == known[key]:
                out[key] = begin[key].to_json()  # unchanged, so Spark sees no new data
            elif ropts.group:
                out[key] = Position(pos).to_json()
            elif pos == caps[key]:
                info = cap_info[key]
                added = info.entries_added if info else None
                out[key] = Position(pos, entries_added=added).to_json()
            else:
                out[key] = Position(pos, next_id=peeks.get(key)).to_json()
        return out

    def reportLatestOffset(self) -> Json:  # noqa: N802
        keys = list(self.ropts.streams)
        tails = self._call(lambda c: streams.last_ids(c, keys), "reading the streams' tails")
        return {k: Position(v).to_json() for k, v in tails.items()}

    def partitions(self, start: Json, end: Json) -> list[InputPartition]:
        specs = planning.plan_ranges(_ids(start), _ids(end), self.ropts.partitions_per_stream)
        return self._call(
            lambda c: _plan_partitions(c, self.ropts, specs), "planning a micro-batch's ranges"
        )

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read_partition(partition, self.ropts, self.builder)

    # -- consumer group acknowledgements -------------------------------------------------

    def _ack(self, client: redis.Redis, done: Offsets) -> None:
        ropts = self.ropts
        assert ropts.group is not None and ropts.consumer is not None
        for key, upto in done.items():
            if key in ropts.streams:
                grp.ack_upto(client, key, ropts.group, ropts.consumer, upto)

    def commit(self, end: Json) -> None:
        if self.ropts.group:
            done = _ids(end)
            self._call(lambda c: self._ack(c, done), "acknowledging a micro-batch")

    def stop(self) -> None:
        # In group mode everything Spark has confirmed is already acknowledged; entries
        # of a batch that may not have completed stay pending on purpose, so that a
        # restart can replay them, and the restart's first planning call acks them.
        if self._client is not None:
            try:
                self._client.close()
            except Exception:  # closing is best effort
                pass
            self._client = None
