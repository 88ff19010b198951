"""The Spark sink's two ways of writing a task's rows exactly once, on the wire, against one
xstreamd (not a test; Redis 7.0 has no IDMP, so there is no redis-server column).

    python bench/bench_sink_idempotency.py [--rows 200000] [--task-rows 10000] [--repeat 3]

- markers (what the sink does): per task, WATCH the marker key, GET it, then MULTI, the
  XADDs, SET marker, EXEC, sent in chunks of 1,000 commands as the sink sends them;
- idmp: per task, pipelined XADD key IDMP <writer:partition:batch> <row index> * ..., in
  chunks of 1,000 (a retried task sends the same pids and iids, and the server drops the
  repeats).

Each task's rows have four fields, as a DataFrame of (id, name, value, ts) gives. Reported:
rows per second of wall time and the server's CPU microseconds per row, for the first write
and for a full retry of every task (which must add nothing).
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

CHUNK = 1000


def _rows(task: int, n: int) -> list[list[bytes]]:
    return [[b"id", b"%d" % (task * n + i), b"name", b"user-%d" % i, b"value", b"%d.5" % i,
             b"ts", b"2026-11-28T10:00:00"] for i in range(n)]


def _send(conn: redis.Redis, commands: list[tuple]) -> list:
    pipe = conn.pipeline(transaction=False)
    for command in commands:
        pipe.execute_command(*command)
    return pipe.execute(raise_on_error=False)


def write_markers(conn: redis.Redis, task: int, rows: list[list[bytes]]) -> None:
    marker = f"bench:xstream-batch:w:{task}"
    _send(conn, [("WATCH", marker)])
    if _send(conn, [("GET", marker)])[0] is not None:
        _send(conn, [("UNWATCH",)])
        return
    commands = [("MULTI",)] + [("XADD", "bench", "*", *row) for row in rows]
    commands.append(("SET", marker, 0))
    for start in range(0, len(commands), CHUNK):
        _send(conn, commands[start:start + CHUNK])
    _send(conn, [("EXEC",)])


def write_idmp(conn: redis.Redis, task: int, rows: list[list[bytes]]) -> None:
    pid = f"w:{task}:0"
    commands = [("XADD", "bench", "IDMP", pid, i, "*", *row) for i, row in enumerate(rows)]
    for start in range(0, len(commands), CHUNK):
        _send(conn, commands[start:start + CHUNK])


def run(way: str, rows: int, task_rows: int) -> tuple[float, float, float, float]:
    proc = ServerProcess(extra_args=["--appendonly", "no", "--save", ""]).start()
    try:
        conn = redis.Redis(port=proc.port)
        if way == "idmp":
            conn.execute_command("XADD", "bench", "*", "x", "1")
            conn.execute_command("XCFGSET", "bench", "IDMP-MAXSIZE", task_rows)
            conn.delete("bench")
            conn.execute_command("CONFIG", "SET", "stream-idmp-maxsize", task_rows)
        write = write_idmp if way == "idmp" else write_markers
        tasks = [(t, _rows(t, task_rows)) for t in range(rows // task_rows)]
        out = []
        for _attempt in range(2):  # the write, then a retry of every task
            cpu0, t0 = common.cpu_seconds(proc.proc.pid), time.perf_counter()
            for task, task_data in tasks:
                write(conn, task, task_data)
            wall = time.perf_counter() - t0
            cpu = common.cpu_seconds(proc.proc.pid) - cpu0
            out += [rows / wall, cpu / rows * 1e6]
            assert conn.xlen("bench") == rows, (way, conn.xlen("bench"))
        return out[0], out[1], out[2], out[3]
    finally:
        proc.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--task-rows", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    results: dict[str, list[tuple[float, ...]]] = {"markers": [], "idmp": []}
    for _ in range(args.repeat):
        for way in results:
            results[way].append(run(way, args.rows, args.task_rows))
    print(f"{args.rows:,} rows in tasks of {args.task_rows:,}, best of {args.repeat}")
    print("| way | write rows/s | server us/row | retry rows/s | server us/row (retry) |")
    print("|---|---|---|---|---|")
    for way, runs in results.items():
        best = max(runs, key=lambda r: r[0])
        print(f"| {way} | {best[0]:,.0f} | {best[1]:.1f} | {best[2]:,.0f} | {best[3]:.1f} |")


if __name__ == "__main__":
    main()
