"""The append-only file against real server processes: replaying random command histories
rebuilds the same data (XINFO STREAM FULL compared before and after a restart), the files and
commands written, rewrites (manual and automatic), runtime CONFIG SET, INFO fields."""

from __future__ import annotations

import os

import pytest
import redis

from tests.integration.test_persistence_support import (
    History,
    connect,
    dump_state,
    files_and_restarts,
    files_in,
    info,
    start,
    started,
    wait_for,
    wait_idle,
)

pytestmark = files_and_restarts


def _aof_dir(workdir: str) -> str:
    return os.path.join(workdir, "appendonlydir")


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


@pytest.mark.parametrize("seed", [1, 2])
def test_replay_rebuilds_the_same_streams_groups_and_pels(tmp_path, seed: int) -> None:
    workdir = str(tmp_path)
    with started(workdir, "--appendfsync", "always") as proc:
        ok = History(seed).run(proc, 700)
        assert ok > 300
        before = dump_state(proc, volatile_times=False)
        before_exact = dump_state(proc)
        assert any(v[0] == b"stream" and v[1][b"groups"] for v in before[0].values())
    with started(workdir) as proc:
        # Consumers' seen-time/active-time are the only difference: XCLAIM cannot carry them.
        assert dump_state(proc, volatile_times=False) == before
        after_exact = dump_state(proc)
        assert [sorted(db) for db in after_exact] == [sorted(db) for db in before_exact]
        r = connect(proc)
        assert info(r)["aof_enabled"] == 1
        assert r.execute_command("DEBUG", "LOADAOF") == b"OK"
        assert dump_state(proc, volatile_times=False) == before


def test_rewrite_then_restart_gives_the_same_data(tmp_path) -> None:
    workdir = str(tmp_path)
    with started(workdir, "--aof-use-rdb-preamble", "no") as proc:  # the command-based base
        History(5).run(proc, 600)
        r = connect(proc)
        incr_before = _read(os.path.join(_aof_dir(workdir), "appendonly.aof.1.incr.aof"))
        assert b"XCLAIM" in incr_before and b"SELECT" in incr_before
        assert r.bgrewriteaof() in (True, b"Background append only file rewriting started")
        wait_idle(r)
        i = info(r)
        assert i["aof_rewrites"] == 1 and i["aof_last_bgrewrite_status"] == "ok"
        names = files_in(_aof_dir(workdir))
        assert names == ["appendonly.aof.2.base.aof", "appendonly.aof.2.incr.aof",
                         "appendonly.aof.manifest"]
        base = _read(os.path.join(_aof_dir(workdir), "appendonly.aof.2.base.aof"))
        assert b"XREADGROUP" not in base and b"XSETID" in base
        # writes during and after the rewrite land in the new incr file
        History(6).run(proc, 200)
        before = dump_state(proc, volatile_times=False, layout=False)
    with started(workdir) as proc:
        assert dump_state(proc, volatile_times=False, layout=False) == before


def test_rewrite_with_snapshot_base_keeps_everything_exactly(tmp_path) -> None:
    """The default base (aof-use-rdb-preamble yes, as in Redis) is an RDB file, named
    .base.rdb as Redis 7 names it."""
    workdir = str(tmp_path)
    with started(workdir) as proc:
        History(9).run(proc, 500)
        r = connect(proc)
        assert r.config_get("aof-use-rdb-preamble") == {"aof-use-rdb-preamble": "yes"}
        r.bgrewriteaof()
        wait_idle(r)
        base = _read(os.path.join(_aof_dir(workdir), "appendonly.aof.2.base.rdb"))
        assert base.startswith(b"REDIS00")
        before = dump_state(proc)  # times and node layout included
    with started(workdir) as proc:
        assert dump_state(proc) == before


def test_transactions_selects_and_expiry_in_the_file(tmp_path) -> None:
    workdir = str(tmp_path)
    with started(workdir) as proc:
        r = connect(proc)
        pipe = r.pipeline(transaction=True)
        pipe.set("a", "1")
        pipe.xadd("s", {"f": "v"}, id="5-1")
        pipe.execute()
        r1 = connect(proc, 1)
        r1.set("other", "x")
        r.expire("a", 1000)
        r.set("gone", "x", px=1)
        wait_for(lambda: r.get("gone") is None, what="expiry")
        commands = _read(os.path.join(_aof_dir(workdir), "appendonly.aof.1.incr.aof"))
        assert commands.index(b"MULTI") < commands.index(b"5-1") < commands.index(b"EXEC")
        assert b"SELECT\r\n$1\r\n1" in commands
        assert b"PEXPIREAT" in commands and b"EXPIRE\r\n" not in commands
        assert commands.rstrip().endswith(b"DEL\r\n$4\r\ngone")
        ttl_before = r.pexpiretime("a")
    with started(workdir) as proc:
        r = connect(proc)
        assert r.get("a") == b"1" and r.pexpiretime("a") == ttl_before
        assert r.xrange("s") == [(b"5-1", {b"f": b"v"})]
        assert connect(proc, 1).get("other") == b"x"
        assert r.get("gone") is None


def test_auto_rewrite_on_growth(tmp_path) -> None:
    workdir = str(tmp_path)
    with started(workdir, "--auto-aof-rewrite-min-size", "20kb",
                 "--auto-aof-rewrite-percentage", "100") as proc:
        r = connect(proc)
        pipe = r.pipeline(transaction=False)
        for _ in range(600):
            pipe.xadd("s", {"f": "x" * 20}, maxlen=10, approximate=False)
        pipe.execute()
        wait_for(lambda: info(r)["aof_rewrites"] >= 1, what="an automatic rewrite")
        wait_idle(r)
        i = info(r)
        assert i["aof_base_size"] < 20 * 1024  # ten entries left: compact
        assert r.xlen("s") == 10
        expected = r.xrange("s")
    with started(workdir) as proc:
        assert connect(proc).xrange("s") == expected


def test_appendonly_turned_on_and_off_at_runtime(tmp_path) -> None:
    workdir = str(tmp_path)
    proc = start(workdir, "--appendonly", "no")
    try:
        r = connect(proc)
        r.xadd("s", {"before": "1"}, id="1-1")
        assert info(r)["aof_enabled"] == 0
        assert not os.path.exists(_aof_dir(workdir))
        assert r.config_set("appendonly", "yes")
        wait_idle(r)
        assert info(r)["aof_enabled"] == 1
        r.xadd("s", {"after": "1"}, id="2-1")
        assert r.config_get("appendonly") == {"appendonly": "yes"}
    finally:
        proc.stop(kill=True)  # no clean shutdown: the files alone must hold both entries
    with started(workdir) as proc:
        r = connect(proc)
        assert [e[0] for e in r.xrange("s")] == [b"1-1", b"2-1"]
        r.config_set("appendonly", "no")
        assert info(r)["aof_enabled"] == 0
        r.xadd("s", {"off": "1"}, id="3-1")  # not logged
    with started(workdir) as proc:
        assert [e[0] for e in connect(proc).xrange("s")] == [b"1-1", b"2-1"]


def test_appendfsync_config_and_info_fields(tmp_path) -> None:
    with started(str(tmp_path)) as proc:
        r = connect(proc)
        assert r.config_get("appendfsync") == {"appendfsync": "everysec"}
        for policy in ("always", "no", "everysec"):
            assert r.config_set("appendfsync", policy)
            r.set("k", policy)
        with pytest.raises(redis.ResponseError):
            r.config_set("appendfsync", "sometimes")
        i = info(r)
        for field in ("aof_enabled", "aof_rewrite_in_progress", "aof_rewrite_scheduled",
                      "aof_last_rewrite_time_sec", "aof_current_rewrite_time_sec",
                      "aof_last_bgrewrite_status", "aof_last_write_status",
                      "rdb_last_save_time", "rdb_changes_since_last_save",
                      "rdb_bgsave_in_progress", "rdb_last_bgsave_status", "aof_current_size",
                      "aof_base_size", "aof_buffer_length", "loading"):
            assert field in i, field
        assert i["aof_last_write_status"] == "ok"
        assert i["aof_current_size"] > 0 and i["aof_buffer_length"] == 0
        assert i["rdb_changes_since_last_save"] == 3


def test_history_reads_survive_replay(tmp_path) -> None:
    workdir = str(tmp_path)
    with started(workdir) as proc:
        r = connect(proc)
        r.xadd("s", {"f": "v"}, id="1-1")
        r.xgroup_create("s", "g", "0")
        r.xreadgroup("g", "c", {"s": ">"})
        r.xreadgroup("g", "c", {"s": "0"})  # the consumer's history: second delivery
        before = r.xpending_range("s", "g", "-", "+", 10)
        assert before[0]["times_delivered"] == 2
    with started(workdir) as proc:
        after = connect(proc).xpending_range("s", "g", "-", "+", 10)
        # The delivery time is restored, so the idle time has only grown meanwhile.
        assert after[0]["time_since_delivered"] >= before[0]["time_since_delivered"]
        for row in (before[0], after[0]):
            del row["time_since_delivered"]
        assert after == before


def test_rewrite_with_the_aof_off_is_the_whole_state(tmp_path) -> None:
    workdir = str(tmp_path)
    with started(workdir) as proc:
        r = connect(proc)
        r.set("k", "logged")
        r.config_set("appendonly", "no")
        r.set("k", "latest")
        r.bgrewriteaof()  # the old incr file must not be replayed over this base
        wait_idle(r)
        assert info(r)["aof_last_bgrewrite_status"] == "ok"
    with started(workdir) as proc:
        assert connect(proc).get("k") == b"latest"


@pytest.mark.parametrize("preamble", ["no", "yes"])
def test_counters_past_llong_max_survive_rewrite_and_restart(tmp_path, preamble: str) -> None:
    """XSETID ENTRIESADDED 2^63-1 then XADDs push entries-added (and a group's entries-read)
    past int64. Replies show them as Redis's long long casts do, and every file still loads:
    a snapshot keeps them exactly; XSETID / XGROUP in the AOF cannot carry more than
    LLONG_MAX, so there they are written as LLONG_MAX (and grow again as the AOF replays)."""
    workdir = str(tmp_path)
    llong_max = 2**63 - 1
    with started(workdir, "--aof-use-rdb-preamble", preamble) as proc:
        r = connect(proc)
        r.execute_command("XADD", "t", "1-0", "f", "v")
        r.execute_command("XSETID", "t", "1-0", "ENTRIESADDED", str(llong_max))
        r.execute_command("XGROUP", "CREATE", "t", "g", "0", "ENTRIESREAD", str(llong_max))
        r.execute_command("XADD", "t", "2-0", "f", "v")
        r.execute_command("XREADGROUP", "GROUP", "g", "c", "STREAMS", "t", ">")
        assert r.execute_command("XINFO", "STREAM", "t")[b"entries-added"] == -(2**63)
        r.bgrewriteaof()
        wait_idle(r)
        assert info(r)["aof_last_bgrewrite_status"] == "ok"
        r.execute_command("XADD", "t", "3-0", "f", "v")  # in the new incremental file
        before = dump_state(proc, volatile_times=False, layout=False)
    with started(workdir) as proc:
        after = dump_state(proc, volatile_times=False, layout=False)
        if preamble == "yes":
            assert after == before
        else:
            was, now = before[0][b"t"][1], after[0][b"t"][1]
            assert was[b"entries-added"] == -(2**63) + 1
            assert now[b"entries-added"] == -(2**63)  # LLONG_MAX, then XADD 3-0
            for name in (b"length", b"last-generated-id", b"entries"):
                assert now[name] == was[name]
            group_was, group_now = was[b"groups"][0], now[b"groups"][0]
            assert group_now[b"entries-read"] == llong_max
            for name in (b"name", b"last-delivered-id", b"pel-count", b"pending"):
                assert group_now[name] == group_was[name]


def test_rewrite_keeps_max_deleted_id_with_trimmed_pending_entries(tmp_path) -> None:
    """A pending entry trimmed away (trims leave max-deleted-entry-id alone) and one XDELed
    both come back pending after a command-based rewrite, and max-deleted-entry-id is what
    it was: 0-0 after the trim alone, then the XDELed ID."""
    workdir = str(tmp_path)
    with started(workdir) as proc:
        r = connect(proc)
        for i in range(1, 6):
            r.execute_command("XADD", "s", f"{i}-0", "f", "v")
        r.execute_command("XGROUP", "CREATE", "s", "g", "0")
        r.execute_command("XREADGROUP", "GROUP", "g", "c", "COUNT", "4", "STREAMS", "s", ">")
        r.execute_command("XTRIM", "s", "MAXLEN", "4")  # 1-0 goes, still pending
        states = []
        for step in ("trim", "xdel"):
            if step == "xdel":
                r.execute_command("XDEL", "s", "3-0")  # pending too
            r.bgrewriteaof()
            wait_idle(r)
            before = dump_state(proc, volatile_times=False, layout=False)
            assert r.execute_command("DEBUG", "LOADAOF") == b"OK"
            assert dump_state(proc, volatile_times=False, layout=False) == before
            states.append(before)
        stream = r.execute_command("XINFO", "STREAM", "s")
        assert stream[b"max-deleted-entry-id"] == b"3-0"
        pending = r.xpending_range("s", "g", "-", "+", 10)
        assert [p["message_id"] for p in pending] == [b"1-0", b"2-0", b"3-0", b"4-0"]
        assert states[0][0][b"s"][1][b"max-deleted-entry-id"] == b"0-0"


def test_replayed_commands_are_not_counted_as_clients_commands(tmp_path) -> None:
    """As Redis's loader (the command's proc on the loading client): no commandstats, no
    slowlog entries, whatever the thresholds."""
    workdir = str(tmp_path)
    with started(workdir) as proc:
        r = connect(proc)
        for i in range(1, 51):
            r.xadd("s", {"f": i}, id=f"{i}-1")
        r.set("k", "v")
        r.xgroup_create("s", "g", "0")
        r.xreadgroup("g", "c", {"s": ">"}, count=5)
    with started(workdir, "--slowlog-log-slower-than", "0") as proc:
        r = connect(proc)
        assert r.xlen("s") == 50 and r.get("k") == b"v"
        assert r.xpending("s", "g")["pending"] == 5
        stats = r.info("commandstats")
        assert not any(name in stats for name in ("cmdstat_xadd", "cmdstat_set",
                                                  "cmdstat_xclaim", "cmdstat_xgroup|create"))
        assert r.info("stats")["total_commands_processed"] < 20  # (this test's own, not 50+)
        assert [entry for entry in r.slowlog_get(128) if entry["command"].split()[0].lower()
                in (b"xadd", b"set", b"xclaim", b"xgroup")] == []
