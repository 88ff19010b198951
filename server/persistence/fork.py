"""Background children (BGSAVE, BGREWRITEAOF): fork, let the child write a point-in-time image
of memory (copy-on-write) while the parent keeps serving, and reap it.

The child never returns into the event loop: it resets the signal wake-up fd (which it shares
with the parent's loop), closes the listening sockets, asks the kernel to kill it if the parent
dies (so a crashed server leaves no orphan holding the port), disables the cyclic GC (a
collection would touch, and so copy, every page), does its work and leaves with os._exit.
"""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

    from server.log import Logger

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the child finishes its file and exits
        pass


class Child:
    """A running child process; `on_exit(exit_code)` runs in the parent once it is reaped
    (exit_code < 0 means killed by that signal)."""

    __slots__ = ("kind", "pid", "started", "on_exit", "_pidfd", "_loop", "done", "fork_usec")

    def __init__(self, kind: str, pid: int, on_exit: Callable[[int], None],
                 loop: asyncio.AbstractEventLoop | None) -> None:
        self.kind = kind
        self.pid = pid
        self.started = time.monotonic()
        self.on_exit = on_exit
        self._loop = loop
        self._pidfd = -1
        self.done = False
        self.fork_usec = 0  # how long fork() took in the parent (INFO latest_fork_usec)
        if loop is not None and hasattr(os, "pidfd_open"):
            try:
                self._pidfd = os.pidfd_open(pid)
                loop.add_reader(self._pidfd, self.poll)
            except (OSError, NotImplementedError, RuntimeError):
                self._close_pidfd()

    def _close_pidfd(self) -> None:
        if self._pidfd >= 0:
            if self._loop is not None:
                try:
                    self._loop.remove_reader(self._pidfd)
                except (RuntimeError, ValueError):
                    pass
            os.close(self._pidfd)
            self._pidfd = -1

    def poll(self, block: bool = False) -> bool:
        """Reap the child if it exited (wait for it with block); True once it is done."""
        if self.done:
            return True
        try:
            pid, status = os.waitpid(self.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            pid, status = self.pid, 1 << 8  # reaped elsewhere: count as a failure
        if pid == 0:
            return False
        self.done = True
        self._close_pidfd()
        self.on_exit(os.waitstatus_to_exitcode(status))
        return True

    def kill(self) -> None:
        """Stop the child now and reap it (its on_exit sees the signal)."""
        if self.done:
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.poll(block=True)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started


def spawn(kind: str, work: Callable[[], None], on_exit: Callable[[int], None],
          loop: asyncio.AbstractEventLoop | None, close_fds: list[int], log: Logger) -> Child:
    """Fork; the child runs work() and exits 0 (1 on any exception, which it reports in the
    server's log as a child, `pid:C`). Raises OSError when the fork itself fails."""
    sys.stdout.flush()
    sys.stderr.flush()
    fork_started = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, measured by the integration tests
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(sig, signal.SIG_DFL)
            gc.disable()
            _die_with_parent()
            for fd in close_fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
            work()
            code = 0
        except BaseException as exc:
            _report_failure(kind, exc, log)
        finally:
            os._exit(code)
    fork_usec = int((time.perf_counter() - fork_started) * 1_000_000)
    child = Child(kind, pid, on_exit, loop)
    child.fork_usec = fork_usec
    return child


def _report_failure(kind: str, exc: BaseException, log: Logger) -> None:
    """In the child: why its work failed. A system error (a full disk, a missing directory)
    is one line, as Redis logs it; anything else is a bug, so its traceback goes too."""
    what = "Background saving" if kind == "rdb" else "Background AOF rewrite"
    if isinstance(exc, OSError):
        message = f"{what} failed: {exc}"
    else:
        message = f"{what} failed:\n{traceback.format_exc()}"
    log.role = "C"
    log.warning(message)  # (Logger.log swallows a failed write)
