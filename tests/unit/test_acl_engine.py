"""ACL users and selectors without a server: rules, descriptions, checks (server/acl)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import server.commands  # noqa: F401 - registers the command table the rules name
from server.acl.registry import (
    AclError,
    Users,
    check_command,
    split_selectors,
)
from server.acl.selector import (
    ALLOWED,
    DENIED_CHANNEL,
    DENIED_CMD,
    DENIED_KEY,
)
from server.config import ConfigError, load_config
from server.dispatch import find


def _user(*rules: str) -> Users:
    users = Users()
    current, staged = users.staged(b"u", [r.encode() for r in rules])
    users.commit(current, staged)
    return users


def _describe(*rules: str) -> str:
    return _user(*rules).get(b"u").describe().decode()  # type: ignore[union-attr]


def _check(users: Users, *argv: str) -> tuple[int, int]:
    args = [a.encode() for a in argv]
    return check_command(users.get(b"u"), find(args), args)  # type: ignore[arg-type]


def test_new_user_and_default_user_descriptions() -> None:
    users = Users()
    assert users.default.describe() == b"on nopass sanitize-payload ~* &* +@all"
    assert _describe() == "off sanitize-payload resetchannels -@all"


def test_command_rules_keep_their_order_and_a_repeated_rule_moves_last() -> None:
    assert _describe("+@all", "-@dangerous", "+config|get").endswith(
        "+@all -@dangerous +config|get")
    assert _describe("+get", "+set", "+get").endswith("-@all +set +get")
    # A command's rule replaces its subcommands' and first-arg rules.
    assert _describe("+config|get", "+select|0", "-config", "+select").endswith(
        "-@all -config +select")
    # +@all and -@all start over.
    assert _describe("+get", "-@all", "+set").endswith("-@all +set")
    assert _describe("-get", "allcommands").endswith("+@all")


def test_key_and_channel_patterns() -> None:
    text = _describe("%R~r:*", "%W~w:*", "~rw:*", "%R~x", "%W~x", "&c:*", "&c:*")
    assert text == ("off sanitize-payload %R~r:* %W~w:* ~rw:* ~x resetchannels &c:* -@all")
    assert _describe("~a", "allkeys", "allchannels").startswith("off sanitize-payload ~* &*")
    assert _describe("~a", "resetkeys", "&b", "resetchannels") == (
        "off sanitize-payload resetchannels -@all")


def test_passwords() -> None:
    digest = hashlib.sha256(b"secret").hexdigest()
    users = _user("on", ">secret", f"#{'0' * 64}")
    user = users.get(b"u")
    assert user is not None
    assert user.passwords == [digest.encode(), b"0" * 64]
    assert users.authenticate(b"u", b"secret") is user
    assert users.authenticate(b"u", b"wrong") is None
    current, staged = users.staged(b"u", [b"<secret", b"!" + b"0" * 64, b"nopass"])
    users.commit(current, staged)
    assert user.passwords == [] and user.nopass
    assert users.authenticate(b"u", b"anything") is user
    users.commit(*users.staged(b"u", [b"off"]))
    assert users.authenticate(b"u", b"anything") is None  # a disabled user cannot log in


@pytest.mark.parametrize(("rule", "message"), [
    ("#abc", "The password hash must be exactly 64 characters and contain only lowercase "
             "hexadecimal characters"),
    ("<nope", "The password you are trying to remove from the user does not exist"),
    ("+nosuch", "Unknown command or category name in ACL"),
    ("-@nosuch", "Unknown command or category name in ACL"),
    ("+get|x|y", "Unknown command or category name in ACL"),
    ("+config|get|x", "Allowing first-arg of a subcommand is not supported"),
    ("+config|", "Syntax error"),
    ("%RX~a", "Syntax error"),
    ("bogus", "Syntax error"),
])
def test_rule_errors(rule: str, message: str) -> None:
    with pytest.raises(AclError) as info:
        _user(rule)
    assert str(info.value) == f"Error in ACL SETUSER modifier '{rule}': {message}"


def test_a_failed_setuser_changes_nothing() -> None:
    users = _user("on", "+get")
    with pytest.raises(AclError):
        users.staged(b"u", [b"+set", b"+nosuch"])
    assert users.get(b"u").describe().endswith(b"-@all +get")  # type: ignore[union-attr]


def test_patterns_after_a_star_are_refused() -> None:
    with pytest.raises(AclError, match="'allkeys' flag"):
        _user("allkeys", "~x")
    with pytest.raises(AclError, match="'allchannels' flag"):
        _user("&*", "&x")


def test_selectors_merge_split_arguments() -> None:
    assert split_selectors([b"on", b"(+get", b"~x)", b"(+set ~y)"]) == [
        b"on", b"(+get ~x)", b"(+set ~y)"]
    with pytest.raises(AclError) as info:
        split_selectors([b"(+get", b"~x"])
    assert str(info.value) == "Unmatched parenthesis in acl selector starting at '(+get'."
    assert _describe("~a", "+get", "(+set ~b)", "(%R~c +@read)") == (
        "off sanitize-payload ~a resetchannels -@all +get (~b resetchannels -@all +set) "
        "(%R~c resetchannels -@all +@read)")
    assert _describe("(+set ~b)", "clearselectors") == "off sanitize-payload resetchannels -@all"


def test_command_and_key_checks() -> None:
    users = _user("on", "nopass", "%R~r:*", "%W~w:*", "+@all", "-flushall")
    assert _check(users, "GET", "r:1") == (ALLOWED, 0)
    assert _check(users, "SET", "r:1", "v") == (DENIED_KEY, 1)
    assert _check(users, "SET", "w:1", "v") == (ALLOWED, 0)
    assert _check(users, "XADD", "w:s", "*", "f", "v") == (ALLOWED, 0)
    assert _check(users, "XRANGE", "w:s", "-", "+") == (DENIED_KEY, 1)
    assert _check(users, "MGET", "r:1", "x", "r:2") == (DENIED_KEY, 2)
    assert _check(users, "FLUSHALL") == (DENIED_CMD, 0)
    assert _check(users, "AUTH", "a", "b") == (ALLOWED, 0)  # no-auth commands always run


def test_selectors_give_second_chances_and_the_relevant_refusal() -> None:
    users = _user("on", "nopass", "-@all", "(+@write ~w:*)", "(+@read ~r:*)")
    assert _check(users, "SET", "w:1", "v") == (ALLOWED, 0)
    assert _check(users, "GET", "r:1") == (ALLOWED, 0)
    assert _check(users, "GET", "w:1") == (DENIED_KEY, 1)
    assert _check(users, "PING") == (DENIED_CMD, 0)


def test_first_arg_and_subcommand_rules() -> None:
    users = _user("on", "-@all", "+select|0", "+config|get")
    assert _check(users, "SELECT", "0") == (ALLOWED, 0)
    assert _check(users, "SELECT", "1") == (DENIED_CMD, 0)
    assert _check(users, "CONFIG", "GET", "x") == (ALLOWED, 0)
    assert _check(users, "CONFIG", "SET", "x", "y") == (DENIED_CMD, 0)


def test_channel_checks() -> None:
    users = _user("on", "+@all", "allkeys", "&news.*")
    assert _check(users, "PUBLISH", "news.a", "m") == (ALLOWED, 0)
    assert _check(users, "PUBLISH", "other", "m") == (DENIED_CHANNEL, 1)
    assert _check(users, "SUBSCRIBE", "news.a", "other") == (DENIED_CHANNEL, 2)
    # A pattern subscription must name one of the user's patterns exactly.
    assert _check(users, "PSUBSCRIBE", "news.*") == (ALLOWED, 0)
    assert _check(users, "PSUBSCRIBE", "news.a*") == (DENIED_CHANNEL, 1)
    assert _check(users, "UNSUBSCRIBE", "other") == (ALLOWED, 0)


def test_reset_and_pubsub_default() -> None:
    users = Users()
    users.all_channels_default = True
    current, staged = users.staged(b"u", [b"on", b"~x", b"+get", b"reset"])
    users.commit(current, staged)
    assert users.get(b"u").describe() == b"off sanitize-payload &* -@all"  # type: ignore[union-attr]


def test_acl_file_errors_name_every_bad_line() -> None:
    users = Users()
    lines = [("f", 1, [b"user", b"a", b"on", b"+nosuch"]), ("f", 2, [b"nouser"]),
             ("f", 3, [b"user", b"a"]), ("f", 4, [b"user", b"b", b"(+get"])]
    with pytest.raises(AclError) as info:
        users.load_lines(lines)
    assert str(info.value) == (
        "f:1: Error in applying operation '+nosuch': Unknown command or category name in "
        "ACL. f:2 should start with user keyword followed by the username. WARNING: Duplicate "
        "user 'a' found on line 3. f:4: Unmatched parenthesis in selector definition.WARNING: ACL "
        "errors detected, no change to the previously active ACL rules was performed")
    assert users.names() == [b"default"]


def test_loading_replaces_users_but_keeps_the_default_object() -> None:
    users = _user("on")
    default = users.default
    loaded = users.load_lines([("f", 1, [b"user", b"default", b"on", b">pw", b"+@all"]),
                               ("f", 2, [b"user", b"z", b"on"])])
    gone = users.replace_all(loaded)
    assert [user.name for user in gone] == [b"u"]
    assert users.names() == [b"default", b"z"]
    assert users.default is default and not default.nopass
    assert users.authenticate(b"default", b"pw") is default


def test_config_file_user_lines_are_checked_as_the_file_is_read(tmp_path: Path) -> None:
    conf = tmp_path / "x.conf"
    conf.write_text("port 7000\nuser alice on >pw ~a:* +@read\nuser bob on +nosuch\n")
    config = load_config([str(conf)])
    assert [text for _, text in config.user_lines] == [
        "user alice on >pw ~a:* +@read", "user bob on +nosuch"]
    users = Users()
    with pytest.raises(AclError) as info:  # an unknown command fails only at start-up
        users.load_configured([line.split(b" ") for line in
                               (b"user alice on >pw ~a:* +@read", b"user bob on +nosuch")])
    assert str(info.value) == ("Error loading ACL rule '+nosuch' for the user named 'bob': "
                               "Unknown command or category name in ACL")
    for text, reason in [
        ("user alice on\nuser alice off", "Error in user declaration 'alice': Duplicate user "
                                          "found. A user can only be defined once in config "
                                          "files"),
        ("user alice on #abc", "Error in user declaration 'alice': The password hash must be "
                               "exactly 64 characters and contain only lowercase hexadecimal "
                               "characters"),
        ("user", "Bad directive or wrong number of arguments"),
    ]:
        conf.write_text(text + "\n")
        with pytest.raises(ConfigError) as error:
            load_config([str(conf)])
        assert str(error.value).endswith(reason)
