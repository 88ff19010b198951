"""Becoming a replica or a primary (replicationSetMaster, replicationUnsetMaster), answering a
replica's PSYNC / SYNC (syncCommand), ROLE, and WAIT's bookkeeping."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from server.replication.primary import ONLINE, link_of
from server.replication.replica import MasterLink

if TYPE_CHECKING:
    from server.client import Client
    from server.replication.state import Replication


# -- roles ------------------------------------------------------------------------------------
def follow(repl: Replication, host: str, port: int, by: Client | None = None) -> bool:
    """REPLICAOF host port: False when already following that primary. The replicas of this
    server are disconnected (they resync with it once it follows the new history), and its
    own history is offered to the new primary with PSYNC."""
    server = repl.server
    link = repl.master
    if link is not None and link.host == host and link.port == port:
        return False
    if link is not None:
        link.stop()
    elif repl.backlog is None:
        repl.ensure_backlog()  # (so that PSYNC offers what this server holds)
    _disconnect_replicas(repl)
    repl.master = MasterLink(repl, host, port)
    server.config.set_internal("replicaof", (host, port))
    server.set_replica_mode(True)
    repl.role_changed()
    who = f" (user request from '{_describe(by)}')" if by is not None else ""
    server.log.notice(f"Connecting to MASTER {host}:{port}")
    server.log.notice(f"REPLICAOF {host}:{port} enabled{who}")
    if server.loop is not None:
        repl.master.start()
    return True


def promote(repl: Replication, by: Client | None = None) -> bool:
    """REPLICAOF NO ONE: a primary from now on, keeping the history it had as replid2."""
    server = repl.server
    link = repl.master
    if link is None:
        return False
    link.stop()
    repl.master = None
    repl.shift_replid()
    repl.seldb = -1
    _disconnect_replicas(repl)  # (they learn the new ID with +CONTINUE)
    server.config.set_internal("replicaof", None)
    server.set_replica_mode(False)
    repl.role_changed()
    who = f" (user request from '{_describe(by)}')" if by is not None else ""
    server.log.notice(f"MASTER MODE enabled{who}")
    return True


def start_links(repl: Replication) -> None:
    """At start-up (the event loop runs now): the link to the primary `replicaof` names."""
    if repl.master is not None and repl.master.task is None:
        repl.master.start()


def _disconnect_replicas(repl: Replication) -> None:
    for client in list(repl.replicas):
        if client.sink is not None:
            client.sink.close_client()


def _describe(client: Client) -> str:
    return f"id={client.id} addr={client.addr} laddr={client.laddr}"


# -- a replica asks -----------------------------------------------------------------------------
def sync(repl: Replication, client: Client, replid: str, offset: int, psync: bool) -> None:
    """PSYNC replid offset (psync) or SYNC: a partial resync when the history allows it,
    else a full one."""
    server = repl.server
    link = link_of(client)
    link.ack_time = time.monotonic()
    if psync and repl.can_continue(replid, offset):
        backlog = repl.backlog
        assert backlog is not None
        line = (f"+CONTINUE {repl.replid}\r\n" if link.capa_psync2 else "+CONTINUE\r\n")
        client.out.append(line.encode())
        missing = backlog.read_from(offset)
        if missing:
            client.out.append(missing)
            repl.output_bytes += len(missing)
        link.state = ONLINE
        repl.sync_partial_ok += 1
        repl.attach(client)
        server.log.notice(f"Partial resynchronization request from {client.addr} accepted. "
                          f"Sending {len(missing)} bytes of backlog starting from offset "
                          f"{offset}.")
        return
    if psync and replid != "?":
        repl.sync_partial_err += 1
        server.log.notice(f"Partial resynchronization not accepted: Replication ID mismatch "
                          f"(Replica asked for '{replid}', my replication IDs are "
                          f"'{repl.replid}' and '{repl.replid2}')"
                          if replid not in (repl.replid, repl.replid2) else
                          f"Unable to partial resync with replica {client.addr} for lack of "
                          f"backlog (Replica request was: {offset}).")
    server.log.notice(f"Replica {client.addr} asks for synchronization")
    if not psync:
        link.old_protocol = True
    repl.ensure_backlog()
    repl.attach(client)
    repl.full_sync.request(link)


# -- ROLE and WAIT ----------------------------------------------------------------------------
def role_reply(repl: Replication) -> list[object]:
    link = repl.master
    if link is None:
        return [b"master", repl.offset,
                [[_replica_ip(c).encode(), str(c.repl.listening_port).encode(),
                  str(c.repl.ack_offset).encode()]
                 for c in repl.replicas if c.repl is not None and c.repl.online]]
    return [b"slave", link.host.encode(), link.port, link.state.encode(),
            repl.offset if link.up else -1]


def _replica_ip(client: Client) -> str:
    link = client.repl
    if link is not None and link.ip_address:
        return link.ip_address
    return client.addr.rpartition(":")[0].strip("[]")


def replicas_acked(repl: Replication, offset: int) -> int:
    """replicationCountAcksByOffset: replicas online that acknowledged `offset`."""
    return sum(1 for c in repl.replicas
               if c.repl is not None and c.repl.online and c.repl.ack_offset >= offset)


class Waiters:
    """Clients blocked in WAIT: each waits until `numreplicas` replicas acknowledge the offset
    the stream had when it asked (this server's last write: the client's own are in it)."""

    def __init__(self, repl: Replication) -> None:
        self.repl = repl
        self._waiting: dict[int, tuple[Client, int, int]] = {}
        self.getack_due = False

    def wait(self, client: Client, offset: int, numreplicas: int) -> None:
        self._waiting[client.id] = (client, offset, numreplicas)
        self.getack_due = True  # (REPLCONF GETACK goes to the replicas before sleeping)
        client.server.schedule_before_sleep()

    def reply_now(self, client: Client) -> int:
        """At the timeout (or CLIENT UNBLOCK): the count as it is."""
        entry = self._waiting.pop(client.id, None)
        offset = entry[1] if entry is not None else self.repl.offset
        return replicas_acked(self.repl, offset)

    def progress(self) -> None:
        """After an ACK: answer the clients whose count is reached."""
        if not self._waiting:
            return
        blocking = self.repl.server.blocking
        for client_id, (client, offset, numreplicas) in list(self._waiting.items()):
            state = client.blocked
            if client.closed or state is None or state.spec is None \
                    or state.spec.name != "wait":
                del self._waiting[client_id]
                continue
            acked = replicas_acked(self.repl, offset)
            if acked >= numreplicas:
                del self._waiting[client_id]
                blocking.unblock(client, acked)
