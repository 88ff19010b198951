"""APPEND, SETRANGE, GETRANGE and SUBSTR: strings read and changed by byte offsets."""

from __future__ import annotations

from server import notify
from server.client import Client
from server.commands.keys import lookup_read
from server.commands.strings import lookup_string_write
from server.dispatch import command
from server.errors import CommandError, WrongTypeError
from server.parsing import parse_int
from storage.keyspace import StringValue


def _check_length(client: Client, size: int, append: int) -> None:
    """checkStringLength: the result may not be longer than proto-max-bulk-len (not checked
    while loading the AOF, which replays what was accepted once)."""
    server = client.server
    if not server.loading and size + append > server.config["proto-max-bulk-len"]:
        raise CommandError("ERR string exceeds maximum allowed size (proto-max-bulk-len)")


def _modified(client: Client, key: bytes, event: bytes, argv: list[bytes]) -> None:
    """The signals of an in-place change (no overwritten event: the value is the same one)."""
    db = client.db
    server = client.server
    server.key_changed(db, key)
    server.notify(notify.STRING, event, key, db.id)
    server.propagate(db, argv)


@command("append", 3, "write denyoom fast", keys=(1, 1, 1),
         categories="@write @string @fast", since="2.0.0", group="string",
         summary="Appends a string to the value of a key. Creates the key if it doesn't exist.")
def append(client: Client, argv: list[bytes]) -> object:
    key, tail = argv[1], argv[2]
    value = lookup_string_write(client, key)
    if value is None:
        value = StringValue(tail)
        client.db.add(key, value)
    else:
        _check_length(client, len(value.data), len(tail))
        value.data += tail
        value.raw = True
    _modified(client, key, b"append", [b"APPEND", key, tail])
    return len(value.data)


@command("setrange", 4, "write denyoom", keys=(1, 1, 1), categories="@write @string @slow",
         since="2.2.0", group="string",
         summary="Overwrites a part of a string value with another by an offset. Creates the "
                 "key if it doesn't exist.")
def setrange(client: Client, argv: list[bytes]) -> object:
    key, patch = argv[1], argv[3]
    offset = parse_int(argv[2])
    if offset < 0:
        raise CommandError("ERR offset is out of range")
    value = lookup_string_write(client, key)
    old = b"" if value is None else value.data
    if not patch:  # nothing to write: no change, not even a new key
        return len(old)
    _check_length(client, offset, len(patch))
    if len(old) < offset:
        old += bytes(offset - len(old))  # zero padding up to the offset
    data = old[:offset] + patch + old[offset + len(patch):]
    if value is None:
        value = StringValue(data)
        client.db.add(key, value)
    else:
        value.data = data
    value.raw = True  # Redis builds (or unshares) a raw string either way
    _modified(client, key, b"setrange", [b"SETRANGE", key, argv[2], patch])
    return len(data)


def _substring(client: Client, argv: list[bytes]) -> bytes:
    """getrangeCommand: both ends inclusive, negative ones counted from the end, clamped."""
    start = parse_int(argv[2])
    end = parse_int(argv[3])
    value = lookup_read(client, argv[1])
    if value is None:
        return b""
    if type(value) is not StringValue:
        raise WrongTypeError()
    data = value.data
    size = len(data)
    if start < 0 and end < 0 and start > end:
        return b""
    if start < 0:
        start = max(start + size, 0)
    if end < 0:
        end = max(end + size, 0)
    end = min(end, size - 1)
    if start > end or size == 0:
        return b""
    return data[start:end + 1]


@command("getrange", 4, "readonly", keys=(1, 1, 1), categories="@read @string @slow",
         since="2.4.0", group="string",
         summary="Returns a substring of the string stored at a key.")
def getrange(client: Client, argv: list[bytes]) -> object:
    return _substring(client, argv)


@command("substr", 4, "readonly", keys=(1, 1, 1), categories="@read @string @slow",
         group="string", summary="Returns a substring from a string value.")
def substr(client: Client, argv: list[bytes]) -> object:
    return _substring(client, argv)
