"""Machine instructions per command, counted by valgrind (not a test).

Time on this shared 2-core machine moves by a few percent from run to run, which hides the
effect of most single changes. Instructions do not move: this runs the in-process harness
(bench_inprocess.py: the real Server and Connection on fake transports) under valgrind's
callgrind twice, once without the commands, and divides the difference by their number.
The count covers the interpreter and every C library it calls; it is a guide to where time
goes, not a time (a cache miss costs more than an add), so keep timing what you keep.

    python bench/bench_instructions.py "XADD s * f v" [--per-read 16] [--commands 5000]
                                       [--per-ms 20] [--per-pass 10] [--aof]

--per-ms N gives the stream a clock that moves one millisecond every N reads (about the rate
of bench/run.py's unpipelined XADD load): under valgrind's slowness the wall clock would make
every XADD start a new millisecond, whose ID text costs more than the usual next sequence. It
also makes the command timer read 4 us per command, a usual duration outside valgrind, so the
per-command statistics (counted by duration) see what they see in real runs.

--per-pass N runs the before-sleep pass (which writes the replies) after every N reads, of 50
connections taken in turn. 10 is what the server sees under bench/run.py's unpipelined XADD
load: 200,000 commands took 20,202 passes (the server is faster than redis-benchmark, so each
loop iteration finds ~10 clients readable, not all 50).

Needs valgrind (Debian's package). Takes about ten seconds per thousand commands.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# What runs under valgrind: warm up (streams exist, caches are filled), then `count` reads.
_DRIVER = """
import sys
sys.path[:0] = [{here!r}, {root!r}]  # this checkout's code, not an installed copy's
if {per_ms}:
    import itertools
    import storage.stream
    import server.dispatch
    storage.stream._time_ns = itertools.count(1_700_000_000_000_000_000,
                                              1_000_000 // {per_ms}).__next__
    # The command clock (two readings a command, the first also XADD's time): every command
    # takes 4 us (under valgrind the real durations are ~50 times longer and spread over many
    # values), and one starts every 1/{per_ms} ms.
    server.dispatch._now_ns = itertools.accumulate(
        itertools.cycle((4_000, 1_000_000 // {per_ms} - 4_000)),
        initial=1_700_000_000_000_000_000).__next__
    # The pipelined XADD run's clock (one reading a command): 4 us a command.
    import server.commands.stream_cmds
    server.commands.stream_cmds._now_ns = itertools.count(1_700_000_000_000_000_000,
                                                          4_000).__next__
import gc
from bench_inprocess import encode, make_server
server, conns = make_server(50, aof={aof})
chunk = encode({argv!r}) * {per_read}

def reads(first, last):
    for i in range(first, last):
        conns[i % 50].data_received(chunk)
        if i % {per_pass} == {per_pass} - 1:
            server.before_sleep()


reads(0, 500)
# Whether a full collection (which walks every object, so costs millions of instructions)
# falls among the measured commands would swing the result by ~1%.
gc.collect()
gc.freeze()
reads(500, 500 + {count})
server.before_sleep()
"""


def instructions(argv: list[bytes], per_read: int, count: int, per_ms: int, per_pass: int,
                 aof: bool) -> int:
    script = _DRIVER.format(here=HERE, root=os.path.dirname(HERE), argv=argv,
                            per_read=per_read, count=count, per_ms=per_ms, per_pass=per_pass,
                            aof=aof)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "driver.py")
        with open(path, "w") as fh:
            fh.write(script)
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
             path],
            capture_output=True, text=True, check=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},  # the same dict layouts every run
        )
    match = re.search(r"Collected : (\d+)", done.stderr)
    if match is None:
        raise RuntimeError("no instruction count from valgrind:\n" + done.stderr[-2000:])
    return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", help='the command, split on spaces, e.g. "XADD s * f v"')
    parser.add_argument("--per-read", type=int, default=1, help="commands per socket read")
    parser.add_argument("--commands", type=int, default=5000, help="reads to count")
    parser.add_argument("--per-ms", type=int, default=0,
                        help="reads per millisecond of a fixed stream clock (0: wall clock)")
    parser.add_argument("--per-pass", type=int, default=10,
                        help="reads per event-loop pass (before-sleep), 1 to 50")
    parser.add_argument("--aof", action="store_true",
                        help="with the AOF on (appendfsync everysec; the writes are counted)")
    args = parser.parse_args()
    if not 1 <= args.per_pass <= 50:
        parser.error("--per-pass must be 1 to 50")
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install -y valgrind)")
    argv = [a.encode() for a in args.command.split()]
    base = instructions(argv, args.per_read, 0, args.per_ms, args.per_pass, args.aof)
    total = instructions(argv, args.per_read, args.commands, args.per_ms, args.per_pass,
                         args.aof)
    per_command = (total - base) / (args.commands * args.per_read)
    print(f"{per_command:,.0f} instructions per command ({sys.version.split()[0]}, "
          f"{sys.executable})")


if __name__ == "__main__":
    main()
