"""XCLAIM in the form it is propagated as (XCLAIM key group consumer 0 id TIME ms RETRYCOUNT n
FORCE JUSTID LASTID id), which xstreamd reads by position: its replies, errors and effects
are those of Debian's redis-server (7.0), for good arguments and for bad ones in each place
of the form, against an entry pending, not pending, deleted or never added."""

from __future__ import annotations

import pytest

from tests.compat.test_groups_compat import Conn
from tests.helpers import ServerProcess

pytestmark = pytest.mark.compat

SETUP = [
    ["XADD", "s", "1-1", "f", "a"],
    ["XADD", "s", "2-1", "f", "b"],
    ["XADD", "s", "3-1", "f", "c"],
    ["XADD", "s", "4-1", "f", "d"],
    ["XADD", "s", "5-1", "f", "e"],
    ["XGROUP", "CREATE", "s", "g", "0"],
    ["XGROUP", "CREATECONSUMER", "s", "g", "c1"],
    ["XGROUP", "CREATECONSUMER", "s", "g", "c2"],
    ["XREADGROUP", "GROUP", "g", "c1", "COUNT", "2", "STREAMS", "s", ">"],
    ["XDEL", "s", "2-1"],
]


def form(entry_id: str, time: str = "1000", retry: str = "3", last: str = "5-1",
         consumer: str = "c2") -> list[str]:
    return ["XCLAIM", "s", "g", consumer, "0", entry_id, "TIME", time, "RETRYCOUNT", retry,
            "FORCE", "JUSTID", "LASTID", last]


COMMANDS = [
    form("4-1", last="4-1"),  # not pending: FORCE makes it pending, above the others
    form("3-1", time="900"),  # not pending, below a pending one
    form("1-1", retry="0"),  # pending (c1's): changes owner, time and count
    form("2-1"),  # pending and deleted: dropped
    form("2-1"),  # deleted, no longer pending
    form("9-1"),  # never added
    form("5-1", time="99999999999999"),  # a time in the future: now
    form("5-1", time="-5"),
    form("4-1", time="abc"),
    form("4-1", retry="x"),
    form("4-1", retry="-1"),
    form("4-1", last="nope"),
    form("4-1", last="+"),
    form("JUSTID"),  # an option where the ID goes: the general reading
    form("TIME"),
    form("+"),
    form("4"),  # an ID without its sequence
    form("4-1", last="3-1"),  # LASTID below the group's
    form("4-1", consumer="c3"),  # a consumer created by the claim
    ["XCLAIM", "s", "g", "c1", "0", "4-1", "time", "1", "RETRYCOUNT", "1", "FORCE",
     "JUSTID", "LASTID", "5-1"],  # the options in lower case
    ["XCLAIM", "s", "nogroup", "c1", "0", "4-1", "TIME", "1", "RETRYCOUNT", "1", "FORCE",
     "JUSTID", "LASTID", "5-1"],
    ["XCLAIM", "nokey", "g", "c1", "0", "4-1", "TIME", "1", "RETRYCOUNT", "1", "FORCE",
     "JUSTID", "LASTID", "5-1"],
]


def _pending(conn: Conn) -> list[object]:
    """The PEL without idle times: (id, owner, deliveries), and the group's last ID."""
    rows = conn.run([["XPENDING", "s", "g", "-", "+", "100"],
                     ["XINFO", "GROUPS", "s"]])
    return [[(r[0], r[1], r[3]) for r in rows[0]], rows[1][0][rows[1][0].index(
        b"last-delivered-id") + 1]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[5:]))
def test_propagated_form_as_redis(command: list[str]) -> None:
    results = []
    for kind in ("redis", "xstreamd"):
        with ServerProcess(kind) as server:
            conn = Conn(server, 2)
            conn.run(SETUP)
            reply = conn.run([command])[0]
            results.append((reply, _pending(conn)))
            conn.close()
    assert results[1] == results[0]
