"""Spark jobs through Sentinel: a streaming copy that keeps running while the primary is
SIGKILLed and Sentinel promotes the replica, and batch and streaming reads served by the
replica."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel

from tests.integration.replication_support import wait_caught_up
from tests.spark.sentinel_support import MASTER_NAME, SentinelSetup
from tests.spark.util import wait_for

pytestmark = pytest.mark.spark


@pytest.fixture
def watched() -> Iterator[SentinelSetup]:
    setup = SentinelSetup()
    yield setup
    setup.stop()


class Feeder(threading.Thread):
    """Adds ``{"n": i}`` to ``src`` through Sentinel, i = 0, 1, 2, ..., about 40 a second.
    A number whose XADD failed is not tried again, so each is in the stream at most once."""

    def __init__(self, setup: SentinelSetup) -> None:
        super().__init__(daemon=True)
        assert setup.sentinel is not None
        watcher = Sentinel([(setup.sentinel.host, setup.sentinel.port)],
                           sentinel_kwargs={"socket_timeout": 2})
        self.client = watcher.master_for(MASTER_NAME, socket_timeout=2,
                                         retry=Retry(NoBackoff(), 0))
        self.acked: list[tuple[int, float]] = []  # (n, when)
        self.failed = 0
        self.sent = 0  # numbers tried
        self.halt = threading.Event()

    def run(self) -> None:
        n = 0
        while not self.halt.is_set():
            try:
                self.client.xadd("src", {"n": str(n)})
                self.acked.append((n, time.monotonic()))
            except redis.RedisError:
                self.failed += 1
                time.sleep(0.1)
            n += 1
            self.sent = n
            time.sleep(0.025)

    def stop(self) -> None:
        self.halt.set()
        self.join(30)
        self.client.close()


def _numbers(r: redis.Redis, key: str) -> Counter[int]:
    return Counter(int(fields[b"n"]) for _id, fields in r.xrange(key))


def test_a_streaming_copy_keeps_running_through_a_failover(
    spark: Any, watched: SentinelSetup, checkpoint: str
) -> None:
    """src -> dst through Sentinel while src is being written. The primary is SIGKILLed;
    Sentinel promotes the replica; the old primary restarts and Sentinel makes it a replica
    of the new one. The query never fails, and in the end every entry src holds is in dst
    exactly once, including those written after the failover. (The sink WAITs for one
    replica, so no batch it completed is lost with the old primary; entries the old
    primary never passed on may have been copied before it died, so dst may also hold
    numbers that src lost, but never one twice.)"""
    via = watched.options()
    feeder = Feeder(watched)
    feeder.start()
    query = None
    try:
        source = (
            spark.readStream.format("xstream").options(**via)
            .option("streams", "src").option("startingOffsets", "earliest")
            .option("retryTimeout", "150").load()
        )
        query = (
            source.writeStream.format("xstream").options(**via)
            .option("stream", "dst").option("dropColumns", "id,ts")
            .option("waitReplicas", "1").option("waitTimeout", "1000")
            .option("retryTimeout", "150")
            .option("checkpointLocation", checkpoint)
            .trigger(processingTime="300 milliseconds")
            .start()
        )
        old = watched.primary.client()

        def busy() -> bool:  # a few batches done, so that the kill hits a running query
            progress = query.lastProgress
            return bool(progress) and progress["batchId"] >= 4 and old.xlen("dst") >= 60

        wait_for(busy, 120, "the copy to get going")

        watched.primary.stop(kill=True, cleanup=False)  # SIGKILL
        watched.wait_promoted(watched.replica)
        promoted_at = time.monotonic()
        watched.primary.start()  # comes back empty, as a primary, until Sentinel steps in
        watched.wait_replica_of(watched.primary, watched.replica, timeout=90)
        time.sleep(2)  # more entries through the new primary
        feeder.stop()

        after = [n for n, when in feeder.acked if when > promoted_at]
        assert len(after) >= 10, "the feeder wrote through the new primary"
        new = watched.replica.client()
        src = _numbers(new, "src")
        assert max(src.values()) == 1

        def copied_all() -> bool:
            if query.exception() is not None:
                raise AssertionError(f"the query failed: {query.exception()}")
            dst = _numbers(new, "dst")
            return all(dst[n] >= 1 for n in src)

        wait_for(copied_all, 120, "every entry of src to be in dst")
        assert query.isActive and query.exception() is None
        dst = _numbers(new, "dst")
        assert max(dst.values()) == 1, "nothing was copied twice"
        assert set(after) <= set(dst)
        assert set(dst) <= set(range(feeder.sent))  # (only numbers the feeder sent)
    finally:
        if query is not None:
            query.stop()
        if feeder.is_alive():
            feeder.stop()


def test_reads_go_to_the_replica(spark: Any, watched: SentinelSetup, checkpoint: str) -> None:
    """A batch write through Sentinel, then a batch read with readFrom=replica: the
    replica's command statistics show the reads (XRANGE in MULTI/EXEC, two per chunk),
    while the primary only served the planning. A streaming read with readFrom=replica
    is served by the replica too."""
    via = watched.options()
    rows = [(str(i),) for i in range(600)]
    (spark.createDataFrame(rows, "n string").repartition(2).write.format("xstream")
     .options(**via).option("stream", "big").option("waitReplicas", "1")
     .mode("append").save())
    primary, replica = watched.primary.client(), watched.replica.client()
    assert primary.xlen("big") == 600
    wait_caught_up(watched.primary, watched.replica)
    for server in (primary, replica):
        server.config_resetstat()

    read = (
        spark.read.format("xstream").options(**via).option("streams", "big")
        .option("readFrom", "replica").option("readCount", "50")
        .option("partitionsPerStream", "2").load()
    )
    got = read.collect()
    assert sorted(int(row.fields["n"]) for row in got) == list(range(600))
    assert [row.id for row in got] == [i.decode() for i, _f in primary.xrange("big")]

    def xranges(server: redis.Redis) -> int:
        return server.info("commandstats").get("cmdstat_xrange", {}).get("calls", 0)

    assert xranges(replica) >= 2 * 600 // 50
    assert replica.info("commandstats").get("cmdstat_exec", {}).get("calls", 0) >= 600 // 50
    assert xranges(primary) <= 4  # planning: the first entry, each range's first entry

    for server in (primary, replica):
        server.config_resetstat()
    copy = (
        spark.readStream.format("xstream").options(**via).option("streams", "big")
        .option("startingOffsets", "earliest").option("readFrom", "replica")
        .option("readCount", "100").option("maxRecordsPerBatch", "300").load()
        .writeStream.format("xstream").options(**via).option("stream", "copy")
        .option("dropColumns", "id,ts").option("checkpointLocation", checkpoint)
        .trigger(availableNow=True).start()
    )
    copy.awaitTermination(180)
    assert copy.exception() is None
    assert sorted(int(f[b"n"]) for _id, f in primary.xrange("copy")) == list(range(600))
    assert xranges(replica) >= 2 * 600 // 100
    assert replica.info("commandstats").get("cmdstat_exec", {}).get("calls", 0) >= 600 // 100
