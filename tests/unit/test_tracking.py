"""server/tracking.py in process: what the table, the BCAST pass and the table limit do, with
clients that only collect their output (tests/integration/test_tracking.py runs the commands
against real servers)."""

from __future__ import annotations

import pytest

from server.app import Server
from server.client import Client
from server.config import Config
from server.dispatch import find
from server.log import Logger


@pytest.fixture
def server() -> Server:
    config = Config()
    config.set_from_text("appendonly", "no")
    srv = Server(config, Logger("nothing"))
    srv.schedule_before_sleep = lambda: None  # type: ignore[method-assign]
    return srv


def connect(server: Server, protocol: int = 3) -> Client:
    client = Client(server.next_client_id, server, None)
    server.next_client_id += 1
    server.clients[client.id] = client
    client.protocol = protocol
    return client


def output(client: Client) -> bytes:
    data = b"".join(client.out)
    client.out = []
    return data


def push(*keys: bytes) -> bytes:
    body = b"*%d\r\n" % len(keys) + b"".join(b"$%d\r\n%s\r\n" % (len(k), k) for k in keys)
    return b">2\r\n$10\r\ninvalidate\r\n" + body


def read(server: Server, client: Client, *argv: bytes) -> None:
    """What dispatch.call does after a readonly command of a tracking client."""
    server.tracking.remember_keys(client, find(list(argv)), list(argv))


def test_bcast_noloop_leaves_out_only_the_clients_own_last_changes(server: Server) -> None:
    tracking = server.tracking
    own, other = connect(server), connect(server)
    tracking.enable(own, 0, True, False, False, True, [b"k"])
    tracking.enable(other, 0, True, False, False, False, [])
    assert server.tracking_active and tracking.broadcast in server.before_sleep_hooks
    tracking.invalidate_key(b"k1", own)
    tracking.invalidate_key(b"k2", other)
    tracking.invalidate_key(b"k3", own)
    tracking.invalidate_key(b"k3", None)  # then expired: the last change is nobody's
    tracking.invalidate_key(b"x", own)  # only under the empty prefix
    tracking.broadcast()
    assert output(own) == push(b"k2", b"k3")
    # Per prefix, in prefix order: "" before "k".
    assert output(other) == push(b"k1", b"k2", b"k3", b"x")
    tracking.broadcast()  # nothing changed since
    assert output(own) == output(other) == b""
    tracking.disable(own)
    tracking.disable(other)
    assert not server.tracking_active and tracking.broadcast not in server.before_sleep_hooks


def test_optin_optout_and_what_is_remembered(server: Server) -> None:
    tracking = server.tracking
    c = connect(server)
    tracking.enable(c, 0, False, True, False, False, [])
    read(server, c, b"GET", b"a")
    assert tracking.table == {}
    c.tracking.caching = True  # type: ignore[union-attr]
    read(server, c, b"EXISTS", b"a", b"b", b"a")
    read(server, c, b"XREAD", b"STREAMS", b"s", b"t", b"0", b"0")
    assert list(tracking.table) == [b"a", b"b", b"s", b"t"] and tracking.items == 4
    assert server.tracking_active
    tracking.enable(c, 0, False, False, True, False, [])  # (OPTOUT: caching means "not")
    read(server, c, b"GET", b"z")
    assert b"z" not in tracking.table
    for key in (b"a", b"b", b"s", b"t"):
        tracking.invalidate_key(key, None)
    assert output(c) == push(b"a") + push(b"b") + push(b"s") + push(b"t")
    assert tracking.items == 0 and not server.tracking_active


def test_the_table_limit_evicts_more_keys_each_call_it_stays_over(server: Server) -> None:
    """trackingLimitUsedSlots' effort: 100 keys, then 200, ... until under the limit."""
    tracking = server.tracking
    c = connect(server)
    tracking.enable(c, 0, False, False, False, False, [])
    for i in range(250):
        read(server, c, b"GET", b"key%d" % i)
    server.config.set_from_text("tracking-table-max-keys", "1")
    tracking.limit_used_slots()
    assert len(tracking.table) == 150 and output(c).count(b"invalidate") == 100
    tracking.limit_used_slots()
    assert list(tracking.table) == [b"key249"] and output(c).count(b"invalidate") == 149
    assert tracking._limit_rounds == 0
    server.config.set_from_text("tracking-table-max-keys", "0")  # no limit
    read(server, c, b"GET", b"more")
    tracking.limit_used_slots()
    assert len(tracking.table) == 2


def test_a_gone_or_untracking_client_is_skipped_and_forgotten(server: Server) -> None:
    tracking = server.tracking
    gone, off, on = connect(server), connect(server), connect(server)
    for c in (gone, off, on):
        tracking.enable(c, 0, False, False, False, False, [])
        read(server, c, b"GET", b"k")
    del server.clients[gone.id]
    tracking.disable(off)
    assert tracking.items == 3
    tracking.invalidate_key(b"k", None)
    assert output(gone) == output(off) == b"" and output(on) == push(b"k")
    assert tracking.items == 0
