"""An ACL selector: which commands, keys and channels it allows (acl.c's aclSelector).

A user has a root selector (the rules written outside parentheses) and any number of
`(...)` selectors; a command runs when one of them allows it. Commands are kept as the set
of full names allowed ("get", "config|get"), the way Redis keeps a bitmap of command ids;
the rules that built it are kept too, in order (`command_rules`), because that is how Redis
7.2+ describes them back: `-@all +@read -keys`, with a rule given again moving to the end.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from server.command_meta import CATEGORY_ORDER, acl_categories
from server.dispatch import COMMANDS, CommandSpec
from storage.glob import glob_match

READ = 1  # %R~: keys the commands may read
WRITE = 2  # %W~: keys they may write
READ_WRITE = READ | WRITE  # ~

# Key spec flags that need each permission (ACLSelectorCheckKey).
_READ_FLAGS = frozenset({"access"})
_WRITE_FLAGS = frozenset({"insert", "delete", "update"})

# The channel arguments of the Pub/Sub commands (db.c's commandChannelSpecs): first index,
# last index (-1: to the end), and whether they are patterns (matched literally).
# UNSUBSCRIBE and friends name channels too, but are never refused.
_CHANNEL_ARGS = {
    "subscribe": (1, -1, False),
    "ssubscribe": (1, -1, False),
    "psubscribe": (1, -1, True),
    "publish": (1, 1, False),
    "spublish": (1, 1, False),
}

# Reasons a command is refused, in Redis's order of relevance (ACL_DENIED_*).
ALLOWED = 0
DENIED_CMD = 1
DENIED_KEY = 2
DENIED_CHANNEL = 4


class AclRuleError(Exception):
    """A rule SETUSER cannot apply; the text is ACLSetUserStringError's."""


SYNTAX_ERROR = "Syntax error"
UNKNOWN_COMMAND = "Unknown command or category name in ACL"
KEYS_AFTER_STAR = ("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid "
                   "and does not have any effect. Try 'resetkeys' to start with an empty list "
                   "of patterns")
CHANNELS_AFTER_STAR = ("Adding a pattern after the * pattern (or the 'allchannels' flag) is not "
                       "valid and does not have any effect. Try 'resetchannels' to start with "
                       "an empty list of channels")
FIRST_ARG_OF_SUBCOMMAND = "Allowing first-arg of a subcommand is not supported"


def lookup_command(name: str) -> CommandSpec | None:
    """ACLLookupCommand: a command or "container|subcommand" by name, any case."""
    parts = name.lower().split("|")
    if len(parts) > 2:
        return None
    spec = COMMANDS.get(parts[0].encode())
    if spec is None or len(parts) == 1:
        return spec
    if not spec.subcommands:
        return None
    return spec.subcommands.get(parts[1].encode())


@cache
def category_members(category: str) -> tuple[CommandSpec, ...]:
    """The commands and subcommands in a category ("@read"), containers before their
    subcommands. Empty for an unknown category."""
    if category not in CATEGORY_ORDER:
        return ()
    return tuple(spec for top in COMMANDS.values() for spec in (top, *top.subcommands.values())
                 if category in acl_categories(spec))


def is_category(name: str) -> bool:
    return name in CATEGORY_ORDER


@cache
def _all_names() -> frozenset[str]:
    return frozenset(spec.fullname for top in COMMANDS.values()
                     for spec in (top, *top.subcommands.values()))


def has_space(text: bytes) -> bool:
    """ACLStringHasSpaces: any C isspace() byte or NUL."""
    return any(byte in b" \t\n\v\f\r\x00" for byte in text)


class Selector:
    __slots__ = ("root", "allowed", "future", "all_commands", "first_args", "command_rules",
                 "all_keys", "key_patterns", "all_channels", "channels")

    def __init__(self, root: bool = False, all_channels: bool = False) -> None:
        self.root = root
        self.allowed: set[str] = set()  # full names of the commands allowed
        # Set by +@all, cleared by -@all only: the commands added later (modules) are allowed.
        # It decides whether the description starts with +@all or -@all.
        self.future = False
        self.all_commands = False  # +@all and nothing taken away since: no check needed
        self.first_args: dict[str, list[bytes]] = {}  # command -> first arguments allowed
        self.command_rules: list[str] = []  # "+get", "-@write", "+select|0", in order
        self.all_keys = False
        self.key_patterns: list[list] = []  # [pattern, READ | WRITE], in order
        self.all_channels = all_channels  # acl-pubsub-default allchannels sets it
        self.channels: list[bytes] = []

    def copy(self) -> Selector:
        other = Selector(self.root, self.all_channels)
        other.allowed = set(self.allowed)
        other.future = self.future
        other.all_commands = self.all_commands
        other.first_args = {name: list(args) for name, args in self.first_args.items()}
        other.command_rules = list(self.command_rules)
        other.all_keys = self.all_keys
        other.key_patterns = [list(pattern) for pattern in self.key_patterns]
        other.channels = list(self.channels)
        return other

    # -- rules ----------------------------------------------------------------------------------
    def apply(self, op: bytes) -> None:
        """ACLSetSelector: apply one rule, or raise AclRuleError."""
        lowered = op.lower()
        if lowered in (b"allkeys", b"~*"):
            self.all_keys = True
            self.key_patterns.clear()
        elif lowered == b"resetkeys":
            self.all_keys = False
            self.key_patterns.clear()
        elif lowered in (b"allchannels", b"&*"):
            self.all_channels = True
            self.channels.clear()
        elif lowered == b"resetchannels":
            self.all_channels = False
            self.channels.clear()
        elif lowered in (b"allcommands", b"+@all"):
            self.allowed = set(_all_names())
            self.future = self.all_commands = True
            self.command_rules.clear()
            self.first_args.clear()
        elif lowered in (b"nocommands", b"-@all"):
            self.allowed = set()
            self.future = self.all_commands = False
            self.command_rules.clear()
            self.first_args.clear()
        elif op[:1] in (b"~", b"%"):
            self._add_key_pattern(op)
        elif op[:1] == b"&":
            if self.all_channels:
                raise AclRuleError(CHANNELS_AFTER_STAR)
            pattern = op[1:]
            if has_space(pattern):
                raise AclRuleError(SYNTAX_ERROR)
            if pattern not in self.channels:
                self.channels.append(pattern)
        elif op[:1] in (b"+", b"-") and op[1:2] == b"@":
            self._apply_category(op)
        elif op[:1] == b"+":
            self._allow_command(op[1:])
        elif op[:1] == b"-":
            spec = lookup_command(_text(op[1:]))
            if spec is None:
                raise AclRuleError(UNKNOWN_COMMAND)
            self._change(spec, False)
            self._update_rules(spec.fullname, False)
        else:
            raise AclRuleError(SYNTAX_ERROR)

    def _add_key_pattern(self, op: bytes) -> None:
        if self.all_keys:
            raise AclRuleError(KEYS_AFTER_STAR)
        if op[:1] == b"~":
            flags, offset = READ_WRITE, 1
        else:
            flags, offset = 0, 1
            while offset < len(op):
                char = op[offset:offset + 1].upper()
                if char == b"R" and not flags & READ:
                    flags |= READ
                elif char == b"W" and not flags & WRITE:
                    flags |= WRITE
                elif char == b"~" and flags:
                    offset += 1
                    break
                else:
                    raise AclRuleError(SYNTAX_ERROR)
                offset += 1
            if not flags:  # ("%" alone)
                raise AclRuleError(SYNTAX_ERROR)
        pattern = op[offset:]
        if has_space(pattern):
            raise AclRuleError(SYNTAX_ERROR)
        for existing in self.key_patterns:
            if existing[0] == pattern:
                existing[1] |= flags
                break
        else:
            self.key_patterns.append([pattern, flags])

    def _apply_category(self, op: bytes) -> None:
        category = _text(op[1:]).lower()
        if not is_category(category):
            raise AclRuleError(UNKNOWN_COMMAND)
        allow = op[:1] == b"+"
        self._update_rules(category, allow)
        for spec in category_members(category):
            self._change(spec, allow)

    def _allow_command(self, name: bytes) -> None:
        text = _text(name)
        if "|" not in text:
            spec = lookup_command(text)
            if spec is None:
                raise AclRuleError(UNKNOWN_COMMAND)
            self._change(spec, True)
            self._update_rules(spec.fullname, True)
            return
        base_name, _, first_arg = text.rpartition("|")
        spec = lookup_command(base_name)
        if spec is None:
            raise AclRuleError(UNKNOWN_COMMAND)
        if spec.parent is not None:
            raise AclRuleError(FIRST_ARG_OF_SUBCOMMAND)
        if not first_arg:
            raise AclRuleError(SYNTAX_ERROR)
        if spec.subcommands:
            sub = lookup_command(text)
            if sub is None:
                raise AclRuleError(UNKNOWN_COMMAND)
            self._change(sub, True)
        else:
            # SELECT|0 or DEBUG|OBJECT: the command with that first argument only (Redis
            # logs this use as deprecated).
            allowed = self.first_args.setdefault(spec.fullname, [])
            wanted = name.rpartition(b"|")[2]
            if not any(arg.lower() == wanted.lower() for arg in allowed):
                allowed.append(wanted)
        self._update_rules(text, True)

    def _change(self, spec: CommandSpec, allow: bool) -> None:
        """ACLChangeSelectorPerm: the command and, for a container, its subcommands."""
        for one in (spec, *spec.subcommands.values()):
            if allow:
                self.allowed.add(one.fullname)
            else:
                self.allowed.discard(one.fullname)
                self.all_commands = False
        self.first_args.pop(spec.fullname, None)

    def _update_rules(self, rule: str, allow: bool) -> None:
        """ACLUpdateCommandRules: the rule replaces any earlier one for the same command or
        category, or for one of the command's subcommands, and goes last."""
        rule = rule.lower()
        prefix = rule + "|"
        self.command_rules = [r for r in self.command_rules
                              if r[1:] != rule and not r[1:].startswith(prefix)]
        self.command_rules.append(("+" if allow else "-") + rule)

    # -- description ----------------------------------------------------------------------------
    def describe_commands(self) -> bytes:
        """ACLDescribeSelectorCommandRules."""
        return " ".join(["+@all" if self.future else "-@all", *self.command_rules]).encode()

    def describe_keys(self) -> bytes:
        """GETUSER's keys: "~*", or the patterns with their permissions."""
        if self.all_keys:
            return b"~*"
        return b" ".join(_pattern_text(p, flags) for p, flags in self.key_patterns)

    def describe_channels(self) -> bytes:
        if self.all_channels:
            return b"&*"
        return b" ".join(b"&" + channel for channel in self.channels)

    def describe(self) -> bytes:
        """ACLDescribeSelector: keys, channels, commands, as SETUSER rules."""
        parts = [self.describe_keys()] if self.all_keys or self.key_patterns else []
        if not self.all_channels:
            parts.append(b"resetchannels")
        if self.all_channels or self.channels:
            parts.append(self.describe_channels())
        parts.append(self.describe_commands())
        return b" ".join(parts)

    def getuser_fields(self) -> dict[bytes, bytes]:
        return {b"commands": self.describe_commands(), b"keys": self.describe_keys(),
                b"channels": self.describe_channels()}

    # -- checks ---------------------------------------------------------------------------------
    def check(self, spec: CommandSpec, argv: list[bytes],
              keys: Iterable[tuple[int, tuple[str, ...]]]) -> tuple[int, int]:
        """ACLSelectorCheckCmd: (ALLOWED, 0), or the reason and the argument it is about.
        `keys` are the command's (position, key spec flags)."""
        if (not self.all_commands and "no-auth" not in spec.flags
                and spec.fullname not in self.allowed):
            allowed = self.first_args.get(spec.fullname)
            index = 2 if spec.parent is not None else 1
            if (not allowed or len(argv) <= index
                    or not any(arg.lower() == argv[index].lower() for arg in allowed)):
                return DENIED_CMD, 0
        if not self.all_keys:
            for pos, flags in keys:
                if not self.may_access_key(argv[pos], flags):
                    return DENIED_KEY, pos
        if not self.all_channels:
            channel_args = _CHANNEL_ARGS.get(spec.fullname)
            if channel_args is not None:
                first, last, is_pattern = channel_args
                stop = len(argv) if last < 0 else min(last + 1, len(argv))
                for pos in range(first, stop):
                    if not self.may_use_channel(argv[pos], is_pattern):
                        return DENIED_CHANNEL, pos
        return ALLOWED, 0

    def may_access_key(self, key: bytes, flags: tuple[str, ...]) -> bool:
        if self.all_keys:
            return True
        needed = 0
        if _READ_FLAGS.intersection(flags):
            needed |= READ
        if _WRITE_FLAGS.intersection(flags):
            needed |= WRITE
        return any(pattern_flags & needed == needed and glob_match(pattern, key)
                   for pattern, pattern_flags in self.key_patterns)

    def may_use_channel(self, channel: bytes, is_pattern: bool) -> bool:
        """ACLCheckChannelAgainstList: a channel matches the patterns as a glob; a pattern
        (PSUBSCRIBE's) only as the same text."""
        if self.all_channels:
            return True
        if is_pattern:
            return channel in self.channels
        return any(glob_match(pattern, channel) for pattern in self.channels)

    def grants_everything(self) -> bool:
        """Every command on every key and channel: its user needs no check."""
        return self.all_commands and self.all_keys and self.all_channels


def _pattern_text(pattern: bytes, flags: int) -> bytes:
    prefix = b"~" if flags == READ_WRITE else (b"%R~" if flags == READ else b"%W~")
    return prefix + pattern


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="surrogateescape")
