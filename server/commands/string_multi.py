"""MGET, MSET and MSETNX: several keys in one atomic command."""

from __future__ import annotations

from protocol.encoder import OK
from server.client import Client
from server.commands.keys import lookup_read
from server.commands.strings import store_string
from server.dispatch import command
from server.errors import wrong_arity
from storage.keyspace import StringValue


@command("mget", -2, "readonly fast", keys=(1, -1, 1), categories="@read @string @fast",
         summary="Atomically returns the string values of one or more keys.", group="string",
         tips="request_policy:multi_shard")
def mget(client: Client, argv: list[bytes]) -> object:
    out: list[bytes | None] = []
    for key in argv[1:]:
        value = lookup_read(client, key)
        out.append(value.data if type(value) is StringValue else None)  # other types: nil
    return out


def _set_pairs(client: Client, argv: list[bytes]) -> None:
    """Store every key/value pair as SET would (each key loses its TTL), then propagate the
    command once; it counts one change per key."""
    db = client.db
    for i in range(1, len(argv), 2):
        key = argv[i]
        store_string(client, key, argv[i + 1], db.get(key))
    client.server.propagate(db, argv, changes=(len(argv) - 1) // 2)


@command("mset", -3, "write denyoom", keys=(1, -1, 2), categories="@write @string @slow",
         summary="Atomically creates or modifies the string values of one or more keys.",
         since="1.0.1", group="string",
         tips="request_policy:multi_shard response_policy:all_succeeded")
def mset(client: Client, argv: list[bytes]) -> object:
    if len(argv) % 2 == 0:
        raise wrong_arity("mset")
    _set_pairs(client, [b"MSET", *argv[1:]])
    return OK


@command("msetnx", -3, "write denyoom", keys=(1, -1, 2), categories="@write @string @slow",
         summary="Atomically modifies the string values of one or more keys only when all keys "
                 "don't exist.", since="1.0.1", group="string",
         tips="request_policy:multi_shard response_policy:agg_min")
def msetnx(client: Client, argv: list[bytes]) -> object:
    if len(argv) % 2 == 0:
        raise wrong_arity("msetnx")
    db = client.db
    if any(db.get(argv[i]) is not None for i in range(1, len(argv), 2)):
        return 0  # all or nothing
    _set_pairs(client, [b"MSETNX", *argv[1:]])
    return 1
