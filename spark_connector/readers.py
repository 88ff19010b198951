"""The batch reader and the streaming reader.

Both split the work into ``RangeSpec`` partitions, ``(lo, hi]`` of one stream each,
which executors read with XRANGE (or, in consumer-group mode, from the consumer's
pending list). Readers hold options only; connections are opened where they are used.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import redis
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from spark_connector import group as grp
from spark_connector import ids, planning, streams
from spark_connector import options as opt
from spark_connector.convert import BatchBuilder
from spark_connector.planning import Offsets, Position, RangeSpec
from spark_connector.range_read import LossReporter, gap_loss, read_range
from spark_connector.streams import StreamInfo


def _read_partition(
    partition: InputPartition, ropts: opt.ReadOptions, builder: BatchBuilder
) -> Iterator[pa.RecordBatch]:
    spec = partition.value
    if not isinstance(spec, RangeSpec):
        return  # Spark's placeholder partition when there was nothing to plan
    client = opt.client(ropts.conn)
    for chunk in read_range(client, spec, ropts):
        yield builder.build(spec.stream, chunk)


class XStreamBatchReader(DataSourceReader):
    """``spark.read.format("xstream")``: ``(startingOffsets, endingOffsets]`` per stream,
    resolved when the query is planned."""

    def __init__(self, ropts: opt.ReadOptions, builder: BatchBuilder) -> None:
        self.ropts = ropts
        self.builder = builder

    def partitions(self) -> list[InputPartition]:
        ropts = self.ropts
        client = opt.client(ropts.conn)
        start = planning.resolve_start(client, ropts.starting_offsets, ropts.streams)
        end = planning.resolve_end(client, ropts.ending_offsets, start)
        firsts = planning.first_ids(client, start, end) if ropts.partitions_per_stream > 1 else None
        specs = planning.plan_ranges(start, end, ropts.partitions_per_stream, firsts)
        specs = planning.with_expectations(client, specs)
        return [InputPartition(spec) for spec in specs]

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

    @property
    def client(self) -> redis.Redis:
        if self._client is None:
            self._client = opt.client(self.ropts.conn)
        return self._client

    # -- offsets ---------------------------------------------------------------------

    def _initial(self, keys: list[str]) -> dict[str, Position]:
        ropts = self.ropts
        if not ropts.group:
            return planning.resolve_positions(self.client, ropts.starting_offsets, keys)
        assert ropts.consumer is not None
        wanted = planning.per_stream_spec(ropts.starting_offsets, keys)
        out: dict[str, Position] = {}
        for key in keys:
            want = wanted[key]
            create_at = {"earliest": "0", "latest": "$"}.get(want, want)
            grp.ensure_group(self.client, key, ropts.group, create_at)
            out[key] = Position(
                grp.initial_position(self.client, key, ropts.group, ropts.consumer)
            )
        return out

    def initialOffset(self) -> Json:  # noqa: N802 - Spark's name
        return {k: p.to_json() for k, p in self._initial(list(self.ropts.streams)).items()}

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
        n = self.ropts.max_records_per_batch
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        # The target: every stream's tail now; later entries wait for the next run.
        self._target = streams.infos(self.client, list(self.ropts.streams))

    def latestOffset(self, start: Json, limit: ReadLimit) -> Json:  # noqa: N802
        ropts = self.ropts
        # streams dropped from the options leave the offset; new ones join at their
        # starting position and are read from the next batch on
        begin = {k: Position.from_json(v) for k, v in start.items() if k in ropts.streams}
        joined = self._initial([k for k in ropts.streams if k not in begin])
        known = {k: p.id for k, p in begin.items()}
        if ropts.group:
            # Spark plans a batch only after the previous one completed: everything up to
            # start is processed, including the last batch of a previous run.
            self._ack(known)
        now = streams.infos(self.client, list(known))
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
            fetch = grp.claim_fetch(self.client, ropts.group, ropts.consumer)
        elif max_rows is not None:
            fetch = planning.xrange_fetch(self.client)
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
        tails = streams.last_ids(self.client, list(self.ropts.streams))
        return {k: Position(v).to_json() for k, v in tails.items()}

    def partitions(self, start: Json, end: Json) -> list[InputPartition]:
        specs = planning.plan_ranges(_ids(start), _ids(end), self.ropts.partitions_per_stream)
        if not self.ropts.group:
            specs = planning.with_expectations(self.client, specs)
        return [InputPartition(spec) for spec in specs]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read_partition(partition, self.ropts, self.builder)

    # -- consumer group acknowledgements -------------------------------------------------

    def _ack(self, done: Offsets) -> None:
        ropts = self.ropts
        assert ropts.group is not None and ropts.consumer is not None
        for key, upto in done.items():
            if key in ropts.streams:
                grp.ack_upto(self.client, key, ropts.group, ropts.consumer, upto)

    def commit(self, end: Json) -> None:
        if self.ropts.group:
            self._ack(_ids(end))

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
