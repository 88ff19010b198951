"""Keyspace notifications (notify-keyspace-events): which events each command sends, in which
order, on which channels; the option's parsing and CONFIG GET form; expiry, eviction, misses.

The scenario of stream, generic and string commands runs on our server and on Debian's
redis-server (7.0) and must give the same messages in the same order. Redis 8.2's classes
`o` (overwritten) and `c` (type_changed) are checked on ours alone (the tests of them are the
ones that fail with `XSTREAMD_TEST_TARGET=redis`, which runs this file against 7.0).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis

from tests.helpers import ServerProcess
from tests.integration.server_fixtures import module_server
from tests.resp import ParsedConn

srv = module_server()

# A PING on a channel of its own marks the end of what a scenario produced.
END = b"__end__"


class Listener:
    """A connection subscribed to every keyspace and keyevent channel."""

    def __init__(self, server: ServerProcess, pattern: str = "__key*__:*") -> None:
        self.conn = ParsedConn(server)
        self.conn.send("PSUBSCRIBE", pattern, END)
        self.conn.read()
        self.conn.read()

    def messages(self, server: ServerProcess) -> list[tuple[bytes, bytes]]:
        """(channel, message) of every event up to now."""
        publisher = redis.Redis(host=server.host, port=server.port)
        publisher.publish(END, b"")
        publisher.close()
        out = []
        while True:
            message = self.conn.read()
            if message[2] == END:  # type: ignore[index]
                return out
            out.append((message[2], message[3]))  # type: ignore[index]

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def r(srv: ServerProcess) -> Iterator[redis.Redis]:
    client = redis.Redis(host=srv.host, port=srv.port)
    client.flushall()
    yield client
    client.config_set("notify-keyspace-events", "")
    client.config_set("maxmemory", "0")
    client.config_set("maxmemory-policy", "noeviction")
    client.close()


def events_of(server: ServerProcess, flags: str, commands: list[tuple[object, ...]],
              pause_before: tuple[str, ...] = ()) -> list[tuple[bytes, bytes]]:
    client = redis.Redis(host=server.host, port=server.port)
    client.flushall()
    client.config_set("notify-keyspace-events", flags)
    listener = Listener(server)
    try:
        dump = None
        for command in commands:
            if command[0] in pause_before:
                time.sleep(0.05)
            if command[0] == "RESTORE":
                command = (*command[:3], dump, *command[3:])
            try:
                reply = client.execute_command(*command)
            except redis.ResponseError:  # (a failing command sends no event)
                continue
            if command[0] == "DUMP":
                dump = reply
        return listener.messages(server)
    finally:
        client.config_set("notify-keyspace-events", "")
        listener.close()
        client.close()


SCRIPT: list[tuple[object, ...]] = [
    ("XADD", "s", "1-1", "f", "v"),
    ("XADD", "s", "MAXLEN", "1", "2-1", "f", "v"),  # xadd, then xtrim
    ("XADD", "s", "MAXLEN", "5", "2-2", "f", "v"),  # nothing trimmed: no xtrim
    ("XTRIM", "s", "MAXLEN", "0"),
    ("XTRIM", "s", "MAXLEN", "0"),  # nothing left to trim: no event
    ("XADD", "s", "3-1", "f", "v"),
    ("XADD", "s", "3-2", "f", "v"),
    ("XDEL", "s", "3-1", "9-9"),
    ("XDEL", "s", "9-9"),
    ("XGROUP", "CREATE", "s", "g", "0"),
    ("XGROUP", "CREATE", "t", "g", "$", "MKSTREAM"),  # new, then xgroup-create
    ("XGROUP", "CREATECONSUMER", "s", "g", "c"),
    ("XGROUP", "CREATECONSUMER", "s", "g", "c"),  # exists: no event
    ("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", ">"),  # creates c2
    ("XCLAIM", "s", "g", "c3", "0", "3-2"),  # creates c3
    ("XACK", "s", "g", "3-2"),  # no event
    ("XGROUP", "DELCONSUMER", "s", "g", "c2"),
    ("XGROUP", "DELCONSUMER", "s", "g", "nobody"),
    ("XGROUP", "SETID", "s", "g", "0"),
    ("XGROUP", "DESTROY", "s", "g"),
    ("XGROUP", "DESTROY", "s", "g"),
    ("XSETID", "s", "5-5"),
    ("XRANGE", "nokey", "-", "+"), ("XLEN", "nokey"), ("GET", "nokey"),  # keymiss
    ("EXISTS", "nokey"), ("TYPE", "nokey"), ("TTL", "nokey"), ("TOUCH", "nokey"),
    ("OBJECT", "ENCODING", "nokey"),  # (a lookup that sends no keymiss)
    ("XACK", "nokey", "g", "1-1"), ("XPENDING", "nokey", "g"),  # (keymiss, then NOGROUP)
    ("XCLAIM", "nokey", "g", "c", "0", "1-1"), ("XAUTOCLAIM", "nokey", "g", "c", "0", "0"),
    ("XREAD", "STREAMS", "s", "nokey", "0", "0"),  # (XREAD looks a key up twice)
    ("SET", "k", "v"), ("SET", "k", "v2", "EX", "100"), ("PERSIST", "k"), ("PERSIST", "k"),
    ("EXPIRE", "k", "100"), ("RENAME", "k", "k2"), ("SET", "k3", "x"),
    ("RENAME", "k2", "k3"),  # onto an existing key: new, rename_from, rename_to
    ("RENAMENX", "k3", "s"),  # refused: no event
    ("MOVE", "k3", "1"), ("SELECT", "1"), ("MOVE", "k3", "0"), ("SELECT", "0"),
    ("COPY", "k3", "k4"), ("COPY", "k3", "k4", "REPLACE"), ("COPY", "nokey", "k5"),
    ("DUMP", "k4"), ("RESTORE", "r", "0"), ("RESTORE", "r", "0", "REPLACE"),
    ("DEL", "k4", "k3", "nokey"), ("UNLINK", "r"),
    ("SET", "e", "v", "PX", "1"), ("GET", "e"),  # (after a pause: expired, then keymiss)
    ("PEXPIRE", "s", "-1"),  # a time in the past deletes: del
    ("FLUSHDB",),  # no event
]


def test_events_match_redis(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    ours = events_of(srv, "KEAmn", SCRIPT, pause_before=("GET",))
    theirs = events_of(redis_ref, "KEAmn", SCRIPT, pause_before=("GET",))
    assert ours == theirs
    assert ours[:6] == [(b"__keyspace@0__:s", b"new"), (b"__keyevent@0__:new", b"s"),
                        (b"__keyspace@0__:s", b"xadd"), (b"__keyevent@0__:xadd", b"s"),
                        (b"__keyspace@0__:s", b"xadd"), (b"__keyevent@0__:xadd", b"s")]
    assert (b"__keyspace@0__:e", b"expired") in ours
    assert (b"__keyevent@1__:move_to", b"k3") in ours


@pytest.mark.parametrize("flags", ["Kt", "Et", "Kg", "KEx", "KE", "tg", "KEA"])
def test_classes_and_channels_match_redis(srv: ServerProcess, redis_ref: ServerProcess,
                                          flags: str) -> None:
    script = SCRIPT[:12] + [("DEL", "s"), ("SET", "x", "1", "PX", "1"), ("GET", "x")]
    ours = events_of(srv, flags, script, pause_before=("GET",))
    assert ours == events_of(redis_ref, flags, script, pause_before=("GET",))
    if "K" not in flags or "E" not in flags:
        prefix = b"__keyspace" if "K" in flags else b"__keyevent"
        assert all(channel.startswith(prefix) for channel, _ in ours)


def _flags_shown(client: redis.Redis) -> str:
    value = client.config_get("notify-keyspace-events")["notify-keyspace-events"]
    return value.decode() if isinstance(value, bytes) else value


@pytest.mark.parametrize("value", ["gKE", "$lshzxeKE", "KA", "EA", "KEAmn", "Ex", "AKE", "",
                                   "tEK", "gg", "K", "mKE"])
def test_config_get_gives_redis_form(r: redis.Redis, redis_ref: ServerProcess,
                                     value: str) -> None:
    ref = redis.Redis(host=redis_ref.host, port=redis_ref.port, decode_responses=True)
    try:
        r.config_set("notify-keyspace-events", value)
        ref.config_set("notify-keyspace-events", value)
        assert (_flags_shown(r) == _flags_shown(ref))
    finally:
        ref.config_set("notify-keyspace-events", "")
        ref.close()


def test_invalid_class_is_refused_as_redis_does(r: redis.Redis,
                                                redis_ref: ServerProcess) -> None:
    ref = redis.Redis(host=redis_ref.host, port=redis_ref.port)
    try:
        errors = []
        for client in (r, ref):
            client.config_set("notify-keyspace-events", "KE")
            with pytest.raises(redis.ResponseError) as exc:
                client.config_set("notify-keyspace-events", "KEq")
            errors.append(str(exc.value))
            assert _flags_shown(client) == "KE"
        assert errors[0] == errors[1]
        assert "Invalid event class character. Use 'Ag$lshzxeKEtmdn'." in errors[0]
    finally:
        ref.config_set("notify-keyspace-events", "")
        ref.close()


@pytest.mark.parametrize(("value", "shown"), [("o", "o"), ("c", "c"), ("oc", "oc"),
                                              ("KEoc", "ocKE"), ("KEAnoc", "AKE")])
def test_redis_8_classes(r: redis.Redis, value: str, shown: str) -> None:
    r.config_set("notify-keyspace-events", value)
    assert _flags_shown(r) == shown


def test_overwritten_and_type_changed(srv: ServerProcess, r: redis.Redis) -> None:
    """Redis 8.2's events for a write that replaces a value: SET before its own event;
    RENAME, COPY and RESTORE after theirs."""
    r.xadd("stream", {"f": "v"}, id="1-1")
    r.set("str", "a")
    script: list[tuple[object, ...]] = [
        ("SET", "str", "b"),  # overwritten, set
        ("SET", "stream", "x"),  # overwritten, type_changed, set
        ("SET", "fresh", "x"),  # new, set
        ("SET", "fresh", "y", "NX"),  # not written: nothing
        ("XADD", "other", "1-1", "f", "v"),
        ("RENAME", "other", "str"),  # new, rename_from, rename_to, overwritten, type_changed
        ("COPY", "fresh", "str", "REPLACE"),  # new, copy_to, overwritten, type_changed
        ("DUMP", "fresh"), ("RESTORE", "str", "0", "REPLACE"),  # new, restore, overwritten
    ]
    client = redis.Redis(host=srv.host, port=srv.port)
    client.config_set("notify-keyspace-events", "Kgt$noc")
    listener = Listener(srv)
    try:
        dump = None
        for command in script:
            if command[0] == "RESTORE":
                command = (*command[:3], dump, *command[3:])
            reply = client.execute_command(*command)
            if command[0] == "DUMP":
                dump = reply
        events = [(channel.split(b":", 1)[1], event)
                  for channel, event in listener.messages(srv)]
    finally:
        listener.close()
        client.close()
    assert events == [
        (b"str", b"overwritten"), (b"str", b"set"),
        (b"stream", b"overwritten"), (b"stream", b"type_changed"), (b"stream", b"set"),
        (b"fresh", b"new"), (b"fresh", b"set"),
        (b"other", b"new"), (b"other", b"xadd"),
        (b"str", b"new"), (b"other", b"rename_from"), (b"str", b"rename_to"),
        (b"str", b"overwritten"), (b"str", b"type_changed"),
        (b"str", b"new"), (b"str", b"copy_to"), (b"str", b"overwritten"),
        (b"str", b"type_changed"),
        (b"str", b"new"), (b"str", b"restore"), (b"str", b"overwritten"),
    ]


def test_active_expiry_sends_expired(srv: ServerProcess, r: redis.Redis) -> None:
    r.config_set("notify-keyspace-events", "Ex")
    listener = Listener(srv)
    try:
        r.set("soon", "v", px=20)
        r.xadd("s", {"f": "v"})
        r.pexpire("s", 20)
        deadline = time.monotonic() + 5
        while r.dbsize() and time.monotonic() < deadline:  # DBSIZE does not expire keys
            time.sleep(0.05)
        assert sorted(listener.messages(srv)) == [(b"__keyevent@0__:expired", b"s"),
                                                  (b"__keyevent@0__:expired", b"soon")]
    finally:
        listener.close()


def test_eviction_sends_evicted(srv: ServerProcess, r: redis.Redis) -> None:
    for i in range(5):
        r.xadd(f"s{i}", {"f": "v"})
    r.config_set("notify-keyspace-events", "Ee")
    listener = Listener(srv)
    try:
        r.config_set("maxmemory-policy", "allkeys-random")
        r.config_set("maxmemory", "1")  # (any server is over that: every key goes)
        with pytest.raises(redis.ResponseError, match="maxmemory"):
            r.set("k", "v")
        r.config_set("maxmemory", "0")
        assert sorted(listener.messages(srv)) == [
            (b"__keyevent@0__:evicted", f"s{i}".encode()) for i in range(5)]
    finally:
        listener.close()


def test_resp3_subscriber_gets_its_own_event_after_the_reply(srv: ServerProcess,
                                                             r: redis.Redis) -> None:
    r.config_set("notify-keyspace-events", "Et")
    conn = ParsedConn(srv)
    try:
        conn.call("HELLO", "3")
        conn.send("SUBSCRIBE", "__keyevent@0__:xadd")
        conn.read()
        assert conn.call("XADD", "s", "1-1", "f", "v") == b"1-1"
        assert conn.read() == [b"message", b"__keyevent@0__:xadd", b"s"]
        r.xadd("s", {"f": "v"}, id="2-1")  # another client's: straight away
        assert conn.read() == [b"message", b"__keyevent@0__:xadd", b"s"]
    finally:
        conn.close()


def test_no_events_by_default(srv: ServerProcess, r: redis.Redis) -> None:
    listener = Listener(srv)
    try:
        r.xadd("s", {"f": "v"})
        r.delete("s")
        assert listener.messages(srv) == []
    finally:
        listener.close()
