"""SAVE, BGSAVE, BGREWRITEAOF, LASTSAVE (done by server.persistence.background)."""

from __future__ import annotations

from typing import Any

from protocol.encoder import OK, SimpleString
from server.client import Client
from server.dispatch import command
from server.errors import SYNTAX, CommandError
from server.persistence.manager import PersistenceError

_ADMIN = "@admin @slow @dangerous"


def _manager(client: Client) -> Any:
    p = client.server.persistence
    if p is None:
        raise CommandError("ERR persistence is not available on this server")
    return p


@command("save", 1, "admin noscript no-async-loading no-multi", categories=_ADMIN,
         summary="Synchronously saves the database(s) to disk.", group="server")
def save(client: Client, argv: list[bytes]) -> object:
    p = _manager(client)
    try:
        p.save()
    except PersistenceError as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        p.log.warning(f"Failed saving the snapshot: {exc}")
        raise CommandError("ERR") from None
    return OK


@command("bgsave", -1, "admin noscript no-async-loading", categories=_ADMIN,
         summary="Asynchronously saves the database(s) to disk.", group="server")
def bgsave(client: Client, argv: list[bytes]) -> object:
    schedule = False
    if len(argv) > 1:
        if len(argv) == 2 and argv[1].lower() == b"schedule":
            schedule = True
        else:
            raise CommandError(SYNTAX)
    try:
        how = _manager(client).start_bgsave(schedule)
    except PersistenceError as exc:
        raise CommandError(str(exc)) from None
    if how == "scheduled":
        return SimpleString("Background saving scheduled")
    return SimpleString("Background saving started")


@command("bgrewriteaof", 1, "admin noscript no-async-loading", categories=_ADMIN,
         summary="Asynchronously rewrites the append-only file to disk.", group="server")
def bgrewriteaof(client: Client, argv: list[bytes]) -> object:
    try:
        how = _manager(client).start_rewrite()
    except PersistenceError as exc:
        raise CommandError(str(exc)) from None
    if how == "scheduled":
        return SimpleString("Background append only file rewriting scheduled")
    return SimpleString("Background append only file rewriting started")


@command("lastsave", 1, "loading stale fast", categories="@admin @fast @dangerous",
         summary="Returns the Unix timestamp of the last successful save to disk.",
         group="server", tips="nondeterministic_output")
def lastsave(client: Client, argv: list[bytes]) -> object:
    return _manager(client).lastsave
