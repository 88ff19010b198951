"""Replication between xstreamd servers: full sync (to disk and diskless), the live stream,
partial resync after a lost link, promotion, WAIT, read-only replicas, blocked readers on a
replica, and the replies and INFO fields clients and Sentinel read."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import redis

from tests.helpers import ServerProcess
from tests.integration.replication_support import (
    client,
    dataset,
    fill,
    info,
    start_replica,
    wait_caught_up,
    wait_for,
    wait_link_up,
)

FAST = ["--repl-diskless-sync-delay", "0", "--appendonly", "no", "--save", ""]


@pytest.fixture
def primary() -> Iterator[ServerProcess]:
    proc = ServerProcess("xstreamd", FAST).start()
    yield proc
    proc.stop()


@pytest.mark.parametrize("diskless", ["yes", "no"])
def test_full_sync_then_live_writes(diskless: str) -> None:
    with ServerProcess("xstreamd", [*FAST, "--repl-diskless-sync", diskless]) as primary:
        p = client(primary)
        fill(p)
        with start_replica("xstreamd", primary) as replica:
            wait_link_up(replica)
            wait_caught_up(primary, replica)
            assert dataset(replica) == dataset(primary)
            # Live writes of every kind, then the same again.
            p.xadd("s0", {"live": 1})
            p.xadd("s1", {"live": 2}, maxlen=50)
            pipe = p.pipeline(transaction=False)  # (a run of XADD *, taken whole)
            for i in range(400):
                pipe.xadd("s0", {"piped": i, "pad": "p" * (i % 13)})
            pipe.execute()
            p.xreadgroup("g1", "carol", {"s2": ">"}, count=3)
            p.xack("s2", "g1", *[e[0] for e in p.xrange("s2", count=4)])
            p.xgroup_createconsumer("s0", "g2", "dave")
            p.set("str1", "changed")
            p.delete("str2")
            p.expire("str3", 1000)
            with p.pipeline(transaction=True) as tx:
                tx.xadd("s0", {"tx": 1})
                tx.incr("counter")
                tx.execute()
            p.eval("redis.call('XADD', KEYS[1], '*', 'lua', 1) return redis.call('SET', "
                   "KEYS[2], 'x')", 2, "s1", "luakey")
            wait_caught_up(primary, replica)
            assert dataset(replica) == dataset(primary)
            replication = info(primary)
            assert replication["connected_slaves"] == 1
            assert replication["slave0"]["state"] == "online"
            assert info(primary, "stats")["sync_full"] == 1


def test_role_info_and_client_list(primary: ServerProcess) -> None:
    with start_replica("xstreamd", primary) as replica:
        wait_link_up(replica)
        wait_caught_up(primary, replica)
        p, r = client(primary), client(replica)
        role = p.execute_command("ROLE")
        assert role[0] == b"master" and role[1] >= 0
        assert role[2] == [[b"127.0.0.1", str(replica.port).encode(), role[2][0][2]]]
        rrole = r.execute_command("ROLE")
        assert rrole[:4] == [b"slave", b"127.0.0.1", primary.port, b"connected"]
        rinfo = info(replica)
        assert rinfo["role"] == "slave"
        assert rinfo["master_host"] == "127.0.0.1"
        assert rinfo["master_port"] == primary.port
        assert rinfo["slave_read_only"] == 1
        assert rinfo["master_replid"] == info(primary)["master_replid"]
        listing = p.execute_command("CLIENT", "LIST", "TYPE", "replica").decode()
        assert "flags=S" in listing and "cmd=replconf" in listing
        assert "flags=M" in r.execute_command("CLIENT", "LIST", "TYPE", "master").decode()
        assert r.config_get("replicaof") == {"replicaof": f"127.0.0.1 {primary.port}"}
        before = info(primary, "stats")["total_net_repl_output_bytes"]
        p.xadd("counted", {"f": "v"})
        wait_caught_up(primary, replica)
        assert info(primary, "stats")["total_net_repl_output_bytes"] > before
        assert info(replica, "stats")["total_net_repl_input_bytes"] > 0


def test_replica_refuses_writes_and_serves_reads(primary: ServerProcess) -> None:
    client(primary).xadd("s", {"a": 1})
    with start_replica("xstreamd", primary) as replica:
        wait_link_up(replica)
        wait_caught_up(primary, replica)
        r = client(replica)
        with pytest.raises(redis.ResponseError, match="^You can't write against a read only "
                                                       "replica.$"):
            r.xadd("s", {"b": 2})
        assert len(r.xrange("s")) == 1
        r.config_set("replica-read-only", "no")
        r.set("local", "1")  # a writable replica keeps its own writes
        assert r.get("local") == b"1"


def test_blocked_reader_on_replica_wakes_on_replicated_xadd(primary: ServerProcess) -> None:
    p = client(primary)
    p.xadd("jobs", {"n": 0})
    p.xgroup_create("jobs", "workers", id="$")
    with start_replica("xstreamd", primary) as replica:
        wait_link_up(replica)
        wait_caught_up(primary, replica)
        results: dict[str, object] = {}

        def read() -> None:
            results["xread"] = client(replica).xread({"jobs": "$"}, block=10_000)

        reader = threading.Thread(target=read)
        reader.start()
        time.sleep(0.3)
        p.xadd("jobs", {"n": 1})
        reader.join(15)
        assert results["xread"][0][1][0][1] == {b"n": b"1"}


def test_wait_counts_acknowledging_replicas(primary: ServerProcess) -> None:
    p = client(primary)
    assert p.execute_command("WAIT", 1, 100) == 0
    with start_replica("xstreamd", primary) as replica, \
            start_replica("xstreamd", primary) as second:
        wait_link_up(replica)
        wait_link_up(second)
        p.xadd("s", {"a": 1})
        assert p.execute_command("WAIT", 2, 10_000) == 2
        assert p.execute_command("WAIT", 3, 200) == 2  # only two exist: the timeout answers
        with pytest.raises(redis.ResponseError, match="WAIT cannot be used with replica"):
            client(replica).execute_command("WAIT", 1, 10)


def test_partial_resync_after_the_link_is_killed(primary: ServerProcess) -> None:
    p = client(primary)
    fill(p, streams=1, entries=50)
    with start_replica("xstreamd", primary) as replica:
        wait_link_up(replica)
        wait_caught_up(primary, replica)
        assert p.execute_command("CLIENT", "KILL", "TYPE", "replica") == 1
        p.xadd("s0", {"after": "kill"})
        p.set("after", "kill")
        wait_for(lambda: info(primary, "stats")["sync_partial_ok"] == 1, 30,
                 "a partial resync")
        wait_caught_up(primary, replica)
        assert info(primary, "stats")["sync_full"] == 1
        assert dataset(replica) == dataset(primary)


def test_promotion_keeps_the_history_for_the_other_replicas(primary: ServerProcess) -> None:
    p = client(primary)
    fill(p, streams=1, entries=30)
    with start_replica("xstreamd", primary) as a, start_replica("xstreamd", primary) as b:
        wait_link_up(a)
        wait_link_up(b)
        wait_caught_up(primary, a)
        wait_caught_up(primary, b)
        old_id = info(primary)["master_replid"]
        ra, rb = client(a), client(b)
        assert ra.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
        promoted = info(a)
        assert promoted["role"] == "master"
        assert promoted["master_replid2"] == old_id
        assert promoted["master_replid"] != old_id
        ra.xadd("s0", {"on": "new primary"})
        assert rb.execute_command("REPLICAOF", "127.0.0.1", a.port) == b"OK"
        wait_link_up(b)
        wait_caught_up(a, b)
        assert info(a, "stats")["sync_partial_ok"] == 1
        assert info(a, "stats")["sync_full"] == 0
        assert dataset(b) == dataset(a)


def test_replicaof_errors_and_answers(primary: ServerProcess) -> None:
    p = client(primary)
    with pytest.raises(redis.ResponseError, match="^Invalid master port$"):
        p.execute_command("REPLICAOF", "127.0.0.1", "notaport")
    with pytest.raises(redis.ResponseError, match="^Invalid master port$"):
        p.execute_command("REPLICAOF", "127.0.0.1", "70000")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        p.execute_command("REPLICAOF", "127.0.0.1")
    assert p.execute_command("REPLICAOF", "NO", "ONE") == b"OK"  # a primary already
    with ServerProcess("xstreamd", FAST) as other:
        o = client(other)
        assert o.execute_command("SLAVEOF", "127.0.0.1", primary.port) is True  # (+OK)
        assert o.execute_command("REPLICAOF", "127.0.0.1", primary.port) == \
            b"OK Already connected to specified master"
        wait_link_up(other)


def test_replconf_and_psync_from_a_normal_client(primary: ServerProcess) -> None:
    p = client(primary)
    # An ACK from a client that is no replica changes nothing and gets no reply.
    sock = socket.create_connection((primary.host, primary.port), timeout=5)
    sock.sendall(b"*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$2\r\n10\r\n*1\r\n$4\r\nPING\r\n")
    assert sock.recv(100) == b"+PONG\r\n"
    sock.close()
    with pytest.raises(redis.ResponseError, match="Unrecognized REPLCONF option: bogus"):
        p.execute_command("REPLCONF", "bogus", "1")
    with pytest.raises(redis.ResponseError, match="syntax error"):
        p.execute_command("REPLCONF", "listening-port")
    assert p.ping()


def _serve_handshake(conn: socket.socket) -> None:
    """Answer a replica's handshake as a primary would, up to its PSYNC."""
    buf = b""
    while True:
        chunk = conn.recv(4096)
        if not chunk:
            raise ConnectionError("the replica went away")
        buf += chunk
        while True:
            command, buf = _take_command(buf)
            if command is None:
                break
            name = command[0].upper()
            if name == b"PSYNC":
                return
            conn.sendall(b"+PONG\r\n" if name == b"PING" else b"+OK\r\n")


def _take_command(buf: bytes) -> tuple[list[bytes] | None, bytes]:
    """One RESP array of bulk strings from the front of buf, if it is all there."""
    if not buf.startswith(b"*") or b"\r\n" not in buf:
        return None, buf
    head, rest = buf.split(b"\r\n", 1)
    argv = []
    for _ in range(int(head[1:])):
        if b"\r\n" not in rest:
            return None, buf
        size_line, rest = rest.split(b"\r\n", 1)
        size = int(size_line[1:])
        if len(rest) < size + 2:
            return None, buf
        argv.append(rest[:size])
        rest = rest[size + 2:]
    return argv, rest


@pytest.mark.parametrize("payload", [
    b"$10\r\nnotanrdb!!",  # a length-prefixed RDB that does not load
    b"$EOF:" + b"x" * 40 + b"\r\nREDIS0011",  # an EOF-marked one cut short
    b"$5000\r\nREDIS",  # the primary goes away in the middle of the transfer
])
def test_a_bad_transfer_keeps_the_data_and_the_link_retries(payload: bytes) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    port = listener.getsockname()[1]
    attempts: list[int] = []

    def fake_primary() -> None:
        for _ in range(2):
            conn, _ = listener.accept()
            conn.settimeout(10)
            try:
                _serve_handshake(conn)
                conn.sendall(b"+FULLRESYNC " + b"a" * 40 + b" 0\r\n" + payload)
                attempts.append(1)
                time.sleep(0.2)
            finally:
                conn.close()

    thread = threading.Thread(target=fake_primary, daemon=True)
    thread.start()
    with ServerProcess("xstreamd", [*FAST, "--repl-timeout", "2"]) as replica:
        r = client(replica)
        r.set("kept", "yes")
        r.execute_command("REPLICAOF", "127.0.0.1", port)
        thread.join(30)
        assert len(attempts) == 2  # it tried again after the first failure
        assert info(replica)["master_link_status"] == "down"
        r.execute_command("REPLICAOF", "NO", "ONE")
        assert r.get("kept") == b"yes"
        assert r.ping()
        assert "Error condition on socket for SYNC" in replica.read_log() or \
            "Failed trying to load the MASTER synchronization DB" in replica.read_log()
    listener.close()


def test_garbage_in_the_stream_drops_the_link() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    port = listener.getsockname()[1]
    with ServerProcess("xstreamd", FAST) as source:
        rdb = _rdb_of(source)

    def fake_primary() -> None:
        conn, _ = listener.accept()
        conn.settimeout(10)
        try:
            _serve_handshake(conn)
            conn.sendall(b"+FULLRESYNC " + b"b" * 40 + b" 0\r\n$%d\r\n" % len(rdb) + rdb)
            conn.sendall(b"*2\r\n$3\r\nSET\r\n")  # half a command, then garbage
            conn.sendall(b"$x\r\n" * 3)
            time.sleep(1)
        finally:
            conn.close()

    thread = threading.Thread(target=fake_primary, daemon=True)
    thread.start()
    with ServerProcess("xstreamd", FAST) as replica:
        r = client(replica)
        r.execute_command("REPLICAOF", "127.0.0.1", port)
        thread.join(30)
        wait_for(lambda: "Protocol error" in replica.read_log()
                 or "Connection with master lost" in replica.read_log(), 10,
                 "the garbage to be reported")
        r.execute_command("REPLICAOF", "NO", "ONE")
        assert r.ping()
    listener.close()


def _rdb_of(proc: ServerProcess) -> bytes:
    r = client(proc)
    r.set("from-rdb", "1")
    r.save()
    with open(f"{proc.dir}/dump.rdb", "rb") as fh:
        return fh.read()


def test_a_replica_without_its_primary_refuses_stale_reads_when_told_to() -> None:
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))  # a port nothing listens on
    port = dead.getsockname()[1]
    with ServerProcess("xstreamd", [*FAST, "--replicaof", "127.0.0.1", str(port)]) as replica:
        r = client(replica)
        r.config_set("replica-serve-stale-data", "no")
        with pytest.raises(redis.exceptions.MasterDownError):
            r.ping()  # (not a stale command, as in Redis)
        with pytest.raises(redis.exceptions.MasterDownError, match="^Link with MASTER is down and "
                                                       "replica-serve-stale-data is set to "
                                                       "'no'.$"):
            r.xrange("s")
        assert info(replica)["master_link_status"] == "down"  # (INFO is a stale command)
        r.config_set("replica-serve-stale-data", "yes")
        assert r.xrange("s") == []
    dead.close()


def test_min_replicas_to_write(primary: ServerProcess) -> None:
    p = client(primary)
    p.config_set("min-replicas-to-write", "1")
    with pytest.raises(redis.ResponseError,
                       match="^NOREPLICAS Not enough good replicas to write.$"):
        p.xadd("s", {"a": 1})
    assert p.xrange("s") == []  # reads are served
    with start_replica("xstreamd", primary) as replica:
        wait_link_up(replica)
        wait_for(lambda: info(primary).get("min_slaves_good_slaves") == 1, 10,
                 "a good replica")
        assert p.xadd("s", {"a": 1})
    p.config_set("min-replicas-to-write", "0")


def test_writes_are_refused_from_the_moment_replicaof_returns(primary: ServerProcess) -> None:
    with ServerProcess("xstreamd", FAST) as other:
        o = client(other)
        o.execute_command("REPLICAOF", "127.0.0.1", primary.port)
        with pytest.raises(redis.ReadOnlyError):
            o.xadd("s", {"a": 1})
        with o.pipeline(transaction=True) as tx:  # refused at queue time: EXECABORT
            tx.xadd("s", {"a": 1})
            with pytest.raises(redis.ReadOnlyError, match="read only replica"):
                tx.execute()
        o.execute_command("REPLICAOF", "NO", "ONE")
        assert o.xadd("s", {"a": 1})


def test_a_replica_keeps_its_own_aof(primary: ServerProcess) -> None:
    """After the full sync the replica's AOF starts again from a rewrite of the data it loaded;
    what it applies afterwards is appended; restarted alone, it holds the same data."""
    p = client(primary)
    fill(p, streams=1, entries=60)
    with ServerProcess("xstreamd", ["--replicaof", "127.0.0.1", str(primary.port),
                                    "--appendonly", "yes", "--appendfsync", "always",
                                    "--save", ""]) as replica:
        wait_link_up(replica)
        p.xadd("s0", {"after": "sync"})
        p.set("after", "sync")
        wait_caught_up(primary, replica)
        wait_for(lambda: info(replica, "persistence")["aof_rewrite_in_progress"] == 0
                 and info(replica, "persistence")["aof_enabled"] == 1, 30, "the AOF rewrite")
        expected = dataset(primary)
        directory = replica.dir
        replica.stop(cleanup=False)
        with ServerProcess("xstreamd", ["--appendonly", "yes", "--save", ""],
                           workdir=directory) as alone:
            assert dataset(alone) == expected


def test_masterauth_and_masteruser() -> None:
    with ServerProcess("xstreamd", [*FAST, "--requirepass", "s3cret"]) as primary:
        p = redis.Redis(port=primary.port, password="s3cret")
        p.xadd("s", {"a": 1})
        p.execute_command("ACL", "SETUSER", "repl", "on", ">replpass", "+@all", "~*", "&*")
        for extra in (["--masterauth", "s3cret"],
                      ["--masteruser", "repl", "--masterauth", "replpass"]):
            with start_replica("xstreamd", primary, *extra) as replica:
                wait_link_up(replica)
                assert client(replica).xlen("s") == 1
        with start_replica("xstreamd", primary, "--masterauth", "wrong") as replica:
            wait_for(lambda: "unable to AUTH to MASTER" in replica.read_log(), 10,
                     "the refused AUTH in the log")
            assert info(replica)["master_link_status"] == "down"


def test_flushall_select_and_eviction_reach_the_replica(primary: ServerProcess) -> None:
    p = client(primary)
    with start_replica("xstreamd", primary) as replica:
        wait_link_up(replica)
        other = redis.Redis(port=primary.port, db=5)
        other.xadd("in-db5", {"a": 1})
        p.set("gone", "soon")
        wait_caught_up(primary, replica)
        assert redis.Redis(port=replica.port, db=5).xlen("in-db5") == 1  # (SELECT 5 first)
        p.flushall()
        p.set("after", "flush")
        wait_caught_up(primary, replica)
        assert dataset(replica) == dataset(primary)
        assert redis.Redis(port=replica.port, db=5).exists("in-db5") == 0
        # An eviction on the primary is a DEL in the stream.
        p.config_set("maxmemory-policy", "allkeys-random")
        p.config_set("maxmemory", "1")
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            p.set("one-more", "x")  # (a write makes the primary evict: it cannot get under)
        assert p.dbsize() == 0
        p.config_set("maxmemory", "0")
        wait_caught_up(primary, replica)
        assert client(replica).dbsize() == 0
