"""Shared helpers of the operations tests (security, limits, signals, Docker entry): servers
with their own options, raw sockets, bounded waits."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator

import hiredis

from tests.helpers import TARGET, ServerProcess
from tests.resp import encode as resp

IS_REDIS = TARGET == "redis"


@contextlib.contextmanager
def running(args: list[str] | None = None, env: dict[str, str] | None = None,
            kind: str = TARGET) -> Iterator[ServerProcess]:
    """A server of the tested kind with extra options (and environment), stopped afterwards."""
    proc = ServerProcess(kind, extra_args=args)
    saved = dict(os.environ)
    try:
        if env:
            os.environ.update(env)  # ServerProcess.start copies os.environ into the child
        proc.start()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    try:
        yield proc
    finally:
        proc.stop()


def connect(port: int, host: str = "127.0.0.1", timeout: float = 10.0) -> socket.socket:
    return socket.create_connection((host, port), timeout=timeout)


def read_replies(sock: socket.socket, count: int) -> list[object]:
    """Read exactly `count` replies (errors come back as hiredis.ReplyError values)."""
    reader = hiredis.Reader()
    replies: list[object] = []
    while len(replies) < count:
        reply = reader.gets()
        if reply is not False:
            replies.append(reply)
            continue
        data = sock.recv(65536)
        if not data:
            raise ConnectionError(f"closed after {len(replies)} of {count} replies")
        reader.feed(data)
    return replies


def call(sock: socket.socket, *args: str | bytes) -> object:
    sock.sendall(resp(*args))
    return read_replies(sock, 1)[0]


def read_to_eof(sock: socket.socket, limit: int = 1 << 20) -> bytes:
    """Everything the server sends until it closes the connection (the socket's timeout bounds
    the wait; a reset counts as the end)."""
    data = b""
    while len(data) < limit:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data


def is_closed(sock: socket.socket, timeout: float = 10.0) -> bool:
    """True when the server closed (or reset) the connection within `timeout`; data still
    arriving is drained."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = sock.recv(1 << 20)
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
        if not chunk:
            return True
    return False


def wait_until(predicate: Callable[[], object], timeout: float = 10.0,
               interval: float = 0.05) -> bool:
    """Poll until predicate() is truthy; False if it never was within timeout."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def info(sock: socket.socket, section: str = "") -> dict[str, str]:
    text = call(sock, "INFO", section) if section else call(sock, "INFO")
    assert isinstance(text, bytes), text
    fields: dict[str, str] = {}
    for line in text.decode().splitlines():
        if line and not line.startswith("#") and ":" in line:
            key, _, value = line.partition(":")
            fields[key] = value
    return fields


def non_loopback_ipv4() -> str | None:
    """One of this machine's own non-loopback IPv4 addresses (connecting to it from here makes
    a non-loopback peer), or None."""
    candidates: list[str] = []
    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=5)
        candidates = [a for a in out.stdout.split() if "." in a and not a.startswith("127.")]
    except (OSError, subprocess.SubprocessError):
        pass
    for address in candidates:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind((address, 0))
            return address
        except OSError:
            continue
    return None


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")
