"""Memory held by closed and slow clients, ours vs Debian's redis-server (not a test).

Both servers are started in the same run and take the same two loads, one after the other:

1. Closed clients: `--clients` clients, one after another, each send
   `*3\\r\\n$4\\r\\nECHO\\r\\n$536870912\\r\\n` and `--bulk-mb` MB of that bulk, then close.
   The server's RSS before the first, its highest while one is connected, and 0.1 s and 1 s
   after the last one closed.
2. A slow reader: with `client-output-buffer-limit normal 64mb 0 0`, a client sends XRANGE
   requests for a 1 MB entry, 32 at a time, and reads nothing. The time from its first
   request until the server drops it (its next send fails), the server's RSS before, its
   peak (VmHWM, reset first where /proc allows, else sampled) and 1 s after.

Everything goes to 127.0.0.1 and every loop is bounded (a slow reader gives up after 30 s).

    python bench/bench_client_memory.py [--clients 6] [--bulk-mb 100] [--ours-root PATH]

`--ours-root` runs another checkout's server as "ours" (an older commit, to compare).
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import rss_bytes  # noqa: E402

from tests.helpers import REPO_ROOT, ServerProcess  # noqa: E402

MB = 1 << 20
BULK_HEADER = b"*3\r\n$4\r\nECHO\r\n$536870912\r\n"
LIMIT = "normal 64mb 0 0"
SLOW_REPLY = MB
SLOW_BATCH = 32
SLOW_TIMEOUT = 30.0


def encode(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def call(sock: socket.socket, *args: bytes) -> bytes:
    """One command and the start of its reply (enough for the short replies used here)."""
    sock.sendall(encode(*args))
    return sock.recv(1 << 16)


class Peak:
    """The highest RSS of a process from now on: VmHWM after resetting it (writing 5 to
    /proc/PID/clear_refs), or, where that is not allowed, RSS sampled every 2 ms."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.sampled = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        try:
            with open(f"/proc/{pid}/clear_refs", "w") as fh:
                fh.write("5")
            self.reset = True
        except OSError:
            self.reset = False
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.sampled = max(self.sampled, rss_bytes(self.pid))
            time.sleep(0.002)

    def stop(self) -> int:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            return self.sampled
        with open(f"/proc/{self.pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError("no VmHWM")


@dataclass
class ClosedResult:
    before: int
    peak: int
    after_100ms: int
    after_1s: int


def closed_clients(proc: ServerProcess, clients: int, bulk_mb: int) -> ClosedResult:
    assert proc.proc is not None
    pid = proc.proc.pid
    before = rss_bytes(pid)
    peak = 0
    chunk = b"x" * MB
    for _ in range(clients):
        sock = socket.create_connection((proc.host, proc.port), timeout=30)
        sock.sendall(BULK_HEADER)
        for _ in range(bulk_mb):
            sock.sendall(chunk)
        # Until the server has read it all (its RSS stops growing), at most 10 s.
        deadline = time.monotonic() + 10
        last = -1
        while time.monotonic() < deadline:
            now = rss_bytes(pid)
            if now == last and now - before >= bulk_mb * MB * 0.9:
                break
            last = now
            time.sleep(0.05)
        peak = max(peak, rss_bytes(pid))
        sock.close()
        time.sleep(0.1)
    after_100ms = rss_bytes(pid)
    time.sleep(0.9)
    return ClosedResult(before, peak, after_100ms, rss_bytes(pid))


@dataclass
class SlowResult:
    before: int
    peak: int
    after_1s: int
    dropped_after: float | None  # seconds, None if it was never dropped


def slow_reader(proc: ServerProcess) -> SlowResult:
    assert proc.proc is not None
    pid = proc.proc.pid
    admin = socket.create_connection((proc.host, proc.port), timeout=10)
    call(admin, b"CONFIG", b"SET", b"client-output-buffer-limit", LIMIT.encode())
    call(admin, b"DEL", b"big")
    call(admin, b"XADD", b"big", b"1-1", b"f", b"v" * SLOW_REPLY)
    time.sleep(0.2)
    before = rss_bytes(pid)
    peak = Peak(pid)
    sock = socket.create_connection((proc.host, proc.port), timeout=SLOW_TIMEOUT)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    batch = encode(b"XRANGE", b"big", b"-", b"+") * SLOW_BATCH
    started = time.monotonic()
    dropped_after = None
    try:
        while time.monotonic() - started < SLOW_TIMEOUT:
            sock.sendall(batch)
            time.sleep(0.001)
    except OSError:  # reset or broken pipe: the server dropped it
        dropped_after = time.monotonic() - started
    sock.close()
    time.sleep(1.0)
    result = SlowResult(before, peak.stop(), rss_bytes(pid), dropped_after)
    call(admin, b"CONFIG", b"SET", b"client-output-buffer-limit", b"normal 0 0 0")
    admin.close()
    return result


def mb(n: int) -> str:
    return f"{n / MB:8.1f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=6, choices=range(1, 11))
    parser.add_argument("--bulk-mb", type=int, default=100, choices=range(1, 201),
                        metavar="1..200")
    parser.add_argument("--ours-root", type=Path, default=REPO_ROOT)
    args = parser.parse_args()
    servers = [("xstreamd", ServerProcess("xstreamd", ["--appendonly", "no", "--save", ""],
                                          root=args.ours_root)),
               ("redis-server", ServerProcess("redis"))]
    for _, proc in servers:
        proc.start()
    try:
        closed = {name: closed_clients(proc, args.clients, args.bulk_mb)
                  for name, proc in servers}
        slow = {name: slow_reader(proc) for name, proc in servers}
    finally:
        for _, proc in servers:
            proc.stop()
    print(f"{args.clients} clients, one after another, each {args.bulk_mb} MB of an "
          f"unfinished bulk, then close (RSS, MB)")
    print(f"{'server':14}{'before':>8}{'peak':>8}{'+0.1s':>8}{'+1s':>8}")
    for name, r in closed.items():
        print(f"{name:14}{mb(r.before)}{mb(r.peak)}{mb(r.after_100ms)}{mb(r.after_1s)}")
    print()
    print(f"slow reader: {LIMIT}, {SLOW_BATCH} XRANGE of a 1 MB entry a batch, never read "
          f"(RSS, MB)")
    print(f"{'server':14}{'before':>8}{'peak':>8}{'+1s':>8}{'dropped after':>15}")
    for name, s in slow.items():
        dropped = (f"{s.dropped_after:.2f} s" if s.dropped_after is not None
                   else f"not in {SLOW_TIMEOUT:.0f} s")
        print(f"{name:14}{mb(s.before)}{mb(s.peak)}{mb(s.after_1s)}{dropped:>15}")


if __name__ == "__main__":
    main()
