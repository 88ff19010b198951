"""MULTI, EXEC, DISCARD, WATCH, UNWATCH (optimistic locking as multi.c)."""

from __future__ import annotations

from protocol.encoder import NULL_ARRAY, OK, ErrorReply
from server.blocking import BlockRequest, timeout_reply
from server.client import Client
from server.dispatch import call, command, lookup_queued
from server.errors import CommandError

_CAT = "@fast @transaction"
_EXECABORT = "EXECABORT Transaction discarded because of previous errors."


def _watched_key_expired(client: Client) -> bool:
    """isWatchedKeyExpired: a watched key that existed at WATCH has expired since (deleted
    or not yet): that is a change. (Keys already expired at WATCH are not looked at.)"""
    dbs = client.server.dbs
    stale = client.watched_stale
    for ref in client.watched:
        db = dbs[ref[0]]
        if db.expires and ref not in stale and db.is_stale(ref[1]):
            return True
    return False


@command("multi", 1, "noscript loading stale fast allow-busy", categories=_CAT,
         summary="Starts a transaction.", since="1.2.0", group="transactions")
def multi(client: Client, argv: list[bytes]) -> object:
    if client.multi is not None:
        raise CommandError("ERR MULTI calls can not be nested")
    client.multi = []
    client.multi_error = False
    return OK


@command("discard", 1, "noscript loading stale fast allow-busy", categories=_CAT,
         summary="Discards a transaction.", since="2.0.0", group="transactions")
def discard(client: Client, argv: list[bytes]) -> object:
    if client.multi is None:
        raise CommandError("ERR DISCARD without MULTI")
    client.multi = None
    client.multi_error = False
    client.server.unwatch_all(client)
    return OK


@command("exec", 1, "noscript loading stale skip-slowlog", categories="@slow @transaction",
         summary="Executes all commands in a transaction.", since="1.2.0", group="transactions")
def exec_(client: Client, argv: list[bytes]) -> object:
    if client.multi is None:
        raise CommandError("ERR EXEC without MULTI")
    queued = client.multi
    aborted = client.multi_error
    dirty = client.cas_dirty or _watched_key_expired(client)
    client.multi_error = False
    server = client.server
    server.unwatch_all(client)
    if aborted or dirty:
        client.multi = None
        if aborted:
            server.stats.error_reply(_EXECABORT)
            return ErrorReply(_EXECABORT)
        return NULL_ARRAY
    replies: list[object] = []
    # As in Redis the client stays in MULTI state while EXEC runs the queue (CLIENT INFO shows
    # flags=x, and WATCH / MULTI inside the transaction are refused), then leaves it.
    client.in_exec = True
    server.begin_propagation_batch()
    try:
        for queued_argv in queued:
            try:
                spec = lookup_queued(queued_argv)
            except CommandError as exc:
                replies.append(ErrorReply(exc.message))
                continue
            if client.acl_checked:  # (kept current when the rules change: ACL SETUSER)
                refusal = server.acl.exec_refusal(client, spec, queued_argv)
                if refusal is not None:  # (the rules changed since it was queued)
                    server.stats.error_reply(refusal)
                    replies.append(ErrorReply(refusal))
                    continue
            reply = call(client, spec, queued_argv)
            if type(reply) is BlockRequest:  # BLOCK inside MULTI acts as a non-blocking read
                reply = timeout_reply(reply.timeout_reply)
            replies.append(reply)
    finally:
        client.in_exec = False
        client.multi = None
        server.end_propagation_batch()
    return replies


@command("watch", -2, "noscript loading stale fast allow-busy", keys=(1, -1, 1),
         categories=_CAT, summary="Monitors changes to keys to determine the execution of a "
         "transaction.", since="2.2.0", group="transactions")
def watch(client: Client, argv: list[bytes]) -> object:
    if client.multi is not None:
        raise CommandError("ERR WATCH inside MULTI is not allowed")
    server = client.server
    db = client.db
    for key in argv[1:]:
        ref = (db.id, key)
        if ref in client.watched:
            continue
        # A key already past its time does not exist for the transaction: its deletion
        # (by expiry) will be no change (watchedKey.expired).
        if db.expires and db.is_stale(key):
            client.watched_stale.add(ref)
        client.watched.append(ref)
        server.watched_keys.setdefault(ref, set()).add(client)
    return OK


@command("unwatch", 1, "noscript loading stale fast allow-busy", categories=_CAT,
         summary="Forgets about watched keys of a transaction.", since="2.2.0",
         group="transactions")
def unwatch(client: Client, argv: list[bytes]) -> object:
    client.server.unwatch_all(client)
    return OK
