"""XADD IDs of every form in an AOF: the replay's way for propagated XADDs (ms-seq, digits)
and dispatch's (everything else, and the errors) leave what the same commands leave when
they are sent to a running server."""

from __future__ import annotations

import os

from protocol.encoder import encode_command
from tests.integration.test_persistence_support import (
    connect,
    dump_state,
    files_and_restarts,
    started,
)

pytestmark = files_and_restarts

IDS = [
    b"5-1", b"5-2", b"00007-01", b"7-1",  # leading zeros; then an ID not above the last
    b"8", b"9-*", b"10-18446744073709551615", b"11-18446744073709551616",  # seq overflow
    b"18446744073709551616-0", b"0-0", b"-1", b"+", b"12-3x", b"12 -3", b"1e3-1",
    b"12-" + b"0" * 25, b"0" * 25 + b"13-0", b"14-0", b"18446744073709551615-0",
    b"18446744073709551615-1", b"18446744073709551615-18446744073709551615",
]


def _commands() -> list[list[bytes]]:
    out = [[b"XADD", b"s", entry_id, b"f", b"v%d" % i] for i, entry_id in enumerate(IDS)]
    out.append([b"XADD", b"s", b"20-1", b"f", b"v", b"g"])  # a field without its value
    out.append([b"XADD", b"t", b"1-1", b"a", b"b"])
    out.append([b"XADD", b"t", b"MAXLEN", b"1", b"2-1", b"a", b"b"])  # an option
    return out


def test_replayed_ids_load_as_sent(tmp_path) -> None:
    live_dir = str(tmp_path / "live")
    os.makedirs(live_dir)
    with started(live_dir) as proc:
        r = connect(proc)
        errors = 0
        for argv in _commands():
            try:
                r.execute_command(*argv)
            except Exception:  # noqa: BLE001 - the errors are counted, not compared
                errors += 1
        assert errors >= 10
        expected = dump_state(proc, volatile_times=False)
    aof_dir = str(tmp_path / "aof")
    os.makedirs(aof_dir)
    with started(aof_dir, "--appendonly", "yes"):
        pass
    incr_dir = os.path.join(aof_dir, "appendonlydir")
    [incr] = [n for n in os.listdir(incr_dir) if n.endswith(".incr.aof")]
    with open(os.path.join(incr_dir, incr), "ab") as fh:
        fh.write(b"".join(encode_command(argv) for argv in _commands()))
    with started(aof_dir, "--appendonly", "yes") as proc:
        assert dump_state(proc, volatile_times=False) == expected
        assert connect(proc).xlen("s") > 5
