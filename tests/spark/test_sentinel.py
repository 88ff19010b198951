"""Finding the primary through Sentinel, reading from replicas, retrying across a failover
and waiting for replicas: the connector's connection layer against real xstreamd servers
and a real Sentinel, without Spark."""

from __future__ import annotations

import pickle
import threading
import time
from collections.abc import Iterator

import pytest
import redis

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from pyspark.sql.types import StringType, StructField, StructType  # noqa: E402

from spark_connector import connect  # noqa: E402
from spark_connector.convert import DEFAULT_SCHEMA, BatchBuilder  # noqa: E402
from spark_connector.options import ConnOptions, ReadOptions, WriteOptions  # noqa: E402
from spark_connector.planning import RangeSpec  # noqa: E402
from spark_connector.range_read import read_plain  # noqa: E402
from spark_connector.readers import XStreamBatchReader, XStreamStreamReader  # noqa: E402
from spark_connector.writer import (  # noqa: E402
    RowLayout,
    marker_key,
    write_once,
    write_pipelined,
)
from tests.helpers import ServerProcess, free_port  # noqa: E402
from tests.integration.replication_support import (  # noqa: E402
    start_replica,
    wait_caught_up,
    wait_for,
    wait_link_up,
)
from tests.spark.sentinel_support import SentinelSetup  # noqa: E402
from tests.spark.util import add_entries  # noqa: E402

FAST = ["--repl-diskless-sync-delay", "0", "--appendonly", "no", "--save", ""]


@pytest.fixture(autouse=True)
def _fresh_clients() -> Iterator[None]:
    connect.close_clients()
    yield
    connect.close_clients()


@pytest.fixture
def watched() -> Iterator[SentinelSetup]:
    setup = SentinelSetup()
    yield setup
    setup.stop()


@pytest.fixture
def pair() -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """A primary and a replica that has caught up, without Sentinel."""
    primary = ServerProcess("xstreamd", FAST).start()
    replica = start_replica("xstreamd", primary)
    wait_link_up(replica)
    wait_caught_up(primary, replica)
    yield primary, replica
    replica.stop(kill=True)  # (an xstreamd replica does not exit on SIGTERM)
    primary.stop()


def _raw(server: ServerProcess) -> redis.Redis:
    return redis.Redis(host=server.host, port=server.port, socket_timeout=20)


def _flat(chunks: list[list[list[bytes]]]) -> list[str]:
    return [entry[1][1].decode() for chunk in chunks for entry in chunk]


def _layout(wopts: WriteOptions) -> RowLayout:
    return RowLayout(StructType([StructField("v", StringType())]), wopts)


# -- through Sentinel ----------------------------------------------------------------------


def test_primary_and_replicas_are_found_through_sentinel(watched: SentinelSetup) -> None:
    ropts = ReadOptions.parse(
        {**watched.options(), "streams": "s", "readFrom": "replica"}, streaming=False
    )
    primary = connect.client(ropts.conn)
    last = primary.execute_command("XADD", "s", "*", "n", "0").decode()
    assert _raw(watched.primary).xlen("s") == 1  # it went to the primary
    assert connect.replica_addresses(ropts) == [("127.0.0.1", watched.replica.port)]
    wait_caught_up(watched.primary, watched.replica)
    link = connect.Replica(ropts, "s", last)
    spec = RangeSpec("s", "0-0", last, sync=last)
    assert _flat(list(read_plain(link, spec, ropts))) == ["0"]
    assert link.address == ("127.0.0.1", watched.replica.port) and link.primary is None


def test_an_operation_outlives_the_primary_being_killed(watched: SentinelSetup) -> None:
    """The primary is SIGKILLed; the same call finds the replica Sentinel promotes."""
    conn = ConnOptions.parse({**watched.options(), "retryTimeout": "90"})
    connect.call(conn, lambda c: c.execute_command("XADD", "s", "*", "n", "before"), "XADD")
    wait_caught_up(watched.primary, watched.replica)
    watched.primary.stop(kill=True, cleanup=False)
    started = time.monotonic()
    connect.call(conn, lambda c: c.execute_command("XADD", "s", "*", "n", "after"), "XADD")
    took = time.monotonic() - started
    watched.wait_promoted(watched.replica)
    values = [fields[b"n"] for _id, fields in _raw(watched.replica).xrange("s")]
    assert values == [b"before", b"after"]
    assert took < 90


def test_retrying_is_bounded_by_retry_timeout() -> None:
    """Nobody listens: with retryTimeout the call gives up after about that long, saying
    so; without it (the default without sentinels) the first error is raised as is."""
    dead = free_port()
    conn = ConnOptions.parse({"host": "127.0.0.1", "port": str(dead), "retryTimeout": "1.5"})
    started = time.monotonic()
    with pytest.raises(connect.PrimaryUnavailable, match=r"failed \d+ times in 1.5s"):
        connect.call(conn, lambda c: c.ping(), "PING")
    assert 1.5 <= time.monotonic() - started < 15
    plain = ConnOptions.parse({"host": "127.0.0.1", "port": str(dead)})
    assert plain.retry_timeout == 0
    with pytest.raises(redis.ConnectionError) as caught:
        connect.call(plain, lambda c: c.ping(), "PING")
    assert not isinstance(caught.value, connect.PrimaryUnavailable)


# -- replicas for reads --------------------------------------------------------------------


def _replica_opts(primary: ServerProcess, replicas: str, read_from: str,
                  wait: str) -> ReadOptions:
    return ReadOptions.parse(
        {"host": primary.host, "port": str(primary.port), "streams": "s", "readCount": "3",
         "readFrom": read_from, "replicas": replicas, "replicaWaitTimeout": wait},
        streaming=False,
    )


def test_a_lagging_replica_is_waited_for_then_left(
    pair: tuple[ServerProcess, ServerProcess],
) -> None:
    """The range was planned on the primary; a replica that has not got it yet is waited
    for (replicaWaitTimeout), then preferReplica reads the primary and replica fails; once
    the replica catches up it serves the range."""
    primary, replica = pair
    p, r = _raw(primary), _raw(replica)
    add_entries(p, "s", 4)
    wait_caught_up(primary, replica)
    # cut the replica off (it keeps its data and stays a replica), then write more
    assert r.execute_command("REPLICAOF", "127.0.0.1", free_port()) == b"OK"
    ids = add_entries(p, "s", 6, start=4)
    spec = RangeSpec("s", "0-0", ids[-1], sync=ids[-1])
    where = f"127.0.0.1:{replica.port}"

    strict = _replica_opts(primary, where, "replica", "1")
    started = time.monotonic()
    with pytest.raises(connect.ReplicaUnavailable, match="lagging: its stream ends at"):
        list(read_plain(connect.Replica(strict, "s", ids[-1]), spec, strict))
    assert time.monotonic() - started >= 1

    prefer = _replica_opts(primary, where, "preferReplica", "0.5")
    link = connect.Replica(prefer, "s", ids[-1])
    assert _flat(list(read_plain(link, spec, prefer))) == [str(i) for i in range(10)]
    assert link.primary is not None and link.address is None

    # the replica comes back while a partition waits for it
    patient = _replica_opts(primary, where, "replica", "60")
    link = connect.Replica(patient, "s", ids[-1])
    timer = threading.Timer(
        0.5, lambda: r.execute_command("REPLICAOF", primary.host, primary.port))
    timer.start()
    try:
        assert _flat(list(read_plain(link, spec, patient))) == [str(i) for i in range(10)]
    finally:
        timer.join()
    assert link.address == ("127.0.0.1", replica.port) and link.primary is None


def test_only_replicas_serve_replica_reads(pair: tuple[ServerProcess, ServerProcess]) -> None:
    primary, replica = pair
    ids = add_entries(_raw(primary), "s", 3)
    spec = RangeSpec("s", "0-0", ids[-1], sync=ids[-1])
    wait_caught_up(primary, replica)
    # a server that is a primary (listed by mistake, or promoted) is not read, nor one down
    listed = f"127.0.0.1:{primary.port},127.0.0.1:{free_port()},127.0.0.1:{replica.port}"
    for seed in range(3):
        ropts = _replica_opts(primary, listed, "replica", "5")
        link = connect.Replica(ropts, "s", ids[-1], seed)
        assert _flat(list(read_plain(link, spec, ropts))) == ["0", "1", "2"]
        assert link.address == ("127.0.0.1", replica.port)
    ropts = _replica_opts(primary, f"127.0.0.1:{primary.port}", "replica", "5")
    with pytest.raises(connect.ReplicaUnavailable, match=r"not a replica \(ROLE master\)"):
        list(read_plain(connect.Replica(ropts, "s", ids[-1]), spec, ropts))


# -- writes --------------------------------------------------------------------------------


def test_idempotent_writes_wait_for_replicas(pair: tuple[ServerProcess, ServerProcess]) -> None:
    primary, replica = pair
    base = {"host": primary.host, "port": str(primary.port), "stream": "w"}
    wopts = WriteOptions.parse({**base, "waitReplicas": "1"}, streaming=True)
    layout = _layout(wopts)
    rows = [(str(i),) for i in range(5)]
    link = connect.Primary(wopts.conn)
    first = write_once(link, layout, wopts, iter(rows), "q:0", 7, marker_ttl=100)
    assert first.written == 5
    # WAIT returned 1: the replica has the entries and the marker already
    assert _raw(replica).xlen("w") == 5
    assert _raw(replica).get(marker_key("w", "q:0")) == b"7"
    again = write_once(link, layout, wopts, iter(rows), "q:0", 7, marker_ttl=100)
    assert (again.written, again.skipped_streams) == (0, ["w"])
    assert 0 < _raw(primary).ttl(marker_key("w", "q:0")) <= 100  # rewritten with its TTL

    # more replicas than there are: written once, then reported (and retried if asked)
    short = WriteOptions.parse(
        {**base, "waitReplicas": "2", "waitTimeout": "100"}, streaming=True)
    with pytest.raises(connect.NotReplicated, match="acknowledged by 1 of 2 replicas"):
        write_once(connect.Primary(short.conn), layout, short, iter(rows), "q:1", 7)
    retried = WriteOptions.parse(
        {**base, "waitReplicas": "2", "waitTimeout": "100", "retryTimeout": "1"},
        streaming=True)
    with pytest.raises(connect.PrimaryUnavailable, match="NotReplicated"):
        write_once(connect.Primary(retried.conn), layout, retried, iter(rows), "q:1", 7)
    assert _raw(primary).xlen("w") == 10


def test_writes_to_a_demoted_primary_are_retried() -> None:
    """READONLY (the server became a replica) is retried like a lost connection, for the
    transaction of idempotent writes and for pipelined chunks; nothing is written twice."""
    with ServerProcess("xstreamd", FAST) as server, ServerProcess("xstreamd", FAST) as other:
        s = _raw(server)
        conn = {"host": server.host, "port": str(server.port), "stream": "w",
                "retryTimeout": "30"}
        for idempotent in (True, False):
            assert s.execute_command("REPLICAOF", other.host, other.port) == b"OK"
            wait_link_up(server)
            # (xstreamd starts refusing writes up to a second after REPLICAOF)
            wait_for(lambda: _refuses_writes(s), 10, "the replica to refuse writes")
            wopts = WriteOptions.parse({**conn, "batchSize": "2"}, streaming=idempotent)
            layout = _layout(wopts)
            timer = threading.Timer(1.0, lambda: s.execute_command("REPLICAOF", "NO", "ONE"))
            timer.start()
            started = time.monotonic()
            try:
                rows = iter([(f"{idempotent}-{i}",) for i in range(5)])
                link = connect.Primary(wopts.conn)
                if idempotent:
                    done = write_once(link, layout, wopts, rows, "q:0", 1)
                else:
                    done = write_pipelined(link, layout, wopts, rows)
                took = time.monotonic() - started
            finally:
                timer.join()
            assert done.written == 5
            assert took >= 1.0  # it waited for the promotion
            values = [f[b"v"].decode() for _id, f in s.xrange("w")]
            assert values == [f"{idempotent}-{i}" for i in range(5)]


def test_writes_refused_for_too_few_replicas_are_retried() -> None:
    """A primary with min-replicas-to-write (as a new primary right after a failover, whose
    replicas are not back yet) refuses writes with NOREPLICAS: retried until a replica is
    there, once."""
    guarded = [*FAST, "--min-replicas-to-write", "1", "--min-replicas-max-lag", "10"]
    with ServerProcess("xstreamd", guarded) as primary:
        p = _raw(primary)
        wait_for(lambda: _refuses_writes(p, redis.ResponseError), 10, "NOREPLICAS")
        conn = {"host": primary.host, "port": str(primary.port), "stream": "w",
                "retryTimeout": "60"}
        replica: list[ServerProcess] = []
        timer = threading.Timer(1.0, lambda: replica.append(start_replica("xstreamd", primary)))
        timer.start()
        try:
            wopts = WriteOptions.parse(conn, streaming=True)
            layout = _layout(wopts)
            link = connect.Primary(wopts.conn)
            once = write_once(link, layout, wopts, iter([("a",), ("b",)]), "q:0", 0)
            piped = write_pipelined(link, layout, wopts, iter([("c",)]))
        finally:
            timer.join()
            for started in replica:
                started.stop(kill=True)
        assert (once.written, piped.written) == (2, 1)
        assert [f[b"v"] for _id, f in p.xrange("w")] == [b"a", b"b", b"c"]


def _refuses_writes(r: redis.Redis, error: type[Exception] = redis.ReadOnlyError) -> bool:
    try:
        r.set("probe", "x")
    except error:
        return True
    return False


def test_sentinel_connections_never_get_pickled(watched: SentinelSetup) -> None:
    """Options through Sentinel are plain data: a reader holding them pickles without any
    client, Sentinel or socket."""
    add_entries(_raw(watched.primary), "s", 3)
    wait_caught_up(watched.primary, watched.replica)
    options = {**watched.options(), "streams": "s"}
    sopts = ReadOptions.parse(options, streaming=True)
    reader = XStreamStreamReader(sopts, BatchBuilder(DEFAULT_SCHEMA, sopts.metadata_columns))
    assert reader.initialOffset()["s"]["id"]
    assert reader._client is not None
    data = pickle.dumps(reader)
    assert b"socket" not in data and b"Sentinel" not in data
    assert pickle.loads(data)._client is None
    bopts = ReadOptions.parse({**options, "readFrom": "replica"}, streaming=False)
    batch = XStreamBatchReader(bopts, BatchBuilder(DEFAULT_SCHEMA, bopts.metadata_columns))
    parts = batch.partitions()
    assert [p.value.sync for p in parts] == [p.value.hi for p in parts]
    data = pickle.dumps((batch, parts))
    assert b"socket" not in data and b"Sentinel" not in data
