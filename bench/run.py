"""Server CPU time per command, ours vs Debian's redis-server under the identical load.

    python bench/run.py [--quick] [--only NAME ...] [--repeat N] [--no-pin] [--write-results]

Each case starts fresh servers (both without persistence), reads utime+stime from /proc/PID/stat
before and after a fixed load, and divides by the number of commands (or entries). The ratio
ours/Redis is what holds on a 2-core machine where the load generator competes with the server.
With two CPUs or more the servers are pinned to one CPU and the load generators to another
(--no-pin turns that off): run-to-run spread is smaller when they never share a core. Each
load runs in ten shares, alternating between the servers, so that both see the same machine
(its speed drifts over seconds); CPU time comes from the scheduler's nanosecond accounting.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

import hiredis

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    FloorServer,
    cpu_seconds,
    pin_cpus,
    redis_benchmark,
    rss_bytes,
    start_pair,
    user_seconds,
)

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


class Conn:
    """A tiny blocking RESP client for the drivers (hiredis parses replies)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.reader = hiredis.Reader()

    def call(self, *args: bytes | str | int) -> object:
        self.sock.sendall(encode(args))
        return self.read()

    def read(self) -> object:
        while True:
            reply = self.reader.gets()
            if reply is not False:
                return reply
            self.reader.feed(self.sock.recv(1 << 16))


def encode(args: tuple[bytes | str | int, ...]) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


# Each load is split into this many shares, run on the two servers in turn (alternating
# which goes first): both then see the same machine, whose speed drifts over seconds here.
SHARES = 10


def cpu_case(load: Callable[[int, int], int], total: int,
             setup: Callable[[int], None] | None = None,
             ours_args: list[str] | None = None, floor: str = "",
             both_args: list[str] | None = None) -> dict[str, float]:
    """Run setup on each server, then `load(port, share)` in SHARES turns per server;
    load returns the number of units (commands, entries) it did. Microseconds per unit, and
    of user time apart ("<name>_user": the process's own code, the kernel's work left out).
    With floor ("constant" or "append"), bench/floor_server.py stands in for ours."""
    ours, ref = start_pair(ours_args, both_args)
    if floor:
        ours.stop()
        ours = FloorServer(append=floor == "append")  # type: ignore[assignment]
    try:
        servers = [("redis", ref), ("ours", ours)]
        if setup is not None:
            for _name, proc in servers:
                setup(proc.port)
        cpu = {"redis": 0.0, "ours": 0.0}
        user = {"redis": 0.0, "ours": 0.0}
        units = {"redis": 0, "ours": 0}
        for turn in range(SHARES):
            for name, proc in (servers if turn % 2 == 0 else servers[::-1]):
                pid = proc.proc.pid  # type: ignore[union-attr]
                before, user_before = cpu_seconds(pid), user_seconds(pid)
                units[name] += load(proc.port, total // SHARES)
                cpu[name] += cpu_seconds(pid) - before
                user[name] += user_seconds(pid) - user_before
        result = {name: cpu[name] / units[name] * 1e6 for name in cpu}
        result.update({f"{name}_user": user[name] / units[name] * 1e6 for name in user})
        return result
    finally:
        ours.stop()
        ref.stop()


def case_xadd(n: int, pipeline: int, both_args: list[str] | None = None) -> dict[str, float]:
    def load(port: int, share: int) -> int:
        redis_benchmark(port, ["-c", "50", "-n", str(share), "-P", str(pipeline),
                               "XADD", "bench:s", "*", "f", "v"])
        return share

    return cpu_case(load, n, both_args=both_args)


# Both servers as users run them by default: the append-only file on, fsynced every second.
AOF_ON = ["--appendonly", "yes", "--appendfsync", "everysec"]


def case_floor(n: int, kind: str = "constant") -> dict[str, float]:
    """Issue #9's floor: a uvloop + hiredis server that answers every command with a
    constant, under the unpipelined XADD load ("ours" is that server here). With kind
    "append" it also appends each XADD to a real Stream and answers its ID."""
    def load(port: int, share: int) -> int:
        redis_benchmark(port, ["-c", "50", "-n", str(share), "XADD", "bench:s", "*", "f", "v"])
        return share

    return cpu_case(load, n, floor=kind)


def case_ping(n: int) -> dict[str, float]:
    """The framework's floor: the per-read work every command pays (no storage)."""
    def load(port: int, share: int) -> int:
        redis_benchmark(port, ["-c", "50", "-n", str(share), "PING"])
        return share

    return cpu_case(load, n)


def preload(port: int, entries: int) -> None:
    redis_benchmark(port, ["-c", "4", "-n", str(entries), "-P", "64", "-r", "1000000",
                           "XADD", "bench:s", "*", "sensor", "__rand_int__", "temp", "21.5",
                           "site", "lab-a"])


def case_xrange(n: int, entries: int) -> dict[str, float]:
    def load(port: int, share: int) -> int:
        redis_benchmark(port, ["-c", "50", "-n", str(share), "XRANGE", "bench:s", "-", "+",
                               "COUNT", "10"])
        return share

    return cpu_case(load, n, setup=lambda port: preload(port, entries))


def case_xreadgroup_ack(rounds: int) -> dict[str, float]:
    def setup(port: int) -> None:
        preload(port, rounds * 10 + 100)
        Conn(port).call("XGROUP", "CREATE", "bench:s", "g", "0")

    def load(port: int, share: int) -> int:
        conn = Conn(port)
        done = 0
        for _ in range(share):
            reply = conn.call("XREADGROUP", "GROUP", "g", "c", "COUNT", "10", "STREAMS",
                              "bench:s", ">")
            ids = [entry[0] for entry in reply[0][1]]  # type: ignore[index]
            conn.call("XACK", "bench:s", "g", *ids)
            done += len(ids)
        return done

    return cpu_case(load, rounds, setup=setup)


# The bulk paths (issue #37): entries of three small fields, as preload() writes them.
BULK_ENTRIES = 300_000


def _page(conn: Conn, command: tuple, start: bytes, args_after: tuple,
          entries_of: Callable[[object], list]) -> int:
    """Page through a stream from `start`: each call names the ID after the last one
    read ("(" + ID); returns the entries read."""
    done = 0
    cursor = start
    while True:
        reply = conn.call(*command, cursor, *args_after)
        entries = entries_of(reply)
        if not entries:
            return done
        done += len(entries)
        cursor = b"(" + entries[-1][0]


def case_xrange_bulk(total: int, count: int) -> dict[str, float]:
    """Spark's batch read: XRANGE COUNT `count` paging through the whole stream."""
    def load(port: int, share: int) -> int:
        conn = Conn(port)
        done = 0
        for _ in range(max(1, share)):
            done += _page(conn, ("XRANGE", "bench:s"), b"-", ("+", "COUNT", count),
                          lambda reply: reply)  # type: ignore[arg-type,return-value]
        return done

    return cpu_case(load, total, setup=lambda port: preload(port, BULK_ENTRIES))


def case_xrange_cold(count: int) -> dict[str, float]:
    """Each share pages with XRANGE COUNT `count` through a stream nobody read before (one
    of SHARES streams of BULK_ENTRIES / SHARES entries): the first read of every entry, which
    the cache of encoded nodes does not help (it is built by this read)."""
    per = BULK_ENTRIES // SHARES
    turn: dict[int, int] = {}

    def setup(port: int) -> None:
        for i in range(SHARES):
            redis_benchmark(port, ["-c", "4", "-n", str(per), "-P", "64", "-r", "1000000",
                                   "XADD", f"bench:c{i}", "*", "sensor", "__rand_int__",
                                   "temp", "21.5", "site", "lab-a"])

    def load(port: int, _share: int) -> int:
        i = turn[port] = turn.get(port, -1) + 1
        return _page(Conn(port), ("XRANGE", f"bench:c{i}"), b"-", ("+", "COUNT", count),
                     lambda reply: reply)  # type: ignore[arg-type,return-value]

    return cpu_case(load, SHARES, setup=setup)


def case_xread_bulk(total: int, count: int) -> dict[str, float]:
    """A consumer catching up: XREAD COUNT `count` STREAMS s <last ID>, from 0."""
    def load(port: int, share: int) -> int:
        conn = Conn(port)
        done = 0
        for _ in range(max(1, share)):
            cursor = b"0"
            while True:
                reply = conn.call("XREAD", "COUNT", count, "STREAMS", "bench:s", cursor)
                if not reply:
                    break
                entries = reply[0][1]  # type: ignore[index]
                done += len(entries)
                cursor = entries[-1][0]
        return done

    return cpu_case(load, total, setup=lambda port: preload(port, BULK_ENTRIES))


def case_xreadgroup_bulk(rounds: int, count: int, consumers: int) -> dict[str, float]:
    """Workers: `consumers` connections in turn, each XREADGROUP COUNT `count` then XACK of
    what it got; per entry."""
    def setup(port: int) -> None:
        preload(port, rounds * count + 100)
        Conn(port).call("XGROUP", "CREATE", "bench:s", "g", "0")

    def load(port: int, share: int) -> int:
        conns = [Conn(port) for _ in range(consumers)]
        done = 0
        for i in range(share):
            conn = conns[i % consumers]
            reply = conn.call("XREADGROUP", "GROUP", "g", f"c{i % consumers}", "COUNT", count,
                              "STREAMS", "bench:s", ">")
            ids = [entry[0] for entry in reply[0][1]]  # type: ignore[index]
            conn.call("XACK", "bench:s", "g", *ids)
            done += len(ids)
        return done

    return cpu_case(load, rounds, setup=setup)


def case_xadd_bulk(n: int, both_args: list[str] | None = None) -> dict[str, float]:
    """The connector's write path: pipelined XADD of four-field entries, 4 clients, P100."""
    def load(port: int, share: int) -> int:
        redis_benchmark(port, ["-c", "4", "-n", str(share), "-P", "100", "-r", "1000000",
                               "XADD", "bench:s", "*", "id", "__rand_int__", "name", "user-1",
                               "value", "12.5", "ts", "2026-11-28T10:00:00"])
        return share

    return cpu_case(load, n, both_args=both_args)


def case_block_wake(clients: int, rounds: int) -> dict[str, float]:
    """1,000 XREAD BLOCK 0 clients, one XADD wakes all: server CPU and time to the last reply."""
    walls: dict[str, float] = {}

    async def one_round(port: int) -> float:
        conns = [await asyncio.open_connection("127.0.0.1", port) for _ in range(clients)]
        for _reader, writer in conns:
            writer.write(encode(("XREAD", "BLOCK", "0", "STREAMS", "bench:w", "$")))
            await writer.drain()
        ctl = Conn(port)
        while True:
            info = ctl.call("INFO", "clients")
            text = info.decode() if isinstance(info, bytes) else str(info)
            if f"blocked_clients:{clients}" in text:
                break
            await asyncio.sleep(0.01)
        start = time.perf_counter()
        ctl.call("XADD", "bench:w", "*", "f", "v")
        await asyncio.gather(*(reader.readuntil(b"v\r\n") for reader, _w in conns))
        wall = time.perf_counter() - start
        for _r, writer in conns:
            writer.close()
        return wall

    def load(port: int) -> int:
        total = 0.0
        for _ in range(rounds):
            total += asyncio.run(one_round(port))
        walls.setdefault("_tmp", 0.0)
        walls[str(port)] = total / rounds
        return rounds

    ours, ref = start_pair()
    try:
        out: dict[str, float] = {}
        for name, proc in (("redis", ref), ("ours", ours)):
            pid = proc.proc.pid  # type: ignore[union-attr]
            before = cpu_seconds(pid)
            load(proc.port)
            out[f"{name}_cpu_ms"] = (cpu_seconds(pid) - before) / rounds * 1e3
            out[name] = walls[str(proc.port)] * 1e3  # ms to the last reply
        return out
    finally:
        ours.stop()
        ref.stop()


def case_rss(entries: int) -> dict[str, float]:
    ours, ref = start_pair()
    try:
        out: dict[str, float] = {}
        for name, proc in (("redis", ref), ("ours", ours)):
            pid = proc.proc.pid  # type: ignore[union-attr]
            before = rss_bytes(pid)
            preload(proc.port, entries)
            out[name] = (rss_bytes(pid) - before) / entries
        return out
    finally:
        ours.stop()
        ref.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small loads, for a smoke run")
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--write-results", action="store_true")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run each case N times (fresh servers each time) and report the "
                        "run with the median ratio, with the range of ratios seen")
    parser.add_argument("--no-pin", action="store_true",
                        help="let the servers share CPUs with the load generator")
    args = parser.parse_args()
    if not args.no_pin and pin_cpus():
        print("servers pinned to one CPU, load generators to another", flush=True)
    # Our servers run on this interpreter: its build matters (a PGO/LTO build, as Debian's
    # python3.11 or the python:3.11 images, runs them about a tenth faster than a plain one).
    print(f"our servers run on {sys.executable} ({sys.version.split()[0]})", flush=True)
    q = args.quick
    cases: list[tuple[str, str, str, Callable[[], dict[str, float]]]] = [
        ("floor", "Floor: a do-nothing uvloop + hiredis server, unpipelined XADD load", "-",
         lambda: case_floor(20_000 if q else 200_000)),
        ("floor_append", "Floor + Stream.append: the floor server appending each XADD to a "
         "real stream", "-", lambda: case_floor(20_000 if q else 200_000, "append")),
        ("ping", "PING, 50 clients, no pipelining (reference: the work every read pays)", "-",
         lambda: case_ping(20_000 if q else 200_000)),
        ("xadd", "XADD s * f v, 50 clients, no pipelining", "<= 1.5",
         lambda: case_xadd(20_000 if q else 200_000, 1)),
        ("xadd_p16", "XADD s * f v, 50 clients, pipeline 16", "<= 4",
         lambda: case_xadd(50_000 if q else 800_000, 16)),
        ("xadd_aof", "XADD s * f v, 50 clients, no pipelining, appendonly yes (both)", "-",
         lambda: case_xadd(20_000 if q else 200_000, 1, AOF_ON)),
        ("xrange", "XRANGE s - + COUNT 10 on a 1,000,000-entry stream", "<= 4",
         lambda: case_xrange(10_000 if q else 100_000, 50_000 if q else 1_000_000)),
        ("xreadgroup", "XREADGROUP COUNT 10 then XACK of those 10 (per entry)", "<= 4",
         lambda: case_xreadgroup_ack(500 if q else 5_000)),
        ("xrange_2000", "XRANGE COUNT 2000 paging 10 times through 300,000 entries (per entry)",
         "<= 1.5", lambda: case_xrange_bulk(10, 2000)),
        ("xrange_2000_cold", "XRANGE COUNT 2000, each entry read for the first time "
         "(per entry)", "-", lambda: case_xrange_cold(2000)),
        ("xread_1000", "XREAD COUNT 1000 from 0, 10 times through 300,000 entries (per entry)",
         "<= 1.5",
         lambda: case_xread_bulk(10, 1000)),
        ("xreadgroup_100", "XREADGROUP COUNT 100 + XACK, one consumer (per entry)", "<= 2",
         lambda: case_xreadgroup_bulk(200 if q else 2_000, 100, 1)),
        ("xreadgroup_10x10", "XREADGROUP COUNT 10 + XACK, 10 consumers in turn (per entry)",
         "<= 3", lambda: case_xreadgroup_bulk(2_000 if q else 20_000, 10, 10)),
        ("xadd_bulk", "XADD of 4 fields, 4 clients, pipeline 100 (the Spark sink's path)",
         "<= 2", lambda: case_xadd_bulk(100_000 if q else 1_000_000)),
        ("xadd_bulk_aof", "The same, appendonly yes (both)", "-",
         lambda: case_xadd_bulk(100_000 if q else 1_000_000, AOF_ON)),
        ("block", "XREAD BLOCK 0 by 1,000 clients, one XADD wakes all (time to last reply)",
         "<= 3", lambda: case_block_wake(1000, 2 if q else 5)),
        ("rss", "RSS growth per entry, 1,000,000 entries of 3 small fields", "<= 1.25",
         lambda: case_rss(50_000 if q else 1_000_000)),
    ]
    rows = []
    for key, label, target, run in cases:
        if args.only and key not in args.only:
            continue
        # This machine's 2 shared cores make single runs noisy: keep the median run.
        results = sorted((run() for _ in range(max(1, args.repeat))),
                         key=lambda r: r["ours"] / r["redis"])
        result = results[len(results) // 2]
        ratio = result["ours"] / result["redis"]
        unit = {"rss": "bytes/entry", "block": "ms to last reply"}.get(key, "us CPU/unit")
        extra = ""
        if len(results) > 1:
            low, high = (r["ours"] / r["redis"] for r in (results[0], results[-1]))
            extra = f" (ratios over {len(results)} runs: {low:.2f}-{high:.2f})"
        if "ours_user" in result:
            # (10 ms ticks: about 1% of a case's user time)
            extra += (f" (of which user time: ours {result['ours_user']:.2f}, "
                      f"Redis {result['redis_user']:.2f})")
        if key == "block":
            extra += (f" (server CPU per wake-up: ours {result['ours_cpu_ms']:.1f} ms, "
                      f"Redis {result['redis_cpu_ms']:.1f} ms)")
        row = (f"| {label} | {result['ours']:.2f} | {result['redis']:.2f} | {unit} | "
               f"{ratio:.2f} | {target} |{extra}")
        print(row, flush=True)
        rows.append(row)
    if args.write_results:
        write_results(rows, " ".join(sys.argv[1:]))


def write_results(rows: list[str], argv: str) -> None:
    header = (
        f"## Run of {datetime.date.today().isoformat()}\n\n"
        f"Command: `python bench/run.py {argv}` (our servers on {sys.executable}, "
        f"Python {sys.version.split()[0]})\n\n"
        "| case | ours | redis-server | unit | ratio ours/Redis | target |\n"
        "|---|---|---|---|---|---|\n"
    )
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\n"
    RESULTS.write_text(text + header + "\n".join(rows) + "\n\n")


if __name__ == "__main__":
    main()
