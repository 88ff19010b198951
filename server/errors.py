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


class ConfigError(ValueError):
    """A bad option name or value; the message is user-facing."""


class WrongTypeError(CommandError):
    def __init__(self) -> None:
        super().__init__(WRONGTYPE)


class SyntaxErr(CommandError):
    def __init__(self) -> None:
        super().__init__(SYNTAX)


def wrong_arity(name: str) -> CommandError:
    return CommandError(f"ERR wrong number of arguments for '{name}' command")


def _c_string(arg: bytes, limit: int | None = None) -> bytes:
    """arg as C's "%s" / "%.<limit>s" print it: up to a NUL, at most `limit` bytes."""
    end = arg.find(b"\0")
    if end >= 0:
        arg = arg[:end]
    return arg if limit is None else arg[:limit]


def client_text(arg: bytes, limit: int | None = None) -> str:
    """Client bytes inside an error text, as Redis prints them (_c_string); the raw bytes,
    which surrogateescape carries through the reply encoder unchanged."""
    return _c_string(arg, limit).decode("utf-8", "surrogateescape")


def subcommand_syntax_error(argv: list[bytes]) -> CommandError:
    """addReplySubcommandSyntaxError: a known subcommand with arguments it does not take."""
    return CommandError(f"ERR unknown subcommand or wrong number of arguments for "
                        f"'{client_text(argv[1], 128)}'. Try {client_text(argv[0]).upper()} HELP.")


def unknown_subcommand(sub: bytes, container: str) -> CommandError:
    return CommandError(f"ERR unknown subcommand '{client_text(sub, 128)}'. "
                        f"Try {container.upper()} HELP.")


def unknown_command(argv: list[bytes]) -> CommandError:
    """Redis 7's text: the name, then the args quoted, each followed by a space, while the
    args part is under 128 bytes (each arg cut to what is left of the 128)."""
    args = b""
    for arg in argv[1:]:
        if len(args) >= 128:
            break
        args += b"'" + _c_string(arg, 128 - len(args)) + b"' "
    return CommandError(f"ERR unknown command '{client_text(argv[0], 128)}', with args "
                        f"beginning with: {args.decode('utf-8', 'surrogateescape')}")


OOM_TEXT = "OOM command not allowed when used memory > 'maxmemory'."
# The other clients' error while a script runs past busy-reply-threshold.
BUSY_TEXT = ("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN "
             "NOSAVE.")
BUSY_FUNCTION_TEXT = ("BUSY Redis is busy running a script. You can only call FUNCTION KILL or "
                      "SHUTDOWN NOSAVE.")
