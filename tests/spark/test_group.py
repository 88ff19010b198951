"""Consumer-group mode: XREADGROUP to claim, XACK once Spark is done, nothing left
pending, and entries a crashed run claimed are still processed."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from tests.spark.util import (
    add_entries,
    copied,
    input_rows,
    run_available_now,
    start_copy,
    wait_for,
)

pytestmark = pytest.mark.spark


def pending_count(r: redis.Redis, key: str, group: str) -> int:
    return int(r.xpending(key, group)["pending"])


def group_info(r: redis.Redis, key: str, group: str) -> dict[str, Any]:
    return next(g for g in r.xinfo_groups(key) if g["name"] in (group, group.encode()))


def test_group_mode_acks_everything_and_finishes_a_crashed_run(
    spark: Any, conn: dict[str, str], r: redis.Redis, checkpoint: str
) -> None:
    ids = add_entries(r, "gs", 20)
    source = {
        "streams": "gs",
        "group": "g",
        "consumer": "spark-1",
        "startingOffsets": "earliest",
        "maxRecordsPerBatch": 8,
    }
    first = run_available_now(spark, conn, checkpoint, source, {"stream": "gout"})
    assert sum(input_rows(first)) == 20 and max(input_rows(first)) <= 8
    assert copied(r, "gout") == {("gs", str(i)): 1 for i in range(20)}
    # the last batch is acknowledged too, although Spark never calls commit() for it
    assert pending_count(r, "gs", "g") == 0
    info = group_info(r, "gs", "g")
    assert info["last-delivered-id"].decode() == ids[-1] and info["lag"] == 0

    # A run that claimed entries and died before they reached a batch: they are pending
    # for our consumer beyond the checkpointed offset. Another consumer of the same group
    # takes some entries too; those are not ours to read.
    add_entries(r, "gs", 9, start=20)
    r.xreadgroup("g", "spark-1", {"gs": ">"}, count=4)
    r.xreadgroup("g", "someone-else", {"gs": ">"}, count=2)
    add_entries(r, "gs", 3, start=29)
    run_available_now(spark, conn, checkpoint, source, {"stream": "gout"})
    expected = {("gs", str(i)): 1 for i in range(32) if i not in (24, 25)}
    assert copied(r, "gout") == expected
    pending = r.xpending("gs", "g")
    assert pending["pending"] == 2
    assert [c["name"] for c in pending["consumers"]] in ([b"someone-else"], ["someone-else"])


def test_group_mode_processing_time_leaves_nothing_pending(
    spark: Any, conn: dict[str, str], r: redis.Redis, checkpoint: str
) -> None:
    source = {"streams": "live", "group": "g", "consumer": "c", "startingOffsets": "latest"}
    trigger = {"processingTime": "100 milliseconds"}
    query = start_copy(spark, conn, checkpoint, source, {"stream": "liveout"}, trigger)
    try:
        wait_for(lambda: query.lastProgress is not None, what="the first trigger")
        add_entries(r, "live", 15)
        wait_for(lambda: r.xlen("liveout") == 15, what="15 entries copied")
        # the next trigger after the last batch acknowledges it
        wait_for(lambda: pending_count(r, "live", "g") == 0, what="all entries acknowledged")
    finally:
        query.stop()
    assert copied(r, "liveout") == {("live", str(i)): 1 for i in range(15)}
