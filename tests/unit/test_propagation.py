"""The one propagation path (Server.propagate): every hook sees every effect, in order; the
effects of an EXEC or a script go out when it ends, alone when there is one, inside
MULTI / EXEC when there are several, and a nested batch joins the outer one. A run of
effects (Server.propagate_run) reaches a hook's run form in one call, the others one by
one, and joins a batch as its effects would."""

from __future__ import annotations

from server.app import Server
from server.config import Config
from server.log import Logger

Effects = list[tuple[int, list[bytes]]]


def recording_server() -> tuple[Server, Effects, Effects]:
    server = Server(Config(), Logger("nothing"))
    first: Effects = []
    second: Effects = []
    server.propagate_hooks += [lambda db, argv: first.append((db, argv)),
                               lambda db, argv: second.append((db, argv))]
    return server, first, second


def test_an_effect_reaches_every_hook_at_once_and_counts_as_changes() -> None:
    server, first, second = recording_server()
    server.propagate(server.dbs[3], [b"SET", b"k", b"v"], changes=2)
    assert first == second == [(3, [b"SET", b"k", b"v"])]
    assert server.dirty == 2


def test_a_batch_of_one_goes_out_alone_when_it_ends() -> None:
    server, first, _ = recording_server()
    server.begin_propagation_batch()
    server.propagate(server.dbs[0], [b"SET", b"a", b"1"])
    assert first == []
    server.end_propagation_batch()
    assert first == [(0, [b"SET", b"a", b"1"])]


def test_an_empty_batch_sends_nothing() -> None:
    server, first, _ = recording_server()
    server.begin_propagation_batch()
    server.end_propagation_batch()
    assert first == []
    assert server.propagate_batch is None


def test_several_effects_go_inside_multi_exec_and_nested_batches_join() -> None:
    server, first, second = recording_server()
    server.begin_propagation_batch()
    server.propagate(server.dbs[0], [b"SET", b"b", b"1"])
    server.begin_propagation_batch()  # a script inside EXEC
    server.propagate(server.dbs[1], [b"SET", b"c", b"1"])
    server.end_propagation_batch()
    assert first == []
    server.end_propagation_batch()
    assert first == second == [
        (0, [b"MULTI"]), (0, [b"SET", b"b", b"1"]), (1, [b"SET", b"c", b"1"]), (1, [b"EXEC"]),
    ]


def test_a_run_reaches_run_forms_at_once_and_other_hooks_one_by_one() -> None:
    server = Server(Config(), Logger("nothing"))
    plain: Effects = []
    runs: list[tuple[int, list[list[bytes]]]] = []

    def with_run(db: int, argv: list[bytes]) -> None:
        raise AssertionError("a hook with a run form gets the run through it")

    with_run.run = lambda db, argvs: runs.append((db, argvs))  # type: ignore[attr-defined]
    server.propagate_hooks += [lambda db, argv: plain.append((db, argv)), with_run]
    effects = [[b"XADD", b"s", b"1-1", b"f", b"v"], [b"XADD", b"s", b"1-2", b"f", b"w"]]
    server.propagate_run(server.dbs[2], effects)
    assert plain == [(2, effects[0]), (2, effects[1])]
    assert runs == [(2, effects)]
    assert server.dirty == 2


def test_a_run_inside_a_batch_goes_out_with_it() -> None:
    server, first, _ = recording_server()
    server.begin_propagation_batch()
    server.propagate(server.dbs[0], [b"SET", b"a", b"1"])
    server.propagate_run(server.dbs[0], [[b"XADD", b"s", b"1-1", b"f", b"v"],
                                         [b"XADD", b"s", b"1-2", b"f", b"v"]])
    assert first == []
    server.end_propagation_batch()
    assert first == [(0, [b"MULTI"]), (0, [b"SET", b"a", b"1"]),
                     (0, [b"XADD", b"s", b"1-1", b"f", b"v"]),
                     (0, [b"XADD", b"s", b"1-2", b"f", b"v"]), (0, [b"EXEC"])]
