"""Crashes and damaged files, with real processes: kill -9 under a write load with
appendfsync always, kill -9 in the middle of a rewrite (parent and child), leftovers of a
crashed rewrite, truncated and corrupted AOF files, a damaged snapshot."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import redis

from tests.helpers import REPO_ROOT, free_port
from tests.integration.test_persistence_support import (
    children,
    connect,
    files_and_restarts,
    files_in,
    info,
    start,
    started,
    wait_for,
    wait_idle,
)

pytestmark = files_and_restarts

INCR1 = os.path.join("appendonlydir", "appendonly.aof.1.incr.aof")


def _run_to_exit(workdir: str, *args: str) -> tuple[int, str]:
    """Start the server expecting it to refuse to start; (exit code, output)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, "-m", "server", "--port", str(free_port()), "--dir", workdir,
         "--save", "", *args],
        capture_output=True, timeout=60, env=env, cwd=workdir)
    return done.returncode, (done.stdout + done.stderr).decode(errors="replace")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _append(path: str, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


# -- kill -9 under load -------------------------------------------------------------------------
def test_kill9_under_load_loses_nothing_that_was_acknowledged(tmp_path) -> None:
    workdir = str(tmp_path)
    proc = start(workdir, "--appendfsync", "always")
    setup = connect(proc)
    setup.xgroup_create("s", "g", "$", mkstream=True)
    added: list[bytes] = []
    acked: list[bytes] = []
    delivered: list[bytes] = []
    ack_sent: list[bytes] = []  # XACK sent, answer maybe lost in the crash
    stop = threading.Event()

    def producer(batch: int) -> None:
        r = connect(proc)
        try:
            while not stop.is_set():
                if batch == 1:
                    added.append(r.xadd("s", {"n": "1"}))
                else:  # pipelined: many commands in one event-loop batch (group commit)
                    pipe = r.pipeline(transaction=False)
                    for _ in range(batch):
                        pipe.xadd("s", {"n": "x" * 30})
                    added.extend(pipe.execute())
        except (redis.ConnectionError, redis.TimeoutError):
            pass

    def consumer(name: str) -> None:
        r = connect(proc)
        try:
            while not stop.is_set():
                got = r.xreadgroup("g", name, {"s": ">"}, count=20)
                ids = [eid for _, entries in got for eid, _ in entries]
                delivered.extend(ids)
                if ids:
                    half = ids[: len(ids) // 2 + 1]
                    ack_sent.extend(half)
                    r.xack("s", "g", *half)
                    acked.extend(half)  # only once XACK answered
        except (redis.ConnectionError, redis.TimeoutError):
            pass

    threads = [threading.Thread(target=producer, args=(1,)),
               threading.Thread(target=producer, args=(50,)),
               threading.Thread(target=consumer, args=("c1",)),
               threading.Thread(target=consumer, args=("c2",))]
    for t in threads:
        t.start()
    wait_for(lambda: len(added) > 800 and len(acked) > 100, timeout=60, what="some load")
    proc.proc.send_signal(signal.SIGKILL)  # in the middle of the load
    proc.proc.wait()
    stop.set()
    for t in threads:
        t.join(30)
    with started(workdir) as proc:
        r = connect(proc)
        present = {eid for eid, _ in r.xrange("s")}
        missing = [eid for eid in added if eid not in present]
        assert not missing, f"{len(missing)} acknowledged XADDs lost"
        pending = {p["message_id"] for p in r.xpending_range("s", "g", "-", "+", 10**6)}
        assert not pending & set(acked), "XACK'd entries came back as pending"
        # what was delivered (the reply came back) and never acked is still pending
        assert set(delivered) - set(ack_sent) <= pending


# -- kill -9 during a rewrite -------------------------------------------------------------------
def _fill(r: redis.Redis, n: int) -> None:
    pipe = r.pipeline(transaction=False)
    for i in range(n):
        pipe.set(f"k{i}", i)
    pipe.xadd("s", {"a": "1"}, id="1-1")
    pipe.xadd("s", {"a": "2"}, id="1-2")
    pipe.xgroup_create("s", "g", "0")
    pipe.execute()
    r.xreadgroup("g", "alice", {"s": ">"}, count=1)


def test_kill9_of_the_server_during_a_rewrite(tmp_path) -> None:
    workdir = str(tmp_path)
    with started(workdir, "--rdb-key-save-delay", "30000") as proc:  # 30 ms per key: a slow rewrite
        r = connect(proc)
        _fill(r, 60)
        r.bgrewriteaof()
        wait_for(lambda: children(proc.proc.pid), what="the rewrite child")
        child = children(proc.proc.pid)[0]
        r.set("during", "1")  # written while the child runs: goes to the new incr file
        r.xadd("s", {"a": "3"}, id="1-3")
        assert info(r)["aof_rewrite_in_progress"] == 1
        proc.proc.send_signal(signal.SIGKILL)
        proc.proc.wait()
        wait_for(lambda: not _alive(child), what="the orphaned child to die with its parent")
        names = files_in(os.path.join(workdir, "appendonlydir"))
        assert any(n.startswith("temp-rewriteaof-bg-") for n in names)
    with started(workdir) as proc:
        r = connect(proc)
        assert r.get("k59") == b"59" and r.get("during") == b"1"
        assert [e[0] for e in r.xrange("s")] == [b"1-1", b"1-2", b"1-3"]
        assert r.xpending("s", "g")["pending"] == 1
        names = files_in(os.path.join(workdir, "appendonlydir"))
        assert not [n for n in names if n.startswith("temp-")]  # leftovers cleaned up
        assert r.bgrewriteaof()
        wait_idle(r)
        assert info(r)["aof_last_bgrewrite_status"] == "ok"
    with started(workdir) as proc:
        assert connect(proc).get("during") == b"1"


def test_killed_rewrite_child_is_a_failed_rewrite_not_an_outage(tmp_path) -> None:
    workdir = str(tmp_path)
    with started(workdir, "--rdb-key-save-delay", "30000") as proc:
        r = connect(proc)
        _fill(r, 40)
        r.bgrewriteaof()
        wait_for(lambda: children(proc.proc.pid), what="the rewrite child")
        os.kill(children(proc.proc.pid)[0], signal.SIGKILL)
        wait_for(lambda: info(r)["aof_rewrite_in_progress"] == 0, what="the parent to notice")
        i = info(r)
        assert i["aof_last_bgrewrite_status"] == "err"
        assert i["aof_rewrites_consecutive_failures"] == 1
        r.set("after", "1")
        assert not [n for n in files_in(os.path.join(workdir, "appendonlydir"))
                    if n.startswith("temp-")]
        r.config_set("rdb-key-save-delay", "0")
        r.bgrewriteaof()
        wait_idle(r)
        assert info(r)["aof_last_bgrewrite_status"] == "ok"
    with started(workdir) as proc:
        r = connect(proc)
        assert r.get("k39") == b"39" and r.get("after") == b"1"


def test_leftovers_of_a_crashed_rewrite_are_ignored_and_removed(tmp_path) -> None:
    workdir = str(tmp_path)
    with started(workdir) as proc:
        connect(proc).set("k", "v")
    aof_dir = os.path.join(workdir, "appendonlydir")
    # a child's half-written file, a base renamed but never listed, a half-written manifest
    for name, data in (("temp-rewriteaof-bg-4242.aof", b"*3\r\n$3\r\nSET"),
                       ("appendonly.aof.7.base.aof", b"*1\r\n$8\r\nFLUSHALL\r\n"),
                       ("temp-appendonly.aof.manifest", b"file x seq")):
        with open(os.path.join(aof_dir, name), "wb") as fh:
            fh.write(data)
    with started(workdir) as proc:
        assert connect(proc).get("k") == b"v"
        assert files_in(aof_dir) == ["appendonly.aof.1.base.rdb", "appendonly.aof.1.incr.aof",
                                     "appendonly.aof.manifest"]


# -- damaged files ------------------------------------------------------------------------------
def _one_incr(workdir: str) -> str:
    with started(workdir) as proc:
        r = connect(proc)
        r.set("a", "1")
        r.xadd("s", {"f": "v"}, id="1-1")
        r.set("b", "2")
    return os.path.join(workdir, INCR1)


def test_truncated_last_command_is_dropped_with_a_warning(tmp_path) -> None:
    workdir = str(tmp_path)
    incr = _one_incr(workdir)
    size = os.path.getsize(incr)
    _append(incr, b"*3\r\n$3\r\nSET\r\n$1\r\nc\r\n$5\r\nhal")
    with started(workdir) as proc:
        r = connect(proc)
        assert r.get("b") == b"2" and r.get("c") is None
        assert "short read" in proc.read_log()
        assert os.path.getsize(incr) == size  # cut back to the last complete command
        r.set("d", "4")
    with started(workdir) as proc:
        r = connect(proc)
        assert r.get("d") == b"4" and r.get("a") == b"1"


def test_unfinished_transaction_at_the_end_is_dropped(tmp_path) -> None:
    workdir = str(tmp_path)
    incr = _one_incr(workdir)
    size = os.path.getsize(incr)
    _append(incr, b"*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$1\r\nz\r\n$1\r\n1\r\n")
    with started(workdir) as proc:
        assert connect(proc).get("z") is None
        assert os.path.getsize(incr) == size


def test_truncated_file_refused_when_aof_load_truncated_is_no(tmp_path) -> None:
    workdir = str(tmp_path)
    incr = _one_incr(workdir)
    size = os.path.getsize(incr)
    _append(incr, b"*2\r\n$3\r\nDEL")
    code, out = _run_to_exit(workdir, "--aof-load-truncated", "no")
    assert code == 1
    assert f"offset {size}" in out and "appendonly.aof.1.incr.aof" in out


def test_corruption_in_the_middle_stops_the_start_with_the_offset(tmp_path) -> None:
    workdir = str(tmp_path)
    incr = _one_incr(workdir)
    with open(incr, "rb") as fh:
        data = fh.read()
    at = data.index(b"*5\r\n$4\r\nXADD")
    damaged = data[:at] + b"?" + data[at + 1:]
    with open(incr, "wb") as fh:
        fh.write(damaged)
    code, out = _run_to_exit(workdir)
    assert code == 1
    assert "Bad file format" in out and f"offset {at}" in out
    # the file is left as it was for the operator to inspect
    with open(incr, "rb") as fh:
        assert fh.read() == damaged


def test_unknown_command_in_the_file_stops_the_start(tmp_path) -> None:
    workdir = str(tmp_path)
    incr = _one_incr(workdir)
    size = os.path.getsize(incr)
    _append(incr, b"*1\r\n$7\r\nNOTACMD\r\n*3\r\n$3\r\nSET\r\n$1\r\nq\r\n$1\r\n1\r\n")
    code, out = _run_to_exit(workdir)
    assert code == 1
    assert "Unknown command 'NOTACMD'" in out and f"offset {size}" in out


@pytest.mark.parametrize("preamble", ["no", "yes"])
def test_truncated_base_is_not_tolerated(tmp_path, preamble: str) -> None:
    """Only the last file may end short; a damaged base stops the start, whether it holds
    commands or an RDB file (aof-use-rdb-preamble)."""
    workdir = str(tmp_path)
    with started(workdir, "--aof-use-rdb-preamble", preamble) as proc:
        r = connect(proc)
        r.set("a", "1")
        r.bgrewriteaof()
        wait_idle(r)
        r.set("b", "1")
    name = "appendonly.aof.2.base." + ("rdb" if preamble == "yes" else "aof")
    base = os.path.join(workdir, "appendonlydir", name)
    with open(base, "rb") as fh:
        data = fh.read()
    with open(base, "wb") as fh:
        fh.write(data[:-3])
    code, out = _run_to_exit(workdir)
    assert code == 1
    reason = "only the last file" if preamble == "no" else "unexpected end of file"
    assert name in out and reason in out


def test_missing_file_listed_in_the_manifest(tmp_path) -> None:
    workdir = str(tmp_path)
    incr = _one_incr(workdir)
    os.unlink(incr)
    code, out = _run_to_exit(workdir)
    assert code == 1 and "doesn't exist" in out


def test_damaged_snapshot_stops_the_start(tmp_path) -> None:
    workdir = str(tmp_path)
    with started(workdir, "--appendonly", "no") as proc:
        r = connect(proc)
        r.xadd("s", {"f": "v" * 100})
        assert r.save()
    path = os.path.join(workdir, "dump.rdb")
    with open(path, "r+b") as fh:
        fh.seek(os.path.getsize(path) // 2)
        byte = fh.read(1)
        fh.seek(-1, os.SEEK_CUR)
        fh.write(bytes([byte[0] ^ 0xFF]))
    code, out = _run_to_exit(workdir, "--appendonly", "no")
    assert code == 1 and "checksum" in out
    time.sleep(0)  # keep the file for inspection: nothing overwrote it
    assert os.path.exists(path)
