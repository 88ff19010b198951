"""INCR, DECR, INCRBY, DECRBY: strings holding 64-bit integers. (INCRBYFLOAT, computed in
80-bit long double, is in string_float.py.)"""

from __future__ import annotations

from server import notify
from server.client import Client
from server.commands.strings import lookup_string_write
from server.dispatch import command
from server.errors import CommandError
from server.parsing import INT64_MAX, INT64_MIN, parse_int
from storage.keyspace import StringValue

_FLAGS = "write denyoom fast"
_CATEGORIES = "@write @string @fast"


def _incr_by(client: Client, argv: list[bytes], incr: int) -> int:
    """incrDecrCommand: the value in place (the key keeps its TTL), created from 0; the
    command itself is what the AOF replays."""
    key = argv[1]
    value = lookup_string_write(client, key)
    current = 0 if value is None else parse_int(value.data)
    result = current + incr
    if not INT64_MIN <= result <= INT64_MAX:
        raise CommandError("ERR increment or decrement would overflow")
    data = str(result).encode()
    db = client.db
    if value is None:
        db.add(key, StringValue(data))
    else:
        value.data = data
        value.raw = value.sds = False  # the result is int-encoded again
    server = client.server
    server.key_changed(db, key)
    server.notify(notify.STRING, b"incrby", key, db.id)
    server.propagate(db, list(argv))
    return result


@command("incr", 2, _FLAGS, keys=(1, 1, 1), categories=_CATEGORIES,
         summary="Increments the integer value of a key by one. Uses 0 as initial value if the "
                 "key doesn't exist.", group="string")
def incr(client: Client, argv: list[bytes]) -> object:
    return _incr_by(client, argv, 1)


@command("decr", 2, _FLAGS, keys=(1, 1, 1), categories=_CATEGORIES,
         summary="Decrements the integer value of a key by one. Uses 0 as initial value if the "
                 "key doesn't exist.", group="string")
def decr(client: Client, argv: list[bytes]) -> object:
    return _incr_by(client, argv, -1)


@command("incrby", 3, _FLAGS, keys=(1, 1, 1), categories=_CATEGORIES,
         summary="Increments the integer value of a key by a number. Uses 0 as initial value if "
                 "the key doesn't exist.", group="string")
def incrby(client: Client, argv: list[bytes]) -> object:
    return _incr_by(client, argv, parse_int(argv[2]))


@command("decrby", 3, _FLAGS, keys=(1, 1, 1), categories=_CATEGORIES,
         summary="Decrements a number from the integer value of a key. Uses 0 as initial value "
                 "if the key doesn't exist.", group="string")
def decrby(client: Client, argv: list[bytes]) -> object:
    decrement = parse_int(argv[2])
    if decrement == INT64_MIN:  # its negation does not fit
        raise CommandError("ERR decrement would overflow")
    return _incr_by(client, argv, -decrement)
