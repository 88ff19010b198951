"""INCRBYFLOAT: a string's number plus an increment, computed as Redis computes it on x86-64:
in 80-bit long double (server/long_double.py), the result stored and replied as
ld2string's human-friendly text ("%.17Lf" without trailing zeros)."""

from __future__ import annotations

from server import long_double, notify
from server.client import Client
from server.commands.strings import lookup_string_write
from server.dispatch import command
from server.errors import CommandError
from storage.keyspace import StringValue

NOT_A_FLOAT = "ERR value is not a valid float"
NOT_FINITE = "ERR increment would produce NaN or Infinity"


def _parse(data: bytes) -> long_double.LongDouble:
    """getLongDoubleFromObjectOrReply. (An int-encoded value converts exactly, as its
    canonical text does here.)"""
    value = long_double.parse(data)
    if value is None:
        raise CommandError(NOT_A_FLOAT)
    return value


def _store(client: Client, key: bytes, old: StringValue | None, data: bytes) -> None:
    """dbAdd, or dbReplaceValue (the key keeps its TTL; no overwritten event, which only
    setKey fires). The new object is a plain string, never int-encoded, even for "3"."""
    if old is None:
        value = StringValue(data)
        value.sds = True
        client.db.add(key, value)
    else:  # in place: the entry's access time / LFU counter stay as dbReplaceValue keeps them
        old.data = data
        old.raw = False
        old.sds = True


@command("incrbyfloat", 3, "write denyoom fast", keys=(1, 1, 1),
         categories="@write @string @fast", since="2.6.0", group="string",
         summary="Increment the floating point value of a key by a number. Uses 0 as initial "
                 "value if the key doesn't exist.")
def incrbyfloat(client: Client, argv: list[bytes]) -> object:
    key = argv[1]
    old = lookup_string_write(client, key)
    current = long_double.ZERO if old is None else _parse(old.data)
    total = long_double.add(current, _parse(argv[2]))
    if not long_double.is_finite(total):
        raise CommandError(NOT_FINITE)
    data = long_double.format_human(total)
    _store(client, key, old, data)
    db = client.db
    server = client.server
    server.key_changed(db, key)
    server.notify(notify.STRING, b"incrbyfloat", key, db.id)
    # Replicated as the SET of its result, so that no replica or AOF replay computes it again.
    server.propagate(db, [b"SET", key, data, b"KEEPTTL"])
    return data
