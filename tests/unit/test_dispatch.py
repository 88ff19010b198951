"""The command table's way of running commands, in process (no sockets)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from protocol.encoder import ErrorReply
from server.app import Server
from server.client import Client
from server.config import Config
from server.dispatch import COMMANDS, command, execute
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
    del COMMANDS[b"xstreamd-test-broken"]


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
