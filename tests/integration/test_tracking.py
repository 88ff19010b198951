"""Client-side caching: CLIENT TRACKING (default, BCAST, OPTIN / OPTOUT, NOLOOP, REDIRECT),
CLIENT CACHING, GETREDIR, TRACKINGINFO, the invalidations that writes, flushes, expiry,
eviction and tracking-table-max-keys send, what CLIENT LIST, INFO and RESET show of it, and
redis-py 8's client-side cache running on it.

Scenarios that compare bytes run on our server and on Debian's redis-server (7.0) alike:
tracking.c barely changed since, and the one step where 8.4 differs (a served blocked read
remembers its keys again, since 7.2) is marked. Client ids, which differ, are named in the
transcripts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import hiredis
import pytest
import redis
from redis.cache import CacheConfig

from tests.helpers import ServerProcess
from tests.integration.server_fixtures import module_server
from tests.resp import Conn, encode

srv = module_server("--enable-debug-command", "local")

Scenario = Callable[[ServerProcess], list[object]]
PONG = b"+PONG\r\n"


class Wire(Conn):
    """A connection that reads replies (and pushes) as exact bytes, or parsed."""

    def send(self, *args: str | bytes | int) -> None:
        self.sock.sendall(encode(*args))

    def raw(self, replies: int = 1) -> bytes:
        return b"".join(Conn.read(self) for _ in range(replies))

    def value(self, *args: str | bytes | int) -> object:
        self.send(*args)
        reader = hiredis.Reader()
        reader.feed(self.raw())
        return reader.gets()

    def pong(self) -> bytes:
        """PING's reply and whatever came before it: b"+PONG\\r\\n" when nothing was pushed."""
        self.send("PING")
        data = b""
        while not data.endswith(PONG):
            data += self.raw()
        return data

    def pipeline(self, *commands: tuple[str | bytes | int, ...]) -> bytes:
        """Send commands in one write (the server reads them at once: one before-sleep pass
        follows them all) and return their replies."""
        self.sock.sendall(b"".join(encode(*command) for command in commands))
        return self.raw(len(commands))

    def resp3(self) -> Wire:
        self.value("HELLO", "3")
        return self


def on_both(ours: ServerProcess, ref: ServerProcess, scenario: Scenario,
            redis_8_only: tuple[int, ...] = ()) -> list[object]:
    """Run scenario on each server: both must give the same transcript, except at the
    indexes of redis_8_only (where Redis 8 differs from Debian's 7.0)."""
    mine, theirs = scenario(ours), scenario(ref)
    assert len(mine) == len(theirs)
    for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        if i not in redis_8_only:
            assert a == b, f"step {i}"
    return mine


def client_id(conn: Wire) -> int:
    return conn.value("CLIENT", "ID")  # type: ignore[return-value]


def push(*keys: bytes) -> bytes:
    """A RESP3 invalidation of keys."""
    return b">2\r\n$10\r\ninvalidate\r\n" + encode(*keys)


def message(*keys: bytes) -> bytes:
    """The RESP2 form a redirect target in Pub/Sub mode gets."""
    return b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n" + encode(*keys)


@pytest.fixture
def conns(srv: ServerProcess) -> Iterator[Callable[[], Wire]]:
    """Connections to srv, closed after the test."""
    opened: list[Wire] = []

    def connect() -> Wire:
        opened.append(Wire(srv))
        return opened[-1]

    yield connect
    for conn in opened:
        conn.close()


def _scenario(body: Callable[[Callable[[], Wire]], list[object]]) -> Scenario:
    """A scenario that opens what connections it needs (closed at its end) on a flushed
    server."""
    def run(server: ServerProcess) -> list[object]:
        opened: list[Wire] = []

        def connect() -> Wire:
            opened.append(Wire(server))
            return opened[-1]

        try:
            connect().call("FLUSHALL")
            return body(connect)
        finally:
            for conn in opened:
                conn.close()
            _wait_no_tracking_clients(server)

    return run


def _wait_no_tracking_clients(server: ServerProcess) -> None:
    """The server has seen the scenario's connections go (INFO tracking_clients is 0)."""
    probe = Wire(server)
    try:
        for _ in range(100):
            info = probe.value("INFO", "clients")
            if b"tracking_clients:0\r\n" in info:  # type: ignore[operator]
                return
            time.sleep(0.02)
    finally:
        probe.close()


# -- default mode -------------------------------------------------------------------------------

@_scenario
def _default_mode(connect: Callable[[], Wire]) -> list[object]:
    t, w = connect().resp3(), connect()
    out: list[object] = [t.call("CLIENT", "TRACKING", "ON")]
    w.call("XADD", "s", "1-1", "f", "v")
    w.call("SET", "k", "v")
    for read in (("XLEN", "s"), ("XRANGE", "s", "-", "+"), ("GET", "k"), ("GET", "missing"),
                 ("STRLEN", "k"), ("EXISTS", "k", "s")):
        out.append(t.call(*read))
    out.append(w.call("XADD", "s", "2-1", "f", "v"))
    out.append(t.raw())  # s, read three times, is invalidated once
    out.append(w.call("SET", "missing", "x"))  # a key read while absent is tracked too
    out.append(t.raw())
    w.call("XADD", "s", "3-1", "f", "v")  # forgotten after its invalidation: no more
    w.call("DEL", "k", "missing")  # k is still tracked; missing was forgotten
    out.append(t.raw())
    out.append(t.pong())
    # Its own write: the invalidation follows the command's reply.
    t.call("XREVRANGE", "s", "+", "-", "COUNT", "1")
    t.send("XADD", "s", "4-1", "f", "v")
    out.append(t.raw(2))
    # A read that fails remembers its key all the same.
    w.call("SET", "k", "v")
    out.append(t.call("XLEN", "k"))
    w.call("DEL", "k")
    out.append(t.raw())
    # XREAD's keys come after STREAMS; TYPE and TTL read too.
    w.pipeline(("SET", "t1", "v"), ("SET", "t2", "v"), ("SET", "k", "v"))
    out.append(t.call("XREAD", "COUNT", "1", "STREAMS", "s", "k", "0", "0"))
    t.call("TYPE", "t1")
    t.call("TTL", "t2")
    out.append(w.call("DEL", "t2", "s", "k", "t1", "nokey"))
    out.append(t.raw(4))  # in the order of their deletion
    out.append(t.pong())
    return out


def test_default_mode_invalidates_what_was_read(srv: ServerProcess,
                                                 redis_ref: ServerProcess) -> None:
    out = on_both(srv, redis_ref, _default_mode)
    assert out[0] == b"+OK\r\n"
    assert out[8] == push(b"s")
    assert out[10] == push(b"missing")
    assert out[11] == push(b"k")
    assert out[12] == PONG
    assert out[13] == b"$3\r\n4-1\r\n" + push(b"s")
    assert out[14].startswith(b"-WRONGTYPE")  # type: ignore[union-attr]
    assert out[15] == push(b"k")
    assert out[16].startswith(b"-WRONGTYPE")  # type: ignore[union-attr]
    assert out[18] == push(b"t2") + push(b"s") + push(b"k") + push(b"t1")
    assert out[19] == PONG


@_scenario
def _noloop_and_transactions(connect: Callable[[], Wire]) -> list[object]:
    t, w = connect().resp3(), connect()
    out: list[object] = [t.call("CLIENT", "TRACKING", "ON", "NOLOOP")]
    t.call("GET", "a")
    t.call("GET", "b")
    out.append(t.call("SET", "a", "1"))  # NOLOOP: not told of its own change
    out.append(t.pong())
    w.call("SET", "b", "1")  # but of others'
    out.append(t.raw())
    out.append(t.call("CLIENT", "TRACKING", "ON"))  # the same mode again, without NOLOOP
    t.call("GET", "a")
    t.call("GET", "b")
    for command in (("MULTI",), ("SET", "a", "2"), ("GET", "b"), ("SET", "b", "2"),
                    ("EXEC",)):
        t.send(*command)
    out.append(t.raw(7))  # the transaction's replies, then the invalidations
    t.call("GET", "a")
    for command in (("MULTI",), ("FLUSHDB",), ("EXEC",)):
        t.send(*command)
    out.append(t.raw(4))  # EXEC's reply, then the null: every key
    return out


def test_noloop_and_invalidations_after_transactions(srv: ServerProcess,
                                                     redis_ref: ServerProcess) -> None:
    out = on_both(srv, redis_ref, _noloop_and_transactions)
    assert out[2] == PONG
    assert out[3] == push(b"b")
    assert out[5] == (b"+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n+OK\r\n$1\r\n1\r\n"
                      b"+OK\r\n" + push(b"a") + push(b"b"))
    assert out[6] == b"+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n>2\r\n$10\r\ninvalidate\r\n_\r\n"


@_scenario
def _blocked_read(connect: Callable[[], Wire]) -> list[object]:
    t, w = connect().resp3(), connect()
    t.call("CLIENT", "TRACKING", "ON")
    t.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")  # remembered as it blocks
    time.sleep(0.1)
    w.call("XADD", "s", "1-1", "f", "v")
    out: list[object] = [t.raw(2)]  # the invalidation, then the served read
    w.call("XADD", "s", "2-1", "f", "v")
    out.append(t.pong())
    return out


def test_a_blocked_read_is_tracked(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    """Since Redis 7.2 a served blocked command runs again through call(), which remembers
    its keys again; 7.0 served XREAD without it (step 1)."""
    out = on_both(srv, redis_ref, _blocked_read, redis_8_only=(1,))
    assert out[0] == push(b"s") + (b"%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n"
                                   b"*2\r\n$1\r\nf\r\n$1\r\nv\r\n")
    assert out[1] == push(b"s") + PONG


# -- redirection --------------------------------------------------------------------------------

@_scenario
def _redirect_resp2(connect: Callable[[], Wire]) -> list[object]:
    sub, w = connect(), connect()
    sub_id = client_id(sub)
    sub.send("SUBSCRIBE", "__redis__:invalidate")
    sub.raw()
    t = connect()
    out: list[object] = [t.call("CLIENT", "TRACKING", "ON", "REDIRECT", sub_id)]
    t.call("GET", "k")
    w.call("SET", "k", "1")
    out.append(sub.raw())
    # A target in Pub/Sub mode gets them on that channel whatever it subscribed to.
    other = connect()
    other_id = client_id(other)
    other.send("SUBSCRIBE", "elsewhere")
    other.raw()
    t2 = connect()
    t2.call("CLIENT", "TRACKING", "ON", "REDIRECT", other_id)
    t2.call("XLEN", "s")
    # Not in Pub/Sub mode, a RESP2 target gets nothing; nor does a RESP2 client tracking
    # for itself.
    plain = connect()
    t3 = connect()
    out.append(t3.call("CLIENT", "TRACKING", "ON", "REDIRECT", client_id(plain)))
    t3.call("XLEN", "s")
    t4 = connect()
    out.append(t4.call("CLIENT", "TRACKING", "ON"))
    t4.call("XLEN", "s")
    w.call("XADD", "s", "1-1", "f", "v")
    out.append(other.raw())
    out.append(plain.pong())
    out.append(t4.pong())
    # A flush: a null for every tracking client, in the tracking client's own protocol (a
    # RESP3 one redirecting to a RESP2 target sends RESP3's null: Redis does).
    t5 = connect().resp3()
    t5.call("CLIENT", "TRACKING", "ON", "REDIRECT", sub_id)
    w.call("FLUSHALL")
    out.append(sub.raw(2))  # for t, then for t5
    out.append(other.raw())
    out.append(plain.pong())
    return out


def test_redirect_to_a_resp2_subscriber(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    out = on_both(srv, redis_ref, _redirect_resp2)
    assert out[1] == message(b"k")
    assert out[4] == message(b"s")
    assert out[5] == PONG and out[6] == PONG
    head = b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"
    assert out[7] == head + b"$-1\r\n" + head + b"_\r\n"
    assert out[8] == head + b"$-1\r\n"


def _with_ids(data: object, ids: dict[int, bytes]) -> object:
    """data with each client id (as RESP or CLIENT LIST writes it) named instead."""
    if isinstance(data, bytes):
        for cid, name in ids.items():
            data = data.replace(b":%d\r\n" % cid, b":" + name + b"\r\n")
            data = data.replace(b"redir=%d " % cid, b"redir=" + name + b" ")
    return data


@_scenario
def _redirect_resp3_and_broken(connect: Callable[[], Wire]) -> list[object]:
    target, w = connect().resp3(), connect()
    target_id = client_id(target)
    ids = {target_id: b"<target>"}
    t = connect().resp3()
    t.call("CLIENT", "TRACKING", "ON", "REDIRECT", target_id)
    out: list[object] = [_with_ids(t.call("CLIENT", "GETREDIR"), ids)]
    t.call("GET", "k")
    w.call("SET", "k", "1")
    out.append(target.raw())
    out.append(t.pong())  # (nothing for t itself)
    t2 = connect()  # RESP2, redirecting too
    t2.call("CLIENT", "TRACKING", "ON", "REDIRECT", target_id)
    t2.call("GET", "k")
    t.call("GET", "k")
    target.close()
    time.sleep(0.2)
    w.call("SET", "k", "2")
    out.append(_with_ids(t.raw(), ids))  # the redirect is broken: t is told, once per message
    out.append(t2.pong())  # (a RESP2 client cannot be told)
    out.append(_with_ids(t.call("CLIENT", "TRACKINGINFO"), ids))
    # Broken for t2 too, though it cannot be told.
    out.append(_with_ids(t2.call("CLIENT", "TRACKINGINFO"), ids))
    w.call("SET", "other", "1")
    out.append(t.pong())  # nothing more while nothing it read changes
    listing = _with_ids(w.value("CLIENT", "LIST", "ID", client_id(t)), ids)
    out.append([f for f in listing.split() if f.startswith((b"flags=", b"redir="))])  # type: ignore[union-attr]
    return out


def test_redirect_to_resp3_and_a_broken_redirect(srv: ServerProcess,
                                                 redis_ref: ServerProcess) -> None:
    out = on_both(srv, redis_ref, _redirect_resp3_and_broken)
    assert out[0] == b":<target>\r\n"
    assert out[1] == push(b"k")
    assert out[3] == b">2\r\n$21\r\ntracking-redir-broken\r\n:<target>\r\n"
    assert out[5] == (b"%3\r\n$5\r\nflags\r\n~2\r\n$2\r\non\r\n$15\r\nbroken_redirect\r\n"
                      b"$8\r\nredirect\r\n:<target>\r\n$8\r\nprefixes\r\n*0\r\n")
    assert out[8] == [b"flags=tR", b"redir=<target>"]


# -- BCAST --------------------------------------------------------------------------------------

@_scenario
def _bcast(connect: Callable[[], Wire]) -> list[object]:
    t, w = connect().resp3(), connect()
    out: list[object] = [t.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "b:", "PREFIX",
                                "a:")]
    # One read's writes: collected per prefix, sent once per prefix, keys sorted.
    w.pipeline(("SET", "a:2", "1"), ("SET", "c:1", "1"), ("SET", "a:1", "1"),
               ("XADD", "b:1", "1-1", "f", "v"), ("SET", "a:2", "2"))
    out.append(t.raw(2))
    w.pipeline(("MULTI",), ("SET", "b:2", "1"), ("DEL", "a:1"), ("EXEC",))
    out.append(t.raw(2))
    # Its own changes too, unless NOLOOP; nothing needs to be read first.
    out.append(t.call("SET", "a:3", "1"))
    out.append(t.raw())
    out.append(t.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "z", "NOLOOP"))
    out.append(t.call("SET", "a:4", "1"))
    out.append(t.pong())
    w.call("SET", "zebra", "1")
    out.append(t.raw())
    out.append(t.call("CLIENT", "TRACKINGINFO"))
    # The empty prefix: every key, and a redirect.
    sub = connect()
    sub_id = client_id(sub)
    sub.send("SUBSCRIBE", "__redis__:invalidate")
    sub.raw()
    t2 = connect()
    t2.call("CLIENT", "TRACKING", "ON", "BCAST", "REDIRECT", sub_id)
    out.append(t2.call("CLIENT", "TRACKINGINFO")[-10:])  # type: ignore[index]
    w.call("SET", "anything", "1")
    out.append(sub.raw())
    w.call("FLUSHALL")
    out.append(t.raw())  # BCAST clients get the null of a flush too
    out.append(sub.raw())
    return out


def test_bcast_prefixes(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    out = on_both(srv, redis_ref, _bcast)
    assert out[1] == push(b"a:1", b"a:2") + push(b"b:1")
    assert out[2] == push(b"a:1") + push(b"b:2")
    assert out[4] == push(b"a:3")
    assert out[7] == PONG
    assert out[8] == push(b"zebra")
    assert out[10] == b"*1\r\n$0\r\n\r\n"  # the empty prefix
    assert out[11] == message(b"anything")


@_scenario
def _bcast_expiry(connect: Callable[[], Wire]) -> list[object]:
    t, w = connect().resp3(), connect()
    t.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "e")
    w.call("SET", "e1", "v", "PX", "100")
    out: list[object] = [t.raw()]  # the SET
    out.append(t.raw())  # the active expiry cycle's deletion
    return out


def test_bcast_hears_of_expired_keys(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    assert on_both(srv, redis_ref, _bcast_expiry) == [push(b"e1"), push(b"e1")]


# -- OPTIN / OPTOUT -----------------------------------------------------------------------------

@_scenario
def _optin_optout(connect: Callable[[], Wire]) -> list[object]:
    t, w = connect().resp3(), connect()
    out: list[object] = [t.call("CLIENT", "TRACKING", "ON", "OPTIN")]
    t.call("GET", "k1")  # not remembered
    t.call("CLIENT", "CACHING", "yes")
    out.append(t.call("CLIENT", "TRACKINGINFO"))
    t.call("GET", "k2")  # remembered
    t.call("GET", "k3")  # not: CACHING applies to one command
    t.call("CLIENT", "CACHING", "yes")
    t.call("CLIENT", "ID")  # CLIENT subcommands leave it in force
    t.call("GET", "k4")
    t.call("CLIENT", "CACHING", "yes")
    for command in (("MULTI",), ("GET", "k5"), ("GET", "k6"), ("EXEC",)):
        t.send(*command)
    t.raw(4)  # a transaction is one request: both keys
    t.call("GET", "k7")
    for i in range(1, 8):
        w.send("SET", f"k{i}", "v")
    w.raw(7)
    out.append(t.raw(4))
    out.append(t.pong())
    out.append(t.call("CLIENT", "TRACKING", "OFF"))
    out.append(t.call("CLIENT", "TRACKING", "ON", "OPTOUT"))
    t.call("GET", "j1")  # remembered
    t.call("CLIENT", "CACHING", "no")
    out.append(t.call("CLIENT", "TRACKINGINFO"))
    t.call("GET", "j2")  # not
    t.call("GET", "j3")
    for i in range(1, 4):
        w.send("SET", f"j{i}", "v")
    w.raw(3)
    out.append(t.raw(2))
    out.append(t.pong())
    return out


def test_optin_and_optout(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    out = on_both(srv, redis_ref, _optin_optout)
    assert b"caching-yes" in out[1]  # type: ignore[operator]
    assert out[2] == push(b"k2") + push(b"k4") + push(b"k5") + push(b"k6")
    assert out[3] == PONG
    assert b"caching-no" in out[6]  # type: ignore[operator]
    assert out[7] == push(b"j1") + push(b"j3")
    assert out[8] == PONG


# -- replies and errors -------------------------------------------------------------------------

@_scenario
def _errors(connect: Callable[[], Wire]) -> list[object]:
    c, gone = connect(), connect()
    gone_id = client_id(gone)
    gone.close()
    time.sleep(0.1)
    out: list[object] = []
    for args in (
        ("TRACKING", "ON", "PREFIX", "a"),
        ("TRACKING", "ON", "BCAST", "OPTIN"),
        ("TRACKING", "ON", "OPTIN", "OPTOUT"),
        ("TRACKING", "ON", "REDIRECT", gone_id),
        ("TRACKING", "ON", "REDIRECT", "0"),
        ("TRACKING", "ON", "REDIRECT", "nan"),
        ("TRACKING", "ON", "REDIRECT", client_id(c), "REDIRECT", client_id(c)),
        ("TRACKING", "ON", "REDIRECT"),
        ("TRACKING", "ON", "PREFIX"),
        ("TRACKING", "ON", "NOPE"),
        ("TRACKING", "MAYBE"),
        ("TRACKING", "OFF", "REDIRECT", gone_id),  # OFF's options are checked too
        ("TRACKING",),
        ("TRACKING", "ON", "BCAST", "PREFIX", "foobar", "PREFIX", "foo"),
        ("TRACKING", "ON", "BCAST", "PREFIX", "foo", "PREFIX", "foobar"),
        ("CACHING", "yes"),
        ("CACHING",),
        ("GETREDIR", "x"),
        ("TRACKINGINFO", "x"),
        ("GETREDIR",),
        ("TRACKINGINFO",),
        ("TRACKING", "ON", "OPTIN"),
        ("CACHING", "no"),
        ("CACHING", "maybe"),
        ("TRACKING", "ON", "OPTOUT"),
        ("TRACKING", "ON", "BCAST"),
        ("CACHING", "yes"),
        ("TRACKING", "OFF"),
        ("TRACKING", "ON", "BCAST", "PREFIX", "foo", "PREFIX", "bar"),
        ("TRACKING", "ON", "BCAST", "PREFIX", "fo"),
        ("TRACKING", "ON", "BCAST", "PREFIX", "barb"),
        ("TRACKING", "ON", "BCAST", "PREFIX", "baz", "PREFIX", "q"),  # adds to the others
        ("TRACKING", "ON"),
        ("TRACKINGINFO",),
        ("TRACKING", "ON", "BCAST", "noloop"),  # no PREFIX: the empty one is added
        ("TRACKINGINFO",),
        ("GETREDIR",),
    ):
        out.append(c.call("CLIENT", *args))
    return out


def test_replies_and_error_texts(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    out = on_both(srv, redis_ref, _errors)
    assert out[0] == b"-ERR PREFIX option requires BCAST mode to be enabled\r\n"
    assert out[3] == b"-ERR The client ID you want redirect to does not exist\r\n"
    assert out[6] == b"-ERR A client can only redirect to a single other client\r\n"
    assert out[13] == (b"-ERR Prefix 'foobar' overlaps with another provided prefix 'foo'. "
                       b"Prefixes for a single client must not overlap.\r\n")
    assert out[15] == (b"-ERR CLIENT CACHING can be called only when the client is in "
                       b"tracking mode with OPTIN or OPTOUT mode enabled\r\n")
    assert out[19] == b":-1\r\n"
    assert out[20] == (b"*6\r\n$5\r\nflags\r\n*1\r\n$3\r\noff\r\n$8\r\nredirect\r\n:-1\r\n"
                       b"$8\r\nprefixes\r\n*0\r\n")
    assert out[24].startswith(b"-ERR You can't switch OPTIN/OPTOUT mode")  # type: ignore[union-attr]
    assert out[25].startswith(b"-ERR You can't switch BCAST mode on/off")  # type: ignore[union-attr]
    assert out[29] == (b"-ERR Prefix 'fo' overlaps with an existing prefix 'foo'. Prefixes "
                       b"for a single client must not overlap.\r\n")
    assert out[33] == (b"*6\r\n$5\r\nflags\r\n*2\r\n$2\r\non\r\n$5\r\nbcast\r\n$8\r\nredirect"
                       b"\r\n:0\r\n$8\r\nprefixes\r\n*4\r\n$3\r\nbar\r\n$3\r\nbaz\r\n$3\r\nfoo"
                       b"\r\n$1\r\nq\r\n")


def test_overlapping_new_prefixes_after_the_first_answer_one_error(srv: ServerProcess) -> None:
    """Redis answers this error and then OK, enabling tracking (checkPrefixCollisionsOrReply
    returns the index of the colliding prefix, taken as success past the first): two
    replies to one command. Here the error is the only reply and tracking stays off."""
    c = Wire(srv)
    try:
        c.send("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "b", "PREFIX",
               "bc")
        assert c.raw() == (b"-ERR Prefix 'b' overlaps with another provided prefix 'bc'. "
                           b"Prefixes for a single client must not overlap.\r\n")
        assert c.pong() == PONG
        assert c.call("CLIENT", "GETREDIR") == b":-1\r\n"
    finally:
        c.close()


# -- introspection ------------------------------------------------------------------------------

def _info(conn: Wire, field: str) -> int:
    text = conn.value("INFO", "everything").decode()  # type: ignore[union-attr]
    return int(text.split(f"\r\n{field}:")[1].split("\r\n")[0])


def test_client_list_info_and_reset(srv: ServerProcess, conns: Callable[[], Wire]) -> None:
    _wait_no_tracking_clients(srv)
    w = conns()
    w.call("FLUSHALL")
    sub = conns()
    sub_id = client_id(sub)
    t, b = conns(), conns()
    t.call("CLIENT", "TRACKING", "ON", "REDIRECT", sub_id)
    b.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x", "PREFIX", "y")
    t.call("GET", "k1")
    t.call("XLEN", "k2")
    t.call("EXISTS", "k1", "k3")
    counts = {f: _info(w, f) for f in ("tracking_clients", "tracking_total_keys",
                                        "tracking_total_items", "tracking_total_prefixes")}
    assert counts == {"tracking_clients": 2, "tracking_total_keys": 3,
                      "tracking_total_items": 3, "tracking_total_prefixes": 2}
    listing = w.value("CLIENT", "LIST").decode()  # type: ignore[union-attr]
    lines = {int(line.split()[0][3:]): line for line in listing.splitlines()}
    assert " flags=t db=0 " in lines[client_id(t)]
    assert f" redir={sub_id} " in lines[client_id(t)]
    assert " flags=tB " in lines[client_id(b)] and " redir=0 " in lines[client_id(b)]
    assert " flags=N " in lines[sub_id] and " redir=-1 " in lines[sub_id]
    # RESET turns tracking off (its keys stay in the table until they change).
    assert t.call("RESET") == b"+RESET\r\n"
    info = t.call("CLIENT", "INFO")
    assert b" flags=N " in info and b" redir=-1 " in info
    assert _info(w, "tracking_clients") == 1
    assert _info(w, "tracking_total_items") == 3
    w.call("SET", "k1", "v")
    assert _info(w, "tracking_total_keys") == 2
    b.close()
    time.sleep(0.1)
    assert _info(w, "tracking_total_prefixes") == 0
    w.call("FLUSHDB")  # (any database: the table holds no database)
    assert _info(w, "tracking_total_keys") == 0 and _info(w, "tracking_total_items") == 0


def test_client_help_lists_the_tracking_subcommands(srv: ServerProcess) -> None:
    c = Wire(srv)
    try:
        lines = c.value("CLIENT", "HELP")
    finally:
        c.close()
    assert lines[1:5] == [  # type: ignore[index]
        b"CACHING (YES|NO)",
        b"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
        b"GETREDIR",
        b"    Return the client ID we are redirecting to when tracking is enabled.",
    ]
    at = lines.index(b"TRACKINGINFO")  # type: ignore[union-attr]
    assert lines[at - 3:at + 4] == [  # type: ignore[index]
        b"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
        b"         [OPTIN] [OPTOUT] [NOLOOP]",
        b"    Control server assisted client side caching.",
        b"TRACKINGINFO",
        b"    Report tracking status for the current connection.",
        b"NO-EVICT (ON|OFF)",
        b"    Protect current client connection from eviction.",
    ]


# -- expiry, eviction, the table's limit ---------------------------------------------------------

def test_lazy_expiry_invalidates_after_the_reply(srv: ServerProcess,
                                                 conns: Callable[[], Wire]) -> None:
    """The key expires while the tracking client's own read runs: its invalidation follows the
    reply (the Tcl suite's "not interleaved with multiple keys response", with GET)."""
    t, w = conns().resp3(), conns()
    w.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        t.call("CLIENT", "TRACKING", "ON")
        w.call("SET", "y", "1", "PX", "50")
        t.call("GET", "y")
        time.sleep(0.1)
        t.send("GET", "y")
        assert t.raw(2) == b"_\r\n" + push(b"y")
        w.call("SET", "y", "2")  # the read remembered it again
        assert t.raw() == push(b"y")
    finally:
        w.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")


@_scenario
def _eviction(connect: Callable[[], Wire]) -> list[object]:
    t, w = connect().resp3(), connect()
    t.call("CLIENT", "TRACKING", "ON")
    w.call("SET", "volatile", "x", "EX", "1000")
    t.call("GET", "volatile")
    w.call("CONFIG", "SET", "maxmemory-policy", "volatile-random")
    try:
        w.call("CONFIG", "SET", "maxmemory", "1")
        t.send("SET", "big", "x")
        # Eviction frees memory before the command runs: the invalidation comes first.
        return [t.raw(2), w.call("EXISTS", "volatile")]
    finally:
        w.call("CONFIG", "SET", "maxmemory", "0")
        w.call("CONFIG", "SET", "maxmemory-policy", "noeviction")


def test_evicted_keys_are_invalidated_before_the_reply(srv: ServerProcess,
                                                       redis_ref: ServerProcess) -> None:
    out = on_both(srv, redis_ref, _eviction)
    assert out[0] == push(b"volatile") + (b"-OOM command not allowed when used memory > "
                                          b"'maxmemory'.\r\n")
    assert out[1] == b":0\r\n"


@_scenario
def _table_limit(connect: Callable[[], Wire]) -> list[object]:
    t, w = connect().resp3(), connect()
    t.call("CLIENT", "TRACKING", "ON")
    for i in range(10):
        t.call("GET", f"key{i}")
    try:
        w.call("CONFIG", "SET", "tracking-table-max-keys", "4")
        keys = [t.raw() for _ in range(6)]  # the cron forgets six, invalidating them
        out: list[object] = [len(set(keys)), all(k.startswith(push()[:-4]) for k in keys)]
        out.append(t.pong())
        out.append(_info(w, "tracking_total_keys"))
        return out
    finally:
        w.call("CONFIG", "SET", "tracking-table-max-keys", "1000000")


def test_tracking_table_max_keys(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    assert on_both(srv, redis_ref, _table_limit) == [6, True, PONG, 4]


@_scenario
def _table_limit_option(connect: Callable[[], Wire]) -> list[object]:
    c = connect()
    out: list[object] = [c.call("CONFIG", "GET", "tracking-table-max-keys")]
    for value in ("-1", "1k", "9223372036854775808", "0", "1000000"):
        out.append(c.call("CONFIG", "SET", "tracking-table-max-keys", value))
    return out


def test_tracking_table_max_keys_option(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    out = on_both(srv, redis_ref, _table_limit_option)
    assert out[0] == b"*2\r\n$23\r\ntracking-table-max-keys\r\n$7\r\n1000000\r\n"
    assert out[1] == (b"-ERR CONFIG SET failed (possibly related to argument "
                      b"'tracking-table-max-keys') - argument must be between 0 and "
                      b"9223372036854775807 inclusive\r\n")


# -- redis-py's client-side cache -----------------------------------------------------------------

def test_redis_py_client_side_cache(srv: ServerProcess) -> None:
    """redis-py 8 with protocol=3 and a CacheConfig caches reads (XLEN, XRANGE, GET ...)
    and drops them on our invalidations (it refuses servers older than 7.4: ours only)."""
    cached = redis.Redis(host=srv.host, port=srv.port, protocol=3, cache_config=CacheConfig())
    other = redis.Redis(host=srv.host, port=srv.port)
    try:
        other.flushall()
        other.xadd("orders", {"n": "1"}, id="1-1")
        other.set("greeting", "hello")
        assert cached.xlen("orders") == 1
        assert cached.xrange("orders") == [(b"1-1", {b"n": b"1"})]
        assert cached.get("greeting") == b"hello"
        cache = cached.get_cache()
        assert cache is not None and cache.size == 3
        # Served from the cache: the server sees no new command.
        calls = other.info("commandstats")["cmdstat_xlen"]["calls"]
        assert cached.xlen("orders") == 1
        assert other.info("commandstats")["cmdstat_xlen"]["calls"] == calls
        other.xadd("orders", {"n": "2"}, id="2-1")
        other.set("greeting", "bye")
        assert cached.xlen("orders") == 2
        assert cached.xrange("orders", count=1) == [(b"1-1", {b"n": b"1"})]
        assert [i for i, _ in cached.xrevrange("orders")] == [b"2-1", b"1-1"]
        assert cached.get("greeting") == b"bye"
        other.flushdb()  # a flush empties the whole cache
        assert cached.xlen("orders") == 0
        assert cached.get("greeting") is None
        assert [c["flags"] for c in other.client_list() if c["redir"] == "0"] == ["t"]
    finally:
        cached.close()
        other.close()
