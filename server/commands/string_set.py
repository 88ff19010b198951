"""SETNX, SETEX, PSETEX (SET's older forms) and GETSET, GETDEL, GETEX (GET with a write)."""

from __future__ import annotations

from protocol.encoder import OK
from server import notify
from server.client import Client
from server.commands.strings import (
    expire_at_ms,
    get_string,
    store_string,
    store_string_expiring,
)
from server.dispatch import command
from server.errors import SYNTAX, CommandError

_SET_CATEGORIES = "@write @string @slow"
_FAST_CATEGORIES = "@write @string @fast"


@command("setnx", 3, "write denyoom fast", keys=(1, 1, 1), categories=_FAST_CATEGORIES,
         summary="Set the string value of a key only when the key doesn't exist.",
         group="string")
def setnx(client: Client, argv: list[bytes]) -> object:
    key = argv[1]
    if client.db.get(key) is not None:
        return 0
    store_string(client, key, argv[2], None)
    client.server.propagate(client.db, [b"SETNX", key, argv[2]])
    return 1


def _set_expiring(client: Client, argv: list[bytes], unit_ms: int, name: str) -> object:
    """SETEX / PSETEX key <time> value: SET key value EX|PX <time>."""
    key = argv[1]
    when_ms = expire_at_ms(client, argv[2], unit_ms, False, name)
    store_string_expiring(client, key, argv[3], client.db.get(key), when_ms)
    return OK


@command("setex", 4, "write denyoom", keys=(1, 1, 1), categories=_SET_CATEGORIES,
         summary="Sets the string value and expiration time of a key. Creates the key if it "
                 "doesn't exist.", since="2.0.0", group="string")
def setex(client: Client, argv: list[bytes]) -> object:
    return _set_expiring(client, argv, 1000, "setex")


@command("psetex", 4, "write denyoom", keys=(1, 1, 1), categories=_SET_CATEGORIES,
         summary="Sets both string value and expiration time in milliseconds of a key. The key "
                 "is created if it doesn't exist.", since="2.6.0", group="string")
def psetex(client: Client, argv: list[bytes]) -> object:
    return _set_expiring(client, argv, 1, "psetex")


@command("getset", 3, "write denyoom fast", keys=(1, 1, 1), categories=_FAST_CATEGORIES,
         summary="Returns the previous string value of a key after setting it to a new value.",
         group="string")
def getset(client: Client, argv: list[bytes]) -> object:
    key = argv[1]
    old = get_string(client, key)  # (a keymiss event when missing; WRONGTYPE stops it)
    # SET without KEEPTTL: the key loses its TTL.
    store_string(client, key, argv[2], client.db.get(key))
    client.server.propagate(client.db, [b"SET", key, argv[2]])
    return old


@command("getdel", 2, "write fast", keys=(1, 1, 1), categories=_FAST_CATEGORIES,
         summary="Returns the string value of a key after deleting the key.", since="6.2.0",
         group="string")
def getdel(client: Client, argv: list[bytes]) -> object:
    key = argv[1]
    old = get_string(client, key)
    db = client.db
    if old is not None and db.delete(key):
        server = client.server
        server.key_changed(db, key)
        server.notify(notify.GENERIC, b"del", key, db.id)
        server.propagate(db, [b"DEL", key])
    return old


# GETEX's expiry options: (ms per unit, absolute time).
_GETEX_UNITS = {b"ex": (1000, False), b"px": (1, False), b"exat": (1000, True),
                b"pxat": (1, True)}


def _getex_options(argv: list[bytes]) -> tuple[bytes | None, bytes | None, bool]:
    """(expiry option, its argument, PERSIST): one of them at most, though repeating the same
    one is allowed as in parseExtendedStringArgumentsOrReply (the last one wins)."""
    option: bytes | None = None
    amount: bytes | None = None
    persist = False
    i = 2
    while i < len(argv):
        opt = argv[i].lower()
        if opt == b"persist" and option is None:
            persist = True
        elif (opt in _GETEX_UNITS and option in (None, opt) and not persist
              and i + 1 < len(argv)):
            option, amount = opt, argv[i + 1]
            i += 1
        else:
            raise CommandError(SYNTAX)
        i += 1
    return option, amount, persist


@command("getex", -2, "write fast", keys=(1, 1, 1), categories=_FAST_CATEGORIES,
         summary="Returns the string value of a key after setting its expiration time.",
         since="6.2.0", group="string")
def getex(client: Client, argv: list[bytes]) -> object:
    option, amount, persist = _getex_options(argv)
    key = argv[1]
    value = get_string(client, key)
    if value is None:
        return None
    db = client.db
    server = client.server
    if option is not None and amount is not None:
        unit_ms, absolute = _GETEX_UNITS[option]
        when_ms = expire_at_ms(client, amount, unit_ms, absolute, "getex")
        if absolute and when_ms <= db.clock() and not server.loading:
            # A time already past deletes the key (propagated as DEL, as GETEX never is).
            db.delete(key)
            server.key_changed(db, key)
            server.notify(notify.GENERIC, b"del", key, db.id)
            server.propagate(db, [b"DEL", key])
        else:
            db.set_expire(key, when_ms)
            server.signal_modified_key(db, key)
            server.notify(notify.GENERIC, b"expire", key, db.id)
            server.propagate(db, [b"PEXPIREAT", key, str(when_ms).encode()])
    elif persist and db.persist(key):
        server.signal_modified_key(db, key)
        server.notify(notify.GENERIC, b"persist", key, db.id)
        server.propagate(db, [b"PERSIST", key])
    return value
