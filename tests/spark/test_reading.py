"""Reading, planning and consumer-group plumbing against a real server, without Spark."""

from __future__ import annotations

import pytest
import redis

from spark_connector import connect, planning, streams
from spark_connector import group as grp
from spark_connector import options as opt
from spark_connector.range_read import DataLossError, read_group, read_plain
from tests.helpers import ServerProcess
from tests.spark.util import add_entries


@pytest.fixture
def ropts(server: ServerProcess) -> opt.ReadOptions:
    return opt.ReadOptions.parse(
        {"host": server.host, "port": str(server.port), "streams": "s", "readCount": "4"},
        streaming=False,
    )


def _client(ropts: opt.ReadOptions) -> redis.Redis:
    return connect.client(ropts.conn)


def _spec(client: redis.Redis, key: str, lo: str, hi: str) -> planning.RangeSpec:
    return planning.with_expectations(client, [planning.RangeSpec(key, lo, hi)])[0]


def _flat(chunks: list[list[list[bytes]]]) -> list[str]:
    return [entry[1][1].decode() for chunk in chunks for entry in chunk]


def test_read_plain_returns_the_range_in_chunks(ropts: opt.ReadOptions, r: redis.Redis) -> None:
    ids = add_entries(r, "s", 10)
    client = _client(ropts)
    chunks = list(read_plain(client, _spec(client, "s", ids[1], ids[8]), ropts))
    assert [len(c) for c in chunks] == [4, 3]
    assert _flat(chunks) == [str(i) for i in range(2, 9)]


def test_trim_between_planning_and_reading_is_loss(ropts: opt.ReadOptions, r: redis.Redis) -> None:
    ids = add_entries(r, "s", 10)
    client = _client(ropts)
    spec = _spec(client, "s", "0-0", ids[-1])
    r.xtrim("s", minid=ids[3], approximate=False)
    with pytest.raises(DataLossError, match="trimmed"):
        list(read_plain(client, spec, ropts))
    lenient = opt.ReadOptions.parse(
        {"port": str(ropts.conn.port), "host": ropts.conn.host, "streams": "s",
         "failOnDataLoss": "false"}, streaming=False)
    assert _flat(list(read_plain(client, spec, lenient))) == [str(i) for i in range(3, 10)]


def test_trim_while_reading_is_loss_but_xdel_is_not(ropts: opt.ReadOptions, r: redis.Redis) -> None:
    ids = add_entries(r, "s", 12)
    client = _client(ropts)
    reading = read_plain(client, _spec(client, "s", "0-0", ids[-1]), ropts)
    assert _flat([next(reading)]) == ["0", "1", "2", "3"]
    r.xdel("s", ids[4])  # deliberate deletion right where the reader goes next
    assert _flat([next(reading)]) == ["5", "6", "7", "8"]
    r.xtrim("s", minid=ids[11], approximate=False)  # trims 9 and 10 unread
    with pytest.raises(DataLossError):
        next(reading)


def test_plan_end_with_xrange_probe(ropts: opt.ReadOptions, r: redis.Redis) -> None:
    a = add_entries(r, "a", 10)
    b = add_entries(r, "b", 2)
    client = _client(ropts)
    caps = streams.last_ids(client, ["a", "b"])
    peeks: dict[str, str | None] = {}
    end = planning.plan_end(
        {"a": "0-0", "b": "0-0"}, caps, 6, planning.xrange_fetch(client), peeks=peeks
    )
    assert end == {"a": a[3], "b": b[1]}  # b had 2, so a got the other 4
    assert peeks["a"] == a[4]


def test_resolve_start_and_end(ropts: opt.ReadOptions, r: redis.Redis) -> None:
    ids = add_entries(r, "s", 5)
    r.xtrim("s", minid=ids[2], approximate=False)
    client = _client(ropts)
    start = planning.resolve_start(client, "earliest", ["s", "missing"])
    assert start["missing"] == "0-0"
    assert planning.first_ids(client, start, {"s": ids[-1], "missing": "0-0"}) == {"s": ids[2]}
    latest = planning.resolve_start(client, "latest", ["s"])
    assert latest == {"s": ids[-1]}
    assert planning.resolve_end(client, "latest", {"s": ids[0]}) == {"s": ids[-1]}
    assert planning.resolve_end(client, f'{{"s": "{ids[1]}"}}', {"s": ids[3]}) == {"s": ids[3]}


def test_group_claim_read_and_ack(ropts: opt.ReadOptions, r: redis.Redis) -> None:
    ids = add_entries(r, "s", 6)
    client = _client(ropts)
    assert grp.ensure_group(client, "s", "g", "0") is True
    assert grp.ensure_group(client, "s", "g", "0") is False
    assert grp.initial_position(client, "s", "g", "c") == "0-0"
    # another consumer takes the first two entries; ours gets the rest
    r.xreadgroup("g", "other", {"s": ">"}, count=2)
    fetch = grp.claim_fetch(client, "g", "c")
    end = planning.plan_end({"s": "0-0"}, {"s": ids[-1]}, 3, fetch)
    assert end == {"s": ids[4]}
    gopts = opt.ReadOptions.parse(
        {"port": str(ropts.conn.port), "host": ropts.conn.host, "streams": "s", "group": "g",
         "consumer": "c"}, streaming=True)
    spec = planning.RangeSpec("s", "0-0", end["s"])
    assert _flat(list(read_group(client, spec, gopts))) == ["2", "3", "4"]
    # a restart without a checkpoint re-reads what c still holds
    assert grp.initial_position(client, "s", "g", "c") == planning.ids.predecessor(ids[2])
    r.xdel("s", ids[3])
    with pytest.raises(DataLossError, match="no longer exist"):
        list(read_group(client, spec, gopts))
    assert grp.ack_upto(client, "s", "g", "c", ids[3]) == 2
    assert [p["message_id"] for p in r.xpending_range("s", "g", "-", "+", 10, "c")] == [
        ids[4].encode()
    ]
    assert grp.group_last_delivered(client, "s", "g") == ids[4]


def test_readers_and_writers_pickle_without_connections(
    ropts: opt.ReadOptions, r: redis.Redis
) -> None:
    """What Spark ships to executors holds options only; connections open where used."""
    import pickle

    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    from pyspark.sql.types import StringType, StructField, StructType

    from spark_connector.convert import DEFAULT_SCHEMA, BatchBuilder
    from spark_connector.readers import XStreamStreamReader
    from spark_connector.writer import XStreamStreamWriter

    add_entries(r, "s", 3)
    sopts = opt.ReadOptions.parse(
        {"host": ropts.conn.host, "port": str(ropts.conn.port), "streams": "s"}, streaming=True
    )
    reader = XStreamStreamReader(sopts, BatchBuilder(DEFAULT_SCHEMA, sopts.metadata_columns))
    assert reader.initialOffset()["s"]["id"]  # opens the driver-side connection
    reader.builder.arrow_schema  # noqa: B018 - caches the Arrow schema
    assert reader._client is not None
    copy = pickle.loads(pickle.dumps(reader))
    assert copy._client is None and copy.builder._arrow is None
    wopts = opt.WriteOptions.parse({"port": str(ropts.conn.port), "stream": "x"}, streaming=True)
    writer = XStreamStreamWriter(StructType([StructField("v", StringType())]), wopts)
    assert b"socket" not in pickle.dumps(writer)
