"""Command families; importing this package registers every command in server.dispatch."""

from server.commands import (  # noqa: F401
    client_cmds,
    conn,
    keys,
    persistence_cmds,
    server_admin,
    strings,
    transaction,
)

try:  # families landed by later work register themselves when present
    from server.commands import stream_cmds  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from server.commands import group_cmds  # noqa: F401,E402 - consumer groups (needs stream_cmds)
