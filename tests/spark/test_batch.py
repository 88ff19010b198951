"""Batch reads and writes through a real local SparkSession and a real server."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from tests.spark.util import add_entries, stream_values

pytestmark = pytest.mark.spark


def _read(spark: Any, conn: dict[str, str], **options: Any) -> Any:
    reader = spark.read.format("xstream").options(**conn)
    schema = options.pop("schema", None)
    if schema is not None:
        reader = reader.schema(schema)
    return reader.options(**{k: str(v) for k, v in options.items()}).load()


def test_round_trip_write_then_read(spark: Any, conn: dict[str, str], r: redis.Redis) -> None:
    rows = [(f"user{i % 3}", i, float(i) / 2) for i in range(40)]
    df = spark.createDataFrame(rows, "user string, n int, amount double").repartition(2)
    df.write.format("xstream").options(**conn).option("stream", "events").mode("append").save()
    assert r.xlen("events") == 40

    back = _read(spark, conn, streams="events")
    assert back.columns == ["stream", "id", "ts", "fields"]
    got = back.collect()
    assert {row.stream for row in got} == {"events"}
    assert sorted((row.fields["user"], int(row.fields["n"])) for row in got) == sorted(
        (u, n) for u, n, _ in rows
    )
    ids_in_order = [row.id for row in got]
    assert ids_in_order == [i.decode() for i, _ in r.xrange("events")]
    for row in got:
        assert int(row.ts.timestamp() * 1000) == int(row.id.split("-")[0])

    typed = _read(
        spark, conn, streams="events", schema="id string, user string, n long, amount double"
    )
    assert sorted(tuple(x) for x in typed.select("user", "n", "amount").collect()) == sorted(rows)


def test_partitions_per_stream_reads_ordered_ranges(
    spark: Any, conn: dict[str, str], r: redis.Redis
) -> None:
    # entries spread over distinct milliseconds so the time split has room to cut
    for i in range(60):
        r.xadd("a", {"n": str(i)}, id=f"{1000 + i * 10}-0")
    add_entries(r, "b", 25)
    df = _read(spark, conn, streams="a,b", partitionsPerStream=4, readCount=7)
    assert df.rdd.getNumPartitions() >= 5  # 4 for a, at least 1 for b
    rows = df.collect()
    for key in ("a", "b"):
        got = [row.id for row in rows if row.stream == key]
        assert got == [i.decode() for i, _ in r.xrange(key)]  # all of them, in stream order
    per_partition = df.rdd.glom().map(len).collect()
    assert sum(per_partition) == 85 and max(per_partition) < 60


def test_starting_and_ending_offsets(spark: Any, conn: dict[str, str], r: redis.Redis) -> None:
    ids = add_entries(r, "s", 10)
    add_entries(r, "t", 3)
    df = _read(
        spark,
        conn,
        streams="s,t",
        startingOffsets=f'{{"s": "{ids[2]}", "t": "latest"}}',
        endingOffsets=f'{{"s": "{ids[6]}"}}',
    )
    got = [(row.stream, row.fields["n"]) for row in df.collect()]
    # s: (ids[2], ids[6]] -> n = 3..6; t starts at latest so nothing, and ends at t's tail
    assert got == [("s", "3"), ("s", "4"), ("s", "5"), ("s", "6")]
    assert _read(spark, conn, streams="nosuchstream").count() == 0


def test_user_schema_with_missing_and_bad_fields(
    spark: Any, conn: dict[str, str], r: redis.Redis
) -> None:
    r.xadd("typed", {"qty": "3", "price": "9.5", "day": "2024-05-01"})
    r.xadd("typed", {"qty": "many", "note": "x"})
    df = _read(spark, conn, streams="typed", schema="qty int, price double, day date, note string")
    got = [tuple(row) for row in df.collect()]
    assert got[0][:2] == (3, 9.5) and str(got[0][2]) == "2024-05-01" and got[0][3] is None
    assert got[1] == (None, None, None, "x")


def test_write_stream_column_explicit_ids_and_trimming(
    spark: Any, conn: dict[str, str], r: redis.Redis
) -> None:
    rows = [("left" if i % 2 else "right", f"{100 + i}-1", str(i)) for i in range(10)]
    df = spark.createDataFrame(rows, "target string, eid string, v string").coalesce(1)
    (
        df.write.format("xstream")
        .options(**conn)
        .option("streamColumn", "target")
        .option("idColumn", "eid")
        .mode("append")
        .save()
    )
    assert [i.decode() for i, _ in r.xrange("left")] == [f"{100 + i}-1" for i in range(1, 10, 2)]
    assert stream_values(r, "right", "v") == ["0", "2", "4", "6", "8"]
    assert set(r.xrange("right")[0][1]) == {b"v"}  # stream and id columns are not fields

    many = spark.range(500).selectExpr("cast(id as string) as v").coalesce(1)
    (
        many.write.format("xstream")
        .options(**conn)
        .option("stream", "capped")
        .option("maxlen", "50")
        .option("approximate", "false")
        .mode("append")
        .save()
    )
    assert r.xlen("capped") == 50
    assert stream_values(r, "capped", "v")[-1] == "499"


def test_write_refuses_ids_that_go_backwards(
    spark: Any, conn: dict[str, str], r: redis.Redis
) -> None:
    r.xadd("mono", {"v": "x"}, id="500-0")
    df = spark.createDataFrame([("100-0", "a")], "eid string, v string")
    with pytest.raises(Exception, match="equal or smaller"):
        df.write.format("xstream").options(**conn).option("stream", "mono").option(
            "idColumn", "eid"
        ).mode("append").save()


def test_overwrite_replaces_the_stream(spark: Any, conn: dict[str, str], r: redis.Redis) -> None:
    add_entries(r, "ow", 5)
    df = spark.createDataFrame([("a",), ("b",)], "v string").coalesce(1)
    df.write.format("xstream").options(**conn).option("stream", "ow").mode("overwrite").save()
    assert stream_values(r, "ow", "v") == ["a", "b"]


def test_batch_read_of_a_trimmed_stream(spark: Any, conn: dict[str, str], r: redis.Redis) -> None:
    ids = add_entries(r, "trimmed", 20)
    r.xtrim("trimmed", minid=ids[10], approximate=False)
    # earliest starts at the current head; trimming that happened before the query was
    # planned leaves no trace Redis reports, so an older explicit start reads the same
    assert _read(spark, conn, streams="trimmed").count() == 10
    rows = _read(spark, conn, streams="trimmed", startingOffsets=f'{{"trimmed": "{ids[2]}"}}')
    assert [row.fields["n"] for row in rows.collect()] == [str(i) for i in range(10, 20)]


def test_idempotent_batch_write_retry_adds_nothing(
    spark: Any, conn: dict[str, str], r: redis.Redis
) -> None:
    """A retried task (same write id and partition) finds its marker and skips."""
    from pyspark.sql.types import StringType, StructField, StructType

    from spark_connector import connect
    from spark_connector import options as opt
    from spark_connector.writer import RowLayout, marker_key, write_once

    schema = StructType([StructField("v", StringType())])
    wopts = opt.WriteOptions.parse({**conn, "stream": "once"}, streaming=False)
    layout = RowLayout(schema, wopts)
    client = connect.client(wopts.conn)
    rows = [(str(i),) for i in range(7)]
    first = write_once(client, layout, wopts, iter(rows), "job1:0", 0)
    again = write_once(client, layout, wopts, iter(rows), "job1:0", 0)
    other = write_once(client, layout, wopts, iter(rows[:2]), "job1:1", 0)
    assert (first.written, again.written, other.written) == (7, 0, 2)
    assert again.skipped_streams == ["once"]
    assert r.xlen("once") == 9
    assert r.get(marker_key("once", "job1:0")) == b"0"
    assert r.get(marker_key("once", "job1:1")) == b"0"

    df = spark.createDataFrame(rows, "v string").repartition(2)
    df.write.format("xstream").options(**conn).option("stream", "once2").option(
        "idempotent", "true"
    ).mode("append").save()
    assert sorted(stream_values(r, "once2", "v")) == sorted(v for (v,) in rows)
    markers = r.keys("once2:xstream-batch:*")
    assert len(markers) == 2 and all(0 < r.ttl(key) <= 86_400 for key in markers)


def test_write_and_read_through_a_unix_socket(spark: Any) -> None:
    """unixSocket connects the source and the sink to a server that has no TCP port."""
    import shutil
    import tempfile

    from tests.helpers import TARGET, ServerProcess

    sock_dir = tempfile.mkdtemp(prefix="xs-")
    path = f"{sock_dir}/xs.sock"
    proc = ServerProcess(TARGET, extra_args=["--appendonly", "no"], unix_socket=path,
                         tcp=False).start()
    try:
        conn = {"unixSocket": path}
        rows = [(f"v{i}",) for i in range(12)]
        df = spark.createDataFrame(rows, "v string").repartition(2)
        df.write.format("xstream").options(**conn).option("stream", "local").mode(
            "append").save()
        r = redis.Redis(unix_socket_path=path)
        assert r.xlen("local") == 12
        back = _read(spark, conn, streams="local").collect()
        assert sorted(row.fields["v"] for row in back) == sorted(v for (v,) in rows)
        r.close()
    finally:
        proc.stop()
        shutil.rmtree(sock_dir, ignore_errors=True)


def test_pipelined_write_keeps_two_chunks_on_the_wire(
    conn: dict[str, str], r: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next chunk is sent before the replies to the one before are read; after a lost
    connection the chunks not yet confirmed are sent again (at-least-once)."""
    from pyspark.sql.types import StringType, StructField, StructType

    from spark_connector import connect, wire
    from spark_connector import options as opt
    from spark_connector.writer import RowLayout, write_pipelined

    wopts = opt.WriteOptions.parse({**conn, "stream": "piped", "batchSize": "3"},
                                   streaming=False)
    layout = RowLayout(StructType([StructField("v", StringType())]), wopts)
    rows = [(str(i),) for i in range(7)]  # chunks of 3, 3 and 1
    events: list[str] = []
    send, read = wire.send, wire.read
    lose_read: list[int] = []  # the read (by number) that finds the connection gone

    def logged_send(c: Any, commands: Any) -> None:
        events.append(f"send {len(commands)}")
        send(c, commands)

    def logged_read(c: Any, count: int) -> list[Any]:
        events.append(f"read {count}")
        if lose_read and len(events) == lose_read[0]:
            raise redis.ConnectionError("lost")
        return read(c, count)

    monkeypatch.setattr(wire, "send", logged_send)
    monkeypatch.setattr(wire, "read", logged_read)
    done = write_pipelined(connect.client(wopts.conn), layout, wopts, iter(rows))
    assert done.written == 7
    assert events == ["send 3", "send 3", "read 3", "send 1", "read 3", "read 1"]
    assert stream_values(r, "piped", "v") == [v for (v,) in rows]

    class RetryOnce:
        def run(self, fn: Any, what: str) -> Any:
            try:
                return fn(connect.client(wopts.conn))
            except redis.ConnectionError:
                return fn(connect.client(wopts.conn))

    r.delete("piped")
    events.clear()
    lose_read.append(5)  # the replies to the second chunk: it and the third go again
    done = write_pipelined(RetryOnce(), layout, wopts, iter(rows))  # type: ignore[arg-type]
    assert done.written == 7
    assert events == ["send 3", "send 3", "read 3", "send 1", "read 3",
                      "send 3", "send 1", "read 3", "read 1"]
    assert stream_values(r, "piped", "v") == ["0", "1", "2", "3", "4", "5", "6",
                                              "3", "4", "5", "6"]
