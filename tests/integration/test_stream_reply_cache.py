"""Range reads served from the cache of encoded stream nodes (storage/stream_resp.py) answer
byte for byte as with the cache off, and as a server running the Python loops instead of
the C ones (storage/native.py): three servers, one with stream-reply-cache-max-bytes 0, one
with XSTREAMD_PURE_PYTHON set, the same random history of XADD, XDEL, XTRIM, XSETID, DEL,
consumer groups (XREADGROUP >, XACK, XPENDING) and reads (XRANGE, XREVRANGE, XREAD, in RESP2
and RESP3) on all three; and the cache shows in INFO and follows CONFIG SET."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from storage import native
from tests.helpers import ServerProcess
from tests.resp import Conn

SMALL_NODES = ["--stream-node-max-entries", "8", "--appendonly", "no", "--save", ""]


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[ServerProcess, ServerProcess, ServerProcess]]:
    off = [*SMALL_NODES, "--stream-reply-cache-max-bytes", "0"]
    pure = {"XSTREAMD_PURE_PYTHON": "1"}
    with (ServerProcess(extra_args=SMALL_NODES) as cached, ServerProcess(extra_args=off) as plain,
          ServerProcess(extra_args=SMALL_NODES, env=pure) as python_loops):
        yield cached, plain, python_loops


_INT_LIKE = ["0", "-0", "007", "+5", "-1", "127", "128", "-4096", "4095", "4096", "-32769",
             "8388607", "-8388609", "2147483648", "9223372036854775807", "9223372036854775808",
             "-9223372036854775808", "-9223372036854775809", "12345678901234567890123", "1e3",
             " 1", "1 "]


def _an_id(rng: random.Random, top: int) -> str:
    return rng.choice(["-", "+", f"{rng.randrange(top)}",
                       f"{rng.randrange(top)}-{rng.randrange(3)}", f"({rng.randrange(1, top)}-0"])


def _read(rng: random.Random, top: int) -> list[str]:
    kind = rng.randrange(3)
    count = [] if rng.random() < 0.3 else ["COUNT", str(rng.choice([1, 3, 10, 100]))]
    if kind == 0:
        return ["XRANGE", "s", _an_id(rng, top), "+" if rng.random() < 0.5 else _an_id(rng, top),
                *count]
    if kind == 1:
        return ["XREVRANGE", "s", "+" if rng.random() < 0.5 else _an_id(rng, top),
                _an_id(rng, top), *count]
    after = rng.choice(["0", f"{rng.randrange(top)}-{rng.randrange(3)}"])
    return ["XREAD", *count, "STREAMS", "s", "s2", after, "0"]


@pytest.mark.parametrize("seed", range(6))
def test_replies_are_the_same_with_and_without_the_cache(pair, seed: int) -> None:
    rng = random.Random(seed)
    conns = [Conn(server) for server in pair]
    protocol = rng.choice([2, 3])
    try:
        for conn in conns:
            conn.call("FLUSHALL")
            conn.call("HELLO", protocol)
        ms = 1
        for step in range(600):
            op = rng.random()
            if op < 0.55:
                ms += rng.randrange(0, 3)
                key = "s" if rng.random() < 0.9 else "s2"
                fields = rng.choice([["f", str(rng.randrange(10**7))],
                                     ["a", "x" * rng.randrange(70), "b", str(rng.randrange(99))],
                                     ["big", "y" * 1500],
                                     # every listpack encoding of a value: the int widths,
                                     # texts that only look like ints, long strings
                                     ["f", rng.choice(_INT_LIKE)],
                                     ["-12", str(rng.randrange(-2**63, 2**63)), "z" * 5000, ""]])
                command = ["XADD", key, f"{ms}-*", *fields]
            elif op < 0.65:
                command = ["XDEL", "s", *(f"{rng.randrange(ms + 1)}-{rng.randrange(3)}"
                                          for _ in range(3))]
            elif op < 0.68:
                command = ["XTRIM", "s", "MAXLEN", rng.choice(["=", "~"]), str(rng.randrange(200))]
            elif op < 0.70:
                command = ["XTRIM", "s", "MINID", f"{rng.randrange(ms + 1)}"]
            elif op < 0.71:
                ms += 5
                command = ["XSETID", "s", f"{ms}-0"]
            elif op < 0.712:
                command = ["DEL", "s"]
            elif op < 0.74:
                command = ["XGROUP", "CREATE", "s", "g", rng.choice(["0", "$"]), "MKSTREAM"]
            elif op < 0.80:
                command = ["XREADGROUP", "GROUP", "g", f"c{rng.randrange(3)}", "COUNT",
                           str(rng.choice([1, 5, 30])), "STREAMS", "s", ">"]
                if rng.random() < 0.2:
                    command.insert(6, "NOACK")
            elif op < 0.83:
                command = ["XACK", "s", "g", *(f"{rng.randrange(ms + 1)}-{rng.randrange(3)}"
                                               for _ in range(5))]
            elif op < 0.84:
                command = ["XPENDING", "s", "g"]
            else:
                command = _read(rng, ms + 2)
            replies = [conn.call(*command) for conn in conns]
            assert replies[0] == replies[1] == replies[2], (step, command)
        info = conns[0].call("INFO", "stats")
        assert int(info.split(b"stream_reply_cache_hits:")[1].split(b"\r\n")[0]) > 0
        info = conns[1].call("INFO", "stats")
        assert b"stream_reply_cache_hits:0\r\n" in info
    finally:
        for conn in conns:
            conn.close()


def test_info_and_config_set(pair) -> None:
    cached = pair[0]
    conn = Conn(cached)
    try:
        conn.call("FLUSHALL")
        for i in range(1, 201):
            conn.call("XADD", "t", f"{i}-1", "f", "v")
        conn.call("XRANGE", "t", "-", "+")
        memory = conn.call("INFO", "memory")
        used = int(memory.split(b"mem_stream_reply_cache:")[1].split(b"\r\n")[0])
        assert used > 0
        conn.call("CONFIG", "SET", "stream-reply-cache-max-bytes", "0")
        memory = conn.call("INFO", "memory")
        assert b"mem_stream_reply_cache:0\r\n" in memory
        assert conn.call("CONFIG", "GET", "stream-reply-cache-max-bytes").endswith(b"$1\r\n0\r\n")
        conn.call("CONFIG", "SET", "stream-reply-cache-max-bytes", "64mb")
    finally:
        conn.close()


def test_the_third_server_runs_the_python_loops(pair) -> None:
    with open(pair[2].log_path, encoding="utf-8") as log:
        assert "stream listpack loops run in Python" in log.read()
    if native.available():
        with open(pair[0].log_path, encoding="utf-8") as log:
            assert "loops run in Python" not in log.read()
