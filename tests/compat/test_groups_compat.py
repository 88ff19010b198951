"""Random sequences of consumer-group commands sent to xstreamd and to Debian's redis-server
(7.0), replies compared (RESP2 and RESP3): XGROUP, XREADGROUP (new entries, history, NOACK),
XACK, XCLAIM, XAUTOCLAIM, XPENDING, XINFO GROUPS / CONSUMERS, with and without deletions.

Only what is the same in 7.0 and 8.4 is compared: times (idle, seen, delivery) are masked;
consumers are all created up front (7.2 made XCLAIM create its consumer even when it claims
nothing); XINFO CONSUMERS is compared on name and pending (7.2 added `inactive`); and with
deletions or trims the read counter and lag are masked, since Redis fixed their rules after
7.0 (redis#13338, #13473, #13958).
"""

from __future__ import annotations

import random
import socket
from collections.abc import Iterator

import hiredis
import pytest

from tests.helpers import ServerProcess
from tests.resp import encode

pytestmark = pytest.mark.compat

KEYS = ["g:s1", "g:s2"]
GROUPS = ["ga", "gb"]
CONSUMERS = ["c1", "c2", "c3"]


class Conn:
    """Pipelines commands and returns the parsed replies (errors as ('ERR', text))."""

    def __init__(self, server: ServerProcess, protocol: int) -> None:
        self.sock = socket.create_connection((server.host, server.port), timeout=30)
        self.reader = hiredis.Reader()
        if protocol == 3:
            self.run([["HELLO", "3"]])

    def run(self, commands: list[list[str]]) -> list[object]:
        self.sock.sendall(b"".join(encode(*c) for c in commands))
        out: list[object] = []
        while len(out) < len(commands):
            reply = self.reader.gets()
            if reply is False:
                chunk = self.sock.recv(1 << 20)
                assert chunk, "connection closed"
                self.reader.feed(chunk)
                continue
            if isinstance(reply, hiredis.ReplyError):
                reply = ("ERR", str(reply))
            out.append(reply)
        return out

    def close(self) -> None:
        self.sock.close()


def _pairs(reply: object) -> dict:
    if isinstance(reply, dict):
        return reply
    assert isinstance(reply, list)
    return {reply[i]: reply[i + 1] for i in range(0, len(reply), 2)}


def normalize(cmd: list[str], reply: object, with_deletes: bool) -> object:
    """Mask what legitimately differs between 7.0 and 8.4 (see the module docstring)."""
    if isinstance(reply, tuple):
        return reply
    name = cmd[0].upper()
    if name == "XPENDING" and len(cmd) > 3 and isinstance(reply, list):
        return [[row[0], row[1], "idle", row[3]] for row in reply]
    if name == "XINFO" and cmd[1] == "CONSUMERS":
        return [(_pairs(c)[b"name"], _pairs(c)[b"pending"]) for c in reply]  # type: ignore[union-attr]
    if name == "XINFO" and cmd[1] == "GROUPS":
        out = []
        for g in reply:  # type: ignore[union-attr]
            info = _pairs(g)
            row = [info[b"name"], info[b"consumers"], info[b"pending"],
                   info[b"last-delivered-id"]]
            if not with_deletes:
                row += [info[b"entries-read"], info[b"lag"]]
            out.append(row)
        return out
    return reply


class Generator:
    def __init__(self, seed: int, with_deletes: bool) -> None:
        self.rnd = random.Random(seed)
        self.with_deletes = with_deletes
        self.next_ms = 1

    def id(self) -> str:
        rnd = self.rnd
        ms = rnd.randint(0, self.next_ms + 1)
        return str(ms) if rnd.random() < 0.2 else f"{ms}-0"

    def setup(self) -> list[list[str]]:
        cmds: list[list[str]] = []
        for key in KEYS:
            cmds.append(["DEL", key])
            for group in GROUPS:
                cmds.append(["XGROUP", "CREATE", key, group, "$", "MKSTREAM"])
                for c in CONSUMERS:
                    cmds.append(["XGROUP", "CREATECONSUMER", key, group, c])
        return cmds

    def command(self) -> list[list[str]]:
        rnd = self.rnd
        key = rnd.choice(KEYS)
        group = rnd.choice(GROUPS)
        consumer = rnd.choice(CONSUMERS)
        kind = rnd.random()
        if kind < 0.22:
            self.next_ms += 1
            return [["XADD", key, f"{self.next_ms}-0", "f", str(rnd.randint(0, 99))]]
        if kind < 0.38:
            opts = ["COUNT", str(rnd.randint(0, 4))] if rnd.random() < 0.6 else []
            if rnd.random() < 0.2:
                opts.append("NOACK")
            keys = rnd.sample(KEYS, rnd.randint(1, 2))
            ids = [">" if rnd.random() < 0.7 else rnd.choice(["0", self.id()]) for _ in keys]
            return [["XREADGROUP", "GROUP", group, consumer, *opts, "STREAMS", *keys, *ids]]
        if kind < 0.48:
            return [["XACK", key, group, *[self.id() for _ in range(rnd.randint(1, 3))]]]
        if kind < 0.56:
            opts = []
            for opt in ("JUSTID", "FORCE"):
                if rnd.random() < 0.3:
                    opts.append(opt)
            if rnd.random() < 0.3:
                opts += ["RETRYCOUNT", str(rnd.randint(0, 5))]
            if rnd.random() < 0.2:
                opts += ["LASTID", self.id()]
            ids = [self.id() for _ in range(rnd.randint(1, 3))]
            return [["XCLAIM", key, group, consumer, "0", *ids, *opts]]
        if kind < 0.62:
            opts = ["COUNT", str(rnd.randint(1, 4))] if rnd.random() < 0.6 else []
            if rnd.random() < 0.3:
                opts.append("JUSTID")
            start = rnd.choice(["0", "-", self.id(), "(" + self.id()])
            return [["XAUTOCLAIM", key, group, consumer, "0", start, *opts]]
        if kind < 0.72:
            if rnd.random() < 0.4:
                return [["XPENDING", key, group]]
            cmd = ["XPENDING", key, group, rnd.choice(["-", self.id()]),
                   rnd.choice(["+", self.id()]), str(rnd.randint(0, 5))]
            if rnd.random() < 0.4:
                cmd.append(consumer)
            return [cmd]
        if kind < 0.78:
            return [["XINFO", "GROUPS", key]]
        if kind < 0.82:
            return [["XINFO", "CONSUMERS", key, group]]
        if kind < 0.85:
            target = rnd.choice(["$", "0", self.id()])
            return [["XGROUP", "SETID", key, group, target]]
        if kind < 0.87:
            return [["XGROUP", "DELCONSUMER", key, group, consumer],
                    ["XGROUP", "CREATECONSUMER", key, group, consumer]]
        if kind < 0.89:
            return [["XGROUP", "DESTROY", key, group],
                    ["XGROUP", "CREATE", key, group, rnd.choice(["0", "$"])],
                    *[["XGROUP", "CREATECONSUMER", key, group, c] for c in CONSUMERS]]
        if self.with_deletes and kind < 0.95:
            if rnd.random() < 0.6:
                return [["XDEL", key, self.id()]]
            return [["XTRIM", key, "MAXLEN", str(rnd.randint(0, 6))]]
        return [rnd.choice([
            ["XREADGROUP", "GROUP", "nope", consumer, "STREAMS", key, ">"],
            ["XREADGROUP", "GROUP", group, consumer, "STREAMS", key, "$"],
            ["XACK", key, group, "bad-id"],
            ["XCLAIM", key, "nope", consumer, "0", "1-0"],
            ["XCLAIM", key, group, consumer, "x", "1-0"],
            ["XAUTOCLAIM", key, group, consumer, "0", "0", "COUNT", "0"],
            ["XPENDING", key, "nope"],
            ["XPENDING", key, group, "-", "+"],
            ["XGROUP", "CREATE", key, group, "$"],
            ["XGROUP", "SETID", key, "nope", "0"],
            ["XINFO", "CONSUMERS", key, "nope"],
            ["XGROUP", "CREATE", "g:missing", group, "$"],
        ])]


@pytest.fixture
def conns(server: ServerProcess, redis_ref: ServerProcess) -> Iterator[dict]:
    made: dict = {}
    for proto in (2, 3):
        made[proto] = (Conn(server, proto), Conn(redis_ref, proto))
    yield made
    for ours, ref in made.values():
        ours.run([["DEL", *KEYS]])
        ref.run([["DEL", *KEYS]])
        ours.close()
        ref.close()


@pytest.mark.parametrize("with_deletes", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_random_group_commands(conns, seed, with_deletes):
    gen = Generator(seed * 7919 + with_deletes, with_deletes)
    proto = 2 if seed % 2 == 0 else 3
    ours, ref = conns[proto]
    setup = gen.setup()
    assert ours.run(setup) == ref.run(setup)
    for step in range(200):
        batch = gen.command()
        got, want = ours.run(batch), ref.run(batch)
        for cmd, a, b in zip(batch, got, want, strict=True):
            assert normalize(cmd, a, with_deletes) == normalize(cmd, b, with_deletes), (
                f"step {step}: {cmd}")
