"""The dirty counter (INFO persistence rdb_changes_since_last_save, which the `save` points
read): what each stream command adds, as Redis 8.4 counts it. Rows where Redis 7.0 counts
the same are also checked against Debian's redis-server when it is installed."""

from __future__ import annotations

import pytest
import redis

from tests.helpers import ServerProcess
from tests.integration.server_fixtures import module_server

srv = module_server()

# (command, changes in 8.4, does Redis 7.0 count the same?)
SCRIPT: list[tuple[str, int, bool]] = [
    ("XADD x 1-0 a 1", 1, True), ("XADD x 2-0 a 2", 1, True), ("XADD x 3-0 a 3", 1, True),
    ("XADD x 4-0 a 4", 1, True), ("XADD x 5-0 a 5", 1, True),
    ("XADD x MAXLEN 4 6-0 a 6", 1, True),  # one for the command, not per entry trimmed (2)
    ("XGROUP CREATE x g 0", 1, True), ("XGROUP CREATE x g2 $", 1, True),
    ("XGROUP CREATECONSUMER x g alice", 1, True), ("XGROUP CREATECONSUMER x g alice", 0, True),
    # XREADGROUP: one per stream it served (however many entries), one per new consumer.
    ("XREADGROUP GROUP g alice COUNT 2 STREAMS x >", 1, True),
    ("XREADGROUP GROUP g alice NOACK COUNT 1 STREAMS x >", 1, True),
    ("XREADGROUP GROUP g bob COUNT 1 STREAMS x >", 2, True),
    # Reading the pending history changes nothing (Redis 7.0 counted one).
    ("XREADGROUP GROUP g alice COUNT 2 STREAMS x 0", 0, False),
    ("XREADGROUP GROUP g alice STREAMS x 9000", 0, False),
    # The consumer is created even with nothing to read (Redis 7.0 did not create it).
    ("XREADGROUP GROUP g2 carl STREAMS x >", 1, False),
    ("XREADGROUP GROUP g2 carl STREAMS x >", 0, True),
    # XACK, XDEL, XTRIM: one per entry acknowledged or deleted.
    ("XACK x g 3-0 4-0 99-0", 2, True), ("XACK x g 99-0", 0, True),
    ("XCLAIM x g dave 0 6-0 1-0", 2, True),  # a new consumer, one claim (1-0 not pending)
    ("XDEL x 5-0 6-0 99-0", 2, True), ("XDEL x 99-0", 0, True),
    ("XADD x 7-0 a 7", 1, True), ("XADD x 8-0 a 8", 1, True), ("XADD x 9-0 a 9", 1, True),
    ("XTRIM x MAXLEN 1", 4, True), ("XTRIM x MAXLEN 10", 0, True),
    ("XSETID x 100-0", 1, True), ("XGROUP SETID x g 0", 1, True),
    ("XGROUP DELCONSUMER x g nobody", 0, True), ("XGROUP DESTROY x g2", 1, True),
    ("XLEN x", 0, True), ("XRANGE x - +", 0, True),
]


def _deltas(port: int, rows: list[tuple[str, int, bool]]) -> list[tuple[str, int]]:
    r = redis.Redis(port=port)
    try:
        r.flushall()
        out = []
        for command, _, _ in rows:
            before = r.info("persistence")["rdb_changes_since_last_save"]
            try:
                r.execute_command(*command.split())
            except redis.ResponseError:
                pass
            out.append((command, r.info("persistence")["rdb_changes_since_last_save"] - before))
        return out
    finally:
        r.close()


def test_stream_commands_count_changes_as_redis(srv: ServerProcess) -> None:
    assert _deltas(srv.port, SCRIPT) == [(command, n) for command, n, _ in SCRIPT]


@pytest.mark.compat
def test_the_rows_redis_7_agrees_on(redis_ref: ServerProcess) -> None:
    theirs = _deltas(redis_ref.port, SCRIPT)
    expected = [(command, n) for command, n, _ in SCRIPT]
    agreed = [i for i, (_, _, same) in enumerate(SCRIPT) if same]
    assert [theirs[i] for i in agreed] == [expected[i] for i in agreed]
