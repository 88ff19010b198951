"""Micro-benchmark of the request readers (not a test).

Parses 100k pipelined XADD commands fed in socket-sized chunks, with each implementation,
and prints commands per second. Run: python bench/bench_reader.py [--chunk N] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from protocol.reader import HiredisRequestReader, PythonRequestReader  # noqa: E402

N_COMMANDS = 100_000


def make_stream(n: int) -> bytes:
    parts = []
    for i in range(n):
        argv = [b"XADD", b"sensor:%d" % (i % 16), b"*", b"temp", b"%d.%d" % (i % 50, i % 10)]
        argv += [b"humidity", b"%d" % (i % 100), b"site", b"building-7/floor-3"]
        parts.append(b"*%d\r\n" % len(argv))
        for a in argv:
            parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(parts)


def run(cls: type, data: bytes, chunk: int) -> float:
    reader = cls()
    got = 0
    t0 = time.perf_counter()
    for i in range(0, len(data), chunk):
        reader.feed(data[i : i + chunk])
        got += len(reader.get_commands())
    elapsed = time.perf_counter() - t0
    assert got == N_COMMANDS, got
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunk", type=int, default=65536, help="bytes per feed()")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    data = make_stream(N_COMMANDS)
    print(f"{N_COMMANDS} XADD commands, {len(data)} bytes, fed {args.chunk} bytes at a time")
    results = {}
    for cls in (PythonRequestReader, HiredisRequestReader):
        best = min(run(cls, data, args.chunk) for _ in range(args.rounds))
        results[cls.__name__] = best
        print(
            f"{cls.__name__:22s} best of {args.rounds}: {best * 1000:8.1f} ms  "
            f"{N_COMMANDS / best / 1e6:6.2f} M cmd/s  {best / N_COMMANDS * 1e9:7.0f} ns/cmd"
        )
    ratio = results["PythonRequestReader"] / results["HiredisRequestReader"]
    print(f"hiredis path is {ratio:.1f}x the pure-Python path")


if __name__ == "__main__":
    main()
