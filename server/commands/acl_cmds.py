"""ACL: the read-only view of the one user this server has, and the log of failed logins.

Only the user "default" exists: it may run every command on every key and channel, and its
password is `requirepass` (none: a nopass user). ACL CAT, LIST, GETUSER, USERS and WHOAMI
describe it as Redis 8 describes its default user. ACL LOG lists failed authentications
(server/acl_log.py), the only denials such a user can meet. The subcommands that change users
(SETUSER, DELUSER, LOAD, SAVE, ...) are not implemented and get Redis's unknown-subcommand
error.
"""

from __future__ import annotations

import hashlib
from itertools import islice

from protocol.encoder import OK, SetReply
from server.client import Client
from server.commands.command_cmd import CATEGORY_ORDER, commands_in_category
from server.commands.help import help_reply
from server.dispatch import command, container
from server.errors import CommandError, client_text
from server.parsing import eq, parse_int
from storage.keyspace import now_ms

_ADMIN = "@admin @slow @dangerous"
_FLAGS = "noscript loading stale"

_ROOT_SELECTOR = b"~* &* +@all"  # every key, every channel, every command

container("acl", -2, summary="A container for Access List Control commands.", since="6.0.0",
          group="server")


def _wrong_arguments(argv: list[bytes]) -> CommandError:
    """Too many arguments for ACL CAT or LOG (the subcommand named as it was sent)."""
    return CommandError("ERR unknown subcommand or wrong number of arguments for "
                        f"'{client_text(argv[1])}'. Try ACL HELP.")


def _password_hashes(client: Client) -> list[bytes]:
    """The user's passwords as ACL shows them: hex SHA-256, none for a nopass user."""
    password = client.server.config["requirepass"]
    return [hashlib.sha256(password.encode()).hexdigest().encode()] if password else []


def _flags(hashes: list[bytes]) -> SetReply:
    """In Redis's order; Redis 8 sets sanitize-payload on its default user."""
    flags = [b"on", b"sanitize-payload"] if hashes else [b"on", b"nopass", b"sanitize-payload"]
    return SetReply(flags)


@command("acl|cat", -2, _FLAGS, categories="@slow", since="6.0.0", group="server",
         summary="Lists the ACL categories, or the commands inside a category.")
def acl_cat(client: Client, argv: list[bytes]) -> object:
    if len(argv) > 3:
        raise _wrong_arguments(argv)
    if len(argv) == 2:
        return [name[1:].encode() for name in CATEGORY_ORDER]
    wanted = "@" + argv[2].decode(errors="replace").lower()
    if wanted not in CATEGORY_ORDER:
        raise CommandError(f"ERR Unknown category '{argv[2].decode(errors='replace')}'")
    return commands_in_category(wanted)


@command("acl|list", 2, f"admin {_FLAGS}", categories=_ADMIN, since="6.0.0", group="server",
         summary="Dumps the effective rules in ACL file format.")
def acl_list(client: Client, argv: list[bytes]) -> object:
    hashes = _password_hashes(client)
    rules = [*_flags(hashes), *(b"#" + h for h in hashes), _ROOT_SELECTOR]
    return [b"user default " + b" ".join(rules)]


@command("acl|getuser", 3, f"admin {_FLAGS}", categories=_ADMIN, since="6.0.0",
         group="server", summary="Lists the ACL rules of a user.")
def acl_getuser(client: Client, argv: list[bytes]) -> object:
    if argv[2] != b"default":
        return None
    hashes = _password_hashes(client)
    return {
        b"flags": _flags(hashes),
        b"passwords": hashes,
        b"commands": b"+@all",
        b"keys": b"~*",
        b"channels": b"&*",
        b"selectors": [],
    }


@command("acl|log", -2, f"admin {_FLAGS}", categories=_ADMIN, since="6.0.0", group="server",
         summary="Lists recent security events generated due to ACL rules.")
def acl_log(client: Client, argv: list[bytes]) -> object:
    log = client.server.acl_log
    count = 10
    if len(argv) > 3:
        raise _wrong_arguments(argv)
    if len(argv) == 3:
        if eq(argv[2], b"reset"):
            log.reset()
            return OK
        count = max(parse_int(argv[2]), 0)
    now = now_ms()
    return [{
        b"count": entry.count,
        b"reason": entry.reason.encode(),
        b"context": entry.context.encode(),
        b"object": entry.object,
        b"username": entry.username,
        b"age-seconds": (now - entry.updated_ms) / 1000,
        b"client-info": entry.client_info.encode(),
        b"entry-id": entry.entry_id,
        b"timestamp-created": entry.created_ms,
        b"timestamp-last-updated": entry.updated_ms,
    } for entry in islice(log.entries, count)]


@command("acl|users", 2, f"admin {_FLAGS}", categories=_ADMIN, since="6.0.0", group="server",
         summary="Lists all ACL users.")
def acl_users(client: Client, argv: list[bytes]) -> object:
    return [b"default"]


@command("acl|whoami", 2, _FLAGS, categories="@slow", since="6.0.0", group="server",
         summary="Returns the authenticated username of the current connection.")
def acl_whoami(client: Client, argv: list[bytes]) -> object:
    return client.user.encode()


@command("acl|help", 2, _FLAGS, categories="@slow", since="6.0.0", group="server",
         summary="Returns helpful text about the different subcommands.")
def acl_help(client: Client, argv: list[bytes]) -> object:
    return help_reply("ACL", [  # the subcommands implemented, in Redis's words
        "CAT [<category>]",
        "    List all commands that belong to <category>, or all command categories",
        "    when no category is specified.",
        "GETUSER <username>",
        "    Get the user's details.",
        "LIST",
        "    Show users details in config file format.",
        "LOG [<count> | RESET]",
        "    Show the ACL log entries.",
        "USERS",
        "    List all the registered usernames.",
        "WHOAMI",
        "    Return the current connection username.",
    ])
