"""Sentinel fails xstreamd over: a Sentinel (Debian's redis-sentinel, or valkey-server
--sentinel) monitors an xstreamd primary with two xstreamd replicas; the primary is killed with
SIGKILL; Sentinel promotes a replica (REPLICAOF NO ONE, CONFIG REWRITE in MULTI / EXEC), points
the other at it, and redis-py's Sentinel client finds the new primary. Every write that WAIT 1
acknowledged is there."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.sentinel import Sentinel

from tests.helpers import ServerProcess, free_port, valkey_server_path
from tests.integration.replication_support import info, wait_caught_up, wait_for, wait_link_up

NAME = "mymaster"


class ConfiguredServer(ServerProcess):
    """xstreamd started from a config file (Sentinel's failover rewrites it)."""

    def __init__(self, directory: str, name: str, extra: list[str]) -> None:
        super().__init__("xstreamd", extra, workdir=directory)
        self.conf = os.path.join(directory, f"{name}.conf")
        Path(self.conf).write_text('appendonly no\nsave ""\nrepl-diskless-sync-delay 0\n')

    def command(self) -> list[str]:
        python, dash_m, module, *rest = super().command()
        return [python, dash_m, module, self.conf, *rest]


def _sentinel_command(kind: str, conf: str) -> list[str]:
    if kind == "redis":
        exe = shutil.which("redis-sentinel")
        return [exe, conf] if exe else []
    exe = valkey_server_path()
    return [exe, conf, "--sentinel"] if exe else []


@pytest.fixture(params=["redis", "valkey"])
def sentinel_kind(request: pytest.FixtureRequest) -> str:
    kind = request.param
    if not _sentinel_command(kind, "x"):
        if os.environ.get("CI"):
            pytest.fail(f"the {kind} Sentinel must be installed in CI")
        pytest.skip(f"the {kind} Sentinel is not installed")
    return kind


@pytest.fixture
def setup(sentinel_kind: str) -> Iterator[tuple[ServerProcess, list[ConfiguredServer],
                                                  Sentinel]]:
    directory = tempfile.mkdtemp(prefix="sentinel-test-")
    servers: list[ConfiguredServer] = []
    sentinel_proc = None
    try:
        primary = ConfiguredServer(directory, "primary", []).start()
        servers.append(primary)
        for name, priority in (("replica1", "100"), ("replica2", "50")):
            replica = ConfiguredServer(directory, name, [
                "--replicaof", "127.0.0.1", str(primary.port), "--replica-priority", priority])
            servers.append(replica.start())
        for replica in servers[1:]:
            wait_link_up(replica)
        port = free_port()
        conf = os.path.join(directory, "sentinel.conf")
        Path(conf).write_text(
            f"port {port}\nbind 127.0.0.1\ndir {directory}\n"
            f"sentinel monitor {NAME} 127.0.0.1 {primary.port} 1\n"
            f"sentinel down-after-milliseconds {NAME} 1000\n"
            f"sentinel failover-timeout {NAME} 10000\n")
        with open(os.path.join(directory, "sentinel.log"), "ab") as log:
            sentinel_proc = subprocess.Popen(_sentinel_command(sentinel_kind, conf), stdout=log,
                                             stderr=subprocess.STDOUT)
        sentinel = Sentinel([("127.0.0.1", port)], socket_timeout=5)
        wait_for(lambda: len(sentinel.discover_slaves(NAME)) == 2, 30,
                 "Sentinel to find both replicas")
        yield primary, servers[1:], sentinel
    finally:
        if sentinel_proc is not None:
            sentinel_proc.kill()
            sentinel_proc.wait()
        for proc in servers:
            proc.stop(kill=True, cleanup=False)
        shutil.rmtree(directory, ignore_errors=True)


def test_sentinel_fails_over_and_keeps_acknowledged_writes(
        setup: tuple[ServerProcess, list[ConfiguredServer], Sentinel]) -> None:
    primary, replicas, sentinel = setup
    assert sentinel.discover_master(NAME) == ("127.0.0.1", primary.port)
    master = sentinel.master_for(NAME, socket_timeout=5)
    acknowledged = []
    for i in range(200):
        entry = master.xadd("orders", {"n": i})
        if master.execute_command("WAIT", 1, 2000) >= 1:
            acknowledged.append(entry)
    assert len(acknowledged) == 200
    primary.stop(kill=True, cleanup=False)  # SIGKILL: nothing is flushed or handed over
    new = wait_for(lambda: sentinel.discover_master(NAME)[1] != primary.port
                   and sentinel.discover_master(NAME), 60, "Sentinel to promote a replica")
    promoted = next(r for r in replicas if r.port == new[1])
    other = next(r for r in replicas if r is not promoted)
    assert info(promoted)["role"] == "master"
    ids = {entry[0] for entry in redis.Redis(port=promoted.port).xrange("orders")}
    assert all(entry in ids for entry in acknowledged)
    # The client finds the new primary and writes there; the other replica follows it
    # (partially: the promoted replica kept the old history as replid2).
    master = sentinel.master_for(NAME, socket_timeout=5)
    wait_for(lambda: master.xadd("orders", {"after": "failover"}), 30, "a write after failover")
    wait_for(lambda: info(other).get("master_port") == promoted.port, 30,
             "the other replica to follow the new primary")
    wait_link_up(other)
    wait_caught_up(promoted, other)
    assert info(promoted, "stats")["sync_partial_ok"] >= 1
    assert redis.Redis(port=other.port).xlen("orders") == 201
    # CONFIG REWRITE ran on both: the files name the new roles.
    assert f"replicaof 127.0.0.1 {promoted.port}" in Path(other.conf).read_text()
    assert "replicaof" not in Path(promoted.conf).read_text()
