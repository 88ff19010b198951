"""Writing rows as stream entries: batch and streaming, pipelined XADD.

Each row becomes one ``XADD``: the target stream comes from the ``stream`` option or
the ``streamColumn`` column, an explicit ID from ``idColumn`` (else ``*``), and every
other column becomes a field (a map column contributes its pairs; nulls are left out).

Idempotent writes (the default for streaming): a task buffers its rows and writes
them in one MULTI/EXEC together with a marker, the string key
``<stream>:xstream-batch:<writer id>:<partition>`` set to the batch ID (strings, not a
hash, because xstreamd only has streams and strings). Before writing, the task reads
its markers (under WATCH) and skips every stream whose marker already holds this batch
or a later one. For streaming the writer id is Spark's query id, which is kept in the
checkpoint, and the batch id comes from Spark, so a micro-batch that is retried - a
failed task, or the whole batch after a driver restart - finds its markers and adds
nothing twice. Batch jobs (``idempotent=true``) use a random id per job and batch 0;
their markers expire after a day, since only retries inside the job need them.
(Redis 8.6's XADD IDMP could guard each row instead; measured against the markers it costs
the server more per row and a retry re-sends every row, its records last at most a day
and 10,000 per producer, and it refuses explicit IDs: bench/bench_sink_idempotency.py.)

Failover (see ``connect``): the write runs on the primary that Sentinel names. An
idempotent task's transaction is retried as a whole against the new primary after a
connection error or READONLY; the markers travel in the same MULTI/EXEC as the entries,
so a replica holds both or neither, and the retry skips exactly what the new primary
already has. Pipelined (non-idempotent) writes keep two chunks on the wire (the next sent
before the replies to the last are read) and retry the chunks not yet confirmed, which may
then be added twice: at-least-once, as a retried task is. With ``waitReplicas`` each
transaction (or chunk) is followed by WAIT on the same connection, and too few
acknowledgements count as a failure to retry, so a task completes only once its entries
are on that many replicas and a failover cannot lose them.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import logging
import uuid
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import redis
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import MapType, StructType
from redis.connection import AbstractConnection

from spark_connector import connect, wire
from spark_connector import options as opt

log = logging.getLogger("spark_connector")

MARKER_INFIX = ":xstream-batch:"
BATCH_MARKER_TTL = 86_400  # seconds; batch-job markers only guard retries inside the job
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"


class WriteError(RuntimeError):
    """The server refused some XADDs of a write task."""


@dataclass
class WriteResult(WriterCommitMessage):
    written: int = 0
    skipped_rows: int = 0  # rows with no non-null field
    skipped_streams: list[str] = field(default_factory=list)  # already written (retry)


def marker_key(stream: str, marker: str) -> str:
    """The key recording the last batch ``marker`` (writer:partition) wrote to ``stream``."""
    return f"{stream}{MARKER_INFIX}{marker}"


def _value(value: Any) -> bytes | str:
    if isinstance(value, (bytes, str)):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, decimal.Decimal)):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    return json.dumps(value, default=str, separators=(",", ":"))


class RowLayout:
    """Where the stream, the ID and the fields of a row are (from the input schema)."""

    __slots__ = ("stream", "stream_index", "id_index", "fields")

    def __init__(self, schema: StructType, wopts: opt.WriteOptions) -> None:
        names = schema.fieldNames()
        self.stream = wopts.stream
        self.stream_index: int | None = None
        if self.stream is None:
            if wopts.stream_column not in names:
                raise opt.OptionError(
                    f"no target stream: set option stream, or give the rows a "
                    f"{wopts.stream_column!r} column (option streamColumn)"
                )
            self.stream_index = names.index(wopts.stream_column)
        self.id_index: int | None = None
        if wopts.id_column is not None:
            if wopts.id_column not in names:
                raise opt.OptionError(f"idColumn {wopts.id_column!r} is not a column")
            self.id_index = names.index(wopts.id_column)
        skip = set(wopts.drop_columns)
        if self.stream_index is not None:
            skip.add(names[self.stream_index])
        if self.id_index is not None:
            skip.add(names[self.id_index])
        # (index, name, is_map)
        self.fields = [
            (i, f.name, isinstance(f.dataType, MapType))
            for i, f in enumerate(schema.fields)
            if f.name not in skip
        ]
        if not self.fields:
            raise opt.OptionError("no column is left to become an entry field")

    def entry(self, row: Any) -> tuple[str, str, list[bytes | str]] | None:
        """``(stream, id, [field, value, ...])`` for a row, None when it has no field."""
        stream = self.stream if self.stream_index is None else row[self.stream_index]
        if stream is None:
            raise WriteError("a row has a null target stream")
        entry_id = "*"
        if self.id_index is not None and row[self.id_index] is not None:
            entry_id = str(row[self.id_index])
        pairs: list[bytes | str] = []
        for index, name, is_map in self.fields:
            value = row[index]
            if value is None:
                continue
            if is_map:  # a dict, or (key, value) pairs as Arrow gives them
                items = value.items() if isinstance(value, dict) else value
                for key, item in items:
                    if item is not None:
                        pairs.append(_value(key))
                        pairs.append(_value(item))
            else:
                pairs.append(name)
                pairs.append(_value(value))
        if not pairs:
            return None
        return str(stream), entry_id, pairs


def arrow_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[Any, ...]]:
    """Rows as tuples, converted a column at a time (much cheaper than Spark Rows)."""
    for batch in batches:
        yield from zip(*(column.to_pylist() for column in batch.columns), strict=True)


def _raise_errors(results: list[Any], what: str) -> None:
    errors = [r for r in results if isinstance(r, Exception)]
    if errors:
        raise WriteError(f"{len(errors)} of {len(results)} {what} failed; first: {errors[0]}")


def _raise_retryable(results: list[Any]) -> None:
    """Raise a refusal that running the write again may get past: the server is a replica
    now (READONLY: it was demoted), or it has too few replicas (NOREPLICAS)."""
    for reply in results:
        if isinstance(reply, redis.ResponseError) and connect.retryable(reply):
            raise reply


def _wait_replicas(conn: AbstractConnection, wopts: opt.WriteOptions) -> None:
    """WAIT until ``waitReplicas`` replicas have this connection's writes (and, since a
    primary's replicas apply its writes in order, everything written before them)."""
    if not wopts.wait_replicas:
        return
    (acked,) = wire.roundtrip(conn, [("WAIT", wopts.wait_replicas, wopts.wait_timeout_ms)])
    if isinstance(acked, Exception):
        raise acked
    if int(acked) < wopts.wait_replicas:
        raise connect.NotReplicated(
            f"written, but acknowledged by {int(acked)} of {wopts.wait_replicas} replicas "
            f"within {wopts.wait_timeout_ms} ms (waitReplicas, waitTimeout)"
        )


# Chunks of a pipelined write on the wire at once: the next chunk is sent before the
# replies to the one before it are read, so the server adds one chunk's entries while the
# task reads the replies to the chunk before and builds the next one. (With one chunk at
# a time the task and the server take turns, and each waits for the other.)
PIPELINE_WINDOW = 2


class _PipelinedWrite:
    """``write_pipelined``'s state across attempts: the chunks still to send, and those
    sent but not yet confirmed (their replies unread, or not yet acknowledged by enough
    replicas), which an attempt after a failure sends again."""

    def __init__(self, chunks: Iterator[list[tuple[Any, ...]]], wopts: opt.WriteOptions
                 ) -> None:
        self.chunks = chunks
        self.wopts = wopts
        # WAIT follows each chunk, so that a chunk is confirmed only once it is replicated:
        # one chunk at a time then.
        self.window = 1 if wopts.wait_replicas else PIPELINE_WINDOW
        self.unconfirmed: deque[list[tuple[Any, ...]]] = deque()
        self.written = 0

    def attempt(self, client: redis.Redis) -> None:
        """Send every chunk, at most ``window`` unconfirmed at once, on one connection."""
        unconfirmed = self.unconfirmed
        with wire.connection(client) as conn:
            for chunk in unconfirmed:  # sent by an attempt that failed: send again
                wire.send(conn, chunk)
            while True:
                if len(unconfirmed) < self.window:
                    chunk = next(self.chunks, None)
                    if chunk is not None:
                        wire.send(conn, chunk)
                        unconfirmed.append(chunk)
                        continue
                if not unconfirmed:
                    return
                oldest = unconfirmed[0]
                results = wire.read(conn, len(oldest))
                _raise_retryable(results)
                _raise_errors(results, "XADDs")
                _wait_replicas(conn, self.wopts)
                unconfirmed.popleft()
                self.written += len(oldest)


def _chunks(
    layout: RowLayout, wopts: opt.WriteOptions, rows: Iterator[Any], result: WriteResult
) -> Iterator[list[tuple[Any, ...]]]:
    """The rows' XADDs in lists of ``batchSize``; rows with no field are counted in
    ``result.skipped_rows``."""
    trim = wopts.trim_args()
    chunk: list[tuple[Any, ...]] = []
    for row in rows:
        entry = layout.entry(row)
        if entry is None:
            result.skipped_rows += 1
            continue
        stream, entry_id, pairs = entry
        chunk.append(("XADD", stream, *trim, entry_id, *pairs))
        if len(chunk) == wopts.batch_size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def write_pipelined(
    target: redis.Redis | connect.Link,
    layout: RowLayout,
    wopts: opt.WriteOptions,
    rows: Iterator[Any],
) -> WriteResult:
    """Plain writes: XADD pipelined in chunks of ``batchSize``, no transaction, two chunks
    on the wire at once (one with ``waitReplicas``). After a retryable error the chunks not
    yet confirmed are sent again (at-least-once)."""
    result = WriteResult()
    write = _PipelinedWrite(_chunks(layout, wopts, rows, result), wopts)
    connect.as_link(target).run(write.attempt, "writing entries (pipelined XADD)")
    result.written = write.written
    return result


def write_once(
    target: redis.Redis | connect.Link,
    layout: RowLayout,
    wopts: opt.WriteOptions,
    rows: Iterator[Any],
    marker: str,
    batch_id: int,
    marker_ttl: int | None = None,
) -> WriteResult:
    """Idempotent writes: one MULTI/EXEC per task, guarded by per-stream markers.

    The rows are buffered first; the transaction (``_write_marked``) may then run again
    after a failover, and finds out from the markers what is already there.
    """
    skipped_rows = 0
    trim = wopts.trim_args()
    by_stream: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        entry = layout.entry(row)
        if entry is None:
            skipped_rows += 1
            continue
        stream, entry_id, pairs = entry
        by_stream.setdefault(stream, []).append(("XADD", stream, *trim, entry_id, *pairs))
    if not by_stream:
        return WriteResult(skipped_rows=skipped_rows)
    result = connect.as_link(target).run(
        lambda c: _write_marked(c, wopts, by_stream, marker, batch_id, marker_ttl),
        f"writing batch {batch_id} ({marker})",
    )
    result.skipped_rows = skipped_rows
    return result


def _write_marked(
    client: redis.Redis,
    wopts: opt.WriteOptions,
    by_stream: dict[str, list[tuple[Any, ...]]],
    marker: str,
    batch_id: int,
    marker_ttl: int | None,
) -> WriteResult:
    """The transaction of ``write_once``, sent in chunks of ``batchSize`` commands (each
    answered with QUEUED) so neither side buffers the whole partition at once."""
    result = WriteResult()
    keys = [marker_key(s, marker) for s in by_stream]
    expiry = ["EX", marker_ttl] if marker_ttl else []
    with wire.connection(client) as conn:
        while True:
            (watched,) = wire.roundtrip(conn, [("WATCH", *keys)])
            if isinstance(watched, Exception) and "unknown command" not in str(watched).lower():
                raise watched  # a server without WATCH: check without the guard
            seen = wire.roundtrip(conn, [("GET", key) for key in keys])
            todo = [
                s
                for s, mark in zip(by_stream, seen, strict=True)
                if mark is None or isinstance(mark, Exception) or int(mark) < batch_id
            ]
            result.skipped_streams = sorted(set(by_stream) - set(todo))
            if not todo:
                if wopts.wait_replicas:
                    # Written by an earlier attempt, perhaps on a connection that is gone:
                    # write the markers again (unchanged, if nobody changed them) so that
                    # WAIT covers them, and with them the entries written before.
                    again = [("SET", key, mark, "KEEPTTL") for key, mark in zip(keys, seen,
                                                                               strict=True)]
                    replies = wire.roundtrip(conn, [("MULTI",), *again, ("EXEC",)])
                    _raise_retryable(replies)
                    if replies[-1] is None:
                        continue  # a marker changed meanwhile: look again
                    _wait_replicas(conn, wopts)
                else:
                    wire.roundtrip(conn, [("UNWATCH",)])
                return result
            commands: list[tuple[Any, ...]] = [("MULTI",)]
            for stream in todo:
                commands.extend(by_stream[stream])
                commands.append(("SET", marker_key(stream, marker), batch_id, *expiry))
            for start in range(0, len(commands), wopts.batch_size):
                # replies are QUEUED; a command refused here makes EXEC fail (EXECABORT)
                queued = wire.roundtrip(conn, commands[start : start + wopts.batch_size])
                # a demoted primary, too few replicas: leave (the dropped connection
                # discards the MULTI)
                _raise_retryable(queued)
            (outcome,) = wire.roundtrip(conn, [("EXEC",)])
            if outcome is None:
                continue  # a watched marker changed: another attempt wrote, look again
            if isinstance(outcome, Exception):
                raise WriteError(f"the write transaction was refused: {outcome}")
            _raise_errors(outcome, "XADDs in the transaction")
            _wait_replicas(conn, wopts)
            result.written = len(commands) - 1 - len(todo)
            return result


def _task_context() -> Any:
    return TaskContext.get()


class XStreamWriter(DataSourceArrowWriter):
    """Batch writes (``df.write.format("xstream")``); Spark hands over Arrow batches."""

    def __init__(self, schema: StructType, wopts: opt.WriteOptions) -> None:
        self.wopts = wopts
        self.layout = RowLayout(schema, wopts)
        # one id per write job, shared by its tasks: a retried task finds its markers
        self.write_id = "write-" + uuid.uuid4().hex

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteResult:
        link = connect.Primary(self.wopts.conn)
        rows = arrow_rows(iterator)
        if not self.wopts.idempotent:
            return write_pipelined(link, self.layout, self.wopts, rows)
        ctx = _task_context()
        part = ctx.partitionId() if ctx is not None else 0
        marker = f"{self.write_id}:{part}"
        return write_once(link, self.layout, self.wopts, rows, marker, 0, BATCH_MARKER_TTL)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        total = sum(m.written for m in messages if isinstance(m, WriteResult))
        log.info("xstream batch write committed: %d entries", total)


class XStreamStreamWriter(DataSourceStreamArrowWriter):
    """Streaming writes; idempotent per (query, batch, partition) unless disabled."""

    def __init__(self, schema: StructType, wopts: opt.WriteOptions) -> None:
        self.wopts = wopts
        self.layout = RowLayout(schema, wopts)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteResult:
        link = connect.Primary(self.wopts.conn)
        rows = arrow_rows(iterator)
        if not self.wopts.idempotent:
            return write_pipelined(link, self.layout, self.wopts, rows)
        ctx = _task_context()
        query_id = ctx.getLocalProperty(QUERY_ID_PROPERTY) if ctx is not None else None
        batch_id = ctx.getLocalProperty(BATCH_ID_PROPERTY) if ctx is not None else None
        if query_id is None or batch_id is None:
            raise WriteError("idempotent streaming write outside a streaming query task")
        marker = f"{query_id}:{ctx.partitionId()}"
        return write_once(link, self.layout, self.wopts, rows, marker, int(batch_id))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        total = sum(m.written for m in messages if isinstance(m, WriteResult))
        log.info("xstream batch %d committed: %d entries", batchId, total)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        # Entries already added stay; the markers make the retry of this batch skip them.
        log.warning("xstream batch %d aborted", batchId)
