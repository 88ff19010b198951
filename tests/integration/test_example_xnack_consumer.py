"""examples/xnack_consumer.py: a worker that releases its unfinished jobs with XNACK when it
stops, and a second worker that claims them first."""

from __future__ import annotations

import subprocess
import sys

import pytest
import redis

from tests.helpers import REPO_ROOT, TARGET, ServerProcess

pytestmark = pytest.mark.skipif(TARGET == "redis", reason="Redis 8.8 (redis-server is 7.0)")
SCRIPT = str(REPO_ROOT / "examples" / "xnack_consumer.py")


def _run(server: ServerProcess, *args: str) -> list[str]:
    out = subprocess.run([sys.executable, SCRIPT, "--port", str(server.port), *args],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return out.splitlines()


def test_graceful_shutdown_hands_jobs_to_the_next_worker(server: ServerProcess,
                                                          r: redis.Redis) -> None:
    first = _run(server, "--generate", "6", "--name", "w1", "--stop-after", "2")
    ids = [eid.decode() for eid, _ in r.xrange("jobs")]
    assert first == [f"w1 done {ids[0]}", f"w1 done {ids[1]}",
                     *(f"w1 released {eid}" for eid in ids[2:])]
    pending = r.xpending("jobs", "workers")
    assert pending["pending"] == 4 and not pending["consumers"]  # released: nobody owns them
    second = _run(server, "--name", "w2")
    # the released jobs come first, in the order they were released; the bad one fails
    # (FATAL), and claimed again with the maximum delivery count it goes to jobs:dead
    assert second == [*(f"w2 done {eid}" for eid in ids[2:5]), f"w2 failed {ids[5]}",
                      f"w2 dead {ids[5]}"]
    assert r.xpending("jobs", "workers")["pending"] == 0
    assert [fields[b"id"].decode() for _, fields in r.xrange("jobs:dead")] == [ids[5]]
