"""A streaming pipeline: stream -> Spark aggregate -> stream, through the xstream connector.

Orders arrive in the stream ``orders`` as entries ``user=<name> amount=<number>``. Spark
reads them, sums the amounts per user and per 10-second window (by the entry's ID time),
and after every micro-batch appends the current totals to the stream ``order_totals``
as entries ``user window_start window_end orders total`` (Spark's complete output
mode: a Python sink has no update mode). The newest entry for a (user, window) pair is
its current total.

Start a server, then run the pipeline (see spark_connector/README.md):

    python -m server --port 6390 &
    python examples/spark_pipeline.py --port 6390 --generate 1000

``--generate N`` first adds N random orders; ``--once`` (the default) processes what is
there and stops (Trigger.AvailableNow), ``--follow`` keeps running until Ctrl-C. Offsets
live in the checkpoint directory, so running it again continues where it stopped.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def generate_orders(host: str, port: int, stream: str, count: int, seed: int = 7) -> None:
    """XADD ``count`` demo orders (pipelined)."""
    import redis

    rng = random.Random(seed)
    client = redis.Redis(host=host, port=port)
    pipe = client.pipeline(transaction=False)
    for _ in range(count):
        user = rng.choice(["ada", "bob", "cyd", "dee"])
        pipe.xadd(stream, {"user": user, "amount": f"{rng.randint(1, 500) / 10:.1f}"})
    pipe.execute()
    client.close()


def build_query(
    spark: Any,
    conn: dict[str, str],
    source: str,
    sink: str,
    checkpoint: str,
    follow: bool = False,
) -> Any:
    """Start the streaming query and return it."""
    from pyspark.sql import functions as F  # noqa: N812 - the usual alias

    orders = (
        spark.readStream.format("xstream")
        .options(**conn)
        .schema("ts timestamp, user string, amount double")  # fields cast by name
        .option("streams", source)
        .option("startingOffsets", "earliest")
        .option("maxRecordsPerBatch", 5000)
        .load()
    )
    totals = (
        orders.groupBy(F.window("ts", "10 seconds"), "user")
        .agg(F.count("*").alias("orders"), F.round(F.sum("amount"), 2).alias("total"))
        .select(
            "user",
            F.col("window.start").cast("string").alias("window_start"),
            F.col("window.end").cast("string").alias("window_end"),
            "orders",
            "total",
        )
    )
    writer = (
        totals.writeStream.format("xstream")
        .options(**conn)
        .option("stream", sink)
        .option("maxlen", 100_000)  # approximate trimming keeps the output bounded
        .outputMode("complete")  # every batch appends all current totals
        .option("checkpointLocation", checkpoint)
    )
    trigger = {"processingTime": "1 second"} if follow else {"availableNow": True}
    return writer.trigger(**trigger).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6379)
    parser.add_argument("--source", default="orders")
    parser.add_argument("--sink", default="order_totals")
    parser.add_argument("--checkpoint", default="/tmp/xstream-example-checkpoint")
    parser.add_argument("--generate", type=int, default=0, metavar="N")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", default=True)
    mode.add_argument("--follow", action="store_true")
    args = parser.parse_args(argv)

    if args.generate:
        generate_orders(args.host, args.port, args.source, args.generate)

    # Python workers import spark_connector too: make the repository importable there.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
    )
    from pyspark.sql import SparkSession

    import spark_connector

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("xstream-example")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark_connector.register(spark)
    conn = {"host": args.host, "port": str(args.port)}
    query = build_query(spark, conn, args.source, args.sink, args.checkpoint, args.follow)
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    print(f"processed {rows} orders; totals are in the stream {args.sink!r}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
