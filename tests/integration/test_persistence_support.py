"""Shared helpers of the persistence tests (no tests here): servers in a directory that
outlives them, bounded waits on INFO fields, a full dump of the data for comparisons, and a
random command history over strings, streams and consumer groups."""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from tests.helpers import TARGET, ServerProcess

N_DBS = 3

# The pytestmark of the tests of xstreamd's own files: against Redis they do not apply.
files_and_restarts = pytest.mark.skipif(TARGET == "redis", reason="xstreamd's files and restarts")


def start(workdir: str, *args: str, check: bool = True) -> ServerProcess:
    """xstreamd on a free port with its files in workdir (kept when it stops). No save rules
    unless given: snapshots only when a test asks for them. DEBUG (RELOAD, LOADAOF, ...) is
    allowed from the tests' local connections."""
    extra = list(args)
    if "--save" not in extra:
        extra += ["--save", ""]
    if "--enable-debug-command" not in extra:
        extra += ["--enable-debug-command", "local"]
    proc = ServerProcess("xstreamd", extra_args=extra, workdir=workdir)
    if check:
        proc.start()
    return proc


@contextlib.contextmanager
def started(workdir: str, *args: str) -> Iterator[ServerProcess]:
    """start() for the length of a block: the server stops when it ends (its files kept)."""
    proc = start(workdir, *args)
    try:
        yield proc
    finally:
        proc.stop()


def children(pid: int) -> list[int]:
    """The child processes of pid (a BGSAVE or rewrite child while one runs)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(x) for x in fh.read().split()]
    except OSError:
        return []


def connect(proc: ServerProcess, db: int = 0) -> redis.Redis:
    r = redis.Redis(host=proc.host, port=proc.port, db=db, socket_timeout=30)
    r.set_response_callback("XINFO STREAM", lambda raw, **_: raw)  # parsed below
    return r


def info(r: redis.Redis, section: str = "persistence") -> dict[str, Any]:
    return r.info(section)


def wait_for(cond: Callable[[], bool], timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def wait_idle(r: redis.Redis) -> None:
    """No BGSAVE / BGREWRITEAOF child running or scheduled."""
    def idle() -> bool:
        i = info(r)
        return not (i["rdb_bgsave_in_progress"] or i["aof_rewrite_in_progress"]
                    or i["aof_rewrite_scheduled"])
    wait_for(idle, what="background jobs to finish")


def _pairs(flat: list[Any] | dict[bytes, Any]) -> dict[bytes, Any]:
    if isinstance(flat, dict):  # RESP3 map
        return dict(flat)
    return {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}


def stream_full(r: redis.Redis, key: bytes, volatile_times: bool = True,
                layout: bool = True) -> dict[bytes, Any]:
    """XINFO STREAM key FULL COUNT 0 as nested dicts. volatile_times=False drops the consumers'
    seen-time/active-time (an AOF cannot carry them); layout=False drops the node counts (a
    rewrite compacts the nodes)."""
    raw = r.execute_command("XINFO", "STREAM", key, "FULL", "COUNT", "0")
    out = _pairs(raw)
    if not layout:
        out.pop(b"radix-tree-keys")
        out.pop(b"radix-tree-nodes")
    groups = []
    for g in out[b"groups"]:
        gd = _pairs(g)
        consumers = []
        for c in gd[b"consumers"]:
            cd = _pairs(c)
            if not volatile_times:
                cd.pop(b"seen-time")
                cd.pop(b"active-time", None)
            consumers.append(cd)
        gd[b"consumers"] = consumers
        groups.append(gd)
    out[b"groups"] = groups
    return out


def dump_state(proc: ServerProcess, volatile_times: bool = True,
               layout: bool = True) -> list[dict[bytes, Any]]:
    """Every key of the first N_DBS databases: type, value, absolute expiry."""
    state = []
    for db in range(N_DBS):
        r = connect(proc, db)
        keys = {}
        for key in sorted(r.keys("*")):
            kind = r.type(key)
            when = r.pexpiretime(key)
            if kind == b"string":
                keys[key] = (kind, r.get(key), when)
            else:
                keys[key] = (kind, stream_full(r, key, volatile_times, layout), when)
        state.append(keys)
        r.close()
    return state


class History:
    """A random but reproducible sequence of writes over a few keys, run against a server;
    errors are part of the game (they must simply not change anything)."""

    STREAMS = [b"s1", b"s2", b"s3"]
    GROUPS = [b"g1", b"g2"]
    CONSUMERS = [b"alice", b"bob", b"carol"]

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.ids: dict[bytes, list[bytes]] = {k: [] for k in self.STREAMS}
        self.ms = 1_700_000_000_000

    def _id(self, key: bytes) -> bytes:
        known = self.ids[key]
        if known and self.rng.random() < 0.9:
            return self.rng.choice(known)
        return b"%d-%d" % (self.ms - self.rng.randrange(50), self.rng.randrange(3))

    def _ids(self, key: bytes, most: int = 4) -> list[bytes]:
        return [self._id(key) for _ in range(self.rng.randrange(1, most + 1))]

    def command(self) -> list[bytes]:
        rng = self.rng
        key = rng.choice(self.STREAMS)
        group = rng.choice(self.GROUPS)
        consumer = rng.choice(self.CONSUMERS)
        roll = rng.random()
        if roll < 0.30:
            argv = [b"XADD", key]
            if rng.random() < 0.2:
                t = rng.choice([b"MAXLEN", b"MINID"])
                argv += [t, rng.choice([b"~", b"="])]
                argv.append(b"%d" % rng.randrange(5, 40) if t == b"MAXLEN"
                            else b"%d" % (self.ms - rng.randrange(100)))
            if rng.random() < 0.5:
                argv.append(b"*")
            else:
                self.ms += rng.randrange(0, 3)
                argv.append(b"%d-%d" % (self.ms, rng.randrange(1, 4)))
            for _ in range(rng.randrange(1, 3)):
                argv += [rng.choice([b"f", b"g", b"h"]), b"%d" % rng.randrange(10**6)]
            return argv
        if roll < 0.45:
            argv = [b"XREADGROUP", b"GROUP", group, consumer, b"COUNT", b"%d" % rng.randrange(1, 6)]
            if rng.random() < 0.15:
                argv.append(b"NOACK")
            # Only ">": history reads ("0") bump delivery counts without being propagated,
            # as in Redis (see test_history_reads_survive_replay).
            return argv + [b"STREAMS", key, b">"]
        if roll < 0.55:
            return [b"XACK", key, group, *self._ids(key)]
        if roll < 0.60:
            return [b"XDEL", key, *self._ids(key, 2)]
        if roll < 0.64:
            return [b"XCLAIM", key, group, consumer, b"0", *self._ids(key, 3),
                    *rng.choice([[], [b"JUSTID"], [b"RETRYCOUNT", b"7"]])]
        if roll < 0.67:
            return [b"XAUTOCLAIM", key, group, consumer, b"0", b"0", b"COUNT", b"3"]
        if roll < 0.72:
            last = rng.choice([b"$", b"0", self._id(key)])
            extra = [b"MKSTREAM"] if rng.random() < 0.5 else []
            if rng.random() < 0.3:
                extra += [b"ENTRIESREAD", b"%d" % rng.randrange(-1, 20)]
            return [b"XGROUP", b"CREATE", key, group, last, *extra]
        if roll < 0.74:
            return [b"XGROUP", b"SETID", key, group, rng.choice([b"$", b"0", self._id(key)])]
        if roll < 0.755:
            return [b"XGROUP", b"DESTROY", key, group]
        if roll < 0.77:
            return [b"XGROUP", b"CREATECONSUMER", key, group, consumer]
        if roll < 0.78:
            return [b"XGROUP", b"DELCONSUMER", key, group, consumer]
        if roll < 0.80:
            return [b"XTRIM", key, rng.choice([b"MAXLEN", b"MAXLEN"]), rng.choice([b"~", b"="]),
                    b"%d" % rng.randrange(3, 30)]
        if roll < 0.83:
            ids = self._ids(key, 3)
            policy = rng.choice([[], [b"KEEPREF"], [b"DELREF"], [b"ACKED"]])
            if rng.random() < 0.5:
                return [b"XACKDEL", key, group, *policy, b"IDS", b"%d" % len(ids), *ids]
            return [b"XDELEX", key, *policy, b"IDS", b"%d" % len(ids), *ids]
        if roll < 0.85:
            return [b"XSETID", key, b"%d-9" % (self.ms + 5)]
        if roll < 0.91:
            k = rng.choice([b"k1", b"k2"])
            argv = [b"SET", k, b"%d" % rng.randrange(1000)]
            if rng.random() < 0.3:
                argv += [b"EX", b"%d" % rng.randrange(5000, 9000)]
            return argv
        if roll < 0.94:
            ms = b"%d" % rng.randrange(10**7, 10**8)
            return [b"PEXPIRE", rng.choice([b"k1", b"k2", key]), ms]
        if roll < 0.96:
            return [b"PERSIST", rng.choice([b"k1", b"k2", key])]
        if roll < 0.98:
            return [b"DEL", rng.choice([b"k1", b"k2", key])]
        return [b"XTRIM", key, b"MINID", b"~", b"%d" % (self.ms - 20)]

    def run(self, proc: ServerProcess, n: int) -> int:
        """Run n commands (some in MULTI blocks, some in another db); returns the successes."""
        clients = [connect(proc, db) for db in range(N_DBS)]
        ok = 0
        try:
            i = 0
            while i < n:
                r = clients[0 if self.rng.random() < 0.7 else self.rng.randrange(1, N_DBS)]
                if self.rng.random() < 0.08:
                    block = [self.command() for _ in range(self.rng.randrange(2, 5))]
                    pipe = r.pipeline(transaction=True)
                    for argv in block:
                        pipe.execute_command(*argv)
                    for reply in pipe.execute(raise_on_error=False):
                        ok += not isinstance(reply, Exception)
                        self._note(block, reply)
                    i += len(block)
                    continue
                argv = self.command()
                try:
                    reply = r.execute_command(*argv)
                    ok += 1
                    self._note([argv], reply)
                except redis.ResponseError:
                    pass
                i += 1
        finally:
            for c in clients:
                c.close()
        return ok

    def _note(self, block: list[list[bytes]], reply: Any) -> None:
        if isinstance(reply, bytes) and b"-" in reply:
            for argv in block:
                if argv[0] == b"XADD":
                    self.ids[argv[1]].append(reply)
                    ms = int(reply.split(b"-")[0])
                    self.ms = max(self.ms, ms)


def files_in(path: str) -> list[str]:
    return sorted(os.listdir(path)) if os.path.isdir(path) else []
