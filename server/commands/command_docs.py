"""COMMAND DOCS / COMMAND INFO documentation data: argument specs, key specs, history, tips.

Each command's arguments are written as a short syntax string close to the one redis.io prints,
with the names Redis gives the arguments (the table is in command_docs_table.py):

    key#0 [NOMKSTREAM@6.2.0] [condition{KEEPREF | DELREF | ACKED}] id-selector{auto-id=* | id}

- ``name`` is a string argument, ``name:integer`` (``double``, ``pattern``, ``unix-time``) a
  typed one, ``name#N`` a key whose key spec is number N. ``/text`` sets a display text that
  differs from the name (``addr/ip:port``).
- An upper-case word is a token: followed by an argument it is that argument's token
  (``LIMIT count:integer``); alone it is a pure token named after it (``NOMKSTREAM``).
  ``name=TOKEN`` names a pure token explicitly (``auto-id=*``, ``equal==``).
- ``name(...)`` is a block, ``name{a | b}`` a choice (oneof); both may have a token before them.
- ``[x]`` makes x optional; ``x...`` lets it repeat; ``[TOKEN x]...`` repeats the token too
  (Redis's multiple_token). ``@7.0.0`` is the version the argument appeared in, ``!2.8.12``
  the version that deprecated it.

Key specs are written ``"FLAGS; begin_search; find_keys[; notes]"``, for example
``"RO access; keyword STREAMS 1; range -1 1 2"`` (find_keys ``range lastkey keystep limit``,
or ``keynum keynumidx firstkey keystep`` for EVAL's numkeys).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

from protocol.encoder import SetReply, SimpleString
from server.command_meta import KeySpec, SyntaxParseError

_TYPES = frozenset({"string", "integer", "double", "pattern", "unix-time"})
_NAME = re.compile(r"[a-z][a-z0-9-]*")
_TOKEN_WORD = re.compile(r"[A-Z][A-Z0-9-]*")
_TOKEN_RUN = re.compile(r"[^\s\[\](){}|@!]+")
_DISPLAY = re.compile(r"[A-Za-z0-9:_-]+")
_VERSION = re.compile(r"\d+\.\d+\.\d+")
_CLOSERS = frozenset("])}|")


@dataclass(slots=True)
class Arg:
    """One argument of a command, as COMMAND DOCS describes it."""

    name: str
    type: str
    token: str | None = None
    display: str | None = None
    key_spec_index: int = -1
    since: str | None = None
    deprecated_since: str | None = None
    optional: bool = False
    multiple: bool = False
    multiple_token: bool = False
    subargs: list[Arg] = field(default_factory=list)

    @property
    def is_container(self) -> bool:
        return self.type in ("oneof", "block")


class _Parser:
    """Recursive descent over the syntax strings described in the module docstring."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> SyntaxParseError:
        return SyntaxParseError(f"{what} at {self.pos} in {self.text!r}")

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip_space(self) -> None:
        while self.peek().isspace():
            self.pos += 1

    def match(self, pattern: re.Pattern[str]) -> str | None:
        found = pattern.match(self.text, self.pos)
        if found is None:
            return None
        self.pos = found.end()
        return found.group()

    def sequence(self) -> list[Arg]:
        args: list[Arg] = []
        self.skip_space()
        while self.peek() and self.peek() not in _CLOSERS:
            args.append(self.item())
            self.skip_space()
        return args

    def item(self) -> Arg:
        if self.peek() == "[":
            self.pos += 1
            self.skip_space()
            arg = self.item()
            self.skip_space()
            if self.peek() != "]":
                raise self.fail("expected ]")
            self.pos += 1
            arg.optional = True
            if self.text.startswith("...", self.pos):
                self.pos += 3
                arg.multiple = True
                arg.multiple_token = arg.token is not None
            self.suffixes(arg)
            return arg
        token = self.match(_TOKEN_WORD)
        if token is not None:
            if self.peek().isspace():
                # A token followed by a lower-case argument belongs to that argument.
                save = self.pos
                self.skip_space()
                if _NAME.match(self.text, self.pos):
                    arg = self.core()
                    arg.token = token
                    return arg
                self.pos = save
            arg = Arg(name=token.lower(), type="pure-token", token=token)
            self.suffixes(arg)
            return arg
        return self.core()

    def core(self) -> Arg:
        name = self.match(_NAME)
        if name is None:
            raise self.fail("expected an argument name")
        arg = Arg(name=name, type="string")
        char = self.peek()
        if char == "(":
            self.pos += 1
            arg.type, arg.subargs = "block", self.sequence()
            self.expect(")")
        elif char == "{":
            self.pos += 1
            arg.type, arg.subargs = "oneof", self.choices()
            self.expect("}")
        elif char == "=":
            self.pos += 1
            token = self.match(_TOKEN_RUN)
            if token is None:
                raise self.fail("expected a token")
            arg.type, arg.token = "pure-token", token
        else:
            if char == ":":
                self.pos += 1
                kind = self.match(re.compile(r"[a-z-]+"))
                if kind not in _TYPES:
                    raise self.fail(f"unknown type {kind!r}")
                arg.type = kind
            elif char == "#":
                self.pos += 1
                index = self.match(re.compile(r"\d+"))
                if index is None:
                    raise self.fail("expected a key spec index")
                arg.type, arg.key_spec_index = "key", int(index)
            if self.peek() == "/":
                self.pos += 1
                arg.display = self.match(_DISPLAY)
        if arg.is_container and len(arg.subargs) < 2:
            raise self.fail(f"{name} needs two or more arguments")
        self.suffixes(arg)
        return arg

    def choices(self) -> list[Arg]:
        alternatives = []
        while True:
            self.skip_space()
            alternatives.append(self.item())
            self.skip_space()
            if self.peek() != "|":
                return alternatives
            self.pos += 1

    def expect(self, char: str) -> None:
        self.skip_space()
        if self.peek() != char:
            raise self.fail(f"expected {char}")
        self.pos += 1

    def suffixes(self, arg: Arg) -> None:
        while True:
            if self.text.startswith("...", self.pos):
                self.pos += 3
                arg.multiple = True
            elif self.peek() in ("@", "!"):
                marker = self.peek()
                self.pos += 1
                version = self.match(_VERSION)
                if version is None:
                    raise self.fail("expected a version")
                if marker == "@":
                    arg.since = version
                else:
                    arg.deprecated_since = version
            else:
                return


def parse_syntax(text: str) -> list[Arg]:
    """The argument list a syntax string describes (raises SyntaxParseError)."""
    parser = _Parser(text)
    args = parser.sequence()
    if parser.pos != len(text):
        raise parser.fail("unexpected character")
    return args


def _arg_flags(arg: Arg) -> list[SimpleString]:
    flags = []
    if arg.optional:
        flags.append(SimpleString("optional"))
    if arg.multiple:
        flags.append(SimpleString("multiple"))
    if arg.multiple_token:
        flags.append(SimpleString("multiple_token"))
    return flags


def arg_reply(arg: Arg) -> dict[bytes, object]:
    """One argument map, with Redis 8's field order (display_text right after type)."""
    out: dict[bytes, object] = {b"name": arg.name.encode(), b"type": arg.type.encode()}
    if not arg.is_container:
        out[b"display_text"] = (arg.display or arg.name).encode()
    if arg.key_spec_index >= 0:
        out[b"key_spec_index"] = arg.key_spec_index
    if arg.token is not None:
        out[b"token"] = arg.token.encode()
    if arg.since:
        out[b"since"] = arg.since.encode()
    if arg.deprecated_since:
        out[b"deprecated_since"] = arg.deprecated_since.encode()
    flags = _arg_flags(arg)
    if flags:
        out[b"flags"] = SetReply(flags)
    if arg.is_container:
        out[b"arguments"] = [arg_reply(sub) for sub in arg.subargs]
    return out


@dataclass(frozen=True, slots=True)
class Doc:
    """The documentation Redis keeps for one command (or subcommand)."""

    complexity: str = ""
    syntax: str = ""
    history: tuple[tuple[str, str], ...] = ()
    keys: tuple[str, ...] = ()
    tips: str | None = None  # None: the tips the command was registered with
    doc_flags: str = ""
    deprecated_since: str = ""
    replaced_by: str = ""

    @property
    def args(self) -> list[Arg]:
        return _parsed(self.syntax)

    @property
    def key_specs(self) -> list[KeySpec]:
        return _key_specs(self.keys)

    def arg_replies(self) -> list[dict[bytes, object]]:
        """The "arguments" array of COMMAND DOCS (built once; replies are never mutated)."""
        return _arg_replies(self.syntax)


@cache
def _parsed(syntax: str) -> list[Arg]:
    return parse_syntax(syntax)


@cache
def _arg_replies(syntax: str) -> list[dict[bytes, object]]:
    return [arg_reply(arg) for arg in _parsed(syntax)]


@cache
def _key_specs(keys: tuple[str, ...]) -> list[KeySpec]:
    return [KeySpec.parse(k) for k in keys]
