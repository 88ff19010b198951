"""redis-benchmark runs against the server: its standard tests that the server supports (PING,
SET, GET, INCR, MSET), custom stream commands (pipelined, random keys, CSV output), RESP3 and a
password. Only correctness is checked here (the run completes, the data it wrote is there);
speed is measured in bench/.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.helpers import ServerProcess
from tests.integration.ops_helpers import call, connect, running

pytestmark = pytest.mark.skipif(shutil.which("redis-benchmark") is None,
                                reason="redis-benchmark is not installed")

PASSWORD = "bench-pass"


def bench(port: int, *args: str) -> str:
    done = subprocess.run(["redis-benchmark", "-p", str(port), *args], capture_output=True,
                          timeout=120, check=False)
    out = done.stdout.decode(errors="replace")
    assert done.returncode == 0, out[-2000:] + done.stderr.decode(errors="replace")
    # -q progress lines end in '\r'; keep the final ones.
    return "\n".join(part for line in out.splitlines() for part in line.split("\r")[-1:])


def rates(out: str) -> dict[str, float]:
    found = {}
    for match in re.finditer(r"^([A-Z_]+(?: [^:]+)?): ([\d.]+) requests per second", out, re.M):
        found[match.group(1)] = float(match.group(2))
    return found


def test_standard_tests(flushed: ServerProcess) -> None:
    out = bench(flushed.port, "-n", "3000", "-c", "10", "-t", "ping,set,get", "-q")
    found = rates(out)
    assert set(found) == {"PING_INLINE", "PING_MBULK", "SET", "GET"}, out
    assert all(rate > 0 for rate in found.values())
    sock = connect(flushed.port)
    value = call(sock, "GET", "key:__rand_int__")  # -d defaults to 3 bytes (random letters)
    assert isinstance(value, bytes) and len(value) == 3


def test_string_tests(flushed: ServerProcess) -> None:
    out = bench(flushed.port, "-n", "2000", "-c", "10", "-t", "set,get,incr,mset", "-q")
    found = rates(out)
    assert set(found) == {"SET", "GET", "INCR", "MSET (10 keys)"}, out
    assert all(rate > 0 for rate in found.values())
    sock = connect(flushed.port)
    assert call(sock, "GET", "counter:__rand_int__") == b"2000"  # INCR's one key, each time


def test_pipelined_xadd(flushed: ServerProcess) -> None:
    requests, clients, pipeline = 5000, 10, 16
    out = bench(flushed.port, "-n", str(requests), "-c", str(clients), "-P", str(pipeline), "-q",
                "XADD", "bench", "*", "field", "value")
    assert "XADD bench * field value" in rates(out)
    sock = connect(flushed.port)
    length = call(sock, "XLEN", "bench")
    # redis-benchmark sends whole pipelines, so it may overshoot by a few batches.
    assert isinstance(length, int) and requests <= length <= requests + clients * pipeline
    first, last = call(sock, "XRANGE", "bench", "-", "+", "COUNT", "1"), call(
        sock, "XREVRANGE", "bench", "+", "-", "COUNT", "1")
    assert first[0][1] == last[0][1] == [b"field", b"value"]  # type: ignore[index]


def test_random_keys_and_csv(flushed: ServerProcess) -> None:
    out = bench(flushed.port, "-n", "3000", "-c", "8", "-r", "50", "--csv",
                "XADD", "s:__rand_int__", "*", "f", "v")
    lines = out.strip().splitlines()
    assert lines[0].startswith('"test","rps"')
    row = lines[-1].split('","')
    assert row[0] == '"XADD s:__rand_int__ * f v' and float(row[1]) > 0
    sock = connect(flushed.port)
    keys = call(sock, "KEYS", "s:*")
    assert isinstance(keys, list) and 1 <= len(keys) <= 50
    assert sum(call(sock, "XLEN", key) for key in keys) == 3000  # type: ignore[misc]


def test_reads_on_a_filled_stream(flushed: ServerProcess) -> None:
    sock = connect(flushed.port)
    for i in range(1, 101):
        call(sock, "XADD", "filled", f"{i}-0", "n", str(i))
    out = bench(flushed.port, "-n", "2000", "-c", "5", "-q", "XRANGE", "filled", "-", "+",
                "COUNT", "10")
    assert "XRANGE filled - + COUNT 10" in rates(out)
    out = bench(flushed.port, "-n", "2000", "-c", "5", "-q", "XREAD", "COUNT", "10", "STREAMS",
                "filled", "0")
    assert "XREAD COUNT 10 STREAMS filled 0" in rates(out)


def test_resp3(flushed: ServerProcess) -> None:
    out = bench(flushed.port, "-3", "-n", "2000", "-c", "5", "-q", "XADD", "r3", "*", "f", "v")
    assert "XADD r3 * f v" in rates(out)
    sock = connect(flushed.port)
    assert call(sock, "XLEN", "r3") == 2000


def test_with_password() -> None:
    with running(["--requirepass", PASSWORD]) as proc:
        out = bench(proc.port, "-a", PASSWORD, "-n", "2000", "-c", "5", "-q",
                    "XADD", "auth", "*", "f", "v")
        assert "XADD auth * f v" in rates(out)
        sock = connect(proc.port)
        assert call(sock, "AUTH", PASSWORD) == b"OK"
        assert call(sock, "XLEN", "auth") == 2000
