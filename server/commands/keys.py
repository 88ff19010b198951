"""Keyspace commands: DEL, EXISTS, TYPE, KEYS, SCAN, RENAME, EXPIRE and friends, FLUSH*, MOVE..."""

from __future__ import annotations

from typing import Any

from protocol.encoder import OK, SimpleString
from server import notify
from server.client import Client
from server.commands.help import help_reply
from server.dispatch import command, container
from server.errors import DB_INDEX_OUT_OF_RANGE, NO_SUCH_KEY, SYNTAX, CommandError
from server.parsing import INT64_MAX, INT64_MIN, eq, parse_c_int, parse_int, string2ull
from server.persistence.rdb_values import clone_stream
from storage.keyspace import Database, StringValue, is_shared_integer, type_name
from storage.keyspace import object_encoding as encoding_of
from storage.stream import Stream

_KS = "@keyspace"
_NO_SUCH = -2


def lookup_read(client: Client, key: bytes, touch: bool = True, notify_miss: bool = True) -> Any:
    """lookupKeyRead: the value (lazily expired) and a keyspace hit or miss for INFO stats.
    Without touch (LOOKUP_NOTOUCH: TYPE, EXISTS, TTL, OBJECT) the key's `lru` stays; without
    notify_miss (LOOKUP_NONOTIFY: OBJECT) a miss sends no keymiss event."""
    value = client.db.get(key) if touch else client.db.peek(key)
    stats = client.server.stats
    if value is None:
        stats.keyspace_misses += 1
        if notify_miss:
            client.server.notify(notify.KEY_MISS, b"keymiss", key, client.db.id)
    else:
        stats.keyspace_hits += 1
    return value


def _delete_keys(client: Client, keys: list[bytes]) -> int:
    db = client.db
    server = client.server
    deleted = 0
    for key in keys:
        if db.delete(key):
            deleted += 1
            server.key_changed(db, key)
            server.notify(notify.GENERIC, b"del", key, db.id)
            server.propagate(db, [b"DEL", key])
    return deleted


@command("del", -2, "write", keys=(1, -1, 1), categories=f"{_KS} @write @slow",
         summary="Deletes one or more keys.")
def del_(client: Client, argv: list[bytes]) -> object:
    return _delete_keys(client, argv[1:])


@command("unlink", -2, "write fast", keys=(1, -1, 1), categories=f"{_KS} @write @fast",
         summary="Asynchronously deletes one or more keys.", since="4.0.0")
def unlink(client: Client, argv: list[bytes]) -> object:
    return _delete_keys(client, argv[1:])


@command("exists", -2, "readonly fast", keys=(1, -1, 1), categories=f"{_KS} @read @fast",
         summary="Determines whether one or more keys exist.")
def exists(client: Client, argv: list[bytes]) -> object:
    return sum(1 for key in argv[1:] if lookup_read(client, key, touch=False) is not None)


@command("touch", -2, "readonly fast", keys=(1, -1, 1), categories=f"{_KS} @read @fast",
         summary="Returns the number of existing keys out of those specified after updating "
         "the time they were last accessed.", since="3.2.1")
def touch(client: Client, argv: list[bytes]) -> object:
    # (dispatch lets TOUCH touch even for a CLIENT NO-TOUCH client, as Redis does)
    return sum(1 for key in argv[1:] if lookup_read(client, key) is not None)


@command("type", 2, "readonly fast", keys=(1, 1, 1), categories=f"{_KS} @read @fast",
         summary="Determines the type of value stored at a key.")
def type_(client: Client, argv: list[bytes]) -> object:
    value = lookup_read(client, argv[1], touch=False)
    return SimpleString("none" if value is None else type_name(value))


@command("keys", 2, "readonly", categories=f"{_KS} @read @slow @dangerous",
         summary="Returns all key names that match a pattern.", tips="request_policy:all_shards "
         "nondeterministic_output_order")
def keys_(client: Client, argv: list[bytes]) -> object:
    return client.db.keys_matching(argv[1])


@command("scan", -2, "readonly", categories=f"{_KS} @read @slow",
         summary="Iterates over the key names in the database.", since="2.8.0",
         tips="nondeterministic_output nondeterministic_output_order")
def scan(client: Client, argv: list[bytes]) -> object:
    cursor = string2ull(argv[1])
    if cursor is None:
        raise CommandError("ERR invalid cursor")
    count, pattern, type_filter = 10, None, None
    i = 2
    while i < len(argv):
        more = len(argv) - i - 1
        if eq(argv[i], b"count") and more >= 1:
            count = parse_int(argv[i + 1])
            if count < 1:
                raise CommandError(SYNTAX)
            i += 2
        elif eq(argv[i], b"match") and more >= 1:
            pattern = argv[i + 1]
            if pattern == b"*":
                pattern = None
            i += 2
        elif eq(argv[i], b"type") and more >= 1:
            type_filter = argv[i + 1].decode(errors="replace").lower()
            i += 2
        else:
            raise CommandError(SYNTAX)
    next_cursor, found = client.db.scan(cursor, count, pattern, type_filter)
    return [str(next_cursor).encode(), found]


@command("randomkey", 1, "readonly", categories=f"{_KS} @read @slow",
         summary="Returns a random key name from the database.", tips="nondeterministic_output")
def randomkey(client: Client, argv: list[bytes]) -> object:
    return client.db.random_key()


@command("dbsize", 1, "readonly fast", categories=f"{_KS} @read @fast",
         summary="Returns the number of keys in the database.", group="server")
def dbsize(client: Client, argv: list[bytes]) -> object:
    return len(client.db)


def _rename(client: Client, argv: list[bytes], nx: bool) -> object:
    db = client.db
    src, dst = argv[1], argv[2]
    value = db.get(src)
    if value is None:
        raise CommandError(NO_SUCH_KEY)
    if src == dst:
        return 0 if nx else OK
    if nx and db.get(dst) is not None:
        return 0
    expire = db.get_expire(src)
    replaced = db.get(dst)
    db.delete(dst)  # (Redis deletes an existing destination, then adds the key: "new")
    db.add(dst, value)
    if expire is not None:
        db.set_expire(dst, expire)
    db.delete(src)
    server = client.server
    server.key_changed(db, src)
    server.key_changed(db, dst)
    server.notify(notify.GENERIC, b"rename_from", src, db.id)
    server.notify(notify.GENERIC, b"rename_to", dst, db.id)
    server.notify_replaced(db, dst, replaced, value)
    server.propagate(db, [b"RENAMENX" if nx else b"RENAME", src, dst])
    return 1 if nx else OK


@command("rename", 3, "write", keys=(1, 2, 1), categories=f"{_KS} @write @slow",
         summary="Renames a key and overwrites the destination.")
def rename(client: Client, argv: list[bytes]) -> object:
    return _rename(client, argv, nx=False)


@command("renamenx", 3, "write fast", keys=(1, 2, 1), categories=f"{_KS} @write @fast",
         summary="Renames a key only when the target key name doesn't exist.")
def renamenx(client: Client, argv: list[bytes]) -> object:
    return _rename(client, argv, nx=True)


def _expire_generic(client: Client, argv: list[bytes], base_ms: int, unit_ms: int) -> object:
    """expireGenericCommand: base_ms is now for relative forms, 0 for the *AT forms."""
    name = argv[0].decode(errors="replace").lower()
    when = parse_int(argv[2])
    nx = xx = gt = lt = False
    for opt in argv[3:]:
        low = opt.lower()
        if low == b"nx":
            nx = True
        elif low == b"xx":
            xx = True
        elif low == b"gt":
            gt = True
        elif low == b"lt":
            lt = True
        else:
            raise CommandError(f"ERR Unsupported option {opt.decode(errors='replace')}")
    if nx and (xx or gt or lt):
        raise CommandError("ERR NX and XX, GT or LT options at the same time are not compatible")
    if gt and lt:
        raise CommandError("ERR GT and LT options at the same time are not compatible")
    invalid = CommandError(f"ERR invalid expire time in '{name}' command")
    # (LLONG_MIN / 1000 in C rounds toward zero; Python's // would floor.)
    if unit_ms == 1000 and (when > INT64_MAX // 1000 or when < -(-INT64_MIN // 1000)):
        raise invalid
    when *= unit_ms
    if when > INT64_MAX - base_ms:
        raise invalid
    when += base_ms
    db = client.db
    key = argv[1]
    if db.get(key) is None:
        return 0
    current = db.get_expire(key)
    if nx and current is not None:
        return 0
    if xx and current is None:
        return 0
    if gt and (current is None or when <= current):
        return 0
    if lt and current is not None and when >= current:
        return 0
    server = client.server
    if when <= db.clock():
        db.delete(key)
        server.key_changed(db, key)
        server.notify(notify.GENERIC, b"del", key, db.id)
        server.propagate(db, [b"DEL", key])
        return 1
    db.set_expire(key, when)
    server.signal_modified_key(db, key)
    server.notify(notify.GENERIC, b"expire", key, db.id)
    server.propagate(db, [b"PEXPIREAT", key, str(when).encode()])
    return 1


_EXPIRE_FLAGS = "write fast"
_EXPIRE_CAT = f"{_KS} @write @fast"


@command("expire", -3, _EXPIRE_FLAGS, keys=(1, 1, 1), categories=_EXPIRE_CAT,
         summary="Sets the expiration time of a key in seconds.")
def expire(client: Client, argv: list[bytes]) -> object:
    return _expire_generic(client, argv, client.db.clock(), 1000)


@command("pexpire", -3, _EXPIRE_FLAGS, keys=(1, 1, 1), categories=_EXPIRE_CAT,
         summary="Sets the expiration time of a key in milliseconds.", since="2.6.0")
def pexpire(client: Client, argv: list[bytes]) -> object:
    return _expire_generic(client, argv, client.db.clock(), 1)


@command("expireat", -3, _EXPIRE_FLAGS, keys=(1, 1, 1), categories=_EXPIRE_CAT,
         summary="Sets the expiration time of a key to a Unix timestamp.", since="1.2.0")
def expireat(client: Client, argv: list[bytes]) -> object:
    return _expire_generic(client, argv, 0, 1000)


@command("pexpireat", -3, _EXPIRE_FLAGS, keys=(1, 1, 1), categories=_EXPIRE_CAT,
         summary="Sets the expiration time of a key to a Unix milliseconds timestamp.",
         since="2.6.0")
def pexpireat(client: Client, argv: list[bytes]) -> object:
    return _expire_generic(client, argv, 0, 1)


def _ttl_generic(client: Client, key: bytes, ms: bool, absolute: bool) -> int:
    db = client.db
    if lookup_read(client, key, touch=False) is None:
        return _NO_SUCH
    when = db.get_expire(key)
    if when is None:
        return -1
    if absolute:
        return when if ms else (when + 500) // 1000
    left = max(0, when - db.clock())
    return left if ms else (left + 500) // 1000


@command("ttl", 2, "readonly fast", keys=(1, 1, 1), categories=f"{_KS} @read @fast",
         summary="Returns the expiration time in seconds of a key.")
def ttl(client: Client, argv: list[bytes]) -> object:
    return _ttl_generic(client, argv[1], ms=False, absolute=False)


@command("pttl", 2, "readonly fast", keys=(1, 1, 1), categories=f"{_KS} @read @fast",
         summary="Returns the expiration time in milliseconds of a key.", since="2.6.0")
def pttl(client: Client, argv: list[bytes]) -> object:
    return _ttl_generic(client, argv[1], ms=True, absolute=False)


@command("expiretime", 2, "readonly fast", keys=(1, 1, 1), categories=f"{_KS} @read @fast",
         summary="Returns the expiration time of a key as a Unix timestamp.", since="7.0.0")
def expiretime(client: Client, argv: list[bytes]) -> object:
    return _ttl_generic(client, argv[1], ms=False, absolute=True)


@command("pexpiretime", 2, "readonly fast", keys=(1, 1, 1), categories=f"{_KS} @read @fast",
         summary="Returns the expiration time of a key as a Unix milliseconds timestamp.",
         since="7.0.0")
def pexpiretime(client: Client, argv: list[bytes]) -> object:
    return _ttl_generic(client, argv[1], ms=True, absolute=True)


@command("persist", 2, "write fast", keys=(1, 1, 1), categories=f"{_KS} @write @fast",
         summary="Removes the expiration time of a key.", since="2.2.0")
def persist(client: Client, argv: list[bytes]) -> object:
    db = client.db
    key = argv[1]
    if db.get(key) is None or not db.persist(key):
        return 0
    client.server.signal_modified_key(db, key)
    client.server.notify(notify.GENERIC, b"persist", key, db.id)
    client.server.propagate(db, [b"PERSIST", key])
    return 1


def _flush_mode(argv: list[bytes]) -> None:
    if len(argv) > 2 or (len(argv) == 2 and argv[1].lower() not in (b"async", b"sync")):
        raise CommandError(SYNTAX)


def touch_watched_in_db(client: Client, db: Database, replaced_with: Database | None) -> None:
    """touchAllWatchedKeysInDb: before db is emptied (or swapped with replaced_with), WATCHes
    on its keys that exist there (or will exist after the swap) become dirty, except where
    an expired key goes or comes: one that does not exist for the transaction."""
    server = client.server
    if not server.watched_keys:
        return
    for ref, watchers in server.watched_keys.items():
        if ref[0] != db.id:
            continue
        key = ref[1]
        in_emptied = key in db.data
        in_replacement = replaced_with is not None and key in replaced_with.data
        if not (in_emptied or in_replacement):
            continue
        comes_expired = in_replacement and replaced_with.is_stale(key)  # type: ignore[union-attr]
        for watcher in watchers:
            if ref in watcher.watched_stale:
                if not in_replacement:
                    watcher.watched_stale.discard(ref)  # the expired key is gone: no change
                    continue
                if comes_expired:
                    continue  # expired before, expired after
            elif not in_emptied and comes_expired:
                watcher.watched_stale.add(ref)  # nothing before, an expired key after
                continue
            watcher.cas_dirty = True


def _signal_blocked_keys(client: Client, db: Database) -> None:
    """Clients blocked on keys of db re-run their command (the data under them changed)."""
    blocking = client.server.blocking
    for db_id, key in list(blocking.blocking_keys):
        if db_id == db.id:
            blocking.signal_key_as_ready(db_id, key)


def flush_db(client: Client, db: Database) -> None:
    touch_watched_in_db(client, db, None)
    db.clear()
    _signal_blocked_keys(client, db)


@command("flushdb", -1, "write", categories=f"{_KS} @write @slow @dangerous",
         summary="Removes all keys from the current database.", group="server")
def flushdb(client: Client, argv: list[bytes]) -> object:
    _flush_mode(argv)
    flush_db(client, client.db)
    client.server.tracking.invalidate_all()  # (cached keys are not per database)
    client.server.propagate(client.db, [b"FLUSHDB"])
    return OK


@command("flushall", -1, "write", categories=f"{_KS} @write @slow @dangerous",
         summary="Removes all keys from all databases.", group="server")
def flushall(client: Client, argv: list[bytes]) -> object:
    _flush_mode(argv)
    for db in client.server.dbs:
        flush_db(client, db)
    server = client.server
    server.tracking.invalidate_all()
    server.propagate(client.db, [b"FLUSHALL"])
    if server.persistence is not None and not server.loading:  # (not while replaying the AOF)
        server.persistence.after_flushall()
    return OK


def _db_at(client: Client, index: int) -> Database:
    """selectDb's range check, after the index was parsed as a C int."""
    if index < 0 or index >= len(client.server.dbs):
        raise CommandError(DB_INDEX_OUT_OF_RANGE)
    return client.server.dbs[index]


@command("swapdb", 3, "write fast", categories=f"{_KS} @write @fast @dangerous",
         summary="Swaps two Redis databases.", since="4.0.0", group="server")
def swapdb(client: Client, argv: list[bytes]) -> object:
    # Both indexes are parsed before either is range-checked, as swapdbCommand does.
    first = parse_c_int(argv[1], "ERR invalid first DB index")
    second = parse_c_int(argv[2], "ERR invalid second DB index")
    server = client.server
    a, b = _db_at(client, first), _db_at(client, second)
    if a is not b:
        touch_watched_in_db(client, a, b)
        touch_watched_in_db(client, b, a)
        # Swap contents, not Database objects: clients stay on their numbered database.
        a.swap_contents(b)
        _signal_blocked_keys(client, a)
        _signal_blocked_keys(client, b)
    server.propagate(client.db, [b"SWAPDB", argv[1], argv[2]])
    return OK


@command("move", 3, "write fast", keys=(1, 1, 1), categories=f"{_KS} @write @fast",
         summary="Moves a key to another database.")
def move(client: Client, argv: list[bytes]) -> object:
    src = client.db
    dst = _db_at(client, parse_c_int(argv[2]))
    if src is dst:
        raise CommandError("ERR source and destination objects are the same")
    key = argv[1]
    value = src.get(key)
    if value is None or dst.get(key) is not None:
        return 0
    expire = src.get_expire(key)
    dst.add(key, value)
    if expire is not None:
        dst.set_expire(key, expire)
    src.delete(key)
    server = client.server
    server.key_changed(src, key)
    server.key_changed(dst, key)
    server.notify(notify.GENERIC, b"move_from", key, src.id)
    server.notify(notify.GENERIC, b"move_to", key, dst.id)
    server.propagate(src, [b"MOVE", key, argv[2]])
    return 1


@command("copy", -3, "write denyoom", keys=(1, 2, 1), categories=f"{_KS} @write @slow",
         summary="Copies the value of a key to a new key.", since="6.2.0")
def copy(client: Client, argv: list[bytes]) -> object:
    replace = False
    dst = src = client.db
    j = 3
    while j < len(argv):  # (copyCommand: options in any order, DB takes the next argument)
        opt = argv[j].lower()
        if opt == b"replace":
            replace = True
        elif opt == b"db" and j + 1 < len(argv):
            dst = _db_at(client, parse_c_int(argv[j + 1]))
            j += 1
        else:
            raise CommandError(SYNTAX)
        j += 1
    key, new_key = argv[1], argv[2]
    if src is dst and key == new_key:
        raise CommandError("ERR source and destination objects are the same")
    value = lookup_read(client, key)
    if value is None:
        return 0
    replaced = dst.get(new_key)
    if replaced is not None:
        if not replace:
            return 0
        dst.delete(new_key)
    if isinstance(value, Stream):
        value = clone_stream(value)  # (streamDup)
    elif isinstance(value, StringValue):
        value = StringValue(value.data)  # (bytes are immutable: one object for both is fine)
    else:  # pragma: no cover - the keyspace holds only these two types
        raise CommandError(f"ERR cannot copy a value of type {type(value).__name__}")
    dst.add(new_key, value)
    expire = src.get_expire(key)
    if expire is not None:
        dst.set_expire(new_key, expire)
    server = client.server
    server.key_changed(dst, new_key)  # WATCH, and readers blocked on the new key
    server.notify(notify.GENERIC, b"copy_to", new_key, dst.id)
    server.notify_replaced(dst, new_key, replaced, value)
    server.propagate(src, argv)
    return 1


container("object", -2, summary="A container for object introspection commands.",
          since="2.2.3")


@command("object|encoding", 3, "readonly", keys=(2, 2, 1), categories=f"{_KS} @read @slow",
         since="2.2.3",
         summary="Returns the internal encoding of a Redis object.")
def object_encoding(client: Client, argv: list[bytes]) -> object:
    value = lookup_read(client, argv[2], touch=False, notify_miss=False)
    if value is None:
        return None
    return encoding_of(value).encode()


@command("object|refcount", 3, "readonly", keys=(2, 2, 1), categories=f"{_KS} @read @slow",
         since="2.2.3",
         summary="Returns the reference count of a value of a key.")
def object_refcount(client: Client, argv: list[bytes]) -> object:
    value = lookup_read(client, argv[2], touch=False, notify_miss=False)
    if value is None:
        return None
    config = client.server.config
    sharing = not config["maxmemory"] or not config["maxmemory-policy"].endswith(("lru", "lfu"))
    return 2**31 - 1 if sharing and is_shared_integer(value) else 1


_LFU_SELECTED = ("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note "
                 "that when switching between policies at runtime LRU and LFU data will take "
                 "some time to adjust.")
_LFU_NOT_SELECTED = ("ERR An LFU maxmemory policy is not selected, access frequency not "
                     "tracked. Please note that when switching between policies at runtime LRU "
                     "and LFU data will take some time to adjust.")


@command("object|idletime", 3, "readonly", keys=(2, 2, 1), categories=f"{_KS} @read @slow",
         tips="nondeterministic_output",
         since="2.2.3",
         summary="Returns the time since the last access to a Redis object.")
def object_idletime(client: Client, argv: list[bytes]) -> object:
    value = lookup_read(client, argv[2], touch=False, notify_miss=False)
    if value is None:
        return None
    access = client.server.access
    if access.lfu:
        raise CommandError(_LFU_SELECTED)
    return access.idle_ms(value.lru) // 1000


@command("object|freq", 3, "readonly", keys=(2, 2, 1), categories=f"{_KS} @read @slow",
         tips="nondeterministic_output",
         since="4.0.0",
         summary="Returns the logarithmic access frequency counter of a Redis object.")
def object_freq(client: Client, argv: list[bytes]) -> object:
    value = lookup_read(client, argv[2], touch=False, notify_miss=False)
    if value is None:
        return None
    access = client.server.access
    if not access.lfu:
        raise CommandError(_LFU_NOT_SELECTED)
    return access.decayed_counter(value.lru)


@command("object|help", 2, "loading stale", categories=f"{_KS} @slow", since="6.2.0",
         summary="Returns helpful text about the different subcommands.")
def object_help(client: Client, argv: list[bytes]) -> object:
    return help_reply("OBJECT", [
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key>. The returned integer is",
        "    proportional to the logarithm of the recent access frequency of the key.",
        "IDLETIME <key>",
        "    Return the idle time of the <key>, that is the approximated number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with the specified",
        "    <key>.",
    ])
