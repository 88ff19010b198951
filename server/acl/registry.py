"""The users by name, and what uses them: SETUSER, authentication, the permission check,
the ACL file and the config file's `user` lines (acl.c)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

from server.acl.selector import (
    ALLOWED,
    DENIED_CHANNEL,
    DENIED_CMD,
    DENIED_KEY,
    SYNTAX_ERROR,
    UNKNOWN_COMMAND,
    AclRuleError,
    has_space,
)
from server.acl.user import User
from server.command_meta import key_flags, key_positions
from server.config import register_user_line_check
from server.dispatch import CommandSpec

DEFAULT = b"default"

DENIAL_REASONS = {DENIED_CMD: "command", DENIED_KEY: "key", DENIED_CHANNEL: "channel"}


class AclError(Exception):
    """An ACL change that was refused; the text is Redis's (without "ERR ")."""


def split_selectors(args: list[bytes]) -> list[bytes]:
    """ACLMergeSelectorArguments: a selector written over several arguments ("(+get",
    "~key)") becomes one. AclError for a parenthesis never closed."""
    merged: list[bytes] = []
    open_at = -1
    for index, arg in enumerate(args):
        if open_at < 0 and arg[:1] == b"(" and arg[-1:] != b")":
            open_at = index
            merged.append(arg)
        elif open_at >= 0:
            merged[-1] += b" " + arg
            if arg[-1:] == b")":
                open_at = -1
        else:
            merged.append(arg)
    if open_at >= 0:
        text = args[open_at].decode(errors="replace")
        raise AclError(f"Unmatched parenthesis in acl selector starting at '{text}'.")
    return merged


class Users:
    """Every user, and the default one (which always exists)."""

    def __init__(self) -> None:
        self.all_channels_default = False  # acl-pubsub-default: resetchannels
        self.by_name: dict[bytes, User] = {}
        self.default = self._new_default()
        self.by_name[DEFAULT] = self.default

    def _new_default(self) -> User:
        """ACLCreateDefaultUser: every command, key and channel; on; nopass."""
        user = User(DEFAULT, self.all_channels_default)
        for rule in (b"+@all", b"~*", b"&*", b"on", b"nopass"):
            user.apply(rule)
        return user

    def get(self, name: bytes) -> User | None:
        return self.by_name.get(name)

    def names(self) -> list[bytes]:
        """In the order of Redis's radix tree: bytewise."""
        return sorted(self.by_name)

    def new_user(self, name: bytes) -> User:
        return User(name, self.all_channels_default)

    # -- changes --------------------------------------------------------------------------------
    def staged(self, name: bytes, rules: list[bytes]) -> tuple[User | None, User]:
        """ACLStringSetUser's first half: (the user as it is or None, a copy with the rules
        applied). AclError with Redis's text when a rule does not apply: nothing changes."""
        current = self.by_name.get(name)
        staged = current.copy() if current is not None else self.new_user(name)
        for rule in split_selectors(rules):
            try:
                staged.apply(rule, self.all_channels_default)
            except AclRuleError as exc:
                text = rule.decode(errors="replace")
                raise AclError(f"Error in ACL SETUSER modifier '{text}': {exc}") from None
        return current, staged

    def commit(self, current: User | None, staged: User) -> User:
        """The second half: the staged rules become the user's."""
        if current is None:
            self.by_name[staged.name] = staged
            current = staged
        else:
            current.assign(staged)
        return current

    def delete(self, name: bytes) -> User | None:
        return self.by_name.pop(name, None)

    def set_default_password(self, password: str) -> None:
        """requirepass: the default user's only password, or nopass when empty."""
        self.default.apply(b"resetpass")
        self.default.apply(b">" + password.encode() if password else b"nopass")

    # -- authentication -------------------------------------------------------------------------
    def authenticate(self, name: bytes, password: bytes) -> User | None:
        """ACLCheckUserCredentials: the user, when it exists, is on and the password is one
        of its own (any, for a nopass user)."""
        user = self.by_name.get(name)
        if user is None or not user.enabled or not user.password_matches(password):
            return None
        return user

    # -- the ACL file ---------------------------------------------------------------------------
    def load_lines(self, lines: Iterable[tuple[str, int, list[bytes]]]) -> list[User]:
        """Users from an ACL file's `user <name> <rules...>` lines, each (file, line number,
        words); AclError with every problem (ACLLoadFromFile's text) if there is any."""
        errors: list[str] = []
        loaded: dict[bytes, User] = {}
        for path, number, words in lines:
            location = f"{path}:{number}"
            if not words:
                continue
            if words[0] != b"user" or len(words) < 2:
                errors.append(f"{location} should start with user keyword followed by the "
                              f"username. ")
                continue
            name = words[1]
            if has_space(name):
                errors.append(f"'{location}: username '{name.decode(errors='replace')}' "
                              f"contains invalid characters. ")
                continue
            if name in loaded:
                errors.append(f"WARNING: Duplicate user '{name.decode(errors='replace')}' "
                              f"found on line {number}. ")
                continue
            user = self.new_user(name)
            loaded[name] = user
            try:
                rules = split_selectors(words[2:])
            except AclError:
                errors.append(f"{location}: Unmatched parenthesis in selector definition.")
                continue
            syntax_error = False
            for rule in rules:
                try:
                    user.apply(rule, self.all_channels_default)
                except AclRuleError as exc:
                    text = str(exc)
                    if text.startswith("Unknown command"):
                        errors.append(f"{location}: Error in applying operation "
                                      f"'{rule.decode(errors='replace')}': {text}. ")
                    elif not syntax_error:
                        errors.append(f"{location}: {text}. ")
                        syntax_error = True
        if errors:
            raise AclError("".join(errors) + "WARNING: ACL errors detected, no change to the "
                           "previously active ACL rules was performed")
        return list(loaded.values())

    def load_configured(self, lines: list[list[bytes]]) -> None:
        """ACLLoadConfiguredUsers: the config file's `user <name> <rules...>` lines (already
        checked by check_user_line), applied at start-up. The default user is reset first;
        AclError for a rule that names an unknown command (the check lets those through)."""
        for words in lines:
            name = words[1]
            user = self.by_name.get(name)
            if user is None:
                user = self.by_name[name] = self.new_user(name)
            else:
                user.apply(b"reset", self.all_channels_default)
            for rule in split_selectors(words[2:]):
                try:
                    user.apply(rule, self.all_channels_default)
                except AclRuleError as exc:
                    raise AclError(f"Error loading ACL rule '{rule.decode(errors='replace')}' "
                                   f"for the user named '{name.decode(errors='replace')}': "
                                   f"{exc}") from None

    def replace_all(self, users: list[User]) -> list[User]:
        """ACL LOAD's success: these users replace all others. A user defined before and now
        keeps its object (the clients logged in as it refer to it) with the loaded rules; the
        default user always exists (with the defaults' rules if the file lacks it). Returns
        the users no longer defined."""
        old = self.by_name
        self.by_name = {}
        if not any(user.name == DEFAULT for user in users):
            users = [self._new_default(), *users]
        for user in users:
            kept = old.pop(user.name, None)
            if kept is not None:
                kept.assign(user)
                user = kept
            self.by_name[user.name] = user
        return list(old.values())

    def describe_lines(self) -> list[bytes]:
        """ACL LIST, ACL SAVE and CONFIG REWRITE: `user <name> <rules>` per user."""
        return [b"user " + name + b" " + self.by_name[name].describe() for name in self.names()]

    def save(self, path: str) -> None:
        """ACLSaveToFile: written to a temporary file, then renamed over the old one."""
        data = b"".join(line + b"\n" for line in self.describe_lines())
        temp = f"{path}.tmp-{os.getpid()}-{int(time.time() * 1000)}"
        try:
            with open(temp, "wb") as fh:
                fh.write(data)
            os.rename(temp, path)
        finally:
            if os.path.exists(temp):
                os.unlink(temp)


DUPLICATE_USER = "Duplicate user found. A user can only be defined once in config files"


def check_user_line(words: list[bytes], seen: set[bytes]) -> tuple[int, str] | None:
    """ACLAppendUserForLoading: a config file's `user` line (words[0] == b"user") checked
    while the file is read; None, or (index of the word to name, the reason). Rules naming
    unknown commands pass here (they fail at start-up), as in Redis. (Redis names the word
    at the rule's index among the rules, but in the whole line: an off-by-two kept here.)"""
    name = words[1]
    if name in seen:
        return 1, DUPLICATE_USER
    try:
        rules = split_selectors(words[2:])
    except AclError:
        return 0, SYNTAX_ERROR
    probe = User(b"probe")
    for index, rule in enumerate(rules):
        try:
            probe.apply(rule)
        except AclRuleError as exc:
            if str(exc) != UNKNOWN_COMMAND:
                return index, str(exc)
    seen.add(name)
    return None


def read_acl_file(path: str) -> list[tuple[str, int, list[bytes]]]:
    """The lines of an ACL file as (path, line number, words); AclError when it cannot be
    read."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise AclError(f"Error loading ACLs, opening file '{path}': {exc.strerror}") from None
    lines = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        line = raw.strip(b" \t\r\n")
        if line:
            lines.append((path, number, [word for word in line.split(b" ") if word]))
    return lines


def check_command(user: User, spec: CommandSpec, argv: list[bytes]) -> tuple[int, int]:
    """ACLCheckAllUserCommandPerm: (ALLOWED, 0) when one of the user's selectors allows the
    command, else the most relevant refusal (a command refusal only when no selector allows
    the command; otherwise the last key or channel refused) and its argument's position."""
    keys: list[tuple[int, tuple[str, ...]]] | None = None
    relevant, position = DENIED_CMD, 0
    for selector in user.selectors:
        if keys is None and not selector.all_keys:
            keys = command_keys(spec, argv)
        result, pos = selector.check(spec, argv, keys or ())
        if result == ALLOWED:
            return ALLOWED, 0
        if result > relevant or (result == relevant and pos > position):
            relevant, position = result, pos
    return relevant, position


def command_keys(spec: CommandSpec, argv: list[bytes]) -> list[tuple[int, tuple[str, ...]]]:
    """The positions of argv's keys with their access flags (getKeysFromCommandWithSpecs)."""
    return [(pos, key_flags(spec, argv, ks)) for pos, ks in key_positions(spec, argv)]


register_user_line_check(check_user_line)
