"""Streaming reads and writes: limits, restarts from checkpoint, AvailableNow, data loss,
idempotent replay of a batch."""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any

import pytest
import redis

from tests.spark.util import (
    add_entries,
    copied,
    forget_commit,
    input_rows,
    run_available_now,
    start_copy,
    stream_values,
    wait_for,
)

pytestmark = pytest.mark.spark


def test_limit_split_across_streams_and_restart_from_checkpoint(
    spark: Any, conn: dict[str, str], r: redis.Redis, checkpoint: str
) -> None:
    add_entries(r, "in1", 25)
    add_entries(r, "in2", 10)
    source = {"streams": "in1,in2", "startingOffsets": "earliest", "maxRecordsPerBatch": 10}
    first = run_available_now(spark, conn, checkpoint, source, {"stream": "out"})
    batches = input_rows(first)
    assert sum(batches) == 35 and max(batches) <= 10 and len(batches) >= 4
    expected = Counter({("in1", str(i)): 1 for i in range(25)})
    expected.update({("in2", str(i)): 1 for i in range(10)})
    assert copied(r, "out") == expected

    # the checkpointed offset is {stream: {"id": last ID read, ...}}
    offsets_dir = os.path.join(checkpoint, "offsets")
    last = max(int(name) for name in os.listdir(offsets_dir) if name.isdigit())
    with open(os.path.join(offsets_dir, str(last))) as fh:
        source_offset = json.loads(fh.read().strip().splitlines()[-1])
    assert source_offset["in1"]["id"] == r.xrevrange("in1", count=1)[0][0].decode()

    # a query running with a processing-time trigger picks up new entries as they come
    running = start_copy(
        spark, conn, checkpoint, source, {"stream": "out"}, {"processingTime": "100 milliseconds"}
    )
    try:
        add_entries(r, "in1", 12, start=25)
        wait_for(lambda: r.xlen("out") == 47, what="12 more entries copied")
        add_entries(r, "in2", 3, start=10)
        wait_for(lambda: r.xlen("out") == 50, what="3 more entries copied")
    finally:
        running.stop()
    assert max(input_rows(running)) <= 10

    # stopped, more data, restarted: exactly the new entries, once
    add_entries(r, "in1", 4, start=37)
    run_available_now(spark, conn, checkpoint, source, {"stream": "out"})
    expected.update({("in1", str(i)): 1 for i in range(25, 41)})
    expected.update({("in2", str(i)): 1 for i in range(10, 13)})
    assert copied(r, "out") == expected


def test_available_now_with_parallel_ranges_and_a_typed_schema(
    spark: Any, conn: dict[str, str], r: redis.Redis, checkpoint: str
) -> None:
    for i in range(40):
        r.xadd("typed", {"n": str(i), "amount": f"{i}.5"}, id=f"{1000 + 7 * i}-0")
    df = (
        spark.readStream.format("xstream")
        .options(**conn)
        .schema("stream string, n int, amount double")
        .option("streams", "typed")
        .option("startingOffsets", "earliest")
        .option("partitionsPerStream", 3)
        .load()
    )
    query = (
        df.writeStream.format("memory")
        .queryName("typed_rows")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(180)
    rows = spark.sql("select n, amount from typed_rows").collect()
    assert sorted((row.n, row.amount) for row in rows) == [(i, i + 0.5) for i in range(40)]


def test_fail_on_data_loss_between_runs(
    spark: Any, conn: dict[str, str], r: redis.Redis, checkpoint: str
) -> None:
    add_entries(r, "lossy", 20)
    source = {"streams": "lossy", "startingOffsets": "earliest"}
    run_available_now(spark, conn, checkpoint, source, {"stream": "saved"})
    assert r.xlen("saved") == 20

    # while the query is down, 10 entries arrive and the first 5 of them are trimmed
    new = add_entries(r, "lossy", 10, start=20)
    r.xtrim("lossy", minid=new[5], approximate=False)
    failing = start_copy(spark, conn, checkpoint, source, {"stream": "saved"})
    with pytest.raises(Exception, match="data loss"):
        failing.awaitTermination(180)
    assert r.xlen("saved") == 20

    run_available_now(
        spark, conn, checkpoint, {**source, "failOnDataLoss": "false"}, {"stream": "saved"}
    )
    assert stream_values(r, "saved")[20:] == [str(i) for i in range(25, 30)]


def test_replayed_batch_adds_nothing_twice(
    spark: Any, conn: dict[str, str], r: redis.Redis, checkpoint: str
) -> None:
    add_entries(r, "src", 30)
    source = {"streams": "src", "startingOffsets": "earliest", "maxRecordsPerBatch": 10}
    run_available_now(spark, conn, checkpoint, source, {"stream": "dst"})
    assert r.xlen("dst") == 30
    markers = r.keys("dst:xstream-batch:*")  # one per (query, partition)
    assert markers and max(int(r.get(key)) for key in markers) == 2
    assert all(r.ttl(key) == -1 for key in markers)

    # Forget that batch 2 was committed, as if the driver died before logging it: the
    # restart re-runs batch 2 with the same offsets and the same batch id.
    forget_commit(checkpoint, 2)
    replay = run_available_now(spark, conn, checkpoint, source, {"stream": "dst"})
    replayed = [p for p in replay.recentProgress if p["batchId"] == 2 and p["numInputRows"]]
    assert replayed and replayed[0]["numInputRows"] == 10  # the batch really ran again
    assert r.xlen("dst") == 30
    assert copied(r, "dst") == Counter({("src", str(i)): 1 for i in range(30)})


def test_replay_without_idempotence_duplicates(
    spark: Any, conn: dict[str, str], r: redis.Redis, checkpoint: str
) -> None:
    """The control for the test above: with idempotent=false the replay writes again."""
    add_entries(r, "src", 20)
    source = {"streams": "src", "startingOffsets": "earliest", "maxRecordsPerBatch": 10}
    sink = {"stream": "dup", "idempotent": "false"}
    run_available_now(spark, conn, checkpoint, source, sink)
    forget_commit(checkpoint, 1)
    run_available_now(spark, conn, checkpoint, source, sink)
    assert r.xlen("dup") == 30
    assert not r.keys("dup:xstream-batch:*")
