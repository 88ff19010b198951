"""MONITOR: the client becomes a monitor (server/monitor_feed.py writes what monitors see)."""

from __future__ import annotations

from protocol.encoder import OK
from server.client import Client
from server.dispatch import command
from server.errors import CommandError
from server.monitor_feed import format_monitor_line, redacted_args

__all__ = ["format_monitor_line", "monitor", "redacted_args"]


@command("monitor", 1, "admin noscript loading stale", categories="@admin @slow @dangerous",
         summary="Listens for all requests received by the server in real-time.", group="server")
def monitor(client: Client, argv: list[bytes]) -> object:
    if client.multi is not None or client.in_exec:
        raise CommandError("ERR MONITOR isn't allowed for DENY BLOCKING client")
    if not client.monitor:
        client.monitor = True
        client.server.monitors.append(client)
    return OK
