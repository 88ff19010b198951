"""The at-least-once consumer loop of the seed document (002): on start a consumer reads its
own history (ID 0) until it is empty, then reads new entries (`>`) and acknowledges each one
after processing it. Real redis-py consumers run it against a real server while:

* one consumer process is killed (SIGKILL) while it holds unacknowledged entries, which a
  recovery consumer takes over with XAUTOCLAIM once they are idle enough;
* one consumer "crashes" without acknowledging a batch and restarts under the same name,
  finding that batch again in its history.

At the end every entry was processed and acknowledged exactly once (XACK answered 1 once
per ID), nothing is left pending, and the killed consumer's entries went to the recoverer.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections import Counter

import redis

from tests.helpers import ServerProcess

KEY = "jobs"
GROUP = "workers"
N_JOBS = 240
IDLE_MS = 300


def connect(server: ServerProcess) -> redis.Redis:
    return redis.Redis(host=server.host, port=server.port, decode_responses=True)


class Ledger:
    """What the consumers did: every processing and every XACK that returned 1."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.processed: Counter[str] = Counter()
        self.acked: Counter[str] = Counter()
        self.acked_by: dict[str, str] = {}

    def process_and_ack(self, c: redis.Redis, name: str, ids: list[str]) -> None:
        for entry_id in ids:
            with self.lock:
                self.processed[entry_id] += 1
            if c.xack(KEY, GROUP, entry_id) == 1:
                with self.lock:
                    self.acked[entry_id] += 1
                    self.acked_by[entry_id] = name


def consumer_loop(server: ServerProcess, name: str, ledger: Ledger, stop: threading.Event,
                  crash_after_first_batch: bool = False) -> None:
    """The seed's loop: history first, then new entries."""
    c = connect(server)
    try:
        while not stop.is_set():  # 1. the consumer's own pending entries
            reply = c.xreadgroup(GROUP, name, {KEY: "0"}, count=20, block=100)
            batch = [eid for eid, _ in reply[0][1]] if reply else []
            if not batch:
                break
            ledger.process_and_ack(c, name, batch)
        while not stop.is_set():  # 2. new entries
            reply = c.xreadgroup(GROUP, name, {KEY: ">"}, count=10, block=100)
            if not reply:
                continue
            batch = [eid for eid, _ in reply[0][1]]
            if crash_after_first_batch:
                return  # gone without acknowledging
            ledger.process_and_ack(c, name, batch)
    finally:
        c.close()


def victim(host: str, port: int, held: multiprocessing.Queue, acked: multiprocessing.Queue) -> None:
    """A consumer process: acknowledges one batch, then takes another and hangs on to it."""
    c = redis.Redis(host=host, port=port, decode_responses=True)
    reply = c.xreadgroup(GROUP, "victim", {KEY: ">"}, count=5)
    for eid, _ in reply[0][1]:
        if c.xack(KEY, GROUP, eid) == 1:
            acked.put(eid)
    # A Queue's items reach the pipe from a feeder thread: flush them before `held` tells the
    # test to kill this process, or acknowledged IDs could be lost with it (and look lost).
    acked.close()
    acked.join_thread()
    reply = c.xreadgroup(GROUP, "victim", {KEY: ">"}, count=5)
    held.put([eid for eid, _ in reply[0][1]])
    time.sleep(3600)


def recoverer_loop(server: ServerProcess, ledger: Ledger, stop: threading.Event) -> None:
    """Claims entries idle for IDLE_MS (their consumer is presumed dead) and processes them."""
    c = connect(server)
    try:
        cursor = "0-0"
        while not stop.is_set():
            cursor, claimed, _deleted = c.xautoclaim(KEY, GROUP, "recoverer", IDLE_MS, cursor,
                                                     count=25)
            ids = [eid for eid, _ in claimed]
            ledger.process_and_ack(c, "recoverer", ids)
            if cursor == "0-0" and not ids:
                time.sleep(0.05)
    finally:
        c.close()


def test_at_least_once_with_a_killed_consumer(server):
    admin = connect(server)
    admin.flushall()
    admin.xgroup_create(KEY, GROUP, "$", mkstream=True)
    for i in range(N_JOBS):
        admin.xadd(KEY, {"job": str(i)})
    all_ids = [eid for eid, _ in admin.xrange(KEY)]
    ledger = Ledger()

    # The victim takes two batches first, so it surely holds entries when it dies.
    ctx = multiprocessing.get_context("fork")
    held_q: multiprocessing.Queue = ctx.Queue()
    acked_q: multiprocessing.Queue = ctx.Queue()
    proc = ctx.Process(target=victim, args=(server.host, server.port, held_q, acked_q))
    proc.start()
    held = held_q.get(timeout=20)
    proc.kill()
    proc.join(10)
    while not acked_q.empty():
        eid = acked_q.get()
        ledger.processed[eid] += 1
        ledger.acked[eid] += 1
        ledger.acked_by[eid] = "victim"
    assert len(held) == 5

    stop = threading.Event()
    # "crasher" reads one batch and leaves; it restarts below under the same name.
    crasher = threading.Thread(target=consumer_loop,
                               args=(server, "crasher", ledger, stop, True))
    crasher.start()
    crasher.join(20)
    crashed_with = admin.xpending_range(KEY, GROUP, "-", "+", 100, "crasher")
    assert crashed_with, "the crasher should hold a batch"

    threads = [
        threading.Thread(target=consumer_loop, args=(server, name, ledger, stop))
        for name in ("alice", "bob", "crasher")  # the crasher restarts: history first
    ]
    threads.append(threading.Thread(target=recoverer_loop, args=(server, ledger, stop)))
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with ledger.lock:
                done = len(ledger.acked)
            if done == N_JOBS and admin.xpending(KEY, GROUP)["pending"] == 0:
                break
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join(20)
        admin.close()

    assert set(ledger.acked) == set(all_ids), "an entry was lost"
    assert max(ledger.acked.values()) == 1, "an entry was acknowledged twice"
    assert all(ledger.processed[eid] >= 1 for eid in all_ids)
    # The killed consumer's entries were recovered by XAUTOCLAIM, the crasher's by itself.
    assert {ledger.acked_by[eid] for eid in held} == {"recoverer"}
    crashed_ids = [p["message_id"] for p in crashed_with]
    assert all(ledger.acked_by[eid] in ("crasher", "recoverer") for eid in crashed_ids)
    c = connect(server)
    try:
        assert c.xpending(KEY, GROUP)["pending"] == 0
        info = {g["name"]: g for g in c.xinfo_groups(KEY)}[GROUP]
        assert info["lag"] == 0 and info["entries-read"] == N_JOBS
        consumers = {x["name"] for x in c.xinfo_consumers(KEY, GROUP)}
        assert {"victim", "crasher", "alice", "bob", "recoverer"} <= consumers
    finally:
        c.close()
