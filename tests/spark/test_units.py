"""Connector pieces that need neither a JVM nor a server: IDs, planning, conversion."""

from __future__ import annotations

import datetime as dt
import decimal
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from pyspark.sql.types import (  # noqa: E402
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark_connector import connect, ids  # noqa: E402
from spark_connector.convert import DEFAULT_SCHEMA, BatchBuilder  # noqa: E402
from spark_connector.options import (  # noqa: E402
    ConnOptions,
    OptionError,
    ReadOptions,
    WriteOptions,
)
from spark_connector.planning import (  # noqa: E402
    Fetched,
    Position,
    RangeSpec,
    plan_end,
    plan_ranges,
)
from spark_connector.range_read import gap_loss  # noqa: E402
from spark_connector.readers import partition_link  # noqa: E402
from spark_connector.streams import StreamInfo, parse_xinfo_stream  # noqa: E402
from spark_connector.writer import RowLayout  # noqa: E402

META = frozenset(("stream", "id", "ts", "fields"))

# -- IDs ---------------------------------------------------------------------------------


def test_parse_and_format_ids() -> None:
    assert ids.parse_id("5-3") == (5, 3)
    assert ids.parse_id(b"7") == (7, 0)
    assert ids.normalize("12") == "12-0"
    for bad in ("", "-", "1-", "-1", "a-1", "1-b", "1-+2", "+1-2", str(1 << 64)):
        with pytest.raises(ValueError):
            ids.parse_id(bad)


def test_successor_and_predecessor_carry_across_milliseconds() -> None:
    assert ids.successor("5-3") == "5-4"
    assert ids.successor(f"5-{ids.MAX_U64}") == "6-0"
    assert ids.successor(f"{ids.MAX_U64}-{ids.MAX_U64}") is None
    assert ids.predecessor("6-0") == f"5-{ids.MAX_U64}"
    assert ids.predecessor("5-4") == "5-3"
    assert ids.predecessor("0-0") == "0-0"


id_st = st.tuples(st.integers(0, 10**6), st.integers(0, 5)).map(ids.format_id)


@settings(max_examples=300, deadline=None)
@given(a=id_st, b=id_st, parts=st.integers(1, 9), first=st.one_of(st.none(), id_st))
def test_split_range_partitions_the_range_in_order(
    a: str, b: str, parts: int, first: str | None
) -> None:
    lo, hi = sorted((a, b), key=ids.parse_id)
    pieces = ids.split_range(lo, hi, parts, first)
    if lo == hi:
        assert pieces == []
        return
    assert 1 <= len(pieces) <= parts
    assert pieces[0][0] == lo and pieces[-1][1] == hi
    for (_, prev_hi), (next_lo, _) in zip(pieces, pieces[1:], strict=False):
        assert prev_hi == next_lo  # adjacent: every ID falls in exactly one piece
    for sub_lo, sub_hi in pieces:
        assert ids.parse_id(sub_lo) < ids.parse_id(sub_hi)
    assert ids.split_range(lo, hi, parts, first) == pieces  # deterministic


def test_split_range_cuts_on_whole_milliseconds() -> None:
    pieces = ids.split_range("999-5", "1009-0", 2, first="1000-0")
    assert pieces == [("999-5", f"1004-{ids.MAX_U64}"), (f"1004-{ids.MAX_U64}", "1009-0")]


def test_plan_ranges_skips_empty_ranges() -> None:
    specs = plan_ranges({"a": "0-0", "b": "5-0"}, {"a": "100-0", "b": "5-0"}, 3)
    assert [(s.stream, s.lo) for s in specs][0] == ("a", "0-0")
    assert {s.stream for s in specs} == {"a"} and specs[-1].hi == "100-0"


# -- admission control ----------------------------------------------------------------


class FakeStreams:
    """In-memory streams for plan_end: a sorted list of IDs per key."""

    def __init__(self, contents: dict[str, list[str]]) -> None:
        self.contents = contents
        self.calls = 0

    def fetch(self, requests: list[tuple[str, str, int]], caps: dict[str, str]) -> list[Fetched]:
        self.calls += 1
        out = []
        for key, pos, count in requests:
            after = [
                i
                for i in self.contents[key]
                if ids.parse_id(pos) < ids.parse_id(i) <= ids.parse_id(caps[key])
            ]
            out.append(Fetched(after[:count], len(after) < count or len(after) == 0))
        return out


def _ids(n: int, ms0: int = 1) -> list[str]:
    return [f"{ms0 + i}-0" for i in range(n)]


def test_plan_end_shares_the_limit_and_gives_back_unused_budget() -> None:
    fake = FakeStreams({"a": _ids(100), "b": _ids(3), "c": _ids(100)})
    start = dict.fromkeys("abc", "0-0")
    caps = {"a": "100-0", "b": "3-0", "c": "100-0"}
    end = plan_end(start, caps, 30, fake.fetch)
    taken = {k: len([i for i in fake.contents[k] if ids.parse_id(i) <= ids.parse_id(v)])
             for k, v in end.items()}
    assert sum(taken.values()) == 30
    assert taken["b"] == 3 and end["b"] == "3-0"
    assert abs(taken["a"] - taken["c"]) <= 1


def test_plan_end_respects_caps_and_limit_smaller_than_stream_count() -> None:
    fake = FakeStreams({"a": _ids(10), "b": _ids(10, ms0=50)})
    start = {"a": "0-0", "b": "49-0"}
    end = plan_end(start, {"a": "5-0", "b": "59-0"}, 1, fake.fetch)
    # one entry in total, from the stream that is furthest behind
    assert end == {"a": "1-0", "b": "49-0"}
    end_all = plan_end(start, {"a": "5-0", "b": "59-0"}, None, fake.fetch)
    assert end_all == {"a": "5-0", "b": "59-0"}


def test_plan_end_without_probe_jumps_to_caps() -> None:
    assert plan_end({"a": "1-0", "b": "9-0"}, {"a": "7-0", "b": "9-0"}, None, None) == {
        "a": "7-0",
        "b": "9-0",
    }


# -- data loss between batches ---------------------------------------------------------


def _info(first: str | None, added: int, length: int) -> StreamInfo:
    return StreamInfo(length=length, first_id=first, last_generated_id="100-0", entries_added=added)


def test_gap_loss_with_a_remembered_next_entry() -> None:
    seen = Position("10-0", next_id="11-0")
    assert gap_loss(seen, _info("11-0", 50, 40)) is None  # still there
    assert gap_loss(seen, _info("5-0", 50, 40)) is None  # XDEL'd, not trimmed
    assert "11-0" in (gap_loss(seen, _info("12-0", 50, 40)) or "")
    assert gap_loss(seen, None) is not None  # the whole stream is gone
    assert gap_loss(Position("10-0"), _info("12-0", 50, 40)) is None  # nothing known


def test_gap_loss_with_the_entries_added_counter() -> None:
    seen = Position("10-0", entries_added=20)  # the batch read up to the tail at 20 added
    assert gap_loss(seen, _info("11-0", 25, 5)) is None  # 5 new, 5 present
    assert gap_loss(seen, _info("3-0", 25, 9)) is None  # head behind the position
    assert "2 entries" in (gap_loss(seen, _info("14-0", 25, 3)) or "")
    assert gap_loss(seen, _info(None, 25, 0)) is not None  # all trimmed


def test_position_json_round_trip() -> None:
    for pos in (Position("5-1"), Position("5-1", next_id="6-0"), Position("5-1", None, 9)):
        assert Position.from_json(pos.to_json()) == pos
    assert Position.from_json("7") == Position("7-0")
    with pytest.raises(ValueError):
        Position.from_json({"nope": 1})


def test_parse_xinfo_stream_flat_reply() -> None:
    reply = [b"length", 2, b"last-generated-id", b"9-0", b"entries-added", 7,
             b"first-entry", [b"4-0", [b"a", b"1"]], b"last-entry", [b"9-0", [b"a", b"2"]]]
    assert parse_xinfo_stream(reply) == StreamInfo(2, "4-0", "9-0", 7)


# -- options -----------------------------------------------------------------------------


def test_read_options_defaults_and_errors() -> None:
    batch = ReadOptions.parse({"streams": "a, b", "PORT": "7000"}, streaming=False)
    assert batch.streams == ("a", "b") and batch.conn.port == 7000
    assert batch.starting_offsets == "earliest" and batch.ending_offsets == "latest"
    assert batch.conn.unix_path is None
    local = ReadOptions.parse({"streams": "a", "unixSocket": "/run/x.sock"}, streaming=False)
    assert local.conn.unix_path == "/run/x.sock"
    stream = ReadOptions.parse({"streams": "a"}, streaming=True)
    assert stream.starting_offsets == "latest" and stream.fail_on_data_loss
    from_json = ReadOptions.parse({"startingOffsets": '{"x": "5", "y": "$"}'}, streaming=True)
    assert from_json.streams == ("x", "y")
    for bad in (
        {},
        {"streams": "a,a"},
        {"streams": "a", "startingOffsets": "nope"},
        {"streams": "a", "startingOffsets": '{"b": "1-0"}'},
        {"streams": "a", "startingOffsets": '{"a": "x-1"}'},
        {"streams": "a", "maxRecordsPerBatch": "0"},
        {"streams": "a", "consumer": "c"},
        {"streams": "a", "failOnDataLoss": "maybe"},
    ):
        with pytest.raises(OptionError):
            ReadOptions.parse(bad, streaming=True)
    with pytest.raises(OptionError):
        ReadOptions.parse({"streams": "a", "group": "g"}, streaming=False)


def test_write_options_trim_arguments() -> None:
    assert WriteOptions.parse({"maxlen": "10"}, streaming=False).trim_args() == ["MAXLEN", "~", 10]
    exact = WriteOptions.parse({"minid": "5", "approximate": "false"}, streaming=True)
    assert exact.trim_args() == ["MINID", "5-0"] and exact.idempotent
    with pytest.raises(OptionError):
        WriteOptions.parse({"maxlen": "1", "minid": "2-0"}, streaming=False)


def test_sentinel_options() -> None:
    """sentinels/sentinelMaster name the primary; retries are on by default with them."""
    opts = ReadOptions.parse(
        {"streams": "a", "Sentinels": "s1:26380, [::1]:5000,s3", "sentinelMaster": "main",
         "sentinelUsername": "watcher", "sentinelPassword": "pw", "password": "data-pw"},
        streaming=True,
    )
    conn = opts.conn
    assert conn.sentinels == (("s1", 26380), ("::1", 5000), ("s3", 26379))
    assert (conn.sentinel_master, conn.sentinel_username, conn.sentinel_password) == (
        "main", "watcher", "pw")
    assert conn.password == "data-pw" and conn.retry_timeout == 60
    assert ConnOptions.parse({"host": "h"}).retry_timeout == 0  # no retries without Sentinel
    assert ConnOptions.parse({"host": "h", "retryTimeout": "2.5"}).retry_timeout == 2.5
    assert ConnOptions.parse({"sentinels": "s", "sentinelMaster": "m",
                              "retryTimeout": "0"}).retry_timeout == 0
    assert pickle.loads(pickle.dumps(opts)) == opts
    errors = {
        "needs option sentinelMaster": {"sentinels": "s1:1"},
        "sentinelMaster needs option sentinels": {"sentinelMaster": "m"},
        "sentinelPassword needs option sentinels": {"sentinelPassword": "pw"},
        "do not set host, port": {"sentinels": "s1", "sentinelMaster": "m", "host": "h",
                                  "port": "1"},
        "bad port": {"sentinels": "s1:x", "sentinelMaster": "m"},
        "write an IPv6 address as": {"sentinels": "::1:5", "sentinelMaster": "m"},
        "sentinels is empty": {"sentinels": " , ", "sentinelMaster": "m"},
        "bad address": {"sentinels": "s1:70000", "sentinelMaster": "m"},
        "retryTimeout must be >= 0": {"retryTimeout": "-1"},
        "retryTimeout must be a number": {"retryTimeout": "soon"},
    }
    for message, bad in errors.items():
        with pytest.raises(OptionError, match=message):
            ConnOptions.parse(bad)


def test_read_from_options() -> None:
    sentinel = {"streams": "a", "sentinels": "s1", "sentinelMaster": "m"}
    assert ReadOptions.parse(sentinel, streaming=False).read_from == "primary"
    for spelled, canonical in (("replica", "replica"), ("PreferReplica", "preferReplica"),
                             ("PRIMARY", "primary")):
        opts = ReadOptions.parse({**sentinel, "readFrom": spelled}, streaming=False)
        assert opts.read_from == canonical
    explicit = ReadOptions.parse(
        {"streams": "a", "readFrom": "replica", "replicas": "r1:7001,r2",
         "replicaWaitTimeout": "0.5"}, streaming=True)
    assert explicit.replicas == (("r1", 7001), ("r2", 6379))
    assert explicit.replica_wait_timeout == 0.5
    errors = {
        "readFrom must be primary, replica or preferReplica": {**sentinel, "readFrom": "any"},
        "needs replicas to read from": {"streams": "a", "readFrom": "replica"},
        "only used with readFrom": {"streams": "a", "replicas": "r1"},
        "sentinels and replicas are exclusive": {**sentinel, "readFrom": "replica",
                                                 "replicas": "r1"},
        "readFrom must be primary with option group": {**sentinel, "readFrom": "replica",
                                                       "group": "g"},
        "replicaWaitTimeout must be >= 0": {**sentinel, "replicaWaitTimeout": "-2"},
        "waitReplicas is for writes": {**sentinel, "waitReplicas": "1"},
    }
    for message, bad in errors.items():
        with pytest.raises(OptionError, match=message):
            ReadOptions.parse(bad, streaming=True)


def test_write_options_for_replication() -> None:
    wopts = WriteOptions.parse({"stream": "s", "waitReplicas": "2", "waitTimeout": "250",
                                "readFrom": "primary"}, streaming=True)
    assert (wopts.wait_replicas, wopts.wait_timeout_ms) == (2, 250)
    plain = WriteOptions.parse({"stream": "s"}, streaming=True)
    assert (plain.wait_replicas, plain.wait_timeout_ms) == (0, 5000)
    errors = {
        "readFrom is for reads": {"readFrom": "replica"},
        "replicas is for reads": {"replicas": "r1"},
        "waitTimeout must be >= 1": {"waitTimeout": "0"},
        "waitReplicas must be an integer": {"waitReplicas": "all"},
    }
    for message, bad in errors.items():
        with pytest.raises(OptionError, match=message):
            WriteOptions.parse({"stream": "s", **bad}, streaming=True)


def test_range_specs_and_replica_links_pickle_as_plain_data() -> None:
    """What executors get: ranges carry the ID a replica must reach; links hold options."""
    spec = RangeSpec("s", "1-0", "9-0", expect="2-0", sync="8-0")
    assert pickle.loads(pickle.dumps(spec)) == spec
    ropts = ReadOptions.parse({"streams": "s", "readFrom": "replica", "replicas": "r1"},
                              streaming=False)
    link = partition_link(ropts, spec)
    assert isinstance(link, connect.Replica) and link.sync == "8-0"
    assert isinstance(partition_link(ropts, RangeSpec("s", "1-0", "9-0")), connect.Primary)
    primary = ReadOptions.parse({"streams": "s"}, streaming=False)
    assert isinstance(partition_link(primary, spec), connect.Primary)
    # partitions start at different replicas
    seeds = {partition_link(ropts, RangeSpec("s", f"{i}-0", "99-0", sync="9-0")).seed % 3
             for i in range(30)}
    assert seeds == {0, 1, 2}


# -- conversion --------------------------------------------------------------------------


ENTRIES = [
    [b"1700000000123-0", [b"n", b"7", b"price", b"2.5", b"when", b"2024-01-02T03:04:05Z"]],
    [b"1700000000124-1", [b"n", b"oops", b"day", b"2024-02-29", b"bad\xff", b"x"]],
]


def test_default_schema_batch() -> None:
    batch = BatchBuilder(DEFAULT_SCHEMA, META).build("orders", ENTRIES)
    rows = batch.to_pylist()
    assert rows[0]["stream"] == "orders" and rows[1]["id"] == "1700000000124-1"
    assert rows[0]["ts"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.UTC)
    assert dict(rows[0]["fields"]) == {"n": "7", "price": "2.5", "when": "2024-01-02T03:04:05Z"}
    assert dict(rows[1]["fields"])["bad\ufffd"] == "x"  # invalid UTF-8 is replaced


def test_user_schema_casts_fields_and_nulls_missing_or_bad_values() -> None:
    schema = StructType(
        [
            StructField("id", StringType()),
            StructField("ts", LongType()),
            StructField("n", IntegerType()),
            StructField("price", DecimalType(10, 2)),
            StructField("when", TimestampType()),
            StructField("day", DateType()),
            StructField("absent", DoubleType()),
        ]
    )
    rows = BatchBuilder(schema, META).build("s", ENTRIES).to_pylist()
    assert rows[0]["ts"] == 1700000000123
    assert rows[0]["n"] == 7 and rows[1]["n"] is None
    assert rows[0]["price"] == decimal.Decimal("2.50")
    assert rows[0]["when"] == dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    assert rows[1]["day"] == dt.date(2024, 2, 29)
    assert rows[0]["absent"] is None


def test_metadata_columns_can_be_turned_into_fields() -> None:
    schema = StructType([StructField("id", StringType()), StructField("n", StringType())])
    rows = BatchBuilder(schema, frozenset()).build("s", [[b"1-0", [b"id", b"A", b"n", b"1"]]])
    assert rows.to_pylist() == [{"id": "A", "n": "1"}]
    with pytest.raises(TypeError):
        BatchBuilder(StructType([StructField("fields", StringType())]), META)
    with pytest.raises(TypeError):
        BatchBuilder(StructType([StructField("x", MapType(StringType(), IntegerType()))]), META)


# -- write layout ------------------------------------------------------------------------


def test_row_layout_turns_columns_into_fields() -> None:
    schema = StructType(
        [
            StructField("stream", StringType()),
            StructField("eid", StringType()),
            StructField("n", IntegerType()),
            StructField("extra", MapType(StringType(), StringType())),
            StructField("skip", StringType()),
            StructField("none", StringType()),
        ]
    )
    wopts = WriteOptions.parse({"idColumn": "eid", "dropColumns": "skip"}, streaming=False)
    layout = RowLayout(schema, wopts)
    row = ("out", "5-1", 3, {"k": "v", "z": None}, "dropped", None)
    assert layout.entry(row) == ("out", "5-1", ["n", "3", "k", "v"])
    assert layout.entry(("out", None, None, None, "x", None)) is None
    with pytest.raises(OptionError):
        RowLayout(StructType([StructField("n", IntegerType())]), wopts)
