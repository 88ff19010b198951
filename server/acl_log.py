"""ACL LOG: recent security events, newest first, grouped as Redis groups them.

Events are failed authentications (reason "auth") and commands refused by a user's ACL
rules (reasons "command", "key", "channel": server/acl/access.py). An event like one of the
ten newest entries (same reason, context, object and username, that entry updated less than
60 seconds ago) bumps that entry's count and moves it to the front instead of adding a new
one (acl.c addACLLogEntry).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from itertools import islice

GROUPING_MS = 60_000  # ACL_LOG_GROUPING_MAX_TIME_DELTA
_SCANNED = 10  # entries looked at for one to group with


@dataclass(slots=True)
class AclLogEntry:
    entry_id: int  # 0, 1, ... in order of creation since the server started
    reason: str  # "auth", "command", "key" or "channel"
    context: str  # "toplevel" or "multi"
    object: bytes  # what was denied; the command's name as sent for "auth"
    username: bytes
    client_info: str  # CLIENT INFO of the client behind the latest event
    created_ms: int
    updated_ms: int
    count: int = 1


class AclLog:
    def __init__(self) -> None:
        self.entries: deque[AclLogEntry] = deque()
        self._next_id = 0

    def add(self, reason: str, context: str, object: bytes, username: bytes,
            client_info: str, now_ms: int, max_len: int) -> None:
        for index, entry in enumerate(islice(self.entries, _SCANNED)):
            if (entry.reason == reason and entry.context == context
                    and abs(now_ms - entry.updated_ms) <= GROUPING_MS
                    and entry.object == object and entry.username == username):
                del self.entries[index]
                self.entries.appendleft(entry)
                entry.count += 1
                entry.client_info = client_info
                entry.updated_ms = now_ms
                return
        self.entries.appendleft(AclLogEntry(self._next_id, reason, context, object, username,
                                            client_info, now_ms, now_ms))
        self._next_id += 1
        while len(self.entries) > max_len:
            self.entries.pop()

    def reset(self) -> None:
        """ACL LOG RESET (entry ids go on from where they were)."""
        self.entries.clear()
