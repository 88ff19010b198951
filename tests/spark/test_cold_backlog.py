"""The connector reads a backlog whose older nodes are on disk (stream-hot-memory): a batch
read sees every entry in order, and a consumer-group read copies each one once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.helpers import TARGET, ServerProcess
from tests.spark.util import copied, run_available_now

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(TARGET == "redis", reason="an xstreamd option")]


@pytest.fixture
def cold_server(tmp_path: Path) -> Iterator[ServerProcess]:
    args = ["--stream-hot-memory", "32kb", "--stream-reply-cache-max-bytes", "0",
            "--appendonly", "no", "--save", ""]
    with ServerProcess(extra_args=args, workdir=str(tmp_path)) as proc:
        yield proc


def test_batch_and_group_reads_of_a_cold_backlog(spark: Any, cold_server: ServerProcess,
                                                 checkpoint: str) -> None:
    r = redis.Redis(port=cold_server.port)
    pipe = r.pipeline(transaction=False)
    for i in range(1, 20_001):
        pipe.xadd("backlog", {"n": str(i), "pad": "p" * 30}, id=f"{i}-0")
    pipe.execute()
    deadline = time.time() + 10
    while r.info("memory")["stream_cold_nodes"] < 100 and time.time() < deadline:
        time.sleep(0.05)
    assert r.info("memory")["stream_cold_nodes"] >= 100
    conn = {"host": cold_server.host, "port": str(cold_server.port)}
    rows = (spark.read.format("xstream").options(**conn).option("streams", "backlog")
            .option("partitionsPerStream", "3").load().select("id", "fields").collect())
    assert [row.id for row in rows] == [f"{i}-0" for i in range(1, 20_001)]
    assert all(row.fields["n"] == row.id[:-2] for row in rows)
    # Consumer-group mode (a streaming read) copies every entry once, nothing left pending.
    source = {"streams": "backlog", "group": "g", "startingOffsets": "earliest",
              "maxRecordsPerBatch": 5000}
    run_available_now(spark, conn, checkpoint, source, {"stream": "copy"})
    assert copied(r, "copy") == {("backlog", str(i)): 1 for i in range(1, 20_001)}
    assert int(r.xpending("backlog", "g")["pending"]) == 0
    assert r.info("memory")["stream_cold_reads"] > 0
