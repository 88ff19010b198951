"""What monitors see (replicationFeedMonitors): one line per command, once it has run.

The dispatcher feeds monitors once a command has run (server.dispatch.call), skipping admin
commands, so EXEC shows up after the commands it ran, as in Redis. Secrets are redacted here,
for monitors and the slow log alike.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from protocol.encoder import SimpleString

if TYPE_CHECKING:
    from server.client import Client

_ESCAPES = {34: '\\"', 92: "\\\\", 10: "\\n", 13: "\\r", 9: "\\t", 7: "\\a", 8: "\\b"}
_REDACTED = b"(redacted)"


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


def feed_monitors(monitors: list[Client], client: Client, argv: list[bytes]) -> None:
    """Send every monitor but the client itself the line of the command it ran."""
    line = format_monitor_line(client, argv)
    for monitor in list(monitors):
        if monitor is not client:
            monitor.reply(line)
