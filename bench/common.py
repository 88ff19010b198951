"""Shared bits of the benchmarks: start both servers, read a process's CPU time and RSS."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.helpers import ServerProcess  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """CPU time of a process (all its threads), in seconds: the run time the scheduler
    accounts in nanoseconds (/proc/PID/task/*/schedstat), or utime + stime from
    /proc/PID/stat (10 ms ticks) where schedstat is missing."""
    try:
        total = 0
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat", "rb") as fh:
                total += int(fh.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        pass
    with open(f"/proc/{pid}/stat", "rb") as fh:
        stat = fh.read()
    fields = stat[stat.rindex(b")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def user_seconds(pid: int) -> float:
    """User-mode CPU time of a process (utime in /proc/PID/stat, 10 ms ticks): the part of
    cpu_seconds that is the process's own code, the kernel's work for it left out."""
    with open(f"/proc/{pid}/stat", "rb") as fh:
        stat = fh.read()
    return int(stat[stat.rindex(b")") + 2:].split()[11]) / CLOCK_TICKS


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


# CPUs the servers run on when pinned (see pin_cpus); None: wherever the kernel puts them.
SERVER_CPUS: set[int] | None = None


def pin_cpus() -> bool:
    """Give the servers CPU 0 and this process (and the load generators it starts) CPU 1, so
    a server never shares its core with the load: on a 2-core machine that sharing decides
    how many requests a server finds per wake-up, and so its CPU per request, run by run."""
    global SERVER_CPUS
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return False
    os.sched_setaffinity(0, {cpus[1]})
    SERVER_CPUS = {cpus[0]}
    return True


class FloorServer:
    """bench/floor_server.py on a free port: the least a uvloop + hiredis server spends."""

    def __init__(self, append: bool = False) -> None:
        from tests.helpers import free_port

        self.port = free_port()
        script = Path(__file__).resolve().parent / "floor_server.py"
        self.proc = subprocess.Popen([sys.executable, str(script), str(self.port),
                                      *(["--append"] if append else [])])
        deadline = time.monotonic() + 15
        while True:  # it answers anything with a constant, so a connection is enough
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("floor server did not start") from None
                time.sleep(0.05)
        if SERVER_CPUS is not None:
            os.sched_setaffinity(self.proc.pid, SERVER_CPUS)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def start_pair(ours_args: list[str] | None = None,
               both_args: list[str] | None = None) -> tuple[ServerProcess, ServerProcess]:
    """Our server and Debian's redis-server, both without persistence unless both_args
    (options given to both, after the defaults) turn it on, for the same load."""
    ours = ServerProcess("xstreamd", ["--appendonly", "no", "--save", "", *(ours_args or []),
                                      *(both_args or [])])
    ref = ServerProcess("redis", list(both_args or []))
    pair = ours.start(), ref.start()
    if SERVER_CPUS is not None:
        for proc in pair:
            os.sched_setaffinity(proc.proc.pid, SERVER_CPUS)  # type: ignore[union-attr]
    return pair


def redis_benchmark(port: int, args: list[str]) -> str:
    cmd = ["redis-benchmark", "-p", str(port), "-q", *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def measure(proc: ServerProcess, load: callable) -> float:  # type: ignore[valid-type]
    """Server CPU seconds spent while load() runs."""
    assert proc.proc is not None
    before = cpu_seconds(proc.proc.pid)
    load()
    return cpu_seconds(proc.proc.pid) - before
