"""Typed command errors carrying Redis's exact reply texts."""

from __future__ import annotations


class CommandError(Exception):
    """A command failed; str(self) is the full error text sent after "-" ("ERR syntax error")."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
SYNTAX = "ERR syntax error"
NOT_INTEGER = "ERR value is not an integer or out of range"
NOT_FLOAT = "ERR value is not a valid float"
NO_SUCH_KEY = "ERR no such key"
DB_INDEX_OUT_OF_RANGE = "ERR DB index is out of range"
TIMEOUT_NOT_FLOAT = "ERR timeout is not a float or out of range"
TIMEOUT_NEGATIVE = "ERR timeout is negative"


class WrongTypeError(CommandError):
    def __init__(self) -> None:
        super().__init__(WRONGTYPE)


class SyntaxErr(CommandError):
    def __init__(self) -> None:
        super().__init__(SYNTAX)


def wrong_arity(name: str) -> CommandError:
    return CommandError(f"ERR wrong number of arguments for '{name}' command")


def unknown_subcommand(sub: bytes, container: str) -> CommandError:
    text = sub.decode(errors="replace")
    return CommandError(f"ERR unknown subcommand '{text}'. Try {container.upper()} HELP.")


def unknown_command(argv: list[bytes]) -> CommandError:
    """Redis 7's text: the name, then the args quoted, each followed by a space, while the
    args part is under 128 characters (each arg cut to what is left of the 128)."""
    name = argv[0][:128].decode(errors="replace")
    args = ""
    for arg in argv[1:]:
        if len(args) >= 128:
            break
        args += "'" + arg[: 128 - len(args)].decode(errors="replace") + "' "
    return CommandError(f"ERR unknown command '{name}', with args beginning with: {args}")

OOM_TEXT = "OOM command not allowed when used memory > 'maxmemory'."
