"""CLIENT PAUSE: suspend the commands of every client, or only those that write, for a time.

As in Redis (pauseActions, blockPostponeClient, unblockPostponedClients):

* A paused command is postponed when it arrives, after the NOAUTH and refusal checks and
  before MULTI queueing: its client is blocked (CLIENT LIST flag `b`, INFO's
  blocked_clients) and keeps the command and everything it sends after it. WRITE mode
  postpones the commands flagged `write`, and EXEC when it holds one; ALL every command.
* When the pause ends (its time is up, or CLIENT UNPAUSE), the postponed clients run their
  commands again from the start, oldest first, with every check made again.
* While paused, keys whose time has passed read as missing but are not deleted, so the
  data set stays static; the active expire cycle waits too.
* A second CLIENT PAUSE takes the new mode and the later of the two ends.
* Commands that never arrive from a connection (AOF loading) and the commands run inside
  EXEC, or re-run for blocked readers, are never postponed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from server.dispatch import clear_fast_lookup, find
from server.errors import CommandError

if TYPE_CHECKING:
    import asyncio

    from server.app import Server
    from server.client import Client
    from server.dispatch import CommandSpec

ALL = "all"
WRITE = "write"


class ClientPause:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.mode: str | None = None  # ALL or WRITE while a pause is on
        self.end = 0.0  # loop time at which the pause ends
        self._timer: asyncio.TimerHandle | None = None
        # Postponed clients by id, oldest first.
        self._postponed: dict[int, Client] = {}

    # -- starting and ending ------------------------------------------------------------------
    def pause(self, timeout_ms: int, mode: str) -> None:
        loop = self.server.loop
        if timeout_ms <= 0 and self.mode is None:
            return  # (Redis's end time 0 has passed already: nothing is paused)
        end = loop.time() + timeout_ms / 1000.0
        if self.mode is None or end > self.end:
            self.end = end
        self.mode = mode
        clear_fast_lookup()  # every command takes the checked path while paused
        self._set_expiry_paused(True)
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_at(self.end, self.unpause)

    def unpause(self) -> None:
        """End the pause (CLIENT UNPAUSE, or its time is up) and resume the postponed clients
        in the order they were postponed."""
        if self.mode is None:
            return
        self.mode = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._set_expiry_paused(False)
        postponed = list(self._postponed.values())
        self._postponed.clear()
        server = self.server
        for client in postponed:
            server.blocking.release_postponed(client)
            server.resume_client(client)  # (its commands run soon, not inside this call)

    def _set_expiry_paused(self, paused: bool) -> None:
        # (a replica never deletes keys whose time passed: its primary's DEL does)
        paused = paused or self.server.replica_mode
        for db in self.server.dbs:
            db.expiry_paused = paused

    # -- postponing ---------------------------------------------------------------------------
    def holds(self, client: Client, spec: CommandSpec) -> bool:
        """Whether this command must wait for the end of the pause (only asked while paused)."""
        if client.sink is None:
            return False
        if self.mode == ALL:
            return spec.name != "quit"  # (QUIT is answered before any check, as in Redis 7.0)
        if spec.is_write:
            return True
        return spec.name == "exec" and client.multi is not None and any(
            _writes(argv) for argv in client.multi)

    def postpone(self, client: Client) -> None:
        self.server.blocking.postpone(client)
        self._postponed[client.id] = client

    def forget(self, client: Client) -> None:
        """A postponed client went away."""
        self._postponed.pop(client.id, None)


def _writes(argv: list[bytes]) -> bool:
    try:
        return find(argv).is_write
    except CommandError:
        return False
