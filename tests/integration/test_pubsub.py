"""Pub/Sub: SUBSCRIBE / PSUBSCRIBE / SSUBSCRIBE and their UNSUBSCRIBEs, PUBLISH, SPUBLISH,
PUBSUB introspection, the RESP2 subscribed context, RESP3 pushes, and what CLIENT LIST, INFO,
CLIENT KILL, RESET, CLIENT REPLY and the output limits make of subscribers.

Scenarios that compare bytes run on our server and on Debian's redis-server (7.0) alike.
With `XSTREAMD_TEST_TARGET=redis` all but three tests pass against 7.0: the self-delivery order
(changed in 7.2), INFO's pubsub_clients (7.4) and client_output_buffer_limit_disconnections
(7.2).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator

import hiredis
import pytest
import redis

from tests.helpers import ServerProcess
from tests.integration.server_fixtures import module_server
from tests.resp import Conn, ParsedConn, encode

srv = module_server()

Scenario = Callable[[ServerProcess], list[object]]


def on_both(ours: ServerProcess, ref: ServerProcess, scenario: Scenario,
            redis_8_only: tuple[int, ...] = ()) -> tuple[list[object], list[object]]:
    """Run scenario on each server; they must give the same transcript, except at the indexes
    of redis_8_only (where Redis 8 differs from Debian's 7.0). Returns both transcripts."""
    mine, theirs = scenario(ours), scenario(ref)
    assert len(mine) == len(theirs)
    for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        if i not in redis_8_only:
            assert a == b, f"step {i}"
    return mine, theirs


class Wire(Conn):
    """A connection that reads replies as exact bytes (raw_bytes) or parsed (read, call)."""

    def send(self, *args: str | bytes | int) -> None:
        self.sock.sendall(encode(*args))

    def read(self) -> object:  # type: ignore[override]
        reader = hiredis.Reader()
        reader.feed(super().read())
        return reader.gets()

    def call(self, *args: str | bytes | int) -> object:  # type: ignore[override]
        self.send(*args)
        return self.read()


def raw_bytes(conn: Wire, replies: int) -> bytes:
    """The exact bytes of the next `replies` replies on conn."""
    return b"".join(Conn.read(conn) for _ in range(replies))


@pytest.fixture
def r(srv: ServerProcess) -> Iterator[redis.Redis]:
    client = redis.Redis(host=srv.host, port=srv.port)
    yield client
    client.close()


def _subscribe_publish(server: ServerProcess) -> list[object]:
    sub, pub = Wire(server), Wire(server)
    try:
        out: list[object] = []
        sub.send("SUBSCRIBE", "news", "sport", "news")
        out.append(raw_bytes(sub, 3))
        sub.send("PSUBSCRIBE", "n*", "s?ort")
        out.append(raw_bytes(sub, 2))
        out.append(pub.call("PUBLISH", "news", "hello"))
        out.append(raw_bytes(sub, 2))  # the channel's message, then the pattern's
        out.append(pub.call("PUBLISH", "sport", ""))
        out.append(raw_bytes(sub, 2))
        out.append(pub.call("PUBLISH", "nobody", "x"))  # a pattern subscriber only
        out.append(raw_bytes(sub, 1))
        out.append(pub.call("PUBLISH", "elsewhere", "x"))
        sub.send("UNSUBSCRIBE", "news", "never")
        out.append(raw_bytes(sub, 2))
        sub.send("PUNSUBSCRIBE")
        out.append(sorted([sub.read(), sub.read()]))  # (Redis's order is its dict's)
        sub.send("UNSUBSCRIBE")
        out.append(raw_bytes(sub, 1))
        sub.send("UNSUBSCRIBE")  # subscribed to nothing: one reply, with a null channel
        out.append(raw_bytes(sub, 1))
        sub.send("PUNSUBSCRIBE")
        out.append(raw_bytes(sub, 1))
        out.append(sub.call("XLEN", "nokey"))  # out of Pub/Sub mode: any command again
        return out
    finally:
        sub.close()
        pub.close()


def test_subscribe_publish_unsubscribe_bytes(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    transcript, _ = on_both(srv, redis_ref, _subscribe_publish)
    assert transcript[0] == (b"*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n"
                             b"*3\r\n$9\r\nsubscribe\r\n$5\r\nsport\r\n:2\r\n"
                             b"*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:2\r\n")
    assert transcript[2] == 2  # one channel subscriber and one pattern
    assert transcript[3] == (b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n"
                             b"*4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$5\r\nhello\r\n")
    assert transcript[-3] == b"*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n"


def _resp3_pushes(server: ServerProcess) -> list[object]:
    sub, pub = Wire(server), Wire(server)
    try:
        sub.call("HELLO", "3")
        out: list[object] = []
        sub.send("SUBSCRIBE", "c")
        out.append(raw_bytes(sub, 1))
        out.append(pub.call("PUBLISH", "c", "m"))
        out.append(raw_bytes(sub, 1))
        # RESP3 has no subscribed context: any command runs, and its reply comes in order.
        sub.send("XLEN", "nokey")
        out.append(raw_bytes(sub, 1))
        sub.send("PING")
        out.append(raw_bytes(sub, 1))
        # The subscriber publishing to itself gets the push before PUBLISH's reply.
        sub.send("PUBLISH", "c", "self")
        out.append(raw_bytes(sub, 2))
        sub.send("UNSUBSCRIBE")
        out.append(raw_bytes(sub, 1))
        sub.send("UNSUBSCRIBE")
        out.append(raw_bytes(sub, 1))
        return out
    finally:
        sub.close()
        pub.close()


def test_resp3_pushes(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    transcript, redis_7 = on_both(srv, redis_ref, _resp3_pushes, redis_8_only=(5,))
    assert transcript[0] == b">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n"
    assert transcript[2] == b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n"
    # Publishing to itself, the subscriber gets PUBLISH's reply first, then the push (Redis
    # 7.2+ holds back a client's own Pub/Sub output until its command's reply; 7.0 did not).
    assert transcript[5] == b":1\r\n>3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$4\r\nself\r\n"
    assert redis_7[5] == b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$4\r\nself\r\n:1\r\n"
    assert transcript[-1] == b">3\r\n$11\r\nunsubscribe\r\n_\r\n:0\r\n"


def _resp2_context(server: ServerProcess) -> list[object]:
    sub = Wire(server)
    try:
        out: list[object] = []
        sub.send("SUBSCRIBE", "c")
        sub.read()
        for command in (("XADD", "s", "*", "f", "v"), ("CLIENT", "LIST"), ("GET", "k"),
                        ("MULTI",), ("HELLO", "3"), ("PUBLISH", "c", "m")):
            sub.send(*command)
            out.append(raw_bytes(sub, 1))
        for command in (("PING",), ("PING", "hi")):
            sub.send(*command)
            out.append(raw_bytes(sub, 1))
        sub.send("PSUBSCRIBE", "p")
        out.append(raw_bytes(sub, 1))
        sub.send("RESET")  # leaves Pub/Sub mode
        out.append(raw_bytes(sub, 1))
        out.append(sub.call("XLEN", "nokey"))
        out.append(sub.call("PING"))
        return out
    finally:
        sub.close()


def test_resp2_subscribed_context(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    transcript, _ = on_both(srv, redis_ref, _resp2_context)
    assert transcript[0] == (b"-ERR Can't execute 'xadd': only (P|S)SUBSCRIBE / "
                             b"(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this "
                             b"context\r\n")
    assert b"'client|list'" in transcript[1]  # (the full name of a subcommand)
    assert transcript[6] == b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"
    assert transcript[7] == b"*2\r\n$4\r\npong\r\n$2\r\nhi\r\n"
    assert transcript[-1] == b"PONG"


def _shard_channels(server: ServerProcess) -> list[object]:
    sub, pub = Wire(server), Wire(server)
    try:
        out: list[object] = []
        sub.send("SSUBSCRIBE", "a", "b")
        out.append(raw_bytes(sub, 2))
        sub.send("SUBSCRIBE", "a")  # shard and plain channels are counted apart
        out.append(raw_bytes(sub, 1))
        out.append(pub.call("SPUBLISH", "a", "x"))
        out.append(raw_bytes(sub, 1))
        out.append(pub.call("PUBLISH", "a", "y"))  # only the plain subscription hears it
        out.append(raw_bytes(sub, 1))
        out.append(sorted(pub.call("PUBSUB", "SHARDCHANNELS")))  # type: ignore[type-var]
        out.append(pub.call("PUBSUB", "SHARDCHANNELS", "a*"))
        out.append(pub.call("PUBSUB", "SHARDNUMSUB", "a", "zz"))
        sub.send("SUNSUBSCRIBE", "a")
        out.append(raw_bytes(sub, 1))
        sub.send("SUNSUBSCRIBE")
        out.append(raw_bytes(sub, 1))
        sub.send("SUNSUBSCRIBE")
        out.append(raw_bytes(sub, 1))
        out.append(pub.call("PUBSUB", "SHARDCHANNELS"))
        return out
    finally:
        sub.close()
        pub.close()


def test_shard_channels(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    transcript, _ = on_both(srv, redis_ref, _shard_channels)
    assert transcript[1] == b"*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n"
    assert transcript[3] == b"*3\r\n$8\r\nsmessage\r\n$1\r\na\r\n$1\r\nx\r\n"


def _introspection(server: ServerProcess) -> list[object]:
    subs = [Wire(server) for _ in range(3)]
    check = Wire(server)
    try:
        for i, conn in enumerate(subs):
            conn.send("SUBSCRIBE", "all", f"only{i}")
            conn.read()
            conn.read()
        subs[0].send("PSUBSCRIBE", "x*", "y*")
        subs[0].read()
        subs[0].read()
        subs[1].send("PSUBSCRIBE", "x*")
        subs[1].read()
        out: list[object] = [
            sorted(check.call("PUBSUB", "CHANNELS")),  # type: ignore[type-var]
            sorted(check.call("PUBSUB", "CHANNELS", "only[01]")),  # type: ignore[type-var]
            check.call("PUBSUB", "CHANNELS", "nothing*"),
            check.call("PUBSUB", "NUMSUB", "all", "only2", "x*", "none"),
            check.call("PUBSUB", "NUMSUB"),
            check.call("PUBSUB", "NUMPAT"),
            check.call("PUBLISH", "xylophone", "m"),  # two pattern subscribers
        ]
        subs[2].close()  # a closed connection's subscriptions go with it
        time.sleep(0.2)
        out.append(check.call("PUBSUB", "NUMSUB", "all", "only2"))
        info = check.call("INFO", "stats").decode()  # type: ignore[union-attr]
        out.append(sorted(line for line in info.split("\r\n")
                          if line.startswith(("pubsub_channels", "pubsub_patterns",
                                              "pubsubshard_channels"))))
        for args in (("PUBSUB",), ("PUBSUB", "NUMPAT", "x"), ("PUBSUB", "CHANNELS", "a", "b"),
                     ("PUBSUB", "NOPE"), ("PUBLISH", "c"), ("SUBSCRIBE",), ("PSUBSCRIBE",),
                     ("SSUBSCRIBE",), ("SPUBLISH", "c")):
            check.send(*args)
            out.append(raw_bytes(check, 1))
        out.append(check.call("PUBSUB", "HELP")[0])  # type: ignore[index]
        return out
    finally:
        for conn in (*subs, check):
            conn.close()


def test_pubsub_introspection(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    transcript, _ = on_both(srv, redis_ref, _introspection)
    assert transcript[0] == [b"all", b"only0", b"only1", b"only2"]
    assert transcript[3] == [b"all", 3, b"only2", 1, b"x*", 0, b"none", 0]
    assert transcript[5] == 2
    assert transcript[6] == 2
    assert transcript[7] == [b"all", 2, b"only2", 0]


def _in_transaction(server: ServerProcess) -> list[object]:
    conn, pub, other = Wire(server), Wire(server), Wire(server)
    try:
        out: list[object] = []
        for command in (("MULTI",), ("SUBSCRIBE", "a", "b"), ("PING",), ("EXEC",)):
            conn.send(*command)
        # EXEC's array counts two replies (SUBSCRIBE, PING) but holds three: SUBSCRIBE
        # answers once per channel, a quirk clients live with. PING's comes after it.
        out.append(raw_bytes(conn, 5))
        out.append(pub.call("PUBLISH", "a", "m"))
        out.append(raw_bytes(conn, 1))
        conn.send("MULTI")  # subscribed now: a RESP2 client may not start a transaction
        out.append(raw_bytes(conn, 1))
        for command in (("MULTI",), ("SSUBSCRIBE", "s"), ("EXEC",)):
            other.send(*command)
        out.append(raw_bytes(other, 3))
        return out
    finally:
        for c in (conn, pub, other):
            c.close()


def test_subscribe_inside_a_transaction(srv: ServerProcess, redis_ref: ServerProcess) -> None:
    transcript, _ = on_both(srv, redis_ref, _in_transaction)
    assert transcript[0].startswith(b"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n")  # type: ignore[union-attr]
    assert transcript[1] == 1
    assert transcript[2] == b"*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$1\r\nm\r\n"
    assert transcript[3].startswith(b"-ERR Can't execute 'multi'")  # type: ignore[union-attr]
    assert transcript[4] == (b"+OK\r\n+QUEUED\r\n*1\r\n"
                             b"-ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client\r\n")


def test_client_list_and_kill_by_type(r: redis.Redis, srv: ServerProcess) -> None:
    sub = ParsedConn(srv)
    try:
        sub.call("CLIENT", "SETNAME", "listener")
        sub.send("SUBSCRIBE", "a", "b")
        sub.read()
        sub.read()
        sub.send("PSUBSCRIBE", "p*")
        sub.read()
        sub.send("SSUBSCRIBE", "s")
        sub.read()
        line = next(c for c in r.client_list() if c["name"] == "listener")
        assert (line["flags"], line["sub"], line["psub"], line["ssub"]) == ("P", "2", "1", "1")
        assert [c["name"] for c in r.client_list(_type="pubsub")] == ["listener"]
        assert "listener" not in [c["name"] for c in r.client_list(_type="normal")]
        assert r.info("clients")["pubsub_clients"] == 1
        assert r.client_kill_filter(_type="normal", skipme=True) == 0
        assert r.client_kill_filter(_type="pubsub") == 1
        assert sub.sock.recv(100) == b""  # closed
        time.sleep(0.1)
        assert r.pubsub_numsub("a") == [(b"a", 0)]
        assert r.info("clients")["pubsub_clients"] == 0
    finally:
        sub.close()


def test_client_reply_off_still_gets_messages(r: redis.Redis, srv: ServerProcess) -> None:
    """As in Redis (CLIENT_PUSHING), Pub/Sub output is not silenced by CLIENT REPLY OFF."""
    sub = ParsedConn(srv)
    try:
        sub.send("CLIENT", "REPLY", "OFF")
        sub.send("SUBSCRIBE", "c")
        assert sub.read() == [b"subscribe", b"c", 1]
        assert r.publish("c", "m") == 1
        assert sub.read() == [b"message", b"c", b"m"]
        sub.send("PING")  # a normal reply stays silenced
        assert sub.nothing_pending()
    finally:
        sub.close()


def test_slow_subscriber_hits_the_pubsub_output_limit(r: redis.Redis, srv: ServerProcess) -> None:
    """client-output-buffer-limit's pubsub class applies to clients in Pub/Sub mode."""
    r.config_set("client-output-buffer-limit", "pubsub 256kb 0 0")
    sock = socket.socket()
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # (before connecting)
        sock.connect((srv.host, srv.port))
        sock.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$1\r\nc\r\n")
        time.sleep(0.1)
        before = r.info("stats")["client_output_buffer_limit_disconnections"]
        payload = b"x" * 16384
        for _ in range(500):  # 8 MB to a client that reads nothing
            r.publish("c", payload)
        deadline = time.monotonic() + 5
        while r.pubsub_numsub("c") != [(b"c", 0)] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert r.pubsub_numsub("c") == [(b"c", 0)]
        assert r.info("stats")["client_output_buffer_limit_disconnections"] == before + 1
    finally:
        r.config_set("client-output-buffer-limit", "pubsub 32mb 8mb 60")
        sock.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_pubsub(srv: ServerProcess, protocol: int) -> None:
    client = redis.Redis(host=srv.host, port=srv.port, protocol=protocol)
    pubsub = client.pubsub()
    try:
        pubsub.subscribe("news")
        pubsub.psubscribe("ne*")
        assert pubsub.get_message(timeout=1)["type"] == "subscribe"
        assert pubsub.get_message(timeout=1)["type"] == "psubscribe"
        assert client.publish("news", "hi") == 2
        first, second = pubsub.get_message(timeout=1), pubsub.get_message(timeout=1)
        assert (first["type"], first["data"]) == ("message", b"hi")
        assert (second["type"], second["pattern"], second["data"]) == ("pmessage", b"ne*", b"hi")
        pubsub.unsubscribe()
        pubsub.punsubscribe()
        kinds = {pubsub.get_message(timeout=1)["type"] for _ in range(2)}
        assert kinds == {"unsubscribe", "punsubscribe"}
        assert client.pubsub_numpat() == 0
    finally:
        pubsub.close()
        client.close()
