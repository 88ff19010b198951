"""MONITOR, and the line every monitor gets per command (replicationFeedMonitors).

The server feeds monitors once a command has run (server.dispatch.call), skipping admin
commands, so EXEC shows up after the commands it ran, as in Redis.
"""

from __future__ import annotations

import time

from protocol.encoder import OK, SimpleString
from server.client import Client
from server.dispatch import command
from server.errors import CommandError

__all__ = ["format_monitor_line", "monitor", "redacted_args"]

_ESCAPES = {34: '\\"', 92: "\\\\", 10: "\\n", 13: "\\r", 9: "\\t", 7: "\\a", 8: "\\b"}
_REDACTED = b"(redacted)"


@command("monitor", 1, "admin noscript loading stale", categories="@admin @slow @dangerous",
         summary="Listens for all requests received by the server in real-time.", group="server")
def monitor(client: Client, argv: list[bytes]) -> object:
    if client.multi is not None or client.in_exec:
        raise CommandError("ERR MONITOR isn't allowed for DENY BLOCKING client")
    if not client.monitor:
        client.monitor = True
        client.server.monitors.append(client)
    return OK


def redacted_args(argv: list[bytes]) -> list[bytes]:
    """Secrets never reach monitors or the slow log: AUTH's arguments, HELLO's AUTH user
    and password, ACL SETUSER's user and rules."""
    name = argv[0].lower()
    if name == b"auth":
        return [argv[0], *[_REDACTED] * (len(argv) - 1)]
    if name == b"acl" and len(argv) > 2 and argv[1].lower() == b"setuser":
        return [argv[0], argv[1], *[_REDACTED] * (len(argv) - 2)]
    if name == b"hello":
        shown = list(argv)
        for i, arg in enumerate(argv):
            if i >= 2 and arg.lower() == b"auth" and i + 2 < len(argv):
                shown[i + 1] = shown[i + 2] = _REDACTED
        return shown
    return argv


def _repr_arg(arg: bytes) -> str:
    """sdscatrepr: printable ASCII as is, the usual escapes, anything else as \\xHH."""
    out = []
    for b in arg:
        escaped = _ESCAPES.get(b)
        if escaped is not None:
            out.append(escaped)
        elif 32 <= b < 127:
            out.append(chr(b))
        else:
            out.append(f"\\x{b:02x}")
    return "".join(out)


def format_monitor_line(client: Client, argv: list[bytes]) -> SimpleString:
    """`+1700000000.123456 [0 127.0.0.1:5555] "cmd" "arg"` with Redis's escaping (a Unix
    socket's client shows as `unix:<path>`)."""
    now = time.time()
    args = " ".join('"' + _repr_arg(a) + '"' for a in redacted_args(argv))
    origin = (f"unix:{client.server.config['unixsocket']}" if client.unix_socket
              else client.addr)
    return SimpleString(f"{now:.6f} [{client.db.id} {origin}] {args}")
