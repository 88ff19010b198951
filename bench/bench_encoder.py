"""Micro-benchmark of the reply encoder (not a test).

Encodes a typical XRANGE reply (100 entries of 3 field/value pairs) in RESP2 and RESP3,
plus a few small replies, and prints the time per reply and per entry.
Run: python bench/bench_encoder.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from protocol.encoder import OK, encode, encode_into  # noqa: E402


def xrange_reply(n: int) -> list:
    return [
        [
            b"1700000000000-%d" % i,
            [
                b"temp",
                b"21.%d" % (i % 10),
                b"humidity",
                b"%d" % (40 + i % 20),
                b"site",
                b"building-7/floor-3",
            ],
        ]
        for i in range(n)
    ]


def bench(label: str, fn, iters: int, rounds: int, per: int = 1) -> None:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        best = min(best, time.perf_counter() - t0)
    each = best / iters
    extra = f"  {each / per * 1e9:7.0f} ns/entry" if per > 1 else ""
    print(f"{label:42s} {each * 1e6:9.2f} us/reply{extra}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    reply = xrange_reply(100)
    size = len(encode(reply, 2))
    print(f"XRANGE reply: 100 entries x 3 field/value pairs, {size} bytes in RESP2")
    for proto in (2, 3):
        bench(f"encode(xrange, {proto})", lambda p=proto: encode(reply, p), 2000, args.rounds, 100)
    out: list[bytes] = []

    def into() -> None:
        out.clear()
        encode_into(out, reply, 3)
        b"".join(out)  # what the before-sleep pass writes

    bench("encode_into(chunks, xrange, 3) + join", into, 2000, args.rounds, 100)
    bench("encode(b'1700000000000-0')", lambda: encode(b"1700000000000-0"), 200000, args.rounds)
    bench("encode(42)", lambda: encode(42), 200000, args.rounds)
    bench("encode(123456789)", lambda: encode(123456789), 200000, args.rounds)
    bench("encode(OK)", lambda: encode(OK), 200000, args.rounds)
    bench(
        "encode({'a': 1, 'b': [b'x']}, 3)",
        lambda: encode({"a": 1, "b": [b"x"]}, 3),
        100000,
        args.rounds,
    )


if __name__ == "__main__":
    main()
