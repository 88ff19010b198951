"""The effects the group commands propagate (for the AOF) rebuild the same groups.

First in process: every command of a scenario runs through the dispatcher of one Server whose
propagated commands are captured, and those are replayed into a second Server; both must end
with the same groups (last ID, read counter, PEL with owners, delivery times and counts,
consumers). Then end to end: a server with appendonly is killed and restarted on its AOF.
"""

from __future__ import annotations

import time

import pytest
import redis

from server.app import Server
from server.client import Client
from server.config import Config
from server.dispatch import execute
from storage.consumer_group import groups, verify
from storage.stream import Stream
from tests.helpers import ServerProcess


def new_server() -> tuple[Server, Client, list[list[bytes]]]:
    server = Server(Config())
    client = Client(1, server, None)
    log: list[list[bytes]] = []
    server.propagate_hooks.append(lambda db, argv: log.append(list(argv)))
    return server, client, log


def run(client: Client, *args: object) -> object:
    argv = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    reply = execute(client, argv)
    assert not isinstance(reply, str) or not reply.startswith("ERR"), reply
    return reply


def snapshot(server: Server, key: bytes) -> list[tuple]:
    """Everything a replay must reproduce about the groups of key."""
    stream = server.dbs[0].get(key)
    assert isinstance(stream, Stream)
    verify(stream)
    out = []
    for g in groups(stream):
        pel = [(eid, n.consumer.name, n.delivery_time, n.delivery_count)  # type: ignore[union-attr]
               for eid, n in g.iter_pending()]
        consumers = sorted((c.name, sorted(c.pending_ids())) for c in g.iter_consumers())
        out.append((g.name, g.last_id, g.entries_read, pel, consumers))
    return out


SCENARIO: list[tuple] = [
    ("XGROUP", "CREATE", "s", "g1", "$", "MKSTREAM"),
    ("XGROUP", "CREATE", "s", "g2", "0"),
    *[("XADD", "s", f"{i}-0", "f", f"v{i}") for i in range(1, 13)],
    ("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "3", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g1", "bob", "COUNT", "2", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g2", "carol", "NOACK", "COUNT", "4", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g2", "dave", "STREAMS", "s", ">"),
    ("XACK", "s", "g1", "1-0"),
    ("XCLAIM", "s", "g1", "bob", "0", "2-0", "IDLE", "5000"),
    ("XCLAIM", "s", "g1", "erin", "0", "3-0", "JUSTID", "RETRYCOUNT", "9"),
    ("XCLAIM", "s", "g1", "erin", "0", "10-0", "FORCE", "LASTID", "11-0"),
    ("XDEL", "s", "4-0"),
    ("XAUTOCLAIM", "s", "g1", "frank", "0", "0", "COUNT", "2"),
    ("XREADGROUP", "GROUP", "g1", "gina", "CLAIM", "0", "COUNT", "3", "STREAMS", "s", ">"),
    ("XGROUP", "CREATECONSUMER", "s", "g1", "idle"),
    ("XGROUP", "DELCONSUMER", "s", "g2", "carol"),
    ("XACKDEL", "s", "g2", "ACKED", "IDS", "2", "5-0", "6-0"),
    ("XDELEX", "s", "DELREF", "IDS", "1", "7-0"),
    ("XGROUP", "SETID", "s", "g2", "8-0", "ENTRIESREAD", "8"),
    ("XREADGROUP", "GROUP", "g2", "dave", "STREAMS", "s", ">"),
    ("XTRIM", "s", "MINID", "9-0", "DELREF"),
    ("XGROUP", "CREATE", "s", "g3", "0"),
    ("XREADGROUP", "GROUP", "g3", "hank", "STREAMS", "s", ">"),
    ("XGROUP", "DESTROY", "s", "g3"),
]


def test_propagated_effects_rebuild_the_groups():
    primary, client, log = new_server()
    for cmd in SCENARIO:
        run(client, *cmd)
        time.sleep(0.002)  # distinct delivery times
    replica, rclient, _ = new_server()
    for argv in log:
        run(rclient, *argv)
    assert snapshot(replica, b"s") == snapshot(primary, b"s")
    names = {argv[0].upper() for argv in log}
    assert b"XREADGROUP" not in names and b"XAUTOCLAIM" not in names  # effects only


def test_xreadgroup_propagation_shape():
    server, client, log = new_server()
    run(client, "XGROUP", "CREATE", "s", "g", "0", "MKSTREAM")
    run(client, "XADD", "s", "1-0", "a", "1")
    run(client, "XADD", "s", "2-0", "b", "2")
    log.clear()
    run(client, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert log[0] == [b"XGROUP", b"CREATECONSUMER", b"s", b"g", b"c"]
    assert [a[:6] for a in log[1:3]] == [[b"XCLAIM", b"s", b"g", b"c", b"0", b"1-0"],
                                         [b"XCLAIM", b"s", b"g", b"c", b"0", b"2-0"]]
    assert log[1][6] == b"TIME" and log[1][8:] == [b"RETRYCOUNT", b"1", b"FORCE", b"JUSTID",
                                                   b"LASTID", b"1-0"]
    assert log[2][-1] == b"2-0"
    assert log[3] == [b"XGROUP", b"SETID", b"s", b"g", b"2-0", b"ENTRIESREAD", b"2"]
    assert len(log) == 4
    log.clear()
    run(client, "XADD", "s", "3-0", "c", "3")
    log.clear()
    run(client, "XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "s", ">")
    assert log == [[b"XGROUP", b"SETID", b"s", b"g", b"3-0", b"ENTRIESREAD", b"3"]]
    log.clear()
    # History: unlike Redis, each re-delivered entry is logged with its new delivery data,
    # so an AOF replay keeps the delivery counts (Redis logs nothing here).
    run(client, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")
    assert [entry[5] for entry in log] == [b"1-0", b"2-0"]
    assert all(entry[:5] == [b"XCLAIM", b"s", b"g", b"c", b"0"] for entry in log)
    assert all(entry[8:12] == [b"RETRYCOUNT", b"2", b"FORCE", b"JUSTID"] for entry in log)
    log.clear()
    run(client, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")  # nothing new
    run(client, "XACK", "s", "g", "9-0")  # nothing acknowledged
    run(client, "XGROUP", "DESTROY", "s", "nope")
    assert log == []


@pytest.fixture
def aof_server(tmp_path):
    proc = ServerProcess(workdir=str(tmp_path),
                         extra_args=["--appendonly", "yes", "--appendfsync", "always"]).start()
    yield proc
    proc.stop()


def full_state(c: redis.Redis, key: str) -> list:
    """XINFO STREAM FULL's groups without the consumers' seen/active times."""
    info = c.execute_command("XINFO", "STREAM", key, "FULL")
    out = []
    for g in info[b"groups"]:
        consumers = [(x[b"name"], x[b"pel-count"], x[b"pending"]) for x in g[b"consumers"]]
        out.append((g[b"name"], g[b"last-delivered-id"], g[b"entries-read"], g[b"lag"],
                    g[b"pending"], consumers))
    return out


def test_groups_survive_an_aof_restart(aof_server):
    c = redis.Redis(host=aof_server.host, port=aof_server.port, protocol=3)
    c.response_callbacks.clear()
    for cmd in SCENARIO:
        c.execute_command(*cmd)
    before = full_state(c, "s")
    c.close()
    aof_server.stop(kill=True, cleanup=False)
    aof_server.start()
    c = redis.Redis(host=aof_server.host, port=aof_server.port, protocol=3)
    c.response_callbacks.clear()
    try:
        assert full_state(c, "s") == before
    finally:
        c.close()
