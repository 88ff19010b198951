"""Server CPU per connection, ours vs Debian's redis-server (not a test).

Each connection is opened, sends one PING, reads the answer and closes, in waves of 50 (as
redis-benchmark opens its clients); the servers' utime+stime over the waves, divided by the
connections. redis-benchmark opens 50 connections per load, so this is the share of a load's
CPU that is not per request.

    python bench/bench_connections.py [--waves 40]
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import cpu_seconds, pin_cpus, start_pair  # noqa: E402

WAVE = 50


def connect_waves(port: int, waves: int) -> int:
    for _ in range(waves):
        socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(WAVE)]
        for sock in socks:
            sock.sendall(b"*1\r\n$4\r\nPING\r\n")
        for sock in socks:
            sock.recv(64)
        for sock in socks:
            sock.close()
    return waves * WAVE


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--waves", type=int, default=40)
    args = parser.parse_args()
    pin_cpus()
    ours, ref = start_pair()
    try:
        for name, proc in (("ours", ours), ("redis-server", ref)):
            pid = proc.proc.pid  # type: ignore[union-attr]
            before = cpu_seconds(pid)
            count = connect_waves(proc.port, args.waves)
            time.sleep(0.5)  # the closes are handled after the last wave
            per = (cpu_seconds(pid) - before) / count * 1e6
            print(f"{name}: {per:.1f} us CPU per connection (open, PING, close)")
    finally:
        ours.stop()
        ref.stop()


if __name__ == "__main__":
    main()
