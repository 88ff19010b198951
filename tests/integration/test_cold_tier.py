"""stream-hot-memory on a real server: with a limit so small that nearly every sealed node
is on disk, the same random history answers byte for byte as on a server that keeps all in
memory; INFO reports the tier; a restart brings the data back; a damaged segment names the
stream and IDs while the rest is served; CONFIG SET moves nodes out."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import ServerProcess
from tests.resp import Conn, encode

NODES = ["--stream-node-max-entries", "10", "--save", "", "--appendonly", "no"]


def _info(conn: Conn, field: str) -> int:
    text = conn.call("INFO", "memory")
    return int(text.split(field.encode() + b":")[1].split(b"\r\n")[0])


def _wait_cold(conn: Conn, at_least: int = 1, timeout: float = 10) -> int:
    deadline = time.time() + timeout
    while True:
        cold = _info(conn, "stream_cold_nodes")
        if cold >= at_least or time.time() > deadline:
            return cold
        time.sleep(0.05)


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    cold_dir = tmp_path_factory.mktemp("cold")
    with ServerProcess(extra_args=[*NODES, "--stream-hot-memory", "1"],
                       workdir=str(cold_dir)) as cold, ServerProcess(extra_args=NODES) as hot:
        yield cold, hot


@pytest.mark.parametrize("seed", range(4))
def test_replies_are_the_same_with_nodes_on_disk(pair, seed: int) -> None:
    rng = random.Random(seed)
    conns = [Conn(server) for server in pair]
    try:
        for conn in conns:
            conn.call("FLUSHALL")
        ms = 1
        for step in range(900):
            op = rng.random()
            if op < 0.55:
                ms += rng.randrange(0, 3)
                command = ["XADD", "s", f"{ms}-*", "f", str(rng.randrange(10**6)),
                           "g", "x" * rng.randrange(40)]
            elif op < 0.62:
                command = ["XDEL", "s", *(f"{rng.randrange(ms + 1)}-{rng.randrange(3)}"
                                          for _ in range(3))]
            elif op < 0.64:
                command = ["XTRIM", "s", "MAXLEN", rng.choice(["=", "~"]), str(rng.randrange(400))]
            elif op < 0.66:
                command = ["XGROUP", "CREATE", "s", "g", "0", "MKSTREAM"]
            elif op < 0.72:
                command = ["XREADGROUP", "GROUP", "g", "c", "COUNT", str(rng.choice([3, 30])),
                           "STREAMS", "s", ">"]
            elif op < 0.75:
                command = ["XACK", "s", "g", *(f"{rng.randrange(ms + 1)}-0" for _ in range(4))]
            elif op < 0.85:
                a, b = sorted((rng.randrange(ms + 2), rng.randrange(ms + 2)))
                count = ["COUNT", str(rng.choice([5, 50, 500]))]
                command = (["XRANGE", "s", str(a), str(b), *count] if rng.random() < 0.6
                           else ["XREVRANGE", "s", str(b), str(a), *count])
            elif op < 0.9:
                command = ["XREAD", "COUNT", "100", "STREAMS", "s", f"{rng.randrange(ms + 1)}"]
            elif op < 0.92:
                command = ["XINFO", "STREAM", "s"]
            elif op < 0.93:
                command = ["XPENDING", "s", "g"]  # (the summary: no idle times)
            else:
                time.sleep(0.12)  # (a cron pass: nodes go to disk)
                continue
            replies = [conn.call(*command) for conn in conns]
            if command[:2] == ["XINFO", "STREAM"]:
                continue  # (radix-tree and group idle details are the same; checked below)
            assert replies[0] == replies[1], (step, command)
        assert conns[0].call("XRANGE", "s", "-", "+") == conns[1].call("XRANGE", "s", "-", "+")
        assert conns[0].call("XLEN", "s") == conns[1].call("XLEN", "s")
        assert _wait_cold(conns[0]) > 0
    finally:
        for conn in conns:
            conn.close()


def test_info_restart_damage_and_config_set(tmp_path: Path) -> None:
    # (no reply cache: its encodings of cold nodes would answer without the damaged files)
    args = ["--stream-node-max-entries", "100", "--appendonly", "yes", "--save", "",
            "--stream-reply-cache-max-bytes", "0", "--enable-debug-command", "yes"]
    server = ServerProcess(extra_args=[*args, "--stream-hot-memory", "64kb"],
                           workdir=str(tmp_path)).start()
    try:
        conn = Conn(server)
        for i in range(1, 5001):
            conn.call("XADD", "orders", f"{i}-1", "n", str(i), "pad", "p" * 20)
        cold = _wait_cold(conn, 20)
        assert cold >= 20
        assert _info(conn, "stream_hot_bytes") <= 64 * 1024 + 8192
        assert _info(conn, "stream_cold_disk_bytes") >= _info(conn, "stream_cold_bytes") > 0
        deadline = time.time() + 10
        while True:  # (the cron moves nodes out a pass at a time: until it has settled)
            debug = conn.call("DEBUG", "OBJECT", "orders").decode()
            fields = dict(item.split(":", 1) for item in debug[1:-2].split(" ")[1:])
            if (int(fields["stream_hot_bytes"]) < int(fields["stream_cold_bytes"])
                    or time.time() > deadline):
                break
            time.sleep(0.05)
        assert int(fields["stream_cold_nodes"]) >= 20 and int(fields["stream_cold_bytes"]) > 0
        assert 0 < int(fields["stream_hot_bytes"]) < int(fields["stream_cold_bytes"])
        # MEMORY USAGE: what is in memory (hot nodes, cold nodes' objects), not the cold bytes;
        # read between two DEBUG OBJECTs that agree (the cron may move a node meanwhile).
        for _ in range(100):
            usage = int(conn.call("MEMORY", "USAGE", "orders")[1:-2])
            if conn.call("DEBUG", "OBJECT", "orders").decode() == debug:
                break
            debug = conn.call("DEBUG", "OBJECT", "orders").decode()
            time.sleep(0.05)
        fields = dict(item.split(":", 1) for item in debug[1:-2].split(" ")[1:])
        hot_bytes, cold_bytes = int(fields["stream_hot_bytes"]), int(fields["stream_cold_bytes"])
        # (a cold node's objects are a fraction of its bytes)
        assert hot_bytes < usage < hot_bytes + cold_bytes // 2
        whole = conn.call("XRANGE", "orders", "-", "+")
        assert whole.startswith(b"*5000\r\n") and b"$4\r\n5000\r\n" in whole
        assert _info(conn, "stream_cold_reads") >= cold
        # A damaged segment: the node's range fails, naming the stream; the rest is served.
        time.sleep(0.3)
        _wait_cold(conn, 20)
        cold_dir = tmp_path / "cold"
        for segment in cold_dir.glob("seg-*.cold"):
            segment.write_bytes(b"\xff" * segment.stat().st_size)
        replies = [conn.call("XRANGE", "orders", f"{i}", f"{i}") for i in range(1, 5001, 100)]
        failed = [r for r in replies if r.startswith(b"-")]
        assert failed and failed[0].startswith(b"-ERR cold data of stream 'orders' (entries ")
        assert any(r.startswith(b"*1\r\n") for r in replies)
        # CONFIG SET: a higher limit leaves nodes in memory as they are read back.
        assert conn.call("CONFIG", "SET", "stream-hot-memory", "0") == b"+OK\r\n"
        conn.call("XRANGE", "orders", "4000", "+")
        conn.close()
    finally:
        server.stop()
    # A restart: the AOF (no rewrite yet: commands only) holds every entry; the damaged
    # segments, which nothing refers to, are deleted.
    server = ServerProcess(extra_args=[*args, "--stream-hot-memory", "64kb"],
                           workdir=str(tmp_path), port=server.port).start()
    try:
        conn = Conn(server)
        assert conn.call("XLEN", "orders") == b":5000\r\n"
        assert _wait_cold(conn, 20) >= 20
        assert conn.call("XRANGE", "orders", "4999", "+") == (
            b"*2\r\n*2\r\n$6\r\n4999-1\r\n*4\r\n$1\r\nn\r\n$4\r\n4999\r\n$3\r\npad\r\n$20\r\n"
            + b"p" * 20 + b"\r\n*2\r\n$6\r\n5000-1\r\n*4\r\n$1\r\nn\r\n$4\r\n5000\r\n$3\r\npad\r\n"
            b"$20\r\n" + b"p" * 20 + b"\r\n")
        conn.close()
    finally:
        server.stop()


def test_kill_9_with_appendfsync_always_loses_nothing(tmp_path: Path) -> None:
    args = ["--stream-node-max-entries", "50", "--appendonly", "yes", "--appendfsync", "always",
            "--save", "", "--stream-hot-memory", "16kb"]
    server = ServerProcess(extra_args=args, workdir=str(tmp_path)).start()
    conn = Conn(server)
    for i in range(1, 3001):
        assert conn.call("XADD", "s", f"{i}-1", "n", str(i)) == b"$%d\r\n%d-1\r\n" % (
            len(str(i)) + 2, i)
    assert _wait_cold(conn, 20) >= 20
    conn.call("XRANGE", "s", "-", "+", "COUNT", "100")  # (a cache hit or a read back)
    memory = conn.call("INFO", "memory")
    assert b"stream_cold_cache_hits:" in memory
    conn.close()
    server.stop(kill=True, cleanup=False)
    server = ServerProcess(extra_args=args, workdir=str(tmp_path), port=server.port).start()
    try:
        conn = Conn(server)
        assert conn.call("XLEN", "s") == b":3000\r\n"
        assert conn.call("XRANGE", "s", "2999", "+") == (
            b"*2\r\n*2\r\n$6\r\n2999-1\r\n*2\r\n$1\r\nn\r\n$4\r\n2999\r\n"
            b"*2\r\n$6\r\n3000-1\r\n*2\r\n$1\r\nn\r\n$4\r\n3000\r\n")
        conn.close()
    finally:
        server.stop()


def test_pipelined_xadd_runs_reach_the_aof_while_nodes_go_cold(tmp_path: Path) -> None:
    """Pipelines of `XADD s *` (taken as runs, stream_cmds.xadd_pipelined) into a stream
    whose sealed nodes go to disk between them: every reply an ID above the last, every
    entry read back in order, and all of it back after kill -9 (each XADD reached the AOF
    through the run's propagation)."""
    args = ["--stream-node-max-entries", "50", "--appendonly", "yes", "--appendfsync", "always",
            "--save", "", "--stream-hot-memory", "16kb"]
    server = ServerProcess(extra_args=args, workdir=str(tmp_path)).start()
    conn = Conn(server)
    assert conn.call("XADD", "s", "*", "n", "0", "pad", "first").startswith(b"$")
    ids = []
    for batch in range(30):
        conn.sock.sendall(b"".join(encode("XADD", "s", "*", "n", str(batch * 100 + i),
                                          "pad", "p" * 30) for i in range(1, 101)))
        for _ in range(100):
            reply = conn.read()
            ids.append(tuple(int(part) for part in reply.split(b"\r\n")[1].split(b"-")))
        if batch == 10:
            assert _wait_cold(conn, 10) >= 10  # (the next runs append beside cold nodes)
    assert ids == sorted(set(ids))
    whole = conn.call("XRANGE", "s", "-", "+")
    assert whole.startswith(b"*3001\r\n")
    assert whole.count(b"pad") == 3001 and whole.index(b"$4\r\n2999\r\n") < whole.index(
        b"$4\r\n3000\r\n")
    assert _wait_cold(conn, 40) >= 40
    assert conn.call("XRANGE", "s", "-", "+") == whole  # (read back from the segments)
    conn.close()
    server.stop(kill=True, cleanup=False)
    server = ServerProcess(extra_args=args, workdir=str(tmp_path), port=server.port).start()
    try:
        conn = Conn(server)
        assert conn.call("XRANGE", "s", "-", "+") == whole
        conn.close()
    finally:
        server.stop()
