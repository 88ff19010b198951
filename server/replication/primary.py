"""The primary's side of a replica's link (replication.c's syncCommand, replconfCommand,
masterTryPartialResynchronization): PSYNC / SYNC, REPLCONF, a replica's states, and what it is
sent in each.

A replica goes WAIT_BGSAVE_START (waiting for an RDB child it can use) -> WAIT_BGSAVE_END (its
RDB is being made; the stream it must apply afterwards is held for it) -> ONLINE (the RDB was
sent, then what was held; from now on the stream goes to it as it is fed). A partial resync
goes ONLINE at once. full_sync.py makes and sends the RDBs.
"""

from __future__ import annotations

import contextlib
import socket
import time
from typing import TYPE_CHECKING

from server.errors import CommandError
from server.parsing import parse_int

if TYPE_CHECKING:
    from server.client import Client
    from server.replication.state import Replication

WAIT_BGSAVE_START = "wait_bgsave"
WAIT_BGSAVE_END = "wait_bgsave_end"
SEND_BULK = "send_bulk"
ONLINE = "online"


class ReplicaLink:
    """What the primary keeps of one replica (Redis's client->repl_* fields)."""

    __slots__ = ("client", "state", "listening_port", "ip_address", "capa_eof", "capa_psync2",
                 "ack_offset", "ack_time", "held", "held_bytes", "rdb_only", "old_protocol")

    def __init__(self, client: Client) -> None:
        self.client = client
        self.state = ""  # "" until PSYNC / SYNC
        self.listening_port = 0
        self.ip_address = ""
        self.capa_eof = False  # it can load an RDB that ends with a mark (diskless)
        self.capa_psync2 = False  # it understands +CONTINUE <new replid>
        self.ack_offset = 0
        self.ack_time = time.monotonic()
        # The stream fed while its RDB is made: sent once the RDB is.
        self.held: list[bytes] = []
        self.held_bytes = 0
        self.rdb_only = False  # REPLCONF rdb-only 1 (redis-cli --rdb): the RDB, nothing more
        self.old_protocol = False  # it asked SYNC: no +FULLRESYNC line before the RDB

    @property
    def online(self) -> bool:
        return self.state == ONLINE

    def send(self, data: bytes) -> None:
        """Stream bytes for this replica: written when it is online, held while its RDB is
        being made, dropped before it asked for anything (and for an RDB-only replica)."""
        state = self.state
        if state == ONLINE:
            if not self.rdb_only:
                client = self.client
                client.out.append(data)
                if not client.pending_write:
                    client.server.queue_write(client)
        elif state in (WAIT_BGSAVE_END, SEND_BULK):
            self.held.append(data)
            self.held_bytes += len(data)

    def go_online(self) -> None:
        """The RDB is out: what was held goes next, then the stream as it is fed."""
        self.state = ONLINE
        if self.client.server.config["repl-disable-tcp-nodelay"]:
            _set_nodelay(self.client, False)
        self.ack_time = time.monotonic()
        held, self.held, self.held_bytes = self.held, [], 0
        if self.rdb_only:
            self.client.close_after_reply = True
        for data in held:
            self.send(data)
        if self.rdb_only:
            client = self.client
            if not client.pending_write:
                client.server.queue_write(client)

    def closed(self) -> None:
        self.held = []
        self.held_bytes = 0
        self.state = ""

    def lag(self, now: float) -> int:
        return int(now - self.ack_time)

    def info_line(self, index: int, now: float) -> tuple[str, str]:
        """INFO replication's slaveN line."""
        client = self.client
        ip = self.ip_address or client.addr.rpartition(":")[0].strip("[]")
        state = {WAIT_BGSAVE_START: "wait_bgsave", WAIT_BGSAVE_END: "wait_bgsave",
                 SEND_BULK: "send_bulk", ONLINE: "online"}.get(self.state, "wait_bgsave")
        return (f"slave{index}", f"ip={ip},port={self.listening_port},state={state},"
                                 f"offset={self.ack_offset},lag={self.lag(now)}")


def _set_nodelay(client: Client, on: bool) -> None:
    """repl-disable-tcp-nodelay: fewer, bigger packets to replicas, at some latency."""
    transport = getattr(client.sink, "transport", None)
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, int(on))


def link_of(client: Client) -> ReplicaLink:
    if client.repl is None:
        client.repl = ReplicaLink(client)
    return client.repl


def replconf(repl: Replication, client: Client, argv: list[bytes]) -> object:
    """REPLCONF option value ... : what a replica tells its primary, and ACK / GETACK."""
    if len(argv) % 2 == 0:
        raise CommandError("ERR syntax error")
    link = None
    for i in range(1, len(argv), 2):
        option = argv[i].lower()
        value = argv[i + 1]
        if option == b"ack":
            # The replica's processed offset; no reply (it would land in its stream).
            link = client.repl
            if link is None or not link.state:
                return None
            try:
                offset = int(value)
            except ValueError:
                return None
            link.ack_offset = max(link.ack_offset, offset)
            link.ack_time = time.monotonic()
            repl.waiters.progress()
            return None
        if option == b"getack":
            if repl.master is not None:
                repl.master.send_ack()
            return None
        link = link_of(client)
        if option == b"listening-port":
            port = parse_int(value)
            if not 0 <= port <= 65535:
                raise CommandError(f"ERR Invalid port number: {port}")
            link.listening_port = port
        elif option == b"ip-address":
            if len(value) >= 46:  # NET_HOST_STR_LEN
                raise CommandError(
                    f"ERR REPLCONF ip-address provided by replica instance is too long: "
                    f"{len(value)} bytes")
            link.ip_address = value.decode(errors="replace")
        elif option == b"capa":
            if value.lower() == b"eof":
                link.capa_eof = True
            elif value.lower() == b"psync2":
                link.capa_psync2 = True
        elif option == b"rdb-only":
            flag = parse_int(value)
            if flag not in (0, 1):
                raise CommandError("ERR syntax error")
            link.rdb_only = bool(flag)
        elif option in (b"rdb-filter-only", b"version", b"rdb-channel", b"main-ch-client-id"):
            pass  # (accepted as Redis and Valkey accept them; nothing to keep here)
        else:
            raise CommandError(f"ERR Unrecognized REPLCONF option: "
                               f"{argv[i].decode(errors='replace')}")
    return True
