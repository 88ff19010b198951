"""Replication commands: REPLICAOF / SLAVEOF, PSYNC / SYNC and REPLCONF (what replicas send
their primary), ROLE and WAIT. The work is done in server/replication."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from protocol.encoder import OK, SimpleString
from server.block_request import BlockRequest
from server.client import Client
from server.dispatch import NO_REPLY, command
from server.errors import CommandError
from server.parsing import parse_block_timeout, parse_int
from server.replication import primary, roles

if TYPE_CHECKING:
    from server.replication.state import Replication

_ADMIN = "@admin @slow @dangerous"


def _repl(client: Client) -> Replication:
    return client.server.replication


@command("replicaof", 3, "admin noscript stale no-async-loading", categories=_ADMIN,
         since="5.0.0", group="server",
         summary="Configures a server as replica of another, or promotes it to a master.")
def replicaof(client: Client, argv: list[bytes]) -> object:
    host, port = argv[1], argv[2]
    if host.lower() == b"no" and port.lower() == b"one":
        roles.promote(_repl(client), client)  # (a primary already: nothing to do, still OK)
        return OK
    try:
        port_number = parse_int(port)
    except CommandError:
        raise CommandError("ERR Invalid master port") from None
    if not 0 <= port_number <= 65535:
        raise CommandError("ERR Invalid master port")
    if client.repl is not None and client.repl.state:
        raise CommandError("ERR Command is not valid when client is a replica.")
    text = host.decode(errors="replace")
    if not roles.follow(_repl(client), text, port_number, client):
        return SimpleString("OK Already connected to specified master")
    return OK


@command("slaveof", 3, "admin noscript stale no-async-loading", categories=_ADMIN,
         since="1.0.0", group="server",
         summary="Sets a Redis server as a replica of another, or promotes it to being a "
         "master.")
def slaveof(client: Client, argv: list[bytes]) -> object:
    return replicaof(client, argv)


def _sync_allowed(client: Client) -> None:
    repl = _repl(client)
    if client.repl_master:
        raise CommandError("ERR Command is not valid for the master client")
    if repl.master is not None and not repl.master.up:
        raise CommandError("NOMASTERLINK Can't SYNC while not connected with my master")


@command("psync", -3, "admin noscript no-async-loading no-multi", categories=_ADMIN,
         since="2.8.0", group="server",
         summary="An internal command used in replication.")
def psync(client: Client, argv: list[bytes]) -> object:
    if client.repl is not None and client.repl.state:
        return NO_REPLY  # (a replica already: Redis ignores it)
    _sync_allowed(client)
    try:
        offset = int(argv[2])
    except ValueError:
        offset = -1
    roles.sync(_repl(client), client, argv[1].decode(errors="replace"), offset, psync=True)
    return NO_REPLY


@command("sync", 1, "admin noscript no-async-loading no-multi", categories=_ADMIN,
         since="1.0.0", group="server",
         summary="An internal command used in replication.")
def sync(client: Client, argv: list[bytes]) -> object:
    if client.repl is not None and client.repl.state:
        return NO_REPLY
    _sync_allowed(client)
    roles.sync(_repl(client), client, "?", -1, psync=False)
    return NO_REPLY


@command("replconf", -1, "admin noscript loading stale allow-busy", categories=_ADMIN,
         since="3.0.0", group="server", summary="An internal command for configuring the "
         "replication stream.")
def replconf(client: Client, argv: list[bytes]) -> object:
    reply = primary.replconf(_repl(client), client, argv)
    return OK if reply else NO_REPLY


@command("role", 1, "noscript loading stale fast", categories="@admin @fast @dangerous",
         summary="Returns the replication role.", since="2.8.12", group="server")
def role(client: Client, argv: list[bytes]) -> object:
    return roles.role_reply(_repl(client))


@command("wait", 3, "noscript", categories="@slow @connection",
         summary="Blocks until the asynchronous replication of all preceding write commands "
         "sent by the connection is completed.", since="3.0.0",
         tips="request_policy:all_shards response_policy:agg_min")
def wait(client: Client, argv: list[bytes]) -> object:
    repl = _repl(client)
    if repl.master is not None:
        raise CommandError("ERR WAIT cannot be used with replica instances. Please also note "
                           "that since Redis 4.0 if a replica is configured to be writable "
                           "(which is not the default) writes to replicas are just local and "
                           "are not propagated.")
    numreplicas = parse_int(argv[1])
    timeout_ms = parse_block_timeout(argv[2], time.time_ns() // 1_000_000)
    offset = repl.offset
    acked = roles.replicas_acked(repl, offset)
    if acked >= numreplicas or client.in_exec:
        return acked
    repl.waiters.wait(client, offset, numreplicas)
    return BlockRequest([], timeout_ms, argv, lambda: repl.waiters.reply_now(client))
