"""Cold files as durable state: a snapshot a restart loads refers to cold nodes instead of
carrying them, and the restart leaves them on disk; segments a snapshot refers to outlive
the data in memory (a kill -9 after DEL brings the saved stream back); an AOF base with
references survives kill -9 with appendfsync always; a missing segment names the stream
while the rest is served; a replica and redis-cli --rdb are sent every byte (no references);
an AOF of commands moves nodes out as it is replayed."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import ServerProcess, redis_server_path, valkey_server_path
from tests.resp import Conn, encode

ENTRIES = 6000
BASE = ["--stream-node-max-entries", "100", "--stream-hot-memory", "32kb",
        "--enable-debug-command", "yes"]


def _info(conn: Conn, field: str, section: str = "memory") -> int:
    text = conn.call("INFO", section)
    return int(text.split(field.encode() + b":")[1].split(b"\r\n")[0])


def _wait(predicate, timeout: float = 15) -> None:
    deadline = time.time() + timeout
    while not predicate():
        assert time.time() < deadline, "timed out"
        time.sleep(0.05)


def _entry(i: int) -> bytes:
    """XRANGE's RESP2 reply element for entry i-1 of _fill."""
    eid = b"%d-1" % i
    value = b"%d" % i
    return (b"*2\r\n$%d\r\n%s\r\n*4\r\n$1\r\nn\r\n$%d\r\n%s\r\n$3\r\npad\r\n$40\r\n%s\r\n"
            % (len(eid), eid, len(value), value, b"p" * 40))


def _pipeline(conn: Conn, commands: list[list[str]]) -> None:
    conn.sock.sendall(b"".join(encode(*argv) for argv in commands))
    for _ in commands:
        assert not conn.read().startswith(b"-")


def _fill(conn: Conn, key: str = "orders", n: int = ENTRIES) -> None:
    for start in range(1, n + 1, 500):
        _pipeline(conn, [["XADD", key, f"{i}-1", "n", str(i), "pad", "p" * 40]
                         for i in range(start, min(n, start + 499) + 1)])


def _settle_cold(conn: Conn, at_least: int) -> int:
    """Wait until the cron has moved nodes out and stopped (the count holds still)."""
    _wait(lambda: _info(conn, "stream_cold_nodes") >= at_least)
    last = -1
    while True:
        time.sleep(0.3)
        cold = _info(conn, "stream_cold_nodes")
        if cold == last:
            return cold
        last = cold


def _whole(n: int = ENTRIES) -> bytes:
    return b"*%d\r\n" % n + b"".join(_entry(i) for i in range(1, n + 1))


def _segments(workdir: Path) -> set[str]:
    return {p.name for p in (workdir / "cold").glob("seg-*.cold")}


def _start_filled(tmp_path: Path, args: list[str]) -> tuple[ServerProcess, Conn]:
    """A server on tmp_path with ENTRIES entries in "orders", once the cron has moved the
    nodes out."""
    server = ServerProcess(extra_args=args, workdir=str(tmp_path)).start()
    conn = Conn(server)
    _fill(conn)
    _settle_cold(conn, 40)
    return server, conn


def _restart(server: ServerProcess, args: list[str], tmp_path: Path) -> ServerProcess:
    """The same server started again on its directory and port."""
    return ServerProcess(extra_args=args, workdir=str(tmp_path), port=server.port).start()


def _kill_and_restart(server: ServerProcess, conn: Conn, args: list[str],
                      tmp_path: Path) -> ServerProcess:
    """kill -9 (its files stay as they are), then _restart."""
    conn.close()
    server.stop(kill=True, cleanup=False)
    return _restart(server, args, tmp_path)


def test_a_snapshot_refers_to_cold_nodes_and_a_restart_leaves_them_on_disk(
        tmp_path: Path) -> None:
    args = [*BASE, "--appendonly", "no", "--save", ""]
    server = ServerProcess(extra_args=args, workdir=str(tmp_path)).start()
    try:
        conn = Conn(server)
        _fill(conn)
        conn.call("XGROUP", "CREATE", "orders", "g", "0")
        conn.call("XREADGROUP", "GROUP", "g", "alice", "COUNT", "700", "STREAMS", "orders", ">")
        conn.call("XADD", "audit", "1-1", "n", "1")  # (one node, the tail: stays in memory)
        cold = _settle_cold(conn, 40)
        cold_bytes = _info(conn, "stream_cold_bytes")
        assert conn.call("SAVE") == b"+OK\r\n"
        pending = conn.call("XPENDING", "orders", "g")
        conn.close()
    finally:
        server.stop()
    # The file does not carry the cold nodes' bytes.
    assert (tmp_path / "dump.rdb").stat().st_size < ENTRIES * 60 - cold_bytes // 2
    saved_segments = _segments(tmp_path)
    assert saved_segments

    server = _restart(server, args, tmp_path)
    try:
        conn = Conn(server)
        # Loaded cold: nothing was read back, and nothing it refers to was deleted.
        assert _info(conn, "stream_cold_nodes") == cold
        assert _info(conn, "stream_cold_reads") == 0
        assert _segments(tmp_path) >= saved_segments
        assert conn.call("XLEN", "orders") == b":%d\r\n" % ENTRIES
        assert conn.call("XPENDING", "orders", "g") == pending
        assert conn.call("XRANGE", "orders", "-", "+") == _whole()
        assert conn.call("XRANGE", "audit", "-", "+") == b"*1\r\n" + (
            b"*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nn\r\n$1\r\n1\r\n")
        # DEBUG RELOAD goes through the same files.
        assert conn.call("DEBUG", "RELOAD") == b"+OK\r\n"
        assert conn.call("XRANGE", "orders", "-", "+") == _whole()
        conn.close()
    finally:
        server.stop()


def test_segments_a_snapshot_refers_to_outlive_the_data(tmp_path: Path) -> None:
    args = [*BASE, "--appendonly", "no", "--save", ""]
    server, conn = _start_filled(tmp_path, args)
    assert conn.call("SAVE") == b"+OK\r\n"
    saved_segments = _segments(tmp_path)
    assert conn.call("DEL", "orders") == b":1\r\n"
    assert _info(conn, "stream_cold_nodes") == 0
    assert _segments(tmp_path) >= saved_segments  # (dump.rdb refers to them)
    server = _kill_and_restart(server, conn, args, tmp_path)
    try:
        conn = Conn(server)
        assert conn.call("XRANGE", "orders", "-", "+") == _whole()
        # Once no file refers to them, they go.
        assert conn.call("DEL", "orders") == b":1\r\n"
        assert conn.call("SAVE") == b"+OK\r\n"
        _wait(lambda: not _segments(tmp_path) & saved_segments)
        assert _info(conn, "stream_cold_disk_bytes") == 0
        conn.close()
    finally:
        server.stop()


def test_an_aof_base_with_references_survives_kill_9(tmp_path: Path) -> None:
    args = [*BASE, "--appendonly", "yes", "--appendfsync", "always", "--save", ""]
    server, conn = _start_filled(tmp_path, args)
    assert conn.call("BGREWRITEAOF").startswith(b"+Background append only file rewriting")
    _wait(lambda: _info(conn, "aof_rewrite_in_progress", "persistence") == 0
          and _info(conn, "aof_rewrites", "persistence") >= 1)
    base = next((tmp_path / "appendonlydir").glob("*.base.rdb"))
    assert base.stat().st_size < ENTRIES * 30  # (references, not the entries)
    # After the rewrite: more entries, and a deletion in a cold node.
    _pipeline(conn, [["XADD", "orders", f"{i}-1", "n", str(i), "pad", "p" * 40]
                     for i in range(ENTRIES + 1, ENTRIES + 301)])
    assert conn.call("XDEL", "orders", "10-1") == b":1\r\n"
    server = _kill_and_restart(server, conn, args, tmp_path)
    try:
        conn = Conn(server)
        assert _info(conn, "stream_cold_nodes") > 20
        n = ENTRIES + 300
        expected = b"*%d\r\n" % (n - 1) + b"".join(_entry(i) for i in range(1, n + 1) if i != 10)
        assert conn.call("XRANGE", "orders", "-", "+") == expected
        conn.close()
    finally:
        server.stop()


def test_a_missing_segment_names_the_stream_and_the_server_starts(tmp_path: Path) -> None:
    args = [*BASE, "--appendonly", "no", "--save", "", "--stream-reply-cache-max-bytes", "0"]
    server, conn = _start_filled(tmp_path, args)
    _fill(conn, "audit", 50)  # (one node, the tail: stays in memory)
    assert conn.call("SAVE") == b"+OK\r\n"
    conn.close()
    server.stop()
    for name in _segments(tmp_path):
        (tmp_path / "cold" / name).unlink()

    server = _restart(server, args, tmp_path)
    try:
        conn = Conn(server)
        assert conn.call("XLEN", "orders") == b":%d\r\n" % ENTRIES
        reply = conn.call("XRANGE", "orders", "-", "+")
        assert reply.startswith(b"-ERR cold data of stream 'orders' (entries 1-1 to ")
        assert b"segment" in reply
        assert conn.call("XRANGE", "orders", f"{ENTRIES}", "+") == b"*1\r\n" + _entry(ENTRIES)
        assert conn.call("XRANGE", "audit", "-", "+") == _whole(50)
        conn.close()
    finally:
        server.stop()


@pytest.mark.skipif(valkey_server_path() is None or shutil.which("redis-cli") is None,
                    reason="valkey-server (the dev extra) and redis-cli")
@pytest.mark.parametrize("diskless", ["yes", "no"])
def test_a_replica_is_sent_the_cold_bytes(tmp_path: Path, diskless: str) -> None:
    args = [*BASE, "--appendonly", "no", "--save", "", "--repl-diskless-sync", diskless,
            "--repl-diskless-sync-delay", "0"]
    with ServerProcess(extra_args=args, workdir=str(tmp_path)) as primary, \
            ServerProcess(kind="valkey") as replica:
        conn = Conn(primary)
        _fill(conn)
        _settle_cold(conn, 40)
        rconn = Conn(replica)
        rconn.call("REPLICAOF", "127.0.0.1", str(primary.port))
        _wait(lambda: b"master_link_status:up" in rconn.call("INFO", "replication"))
        _wait(lambda: rconn.call("XLEN", "orders") == b":%d\r\n" % ENTRIES)
        assert rconn.call("XRANGE", "orders", "-", "+") == _whole()
        assert _info(conn, "stream_cold_nodes") > 20  # (sent from the files, left cold)
        rconn.close()
        # redis-cli --rdb (a full sync too) saves a file Redis 7.0 loads.
        peer_dir = tmp_path / "peer"
        peer_dir.mkdir()
        done = subprocess.run(["redis-cli", "-p", str(primary.port), "--rdb",
                               str(peer_dir / "dump.rdb")], capture_output=True, timeout=60)
        assert done.returncode == 0, done
        conn.close()
    if redis_server_path() is None:
        return
    with ServerProcess(kind="redis", extra_args=["--dbfilename", "dump.rdb"],
                       workdir=str(peer_dir)) as peer:
        pconn = Conn(peer)
        assert pconn.call("XRANGE", "orders", "-", "+") == _whole()
        pconn.close()


def test_an_aof_of_commands_moves_nodes_out_while_it_is_replayed(tmp_path: Path) -> None:
    args = [*BASE, "--appendonly", "yes", "--save", "", "--auto-aof-rewrite-percentage", "0",
            "--loading-process-events-interval-bytes", "64kb"]
    server = ServerProcess(extra_args=args, workdir=str(tmp_path)).start()
    conn = Conn(server)
    _fill(conn)
    conn.close()
    server.stop()
    server = _restart(server, args, tmp_path)
    try:
        conn = Conn(server)
        _wait(lambda: "bytes of stream nodes moved to disk while loading" in server.read_log())
        assert conn.call("XRANGE", "orders", "-", "+") == _whole()
        conn.close()
    finally:
        server.stop()


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs prlimit (util-linux)")
def test_a_full_disk_refuses_writes_and_loses_nothing(tmp_path: Path) -> None:
    # The server's files may not grow past 200 kB (RLIMIT_FSIZE; Python ignores SIGXFSZ, so a
    # write past it fails as on a full disk): the first segment fills up.
    wrapper = tmp_path / "python-fsize"
    wrapper.write_text(f"#!/bin/sh\nexec prlimit --fsize=200000 {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    workdir = tmp_path / "data"
    workdir.mkdir()
    args = [*BASE, "--appendonly", "no", "--save", ""]
    with ServerProcess(extra_args=args, workdir=str(workdir), python=str(wrapper)) as server:
        conn = Conn(server)
        refused = b""
        for i in range(1, 20001):
            reply = conn.call("XADD", "orders", f"{i}-1", "n", str(i), "pad", "p" * 40)
            if reply.startswith(b"-"):
                refused = reply
                break
            if i % 500 == 0:
                time.sleep(0.15)  # (a cron pass: nodes go out, until the file is full)
        assert refused.startswith(b"-OOM command not allowed when stream-hot-memory is exceeded "
                                  b"and stream nodes cannot be written to disk: "), refused
        added = i - 1
        assert "Cannot move stream nodes to disk" in server.read_log()
        # Nothing acknowledged is lost, and deleting still works.
        assert conn.call("XLEN", "orders") == b":%d\r\n" % added
        assert conn.call("XRANGE", "orders", "-", "+") == _whole(added)
        assert conn.call("XTRIM", "orders", "MAXLEN", "0").startswith(b":")
        _wait(lambda: conn.call("XADD", "orders", "*", "n", "1").startswith(b"$"))
        conn.close()


def test_a_removed_snapshot_unpins_its_segments_and_a_new_dir_gets_every_byte(
        tmp_path: Path) -> None:
    args = [*BASE, "--appendonly", "no", "--save", ""]
    server, conn = _start_filled(tmp_path, args)
    assert conn.call("SAVE") == b"+OK\r\n"
    conn.close()
    server.stop()
    (tmp_path / "dump.rdb").unlink()  # (nothing refers to the segments any more)
    server = _restart(server, args, tmp_path)
    try:
        conn = Conn(server)
        _wait(lambda: not _segments(tmp_path))
        _fill(conn)
        _settle_cold(conn, 40)
        # Saved into another dir: the file carries the cold bytes (a restart there has no
        # cold/ of this one).
        other = tmp_path / "other"
        other.mkdir()
        assert conn.call("CONFIG", "SET", "dir", str(other)) == b"+OK\r\n"
        assert conn.call("SAVE") == b"+OK\r\n"
        conn.close()
    finally:
        server.stop()
    with ServerProcess(extra_args=[*args, "--stream-hot-memory", "0"],
                       workdir=str(other)) as again:
        conn = Conn(again)
        assert conn.call("XRANGE", "orders", "-", "+") == _whole()
        conn.close()


def test_bgsave_refers_to_cold_nodes_and_pins_them(tmp_path: Path) -> None:
    args = [*BASE, "--appendonly", "no", "--save", ""]
    server, conn = _start_filled(tmp_path, args)
    assert conn.call("BGSAVE") == b"+Background saving started\r\n"
    _wait(lambda: _info(conn, "rdb_bgsave_in_progress", "persistence") == 0)
    assert b"rdb_last_bgsave_status:ok" in conn.call("INFO", "persistence")
    pins = (tmp_path / "cold" / "PINS").read_text()
    assert '"rdb": [' in pins
    saved = _segments(tmp_path)
    conn.call("XTRIM", "orders", "MAXLEN", "0")  # (the nodes go; the file still refers to them)
    assert _segments(tmp_path) >= saved
    server = _kill_and_restart(server, conn, args, tmp_path)
    try:
        conn = Conn(server)
        assert conn.call("XRANGE", "orders", "-", "+") == _whole()
        conn.close()
    finally:
        server.stop()
