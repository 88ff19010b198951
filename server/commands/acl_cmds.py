"""ACL: users, their permissions, and the log of what was refused (Redis 8's ACL command).

The users and the rules live in server/acl; this module is the command's syntax and replies.
"""

from __future__ import annotations

import secrets
from itertools import islice

from protocol.encoder import OK, SetReply
from server.acl.access import denial_text
from server.acl.registry import DEFAULT, AclError, check_command, read_acl_file
from server.acl.selector import ALLOWED, has_space
from server.client import Client
from server.command_meta import CATEGORY_ORDER
from server.commands.command_cmd import commands_in_category
from server.commands.help import help_reply
from server.dispatch import command, container, find
from server.errors import CommandError, client_text, wrong_arity
from server.parsing import eq, parse_int
from storage.keyspace import now_ms

_ADMIN = "@admin @slow @dangerous"
_FLAGS = "noscript loading stale"
_NO_ACL_FILE = (
    "ERR This Redis instance is not configured to use an ACL file. You may want to specify "
    "users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a "
    "Redis configuration file set) in order to store users in the Redis configuration.")
GENPASS_MAX_BITS = 4096

container("acl", -2, summary="A container for Access List Control commands.", since="6.0.0",
          group="server")


def _wrong_arguments(argv: list[bytes]) -> CommandError:
    """Too many arguments for ACL CAT, GENPASS or LOG (the subcommand named as sent)."""
    return CommandError("ERR unknown subcommand or wrong number of arguments for "
                        f"'{client_text(argv[1])}'. Try ACL HELP.")


@command("acl|setuser", -3, f"admin {_FLAGS}", categories=_ADMIN, since="6.0.0",
         group="server", summary="Creates and modifies an ACL user and its rules.")
def acl_setuser(client: Client, argv: list[bytes]) -> object:
    name = argv[2]
    if has_space(name):
        raise CommandError("ERR Usernames can't contain spaces or null characters")
    acl = client.server.acl
    try:
        current, staged = acl.users.staged(name, argv[3:])
    except AclError as exc:
        raise CommandError(f"ERR {exc}") from None
    if current is not None:
        acl.disconnect_subscribers_if_needed(staged, current, client)
    acl.users.commit(current, staged)
    acl.users_changed()
    return OK


@command("acl|deluser", -3, f"admin {_FLAGS}", categories=_ADMIN, since="6.0.0",
         group="server", summary="Deletes ACL users, and terminates their connections.")
def acl_deluser(client: Client, argv: list[bytes]) -> object:
    names = argv[2:]
    if DEFAULT in names:
        raise CommandError("ERR The 'default' user cannot be removed")
    acl = client.server.acl
    deleted = 0
    for name in names:
        user = acl.users.delete(name)
        if user is not None:
            acl.disconnect_clients_of(user, client)
            deleted += 1
    if deleted:
        acl.users_changed()
    return deleted


@command("acl|getuser", 3, f"admin {_FLAGS}", categories=_ADMIN, since="6.0.0",
         group="server", summary="Lists the ACL rules of a user.")
def acl_getuser(client: Client, argv: list[bytes]) -> object:
    user = client.server.acl.users.get(argv[2])
    if user is None:
        return None
    return {
        b"flags": SetReply(user.flags()),
        b"passwords": list(user.passwords),
        # (the root selector at the top level, as before selectors existed)
        **user.root.getuser_fields(),
        b"selectors": [selector.getuser_fields() for selector in user.selectors[1:]],
    }


@command("acl|list", 2, f"admin {_FLAGS}", categories=_ADMIN, since="6.0.0", group="server",
         summary="Dumps the effective rules in ACL file format.")
def acl_list(client: Client, argv: list[bytes]) -> object:
    return client.server.acl.users.describe_lines()


@command("acl|users", 2, f"admin {_FLAGS}", categories=_ADMIN, since="6.0.0", group="server",
         summary="Lists all ACL users.")
def acl_users(client: Client, argv: list[bytes]) -> object:
    return client.server.acl.users.names()


@command("acl|whoami", 2, _FLAGS, categories="@slow", since="6.0.0", group="server",
         summary="Returns the authenticated username of the current connection.")
def acl_whoami(client: Client, argv: list[bytes]) -> object:
    return client.user.name


@command("acl|genpass", -2, _FLAGS, categories="@slow", since="6.0.0", group="server",
         summary="Generates a pseudorandom, secure password that can be used to identify ACL "
         "users.")
def acl_genpass(client: Client, argv: list[bytes]) -> object:
    if len(argv) > 3:
        raise _wrong_arguments(argv)
    bits = parse_int(argv[2]) if len(argv) == 3 else 256
    if bits <= 0 or bits > GENPASS_MAX_BITS:
        raise CommandError("ERR ACL GENPASS argument must be the number of bits for the output "
                           f"password, a positive number up to {GENPASS_MAX_BITS}")
    chars = (bits + 3) // 4
    return secrets.token_hex((chars + 1) // 2)[:chars].encode()


@command("acl|dryrun", -4, f"admin {_FLAGS}", categories=_ADMIN, since="7.0.0",
         group="server", summary="Simulates the execution of a command by a user, without "
         "executing the command.")
def acl_dryrun(client: Client, argv: list[bytes]) -> object:
    user = client.server.acl.users.get(argv[2])
    if user is None:
        raise CommandError(f"ERR User '{client_text(argv[2])}' not found")
    target = argv[3:]
    try:
        spec = find(target)
    except CommandError:
        raise CommandError(f"ERR Command '{client_text(target[0])}' not found") from None
    if not spec.arity_ok(len(target)):
        raise wrong_arity(spec.fullname)
    result, pos = check_command(user, spec, target)
    if result == ALLOWED:
        return OK
    return denial_text(result, user, spec, target[pos], verbose=True).encode()


@command("acl|load", 2, f"admin {_FLAGS}", categories=_ADMIN, since="6.0.0", group="server",
         summary="Reloads the rules from the configured ACL file.")
def acl_load(client: Client, argv: list[bytes]) -> object:
    acl = client.server.acl
    path = client.server.config["aclfile"]
    if not path:
        raise CommandError(_NO_ACL_FILE)
    try:
        users = acl.users.load_lines(read_acl_file(path))
    except AclError as exc:
        raise CommandError(f"ERR {exc}") from None
    acl.install(users, client)
    return OK


@command("acl|save", 2, f"admin {_FLAGS}", categories=_ADMIN, since="6.0.0", group="server",
         summary="Saves the effective ACL rules in the configured ACL file.")
def acl_save(client: Client, argv: list[bytes]) -> object:
    server = client.server
    path = server.config["aclfile"]
    if not path:
        raise CommandError(_NO_ACL_FILE)
    try:
        server.acl.users.save(path)
    except OSError as exc:
        server.log.warning(f"Writing ACL file for ACL SAVE: {exc.strerror}")
        raise CommandError("ERR There was an error trying to save the ACLs. Please check the "
                           "server logs for more information") from None
    return OK


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


@command("acl|help", 2, _FLAGS, categories="@slow", since="6.0.0", group="server",
         summary="Returns helpful text about the different subcommands.")
def acl_help(client: Client, argv: list[bytes]) -> object:
    return help_reply("ACL", [
        "CAT [<category>]",
        "    List all commands that belong to <category>, or all command categories",
        "    when no category is specified.",
        "DELUSER <username> [<username> ...]",
        "    Delete a list of users.",
        "DRYRUN <username> <command> [<arg> ...]",
        "    Returns whether the user can execute the given command without executing the command.",
        "GETUSER <username>",
        "    Get the user's details.",
        "GENPASS [<bits>]",
        "    Generate a secure 256-bit user password. The optional `bits` argument can",
        "    be used to specify a different size.",
        "LIST",
        "    Show users details in config file format.",
        "LOAD",
        "    Reload users from the ACL file.",
        "LOG [<count> | RESET]",
        "    Show the ACL log entries.",
        "SAVE",
        "    Save the current config to the ACL file.",
        "SETUSER <username> <attribute> [<attribute> ...]",
        "    Create or modify a user with the specified attributes.",
        "USERS",
        "    List all the registered usernames.",
        "WHOAMI",
        "    Return the current connection username.",
    ])
