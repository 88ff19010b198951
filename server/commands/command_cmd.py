"""COMMAND: the command table as clients and redis-cli read it (COUNT, INFO, DOCS, LIST,
GETKEYS, GETKEYSANDFLAGS).

The documentation (arguments, complexity, history, key specs, tips) comes from
server/commands/command_docs_table.py; flags, categories and arity from the registered specs.
"""

from __future__ import annotations

from protocol.encoder import SetReply, SimpleString
from server.client import Client
from server.command_meta import (
    DOCUMENTED,
    acl_categories,
    has_keys,
    in_order,
    key_flags,
    key_specs,
    keys_of,
    keys_with_specs,
)
from server.commands.command_docs_table import DOCS
from server.commands.help import help_reply
from server.dispatch import (
    COMMANDS,
    CommandSpec,
    all_specs,
    command,
    container,
    find_by_fullname,
)
from server.errors import SYNTAX, CommandError
from server.parsing import eq
from storage.glob import compile_glob

_CAT = "@slow @connection"
# The documented key specs, where ACL, tracking and COMMAND GETKEYS find a command's keys.
DOCUMENTED.update((name, doc.key_specs) for name, doc in DOCS.items() if doc.keys)

# Command flags COMMAND INFO shows, in Redis's order and spelling; the others (sentinel,
# protected, ...) are hidden as Redis hides them.
_FLAG_ORDER = ("write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript",
               "blocking", "loading", "stale", "skip_monitor", "skip_slowlog", "asking", "fast",
               "no_auth", "no_mandatory_keys", "no_async_loading", "no_multi", "movablekeys",
               "allow_busy")


def _all_specs() -> list[CommandSpec]:
    return list(COMMANDS.values())


def _flags(spec: CommandSpec) -> list[str]:
    flags = [f.replace("-", "_") for f in spec.flags]
    if spec.key_keyword:
        flags.append("movablekeys")
    return in_order([f for f in dict.fromkeys(flags) if f in _FLAG_ORDER], _FLAG_ORDER)


def commands_in_category(category: str) -> list[bytes]:
    """The full names of the commands and subcommands in an ACL category ("@stream")."""
    return [spec.fullname.encode() for spec in all_specs() if category in acl_categories(spec)]


def _tips(spec: CommandSpec) -> list[str]:
    doc = DOCS.get(spec.fullname)
    if doc is not None and doc.tips is not None:
        return doc.tips.split()
    return list(spec.tips)


def command_info(spec: CommandSpec) -> list[object]:
    """One COMMAND INFO entry: flags, categories, tips and key specs are sets in RESP3."""
    return [
        spec.fullname.encode(), spec.arity, SetReply([SimpleString(f) for f in _flags(spec)]),
        spec.first_key, spec.last_key, spec.step,
        SetReply([SimpleString(c) for c in acl_categories(spec)]),
        SetReply([t.encode() for t in _tips(spec)]),
        SetReply([ks.reply() for ks in key_specs(spec)]),
        # Redis answers an empty set, not an empty array, when there are no subcommands.
        [command_info(sub) for sub in spec.subcommands.values()] if spec.subcommands
        else SetReply(),
    ]


def command_docs(spec: CommandSpec) -> dict[bytes, object]:
    """One COMMAND DOCS entry, fields in Redis's order (addReplyCommandDocs)."""
    doc = DOCS.get(spec.fullname)
    out: dict[bytes, object] = {
        b"summary": (spec.summary or f"The {spec.fullname.upper()} command.").encode(),
        b"since": spec.since.encode(),
        b"group": spec.group.encode(),
    }
    if doc is not None:
        if doc.complexity:
            out[b"complexity"] = doc.complexity.encode()
        if doc.doc_flags:
            out[b"doc_flags"] = SetReply([SimpleString(f) for f in doc.doc_flags.split()])
        if doc.deprecated_since:
            out[b"deprecated_since"] = doc.deprecated_since.encode()
        if doc.replaced_by:
            out[b"replaced_by"] = doc.replaced_by.encode()
        if doc.history:
            out[b"history"] = SetReply([[v.encode(), text.encode()] for v, text in doc.history])
        if doc.syntax:
            out[b"arguments"] = doc.arg_replies()
    if spec.subcommands:
        out[b"subcommands"] = {sub.fullname.encode(): command_docs(sub)
                               for sub in spec.subcommands.values()}
    return out


@command("command", -1, "loading stale", categories=_CAT,
         summary="Returns detailed information about all commands.", since="2.8.13",
         group="server", tips="nondeterministic_output_order")
def command_(client: Client, argv: list[bytes]) -> object:
    return [command_info(spec) for spec in _all_specs()]


_container = container("command", -1, "loading stale",
                       summary="Returns detailed information about all commands.",
                       since="2.8.13", group="server")
# COMMAND with no subcommand answers the whole table: keep its handler, categories and tips on
# the container.
_container.handler = command_
_container.categories = tuple(_CAT.split())
_container.tips = ("nondeterministic_output_order",)


@command("command|count", 2, "loading stale", categories=_CAT, since="2.8.13", group="server",
         summary="Returns a count of commands.")
def command_count(client: Client, argv: list[bytes]) -> object:
    return len(COMMANDS)


@command("command|info", -2, "loading stale", categories=_CAT, since="2.8.13", group="server",
         tips="nondeterministic_output_order",
         summary="Returns information about one, multiple or all commands.")
def command_info_cmd(client: Client, argv: list[bytes]) -> object:
    if len(argv) == 2:
        return [command_info(spec) for spec in _all_specs()]
    out: list[object] = []
    for name in argv[2:]:
        spec = find_by_fullname(name)
        out.append(command_info(spec) if spec is not None else None)
    return out


@command("command|docs", -2, "loading stale", categories=_CAT, since="7.0.0", group="server",
         tips="nondeterministic_output_order",
         summary="Returns documentary information about one, multiple or all commands.")
def command_docs_cmd(client: Client, argv: list[bytes]) -> object:
    specs = _all_specs() if len(argv) == 2 else [s for s in map(find_by_fullname, argv[2:]) if s]
    return {spec.fullname.encode(): command_docs(spec) for spec in specs}


@command("command|list", -2, "loading stale", categories=_CAT, since="7.0.0", group="server",
         tips="nondeterministic_output_order", summary="Returns a list of command names.")
def command_list(client: Client, argv: list[bytes]) -> object:
    if len(argv) == 2:
        return [s.fullname.encode() for s in all_specs()]
    if len(argv) != 5 or not eq(argv[2], b"filterby"):
        raise CommandError(SYNTAX)
    kind, value = argv[3].lower(), argv[4]
    if kind == b"module":
        return []
    if kind == b"aclcat":
        return commands_in_category("@" + value.decode(errors="replace").lower())
    if kind == b"pattern":
        match = compile_glob(value.lower())
        return [s.fullname.encode() for s in all_specs() if match(s.fullname.encode())]
    raise CommandError(SYNTAX)


def _target(argv: list[bytes]) -> tuple[CommandSpec, list[bytes]]:
    """GETKEYS / GETKEYSANDFLAGS: the command named by argv[2:], checked as Redis does."""
    target = argv[2:]
    spec = find_by_fullname(target[0])
    if spec is not None and spec.subcommands and len(target) > 1:
        spec = spec.subcommands.get(target[1].lower())
    if spec is None:
        raise CommandError("ERR Invalid command specified")
    if not has_keys(spec):
        raise CommandError("ERR The command has no key arguments")
    if not spec.arity_ok(len(target)):
        raise CommandError("ERR Invalid number of arguments specified for command")
    return spec, target


@command("command|getkeys", -3, "loading stale", categories=_CAT, since="2.8.13",
         group="server", summary="Extracts the key names from an arbitrary command.")
def command_getkeys(client: Client, argv: list[bytes]) -> object:
    spec, target = _target(argv)
    keys = keys_of(spec, target)
    if not keys:
        _no_keys(spec)
    return keys


@command("command|getkeysandflags", -3, "loading stale", categories=_CAT, since="7.0.0",
         group="server",
         summary="Extracts the key names and access flags for an arbitrary command.")
def command_getkeysandflags(client: Client, argv: list[bytes]) -> object:
    spec, target = _target(argv)
    keys = keys_with_specs(spec, target)
    if not keys:
        _no_keys(spec)
    return [[key, SetReply([SimpleString(f) for f in key_flags(spec, target, ks)])]
            for key, ks in keys]


def _no_keys(spec: CommandSpec) -> None:
    """GETKEYS found no key: an error, unless keys are optional for the command (EVAL with
    numkeys 0: an empty list)."""
    if "no-mandatory-keys" not in spec.flags:
        raise CommandError("ERR Invalid arguments specified for command")


@command("command|help", 2, "loading stale", categories=_CAT, since="5.0.0", group="server",
         summary="Returns helpful text about the different subcommands.")
def command_help(client: Client, argv: list[bytes]) -> object:
    return help_reply("COMMAND", [
        "(no subcommand)", "    Return details about all Redis commands.",
        "COUNT", "    Return the total number of commands in this Redis server.",
        "LIST", "    Return a list of all commands in this Redis server.",
        "INFO [<command-name> ...]",
        "    Return details about multiple Redis commands.",
        "    If no command names are given, documentation details for all",
        "    commands are returned.",
        "DOCS [<command-name> ...]",
        "    Return documentation details about multiple Redis commands.",
        "    If no command names are given, documentation details for all",
        "    commands are returned.",
        "GETKEYS <full-command>",
        "    Return the keys from a full Redis command.",
        "GETKEYSANDFLAGS <full-command>",
        "    Return the keys and the access flags from a full Redis command.",
    ])
