"""Memory and append-time benchmark of storage.stream (not a test).

Builds a stream of N entries (default 1,000,000) of ``sensor <int> temp <decimal>
site lab-a`` with auto IDs from the wall clock and default node limits (4096
bytes / 100 entries), then reports:

* bytes per entry: listpack bytes only, and Stream.memory_usage() (listpack
  buffers as allocated + listpack objects + rax nodes + the stream object);
* the time per append (whole build, and a steady-state sample);
* XRANGE-style reads: full forward / backward iteration per entry.

Times are process CPU time (these machines are shared: wall time would count
the other processes too).  For comparison, Redis's
MEMORY USAGE for the same stream is about 14-16 bytes per entry (listpacks
dominate, rax overhead is tiny in C).

Run: python bench/bench_stream_memory.py [--entries N]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from storage.stream import Stream  # noqa: E402
from storage.stream_id import MAX_ID, MIN_ID  # noqa: E402


def entry(i: int) -> list[bytes]:
    return [b"sensor", b"%d" % (i % 1000), b"temp", b"%d.%d" % (15 + i % 20, i % 10),
            b"site", b"lab-a"]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=1_000_000)
    args = ap.parse_args()
    n = args.entries

    fields = [entry(i) for i in range(1000)]  # built up front: time the stream, not this
    s = Stream()
    gc.collect()
    gc.disable()
    t0 = time.process_time()
    append = s.append
    for i in range(n):
        append(fields[i % 1000])
    build = time.process_time() - t0
    gc.enable()

    lp_bytes = sum(lp.nbytes for _, lp in s.nodes())
    total = s.memory_usage()
    print(f"entries:                  {s.length:,}")
    print(f"nodes (radix-tree-keys):  {s.node_count():,}")
    print(f"rax nodes:                {s.rax_node_count():,}")
    print(f"listpack bytes / entry:   {lp_bytes / n:.2f}")
    print(f"memory_usage / entry:     {total / n:.2f}  (target <= 30)")
    print(f"append (whole build):     {build / n * 1e6:.2f} us")

    sample = 100_000
    t0 = time.process_time()
    for i in range(sample):
        append(fields[i % 1000])
    print(f"append (steady, {sample:,}):  {(time.process_time() - t0) / sample * 1e6:.2f} us")

    for rev in (False, True):
        t0 = time.process_time()
        count = 0
        for _ in s.iter_range(MIN_ID, MAX_ID, rev):
            count += 1
        dt = time.process_time() - t0
        print(f"iterate {'backward' if rev else 'forward '} / entry: {dt / count * 1e6:.2f} us")


if __name__ == "__main__":
    main()
