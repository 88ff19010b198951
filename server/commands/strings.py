"""The string type's core: GET, STRLEN and SET, and the helpers the other string command
modules (string_counters, string_edit, string_multi, string_set) share."""

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


def lookup_string_write(client: Client, key: bytes) -> StringValue | None:
    """lookupKeyWrite + checkType: the string at key (lazily expired, no keymiss event, no
    hit/miss stats), None when missing; WRONGTYPE for another type."""
    value = client.db.get(key)
    if value is not None and type(value) is not StringValue:
        raise WrongTypeError()
    return value


def expire_at_ms(client: Client, arg: bytes, unit_ms: int, absolute: bool, name: str) -> int:
    """getExpireMillisecondsOrReply: the absolute time (ms) an EX/PX/EXAT/PXAT argument
    means, or "invalid expire time" for a value <= 0 or one that overflows."""
    amount = parse_int(arg)
    invalid = CommandError(f"ERR invalid expire time in '{name}' command")
    if amount <= 0 or amount > INT64_MAX // unit_ms:
        raise invalid
    when_ms = amount * unit_ms if absolute else client.db.clock() + amount * unit_ms
    if when_ms > INT64_MAX:
        raise invalid
    return when_ms


def store_string(client: Client, key: bytes, data: bytes, old: object,
                 keep_ttl: bool = False) -> None:
    """setKey + the "set" event: key now holds data (its TTL dropped unless keep_ttl); `old`
    is the value it replaced (None: the key is new), for Redis 8.2's overwritten events."""
    db = client.db
    value = StringValue(data)
    db.set(key, value, keep_ttl=keep_ttl)
    server = client.server
    server.key_changed(db, key)
    server.notify_replaced(db, key, old, value)
    server.notify(notify.STRING, b"set", key, db.id)


def store_string_expiring(client: Client, key: bytes, data: bytes, old: object,
                          when_ms: int) -> None:
    """SET with EX/PX/EXAT/PXAT (and SETEX, PSETEX): store, set the TTL, propagate as
    SET key value PXAT <ms> so that a replay gives the same absolute time."""
    store_string(client, key, data, old)
    db = client.db
    db.set_expire(key, when_ms)
    client.server.notify(notify.GENERIC, b"expire", key, db.id)
    client.server.propagate(db, [b"SET", key, data, b"PXAT", str(when_ms).encode()])


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
    key = argv[1]
    when_ms = None
    if expiry is not None:
        unit, absolute = _EXPIRY_UNITS[expiry[0]]
        when_ms = expire_at_ms(client, expiry[1], unit, absolute, "set")
    old = get_string(client, key) if want_old else None
    current = client.db.get(key)
    exists = current is not None
    if (nx and exists) or (xx and not exists):
        return old if want_old else None
    if when_ms is not None:
        store_string_expiring(client, key, argv[2], current, when_ms)
    else:
        store_string(client, key, argv[2], current, keep_ttl)
        client.server.propagate(client.db,
                                [b"SET", key, argv[2], *([b"KEEPTTL"] if keep_ttl else [])])
    return old if want_old else OK
