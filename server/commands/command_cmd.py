"""COMMAND: the command table as clients and redis-cli read it (COUNT, INFO, DOCS, LIST,
GETKEYS)."""

from __future__ import annotations

from protocol.encoder import SetReply, SimpleString
from server.client import Client
from server.dispatch import COMMANDS, CommandSpec, command, container
from server.errors import SYNTAX, CommandError
from server.parsing import eq
from storage.glob import compile_glob

_CAT = "@slow @connection"


def _all_specs() -> list[CommandSpec]:
    return list(COMMANDS.values())


# Commands whose keys are not simply read or updated.
_KEY_FLAGS = {"del": ["RM", "delete"], "unlink": ["RM", "delete"]}


def _key_specs(spec: CommandSpec) -> SetReply:
    # Key spec flags: the access type in capitals, the rest in lowercase, as Redis names them.
    access = _KEY_FLAGS.get(spec.fullname) or (
        ["RW", "update"] if spec.is_write else ["RO", "access"])
    if spec.key_keyword:
        return SetReply([{
            b"flags": SetReply([SimpleString(f) for f in access]),
            b"begin_search": {b"type": b"keyword",
                              b"spec": {b"keyword": spec.key_keyword.encode(), b"startfrom": 1}},
            b"find_keys": {b"type": b"range",
                           b"spec": {b"lastkey": -1, b"keystep": 1, b"limit": 2}},
        }])
    if not spec.first_key:
        return SetReply()
    last = spec.last_key - spec.first_key if spec.last_key >= 0 else spec.last_key
    return SetReply([{
        b"flags": SetReply([SimpleString(f) for f in access]),
        b"begin_search": {b"type": b"index", b"spec": {b"index": spec.first_key}},
        b"find_keys": {b"type": b"range",
                       b"spec": {b"lastkey": last, b"keystep": spec.step, b"limit": 0}},
    }])


def command_info(spec: CommandSpec) -> list[object]:
    """One COMMAND INFO entry: flags, categories, tips and key specs are sets in RESP3."""
    flags = list(spec.flags)
    if spec.key_keyword and "movablekeys" not in flags:
        flags.append("movablekeys")
    return [
        spec.fullname.encode(), spec.arity, SetReply([SimpleString(f) for f in flags]),
        spec.first_key, spec.last_key, spec.step,
        SetReply([SimpleString(c) for c in spec.categories]),
        SetReply([t.encode() for t in spec.tips]),
        _key_specs(spec),
        # Redis answers an empty set, not an empty array, when there are no subcommands.
        [command_info(sub) for sub in spec.subcommands.values()] if spec.subcommands
        else SetReply(),
    ]


def command_docs(spec: CommandSpec) -> dict[bytes, object]:
    doc: dict[bytes, object] = {
        b"summary": (spec.summary or f"The {spec.fullname.upper()} command.").encode(),
        b"since": spec.since.encode(),
        b"group": spec.group.encode(),
    }
    if spec.subcommands:
        doc[b"subcommands"] = {sub.fullname.encode(): command_docs(sub)
                               for sub in spec.subcommands.values()}
    return doc


@command("command", -1, "loading stale", categories=_CAT,
         summary="Returns detailed information about all commands.", since="2.8.13",
         group="server", tips="nondeterministic_output_order")
def command_(client: Client, argv: list[bytes]) -> object:
    return [command_info(spec) for spec in _all_specs()]


container("command", -1, summary="Returns detailed information about all commands.",
          since="2.8.13", group="server")
# COMMAND with no subcommand answers the whole table: keep its handler on the container.
COMMANDS[b"command"].handler = command_


@command("command|count", 2, "loading stale", categories=_CAT, since="2.8.13", group="server")
def command_count(client: Client, argv: list[bytes]) -> object:
    return len(COMMANDS)


@command("command|info", -2, "loading stale", categories=_CAT, since="2.8.13", group="server",
         tips="nondeterministic_output_order")
def command_info_cmd(client: Client, argv: list[bytes]) -> object:
    if len(argv) == 2:
        return [command_info(spec) for spec in _all_specs()]
    out: list[object] = []
    for name in argv[2:]:
        spec = _find(name)
        out.append(command_info(spec) if spec is not None else None)
    return out


def _find(name: bytes) -> CommandSpec | None:
    parent, _, sub = name.lower().partition(b"|")
    spec = COMMANDS.get(parent)
    if spec is not None and sub:
        return spec.subcommands.get(sub)
    return spec


@command("command|docs", -2, "loading stale", categories=_CAT, since="7.0.0", group="server",
         tips="nondeterministic_output_order")
def command_docs_cmd(client: Client, argv: list[bytes]) -> object:
    specs = _all_specs() if len(argv) == 2 else [s for s in map(_find, argv[2:]) if s]
    return {spec.fullname.encode(): command_docs(spec) for spec in specs}


@command("command|list", -2, "loading stale", categories=_CAT, since="7.0.0", group="server",
         tips="nondeterministic_output_order")
def command_list(client: Client, argv: list[bytes]) -> object:
    names: list[CommandSpec] = []
    for spec in _all_specs():
        names.append(spec)
        names.extend(spec.subcommands.values())
    if len(argv) == 2:
        return [s.fullname.encode() for s in names]
    if len(argv) != 5 or not eq(argv[2], b"filterby"):
        raise CommandError(SYNTAX)
    kind, value = argv[3].lower(), argv[4]
    if kind == b"module":
        return []
    if kind == b"aclcat":
        category = "@" + value.decode(errors="replace").lower()
        return [s.fullname.encode() for s in names if category in s.categories]
    if kind == b"pattern":
        match = compile_glob(value.lower())
        return [s.fullname.encode() for s in names if match(s.fullname.encode())]
    raise CommandError(SYNTAX)


@command("command|getkeys", -4, "loading stale", categories=_CAT, since="2.8.13",
         group="server", summary="Extracts the key names from an arbitrary command.")
def command_getkeys(client: Client, argv: list[bytes]) -> object:
    target = argv[2:]
    spec = _find(target[0])
    if spec is not None and spec.subcommands and len(target) > 1:
        spec = spec.subcommands.get(target[1].lower())
    if spec is None:
        raise CommandError("ERR Invalid command specified")
    if not spec.first_key and not spec.key_keyword:
        raise CommandError("ERR The command has no key arguments")
    if not spec.arity_ok(len(target)):
        raise CommandError("ERR Invalid number of arguments specified for command")
    keys = keys_of(spec, target)
    if not keys:
        raise CommandError("ERR The command has no key arguments")
    return keys


def keys_of(spec: CommandSpec, argv: list[bytes]) -> list[bytes]:
    if spec.key_keyword:
        word = spec.key_keyword.lower().encode()
        for i, arg in enumerate(argv[1:], start=1):
            if arg.lower() == word:
                rest = argv[i + 1:]
                return rest[: len(rest) // 2]
        return []
    if not spec.first_key:
        return []
    last = spec.last_key if spec.last_key >= 0 else len(argv) + spec.last_key
    return argv[spec.first_key: last + 1: spec.step or 1]


@command("command|help", 2, "loading stale", categories=_CAT, since="5.0.0", group="server")
def command_help(client: Client, argv: list[bytes]) -> object:
    from server.commands.help import help_reply

    return help_reply("COMMAND", [
        "(no subcommand)", "    Return details about all Redis commands.",
        "COUNT", "    Return the total number of commands in this Redis server.",
        "LIST", "    Return a list of all commands in this Redis server.",
        "INFO [<command-name> ...]",
        "    Return details about multiple Redis commands.",
        "DOCS [<command-name> ...]",
        "    Return documentation details about multiple Redis commands.",
        "GETKEYS <full-command>",
        "    Return the keys from a full Redis command.",
    ])
