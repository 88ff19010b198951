"""Logging in Redis's style: `pid:M 21 Nov 2026 23:59:59.123 * message`, to stdout or a file."""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

LEVELS = {"debug": 0, "verbose": 1, "notice": 2, "warning": 3, "nothing": 4}
_MARKS = {0: ".", 1: "-", 2: "*", 3: "#"}


class Logger:
    def __init__(self, level: str = "notice", path: str = "") -> None:
        self.level = LEVELS[level]
        self.path = path
        self.role = "M"  # Redis's role letter: M for the server, C in a forked child
        self._stream: TextIO = sys.stdout
        self.reopen()

    def reopen(self) -> None:
        """Open (or, after SIGHUP, reopen) the log file; an empty path logs to stdout."""
        if self.path:
            old = self._stream
            self._stream = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
            if old is not sys.stdout:
                old.close()
        else:
            self._stream = sys.stdout

    def set_level(self, level: str) -> None:
        self.level = LEVELS[level]

    def log(self, level: int, message: str) -> None:
        if level < self.level:
            return
        now = time.time()
        stamp = time.strftime("%d %b %Y %H:%M:%S", time.localtime(now))
        millis = int((now % 1) * 1000)
        line = f"{os.getpid()}:{self.role} {stamp}.{millis:03d} {_MARKS[level]} {message}\n"
        try:
            self._stream.write(line)
            self._stream.flush()
        except (OSError, ValueError):
            pass

    def debug(self, message: str) -> None:
        self.log(0, message)

    def verbose(self, message: str) -> None:
        self.log(1, message)

    def notice(self, message: str) -> None:
        self.log(2, message)

    def warning(self, message: str) -> None:
        self.log(3, message)
