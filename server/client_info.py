"""A client as CLIENT LIST / CLIENT INFO show it (also in ACL LOG's client-info): one line of
Redis 8's fields in Redis's order."""

from __future__ import annotations

import time

from server import client_memory
from server.client import Client
from server.errors import client_text


def client_type(client: Client) -> bytes:
    """getClientType: the client a replica runs its primary's stream as ("master"), a
    replica's connection ("slave"), one in Pub/Sub mode ("pubsub"), or "normal"."""
    if client.repl_master:
        return b"master"
    if client.repl is not None and client.repl.state:
        return b"slave"
    return b"pubsub" if client.subscribed else b"normal"


def _subscription_fields(client: Client) -> str:
    subs = client.subs
    if subs is None:
        return "sub=0 psub=0 ssub=0"
    return (f"sub={len(subs.channels)} psub={len(subs.patterns)} "
            f"ssub={len(subs.shard_channels)}")


def client_info_line(client: Client, running: list[bytes] | None = None) -> str:
    """One CLIENT LIST line, with Redis 8's fields in Redis's order; `running`: the command
    the client is running (the caller's own, counted in its argv-mem as Redis does)."""
    now = time.monotonic()
    multi = len(client.multi) if client.multi is not None else -1
    sink = client.sink
    fd = _fileno(sink)
    memory = client_memory.measure(client, running)
    # A writable-event handler is waiting while the transport holds unsent output.
    events = "rw" if memory.omem > memory.obl else "r"
    redir = client.tracking.redirect if client.tracking is not None else -1
    return (
        f"id={client.id} addr={client.addr} laddr={client.laddr} fd={fd} "
        f"name={client_text(client.name)} age={int(now - client.created)} "
        f"idle={int(now - client.last_interaction)} flags={client.flags_text()} "
        f"db={client.db.id} {_subscription_fields(client)} multi={multi} "
        f"watch={len(client.watched)} {memory.fields()} events={events} "
        f"cmd={client_text(client.last_cmd)} user={client_text(client.user.name)} redir={redir} "
        f"resp={client.protocol} "
        f"lib-name={client_text(client.lib_name)} lib-ver={client_text(client.lib_ver)} io-thread=0"
    )


def _fileno(sink: object) -> int:
    transport = getattr(sink, "transport", None)
    sock = transport.get_extra_info("socket") if transport is not None else None
    try:
        return sock.fileno() if sock is not None else -1
    except (OSError, ValueError):
        return -1
