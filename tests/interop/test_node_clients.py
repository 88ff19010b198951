"""Node.js clients against the server: ioredis and node-redis (versions pinned in
tests/interop/node/package-lock.json) doing XADD / XGROUP / XREADGROUP BLOCK / XACK /
XAUTOCLAIM / XPENDING / XINFO in RESP2 and RESP3, with and without a password.

The packages are installed with `npm ci` into tests/interop/node/node_modules (git-ignored) the
first time; without node and npm the tests are skipped (in CI, where node 20 is present, a
failed install is an error).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import ServerProcess
from tests.integration.ops_helpers import running

NODE_DIR = Path(__file__).resolve().parent / "node"
NODE = shutil.which("node")
NPM = shutil.which("npm")
PASSWORD = "node-pass"

pytestmark = pytest.mark.skipif(NODE is None or NPM is None,
                                reason="node and npm are needed for the Node client tests")


def installed_versions_match() -> bool:
    """node_modules already holds exactly the locked versions of both clients."""
    lock = json.loads((NODE_DIR / "package-lock.json").read_text(encoding="utf-8"))
    for name in ("ioredis", "redis"):
        wanted = lock["packages"].get(f"node_modules/{name}", {}).get("version")
        manifest = NODE_DIR / "node_modules" / name / "package.json"
        if not manifest.exists():
            return False
        if json.loads(manifest.read_text(encoding="utf-8")).get("version") != wanted:
            return False
    return True


@pytest.fixture(scope="module")
def node_clients() -> Path:
    if not installed_versions_match():
        done = subprocess.run([NPM, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                              cwd=NODE_DIR, capture_output=True, text=True, timeout=600,
                              check=False)
        if done.returncode != 0:
            message = f"npm ci failed (registry unreachable?):\n{done.stdout}\n{done.stderr}"
            if os.environ.get("CI"):
                pytest.fail(message)
            pytest.skip(message)
    return NODE_DIR


@pytest.fixture(scope="module")
def plain() -> Iterator[ServerProcess]:
    with running() as proc:
        yield proc


@pytest.fixture(scope="module")
def secured() -> Iterator[ServerProcess]:
    with running(["--requirepass", PASSWORD]) as proc:
        yield proc


def run_check(node_dir: Path, script: str, port: int, resp: int,
              password: str | None = None) -> str:
    env = dict(os.environ, XSTREAMD_PORT=str(port), XSTREAMD_RESP=str(resp))
    if password:
        env["XSTREAMD_PASSWORD"] = password
    done = subprocess.run([NODE, script], cwd=node_dir, env=env, capture_output=True,  # type: ignore[list-item]
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{script} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout.strip()


SCRIPTS = {"ioredis": "ioredis_check.js", "node-redis": "node_redis_check.js"}


@pytest.mark.parametrize("resp", [2, 3])
@pytest.mark.parametrize("library", list(SCRIPTS))
def test_node_client(node_clients: Path, plain: ServerProcess, library: str, resp: int) -> None:
    out = run_check(node_clients, SCRIPTS[library], plain.port, resp)
    assert out == f"ok {library} resp{resp}"


@pytest.mark.parametrize("library", list(SCRIPTS))
def test_node_client_with_password(node_clients: Path, secured: ServerProcess,
                                   library: str) -> None:
    out = run_check(node_clients, SCRIPTS[library], secured.port, 3, PASSWORD)
    assert out == f"ok {library} resp3"
