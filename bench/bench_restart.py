"""Time from start to serving after a restart, ours against redis-server in the same run (not
a test).

    python bench/bench_restart.py [--entries 1000000] [--streams 4] [--repeat 3]

Each server is filled once with `--entries` entries (in `--streams` streams, three small
fields each, and a consumer group per stream with some pending entries) with the AOF on,
then restarted on the same directory for each case:

1. aof-incr: the AOF as written, every command in the incr file (the base is empty);
2. aof-base: after BGREWRITEAOF with aof-use-rdb-preamble yes (the base is an RDB file);
3. rdb: SAVE, then a start with the AOF off, which loads dump.rdb.

A restart's time runs from just before the process is spawned until it answers PING with
+PONG (a connection refused or -LOADING is polled again); the data is then checked. Both
servers restart in turns, alternating which goes first, and the best of `--repeat` counts.

Ours starts as an installed server does, from compiled bytecode: pip compiles the modules
when it installs them (the Docker image too), so a start does not compile them again. The
bench gives the server a bytecode cache of its own (PYTHONPYCACHEPREFIX in the bench's
temporary directory, whatever PYTHONDONTWRITEBYTECODE says), filled by the first start.
`--no-bytecode` starts it with no cache at all, compiling its ~200 modules on every start
(about 0.3 s more), as a checkout run with PYTHONDONTWRITEBYTECODE=1 does.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.helpers import REPO_ROOT, ServerProcess  # noqa: E402

KINDS = ("redis", "xstreamd")
CASES = ("aof-incr", "aof-base", "rdb")
GROUP = "g"
FIELDS = {"f1": "value-1", "f2": 12345, "f3": "x" * 20}


def _args(case: str) -> list[str]:
    aof = "no" if case == "rdb" else "yes"
    # (no automatic rewrite: the aof-incr case must find every command in the incr file)
    return ["--appendonly", aof, "--aof-use-rdb-preamble", "yes", "--appendfsync", "everysec",
            "--auto-aof-rewrite-percentage", "0", "--save", ""]


def _fill(port: int, entries: int, streams: int) -> None:
    """Entries in batches of pipelined XADDs; a group per stream that read a tenth of its
    entries (XREADGROUP, propagated as XCLAIMs) and acknowledged half of those."""
    r = redis.Redis(port=port)
    per_stream = entries // streams
    for s in range(streams):
        key = f"s{s}"
        for start in range(0, per_stream, 5000):
            pipe = r.pipeline(transaction=False)
            for _ in range(start, min(per_stream, start + 5000)):
                pipe.xadd(key, FIELDS)
            pipe.execute()
        r.xgroup_create(key, GROUP, id="0")
        for _ in range(per_stream // 10 // 1000):
            read = r.xreadgroup(GROUP, "c1", {key: ">"}, count=1000)
            ids = [entry_id for entry_id, _ in read[0][1]]
            r.xack(key, GROUP, *ids[::2])


def _state(port: int, streams: int) -> tuple[int, int]:
    r = redis.Redis(port=port)
    length = sum(r.xlen(f"s{s}") for s in range(streams))
    pending = sum(r.xpending(f"s{s}", GROUP)["pending"] for s in range(streams))
    return length, pending


def _wait_aof_rewrite(port: int) -> None:
    r = redis.Redis(port=port)
    while True:
        info = r.info("persistence")
        if not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]:
            return
        time.sleep(0.05)


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            sock.sendall(b"*1\r\n$4\r\nPING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class Restarter:
    """One server kind on its own directory, restarted for each measurement."""

    def __init__(self, kind: str, root: str, bytecode: bool = True) -> None:
        self.kind = kind
        self.dir = os.path.join(root, kind)
        os.makedirs(self.dir)
        # (None: the environment's own setting, which may write no cache at all)
        self.pycache = os.path.join(root, "pycache") if bytecode else None
        self.proc: ServerProcess | None = None
        self.expected = (0, 0)  # (entries, pending entries) after the fill

    def start(self, case: str, timeout: float = 600.0) -> float:
        """Start with the case's options; the seconds until the first +PONG."""
        proc = ServerProcess(self.kind, _args(case), workdir=self.dir, root=REPO_ROOT)
        log = open(proc.log_path, "ab")  # noqa: SIM115 - closed once the child has it
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        if self.pycache is not None:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = self.pycache
        else:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        started = time.monotonic()
        proc.proc = subprocess.Popen(proc.command(), stdout=log, stderr=subprocess.STDOUT,
                                     cwd=self.dir, env=env)
        log.close()
        self.proc = proc
        while not _ping(proc.port):
            if proc.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} exited at start:\n{proc.read_log()[-3000:]}")
            if time.monotonic() - started > timeout:
                raise RuntimeError(f"{self.kind} did not answer PING within {timeout}s")
            time.sleep(0.002)
        return time.monotonic() - started

    def stop(self) -> None:
        assert self.proc is not None
        self.proc.stop(cleanup=False)
        self.proc = None

    @property
    def port(self) -> int:
        assert self.proc is not None
        return self.proc.port


def _prepare(r: Restarter, case: str) -> None:
    """Turn the files on disk into the case's (the server is running)."""
    client = redis.Redis(port=r.port)
    if case == "aof-base":
        client.bgrewriteaof()
        time.sleep(0.2)
        _wait_aof_rewrite(r.port)
    elif case == "rdb":
        client.save()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--no-bytecode", action="store_true",
                        help="start ours with no bytecode cache (every module compiled)")
    args = parser.parse_args()
    cases = args.cases.split(",")
    root = tempfile.mkdtemp(prefix="bench-restart-")
    servers = [Restarter(kind, root, not args.no_bytecode) for kind in KINDS]
    best: dict[tuple[str, str], float] = {}
    try:
        for s in servers:
            s.start("aof-incr")
            _fill(s.port, args.entries, args.streams)
            s.expected = _state(s.port, args.streams)
        for case in cases:
            for s in servers:
                _prepare(s, case)
                s.stop()
            for turn in range(args.repeat):
                for s in servers if turn % 2 == 0 else servers[::-1]:
                    took = s.start(case)
                    got = _state(s.port, args.streams)
                    if got != s.expected:
                        raise RuntimeError(f"{s.kind} {case}: loaded {got}, expected "
                                           f"{s.expected}")
                    key = (s.kind, case)
                    best[key] = min(best.get(key, took), took)
                    print(f"  {case:9} {s.kind:9} {took:7.3f} s", file=sys.stderr)
                    if turn < args.repeat - 1:
                        s.stop()
            # the next case starts from the files this one loaded
    finally:
        for s in servers:
            if s.proc is not None:
                s.stop()
        shutil.rmtree(root, ignore_errors=True)
    flag = " --no-bytecode" if args.no_bytecode else ""
    print(f"\n`python bench/bench_restart.py --entries {args.entries} --streams {args.streams} "
          f"--repeat {args.repeat}{flag}`: {args.entries:,} entries in {args.streams} streams, "
          f"best of {args.repeat} restarts\n")
    print("| case | redis-server | xstreamd | ratio |")
    print("|---|---|---|---|")
    for case in cases:
        theirs, ours = best[("redis", case)], best[("xstreamd", case)]
        print(f"| {case} | {theirs:.3f} s | {ours:.3f} s | {ours / theirs:.1f}x |")


if __name__ == "__main__":
    main()
