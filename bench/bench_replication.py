"""Replication's costs, ours against redis-server measured in the same run (not a test).

    python bench/bench_replication.py [--entries 1000000] [--requests 200000]

1. Full sync: a primary holding `--entries` stream entries (4 streams) gets a new replica of
   its own kind; the time from REPLICAOF to the replica's link up and caught up, diskless and
   to disk.
2. The cost of a replica to the primary: its CPU per XADD (redis-benchmark, 50 clients) with
   no replica and with one attached (two primaries loaded in alternating shares), and the
   ratio of the two.
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


def xadd_cpu_us(kind: str, requests: int, shares: int = 10) -> tuple[float, float]:
    """Primary CPU per XADD without and with one replica: two primaries loaded in
    alternating shares, so that both see the same machine."""
    args = OURS if kind == "xstreamd" else []
    alone = ServerProcess(kind, args).start()
    paired = ServerProcess(kind, args).start()
    replica = ServerProcess(kind, [*args, "--replicaof", "127.0.0.1", str(paired.port)]).start()
    try:
        while not _synced(paired, replica):
            time.sleep(0.01)
        cpu = {"alone": 0.0, "paired": 0.0}
        share = requests // shares
        load = ["-c", "50", "-n", str(share), "XADD", "bench:s", "*", "f", "v"]
        for turn in range(shares):
            order = [("alone", alone), ("paired", paired)]
            for name, proc in order if turn % 2 == 0 else order[::-1]:
                pid = proc.proc.pid  # type: ignore[union-attr]
                before = common.cpu_seconds(pid)
                common.redis_benchmark(proc.port, load)
                cpu[name] += common.cpu_seconds(pid) - before
        total = share * shares
        return cpu["alone"] / total * 1e6, cpu["paired"] / total * 1e6
    finally:
        for proc in (replica, paired, alone):
            proc.stop()


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
        alone, with_one = xadd_cpu_us(kind, args.requests)
        print(f"  {kind:12} no replica {alone:6.2f}  one replica {with_one:6.2f}  "
              f"added {100 * (with_one / alone - 1):5.1f}%")


if __name__ == "__main__":
    main()
