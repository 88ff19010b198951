"""Throughput of the xstream Spark connector next to plain redis-py on the same stream.

    python bench/bench_spark.py                     # 1,000,000 entries, redis-server
    python bench/bench_spark.py --server xstreamd   # against our server
    python bench/bench_spark.py --entries 100000    # a quick run
    python bench/bench_spark.py --port 6379         # an already running server

Fills one stream with N entries of three fields, then measures, in rows per second:

- redis-py XRANGE: one client pages through the stream with XRANGE COUNT, the usual
  way (redis-py's reply parsing into (id, dict) pairs), and raw (no reply callbacks,
  which is how the connector calls it);
- connector batch read into Spark's ``noop`` sink (every row is produced and converted,
  nothing collected), with 1 and with 2 ranges read in parallel (local[2]);
- connector streaming read (Trigger.AvailableNow) into ``noop``: everything in one
  micro-batch, and in four (``maxRecordsPerBatch`` = N/4, whose admission control
  pages through the batch's IDs on the driver);
- connector batch write of N rows (pipelined XADD).

The server started (unless ``--port``) keeps nothing on disk, whichever it is; ``--aof``
turns the AOF on for it (fsync every second), so both are compared with the same work.
``--pin-server`` gives the server a CPU of its own (Spark, its Python workers and this
script share the others), as when it runs on its own machine.

This is a script, not a test: wall-clock numbers depend on the machine (2 shared cores
here; Spark, its Python workers and the server compete for them). A warm-up read starts
Spark's Python workers before anything is timed, and each figure is the best of
``--repeat`` runs (the JVM's JIT makes first runs slower).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis

REPO = Path(__file__).resolve().parent.parent
STREAM = "bench:orders"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def server(kind: str, port: int | None, aof: bool = False, pin: bool = False) -> Iterator[int]:
    """Yield the port of a server: the given one, or a fresh redis-server/xstreamd, both
    with the same persistence: none, or with ``aof`` the AOF (fsync every second) alone.
    With ``pin`` the server gets the first CPU to itself and this process (so Spark, which
    it starts later) the others, as when the server runs on a machine of its own."""
    if port is not None:
        yield port
        return
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="bench-spark-")
    persistence = ["--save", "", "--appendonly", "yes" if aof else "no",
                   "--appendfsync", "everysec"]
    if kind == "redis":
        exe = shutil.which("redis-server")
        if exe is None:
            raise SystemExit("redis-server is not installed")
        cmd = [exe, "--port", str(port), "--bind", "127.0.0.1", "--dir", workdir, *persistence]
    else:
        cmd = [sys.executable, "-m", "server", "--port", str(port), "--dir", workdir,
               *persistence]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.DEVNULL)
    if pin:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            raise SystemExit("--pin-server needs at least 2 CPUs")
        os.sched_setaffinity(proc.pid, {cpus[0]})
        os.sched_setaffinity(0, set(cpus[1:]))
    try:
        client = redis.Redis(port=port)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit(f"{kind} did not start") from None
                time.sleep(0.1)
        client.close()
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)


def fill(client: redis.Redis, n: int) -> None:
    """N entries, 10 per millisecond, with three fields."""
    client.delete(STREAM)
    base = 1_700_000_000_000
    pipe = client.pipeline(transaction=False)
    for i in range(n):
        fields = {"user": f"u{i % 997}", "amount": f"{i % 5000 / 10:.1f}", "n": str(i)}
        pipe.xadd(STREAM, fields, id=f"{base + i // 10}-{i % 10}")
        if (i + 1) % 10_000 == 0:
            pipe.execute()
    pipe.execute()


def timed(fn: Callable[[], int], repeat: int = 1) -> tuple[int, float]:
    """Rows and the best wall time of ``repeat`` runs."""
    best, rows = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        rows = fn()
        best = min(best, time.perf_counter() - start)
    return rows, best


def xrange_all(client: redis.Redis, count: int) -> int:
    rows, start = 0, "-"
    while True:
        chunk = client.xrange(STREAM, min=start, max="+", count=count)
        if not chunk:
            return rows
        rows += len(chunk)
        if len(chunk) < count:
            return rows
        last = chunk[-1][0]
        last = last.decode() if isinstance(last, bytes) else last
        ms, seq = last.split("-")
        start = f"{ms}-{int(seq) + 1}"


def spark_session() -> Any:
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
    )
    sys.path.insert(0, str(REPO))
    from pyspark.sql import SparkSession

    import spark_connector

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("bench-spark")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark_connector.register(spark)
    return spark


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--server", choices=["redis", "xstreamd"], default="redis")
    parser.add_argument("--port", type=int, help="use a running server on this port")
    parser.add_argument("--read-count", type=int, default=2000, help="XRANGE COUNT")
    parser.add_argument("--repeat", type=int, default=2, help="runs per measurement (best)")
    parser.add_argument("--aof", action="store_true",
                        help="start the server with the AOF on (default: no persistence)")
    parser.add_argument("--pin-server", action="store_true",
                        help="the server on one CPU, Spark and this script on the others")
    parser.add_argument("--skip-write", action="store_true")
    parser.add_argument("--write-only", action="store_true",
                        help="only the batch write (the stream is not filled or read)")
    args = parser.parse_args()
    n = args.entries
    results: list[tuple[str, int, float]] = []

    with server(args.server, args.port, args.aof, args.pin_server) as port:
        client = redis.Redis(port=port, protocol=2)
        raw = redis.Redis(port=port, protocol=2)
        raw.response_callbacks.clear()
        rep = args.repeat
        spark = spark_session()
        conn = {"host": "127.0.0.1", "port": str(port), "readCount": str(args.read_count)}
        if not args.write_only:
            rows, secs = timed(lambda: fill(client, n) or n)
            print(f"filled {STREAM} with {n} entries in {secs:.1f}s")

            count = args.read_count
            results.append(
                ("redis-py XRANGE, parsed", *timed(lambda: xrange_all(client, count), rep))
            )
            results.append(("redis-py XRANGE, raw", *timed(lambda: xrange_all(raw, count), rep)))

            def batch_read(parts: int) -> int:
                df = (
                    spark.read.format("xstream").options(**conn).option("streams", STREAM)
                    .option("partitionsPerStream", parts).load()
                )
                df.write.format("noop").mode("overwrite").save()
                return n

            # warm-up: Python workers start, the data source is registered and imported
            spark.read.format("xstream").options(**conn).option("streams", STREAM).option(
                "endingOffsets", json.dumps({STREAM: "1700000000010-0"})
            ).load().count()
            results.append(("connector batch read, 1 range", *timed(lambda: batch_read(1), rep)))
            results.append(("connector batch read, 2 ranges", *timed(lambda: batch_read(2), rep)))

            def stream_read(limit: int | None) -> int:
                checkpoint = tempfile.mkdtemp(prefix="bench-ckpt-")
                try:
                    reader = (
                        spark.readStream.format("xstream").options(**conn)
                        .option("streams", STREAM).option("startingOffsets", "earliest")
                        .option("partitionsPerStream", 2)
                    )
                    if limit:
                        reader = reader.option("maxRecordsPerBatch", limit)
                    query = (
                        reader.load().writeStream.format("noop")
                        .option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
                    )
                    query.awaitTermination()
                    return sum(p["numInputRows"] for p in query.recentProgress)
                finally:
                    shutil.rmtree(checkpoint, ignore_errors=True)

            results.append(
                ("connector streaming read, 1 batch", *timed(lambda: stream_read(None), rep))
            )
            quarter = max(n // 4, 1)
            name = f"connector streaming read, {quarter}/batch"
            results.append((name, *timed(lambda: stream_read(quarter), rep)))

        if not args.skip_write:
            def batch_write(rows: int = n) -> int:
                df = spark.range(rows).selectExpr(
                    "concat('u', id % 997) as user", "cast(id % 5000 / 10 as string) as amount",
                    "cast(id as string) as n",
                )
                client.delete("bench:written")
                df.write.format("xstream").options(**conn).option("stream", "bench:written").mode(
                    "append"
                ).save()
                return int(client.xlen("bench:written"))

            if args.write_only:  # warm-up: Python workers start, the data source is imported
                batch_write(1000)
            results.append(("connector batch write (pipelined XADD)", *timed(batch_write, rep)))
        spark.stop()

    print(f"\n{n} entries, server: {args.server if args.port is None else f'port {port}'}")
    print(f"{'path':<42} {'rows':>10} {'seconds':>8} {'rows/s':>10}")
    for name, rows, secs in results:
        print(f"{name:<42} {rows:>10} {secs:>8.2f} {rows / secs:>10.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
