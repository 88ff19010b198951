"""Snapshots with real processes: SAVE, BGSAVE, LASTSAVE, DEBUG RELOAD, save rules, SHUTDOWN,
loading at start (and seeding a new AOF from it), children running one at a time with Redis's
replies, MISCONF after a failed BGSAVE."""

from __future__ import annotations

import os
import time

import pytest
import redis

from tests.helpers import ServerProcess, redis_server_path
from tests.integration.ops_helpers import call
from tests.integration.ops_helpers import connect as raw_connect
from tests.integration.test_persistence_support import (
    History,
    children,
    connect,
    dump_state,
    files_and_restarts,
    info,
    start,
    started,
    wait_for,
    wait_idle,
)

pytestmark = files_and_restarts


def test_save_and_restart_from_the_snapshot_is_exact(tmp_path) -> None:
    workdir = str(tmp_path)
    with started(workdir, "--appendonly", "no") as proc:
        History(21).run(proc, 500)
        r = connect(proc)
        before_save = r.lastsave()
        time.sleep(1.05)  # LASTSAVE has a one-second resolution
        assert r.save() is True
        assert r.lastsave() > before_save
        assert info(r)["rdb_changes_since_last_save"] == 0
        state = dump_state(proc)  # seen-time, active-time and node layout included
    assert os.path.exists(os.path.join(workdir, "dump.rdb"))
    with started(workdir, "--appendonly", "no") as proc:
        assert dump_state(proc) == state
        assert info(connect(proc))["rdb_last_load_keys_loaded"] > 0


def test_debug_reload_keeps_everything(tmp_path) -> None:
    with started(str(tmp_path)) as proc:
        History(22).run(proc, 500)
        before = dump_state(proc)
        r = connect(proc)
        assert r.execute_command("DEBUG", "RELOAD") == b"OK"
        assert dump_state(proc) == before
        r.xadd("s1", {"after": "reload"})  # the reloaded streams take writes
        assert r.execute_command("DEBUG", "RELOAD", "NOSAVE") == b"OK"
        assert b"after" not in str(r.xrevrange("s1", count=1)).encode()


def test_bgsave_in_a_child(tmp_path) -> None:
    workdir = str(tmp_path)
    with started(workdir, "--appendonly", "no") as proc:
        r = connect(proc)
        for i in range(50):
            r.xadd("s", {"i": i})
        assert r.bgsave() is True
        wait_idle(r)
        i = info(r)
        assert i["rdb_last_bgsave_status"] == "ok" and i["rdb_saves"] == 1
        assert i["rdb_changes_since_last_save"] == 0
        entries = r.xrange("s")
    with open(os.path.join(workdir, "dump.rdb"), "rb") as fh:
        assert fh.read(9) == b"REDIS0010"  # an RDB file (streams, no consumers: version 10)
    with started(workdir, "--appendonly", "no") as proc:
        assert connect(proc).xrange("s") == entries


def test_shutdown_saves_when_save_rules_exist(tmp_path) -> None:
    workdir = str(tmp_path)
    proc = start(workdir, "--appendonly", "no", "--save", "3600 1")
    connect(proc).set("k", "kept")
    proc.stop()  # SIGTERM: a clean shutdown saves
    with started(workdir, "--appendonly", "no") as proc:
        r = connect(proc)
        assert r.get("k") == b"kept"
        r.config_set("save", "3600 1")
        r.set("k", "lost")
        try:
            r.shutdown(nosave=True)
        except redis.ConnectionError:
            pass
        proc.proc.wait(15)
    with started(workdir, "--appendonly", "no") as proc:
        assert connect(proc).get("k") == b"kept"


def test_shutdown_save_saves_without_save_rules(tmp_path) -> None:
    workdir = str(tmp_path)
    proc = start(workdir, "--appendonly", "no")  # (no save rules)
    r = connect(proc)
    r.set("k", "kept")
    with pytest.raises(redis.ConnectionError):  # (the connection just closes)
        r.execute_command("SHUTDOWN", "SAVE")
    assert proc.proc is not None and proc.proc.wait(15) == 0
    with started(workdir, "--appendonly", "no") as proc:
        assert connect(proc).get("k") == b"kept"


SHUTDOWN_FAILED = "Errors trying to SHUTDOWN. Check logs."


def test_a_failed_final_save_keeps_the_server_and_its_aof(tmp_path) -> None:
    """As Redis: when the final snapshot can't be written, SHUTDOWN (or SIGTERM) leaves the
    server running and says so, the AOF still takes every write; FORCE or NOSAVE exit."""
    workdir = str(tmp_path)
    proc = start(workdir, "--save", "3600 1")  # (the AOF on, as by default)
    os.mkdir(os.path.join(workdir, "dump.rdb"))  # a directory: the snapshot can't go there
    try:
        r = connect(proc)
        r.xadd("s", {"n": "1"}, id="1-1")
        with pytest.raises(redis.ResponseError, match=SHUTDOWN_FAILED):
            r.execute_command("SHUTDOWN")
        assert r.ping()
        proc.proc.send_signal(15)  # SIGTERM: the same, the server goes on
        wait_for(lambda: proc.read_log().count("Errors trying to shut down the server") == 2,
                 timeout=10, what="the second failed shutdown")
        assert r.xadd("s", {"n": "2"}, id="2-1") == b"2-1"  # the AOF still takes writes
        log = proc.read_log()
        assert log.count("Error trying to save the DB, can't exit.") == 2
        with pytest.raises(redis.ConnectionError):
            r.execute_command("SHUTDOWN", "FORCE")
        assert proc.proc.wait(15) == 0
        assert "Error trying to save the DB. Exit anyway." in proc.read_log()
    finally:
        proc.stop()
    os.rmdir(os.path.join(workdir, "dump.rdb"))
    with started(workdir) as proc:  # from the AOF: both entries
        assert [e[0] for e in connect(proc).xrange("s")] == [b"1-1", b"2-1"]


def test_shutdown_on_sigterm_gives_a_signal_its_flags(tmp_path) -> None:
    workdir = str(tmp_path)
    proc = start(workdir, "--appendonly", "no", "--save", "3600 1",
                 "--shutdown-on-sigterm", "nosave")
    r = connect(proc)
    assert r.config_get("shutdown-on-sig*") == {"shutdown-on-sigint": "default",
                                                "shutdown-on-sigterm": "nosave"}
    r.set("k", "not saved")
    assert proc.stop() == 0  # SIGTERM, with NOSAVE
    assert not os.path.exists(os.path.join(workdir, "dump.rdb"))


def test_flushall_saves_the_empty_dataset_when_save_rules_exist(tmp_path) -> None:
    """As Redis's flushAllDataAndResetRDB: a BGSAVE under way is stopped (it would write the
    keys just removed) and, with save rules, the empty dataset is saved at once, so a crash
    right after FLUSHALL brings nothing back. The save is not counted in rdb_saves."""
    workdir = str(tmp_path)
    proc = start(workdir, "--appendonly", "no", "--save", "3600 1",
                 "--rdb-key-save-delay", "100000")
    try:
        r = connect(proc)
        for i in range(20):
            r.set(f"k{i}", "v")
        r.config_set("rdb-key-save-delay", "0")
        assert r.save() is True
        r.config_set("rdb-key-save-delay", "100000")  # 0.1 s a key: the BGSAVE runs on
        assert r.bgsave() is True
        wait_for(lambda: children(proc.proc.pid), timeout=10, what="the BGSAVE child")
        assert r.flushall() is True
        persistence = info(r)
        assert persistence["rdb_bgsave_in_progress"] == 0
        assert persistence["rdb_changes_since_last_save"] == 0
        assert persistence["rdb_saves"] == 1  # (SAVE's; FLUSHALL's own save is not counted)
        assert persistence["rdb_last_bgsave_status"] == "ok"  # (stopped, not failed)
        proc.proc.kill()  # a crash: no shutdown save
        proc.proc.wait(15)
    finally:
        proc.stop()
    with started(workdir, "--appendonly", "no") as proc:
        assert connect(proc).dbsize() == 0


def test_flushall_without_save_rules_leaves_the_snapshot(tmp_path) -> None:
    workdir = str(tmp_path)
    with started(workdir, "--appendonly", "no") as proc:
        r = connect(proc)
        r.set("k", "v")
        assert r.save() is True
        assert r.flushall() is True
        assert info(r)["rdb_changes_since_last_save"] > 0
    with started(workdir, "--appendonly", "no") as proc:  # the snapshot from before FLUSHALL
        assert connect(proc).get("k") == b"v"


def test_save_rule_triggers_a_background_save(tmp_path) -> None:
    with started(str(tmp_path), "--appendonly", "no", "--save", "1 2") as proc:
        r = connect(proc)
        r.set("a", "1")
        r.set("b", "2")
        wait_for(lambda: info(r)["rdb_saves"] >= 1, timeout=10, what="a save by rule")
        assert os.path.exists(os.path.join(str(tmp_path), "dump.rdb"))


def test_snapshot_seeds_the_aof_when_there_is_none(tmp_path) -> None:
    workdir = str(tmp_path)
    with started(workdir, "--appendonly", "no") as proc:
        r = connect(proc)
        r.xadd("s", {"f": "v"}, id="1-1")
        r.xgroup_create("s", "g", "0")
        r.xreadgroup("g", "c", {"s": ">"})
        r.save()
        before = dump_state(proc, volatile_times=False)
    with started(workdir) as proc:  # appendonly yes: no AOF yet, so the snapshot is loaded...
        assert dump_state(proc, volatile_times=False) == before
        assert "Creating AOF base file" in proc.read_log()
    os.unlink(os.path.join(workdir, "dump.rdb"))
    with started(workdir) as proc:  # ...and the AOF created from it holds everything
        assert dump_state(proc, volatile_times=False) == before


def _no_child_work(info: dict) -> bool:
    """From ONE INFO reply: nothing running and nothing scheduled. (Two INFO calls could see
    'not in progress' before a scheduled rewrite starts and 'not scheduled' after.)"""
    return (info["aof_rewrite_in_progress"] == 0 and info["aof_rewrite_scheduled"] == 0
            and info["rdb_bgsave_in_progress"] == 0)


def _child_interplay(proc: ServerProcess) -> list[str]:
    """Replies of SAVE/BGSAVE/BGREWRITEAOF while slow children run, as text."""
    r = redis.Redis(host=proc.host, port=proc.port)
    for name in ("SAVE", "BGSAVE", "BGREWRITEAOF"):
        r.set_response_callback(name, lambda reply, **_: reply)  # the raw status text
    pipe = r.pipeline(transaction=False)
    for i in range(40):
        pipe.set(f"k{i}", i)
    pipe.execute()
    r.config_set("rdb-key-save-delay", "50000")
    out = []

    def run(*args: str) -> None:
        try:
            reply = r.execute_command(*args)
            out.append(reply.decode() if isinstance(reply, bytes) else str(reply))
        except redis.ResponseError as exc:
            out.append(f"ERR {exc}" if not str(exc).startswith("ERR") else str(exc))

    run("BGSAVE")
    run("BGSAVE")
    run("SAVE")
    run("BGREWRITEAOF")
    r.config_set("rdb-key-save-delay", "0")
    os.kill(children(proc.proc.pid)[0], 9)  # end the slow BGSAVE: the scheduled rewrite runs
    wait_for(lambda: _no_child_work(r.info("persistence")), what="the rewrite")
    r.config_set("rdb-key-save-delay", "50000")
    run("BGREWRITEAOF")
    run("BGREWRITEAOF")
    run("BGSAVE")
    run("BGSAVE", "SCHEDULE")
    r.config_set("rdb-key-save-delay", "0")
    os.kill(children(proc.proc.pid)[0], 9)
    r.close()
    return out


def test_one_child_at_a_time_with_redis_replies(tmp_path) -> None:
    with started(str(tmp_path)) as proc:
        ours = _child_interplay(proc)
    assert ours == [
        "Background saving started",
        "ERR Background save already in progress",
        "ERR Background save already in progress",
        "Background append only file rewriting scheduled",
        "Background append only file rewriting started",
        "ERR Background append only file rewriting already in progress",
        "ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE "
        "SCHEDULE in order to schedule a BGSAVE whenever possible.",
        "Background saving scheduled",
    ]
    if redis_server_path() is None:
        return
    ref = ServerProcess("redis").start()
    try:
        assert _child_interplay(ref) == ours
    finally:
        ref.stop()


def test_a_bgsave_child_reports_its_failure_in_the_log_file(tmp_path) -> None:
    """Redis's child logs (`pid:C`) go to the log file; a system error is one line."""
    workdir = str(tmp_path)
    log_path = os.path.join(workdir, "xs.log")
    with started(workdir, "--appendonly", "no", "--logfile", log_path) as proc:
        os.mkdir(os.path.join(workdir, "dump.rdb"))  # a directory: the snapshot can't go there
        r = connect(proc)
        r.set("k", "v")
        assert r.bgsave() is True
        wait_for(lambda: info(r)["rdb_last_bgsave_status"] == "err", what="the failure")
        with open(log_path) as fh:
            lines = fh.read().splitlines()
        failed = [line for line in lines if "Background saving failed: " in line]
        assert len(failed) == 1 and ":C " in failed[0] and "Is a directory" in failed[0]
        assert not any("Traceback" in line for line in lines)
        assert any(line.endswith("Background saving error") for line in lines)


def test_failed_bgsave_refuses_writes_until_a_save_works(tmp_path) -> None:
    with started(str(tmp_path), "--appendonly", "no", "--save", "3600 1",
                 "--rdb-key-save-delay", "100000") as proc:
        r = connect(proc)
        r.set("a", "1")
        r.set("b", "2")
        queued = raw_connect(proc.port)
        assert call(queued, "MULTI") == b"OK"
        assert call(queued, "SET", "c", "3") == b"QUEUED"
        assert call(queued, "GET", "a") == b"QUEUED"
        r.bgsave()
        wait_for(lambda: children(proc.proc.pid), what="the BGSAVE child")
        os.kill(children(proc.proc.pid)[0], 9)
        wait_for(lambda: info(r)["rdb_bgsave_in_progress"] == 0, what="the failure")
        assert info(r)["rdb_last_bgsave_status"] == "err"
        with pytest.raises(redis.ResponseError, match="MISCONF Redis is configured to save RDB "
                           "snapshots, but it's currently unable to persist to disk"):
            r.set("c", "3")
        assert r.get("a") == b"1"  # reads still work
        # A transaction with a write, queued before the failure, is refused whole at EXEC;
        # one of reads runs.
        assert str(call(queued, "EXEC")).startswith(
            "EXECABORT Transaction discarded because of: MISCONF Redis is configured to save "
            "RDB snapshots")
        assert call(queued, "MULTI") == b"OK"
        assert str(call(queued, "SET", "c", "3")).startswith("MISCONF")  # refused when queued
        assert call(queued, "DISCARD") == b"OK"
        assert call(queued, "MULTI") == b"OK"
        assert call(queued, "GET", "a") == b"QUEUED"
        assert call(queued, "EXEC") == [b"1"]
        assert r.get("c") is None
        r.config_set("rdb-key-save-delay", "0")
        assert r.save()
        assert r.set("c", "3")
