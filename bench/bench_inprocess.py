"""The server's Python cost per command, without sockets (not a test).

Drives the real Server and Connection (reader, dispatch, handler, encoder, before-sleep
pass) with a fake transport, so the figure is the Python work alone; the network benchmark
(bench/run.py) adds the syscalls Redis pays too.

    python bench/bench_inprocess.py [--rounds N] [--only NAME ...]

Prints microseconds of CPU per command, best of the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from server.app import Server  # noqa: E402
from server.config import load_config  # noqa: E402
from server.connection import Connection  # noqa: E402
from server.persistence.manager import attach  # noqa: E402


class FakeTransport:
    """What Connection needs of an asyncio transport; counts the bytes written."""

    def __init__(self) -> None:
        self.written = 0

    def write(self, data: bytes) -> None:
        self.written += len(data)

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("127.0.0.1", 50000) if name in ("peername", "sockname") else default

    def close(self) -> None:
        pass


def encode(argv: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in argv)


def run_case(server: Server, conns: list[Connection], request: bytes, per_read: int,
             reads: int) -> float:
    """Each read hands `per_read` commands to one connection, round robin; a before-sleep
    pass follows every len(conns) reads (one loop iteration with every client readable)."""
    chunk = request * per_read
    n = len(conns)
    t0 = time.process_time()
    for i in range(reads):
        conns[i % n].data_received(chunk)
        if i % n == n - 1:
            server.before_sleep()
    server.before_sleep()
    return (time.process_time() - t0) / (reads * per_read) * 1e6


def run_group_case(server: Server, conn: Connection, rounds: int) -> float:
    """XREADGROUP COUNT 10 then XACK of those 10 (IDs known: the stream holds 1-1, 2-1, ...),
    per entry; a fresh stream and group each call."""
    key = b"g%d" % time.monotonic_ns()
    n = rounds * 10
    preload = b"".join(encode([b"XADD", key, b"%d-1" % i, b"sensor", b"%d" % i, b"temp",
                               b"21.5"]) for i in range(1, n + 1))
    conn.data_received(preload + encode([b"XGROUP", b"CREATE", key, b"g", b"0"]))
    server.before_sleep()
    read = encode([b"XREADGROUP", b"GROUP", b"g", b"c", b"COUNT", b"10", b"STREAMS", key, b">"])
    acks = [encode([b"XACK", key, b"g", *(b"%d-1" % (r * 10 + i) for i in range(1, 11))])
            for r in range(rounds)]
    t0 = time.process_time()
    for ack in acks:
        conn.data_received(read)
        server.before_sleep()
        conn.data_received(ack)
        server.before_sleep()
    return (time.process_time() - t0) / n * 1e6


def make_server(clients: int, aof: bool = False) -> tuple[Server, list[Connection]]:
    """A Server as `python -m server` builds it (persistence attached, no snapshot, the AOF
    only with aof, in a temporary directory) and `clients` connected Connections on fake
    transports."""
    workdir = tempfile.mkdtemp(prefix="xstreamd-bench-")
    os.chdir(workdir)
    config = load_config(["--appendonly", "yes" if aof else "no", "--save", "",
                          "--dir", workdir])
    server = Server(config)
    attach(server)  # persistence hooks, as `python -m server` has them
    server.loop = asyncio.new_event_loop()
    if aof:
        server.persistence.load()  # (serve's first step: opens the AOF)
    # The loop never runs: the driver calls before_sleep itself. Scheduling still marks it
    # scheduled, as the real one does, so it is asked for once per batch, not per command.
    server.schedule_before_sleep = lambda: setattr(  # type: ignore[method-assign]
        server, "_before_sleep_scheduled", True)
    conns = []
    for _ in range(clients):
        conn = Connection(server)
        conn.connection_made(FakeTransport())  # type: ignore[arg-type]
        conns.append(conn)
    return server, conns


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    server, conns = make_server(50)
    cases = [
        ("ping", encode([b"PING"]), 1, 200_000),
        ("ping_p16", encode([b"PING"]), 16, 25_000),
        ("xadd", encode([b"XADD", b"s", b"*", b"f", b"v"]), 1, 200_000),
        ("xadd_p16", encode([b"XADD", b"s", b"*", b"f", b"v"]), 16, 25_000),
        ("xrange", encode([b"XRANGE", b"s", b"-", b"+", b"COUNT", b"10"]), 1, 100_000),
    ]
    if not args.only or "xreadgroup" in args.only:
        best = min(run_group_case(server, conns[0], 5_000) for _ in range(args.rounds))
        print(f"{'xreadgroup':10s} {best:6.2f} us/entry (XREADGROUP COUNT 10 + XACK)", flush=True)
    for name, request, per_read, reads in cases:
        if args.only and name not in args.only:
            continue
        best = min(run_case(server, conns, request, per_read, reads)
                   for _ in range(args.rounds))
        print(f"{name:10s} {best:6.2f} us/command (gc {'on' if gc.isenabled() else 'off'})",
              flush=True)


if __name__ == "__main__":
    main()
