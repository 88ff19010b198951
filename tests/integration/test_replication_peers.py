"""xstreamd in a replication setup with real Redis and Valkey servers: Debian's redis-server 7.0
and Valkey 8.1 as primaries of an xstreamd replica, and Valkey 8.1 as a replica of an xstreamd
primary. The datasets must compare equal after the sync and under live writes."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import ServerProcess, valkey_server_path
from tests.integration.replication_support import (
    client,
    dataset,
    fill,
    info,
    start_replica,
    wait_caught_up,
    wait_link_up,
)

PEER_PRIMARY = ["--repl-diskless-sync-delay", "0"]
OURS = ["--repl-diskless-sync-delay", "0", "--appendonly", "no", "--save", ""]


def _require(kind: str) -> None:
    found = shutil.which("redis-server") if kind == "redis" else valkey_server_path()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{kind}-server must be installed in CI")
        pytest.skip(f"{kind}-server is not installed")


def _live_writes(primary: ServerProcess) -> None:
    p = client(primary)
    p.xadd("s0", {"live": 1})
    p.xadd("s1", {"live": 2}, maxlen=100, approximate=False)
    p.xreadgroup("g1", "carol", {"s2": ">"}, count=3)
    p.xack("s2", "g1", *[e[0] for e in p.xrange("s2", count=4)])
    p.xclaim("s0", "g1", "erin", 0, [e[0] for e in p.xrange("s0", count=30)[20:23]])
    # (on s0, whose pending entries still exist: Valkey 8.1 creates the consumer of an
    # XAUTOCLAIM that claims nothing without propagating it, so its own replicas differ)
    p.xautoclaim("s0", "g1", "frank", 0, count=2)
    p.xgroup_setid("s1", "g2", "0")
    p.xgroup_delconsumer("s0", "g1", "bob")
    p.set("str1", "changed")
    p.delete("str2")
    p.set("soon-gone", "x", px=100)
    with p.pipeline(transaction=True) as tx:
        tx.xadd("s0", {"tx": 1})
        tx.set("in-tx", "1")
        tx.execute()
    time.sleep(0.3)
    assert p.get("soon-gone") is None  # expired on the primary: a DEL goes to the replica


@pytest.mark.parametrize("kind", ["redis", "valkey"])
def test_xstreamd_replicates_a_peer_primary(kind: str) -> None:
    _require(kind)
    with ServerProcess(kind, PEER_PRIMARY) as primary:
        fill(client(primary))
        with start_replica("xstreamd", primary) as replica:
            wait_link_up(replica)
            wait_caught_up(primary, replica)
            assert dataset(replica) == dataset(primary)
            _live_writes(primary)
            wait_caught_up(primary, replica)
            client(primary).execute_command("WAIT", 1, 5000)
            wait_caught_up(primary, replica)
            assert dataset(replica) == dataset(primary)
            assert client(replica).exists("soon-gone") == 0
            assert info(primary)["slave0"]["state"] == "online"


def test_valkey_replicates_an_xstreamd_primary() -> None:
    _require("valkey")
    with ServerProcess("xstreamd", OURS) as primary:
        fill(client(primary))
        with start_replica("valkey", primary) as replica:
            wait_link_up(replica)
            wait_caught_up(primary, replica)
            assert dataset(replica) == dataset(primary)
            _live_writes(primary)
            assert client(primary).execute_command("WAIT", 1, 10_000) == 1
            wait_caught_up(primary, replica)
            assert dataset(replica) == dataset(primary)


def test_valkey_replica_resyncs_partially_after_the_link_is_killed() -> None:
    _require("valkey")
    with ServerProcess("xstreamd", OURS) as primary:
        p = client(primary)
        fill(p, streams=1, entries=40)
        with start_replica("valkey", primary) as replica:
            wait_link_up(replica)
            wait_caught_up(primary, replica)
            assert p.execute_command("CLIENT", "KILL", "TYPE", "replica") == 1
            p.xadd("s0", {"after": "kill"})
            wait_link_up(replica)
            wait_caught_up(primary, replica)
            assert info(primary, "stats")["sync_partial_ok"] == 1
            assert dataset(replica) == dataset(primary)


def test_disk_based_sync_to_valkey() -> None:
    _require("valkey")
    with ServerProcess("xstreamd", [*OURS, "--repl-diskless-sync", "no"]) as primary:
        fill(client(primary), streams=2, entries=100)
        with start_replica("valkey", primary) as replica:
            wait_link_up(replica)
            wait_caught_up(primary, replica)
            assert dataset(replica) == dataset(primary)


@pytest.mark.parametrize("diskless", ["yes", "no"])
def test_redis_cli_rdb_of_xstreamd_loads_into_valkey(diskless: str, tmp_path: Path) -> None:
    """`redis-cli --rdb file` (REPLCONF rdb-only, then SYNC) saves a file Valkey loads."""
    _require("valkey")
    if shutil.which("redis-cli") is None:
        pytest.skip("needs redis-cli")
    with ServerProcess("xstreamd", [*OURS, "--repl-diskless-sync", diskless]) as primary:
        fill(client(primary), streams=2, entries=80)
        expected = dataset(primary)
        workdir = tmp_path / "valkey"
        workdir.mkdir()
        done = subprocess.run(["redis-cli", "-p", str(primary.port), "--rdb",
                               str(workdir / "dump.rdb")], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Transfer finished with success" in done.stdout + done.stderr
    with ServerProcess("valkey", ["--dbfilename", "dump.rdb"], workdir=str(workdir)) as peer:
        assert dataset(peer) == expected
