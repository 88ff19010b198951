"""A disk that fills up: AOF write errors turn writes into MISCONF errors (reads keep working),
`appendfsync always` holds back the replies of writes that did not reach the disk, and
everything recovers when space returns. On a real 1 MB tmpfs when this process may mount one,
otherwise (and always as well) with DEBUG AOF-WRITE-ERROR, which makes the writes fail."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import threading
from collections.abc import Iterator

import pytest
import redis

from tests.integration.test_persistence_support import (
    connect,
    files_and_restarts,
    info,
    start,
    started,
    wait_for,
)

pytestmark = files_and_restarts

MISCONF = "MISCONF Errors writing to the AOF file: No space left on device"


@contextlib.contextmanager
def small_disk(path: str) -> Iterator[str]:
    os.makedirs(path, exist_ok=True)
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", path], check=True,
                       capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        pytest.skip("cannot mount a tmpfs here (needs root); the DEBUG hook tests cover this")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", path], capture_output=True, timeout=10)


def _fill(directory: str) -> str:
    """Take every free byte of the file system; returns the filler's path."""
    filler = os.path.join(directory, "filler")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        chunk = 1 << 16
        while chunk:
            try:
                os.write(fd, b"\0" * chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                chunk //= 2
    finally:
        os.close(fd)
    return filler


def _write_until_misconf(r: redis.Redis) -> list[bytes]:
    """XADD until the server refuses; returns the IDs it acknowledged."""
    ids = []
    for i in range(10_000):
        try:
            ids.append(r.xadd("s", {"i": i, "pad": "x" * 200}))
        except redis.ResponseError as exc:
            assert str(exc) == MISCONF
            return ids
    raise AssertionError("the disk never filled up")


def test_disk_full_everysec_refuses_writes_then_recovers(tmp_path) -> None:
    with small_disk(str(tmp_path / "mnt")) as disk:
        with started(disk) as proc:
            r = connect(proc)
            r.set("before", "1")
            filler = _fill(disk)
            ids = _write_until_misconf(r)
            i = info(r)
            assert i["aof_last_write_status"] == "err"
            assert r.get("before") == b"1" and r.xlen("s") == len(ids)  # reads work
            with pytest.raises(redis.ResponseError, match="MISCONF"):
                r.set("during", "1")
            os.unlink(filler)
            wait_for(lambda: info(r)["aof_last_write_status"] == "ok", what="recovery")
            assert r.set("after", "1")
        with started(disk) as proc:
            r = connect(proc)
            assert [e[0] for e in r.xrange("s")] == ids  # every acknowledged write is there
            assert r.get("after") == b"1" and r.get("during") is None


def test_disk_full_always_holds_the_reply_until_the_write_is_on_disk(tmp_path) -> None:
    with small_disk(str(tmp_path / "mnt")) as disk:
        proc = start(disk, "--appendfsync", "always")
        try:
            r = connect(proc)
            filler = _fill(disk)
            held: dict[str, object] = {}
            writer = connect(proc)

            def write() -> None:
                held["id"] = writer.xadd("s", {"big": "x" * 5000})

            t = threading.Thread(target=write)
            t.start()
            wait_for(lambda: info(r)["aof_last_write_status"] == "err", what="the write error")
            t.join(0.5)
            assert t.is_alive() and "id" not in held  # no reply for a write not on disk
            with pytest.raises(redis.ResponseError, match="MISCONF"):
                r.set("other", "1")
            assert r.get("other") is None  # other clients are served (reads work)
            os.unlink(filler)
            t.join(20)
            assert isinstance(held.get("id"), bytes)
            assert info(r)["aof_last_write_status"] == "ok"
        finally:
            proc.stop(kill=True)
        with started(disk) as proc:
            assert [e[0] for e in connect(proc).xrange("s")] == [held["id"]]


def test_write_errors_via_debug_hook_everysec(tmp_path) -> None:
    workdir = str(tmp_path)
    proc = start(workdir)
    try:
        r = connect(proc)
        r.set("a", "1")
        r.execute_command("DEBUG", "AOF-WRITE-ERROR", errno.ENOSPC)
        assert r.set("b", "2")  # everysec: answered, kept in the buffer, at risk like 1 s
        wait_for(lambda: info(r)["aof_last_write_status"] == "err", what="the error")
        with pytest.raises(redis.ResponseError) as err:
            r.set("c", "3")
        assert str(err.value) == MISCONF
        with pytest.raises(redis.ResponseError) as err:
            r.ping()  # Redis answers health checks with the persistence error too
        assert str(err.value) == MISCONF
        assert r.get("b") == b"2"
        assert info(r)["aof_buffer_length"] > 0
        r.execute_command("DEBUG", "AOF-WRITE-ERROR", 0)
        wait_for(lambda: info(r)["aof_last_write_status"] == "ok", what="recovery")
        assert info(r)["aof_buffer_length"] == 0
        assert r.set("d", "4")
        assert "AOF write error looks solved" in proc.read_log()
    finally:
        proc.stop(kill=True)
    with started(workdir) as proc:
        r = connect(proc)
        assert [r.get(k) for k in "abcd"] == [b"1", b"2", None, b"4"]


def test_write_errors_via_debug_hook_always_hold_replies(tmp_path) -> None:
    workdir = str(tmp_path)
    proc = start(workdir, "--appendfsync", "always")
    try:
        r = connect(proc)
        other = connect(proc)
        r.execute_command("DEBUG", "AOF-WRITE-ERROR", errno.EIO)
        result: dict[str, object] = {}
        t = threading.Thread(target=lambda: result.update(reply=r.set("held", "1")))
        t.start()
        wait_for(lambda: info(other)["aof_last_write_status"] == "err", what="the error")
        t.join(0.5)
        assert t.is_alive()
        with pytest.raises(redis.ResponseError, match="MISCONF Errors writing to the AOF file: "
                           "Input/output error"):
            other.set("x", "1")
        assert other.get("held") == b"1"  # in memory, not yet confirmed to its writer
        other.execute_command("DEBUG", "AOF-WRITE-ERROR", 0)
        t.join(20)
        assert result.get("reply") is True
    finally:
        proc.stop(kill=True)
    with started(workdir) as proc:
        assert connect(proc).get("held") == b"1"


def _xadd_pipeline(r: redis.Redis, n: int, tag: str) -> list[object]:
    """n `XADD s * ...` in one pipeline (the server takes them as one run), errors as values."""
    pipe = r.pipeline(transaction=False)
    for i in range(n):
        pipe.xadd("s", {"tag": tag, "i": i})
    return pipe.execute(raise_on_error=False)


def test_pipelined_xadd_runs_with_the_aof(tmp_path) -> None:
    """A pipeline of XADDs to one stream, taken as a run with the AOF on: every entry reaches
    the file; while AOF writes fail, every XADD of the run gets MISCONF and adds nothing;
    with appendfsync always the run's replies wait until its entries are written."""
    workdir = str(tmp_path)
    proc = start(workdir)
    try:
        r = connect(proc)
        r.xadd("s", {"tag": "first"})
        kept = _xadd_pipeline(r, 300, "ok")
        assert all(isinstance(reply, bytes) for reply in kept)
        r.execute_command("DEBUG", "AOF-WRITE-ERROR", errno.ENOSPC)
        r.set("b", "2")  # everysec: answered, the error found when the buffer is written
        wait_for(lambda: info(r)["aof_last_write_status"] == "err", what="the error")
        refused = _xadd_pipeline(r, 50, "refused")
        assert [str(reply) for reply in refused] == [MISCONF] * 50
        assert r.xlen("s") == 301
        r.execute_command("DEBUG", "AOF-WRITE-ERROR", 0)
        wait_for(lambda: info(r)["aof_last_write_status"] == "ok", what="recovery")
        kept += _xadd_pipeline(r, 100, "after")
    finally:
        proc.stop(kill=True)
    with started(workdir) as proc:
        r = connect(proc)
        assert [e[0] for e in r.xrange("s")][1:] == kept
    proc = start(workdir, "--appendfsync", "always")
    try:
        r = connect(proc)
        other = connect(proc)
        r.execute_command("DEBUG", "AOF-WRITE-ERROR", errno.EIO)
        result: dict[str, list[object]] = {}
        t = threading.Thread(target=lambda: result.update(replies=_xadd_pipeline(r, 20, "held")))
        t.start()
        wait_for(lambda: info(other)["aof_last_write_status"] == "err", what="the error")
        t.join(0.5)
        assert t.is_alive()  # no reply for entries not on disk
        assert other.xlen("s") == 421  # in memory, not yet confirmed to their writer
        other.execute_command("DEBUG", "AOF-WRITE-ERROR", 0)
        t.join(20)
        held = result["replies"]
        assert len(held) == 20 and all(isinstance(reply, bytes) for reply in held)
    finally:
        proc.stop(kill=True)
    with started(workdir) as proc:
        assert [e[0] for e in connect(proc).xrange("s")][-20:] == held
