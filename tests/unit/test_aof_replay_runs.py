"""The AOF replay's runs of propagated XADDs (replay_fast.replay_xadd_run, the C loop of
Stream.tail_appender's run()) leave what the same file replayed one command at a time leaves:
the streams' nodes byte for byte, their counters, the dirty counter and the commands
propagated, for random files that mix keys, node boundaries, IDs of other forms, IDs not above
the last, options and errors."""

from __future__ import annotations

import random

import pytest

from protocol.encoder import encode_command
from server.app import Server
from server.config import Config
from server.log import Logger
from server.persistence import aof_load
from server.persistence.aof_load import replay_bytes
from storage import stream as stream_module
from storage.stream import Stream


def _file(rng: random.Random) -> bytes:
    commands: list[list[bytes]] = [[b"SELECT", b"0"], [b"SET", b"str", b"v"]]
    last = {b"a": [1, 0], b"b": [1, 0]}
    for _ in range(rng.randrange(1, 400)):
        key = b"a" if rng.random() < 0.8 else b"b"
        ms_seq = last[key]
        if rng.random() < 0.5:
            ms_seq[1] += 1
        else:
            ms_seq[0] += rng.choice([1, 1, 2, 1000])
            ms_seq[1] = rng.choice([0, 0, 5])
        entry_id = b"%d-%d" % tuple(ms_seq)
        odd = rng.random()
        if odd < 0.03:
            entry_id = b"0" + entry_id  # not canonical: the one-by-one way
        elif odd < 0.05:
            entry_id = b"1-1"  # not above the last: an error
        elif odd < 0.06:
            entry_id = b"%d" % (ms_seq[0] + 1)  # ms alone: the one-by-one way
            ms_seq[0] += 1
            ms_seq[1] = 0
        fields = [x for i in range(rng.choice([1, 1, 2, 3]))
                  for x in (b"f%d" % (i if rng.random() < 0.9 else 7),
                            rng.choice([b"1", b"-5", b"x" * rng.randrange(0, 90), b"300"]))]
        if rng.random() < 0.02:
            commands.append([b"XADD", key, b"MAXLEN", b"50", entry_id, *fields])
        elif rng.random() < 0.02:
            commands.append([b"XADD", b"str", entry_id, *fields])  # WRONGTYPE
        elif rng.random() < 0.02:
            commands.append([b"XADD", key, entry_id, b"f", b"v", b"odd"])  # a field alone
        else:
            commands.append([b"xadd" if rng.random() < 0.02 else b"XADD", key, entry_id,
                             *fields])
    return b"".join(encode_command(argv) for argv in commands)


def _replayed(data: bytes) -> tuple:
    config = Config()
    config.set_from_text("appendonly", "no")
    config.set_from_text("stream-node-max-entries", "9")  # (runs cross node boundaries)
    server = Server(config, Logger("nothing"))
    propagated: list[tuple[int, list[bytes]]] = []
    server.propagate_hooks.append(lambda dbid, argv: propagated.append((dbid, list(argv))))
    server.loading = True
    result = replay_bytes(server, data, "test.aof", True, False)
    server.loading = False
    streams = {key: (s.length, s.last_id, s.first_id, s.entries_added,
                     [(k, bytes(node.buf)) for k, node in s.rax.items()])
               for key, s in server.dbs[0].data.items() if type(s) is Stream}
    return streams, result.commands, result.failed, server.dirty, propagated


@pytest.mark.parametrize("seed", range(30))
def test_runs_replay_as_commands_one_by_one(seed: int, monkeypatch) -> None:
    if stream_module._xadd_run is None:
        pytest.skip("storage._native was not built (no C compiler)")
    data = _file(random.Random(seed))
    runs: list[int] = []
    real = aof_load.replay_xadd_run

    def counting(client, commands, j) -> int:
        taken = real(client, commands, j)
        runs.append(taken)
        return taken

    monkeypatch.setattr(aof_load, "replay_xadd_run", counting)
    with_runs = _replayed(data)
    monkeypatch.setattr(stream_module, "_xadd_run", None)  # (no C loop: one by one)
    one_by_one = _replayed(data)
    assert with_runs == one_by_one
    assert max(runs, default=0) > 1  # runs were taken
