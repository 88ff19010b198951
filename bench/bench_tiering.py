"""The cold tier (stream-hot-memory) under a backlog larger than its limit (not a test).

    python bench/bench_tiering.py [--entries 3000000] [--limit 32mb] [--streams 4]

1. Fills one xstreamd with `--entries` entries (about 110 bytes of field data each, in
   `--streams` streams) with stream-hot-memory at `--limit`, and reports RSS growth against
   the limit, the tier's INFO fields, and the bytes on disk.
2. Reads every entry back (XRANGE COUNT 2000) and checks each one, and reads them all with
   XREADGROUP from 0 (COUNT 1000, in order); reports read rates.
3. Rewrites the AOF (its RDB base refers to the cold nodes), restarts the server on the same
   directory and reports the time to serve, RSS, and that nothing was read back. The index
   (what a cold node costs in memory) is taken as the restarted server's RSS growth less its
   hot bytes, and the filled server's RSS growth is set against 2 x limit + that index.
4. XADD CPU per command with the option on and off (two servers, the same redis-benchmark
   load in alternating shares), and XRANGE COUNT 2000 over cold data against hot data.
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

VALUE = "v" * 90


def _info(r: redis.Redis) -> dict:
    return r.info("memory")


def _fill(port: int, streams: int, entries: int) -> float:
    per = entries // streams
    started = time.perf_counter()
    for s in range(streams):
        common.redis_benchmark(port, ["-c", "4", "-n", str(per), "-P", "100", "-r", "1000000",
                                      "XADD", f"backlog:{s}", "*", "n", "__rand_int__",
                                      "payload", VALUE])
    return time.perf_counter() - started


def _wait_settled(r: redis.Redis, limit: int, timeout: float = 60) -> dict:
    deadline = time.time() + timeout
    while True:
        info = _info(r)
        if info["stream_hot_bytes"] <= limit * 1.1 or time.time() > deadline:
            return info
        time.sleep(0.2)


def _read_back(r: redis.Redis, streams: int) -> tuple[int, float]:
    raw = r.connection_pool.get_connection()
    total = 0
    started = time.perf_counter()
    for s in range(streams):
        cursor = "-"
        while True:
            raw.send_command("XRANGE", f"backlog:{s}", cursor, "+", "COUNT", 2000)
            reply = raw.read_response()
            if not reply:
                break
            for _eid, fields in reply:
                assert fields[0] == b"n" and fields[3] == VALUE.encode()
            total += len(reply)
            cursor = b"(" + reply[-1][0]
    r.connection_pool.release(raw)
    return total, time.perf_counter() - started


def _group_read(r: redis.Redis, streams: int) -> tuple[int, float]:
    total = 0
    started = time.perf_counter()
    for s in range(streams):
        key = f"backlog:{s}"
        r.xgroup_create(key, "bench", "0")
        last = b"0-0"
        while True:
            reply = r.xreadgroup("bench", "c", {key: ">"}, count=1000, noack=True)
            if not reply:
                break
            entries = reply[0][1]
            for eid, _fields in entries:
                assert eid > last or len(eid) > len(last)
                last = eid
            total += len(entries)
    return total, time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=3_000_000)
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--limit", default="32mb")
    ap.add_argument("--xadd-requests", type=int, default=200_000)
    ap.add_argument("--compare-only", action="store_true", help="only part 4")
    args = ap.parse_args()
    if args.compare_only:
        _compare(args, COMPARE_LIMIT)
        return
    workdir = Path(__file__).resolve().parent.parent / ".bench-tiering"
    workdir.mkdir(exist_ok=True)
    for old in workdir.glob("**/*"):
        if old.is_file():
            old.unlink()
    server_args = ["--stream-hot-memory", args.limit, "--appendonly", "yes", "--save", "",
                   "--auto-aof-rewrite-percentage", "0", "--stream-reply-cache-max-bytes", "0"]
    proc = ServerProcess(extra_args=server_args, workdir=str(workdir)).start()
    r = redis.Redis(port=proc.port)
    limit = int(r.config_get("stream-hot-memory")["stream-hot-memory"])
    rss0 = common.rss_bytes(proc.proc.pid)
    fill_s = _fill(proc.port, args.streams, args.entries)
    info = _wait_settled(r, limit)
    rss1 = common.rss_bytes(proc.proc.pid)
    print(f"filled {args.entries:,} entries in {fill_s:.1f} s; RSS grew "
          f"{(rss1 - rss0) / 2**20:.1f} MiB (limit {limit / 2**20:.0f} MiB); hot "
          f"{info['stream_hot_bytes'] / 2**20:.1f} MiB, cold {info['stream_cold_nodes']:,} "
          f"nodes / {info['stream_cold_bytes'] / 2**20:.1f} MiB, on disk "
          f"{info['stream_cold_disk_bytes'] / 2**20:.1f} MiB", flush=True)
    n, secs = _read_back(r, args.streams)
    assert n == args.entries // args.streams * args.streams, n
    print(f"XRANGE COUNT 2000 read back all {n:,} entries (each checked): {n / secs:,.0f} "
          "entries/s", flush=True)
    n, secs = _group_read(r, args.streams)
    print(f"XREADGROUP COUNT 1000 from 0 delivered {n:,} entries in order: {n / secs:,.0f} "
          "entries/s", flush=True)
    info = _wait_settled(r, limit)
    print(f"after the reads: RSS {common.rss_bytes(proc.proc.pid) / 2**20:.1f} MiB, hot "
          f"{info['stream_hot_bytes'] / 2**20:.1f} MiB", flush=True)
    r.bgrewriteaof()
    while r.info("persistence")["aof_rewrite_in_progress"] or not r.info("persistence")[
            "aof_rewrites"]:
        time.sleep(0.1)
    base = next((workdir / "appendonlydir").glob("*.base.rdb")).stat().st_size
    proc.stop()
    empty = ServerProcess(extra_args=["--appendonly", "no", "--save", ""]).start()
    rss_empty = common.rss_bytes(empty.proc.pid)
    empty.stop()
    started = time.perf_counter()
    proc = ServerProcess(extra_args=server_args, workdir=str(workdir),
                         port=proc.port).start(timeout=900)
    r = redis.Redis(port=proc.port)
    lengths = sum(r.xlen(f"backlog:{s}") for s in range(args.streams))
    load_s = time.perf_counter() - started
    rss = common.rss_bytes(proc.proc.pid)
    info = _info(r)
    seen = -1
    # (the loaded hot nodes, once the sweeps, a few thousand nodes a pass from the oldest, have
    # counted them all)
    while not info["stream_hot_bytes"] or info["stream_hot_bytes"] != seen:
        seen = info["stream_hot_bytes"]
        time.sleep(1.0)
        info = _info(r)
    index = common.rss_bytes(proc.proc.pid) - rss_empty - info["stream_hot_bytes"]
    print(f"restart from an AOF base of {base / 2**20:.1f} MiB: {lengths:,} entries served "
          f"after {load_s:.2f} s; RSS {rss / 2**20:.1f} MiB ({(rss - rss_empty) / 2**20:.1f} "
          f"MiB over an empty server's {rss_empty / 2**20:.1f}); {info['stream_cold_nodes']:,} "
          f"nodes loaded cold, {info['stream_cold_reads']} read back", flush=True)
    print(f"index: {index / 2**20:.1f} MiB ({index / max(1, info['stream_cold_nodes']):.0f} "
          f"bytes per cold node); the filled server grew {(rss1 - rss0) / 2**20:.1f} MiB "
          f"against 2 x limit + index = {(2 * limit + index) / 2**20:.1f} MiB", flush=True)
    n, secs = _read_back(r, args.streams)
    assert n == lengths, n
    print(f"after the restart, all {n:,} entries read back and checked: {n / secs:,.0f} "
          "entries/s", flush=True)
    proc.stop()
    _compare(args, COMPARE_LIMIT)


# The XADD load of the comparison writes ~22 MB: a small limit puts most of it on disk.
COMPARE_LIMIT = 2 << 20


def _compare(args: argparse.Namespace, limit: int) -> None:
    """XADD CPU per command, tier on against off; then XRANGE over cold data against hot."""
    base = ["--appendonly", "no", "--save", "", "--stream-reply-cache-max-bytes", "0"]
    on = ServerProcess(extra_args=[*base, "--stream-hot-memory", str(limit)],
                       workdir=str(Path(__file__).resolve().parent.parent / ".bench-tiering"))
    off = ServerProcess(extra_args=base)
    with on, off:
        cpu = {"on": 0.0, "off": 0.0}
        share = args.xadd_requests // 10
        servers = [("on", on), ("off", off)]
        for turn in range(10):
            for name, proc in (servers if turn % 2 == 0 else servers[::-1]):
                before = common.cpu_seconds(proc.proc.pid)
                common.redis_benchmark(proc.port, ["-c", "50", "-n", str(share), "-r", "1000000",
                                                   "XADD", "x", "*", "n", "__rand_int__",
                                                   "payload", VALUE])
                cpu[name] += common.cpu_seconds(proc.proc.pid) - before
        per = {name: cpu[name] / (share * 10) * 1e6 for name in cpu}
        print(f"XADD CPU per command: tier on {per['on']:.2f} us, off {per['off']:.2f} us "
              f"(ratio {per['on'] / per['off']:.3f})", flush=True)
        rates = {}
        for name, proc in servers:
            r = redis.Redis(port=proc.port)
            if name == "on":
                time.sleep(0.5)  # (a few cron passes)
                _wait_settled(r, limit)
                cold = r.info("memory")["stream_cold_nodes"]
            n, secs = 0, 0.0
            raw = r.connection_pool.get_connection()
            cursor: bytes | str = "-"
            started = time.perf_counter()
            while True:
                raw.send_command("XRANGE", "x", cursor, "+", "COUNT", 2000)
                reply = raw.read_response()
                if not reply:
                    break
                n += len(reply)
                cursor = b"(" + reply[-1][0]
            secs = time.perf_counter() - started
            rates[name] = n / secs
        print(f"XRANGE COUNT 2000 over {n:,} entries: {cold:,} nodes cold {rates['on']:,.0f} "
              f"entries/s, all hot {rates['off']:,.0f} entries/s (ratio "
              f"{rates['on'] / rates['off']:.2f})", flush=True)


if __name__ == "__main__":
    main()
