"""Micro-benchmarks of the storage hot paths and the stream reply encoder (not a test).

Prints the best-of-rounds CPU time per operation in microseconds (GC paused):

* append: XADD-like ``Stream.append`` with auto IDs, on argv lists made of fresh bytes
  objects (as the RESP reader hands them over: no cached hashes);
* range: XRANGE / XREVRANGE COUNT 10 from the head and from random mid-node positions,
  XREAD-like reads of the last 10 entries, alone and with the reply built and encoded;
* get / delete of random IDs (XCLAIM / XDEL style lookups);
* full forward / backward iteration per entry;
* the encoder on an XRANGE COUNT 10 reply, and the listpack element encoders.

Run: python bench/bench_storage.py [--entries N] [--rounds R] [--only NAME ...] [--gc]
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time
from collections.abc import Callable
from itertools import islice

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from protocol.encoder import encode  # noqa: E402
from storage.listpack import encode_element  # noqa: E402
from storage.stream import Stream  # noqa: E402
from storage.stream_id import MAX_ID, MIN_ID, format_id, incr_id  # noqa: E402
from storage.stream_node import enc_int, encode_entry  # noqa: E402

SENSOR = b"sensor %012d temp 21.5 site lab-a"


def argv_pool(template: bytes, n: int) -> list[list[bytes]]:
    """``n`` field lists of fresh bytes objects (split() makes new ones each time)."""
    if b"%" in template:
        return [(template % (i * 7919 % 1_000_000)).split() for i in range(n)]
    return [template.split() for _ in range(n)]


def build(entries: int) -> Stream:
    s = Stream()
    pool = argv_pool(SENSOR, 1000)
    for i in range(entries):
        s.append(pool[i % 1000], (1_700_000_000_000 + i // 3, i % 3))
    return s


KEEP_GC = False  # --gc: leave the cyclic GC on while timing, as in the server


def timeit(fn: Callable[[int], object], iters: int, rounds: int) -> float:
    """Best per-op CPU time (us) of ``fn(iters)`` over ``rounds``, with the cyclic GC
    paused as timeit does (process CPU time: these machines are shared)."""
    best = float("inf")
    for _ in range(rounds):
        gc.collect()
        if not KEEP_GC:
            gc.disable()
        try:
            t0 = time.process_time()
            fn(iters)
            best = min(best, time.process_time() - t0)
        finally:
            gc.enable()
    return best / iters * 1e6


def report(name: str, us: float, note: str = "") -> None:
    print(f"{name:44s} {us:8.3f} us{('  ' + note) if note else ''}", flush=True)


def bench_append(rounds: int) -> None:
    for label, template in (("append f v (auto id)", b"f v"),
                            ("append sensor/temp/site (auto id)", SENSOR)):  # fmt: skip
        n = 20_000
        pools = [argv_pool(template, n) for _ in range(rounds)]

        def run(iters: int, pools: list = pools) -> None:
            s = Stream()
            append = s.append
            for fields in pools.pop():
                append(fields)

        report(label, timeit(run, n, rounds))
    n = 20_000
    pools = [argv_pool(SENSOR, n) for _ in range(rounds)]

    def explicit(iters: int) -> None:
        s = Stream()
        append = s.append
        base = 1_700_000_000_000
        for i, fields in enumerate(pools.pop()):
            append(fields, (base + i, 0))

    report("append sensor/temp/site (explicit id)", timeit(explicit, n, rounds))
    fields = SENSOR % 123456
    flist = fields.split()

    def enc_entry(iters: int) -> None:
        for _ in range(iters):
            encode_entry(flist, enc_int(5), enc_int(3), True)

    report("encode_entry (samefields, 3 pairs)", timeit(enc_entry, 50_000, rounds))

    def enc_v(iters: int) -> None:
        for _ in range(iters):
            encode_element(b"v")

    report("encode_element(b'v')", timeit(enc_v, 200_000, rounds))


def bench_reads(s: Stream, rounds: int, only: set[str] | None) -> None:
    rng = random.Random(7)
    ids = [eid for eid, _ in s.iter_range(MIN_ID, MAX_ID)]
    sample = [ids[rng.randrange(len(ids))] for _ in range(5000)]

    def want(name: str) -> bool:
        return only is None or name in only

    if want("range"):

        def head(iters: int) -> None:
            for _ in range(iters):
                s.range(MIN_ID, MAX_ID, 10)

        report("range - + COUNT 10 (head)", timeit(head, 5000, rounds))

        def mid(iters: int) -> None:
            for i in range(iters):
                s.range(sample[i], MAX_ID, 10)

        report("range <random> + COUNT 10", timeit(mid, 5000, rounds))

        def rev(iters: int) -> None:
            for i in range(iters):
                s.range(MIN_ID, sample[i], 10, True)

        report("revrange <random> - COUNT 10", timeit(rev, 5000, rounds))
        after = ids[-11]

        def tail(iters: int) -> None:
            for _ in range(iters):
                s.range(incr_id(after), MAX_ID, 10)

        report("range after last-11 + COUNT 10 (xread)", timeit(tail, 5000, rounds))
        newest = ids[-2]

        def tail1(iters: int) -> None:
            for _ in range(iters):
                s.range(incr_id(newest), MAX_ID, 10)

        report("range after last-2 + COUNT 10 (xread, 1 new)", timeit(tail1, 5000, rounds))

        def cursor(iters: int) -> None:
            # A reader going through the stream: each read starts after the last ID read.
            last = ids[1000]
            for _ in range(iters):
                last = s.range(incr_id(last), MAX_ID, 10)[-1][0]

        report("cursor reads: range after <last read> COUNT 10", timeit(cursor, 5000, rounds))

        def reply(iters: int) -> None:
            for i in range(iters):
                entries = s.range(sample[i], MAX_ID, 10)
                encode([[format_id(eid), f] for eid, f in entries], 2)

        report("range <random> COUNT 10 + format + encode", timeit(reply, 5000, rounds))
        if hasattr(s, "range_reply"):

            def fast_reply(iters: int) -> None:
                for i in range(iters):
                    encode(s.range_reply(sample[i], MAX_ID, 10), 2)

            report("range_reply <random> COUNT 10 + encode", timeit(fast_reply, 5000, rounds))

    if want("iterate"):
        for rev_ in (False, True):

            def it(iters: int, rev_: bool = rev_) -> None:
                for _ in islice(s.iter_range(MIN_ID, MAX_ID, rev_), iters):
                    pass

            label = "iterate backward / entry" if rev_ else "iterate forward / entry"
            report(label, timeit(it, 100_000, rounds))

    if want("lookup"):

        def get(iters: int) -> None:
            for i in range(iters):
                s.get(sample[i])

        report("get <random id>", timeit(get, 2000, rounds))

        def get_near(iters: int) -> None:
            for i in range(iters):
                s.get(ids[5000 + i])

        report("get <consecutive ids>", timeit(get_near, 2000, rounds))

        def delete(iters: int) -> None:
            # Each round deletes ids not yet deleted: a fresh random sample per round.
            for eid in rng.sample(ids, iters):
                s.delete(eid)

        report("delete <random id>", timeit(delete, 1000, rounds))


def bench_encoder(s: Stream, rounds: int) -> None:
    entries = s.range(MIN_ID, MAX_ID, 10)
    reply = [[format_id(eid), f] for eid, f in entries]
    for proto in (2, 3):

        def enc(iters: int, proto: int = proto) -> None:
            for _ in range(iters):
                encode(reply, proto)

        report(f"encode XRANGE COUNT 10 reply RESP{proto}", timeit(enc, 20_000, rounds))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", nargs="*", help="append range lookup iterate encoder")
    ap.add_argument("--gc", action="store_true", help="keep the cyclic GC on while timing")
    args = ap.parse_args()
    global KEEP_GC
    KEEP_GC = args.gc
    only = set(args.only) if args.only else None
    print(f"Python {sys.version.split()[0]}, {args.entries:,} entries, best of {args.rounds}")
    if only is None or "append" in only:
        bench_append(args.rounds)
    s = build(args.entries)
    bench_reads(s, args.rounds, only)
    if only is None or "encoder" in only:
        bench_encoder(s, args.rounds)


if __name__ == "__main__":
    main()
