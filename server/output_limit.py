"""client-output-buffer-limit, checked as output is queued, as Redis checks it as replies are
added (closeClientOnOutputBufferLimitReached), not only when the output is written: a client
that reads too slowly is closed once its pending output reaches the hard limit (or stays
over the soft one for too long), with little more than one reply queued meanwhile.

The checks: after each command of a client whose class has a limit (Connection._run), after
each reply queued outside its own commands (Server.write_reply: a blocked command's answer,
a MONITOR line), once CHECK_STEP bytes of pushes were queued since the last check
(Server.write_push: Pub/Sub messages, invalidations), and after each write
(Connection.write).

A client's pending output is all the server holds for it: the replies encoded and not handed
to the transport yet (Client.output_bytes) and what the transport has not sent yet.

As in Redis, a client over its limit is closed asynchronously (CLIENT_CLOSE_ASAP): it is
marked (Client.close_asap), its pending output is dropped at once and any queued later
is dropped as it comes, and its connection closes in the next loop pass, so that nothing
looping over clients (a PUBLISH's receivers, the monitors, the waiters of a key, the write
pass) sees one vanish midway (server/connection.py does the closing).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from server.client import Client, ClientSink

# (hard bytes, soft bytes, soft seconds), 0 for none; see Server._set_output_limits.
Limits = tuple[int, int, int]

# Pushes queued for a client between two checks of its limits (Server.write_push): a check
# per Pub/Sub message would cost more than the message; this keeps a client that does not
# read within one message and this many bytes of its limit.
CHECK_STEP = 64 * 1024

# Output a client may leave unread while it still has to authenticate (Redis closes such a
# client once more than 1 KiB waits beyond its 16 KiB static reply buffer; CVE-2025-21605).
UNAUTH_OUTPUT_LIMIT = 16384 + 1024


def limits_of(client: Client) -> Limits | None:
    """The limits of the client's class (getClientType): pubsub for a client in Pub/Sub
    mode, normal otherwise; None when its class has none."""
    server = client.server
    return server.pubsub_output_limit if client.subscribed else server.normal_output_limit


def over_limits(client: Client, size: int, limits: Limits) -> bool:
    """Whether `size` bytes of pending output break `limits`: the hard limit at once, the
    soft one once the client has stayed over it for its seconds (checkClientOutputBufferLimits;
    when it went over is kept on the client, and forgotten once it is under again)."""
    hard, soft, soft_seconds = limits
    if hard and size >= hard:
        return True
    if soft and size >= soft:
        now = time.monotonic()
        if not client.obl_soft_since:
            client.obl_soft_since = now
        return now - client.obl_soft_since >= soft_seconds
    client.obl_soft_since = 0.0
    return False


def over_output_limit(client: Client, sink: ClientSink) -> bool:
    """Whether the client's pending output (its queued replies and what its connection has
    not sent yet) breaks a limit: its class's, or the unauthenticated one's."""
    limits = limits_of(client)
    if limits is None and client.authenticated:
        return False
    pending = client.output_bytes() + sink.output_size()
    if not client.authenticated and pending > UNAUTH_OUTPUT_LIMIT:
        return True
    return limits is not None and over_limits(client, pending, limits)
