"""What a command answers when it must wait (BlockRequest), and POSTPONE, its answer when a
CLIENT PAUSE holds it. The dispatcher recognises both; server/blocking.py does the waiting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class BlockRequest:
    """Returned by a handler that must wait: the keys to wait on, the timeout in ms (0 = forever),
    the command to re-run when a key is ready (e.g. XREAD with `$` rewritten to the concrete ID),
    and the reply to send on timeout (or a function that makes it then: see timeout_reply())."""

    keys: list[bytes]
    timeout_ms: int
    argv: list[bytes]
    timeout_reply: Any
    # The type (TYPE's name) a key must hold for the re-run to be worth trying.
    key_type: str = "stream"
    # Re-run also when a key was deleted or now holds another type (XREADGROUP).
    unblock_on_nokey: bool = False


# A command's answer when its client must wait for the end of a CLIENT PAUSE
# (Server.block_or_answer postpones it).
POSTPONE = BlockRequest([], 0, [], None)


def timeout_reply(reply: Any) -> Any:
    """A BlockRequest's timeout reply, made now when it is a function (WAITAOF answers the
    counts as they are at the timeout)."""
    return reply() if callable(reply) else reply
