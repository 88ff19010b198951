"""SLOWLOG's entries: commands that took at least slowlog-log-slower-than microseconds, newest
first, at most slowlog-max-len of them (slowlog.c)."""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING

from server.monitor_feed import redacted_args

if TYPE_CHECKING:
    from server.client import Client


class SlowlogEntry:
    __slots__ = ("id", "time", "duration", "argv", "addr", "name")

    def __init__(self, entry_id: int, duration: int, argv: list[bytes], client: Client) -> None:
        self.id = entry_id
        self.time = int(time.time())
        self.duration = duration
        # Redis keeps at most 32 args, each cut to 128 bytes.
        shown = [a if len(a) <= 128 else a[:128] + b"... (%d more bytes)" % (len(a) - 128)
                 for a in argv[:32]]
        if len(argv) > 32:
            shown[-1] = b"... (%d more arguments)" % (len(argv) - 31)
        self.argv = shown
        self.addr = client.addr.encode()
        self.name = client.name


class Slowlog(deque[SlowlogEntry]):
    """The entries, newest first; `next_id` numbers the next one (SLOWLOG RESET keeps it)."""

    def __init__(self) -> None:
        super().__init__()
        self.next_id = 0

    def add(self, client: Client, argv: list[bytes], elapsed_us: int, max_len: int) -> None:
        """A command took at least the threshold (AUTH's secrets and the like redacted)."""
        self.appendleft(SlowlogEntry(self.next_id, elapsed_us, redacted_args(argv), client))
        self.next_id += 1
        while len(self) > max_len:
            self.pop()
