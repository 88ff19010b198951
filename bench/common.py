"""Shared bits of the benchmarks: start both servers, read a process's CPU time and RSS."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.helpers import ServerProcess  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc/PID/stat (fields 14 and 15)."""
    with open(f"/proc/{pid}/stat", "rb") as fh:
        stat = fh.read()
    fields = stat[stat.rindex(b")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def start_pair(ours_args: list[str] | None = None) -> tuple[ServerProcess, ServerProcess]:
    """Our server and Debian's redis-server, both without persistence, for the same load."""
    ours = ServerProcess("xstreamd", ["--appendonly", "no", "--save", "", *(ours_args or [])])
    ref = ServerProcess("redis")
    return ours.start(), ref.start()


def redis_benchmark(port: int, args: list[str]) -> str:
    cmd = ["redis-benchmark", "-p", str(port), "-q", *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def measure(proc: ServerProcess, load: callable) -> float:  # type: ignore[valid-type]
    """Server CPU seconds spent while load() runs."""
    assert proc.proc is not None
    before = cpu_seconds(proc.proc.pid)
    load()
    return cpu_seconds(proc.proc.pid) - before
