"""The Docker image's command, run the way the image runs it (there is no Docker engine here).

The Dockerfile's COPY sources are copied into a temporary "image" tree and its ENTRYPOINT is
started from the image's WORKDIR with only that tree and the interpreter's site-packages on
the path (`python -S`, so an editable install of this checkout cannot fill in for a file the
Dockerfile forgot to copy). Then: it binds 0.0.0.0 (reached here through a non-loopback local
address when the machine has one), takes the password from XSTREAMD_REQUIREPASS and the data
directory from XSTREAMD_DIR, and keeps its data across a `docker stop` (SIGTERM) and start.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import site
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT, free_port
from tests.integration.ops_helpers import (
    IS_REDIS,
    call,
    connect,
    non_loopback_ipv4,
    read_to_eof,
    resp,
    wait_until,
)

pytestmark = pytest.mark.skipif(IS_REDIS, reason="xstreamd's container entry point")

DOCKERFILE = REPO_ROOT / "Dockerfile"
PASSWORD = "container-secret"
OUTSIDE_IP = non_loopback_ipv4()
HOST = OUTSIDE_IP or "127.0.0.1"


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    lines: list[tuple[str, str]] = []
    pending = ""
    for raw in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        word, _, rest = line.partition(" ")
        lines.append((word.upper(), rest.strip()))
    return lines


def entrypoint() -> list[str]:
    values = [rest for word, rest in dockerfile_instructions() if word == "ENTRYPOINT"]
    assert values, "the Dockerfile has no ENTRYPOINT"
    argv = json.loads(values[-1])  # exec form: no shell between docker and the server
    assert isinstance(argv, list) and all(isinstance(a, str) for a in argv)
    return argv


def copied_sources() -> list[str]:
    sources: list[str] = []
    for word, rest in dockerfile_instructions():
        if word == "COPY" and not rest.startswith("--from"):
            parts = rest.split()
            sources += parts[:-1]
    return sources


@pytest.fixture(scope="module")
def image_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What `COPY` puts into the image, and nothing else from the checkout."""
    root = tmp_path_factory.mktemp("image") / "opt-xstreamd"
    root.mkdir()
    for source in copied_sources():
        src = REPO_ROOT / source
        dst = root / Path(source).name
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, dst)
    return root


def image_env(tree: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XSTREAMD_", "PYTHON"))}
    paths = [str(tree), *site.getsitepackages()]
    user_site = site.getusersitepackages()
    if isinstance(user_site, str) and os.path.isdir(user_site):
        paths.append(user_site)
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


class Container:
    """The entry point as a process: `docker run [-e ...] image --port N`."""

    def __init__(self, tree: Path, data_dir: Path, env: dict[str, str], port: int,
                 extra: list[str] | None = None) -> None:
        argv = entrypoint()
        assert argv[0] in ("python", "python3")
        self.port = port
        self.log = data_dir.parent / f"container-{port}.log"
        command = [sys.executable, "-S", *argv[1:], "--port", str(port), *(extra or [])]
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(command, cwd=data_dir, env=image_env(tree, env),
                                         stdout=out, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout: float = 20.0) -> None:
        def answers() -> bool:
            assert self.proc.poll() is None, self.read_log()
            try:
                with socket.create_connection((HOST, self.port), timeout=1) as sock:
                    sock.sendall(resp("PING"))
                    return sock.recv(64).startswith((b"+PONG", b"-NOAUTH"))
            except OSError:
                return False

        assert wait_until(answers, timeout=timeout), self.read_log()

    def read_log(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # what `docker stop` sends
            try:
                return self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture
def container_factory(image_tree: Path, data_dir: Path) -> Iterator:
    started: list[Container] = []

    def start(env: dict[str, str], port: int | None = None,
              extra: list[str] | None = None) -> Container:
        container = Container(image_tree, data_dir, env, port or free_port(), extra)
        started.append(container)
        container.wait_ready()
        return container

    yield start
    for container in started:
        container.stop()


# -- the Dockerfile itself -------------------------------------------------------------------
def test_dockerfile_shape() -> None:
    instructions = dockerfile_instructions()
    words = [word for word, _ in instructions]
    assert words[0] == "FROM" and instructions[0][1].startswith("python:3.11")
    assert entrypoint()[:3] == ["python", "-m", "server.docker_entry"]
    users = [rest for word, rest in instructions if word == "USER"]
    assert users and users[-1] not in ("root", "0")  # the server does not run as root
    assert ("EXPOSE", "6379") in instructions
    assert any(word == "VOLUME" and "/data" in rest for word, rest in instructions)
    workdirs = [rest for word, rest in instructions if word == "WORKDIR"]
    assert workdirs[-1] == "/data"
    # The C module is built in a stage of its own (setup.py with a compiler) and the image
    # installs the wheel it made: both stages on python:3.11.
    assert "setup.py" in copied_sources()
    stages = [rest for word, rest in instructions if word == "FROM"]
    assert len(stages) == 2 and all(rest.startswith("python:3.11") for rest in stages)
    assert any(word == "RUN" and "gcc" in rest for word, rest in instructions)


def test_image_holds_every_package_the_server_imports(image_tree: Path) -> None:
    """Every first-party top-level package imported by the shipped code was copied."""
    first_party = {p.name for p in REPO_ROOT.iterdir()
                   if p.is_dir() and (p / "__init__.py").exists() and p.name != "tests"}
    shipped = {p.name for p in image_tree.iterdir() if p.is_dir()}
    imported: set[str] = set()
    for package in shipped & first_party:
        for path in (image_tree / package).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    imported |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    imported.add(node.module.split(".")[0])
    missing = (imported & first_party) - shipped
    assert not missing, f"imported but not copied into the image: {sorted(missing)}"
    assert (image_tree / "pyproject.toml").exists()


def test_image_code_is_what_runs(image_tree: Path, data_dir: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-S", "-c",
         "import server.docker_entry, storage.stream, protocol.reader, uvloop, hiredis;"
         "print(server.docker_entry.__file__)"],
        cwd=data_dir, env=image_env(image_tree, {}), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith(str(image_tree))


def test_container_args() -> None:
    from server.docker_entry import container_args

    assert container_args({}, []) == [
        "--bind", "0.0.0.0", "--dir", "/data", "--protected-mode", "no"]
    assert container_args({"XSTREAMD_REQUIREPASS": "pw", "XSTREAMD_DIR": "/x"},
                          ["--appendfsync", "always"]) == [
        "--bind", "0.0.0.0", "--dir", "/x", "--requirepass", "pw", "--appendfsync", "always"]


# -- the entry point running -----------------------------------------------------------------
def test_container_with_password(container_factory, data_dir: Path) -> None:
    container = container_factory({"XSTREAMD_REQUIREPASS": PASSWORD,
                                   "XSTREAMD_DIR": str(data_dir)})
    sock = connect(container.port, HOST)
    assert str(call(sock, "PING")) == "NOAUTH Authentication required."
    assert str(call(sock, "AUTH", "wrong")).startswith("WRONGPASS")
    assert call(sock, "AUTH", PASSWORD) == b"OK"
    assert call(sock, "CONFIG", "GET", "bind") == [b"bind", b"0.0.0.0"]
    assert call(sock, "CONFIG", "GET", "dir") == [b"dir", str(data_dir).encode()]
    assert call(sock, "CONFIG", "GET", "protected-mode") == [b"protected-mode", b"yes"]
    if OUTSIDE_IP is not None:
        info = call(sock, "CLIENT", "INFO")
        assert f"addr={OUTSIDE_IP}:".encode() in info  # a non-loopback peer was let in
    # The password is not on the command line (`docker inspect`, `ps` would show it).
    with open(f"/proc/{container.proc.pid}/cmdline", "rb") as fh:
        assert PASSWORD.encode() not in fh.read()
    # The loopback interface is served too (0.0.0.0 covers it).
    local = connect(container.port)
    assert call(local, "AUTH", PASSWORD) == b"OK"
    assert call(local, "XADD", "s", "1-1", "f", "v") == b"1-1"


def test_container_without_password_serves_outside_clients(container_factory,
                                                           data_dir: Path) -> None:
    container = container_factory({"XSTREAMD_DIR": str(data_dir)})
    sock = connect(container.port, HOST)
    assert call(sock, "PING") == b"PONG"  # protected mode is off: the published port decides
    assert call(sock, "CONFIG", "GET", "protected-mode") == [b"protected-mode", b"no"]


def test_container_keeps_data_across_stop_and_start(container_factory, data_dir: Path) -> None:
    env = {"XSTREAMD_REQUIREPASS": PASSWORD, "XSTREAMD_DIR": str(data_dir)}
    first = container_factory(env)
    sock = connect(first.port, HOST)
    assert call(sock, "AUTH", PASSWORD) == b"OK"
    for i in range(1, 101):
        assert call(sock, "XADD", "events", f"{i}-0", "n", str(i)) == f"{i}-0".encode()
    assert call(sock, "XGROUP", "CREATE", "events", "workers", "0") == b"OK"
    assert first.stop() == 0
    assert read_to_eof(sock) == b""
    assert "ready to exit, bye bye" in first.read_log()
    assert any(data_dir.iterdir())  # the data went to XSTREAMD_DIR
    second = container_factory(env, port=first.port)
    sock = connect(second.port, HOST)
    assert call(sock, "AUTH", PASSWORD) == b"OK"
    assert call(sock, "XLEN", "events") == 100
    groups = call(sock, "XINFO", "GROUPS", "events")
    assert isinstance(groups, list) and len(groups) == 1


def test_container_extra_arguments(container_factory, data_dir: Path) -> None:
    """Arguments after the image name reach the server (`docker run img --appendfsync ...`)."""
    container = container_factory({"XSTREAMD_DIR": str(data_dir)},
                                  extra=["--appendfsync", "always", "--maxclients", "123"])
    sock = connect(container.port, HOST)
    assert call(sock, "CONFIG", "GET", "appendfsync") == [b"appendfsync", b"always"]
    assert call(sock, "CONFIG", "GET", "maxclients") == [b"maxclients", b"123"]
    assert call(sock, "CONFIG", "GET", "port") == [b"port", str(container.port).encode()]
