"""Blocking XREAD: wake-ups by XADD (only the clients of that key, FIFO), `$` resolved at block
time, several streams, timeouts, disconnects, deleted / replaced keys, CLIENT UNBLOCK, MULTI,
INFO's blocked_clients, and (in process, with a fake clock) the original deadline kept by a
client that is woken for nothing and blocks again."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import hiredis
import pytest
import redis

from server.app import Server
from server.client import Client
from server.config import Config
from server.dispatch import run_commands
from tests.helpers import ServerProcess
from tests.integration.stream_helpers import REDIS7
from tests.resp import ParsedConn, encode

redis72 = pytest.mark.skipif(REDIS7, reason="Redis 7.2+ behaviour; the reference server is 7.0")


@pytest.fixture
def conns(server: ServerProcess, r: redis.Redis) -> Iterator[Callable[[], ParsedConn]]:
    made: list[ParsedConn] = []

    def make() -> ParsedConn:
        conn = ParsedConn(server)
        made.append(conn)
        return conn

    yield make
    for conn in made:
        conn.close()


def blocked_clients(r: redis.Redis) -> int:
    return int(r.info("clients")["blocked_clients"])


def wait_blocked(r: redis.Redis, n: int) -> None:
    deadline = time.monotonic() + 10
    while blocked_clients(r) != n:
        assert time.monotonic() < deadline, f"never reached {n} blocked clients"
        time.sleep(0.005)


E1 = [b"1-1", [b"f", b"v"]]


def test_xadd_wakes_a_blocked_reader(r: redis.Redis, conns) -> None:
    c = conns()
    c.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(r, 1)
    assert c.nothing_pending()
    r.xadd("s", {"f": "v"}, id="1-1")
    assert c.read() == [[b"s", [E1]]]
    assert blocked_clients(r) == 0


def test_dollar_is_resolved_at_block_time(r: redis.Redis, conns) -> None:
    r.xadd("s", {"old": "1"}, id="1-0")
    c = conns()
    c.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(r, 1)
    r.xadd("s", {"new": "2"}, id="2-0")
    assert c.read() == [[b"s", [[b"2-0", [b"new", b"2"]]]]]


@redis72  # `+` is a Redis 7.4 ID
def test_plus_on_an_empty_stream_waits_for_the_first_entry(r: redis.Redis, conns) -> None:
    c = conns()
    c.send("XREAD", "BLOCK", "0", "STREAMS", "s", "+")
    wait_blocked(r, 1)
    pipe = r.pipeline(transaction=True)
    pipe.xadd("s", {"f": "v"}, id="1-1")
    pipe.xadd("s", {"g": "w"}, id="1-2")
    pipe.execute()
    assert c.read() == [[b"s", [[b"1-2", [b"g", b"w"]]]]]  # the last entry only


def test_resp3_wake_up_reply_is_a_map(r: redis.Redis, conns) -> None:
    c = conns()
    c.call("HELLO", "3")
    c.raw = b""
    c.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(r, 1)
    r.xadd("s", {"f": "v"}, id="1-1")
    assert c.read() == {b"s": [E1]}
    assert c.raw == b"%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"


@redis72  # 7.0 accepts it and blocks
def test_timeout_out_of_range(r: redis.Redis) -> None:
    with pytest.raises(redis.ResponseError, match="^timeout is out of range$"):
        r.execute_command("XREAD", "BLOCK", str(2**63 - 1000), "STREAMS", "s", "$")


def test_block_serves_at_once_when_data_is_there(r: redis.Redis, conns) -> None:
    r.xadd("s", {"f": "v"}, id="1-1")
    c = conns()
    assert c.call("XREAD", "BLOCK", "0", "STREAMS", "s", "0") == [[b"s", [E1]]]


def test_only_the_changed_key_wakes_its_readers(r: redis.Redis, conns) -> None:
    a, b = conns(), conns()
    a.send("XREAD", "BLOCK", "0", "STREAMS", "a", "$")
    b.send("XREAD", "BLOCK", "0", "STREAMS", "b", "$")
    wait_blocked(r, 2)
    r.xadd("b", {"f": "v"}, id="1-1")
    assert b.read() == [[b"b", [E1]]]
    assert a.nothing_pending()
    assert blocked_clients(r) == 1
    r.xadd("a", {"f": "v"}, id="1-1")
    assert a.read() == [[b"a", [E1]]]


def test_several_streams(r: redis.Redis, conns) -> None:
    r.xadd("y", {"f": "v"}, id="1-0")
    c = conns()
    c.send("XREAD", "COUNT", "5", "BLOCK", "0", "STREAMS", "x", "y", "z", "$", "$", "0-0")
    wait_blocked(r, 1)
    r.xadd("y", {"f": "w"}, id="2-0")
    assert c.read() == [[b"y", [[b"2-0", [b"f", b"w"]]]]]
    c.send("XREAD", "BLOCK", "0", "STREAMS", "x", "y", "z", "$", "$", "0-0")
    wait_blocked(r, 1)
    r.xadd("z", {"f": "v"}, id="1-1")
    assert c.read() == [[b"z", [E1]]]


def test_writes_in_one_transaction_serve_the_final_state(r: redis.Redis, conns) -> None:
    c = conns()
    c.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(r, 1)
    pipe = r.pipeline(transaction=True)
    pipe.xadd("s", {"f": "v"}, id="1-1")
    pipe.xadd("s", {"g": "w"}, id="1-2")
    pipe.execute()
    assert c.read() == [[b"s", [E1, [b"1-2", [b"g", b"w"]]]]]


@redis72  # 7.0 answered an empty entry list here; 7.2+ re-runs the command
def test_woken_for_nothing_blocks_again(r: redis.Redis, conns) -> None:
    r.xadd("s", {"f": "v"}, id="1-1")
    c = conns()
    c.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(r, 1)
    pipe = r.pipeline(transaction=True)  # the entry is gone again before anyone can read it
    pipe.xadd("s", {"f": "v"}, id="2-2")
    pipe.xdel("s", "2-2")
    pipe.execute()
    assert c.nothing_pending()
    assert blocked_clients(r) == 1
    r.xadd("s", {"f": "v"}, id="3-3")
    assert c.read() == [[b"s", [[b"3-3", [b"f", b"v"]]]]]


def test_timeout_replies_null(r: redis.Redis, conns) -> None:
    c = conns()
    c.send("XREAD", "BLOCK", "50", "STREAMS", "s", "$")
    assert c.read() is None
    assert c.raw == b"*-1\r\n"
    c3 = conns()
    assert c3.call("HELLO", "3")
    c3.raw = b""
    c3.send("XREAD", "BLOCK", "50", "STREAMS", "s", "$")
    assert c3.read() is None
    assert c3.raw == b"_\r\n"
    assert blocked_clients(r) == 0


def test_pipelined_commands_wait_for_the_blocked_one(r: redis.Redis, conns) -> None:
    c = conns()
    c.sock.sendall(encode("XREAD", "BLOCK", "0", "STREAMS", "s", "$") + encode("PING"))
    wait_blocked(r, 1)
    assert c.nothing_pending()
    r.xadd("s", {"f": "v"}, id="1-1")
    assert c.read() == [[b"s", [E1]]]
    assert c.read() == b"PONG"


def test_a_pipeline_resumes_after_the_command_that_blocked(r: redis.Redis, conns) -> None:
    """The same command twice: the first is served, the second blocks, and only what follows
    it waits (not the second again)."""
    r.xadd("s", {"f": "v"}, id="1-1")
    r.xgroup_create("s", "g", id="0")
    read = encode("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    c = conns()
    c.sock.sendall(read + read + encode("ECHO", "after"))
    assert c.read() == [[b"s", [E1]]]
    wait_blocked(r, 1)
    assert c.nothing_pending()
    r.xadd("s", {"f": "v"}, id="1-2")
    assert c.read() == [[b"s", [[b"1-2", [b"f", b"v"]]]]]
    assert c.read() == b"after"
    assert c.nothing_pending()


def test_disconnected_clients_are_forgotten(r: redis.Redis, conns) -> None:
    gone, stays = conns(), conns()
    gone.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    stays.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(r, 2)
    gone.close()
    wait_blocked(r, 1)
    if not REDIS7:  # an INFO field since 7.2
        assert int(r.info("clients")["total_blocking_keys"]) == 1
    r.xadd("s", {"f": "v"}, id="1-1")
    assert stays.read() == [[b"s", [E1]]]
    assert r.ping()


@pytest.mark.skipif(REDIS7, reason="INFO fields since 7.2")
def test_info_counts_blocking_keys_and_those_woken_by_deletion(r: redis.Redis, conns) -> None:
    """total_blocking_keys counts keys with a waiter; total_blocking_keys_on_nokey those with
    a waiter that a deletion wakes too (XREADGROUP)."""
    r.xgroup_create("g1", "g", "$", mkstream=True)
    r.xgroup_create("g2", "g", "$", mkstream=True)
    readers = [conns() for _ in range(4)]
    readers[0].send("XREAD", "BLOCK", "0", "STREAMS", "x1", "x2", "$", "$")
    readers[1].send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "g1", ">")
    readers[2].send("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "g1", "g2", ">",
                    ">")
    readers[3].send("XREAD", "BLOCK", "0", "STREAMS", "g2", "$")
    wait_blocked(r, 4)
    fields = r.info("clients")
    assert (fields["total_blocking_keys"], fields["total_blocking_keys_on_nokey"]) == (4, 2)
    r.delete("g1")  # wakes both group readers (NOGROUP); the key leaves both counts
    for reader in readers[1:3]:
        assert str(reader.read()).startswith("NOGROUP No such key 'g1'")
    wait_blocked(r, 2)
    fields = r.info("clients")
    assert (fields["total_blocking_keys"], fields["total_blocking_keys_on_nokey"]) == (3, 0)


def test_deleted_key_keeps_xread_waiting(r: redis.Redis, conns) -> None:
    r.xadd("s", {"f": "v"}, id="5-0")
    c = conns()
    c.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(r, 1)
    r.delete("s")
    assert c.nothing_pending()
    r.xadd("s", {"f": "v"}, id="4-0")  # not after the ID `$` meant (5-0): keeps waiting
    assert c.nothing_pending()
    r.xadd("s", {"f": "v"}, id="6-0")
    assert c.read() == [[b"s", [[b"6-0", [b"f", b"v"]]]]]


def test_key_replaced_by_another_type_keeps_xread_waiting(r: redis.Redis, conns) -> None:
    r.xadd("s", {"f": "v"}, id="5-0")
    c = conns()
    c.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(r, 1)
    r.set("s", "now a string")
    assert c.nothing_pending()
    assert blocked_clients(r) == 1
    r.delete("s")
    r.xadd("s", {"f": "v"}, id="6-0")
    assert c.read() == [[b"s", [[b"6-0", [b"f", b"v"]]]]]


def test_client_unblock(r: redis.Redis, conns) -> None:
    c = conns()
    cid = c.call("CLIENT", "ID")
    c.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(r, 1)
    assert r.client_unblock(cid) == 1
    assert c.read() is None and c.raw.endswith(b"*-1\r\n")
    c.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(r, 1)
    assert r.client_unblock(cid, error=True) == 1
    reply = c.read()
    assert isinstance(reply, hiredis.ReplyError)
    assert str(reply) == "UNBLOCKED client unblocked via CLIENT UNBLOCK"
    assert r.client_unblock(cid) == 0  # not blocked any more
    assert blocked_clients(r) == 0
    with pytest.raises(redis.ResponseError, match="reason should be TIMEOUT or ERROR"):
        r.execute_command("CLIENT", "UNBLOCK", cid, "LATER")


def test_block_inside_multi_does_not_block(r: redis.Redis, conns) -> None:
    c = conns()
    assert c.call("MULTI") == b"OK"
    assert c.call("XREAD", "BLOCK", "0", "STREAMS", "s", "$") == b"QUEUED"
    assert c.call("EXEC") == [None]
    assert c.raw.endswith(b"*1\r\n*-1\r\n")
    r.xadd("s", {"f": "v"}, id="1-1")
    assert c.call("MULTI") == b"OK"
    assert c.call("XREAD", "BLOCK", "0", "STREAMS", "s", "0") == b"QUEUED"
    assert c.call("EXEC") == [[[b"s", [E1]]]]


def test_blocked_flag_in_client_list(r: redis.Redis, conns) -> None:
    c = conns()
    cid = c.call("CLIENT", "ID")
    c.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    wait_blocked(r, 1)
    line = next(x for x in r.client_list() if int(x["id"]) == cid)
    assert "b" in line["flags"] and line["cmd"] == "xread"
    r.xadd("s", {"f": "v"}, id="1-1")
    c.read()


def test_thousand_readers_served_in_fifo_order(r: redis.Redis, conns) -> None:
    readers = [conns() for _ in range(1000)]
    for i, c in enumerate(readers):
        # Each reader also queues a command behind its XREAD: their order in `order` is the
        # order in which the server served the readers.
        c.sock.sendall(encode("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
                       + encode("XADD", "order", "*", "reader", str(i)))
        wait_blocked(r, i + 1)
    r.xadd("s", {"f": "v"}, id="1-1")
    for c in readers:
        assert c.read() == [[b"s", [E1]]]
    for c in readers:
        c.read()  # the XADD's ID
    served = [int(fields[b"reader"]) for _, fields in r.xrange("order")]
    assert served == list(range(1000))
    assert blocked_clients(r) == 0


# -- the original deadline, in process with a fake clock --------------------------------------
class FakeLoop:
    def __init__(self) -> None:
        self.now = 100.0
        self.timers: list[tuple[float, Callable[..., object], tuple]] = []
        self.soon: list[tuple[Callable[..., object], tuple]] = []

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, fn: Callable[..., object], *args: object) -> FakeTimer:
        timer = FakeTimer(self, when, fn, args)
        self.timers.append((when, fn, args))
        return timer

    def call_soon(self, fn: Callable[..., object], *args: object) -> None:
        self.soon.append((fn, args))

    def run_soon(self) -> None:
        while self.soon:
            fn, args = self.soon.pop(0)
            fn(*args)


class FakeTimer:
    def __init__(self, loop: FakeLoop, when: float, fn: Callable[..., object],
                 args: tuple) -> None:
        self.loop, self.when, self.fn, self.args = loop, when, fn, args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


def test_reblock_keeps_the_original_deadline() -> None:
    server = Server(Config())
    loop = FakeLoop()
    server.loop = loop  # type: ignore[assignment]
    reader, writer = Client(1, server, None), Client(2, server, None)
    run_commands(reader, [[b"XREAD", b"BLOCK", b"1000", b"STREAMS", b"s", b"$"]])
    assert reader.blocked is not None and reader.blocked.deadline == 101.0
    timer = reader.blocked.timer
    loop.now = 100.6
    run_commands(writer, [[b"MULTI"], [b"XADD", b"s", b"1-1", b"f", b"v"],
                                 [b"XDEL", b"s", b"1-1"], [b"EXEC"]])
    loop.run_soon()  # before-sleep: the reader is re-run, finds nothing, waits again
    assert reader.blocked is not None
    assert reader.blocked.deadline == 101.0 and reader.blocked.timer is timer
    assert len(loop.timers) == 1 and not timer.cancelled
    assert b"".join(reader.out) == b""
    loop.now = 101.0
    timer.fn(*timer.args)  # the original timer fires
    assert reader.blocked is None and b"".join(reader.out) == b"*-1\r\n"
    assert server.blocking.blocked_clients == 0 and not server.blocking.blocking_keys
