"""The command table's way of running commands, in process (no sockets)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from protocol.encoder import ErrorReply
from server.app import Server
from server.client import Client
from server.config import Config
from server.dispatch import COMMANDS, command, execute, unregister
from server.log import Logger


@pytest.fixture
def client(tmp_path) -> Iterator[Client]:
    config = Config()
    config.set_from_text("appendonly", "no")
    server = Server(config, Logger("nothing"))
    yield Client(1, server, None)


@pytest.fixture
def broken_command() -> Iterator[None]:
    @command("xstreamd-test-broken", -1, "fast")
    def broken(client: Client, argv: list[bytes]) -> object:
        raise RuntimeError("a bug")

    yield
    unregister("xstreamd-test-broken")


def test_a_handler_bug_becomes_an_error_reply(client: Client, broken_command: None) -> None:
    reply = execute(client, [b"XSTREAMD-TEST-BROKEN"])
    assert reply == ErrorReply(
        "ERR internal error running 'xstreamd-test-broken' (RuntimeError)")
    assert COMMANDS[b"xstreamd-test-broken"].failed_calls == 1
    # The client is still served afterwards.
    assert execute(client, [b"ECHO", b"hi"]) == b"hi"


def test_unknown_command_and_arity_texts(client: Client) -> None:
    assert execute(client, [b"NOPE", b"a"]) == ErrorReply(
        "ERR unknown command 'NOPE', with args beginning with: 'a' ")
    assert execute(client, [b"ECHO"]) == ErrorReply(
        "ERR wrong number of arguments for 'echo' command")
    assert execute(client, [b"CLIENT", b"NOPE"]) == ErrorReply(
        "ERR unknown subcommand 'NOPE'. Try CLIENT HELP.")


def test_unknown_command_args_are_cut_near_128_characters(client: Client) -> None:
    reply = execute(client, [b"NOPE", b"x" * 200, b"y"])
    assert reply == ErrorReply(
        "ERR unknown command 'NOPE', with args beginning with: '" + "x" * 128 + "' ")


def test_names_in_any_case_reach_the_same_command(client: Client) -> None:
    """Known commands are found by the name as sent (a cache filled on first use): every
    spelling runs the command, and the arity and MULTI rules still apply to cached names."""
    pong = execute(client, [b"PING"])
    for name in (b"ping", b"PiNg", b"PING"):
        assert execute(client, [name]) == pong
    calls = COMMANDS[b"ping"].calls
    execute(client, [b"PiNg"])
    assert COMMANDS[b"ping"].calls == calls + 1
    assert execute(client, [b"PiNg", b"a", b"b"]) == ErrorReply(
        "ERR wrong number of arguments for 'ping' command")
    assert execute(client, [b"MULTI"]) is not None
    queued = execute(client, [b"PING"])
    assert queued is not None and client.multi == [[b"PING"]]
    execute(client, [b"DISCARD"])
    assert client.multi is None


def test_unregistered_command_is_unknown_again(client: Client) -> None:
    @command("xstreamd-test-temp", 1, "fast")
    def temp(client: Client, argv: list[bytes]) -> object:
        return b"here"

    assert execute(client, [b"XSTREAMD-TEST-TEMP"]) == b"here"
    unregister("xstreamd-test-temp")
    reply = execute(client, [b"XSTREAMD-TEST-TEMP"])
    assert isinstance(reply, ErrorReply) and "unknown command" in str(reply)


def test_a_commands_recent_durations_stay_bounded_between_crons(client: Client) -> None:
    """call() folds a command's durations into its counts once it holds _FOLD_AT of them (a
    script's commands run between two crons without bound)."""
    from server.dispatch import _FOLD_AT

    echo = COMMANDS[b"echo"]
    before = echo.calls
    for _ in range(_FOLD_AT * 2 + 5):
        assert execute(client, [b"ECHO", b"hi"]) == b"hi"
    assert len(echo.recent) < _FOLD_AT
    assert echo.calls == before + _FOLD_AT * 2 + 5
