"""Keyspace notifications (notify.c): events about keys, published through Pub/Sub.

`notify-keyspace-events` picks the classes of events sent (generic, stream, expired, ...) and
the channels they go to: `__keyspace@<db>__:<key>` carries the event's name, and
`__keyevent@<db>__:<event>` the key's. Commands call `Server.notify` after a change, with the
class and the event's name Redis uses.
"""

from __future__ import annotations

from server.errors import ConfigError

KEYSPACE = 1 << 0  # K
KEYEVENT = 1 << 1  # E
GENERIC = 1 << 2  # g
STRING = 1 << 3  # $
LIST = 1 << 4  # l
SET = 1 << 5  # s
HASH = 1 << 6  # h
ZSET = 1 << 7  # z
EXPIRED = 1 << 8  # x
EVICTED = 1 << 9  # e
STREAM = 1 << 10  # t
KEY_MISS = 1 << 11  # m (not part of A)
MODULE = 1 << 13  # d
NEW = 1 << 14  # n (not part of A)
OVERWRITTEN = 1 << 15  # o (Redis 8.2; not part of A)
TYPE_CHANGED = 1 << 16  # c (Redis 8.2; not part of A)
ALL = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE  # A

_CLASSES = {"A": ALL, "g": GENERIC, "$": STRING, "l": LIST, "s": SET, "h": HASH, "z": ZSET,
            "x": EXPIRED, "e": EVICTED, "K": KEYSPACE, "E": KEYEVENT, "t": STREAM,
            "m": KEY_MISS, "d": MODULE, "n": NEW, "o": OVERWRITTEN, "c": TYPE_CHANGED}
# The order CONFIG GET lists the classes in (keyspaceEventsFlagsToString), after A or these.
_TYPE_ORDER = ("g", "$", "l", "s", "h", "z", "x", "e", "t", "d", "n", "o", "c")
_TRAILING_ORDER = ("K", "E", "m")

# (Redis 8.4 still lists the classes of 7.0 here, without o and c.)
INVALID_TEXT = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."


def parse_flags(text: str) -> int:
    """keyspaceEventsStringToFlags; ConfigError on a character that names no class."""
    flags = 0
    for char in text:
        bit = _CLASSES.get(char)
        if bit is None:
            raise ConfigError(INVALID_TEXT)
        flags |= bit
    return flags


def render_flags(flags: int) -> str:
    """keyspaceEventsFlagsToString: what CONFIG GET answers ("A" stands for its classes)."""
    if flags & ALL == ALL:
        text = "A"
    else:
        text = "".join(c for c in _TYPE_ORDER if flags & _CLASSES[c])
    return text + "".join(c for c in _TRAILING_ORDER if flags & _CLASSES[c])


def replaced_events(old: object, new: object) -> list[tuple[int, bytes]]:
    """What replacing the value `old` with `new` fires (Redis 8.2's setKey): overwritten,
    then type_changed when the types differ. Nothing when there was no old value."""
    if old is None:
        return []
    events = [(OVERWRITTEN, b"overwritten")]
    if type(old) is not type(new):
        events.append((TYPE_CHANGED, b"type_changed"))
    return events


def keyspace_channel(dbid: int, key: bytes) -> bytes:
    return b"__keyspace@%d__:%s" % (dbid, key)


def keyevent_channel(dbid: int, event: bytes) -> bytes:
    return b"__keyevent@%d__:%s" % (dbid, event)
