"""Signals and logging: SIGTERM/SIGINT shut down gracefully (stop accepting, flush and fsync
the AOF, close clients), SIGHUP reopens the log file, Redis-style log lines and loglevel.

`XSTREAMD_TEST_TARGET=redis` runs this file against Debian's redis-server 7.0 (SIGHUP
reopening is xstreamd's; Redis ignores SIGHUP).
"""

from __future__ import annotations

import os
import re
import signal
import socket

import pytest

from tests.helpers import ServerProcess
from tests.integration.ops_helpers import (
    IS_REDIS,
    TARGET,
    call,
    connect,
    is_closed,
    read_replies,
    resp,
    wait_until,
)

# pid:role day month year time.millis level-mark message
LOG_LINE = re.compile(r"^\d+:[CMSX] \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2}\.\d{3} [.\-*#] \S")


def stop_with(proc: ServerProcess, sig: int) -> int:
    assert proc.proc is not None
    proc.proc.send_signal(sig)
    return proc.proc.wait(timeout=30)


def log_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("fsync", ["everysec", "always", "no"])
def test_sigterm_is_graceful_and_keeps_the_aof(fsync: str) -> None:
    args = ["--appendonly", "yes", "--appendfsync", fsync]
    proc = ServerProcess(TARGET, extra_args=args).start()
    restarted: ServerProcess | None = None
    try:
        writer = connect(proc.port)
        entries = 300
        writer.sendall(b"".join(resp("XADD", "s", f"{i}-1", "f", f"v{i}")
                                for i in range(1, entries + 1)))
        read_replies(writer, entries)
        assert call(writer, "XGROUP", "CREATE", "s", "g", "0") == b"OK"
        assert call(writer, "XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s",
                    ">") == [[b"s", [[b"1-1", [b"f", b"v1"]], [b"2-1", [b"f", b"v2"]]]]]
        blocked = connect(proc.port)
        blocked.sendall(resp("XREAD", "BLOCK", "0", "STREAMS", "s", "$"))
        assert wait_until(lambda: b"cmd=xread" in call(writer, "CLIENT", "LIST"))

        assert stop_with(proc, signal.SIGTERM) == 0
        # Clients were closed (the blocked one gets no reply), the port is released.
        assert is_closed(blocked, timeout=5)
        assert is_closed(writer, timeout=5)
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", proc.port), timeout=2)
        log = proc.read_log()
        assert "Received SIGTERM scheduling shutdown..." in log
        assert "User requested shutdown..." in log
        assert "is now ready to exit, bye bye..." in log

        # Everything acknowledged before the signal is there after a restart.
        restarted = ServerProcess(TARGET, extra_args=args, workdir=proc.dir,
                                  port=proc.port).start()
        client = connect(restarted.port)
        assert wait_until(lambda: call(client, "XLEN", "s") == entries)
        assert call(client, "XRANGE", "s", "-", "+", "COUNT", "1") == [[b"1-1", [b"f", b"v1"]]]
        pending = call(client, "XPENDING", "s", "g")
        assert pending[0] == 2  # type: ignore[index]
    finally:
        if restarted is not None:
            restarted.stop()
        proc.stop()


def test_sigint_shuts_down() -> None:
    proc = ServerProcess(TARGET).start()
    try:
        sock = connect(proc.port)
        assert call(sock, "PING") == b"PONG"
        assert stop_with(proc, signal.SIGINT) == 0
        assert is_closed(sock, timeout=5)
        log = proc.read_log()
        assert "Received SIGINT scheduling shutdown..." in log
        assert "is now ready to exit, bye bye..." in log
    finally:
        proc.stop()


def test_sigterm_with_a_client_that_does_not_read() -> None:
    """Unsent output does not hold the shutdown up."""
    proc = ServerProcess(TARGET).start()
    try:
        sock = connect(proc.port)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        assert call(sock, "XADD", "big", "1-1", "f", "v" * 200_000) == b"1-1"
        sock.sendall(resp("XRANGE", "big", "-", "+") * 50)  # 10 MB of replies, never read
        other = connect(proc.port)
        assert call(other, "PING") == b"PONG"
        assert stop_with(proc, signal.SIGTERM) == 0
    finally:
        proc.stop()


def test_log_lines_have_redis_format() -> None:
    proc = ServerProcess(TARGET, extra_args=["--loglevel", "verbose"]).start()
    try:
        sock = connect(proc.port)
        assert call(sock, "PING") == b"PONG"
        sock.close()
        stop_with(proc, signal.SIGTERM)
        lines = [line for line in log_lines(proc.read_log()) if LOG_LINE.match(line)]
        assert any("Ready to accept connections" in line for line in lines)
        assert any(re.search(r" - Accepted 127\.0\.0\.1:\d+$", line) for line in lines)
        if not IS_REDIS:  # Redis also prints its ASCII-art banner
            assert lines == log_lines(proc.read_log())
            pid = str(proc.proc.pid)  # type: ignore[union-attr]
            assert all(line.split(":", 1)[0] == pid for line in lines)
    finally:
        proc.stop()


def test_loglevel_at_start_and_at_run_time(tmp_path: os.PathLike[str]) -> None:
    logfile = os.path.join(str(tmp_path), "x.log")
    proc = ServerProcess(TARGET, extra_args=["--loglevel", "warning", "--logfile", logfile])
    proc.start()
    try:
        sock = connect(proc.port)
        assert call(sock, "CONFIG", "GET", "loglevel") == [b"loglevel", b"warning"]
        assert call(sock, "CONFIG", "GET", "logfile") == [b"logfile", logfile.encode()]
        with open(logfile, encoding="utf-8") as fh:
            text = fh.read()
        assert "Ready to accept connections" not in text  # a notice
        assert "Accepted" not in text
        assert call(sock, "CONFIG", "SET", "loglevel", "verbose") == b"OK"
        other = connect(proc.port)
        assert call(other, "PING") == b"PONG"

        def accepted_logged() -> bool:
            with open(logfile, encoding="utf-8") as fh:
                return f"Accepted 127.0.0.1:{other.getsockname()[1]}" in fh.read()

        assert wait_until(accepted_logged)
        assert proc.read_log().strip() == "" or IS_REDIS  # nothing went to stdout
    finally:
        proc.stop()


@pytest.mark.skipif(IS_REDIS, reason="Redis ignores SIGHUP")
def test_sighup_reopens_the_log_file(tmp_path: os.PathLike[str]) -> None:
    logfile = os.path.join(str(tmp_path), "xstreamd.log")
    rotated = logfile + ".1"
    proc = ServerProcess(TARGET, extra_args=["--loglevel", "verbose", "--logfile", logfile])
    proc.start()
    try:
        os.rename(logfile, rotated)  # what logrotate does before it signals the server
        assert proc.proc is not None
        proc.proc.send_signal(signal.SIGHUP)
        assert wait_until(lambda: os.path.exists(logfile))
        sock = connect(proc.port)
        assert call(sock, "PING") == b"PONG"
        port = sock.getsockname()[1]

        def logged_in_new_file() -> bool:
            with open(logfile, encoding="utf-8") as fh:
                return f"Accepted 127.0.0.1:{port}" in fh.read()

        assert wait_until(logged_in_new_file)
        with open(rotated, encoding="utf-8") as fh:
            old = fh.read()
        assert "Ready to accept connections" in old
        assert f"Accepted 127.0.0.1:{port}" not in old
        assert stop_with(proc, signal.SIGTERM) == 0
        with open(logfile, encoding="utf-8") as fh:
            assert "ready to exit, bye bye..." in fh.read()
    finally:
        proc.stop()
