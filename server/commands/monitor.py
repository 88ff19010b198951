"""MONITOR's line format lives with the MONITOR command; re-exported for the server."""

from server.commands.server_admin import format_monitor_line

__all__ = ["format_monitor_line"]
