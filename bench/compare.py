"""Two checkouts of this server side by side: CPU per command of each, and of redis-server,
under the same redis-benchmark load in the same run (not a test).

Single runs of bench/run.py move by 10% here, more than most changes are worth. This runs
the load in many small shares, rotating over the three servers, so that each sees the
same machine, and reports each checkout's ratio to Redis and their ratio to each other.
User time (utime, in 10 ms ticks) is shown apart: about half of the CPU is the kernel's
reads and writes, the same for every checkout, so a change to the Python shows twice as
large there.

    git worktree add /tmp/base main
    python bench/compare.py /tmp/base . [--requests 200000] [--shares 20] [--pipeline 1]
        [--command "XADD bench:s * f v"] [--python-a PYTHON] [--python-b PYTHON]
        [--prefill N]

--prefill N puts N entries in bench:s and a group g on it first, in every server, for reads:
    python bench/compare.py /tmp/base . --prefill 250000 \
        --command "XREADGROUP GROUP g c COUNT 1 STREAMS bench:s >"

The same checkout twice with two interpreters compares the interpreters (each needs the
server's dependencies installed), e.g. `--python-b /path/to/venv/bin/python . .`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
import redis  # noqa: E402

from tests.helpers import ServerProcess  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base", type=Path, help="checkout A (e.g. a worktree of main)")
    parser.add_argument("other", type=Path, help="checkout B")
    parser.add_argument("--requests", type=int, default=200_000, help="per server")
    parser.add_argument("--shares", type=int, default=20)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--pipeline", type=int, default=1)
    parser.add_argument("--command", default="XADD bench:s * f v")
    parser.add_argument("--python-a", default=sys.executable, help="interpreter running A")
    parser.add_argument("--python-b", default=sys.executable, help="interpreter running B")
    parser.add_argument("--prefill", type=int, default=0,
                        help="entries in bench:s (with a group g) before the load")
    args = parser.parse_args()
    pinned = common.pin_cpus()  # (sets common.SERVER_CPUS)

    options = ["--appendonly", "no", "--save", ""]
    servers = {
        "redis": ServerProcess("redis"),
        "A": ServerProcess("xstreamd", options, root=args.base.resolve(),
                           python=args.python_a),
        "B": ServerProcess("xstreamd", options, root=args.other.resolve(),
                           python=args.python_b),
    }
    try:
        for proc in servers.values():
            proc.start()
            if common.SERVER_CPUS is not None:
                os.sched_setaffinity(proc.proc.pid, common.SERVER_CPUS)  # type: ignore[union-attr]
        if args.prefill:
            for proc in servers.values():
                _prefill(proc.port, args.prefill)
        cpu = dict.fromkeys(servers, 0.0)
        user = dict.fromkeys(servers, 0.0)
        share = args.requests // args.shares
        names = list(servers)
        load = ["-c", str(args.clients), "-n", str(share), "-P", str(args.pipeline),
                *args.command.split()]
        for turn in range(args.shares):
            for name in names[turn % 3:] + names[:turn % 3]:  # rotate who goes first
                pid = servers[name].proc.pid  # type: ignore[union-attr]
                before, user_before = common.cpu_seconds(pid), common.user_seconds(pid)
                common.redis_benchmark(servers[name].port, load)
                cpu[name] += common.cpu_seconds(pid) - before
                user[name] += common.user_seconds(pid) - user_before
        per = {name: cpu[name] / (share * args.shares) * 1e6 for name in names}
        per_user = {name: user[name] / (share * args.shares) * 1e6 for name in names}
        print(f"{args.command!r}, {args.clients} clients, pipeline {args.pipeline}, "
              f"{share * args.shares} requests each"
              + (", servers pinned to one CPU" if pinned else ""))
        for name in names:
            print(f"  {name:5} {per[name]:7.2f} us CPU/command  ratio to Redis "
                  f"{per[name] / per['redis']:.3f}  (user {per_user[name]:5.2f} us)")
        print(f"  B / A {per['B'] / per['A']:.3f}  (user {per_user['B'] / per_user['A']:.3f})")
    finally:
        for proc in servers.values():
            proc.stop()


def _prefill(port: int, entries: int) -> None:
    """bench:s with `entries` entries of one field, and a group g that has read none."""
    r = redis.Redis(port=port)
    for start in range(0, entries, 10_000):
        pipe = r.pipeline(transaction=False)
        for _ in range(start, min(entries, start + 10_000)):
            pipe.xadd("bench:s", {"f": "v"})
        pipe.execute()
    r.xgroup_create("bench:s", "g", id="0")


if __name__ == "__main__":
    main()
