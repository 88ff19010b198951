"""The fast ways a restart loads give what the general ways give, against real server
processes: an AOF read in hiredis runs with propagated XADDs appended directly loads the same
data as the same AOF written with non-canonical lengths (which only the strict reader takes,
and every command then goes through dispatch); its errors (an unknown command, a truncated
last command, a MULTI without EXEC) keep their messages and offsets; a dump.rdb and an RDB
AOF base with consumer groups load the same data."""

from __future__ import annotations

import os
import re

import redis

from protocol.encoder import encode_command
from server.persistence.aof_parse import iter_commands
from tests.integration.test_persistence_support import (
    History,
    connect,
    dump_state,
    files_and_restarts,
    start,
    started,
)

pytestmark = files_and_restarts


def _incr_file(workdir: str) -> str:
    aof_dir = os.path.join(workdir, "appendonlydir")
    [name] = [n for n in os.listdir(aof_dir) if n.endswith(".incr.aof")]
    return os.path.join(aof_dir, name)


def _non_canonical(data: bytes) -> bytes:
    """The same commands, every bulk length written with a leading zero."""
    out = []
    for _, argv, _ in iter_commands(data):
        out.append(b"*%d\r\n" % len(argv))
        out += [b"$0%d\r\n%b\r\n" % (len(arg), arg) for arg in argv]
    return b"".join(out)


def _filled(workdir: str) -> tuple[list, bytes]:
    """A random history with the AOF on; its state and the incr file."""
    with started(workdir, "--appendfsync", "always") as proc:
        History(3).run(proc, 700)
        r = connect(proc)
        for s in range(3):
            for i in range(400):
                r.xadd(f"bulk{s}", {"f1": "v", "f2": i}, id=f"{1000 + i}-{s}")
        state = dump_state(proc, volatile_times=False)
    with open(_incr_file(workdir), "rb") as fh:
        return state, fh.read()


def test_the_fast_and_the_strict_replay_load_the_same(tmp_path) -> None:
    workdir = str(tmp_path)
    state, data = _filled(workdir)
    with started(workdir) as proc:
        assert dump_state(proc, volatile_times=False) == state
        digests = {k: connect(proc).execute_command("DEBUG", "DIGEST-VALUE", k)
                   for k in (b"bulk0", b"bulk1", b"bulk2")}
    with open(_incr_file(workdir), "wb") as fh:
        fh.write(_non_canonical(data))
    with started(workdir) as proc:
        assert dump_state(proc, volatile_times=False) == state
        r = connect(proc)
        assert {k: r.execute_command("DEBUG", "DIGEST-VALUE", k) for k in digests} == digests


def _failed_start(workdir: str, *args: str) -> str:
    proc = start(workdir, *args, check=False)
    try:
        proc.start(timeout=30)
    except RuntimeError as exc:
        return str(exc)
    finally:
        proc.stop()
    raise AssertionError("the server started")


def _xadds(n: int, key: bytes = b"s") -> bytes:
    return b"".join(encode_command([b"XADD", key, b"%d-0" % (i + 1), b"f", b"v"])
                    for i in range(n))


def _with_incr(workdir: str, body: bytes) -> None:
    with started(workdir, "--appendonly", "yes"):
        pass
    with open(_incr_file(workdir), "wb") as fh:
        fh.write(body)


def test_an_unknown_command_names_its_offset(tmp_path) -> None:
    workdir = str(tmp_path)
    head = encode_command([b"SELECT", b"0"]) + _xadds(3000)
    _with_incr(workdir, head + encode_command([b"NOSUCH", b"x"]) + _xadds(10, b"t"))
    log = _failed_start(workdir, "--appendonly", "yes")
    assert re.search(rf"Unknown command 'NOSUCH' .* at offset {len(head)}:", log)


def test_a_truncated_last_command(tmp_path) -> None:
    workdir = str(tmp_path)
    body = encode_command([b"SELECT", b"0"]) + _xadds(3000)
    last = encode_command([b"XADD", b"s", b"9999-0", b"f", b"v"])
    _with_incr(workdir, body + last[:-3])
    log = _failed_start(workdir, "--appendonly", "yes", "--aof-load-truncated", "no")
    assert "Unexpected end of file reading the append only file" in log
    assert f"at offset {len(body)}." in log
    with started(workdir, "--appendonly", "yes", "--aof-load-truncated", "yes") as proc:
        r = connect(proc)
        assert r.xlen("s") == 3000
        assert r.xrevrange("s", count=1)[0][0] == b"3000-0"
    assert os.path.getsize(_incr_file(workdir)) == len(body)


def test_a_multi_without_exec_at_the_end_is_dropped(tmp_path) -> None:
    workdir = str(tmp_path)
    body = encode_command([b"SELECT", b"0"]) + _xadds(2000)
    tail = encode_command([b"MULTI"]) + _xadds(5, b"t")
    _with_incr(workdir, body + tail)
    with started(workdir, "--appendonly", "yes") as proc:
        r = connect(proc)
        assert r.xlen("s") == 2000
        assert r.exists("t") == 0
    assert os.path.getsize(_incr_file(workdir)) == len(body)


def test_snapshots_and_rdb_bases_keep_groups_exactly(tmp_path) -> None:
    workdir = str(tmp_path)
    with started(workdir, "--appendonly", "yes") as proc:
        History(4).run(proc, 600)
        r = connect(proc)
        r.xadd("g", {"f": "v"}, id="1-0")
        r.xadd("g", {"f": "v"}, id="2-0")
        for name in ("a", "b"):
            r.xgroup_create("g", name, id="0")
            r.xreadgroup(name, "c", {"g": ">"})
        exact = dump_state(proc)
        r.bgrewriteaof()
        while r.info("persistence")["aof_rewrite_in_progress"]:
            pass
        r.save()
    with started(workdir, "--appendonly", "yes") as proc:  # the RDB base
        assert dump_state(proc) == exact
    with started(workdir, "--appendonly", "no") as proc:  # dump.rdb
        assert dump_state(proc) == exact
        assert redis.Redis(port=proc.port).xpending("g", "b")["pending"] == 2
