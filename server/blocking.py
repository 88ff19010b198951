"""Blocking reads, the Redis way (blocked.c): a blocking_keys map (db, key) -> FIFO of waiting
clients, a ready_keys list filled by writes, and a pass run before the event loop sleeps that
re-runs each waiting client's command, oldest first. Only clients waiting on a key that got
data are woken; one that finds nothing (another consumer took it) blocks again with its
original deadline.

As in Redis 7.2+ (handleClientsBlockedOnKey), a waiting client is re-run only when its key
now holds the type it waits for (a stream); a key deleted or replaced by another type leaves
it waiting, unless its request asked to be woken then (`unblock_on_nokey`: XREADGROUP, whose
re-run answers the error: NOGROUP for a deleted key, WRONGTYPE for a replaced one).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from protocol.encoder import ErrorReply
from server import command_stats
from server.block_request import POSTPONE, BlockRequest, timeout_reply  # noqa: F401 - (for commands)
from server.dispatch import call
from storage.keyspace import type_name

if TYPE_CHECKING:
    from server.client import Client
    from server.dispatch import CommandSpec

KeyRef = tuple[int, bytes]


class BlockState:
    __slots__ = ("keys", "deadline", "argv", "timeout_reply", "timer", "spec", "key_type",
                 "unblock_on_nokey", "postponed")

    def __init__(self, keys: list[KeyRef], deadline: float | None, argv: list[bytes],
                 timeout_reply: Any, spec: CommandSpec, key_type: str = "stream",
                 unblock_on_nokey: bool = False) -> None:
        self.keys = keys
        self.deadline = deadline  # loop time in seconds, None = forever
        self.argv = argv
        self.timeout_reply = timeout_reply
        self.timer: asyncio.TimerHandle | None = None
        self.spec = spec
        self.key_type = key_type
        self.unblock_on_nokey = unblock_on_nokey
        # Waiting for the end of a CLIENT PAUSE (server/pause.py), on no key and with no
        # timeout; its command waits in the client's pending commands.
        self.postponed = False


class Blocking:
    def __init__(self, server: Any) -> None:
        self.server = server
        # (db, key) -> clients in arrival order (an OrderedDict is a FIFO with O(1) removal).
        self.blocking_keys: dict[KeyRef, OrderedDict[int, Client]] = {}
        self.ready_keys: list[KeyRef] = []
        self._ready_set: set[KeyRef] = set()
        self.blocked_clients = 0

    # -- blocking -----------------------------------------------------------------------------
    def block(self, client: Client, request: BlockRequest, spec: CommandSpec) -> None:
        previous = client.blocked
        db = client.db.id
        keys = [(db, key) for key in dict.fromkeys(request.keys)]
        if previous is not None:
            # Re-blocking after a wake-up that found nothing: keep the original deadline.
            deadline = previous.deadline
            timer = previous.timer
        else:
            loop = self.server.loop
            deadline = None
            timer = None
            if request.timeout_ms > 0:
                deadline = loop.time() + request.timeout_ms / 1000.0
                timer = loop.call_at(deadline, self._on_timeout, client)
            self.blocked_clients += 1
        state = BlockState(keys, deadline, request.argv, request.timeout_reply, spec,
                           request.key_type, request.unblock_on_nokey)
        state.timer = timer
        client.blocked = state
        for ref in keys:
            waiters = self.blocking_keys.get(ref)
            if waiters is None:
                waiters = self.blocking_keys[ref] = OrderedDict()
            waiters[client.id] = client

    def postpone(self, client: Client) -> None:
        """Block a client until the pause ends (server/pause.py)."""
        state = BlockState([], None, [], None, None)  # type: ignore[arg-type]
        state.postponed = True
        client.blocked = state
        self.blocked_clients += 1

    def release_postponed(self, client: Client) -> None:
        state = client.blocked
        if state is not None and state.postponed:
            client.blocked = None
            self.blocked_clients -= 1

    def _detach(self, client: Client) -> BlockState | None:
        state = client.blocked
        if state is None:
            return None
        for ref in state.keys:
            waiters = self.blocking_keys.get(ref)
            if waiters is not None:
                waiters.pop(client.id, None)
                if not waiters:
                    del self.blocking_keys[ref]
        return state

    def unblock(self, client: Client, reply: Any) -> None:
        """Stop waiting and answer reply (timeout, CLIENT UNBLOCK, error). The command
        completes here, so it counts as processed now (Redis's updateStatsOnUnblock)."""
        state = self._detach(client)
        if state is None:
            return
        # It completes now: one call, of the time it ran (server/command_stats.py).
        command_stats.record(state.spec, client.block_exec_us)
        client.block_exec_us = 0
        if state.timer is not None:
            state.timer.cancel()
        client.blocked = None
        self.blocked_clients -= 1
        client.reply(reply)
        if client.reply_flags:
            client.command_done()
        self.server.resume_client(client)

    def remove_client(self, client: Client) -> None:
        """A blocked client went away: forget it everywhere."""
        state = self._detach(client)
        if state is None:
            return
        if state.timer is not None:
            state.timer.cancel()
        client.blocked = None
        client.block_exec_us = 0
        self.blocked_clients -= 1

    def _on_timeout(self, client: Client) -> None:
        state = client.blocked
        if state is not None:
            state.timer = None
            self.unblock(client, timeout_reply(state.timeout_reply))
            self.server.schedule_before_sleep()

    def unblock_by_request(self, client: Client, as_error: bool) -> bool:
        """CLIENT UNBLOCK: False when the client is not blocked, or waits for the end of a
        pause (Redis does not unblock those either)."""
        state = client.blocked
        if state is None or state.postponed:
            return False
        if as_error:
            self.unblock(client, ErrorReply("UNBLOCKED client unblocked via CLIENT UNBLOCK"))
        else:
            self.unblock(client, timeout_reply(state.timeout_reply))
        return True

    # -- waking -------------------------------------------------------------------------------
    def signal_key_as_ready(self, db: int, key: bytes) -> None:
        ref = (db, key)
        if ref in self.blocking_keys and ref not in self._ready_set:
            self._ready_set.add(ref)
            self.ready_keys.append(ref)
            self.server.schedule_before_sleep()

    def handle_ready_keys(self) -> None:
        """Serve the clients blocked on keys that got data (handleClientsBlockedOnKeys). A client
        that re-blocks goes to the tail of the key's queue, as in Redis, and is not retried in
        the same pass; keys made ready by the served commands are handled in a further round."""
        while self.ready_keys:
            batch = self.ready_keys
            self.ready_keys = []
            self._ready_set.clear()
            for ref in batch:
                waiters = self.blocking_keys.get(ref)
                if not waiters:
                    continue
                db = self.server.dbs[ref[0]]
                # Only the clients waiting now: one that blocks again joins the tail.
                for client in list(waiters.values()):
                    state = client.blocked
                    if state is None or client.closed or ref not in state.keys:
                        continue
                    value = db.get(ref[1])
                    if (value is None or type_name(value) != state.key_type) and \
                            not state.unblock_on_nokey:
                        continue  # deleted or replaced: keep waiting (XREAD)
                    self._serve(client, state, db)

    def _serve(self, client: Client, state: BlockState, db: Any) -> None:
        """Re-run a waiting client's command; answer it, or let it wait again (same deadline)."""
        self._detach(client)
        saved_db = client.db
        client.db = db
        try:
            # As in Redis 7.2+, the command passes the ACL check again: the user's rules may
            # have changed while it waited.
            refusal = (self.server.acl.refusal(client, state.spec, state.argv)
                       if client.acl_checked else None)
            if refusal is None:
                reply = call(client, state.spec, state.argv)
            else:
                state.spec.rejected_calls += 1
                self.server.stats.error_reply(refusal)
                reply = ErrorReply(refusal)
        except Exception as exc:  # a handler bug must not stop the wake-up pass
            self.server.log.warning(f"error re-running a blocked command: {exc!r}")
            reply = ErrorReply(f"ERR {exc}")
        finally:
            client.db = saved_db
        if type(reply) is BlockRequest:
            self.block(client, reply, state.spec)
            client.release_pushes()  # no reply yet: what the run pushed goes out now
            return
        if state.timer is not None:
            state.timer.cancel()
        client.blocked = None
        # call() counted the run that answered, with its own time only: the earlier runs,
        # which found nothing and waited again, are not in its usec.
        client.block_exec_us = 0
        self.blocked_clients -= 1
        client.reply(reply)
        if client.reply_flags:
            client.command_done()
        self.server.resume_client(client)

    def keys_on_nokey(self) -> int:
        """INFO's total_blocking_keys_on_nokey: keys with a waiter that wants to hear of the
        key's deletion (XREADGROUP)."""
        return sum(1 for waiters in self.blocking_keys.values()
                   if any(c.blocked is not None and c.blocked.unblock_on_nokey
                          for c in waiters.values()))

    def waiting_on(self, db: int, key: bytes) -> int:
        waiters = self.blocking_keys.get((db, key))
        return len(waiters) if waiters else 0

    @staticmethod
    def deadline_left_ms(client: Client) -> int | None:
        state = client.blocked
        if state is None or state.deadline is None:
            return None
        return max(0, int((state.deadline - asyncio.get_event_loop().time()) * 1000))


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)
