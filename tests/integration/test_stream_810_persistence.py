"""IDMP records, XCFGSET limits and XNACK's NACK zone across restarts: the AOF as written
command by command (what server.propagate hands it) and as BGREWRITEAOF rewrites it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.helpers import TARGET, ServerProcess

pytestmark = pytest.mark.skipif(TARGET == "redis", reason="Redis 8.6/8.8 (redis-server is 7.0)")
AOF = ["--appendonly", "yes", "--aof-use-rdb-preamble", "no", "--appendfsync", "always"]


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[str]:
    yield str(tmp_path)


def _start(workdir: str, port: int | None = None) -> tuple[ServerProcess, redis.Redis]:
    proc = ServerProcess(extra_args=AOF, workdir=workdir, port=port).start()
    client = redis.Redis(host=proc.host, port=proc.port)
    client.set_response_callback("XPENDING", lambda response, **options: response)
    return proc, client


def _populate(r: redis.Redis) -> tuple[bytes, bytes]:
    first = r.execute_command("XADD", "s", "IDMP", "p1", "order-1", "*", "f", "v1")
    auto = r.execute_command("XADD", "s", "IDMPAUTO", "p2", "*", "a", "1", "b", "2")
    r.execute_command("XADD", "s", "IDMP", "p1", "order-1", "*", "f", "retry")  # duplicate
    r.execute_command("XCFGSET", "s", "IDMP-DURATION", "600")  # clears the records
    r.execute_command("XADD", "s", "IDMP", "p1", "order-2", "*", "f", "v2")
    r.execute_command("XADD", "s", "IDMPAUTO", "p2", "*", "a", "1", "b", "3")
    for i in range(5):
        r.xadd("s", {"n": str(i)})
    r.xgroup_create("s", "g", "0")
    r.xreadgroup("g", "c1", {"s": ">"})
    ids = [eid for eid, _ in r.xrange("s")]
    r.execute_command("XNACK", "s", "g", "FATAL", "IDS", "1", ids[3])
    r.execute_command("XNACK", "s", "g", "SILENT", "IDS", "1", ids[1])
    r.execute_command("XNACK", "s", "g", "FAIL", "IDS", "1", ids[5], "RETRYCOUNT", "7")
    r.xgroup_create("s", "g2", "$")
    r.execute_command("XNACK", "s", "g2", "FAIL", "IDS", "2", ids[0], ids[2], "FORCE")
    return first, auto


def _state(r: redis.Redis) -> tuple:
    info = r.xinfo_stream("s")
    idmp = tuple(info[k] for k in ("idmp-duration", "idmp-maxsize", "pids-tracked",
                                   "iids-tracked", "iids-added"))
    pending = []
    for group in ("g", "g2"):
        rows = r.execute_command("XPENDING", "s", group, "-", "+", "100")
        pending.append([(row[0], row[1], row[3]) if row[1] else tuple(row) for row in rows])
    return r.xrange("s"), idmp, pending


def _claim_order(r: redis.Redis, group: str) -> list[bytes]:
    out = []
    while True:
        reply = r.execute_command("XREADGROUP", "GROUP", group, "claimer", "COUNT", "1",
                                  "CLAIM", "3600000", "STREAMS", "s", ">")
        if not reply:
            return out
        out.append(reply[0][1][0][0])


def _check_retries_deduplicated(r: redis.Redis) -> None:
    before = r.xlen("s")
    r.execute_command("XADD", "s", "IDMP", "p1", "order-2", "*", "f", "again")
    r.execute_command("XADD", "s", "IDMPAUTO", "p2", "*", "b", "3", "a", "1")
    assert r.xlen("s") == before


def test_restart_replays_the_aof(workdir: str) -> None:
    proc, r = _start(workdir)
    _populate(r)
    before = _state(r)
    proc.stop()
    proc, r = _start(workdir, proc.port)
    try:
        assert _state(r) == before
        _check_retries_deduplicated(r)
        assert len(_claim_order(r, "g")) == 3
    finally:
        proc.stop()


def test_bgrewriteaof_keeps_idmp_and_nack_state(workdir: str) -> None:
    proc, r = _start(workdir)
    _populate(r)
    before = _state(r)
    r.bgrewriteaof()
    deadline = time.time() + 10
    while r.info("persistence")["aof_rewrite_in_progress"] and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    base = next(Path(workdir, "appendonlydir").glob("*.base.aof")).read_bytes()
    assert b"XIDMPRECORD" in base and b"XCFGSET" in base and b"XNACK" in base
    proc.stop()
    proc, r = _start(workdir, proc.port)
    try:
        after = _state(r)
        assert after[0] == before[0] and after[2] == before[2]
        # The rewrite carries the records, not the counters: each replayed XIDMPRECORD counts
        # as added (as in Redis), so iids-added restarts at the records' number.
        assert after[1] == (*before[1][:4], before[1][3])
        assert r.xinfo_stream("s")["idmp-duration"] == 600
        _check_retries_deduplicated(r)
        ids = [eid for eid, _ in r.xrange("s")]
        assert _claim_order(r, "g") == [ids[3], ids[1], ids[5]]  # the NACK zone's order
        assert _claim_order(r, "g2") == [ids[0], ids[2]]
    finally:
        proc.stop()


def _full_state(r: redis.Redis) -> tuple:
    info = r.xinfo_stream("s")
    counters = tuple(info[k] for k in ("idmp-duration", "idmp-maxsize", "pids-tracked",
                                       "iids-tracked", "iids-added", "iids-duplicates"))
    return _state(r), counters


@pytest.mark.parametrize("how", ["save", "rdb-preamble"])
def test_rdb_keeps_idmp_and_nack_state(workdir: str, how: str) -> None:
    """A snapshot (dump.rdb) and an AOF whose base is an RDB carry the IDMP records, the
    limits, both counters and each NACK zone in its order: types 26/27 of RDB 13/14."""
    args = (["--appendonly", "yes", "--aof-use-rdb-preamble", "yes"] if how == "rdb-preamble"
            else ["--appendonly", "no"])
    proc = ServerProcess(extra_args=args, workdir=workdir).start()
    r = redis.Redis(host=proc.host, port=proc.port)
    r.set_response_callback("XPENDING", lambda response, **options: response)
    _populate(r)
    before = _full_state(r)
    if how == "save":
        r.save()
        assert Path(workdir, "dump.rdb").read_bytes()[:9] == b"REDIS0014"
    else:
        r.bgrewriteaof()
        deadline = time.time() + 10
        while r.info("persistence")["aof_rewrite_in_progress"] and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        base = next(Path(workdir, "appendonlydir").glob("*.base.rdb")).read_bytes()
        assert base[:9] == b"REDIS0014"
    proc.stop()
    proc = ServerProcess(extra_args=args, workdir=workdir, port=proc.port).start()
    r = redis.Redis(host=proc.host, port=proc.port)
    r.set_response_callback("XPENDING", lambda response, **options: response)
    try:
        assert _full_state(r) == before
        _check_retries_deduplicated(r)
        ids = [eid for eid, _ in r.xrange("s")]
        assert _claim_order(r, "g") == [ids[3], ids[1], ids[5]]
        assert _claim_order(r, "g2") == [ids[0], ids[2]]
    finally:
        proc.stop()


def test_dump_restore_and_copy_keep_idmp_and_nack_state(workdir: str) -> None:
    proc, r = _start(workdir)
    try:
        _populate(r)
        payload = r.dump("s")
        assert int.from_bytes(payload[-10:-8], "little") == 14 and payload[0] == 27
        before = _full_state(r)
        r.restore("s", 0, payload, replace=True)
        assert _full_state(r) == before
        r.copy("s", "s2")
        r.rename("s", "s-orig")
        r.rename("s2", "s")
        assert _full_state(r) == before
        ids = [eid for eid, _ in r.xrange("s")]
        assert _claim_order(r, "g") == [ids[3], ids[1], ids[5]]
        # A stream that used neither feature dumps as Redis 7.4 to 8.4 do (type 21, RDB 12).
        r.xadd("plain", {"a": "1"})
        plain = r.dump("plain")
        assert plain[0] == 21 and int.from_bytes(plain[-10:-8], "little") == 12
    finally:
        proc.stop()
