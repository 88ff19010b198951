"""A read that starts with a run of `XADD key * ...` is taken whole (stream_cmds.xadd_pipelined):
the same replies, stream bytes, propagated commands, statistics and dirty counter as the same
commands run one read at a time, for random pipelines that mix other keys, options, errors
and other commands; and it steps aside where something differs per command."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

import pytest

from server.app import Server
from server.client import Client
from server.commands import stream_cmds
from server.config import Config
from server.dispatch import COMMANDS, run_commands
from server.log import Logger
from storage import stream as stream_module
from storage.stream import Stream


def _server(propagate: str = "hook") -> tuple[Server, Client, list[tuple[int, list[bytes]]]]:
    """propagate: "hook" (a hook that takes one effect at a time), "run" (one with a run form
    too, as the AOF's and the replicas' have: a run's effects come to it in one call, counted
    as a None in the record) or "none" (without a hook only the dirty counter moves)."""
    config = Config()
    config.set_from_text("appendonly", "no")
    config.set_from_text("stream-node-max-entries", "7")  # (runs cross node boundaries)
    server = Server(config, Logger("nothing"))
    server._before_sleep_scheduled = True  # (no event loop: nothing to schedule)
    propagated: list[tuple[int, list[bytes]]] = []
    runs: list[int] = []

    def hook(dbid: int, argv: list[bytes]) -> None:
        propagated.append((dbid, list(argv)))

    def hook_run(dbid: int, argvs: list[list[bytes]]) -> None:
        runs.append(len(argvs))
        propagated.extend((dbid, list(argv)) for argv in argvs)

    if propagate == "run":
        hook.run = hook_run  # type: ignore[attr-defined]
    if propagate != "none":
        server.propagate_hooks.append(hook)
    server.propagated_runs = runs  # type: ignore[attr-defined]  # (for the tests' checks)
    return server, Client(1, server, None), propagated


@pytest.fixture
def clocks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A stopped clock for each server: the two ways read it a different number of times,
    and with every XADD in one millisecond their IDs are comparable."""
    def install() -> None:
        clock = itertools.repeat(1_700_000_000_000_000_000).__next__
        monkeypatch.setattr(stream_cmds, "_now_ns", clock)
        monkeypatch.setattr("server.dispatch._now_ns", clock)
    yield install


def _pipeline(rng: random.Random) -> list[list[bytes]]:
    cmds: list[list[bytes]] = []
    for _ in range(rng.randrange(1, 80)):
        op = rng.random()
        if op < 0.75:
            n = rng.choice([1, 1, 2, 4])
            fields = [x for i in range(n) for x in (b"f%d" % (i if rng.random() < 0.9 else 9),
                                                     b"%d" % rng.randrange(-10**6, 10**6))]
            cmds.append([b"XADD", b"s", b"*", *fields])
        elif op < 0.8:
            cmds.append([b"XADD", b"other", b"*", b"a", b"1"])
        elif op < 0.84:
            cmds.append([b"XADD", b"s", b"MAXLEN", b"5", b"*", b"t", b"x"])
        elif op < 0.87:
            cmds.append([b"XADD", b"s", b"*", b"odd"])  # wrong arity
        elif op < 0.9:
            cmds.append([b"XADD", b"str", b"*", b"f", b"v"])  # WRONGTYPE
        elif op < 0.93:
            cmds.append([b"xadd", b"s", b"*", b"lower", b"case"])
        else:
            cmds.append([b"XLEN", b"s"])
    return cmds


def _state(server: Server) -> tuple:
    db = server.dbs[0]
    streams = {key: (s.length, s.last_id, s.entries_added, [bytes(lp.buf) for _, lp in
                                                            s.rax.items()])
               for key, s in db.data.items() if type(s) is Stream}
    return streams, server.dirty


@pytest.mark.parametrize("loop", ["c", "python"])
@pytest.mark.parametrize("propagate", ["hook", "run", "none"])
@pytest.mark.parametrize("seed", range(40))
def test_a_pipeline_answers_as_its_commands_one_by_one(seed: int, propagate: str, loop: str,
                                                       clocks, monkeypatch) -> None:
    """The run's loop in C (storage/_native.c's xadd_run) or in Python (without it)."""
    if loop == "python":
        monkeypatch.setattr(stream_module, "_xadd_run", None)
    elif stream_module._xadd_run is None:
        pytest.skip("storage._native was not built (no C compiler)")
    rng = random.Random(seed)
    runs = []
    real = COMMANDS[b"xadd"].pipelined
    assert real is not None

    def counting(client, spec, commands) -> int:
        ran = real(client, spec, commands)
        runs.append(ran)
        return ran

    monkeypatch.setattr(COMMANDS[b"xadd"], "pipelined", counting)
    setup = [[b"SET", b"str", b"v"], [b"XADD", b"s", b"*", b"f0", b"start"]]
    pipeline = _pipeline(rng)
    outcomes = []
    for whole in (True, False):
        clocks()
        server, client, propagated = _server(propagate)
        calls_before = COMMANDS[b"xadd"].calls
        for argv in setup:
            run_commands(client, [argv])
        if whole:
            run_commands(client, [list(argv) for argv in pipeline])
            runs_propagated = server.propagated_runs  # type: ignore[attr-defined]
        else:
            for argv in pipeline:
                run_commands(client, [list(argv)])
        reply = b"".join(client.out)
        outcomes.append((reply, _state(server), propagated,
                         COMMANDS[b"xadd"].calls - calls_before))
    assert outcomes[0] == outcomes[1]
    if len(pipeline) > 1 and pipeline[0][:3] == [b"XADD", b"s", b"*"] and len(pipeline[0]) & 1:
        assert runs and runs[0] >= 1  # the whole read started with a run it took
        if propagate == "run":  # whose effects went to the run form together
            assert runs_propagated[0] == runs[0]


def test_it_steps_aside_for_keyspace_events_monitors_and_new_keys(clocks) -> None:
    clocks()
    server, client, _ = _server()
    spec = COMMANDS[b"xadd"]
    pipeline = [[b"XADD", b"s", b"*", b"f", b"%d" % i] for i in range(3)]
    assert spec.pipelined(client, spec, pipeline) == 0  # no stream yet: xadd creates it
    run_commands(client, pipeline[:1])
    server.notify_flags = 1
    assert spec.pipelined(client, spec, pipeline) == 0
    server.notify_flags = 0
    assert spec.pipelined(client, spec, pipeline) == 3
    assert spec.pipelined(client, spec, [[b"XADD", b"s", b"MAXLEN", b"1", b"*", b"f", b"v"],
                                         *pipeline]) == 0
    assert server.dbs[0].data[b"s"].length == 4


def test_the_refusal_checks_are_asked_once_for_a_run(clocks, monkeypatch) -> None:
    """With refusal checks in force (the AOF's, a replica's), a run is still taken, the checks
    asked once for it; when one refuses, every XADD gets its error, as one by one."""
    clocks()
    spec = COMMANDS[b"xadd"]
    runs: list[int] = []
    real = spec.pipelined
    assert real is not None
    monkeypatch.setattr(spec, "pipelined",
                        lambda client, spec, commands: runs.append(real(client, spec, commands))
                        or runs[-1])
    pipeline = [[b"XADD", b"s", b"*", b"f", b"%d" % i] for i in range(5)]
    for refusal in (None, "MISCONF no disk"):
        server, client, propagated = _server()
        run_commands(client, [[b"XADD", b"s", b"*", b"f", b"first"]])
        asked: list[bytes] = []

        def check(client: Client, spec, refusal=refusal, asked=asked) -> str | None:
            asked.append(spec.name)
            return refusal

        server.refusal_checks.append(check)
        runs.clear()
        client.out.clear()
        run_commands(client, [list(argv) for argv in pipeline])
        if refusal is None:
            assert runs == [5] and len(asked) == 1
            assert server.dbs[0].data[b"s"].length == 6
            assert len(propagated) == 6
            assert b"".join(client.out).count(b"1700000000000-") == 5
        else:
            # asked for the run (refused: none taken), then for each XADD, the usual way
            assert runs == [] and len(asked) == 6
            assert server.dbs[0].data[b"s"].length == 1
            assert b"".join(client.out) == b"-MISCONF no disk\r\n" * 5


@pytest.mark.parametrize("limit", ["maxmemory", "data_refusals"])
def test_no_run_while_a_refusal_grows_with_the_data(limit: str, clocks, monkeypatch) -> None:
    """maxmemory, or a check counted in data_refusals (the cold tier's, when it cannot write
    nodes out), may refuse in the middle of a run: each command is checked on its own."""
    clocks()
    spec = COMMANDS[b"xadd"]
    pipeline = [[b"XADD", b"s", b"*", b"f", b"%d" % i] for i in range(3)]
    server, client, _ = _server()
    run_commands(client, pipeline[:1])
    calls: list[int] = []
    server.refusal_checks.append(lambda client, spec: calls.append(1))
    if limit == "maxmemory":
        server.maxmemory = 1 << 40
    else:
        server.data_refusals = 1
    seen: list[int] = []
    real = spec.pipelined
    assert real is not None
    monkeypatch.setattr(spec, "pipelined",
                        lambda c, s, cmds: seen.append(1) or real(c, s, cmds))
    run_commands(client, [list(argv) for argv in pipeline])
    assert seen == [] and len(calls) == 3
    assert server.dbs[0].data[b"s"].length == 4


@pytest.mark.parametrize("threshold", ["0", "-1", "1000000"])
def test_slow_commands_of_a_run_reach_the_slowlog(threshold: str, clocks) -> None:
    """slowlog-log-slower-than 0 logs every XADD of a run, with its own arguments (the C
    loop hands each back to the server); -1 (nothing is notable) and a high threshold log
    none."""
    clocks()
    server, client, _ = _server()
    server.config.set_from_text("slowlog-log-slower-than", threshold)
    run_commands(client, [[b"XADD", b"s", b"*", b"f", b"first"]])
    server.slowlog.clear()
    pipeline = [[b"XADD", b"s", b"*", b"f", b"%d" % i] for i in range(6)]
    spec = COMMANDS[b"xadd"]
    assert spec.pipelined(client, spec, pipeline) == 6
    logged = [entry.argv for entry in reversed(server.slowlog)]
    assert logged == (pipeline if threshold == "0" else [])
    assert server.dbs[0].data[b"s"].length == 7
