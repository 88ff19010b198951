"""The one propagation path (Server.propagate): every hook sees every effect, in order; the
effects of an EXEC or a script go out when it ends, alone when there is one, inside
MULTI / EXEC when there are several, and a nested batch joins the outer one."""

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
