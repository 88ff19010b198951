"""DUMP and RESTORE: a key's value as Redis's serialized payload, and back (see
server/persistence/dump_payload.py for the format). Payloads DUMPed by Redis 5 to 8.4 restore
here, and ours restore in Redis versions that read RDB version 12 (7.4 on)."""

from __future__ import annotations

from protocol.encoder import OK
from server import notify
from server.client import Client
from server.commands.keys import lookup_read
from server.dispatch import command
from server.errors import SYNTAX, CommandError
from server.parsing import parse_int
from server.persistence.dump_payload import PayloadError, UnsupportedType, dump, restore, verify

_KS = "@keyspace"


@command("dump", 2, "readonly", keys=(1, 1, 1), categories=f"{_KS} @read @slow",
         summary="Returns a serialized representation of the value stored at a key.",
         since="2.6.0", tips="nondeterministic_output")
def dump_command(client: Client, argv: list[bytes]) -> object:
    value = lookup_read(client, argv[1])
    return None if value is None else dump(value)


@command("restore", -4, "write denyoom", keys=(1, 1, 1),
         categories=f"{_KS} @write @slow @dangerous",
         summary="Creates a key from the serialized representation of a value.", since="2.6.0")
def restore_command(client: Client, argv: list[bytes]) -> object:
    replace = absttl = False
    idle = freq = -1
    j = 4
    while j < len(argv):  # (restoreCommand's order and texts)
        opt = argv[j].lower()
        more = j + 1 < len(argv)
        if opt == b"replace":
            replace = True
        elif opt == b"absttl":
            absttl = True
        elif opt == b"idletime" and more and freq == -1:
            idle = parse_int(argv[j + 1])
            if idle < 0:
                raise CommandError("ERR Invalid IDLETIME value, must be >= 0")
            j += 1
        elif opt == b"freq" and more and idle == -1:
            freq = parse_int(argv[j + 1])
            if not 0 <= freq <= 255:
                raise CommandError("ERR Invalid FREQ value, must be >= 0 and <= 255")
            j += 1
        else:
            raise CommandError(SYNTAX)
        j += 1
    db = client.db
    key = argv[1]
    if not replace and db.get(key) is not None:
        raise CommandError("BUSYKEY Target key name already exists.")
    ttl = parse_int(argv[2])
    if ttl < 0:
        raise CommandError("ERR Invalid TTL value, must be >= 0")
    payload = argv[3]
    if not verify(payload):
        raise CommandError("ERR DUMP payload version or checksum are wrong")
    try:
        value = restore(payload)
    except UnsupportedType as exc:
        raise CommandError(f"ERR Bad data format: {exc}") from None
    except PayloadError:
        raise CommandError("ERR Bad data format") from None
    server = client.server
    replaced = db.peek(key) if replace else None
    deleted = db.delete(key) if replace else False
    now = db.clock()
    if ttl and not absttl:
        ttl += now
    if ttl and ttl <= now:  # already expired: no key (the old one is gone)
        if deleted:
            server.key_changed(db, key)
            server.notify(notify.GENERIC, b"del", key, db.id)
            server.propagate(db, [b"DEL", key])
        return OK
    db.add(key, value)
    if ttl:
        db.set_expire(key, ttl)
    lru = client.server.access.restored(idle, freq)  # (None: the policy ignores the option)
    if lru is not None:
        value.lru = lru
    server.key_changed(db, key)  # WATCH, and readers blocked on the key
    server.notify(notify.GENERIC, b"restore", key, db.id)
    server.notify_replaced(db, key, replaced, value)
    effect = list(argv)
    if ttl and not absttl:  # replayed later, the TTL must not restart: make it absolute
        effect[2] = b"%d" % ttl
        effect.append(b"ABSTTL")
    server.propagate(db, effect)
    return OK
