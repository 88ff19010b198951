"""WAITAOF numlocal numreplicas timeout: wait until the client's writes are fsynced to the AOF.

Redis compares the client's replication offset after its last write (`woff`) with the offset
fsynced to the AOF. Here the AOF writer numbers its write passes: a client's writes go out
with the pass after the one current when it wrote (Persistence.batch_writers holds the
clients that wrote since the last pass), and `synced_seq` is the last pass on disk (at once
with `appendfsync always`, within about a second with `everysec`, never by us with `no`).

There are no replicas, so a replica count asked for is never reached: such a WAITAOF waits
for its timeout and answers the local count as it is then (as CLIENT UNBLOCK does). With the
AOF off, the local count is 0, and numlocal 1 is an error; turning the AOF off releases the
clients that wait for it with that error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.encoder import ErrorReply

if TYPE_CHECKING:
    from server.client import Client
    from server.persistence.manager import Persistence

AOF_OFF_TEXT = "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."


class AofWaiters:
    def __init__(self, persistence: Persistence) -> None:
        self.persistence = persistence
        # client id -> (client, write pass to wait for, numlocal, numreplicas)
        self._waiting: dict[int, tuple[Client, int, int, int]] = {}

    def client_offset(self, client: Client) -> int:
        """The write pass that carries (or carried) the client's last write."""
        p = self.persistence
        if client in p.batch_writers:
            return p.writer.write_seq + 1  # written by the coming pass
        return client.aof_woff

    def local_acks(self, woff: int) -> int:
        """1 when the writes up to write pass woff are on disk (0 with the AOF off)."""
        p = self.persistence
        return int(p.aof_on and p.writer.synced_seq >= woff)

    def wait(self, client: Client, woff: int, numlocal: int, numreplicas: int) -> None:
        self._waiting[client.id] = (client, woff, numlocal, numreplicas)

    def reply_now(self, client: Client) -> list[int]:
        """The reply at the timeout (or on CLIENT UNBLOCK): the counts as they are."""
        self._waiting.pop(client.id, None)
        return [self.local_acks(self.client_offset(client)), 0]

    def progress(self) -> None:
        """After a write pass or an fsync: answer the clients whose writes are on disk now
        (only those that asked for no replica: the others wait for their timeout)."""
        if not self._waiting:
            return
        blocking = self.persistence.server.blocking
        for client_id, (client, woff, _numlocal, numreplicas) in list(self._waiting.items()):
            if not _still_waiting(client):
                del self._waiting[client_id]
            elif not numreplicas and self.local_acks(woff):
                del self._waiting[client_id]
                blocking.unblock(client, [1, 0])

    def aof_turned_off(self) -> None:
        blocking = self.persistence.server.blocking
        for client_id, (client, _woff, numlocal, _numreplicas) in list(self._waiting.items()):
            if not _still_waiting(client):
                del self._waiting[client_id]
            elif numlocal:
                del self._waiting[client_id]
                blocking.unblock(client, ErrorReply(AOF_OFF_TEXT))


def _still_waiting(client: Client) -> bool:
    state = client.blocked  # (a client waiting for a CLIENT PAUSE has a state without spec)
    return (not client.closed and state is not None and state.spec is not None
            and state.spec.name == "waitaof")
