"""Consumer groups come back from the AOF as they were: XREADGROUP and XCLAIM propagate as
XCLAIM ... FORCE JUSTID LASTID, and replaying those (ascending IDs onto the PEL's right
edge, IDs below pending ones, entries deleted since, several groups on the same IDs) must
rebuild every group's pending entries, times, counts and owners exactly."""

from __future__ import annotations

import redis

from tests.helpers import ServerProcess

KEY = "s"


def pels(r: redis.Redis) -> list[object]:
    """Every group's state with absolute times: XINFO STREAM FULL's groups, without the
    consumers' seen and active times (a replay is a new claim by the same consumer)."""
    full = r.xinfo_stream(KEY, full=True)
    out = []
    for g in full["groups"]:
        consumers = [(c[b"name"], c[b"pel-count"], c[b"pending"]) for c in g["consumers"]]
        out.append((g["name"], g["last-delivered-id"], g["entries-read"], g["pel-count"],
                    g["pending"], consumers))
    return out


def test_groups_after_restart_from_the_aof():
    server = ServerProcess(extra_args=["--appendonly", "yes", "--save", ""]).start()
    try:
        r = redis.Redis(port=server.port)
        ids = [r.xadd(KEY, {"f": "v", "n": i}) for i in range(600)]
        r.xgroup_create(KEY, "g", id="0")
        r.xgroup_create(KEY, "h", id="0")
        # reads in batches: ascending IDs, each above every pending one
        for _ in range(3):
            r.xreadgroup("g", "c1", {KEY: ">"}, count=100)
        r.xreadgroup("h", "d1", {KEY: ">"}, count=250)  # the same IDs pending in two groups
        r.xack(KEY, "g", *ids[0:300:3])
        # claims below the pending maximum, with and without JUSTID, some with TIME
        r.xclaim(KEY, "g", "c2", 0, ids[10:40])
        r.xclaim(KEY, "g", "c3", 0, ids[250:260], justid=True, idle=5000)
        r.xclaim(KEY, "g", "c3", 0, [ids[400], ids[450]], force=True, justid=True)
        r.xclaim(KEY, "h", "d2", 0, ids[100:110], retrycount=7)
        # entries deleted while pending: the next claim drops them from the PEL
        r.xdel(KEY, *ids[50:55])
        r.xclaim(KEY, "g", "c2", 0, ids[50:53], justid=True)
        r.xclaim(KEY, "h", "d2", 0, ids[50:53])
        r.xreadgroup("g", "c1", {KEY: ">"}, count=50)
        r.xautoclaim(KEY, "h", "d3", 0, "0", count=20)
        before = pels(r)
        before_pending = [r.xpending_range(KEY, g, "-", "+", 1000) for g in ("g", "h")]
        server.stop(cleanup=False)
        server.start()
        after = pels(r)
        after_pending = [r.xpending_range(KEY, g, "-", "+", 1000) for g in ("g", "h")]
        assert after == before
        owners = {c[0] for group in before for c in group[5] if c[1]}
        assert owners == {b"c1", b"c2", b"c3", b"d1", b"d2", b"d3"}
        assert len(after_pending[0]) == len(before_pending[0]) > 0
        for was, now in zip(before_pending, after_pending, strict=True):
            assert [(p["message_id"], p["consumer"], p["times_delivered"]) for p in now] == \
                [(p["message_id"], p["consumer"], p["times_delivered"]) for p in was]
            # the delivery times come back (the idle times grew by the restart's duration)
            for p, q in zip(was, now, strict=True):
                assert q["time_since_delivered"] >= p["time_since_delivered"]
    finally:
        server.stop()
