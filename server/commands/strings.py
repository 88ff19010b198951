"""The minimal string type: SET, GET and STRLEN, so that type checks (WRONGTYPE) have a second
type (and redis-cli --bigkeys can size strings)."""

from __future__ import annotations

from protocol.encoder import OK
from server import notify
from server.client import Client
from server.commands.keys import lookup_read
from server.dispatch import command
from server.errors import SYNTAX, CommandError, WrongTypeError
from server.parsing import INT64_MAX, parse_int
from storage.keyspace import StringValue


def get_string(client: Client, key: bytes) -> bytes | None:
    value = lookup_read(client, key)
    if value is None:
        return None
    if not isinstance(value, StringValue):
        raise WrongTypeError()
    return value.data


@command("get", 2, "readonly fast", keys=(1, 1, 1), categories="@read @string @fast",
         summary="Returns the string value of a key.", group="string")
def get(client: Client, argv: list[bytes]) -> object:
    return get_string(client, argv[1])


@command("strlen", 2, "readonly fast", keys=(1, 1, 1), categories="@read @string @fast",
         summary="Returns the length of a string value.", since="2.2.0", group="string")
def strlen(client: Client, argv: list[bytes]) -> object:
    value = get_string(client, argv[1])
    return 0 if value is None else len(value)


_EXPIRY_UNITS = {b"ex": (1000, False), b"px": (1, False), b"exat": (1000, True),
                 b"pxat": (1, True)}


@command("set", -3, "write denyoom", keys=(1, 1, 1), categories="@write @string @slow",
         summary="Sets the string value of a key, ignoring its type.", group="string")
def set_(client: Client, argv: list[bytes]) -> object:
    nx = xx = want_old = keep_ttl = False
    expiry: tuple[bytes, bytes] | None = None
    i = 3
    while i < len(argv):
        opt = argv[i].lower()
        if opt == b"nx" and not xx:
            nx = True
        elif opt == b"xx" and not nx:
            xx = True
        elif opt == b"get":
            want_old = True
        elif opt == b"keepttl" and expiry is None:
            keep_ttl = True
        elif (opt in _EXPIRY_UNITS and (expiry is None or expiry[0] == opt) and not keep_ttl
              and i + 1 < len(argv)):  # the same option twice is allowed: the last one wins
            expiry = (opt, argv[i + 1])
            i += 1
        else:
            raise CommandError(SYNTAX)
        i += 1
    db = client.db
    key = argv[1]
    when_ms = None
    if expiry is not None:
        unit, absolute = _EXPIRY_UNITS[expiry[0]]
        amount = parse_int(expiry[1])
        invalid = CommandError("ERR invalid expire time in 'set' command")
        if amount <= 0 or amount > INT64_MAX // unit:
            raise invalid
        when_ms = amount * unit if absolute else db.clock() + amount * unit
        if when_ms > INT64_MAX:
            raise invalid
    old = get_string(client, key) if want_old else None
    current = db.get(key)
    exists = current is not None
    if (nx and exists) or (xx and not exists):
        return old if want_old else None
    value = StringValue(argv[2])
    db.set(key, value, keep_ttl=keep_ttl)
    server = client.server
    server.key_changed(db, key)
    server.notify_replaced(db, key, current, value)
    server.notify(notify.STRING, b"set", key, db.id)
    if when_ms is not None:
        db.set_expire(key, when_ms)
        server.notify(notify.GENERIC, b"expire", key, db.id)
        server.propagate(db, [b"SET", key, argv[2], b"PXAT", str(when_ms).encode()])
    else:
        server.propagate(db, [b"SET", key, argv[2], *([b"KEEPTTL"] if keep_ttl else [])])
    return old if want_old else OK
