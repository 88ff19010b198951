"""The example pipeline (examples/spark_pipeline.py): stream -> aggregate -> stream."""

from __future__ import annotations

import datetime as dt
import importlib.util
from collections import defaultdict
from typing import Any

import pytest
import redis

from tests.helpers import REPO_ROOT

pytestmark = pytest.mark.spark


def _example() -> Any:
    spec = importlib.util.spec_from_file_location(
        "spark_pipeline", REPO_ROOT / "examples" / "spark_pipeline.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pipeline_totals_match_the_orders(
    spark: Any, conn: dict[str, str], r: redis.Redis, checkpoint: str
) -> None:
    example = _example()
    example.generate_orders(conn["host"], int(conn["port"]), "orders", 300)
    query = example.build_query(spark, conn, "orders", "order_totals", checkpoint)
    query.awaitTermination(180)
    assert query.exception() is None

    expected: dict[tuple[str, str], list[float]] = defaultdict(list)
    for entry_id, fields in r.xrange("orders"):
        ms = int(entry_id.split(b"-")[0])
        start = dt.datetime.fromtimestamp(ms // 10_000 * 10, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
        expected[(fields[b"user"].decode(), start)].append(float(fields[b"amount"]))
    latest: dict[tuple[str, str], tuple[int, float]] = {}
    for _id, fields in r.xrange("order_totals"):  # in order: the newest entry wins
        key = (fields[b"user"].decode(), fields[b"window_start"].decode())
        latest[key] = (int(fields[b"orders"]), float(fields[b"total"]))
    assert set(latest) == set(expected)
    for key, amounts in expected.items():
        assert latest[key][0] == len(amounts)
        assert latest[key][1] == pytest.approx(sum(amounts), abs=0.01)
