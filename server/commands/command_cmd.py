"""COMMAND: the command table as clients and redis-cli read it (COUNT, INFO, DOCS, LIST,
GETKEYS, GETKEYSANDFLAGS).

The documentation (arguments, complexity, history, key specs, tips) comes from
server/commands/command_docs_table.py; flags, categories and arity from the registered specs.
"""

from __future__ import annotations

from protocol.encoder import SetReply, SimpleString
from server.client import Client
from server.commands.command_docs import KeySpec
from server.commands.command_docs_table import DOCS
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

# Command flags COMMAND INFO shows, in Redis's order and spelling; the others (sentinel,
# protected, ...) are hidden as Redis hides them.
_FLAG_ORDER = ("write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript",
               "blocking", "loading", "stale", "skip_monitor", "skip_slowlog", "asking", "fast",
               "no_auth", "no_mandatory_keys", "no_async_loading", "no_multi", "movablekeys",
               "allow_busy")
# ACL categories in the order Redis lists them.
CATEGORY_ORDER = ("@keyspace", "@read", "@write", "@set", "@sortedset", "@list", "@hash",
                   "@string", "@bitmap", "@hyperloglog", "@geo", "@stream", "@pubsub", "@admin",
                   "@fast", "@slow", "@blocking", "@dangerous", "@connection", "@transaction",
                   "@scripting")


def _all_specs() -> list[CommandSpec]:
    return list(COMMANDS.values())


def _ordered(items: list[str], order: tuple[str, ...]) -> list[str]:
    rank = {name: i for i, name in enumerate(order)}
    return sorted(items, key=lambda item: rank.get(item, len(order)))


def _flags(spec: CommandSpec) -> list[str]:
    flags = [f.replace("-", "_") for f in spec.flags]
    if spec.key_keyword:
        flags.append("movablekeys")
    return _ordered([f for f in dict.fromkeys(flags) if f in _FLAG_ORDER], _FLAG_ORDER)


def acl_categories(spec: CommandSpec) -> list[str]:
    """The command's ACL categories ("@slow", ...) in Redis's order, as COMMAND INFO shows
    them and ACL CAT / COMMAND LIST FILTERBY ACLCAT select by."""
    # A container registered without categories is @slow, as Redis's containers are.
    cats = list(spec.categories) or (["@slow"] if spec.subcommands else [])
    return _ordered(cats, CATEGORY_ORDER)


def commands_in_category(category: str) -> list[bytes]:
    """The full names of the commands and subcommands in an ACL category ("@stream")."""
    return [spec.fullname.encode() for spec in all_specs() if category in acl_categories(spec)]


def key_specs(spec: CommandSpec) -> list[KeySpec]:
    """The command's key specs: documented ones, else derived from its key positions."""
    doc = DOCS.get(spec.fullname)
    if doc is not None and doc.keys:
        return doc.key_specs
    if spec.key_keyword:
        begin: tuple[str, ...] = ("keyword", spec.key_keyword, "1")
        find = (-1, 1, 2)
    elif spec.first_key:
        begin = ("index", str(spec.first_key))
        last = spec.last_key - spec.first_key if spec.last_key >= 0 else spec.last_key
        find = (last, spec.step, 0)
    else:
        return []
    access = ("RW", "update") if spec.is_write else ("RO", "access")
    return [KeySpec(access, begin, find)]


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


def has_keys(spec: CommandSpec) -> bool:
    """Whether the command takes keys: a key spec not flagged not_key (SSUBSCRIBE's and
    SPUBLISH's shard channels are not keys), as Redis's doesCommandHaveKeys decides."""
    return any("not_key" not in ks.flags for ks in key_specs(spec))


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


def key_flags(spec: CommandSpec, argv: list[bytes], ks: KeySpec) -> tuple[str, ...]:
    """A key's access flags; variable_flags means they depend on the arguments (SET's GET makes
    it read the key, as Redis's setGetKeys reports)."""
    if "variable_flags" not in ks.flags:
        return ks.flags
    if spec.fullname == "set" and not any(eq(arg, b"get") for arg in argv[3:]):
        return ("OW", "update")
    return tuple(f for f in ks.flags if f != "variable_flags")


def keys_of(spec: CommandSpec, argv: list[bytes], include_not_keys: bool = False) -> list[bytes]:
    return [key for key, _ in keys_with_specs(spec, argv, include_not_keys)]


def keys_with_specs(spec: CommandSpec, argv: list[bytes],
                    include_not_keys: bool = False) -> list[tuple[bytes, KeySpec]]:
    """The keys of argv (a full command) with the key spec each was found by, in key spec
    order, as Redis's getKeysUsingKeySpecs walks them. Specs flagged not_key (shard channels)
    are skipped unless include_not_keys (Redis's GET_KEYSPEC_INCLUDE_NOT_KEYS)."""
    return [(argv[pos], ks) for pos, ks in key_positions(spec, argv, include_not_keys)]


def key_positions(spec: CommandSpec, argv: list[bytes],
                  include_not_keys: bool = False) -> list[tuple[int, KeySpec]]:
    """keys_with_specs, with the keys' positions in argv instead of the keys."""
    out: list[tuple[int, KeySpec]] = []
    for ks in key_specs(spec):
        if ks.find is None or ("not_key" in ks.flags and not include_not_keys):
            continue
        if ks.begin[0] == "index":
            first = int(ks.begin[1])
        elif ks.begin[0] == "keyword":
            first = _after_keyword(argv, ks.begin[1].encode(), int(ks.begin[2]))
            if first < 0:
                continue
        else:
            continue
        if ks.find_type == "keynum":  # EVAL's numkeys, then that many keys
            out.extend((i, ks) for i in _keynum_positions(argv, first, ks.find))
            continue
        last, step, limit = ks.find
        if last >= 0:
            stop = first + last
        elif limit:  # keys are 1/limit of what follows (XREAD's STREAMS k1 k2 id1 id2)
            stop = first + (len(argv) - first) // limit + last
        else:
            stop = len(argv) + last
        if stop >= len(argv) or stop < first:
            continue  # too few arguments: no keys from this spec, as Redis does
        out.extend((i, ks) for i in range(first, stop + 1, step))
    return out


def _keynum_positions(argv: list[bytes], first: int, find: tuple[int, ...]) -> range:
    """The keys of a keynum spec: the count at first + keynumidx, the keys from
    first + firstkey. Empty when the count is not a number or too big for argv."""
    index, first_key, step = find
    try:
        count = int(argv[first + index])
    except (IndexError, ValueError):
        return range(0)
    start = first + first_key
    if count <= 0 or start + (count - 1) * step >= len(argv):
        return range(0)
    return range(start, start + count * step, step)


def _after_keyword(argv: list[bytes], keyword: bytes, startfrom: int) -> int:
    """Index of the argument after `keyword`, searched from startfrom (negative: from the end,
    backwards); -1 when absent."""
    word = keyword.lower()
    if startfrom >= 0:
        indexes = range(startfrom, len(argv))
    else:
        indexes = range(len(argv) + startfrom, 0, -1)
    for i in indexes:
        if argv[i].lower() == word:
            return i + 1
    return -1


@command("command|help", 2, "loading stale", categories=_CAT, since="5.0.0", group="server",
         summary="Returns helpful text about the different subcommands.")
def command_help(client: Client, argv: list[bytes]) -> object:
    from server.commands.help import help_reply

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
