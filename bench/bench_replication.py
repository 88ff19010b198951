"""Replication's costs, ours against redis-server measured in the same run (not a test).

    python bench/bench_replication.py [--entries 1000000] [--requests 200000]

1. Full sync: a primary holding `--entries` stream entries (4 streams) gets a new replica of
   its own kind; the time from REPLICAOF to the replica's link up and caught up, diskless and
   to disk.
2. The cost of a replica to the primary: its CPU per XADD (redis-benchmark, 50 clients) with
   no replica and with one attached, and the ratio of the two.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import common  # noqa: E402

from tests.helpers import ServerProcess  # noqa: E402

OURS = ["--appendonly", "no", "--save", ""]


def _fill(port: int, entries: int) -> None:
    r = redis.Redis(port=port)
    per_stream = entries // 4
    for s in range(4):
        for start in range(0, per_stream, 5000):
            pipe = r.pipeline(transaction=False)
            for _ in range(start, min(per_stream, start + 5000)):
                pipe.xadd(f"s{s}", {"f1": "value-1", "f2": 12345, "f3": "x" * 20})
            pipe.execute()


def _synced(primary: ServerProcess, replica: ServerProcess) -> bool:
    info = redis.Redis(port=replica.port).info("replication")
    if info.get("master_link_status") != "up":
        return False
    target = redis.Redis(port=primary.port).info("replication")["master_repl_offset"]
    return info.get("slave_repl_offset", -1) >= target


def full_sync_seconds(kind: str, entries: int, diskless: str) -> float:
    args = (OURS if kind == "xstreamd" else []) + ["--repl-diskless-sync", diskless,
                                                   "--repl-diskless-sync-delay", "0"]
    with ServerProcess(kind, args) as primary:
        _fill(primary.port, entries)
        with ServerProcess(kind, OURS if kind == "xstreamd" else []) as replica:
            started = time.monotonic()
            redis.Redis(port=replica.port).execute_command("REPLICAOF", "127.0.0.1",
                                                           primary.port)
            while not _synced(primary, replica):
                time.sleep(0.01)
            return time.monotonic() - started


def xadd_cpu_us(kind: str, requests: int, replicas: int) -> float:
    args = OURS if kind == "xstreamd" else []
    with ServerProcess(kind, args) as primary:
        attached = [ServerProcess(kind, [*args, "--replicaof", "127.0.0.1",
                                         str(primary.port)]).start() for _ in range(replicas)]
        try:
            for replica in attached:
                while not _synced(primary, replica):
                    time.sleep(0.01)
            pid = primary.proc.pid  # type: ignore[union-attr]
            load = ["-c", "50", "-n", str(requests), "XADD", "bench:s", "*", "f", "v"]
            common.redis_benchmark(primary.port, ["-c", "50", "-n", "20000", "PING"])  # warm up
            before = common.cpu_seconds(pid)
            common.redis_benchmark(primary.port, load)
            return (common.cpu_seconds(pid) - before) / requests * 1e6
        finally:
            for replica in attached:
                replica.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=200_000)
    args = parser.parse_args()
    print(f"full sync of {args.entries} entries in 4 streams (seconds)")
    for diskless in ("yes", "no"):
        ours = full_sync_seconds("xstreamd", args.entries, diskless)
        theirs = full_sync_seconds("redis", args.entries, diskless)
        print(f"  repl-diskless-sync {diskless:3}  xstreamd {ours:6.2f}  redis-server "
              f"{theirs:6.2f}  ratio {ours / theirs:.2f}")
    print(f"primary CPU per XADD, {args.requests} XADDs from 50 clients (us)")
    for kind in ("xstreamd", "redis"):
        alone = xadd_cpu_us(kind, args.requests, 0)
        with_one = xadd_cpu_us(kind, args.requests, 1)
        print(f"  {kind:12} no replica {alone:6.2f}  one replica {with_one:6.2f}  "
              f"added {100 * (with_one / alone - 1):5.1f}%")


if __name__ == "__main__":
    main()
