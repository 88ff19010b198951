"""The replication subsystem's state: the role, the replication IDs and offset, the backlog, the
replicas attached, and the stream they are fed (Redis's server.replid, master_repl_offset,
repl_backlog, slaves, slaveseldb)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from protocol.encoder import encode_command, encode_commands
from server.replication.backlog import Backlog
from server.replication.full_sync import FullSync
from server.replication.roles import Waiters

if TYPE_CHECKING:
    from server.app import Server
    from server.client import Client
    from server.replication.replica import MasterLink

NO_REPLID = "0" * 40
_PING = encode_command([b"PING"])


def new_replid() -> str:
    """A replication ID: 40 random hex characters (changeReplicationId)."""
    return os.urandom(20).hex()


class Replication:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.replid = new_replid()
        # The ID this server had before it became a primary, and the first offset it does
        # not cover (a replica of the old primary may continue up to there).
        self.replid2 = NO_REPLID
        self.second_replid_offset = -1
        self.offset = 0  # master_repl_offset
        self.backlog: Backlog | None = None
        self.replicas: list[Client] = []
        # The database the stream last selected (-1: the next command gets a SELECT).
        self.seldb = -1
        self.no_replicas_since = time.monotonic()  # (repl-backlog-ttl)
        self.last_ping = time.monotonic()
        self.master: MasterLink | None = None  # set while this server is a replica
        self.role_changed: Callable[[], None] = lambda: None  # (service.py re-arms its checks)
        self.sync_full = 0
        self.sync_partial_ok = 0
        self.sync_partial_err = 0
        self.output_bytes = 0  # total_net_repl_output_bytes
        self.input_bytes = 0  # total_net_repl_input_bytes
        self.full_sync = FullSync(self)
        self.waiters = Waiters(self)
        self.feed = self._feed_hook()  # the propagate hook, while there is a backlog
        server.config.on_change("repl-backlog-size", self._resize_backlog)

    @property
    def is_replica(self) -> bool:
        return self.master is not None

    # -- IDs ----------------------------------------------------------------------------------
    def shift_replid(self) -> None:
        """shiftReplicationId: a new history starts here (a promotion); the old ID stays
        valid as replid2 up to this offset, for the replicas that followed it."""
        self.replid2 = self.replid
        self.second_replid_offset = self.offset + 1
        self.replid = new_replid()

    def clear_replid2(self) -> None:
        self.replid2 = NO_REPLID
        self.second_replid_offset = -1

    def can_continue(self, replid: str, offset: int) -> bool:
        """masterTryPartialResynchronization's test: the history is ours and the bytes from
        `offset` on are still in the backlog."""
        if replid != self.replid and not (replid == self.replid2
                                          and offset <= self.second_replid_offset):
            return False
        return self.backlog is not None and self.backlog.has(offset)

    # -- the backlog and the stream -----------------------------------------------------------
    def ensure_backlog(self) -> Backlog:
        """createReplicationBacklog: from now on the stream is kept (and fed at all)."""
        if self.backlog is None:
            self.backlog = Backlog(self.server.config["repl-backlog-size"], self.offset)
            for hooks in (self.server.propagate_hooks, self.server.replica_hooks):
                if self.feed not in hooks:
                    hooks.append(self.feed)
        return self.backlog

    def free_backlog(self) -> None:
        self.backlog = None
        for hooks in (self.server.propagate_hooks, self.server.replica_hooks):
            if self.feed in hooks:
                hooks.remove(self.feed)

    def _resize_backlog(self, size: int) -> None:
        if self.backlog is not None:
            self.backlog.resize(size)

    def _feed_hook(self) -> Callable[[int, list[bytes]], None]:
        """The propagate hook (replicationFeedSlaves): a write's effect joins the stream.
        A replica passes on its primary's stream as it came instead (feed_stream). A plain
        function, with a `run` form for a run of writes (Server.propagate_run)."""

        def feed(dbid: int, argv: list[bytes]) -> None:
            if self.master is None:
                self.feed_stream(self._select(dbid, encode_command(argv)))

        def feed_run(dbid: int, argvs: list[list[bytes]]) -> None:
            if self.master is None:
                self.feed_stream(self._select(dbid, encode_commands(argvs)))

        feed.run = feed_run  # type: ignore[attr-defined]
        return feed

    def _select(self, dbid: int, data: bytes) -> bytes:
        """data, after a SELECT when the stream last selected another database."""
        if dbid != self.seldb and dbid >= 0:
            data = encode_command([b"SELECT", str(dbid).encode()]) + data
            self.seldb = dbid
        return data

    def feed_stream(self, data: bytes) -> None:
        """Bytes of the stream: into the backlog and to every replica attached."""
        backlog = self.backlog
        if backlog is None:
            return
        backlog.append(data)
        self.offset = backlog.offset
        replicas = self.replicas
        if replicas:
            self.output_bytes += len(data) * len(replicas)
            for client in replicas:
                client.repl.send(data)  # type: ignore[union-attr]

    def ping_replicas(self) -> None:
        """Every repl-ping-replica-period, a PING in the stream: replicas see the link alive
        (and their offset moves, as in Redis)."""
        if self.replicas and self.master is None:
            self.feed_stream(_PING)

    # -- replicas -----------------------------------------------------------------------------
    def attach(self, client: Client) -> None:
        if client not in self.replicas:
            self.replicas.append(client)

    def detach(self, client: Client) -> None:
        """A replica's connection closed (a close hook)."""
        if client.repl is not None and client in self.replicas:
            self.replicas.remove(client)
            client.repl.closed()
            if not self.replicas:
                self.no_replicas_since = time.monotonic()

    def good_replicas(self) -> int:
        """Replicas online whose last ACK is at most min-replicas-max-lag seconds old
        (refreshGoodSlavesCount)."""
        max_lag = self.server.config["min-replicas-max-lag"]
        now = time.monotonic()
        return sum(1 for c in self.replicas
                   if c.repl is not None and c.repl.online and now - c.repl.ack_time <= max_lag)

    def backlog_idle_expired(self, now: float) -> bool:
        """repl-backlog-ttl passed with no replica (a primary only: a replica keeps its
        backlog, to serve its own replicas after a promotion)."""
        ttl = self.server.config["repl-backlog-ttl"]
        return (self.backlog is not None and self.master is None and not self.replicas
                and ttl > 0 and now - self.no_replicas_since > ttl)
