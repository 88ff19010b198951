"""ACL users as Redis 8.4 has them: SETUSER / GETUSER / LIST and their errors, the permission
check of restricted users (commands, keys, channels, selectors, MULTI/EXEC), the ACL log and
INFO's denial counts, what ACL changes do to connected clients, and users defined in the config
file or kept in an ACL file.

Replies are compared with Debian's redis-server (7.0.15) where 7.0 and 8.4 agree:
- Redis 7.2+ flags every user `sanitize-payload`: the flag is removed before comparing.
- NOPERM and ACL DRYRUN texts changed in 7.2 ("User <name> has no permissions ..." instead of
  "this user has no permissions ..."): ours are checked exactly, redis-server's by what they
  refuse (a command, a key or a channel).
- 7.0 describes command rules from its bitmap, in the order of its (randomly seeded) command
  table; 7.2+ keeps the rules as given, a rule given again moving to the end. Rule sets whose
  description depends on that are checked on this server only.
- 7.2+ ACL LOAD keeps the clients of users that still exist (7.0 closed them all).
The whole module describes Redis 8.4, so it is skipped when the suite runs against redis-server.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import TARGET, ServerProcess, redis_server_path
from tests.integration.server_fixtures import module_server
from tests.resp import ParsedConn

pytestmark = pytest.mark.skipif(TARGET == "redis", reason="Redis 8.4's ACL (redis-server is 7.0)")

srv = module_server()


def sha(password: str) -> str:
    return hashlib.sha256(password.encode()).hexdigest()


FOO_SHA = sha("foo")
WRONGPASS = "-WRONGPASS invalid username-password pair or user is disabled."
NOAUTH = "-NOAUTH Authentication required."
NO_DEFAULT_PASSWORD = ("-ERR AUTH <password> called without any password configured for the "
                       "default user. Are you sure your configuration is correct?")
NO_ACL_FILE = (
    "-ERR This Redis instance is not configured to use an ACL file. You may want to specify "
    "users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a "
    "Redis configuration file set) in order to store users in the Redis configuration.")
NO_KEY = "-NOPERM No permissions to access a key"
NO_CHANNEL = "-NOPERM No permissions to access a channel"
EXEC_CHANGED = (
    "-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC "
    "call. This command is no longer allowed for the following reason: ")
LOAD_FAILED = ("WARNING: ACL errors detected, no change to the previously active ACL rules was "
               "performed")


def no_command(user: str, command: str) -> str:
    """Redis 8's refusal of a command."""
    return f"-NOPERM User {user} has no permissions to run the '{command}' command"


# -- connections ---------------------------------------------------------------------------------
def plain(reply: Any) -> Any:
    """A reply as hiredis parsed it, with errors (also inside arrays) as "-<text>" strings."""
    if isinstance(reply, Exception):
        return "-" + str(reply)
    if isinstance(reply, list):
        return [plain(item) for item in reply]
    if isinstance(reply, dict):
        return {key: plain(value) for key, value in reply.items()}
    return reply


class Client:
    """One connection, logged in as `auth` (AUTH's arguments) when given. call() returns the
    parsed reply: bytes, int, list, None, or "-<text>" for an error."""

    def __init__(self, proc: ServerProcess, *auth: str) -> None:
        self.proc = proc
        self.conn = ParsedConn(proc)
        if auth:
            assert self.call("AUTH", *auth) == b"OK"

    def call(self, *args: str | bytes | int) -> Any:
        return plain(self.conn.call(*args))

    def closed_by_server(self) -> bool:
        """True when the server has closed the connection: a PING gets no answer but EOF."""
        try:
            self.conn.send("PING")
            self.conn.sock.settimeout(5)
            return self.conn.sock.recv(1) == b""
        except OSError:
            return True

    def close(self) -> None:
        self.conn.sock.close()


def reset_acl(admin: Client) -> None:
    """Back to the start: only the default user, with every permission and no password."""
    admin.call("CONFIG", "SET", "requirepass", "")
    admin.call("CONFIG", "SET", "acl-pubsub-default", "resetchannels")
    assert admin.call("ACL", "SETUSER", "default", "reset", "on", "nopass", "~*", "&*",
                      "+@all") == b"OK"
    others = [name for name in admin.call("ACL", "USERS") if name != b"default"]
    if others:
        admin.call("ACL", "DELUSER", *others)
    admin.call("ACL", "LOG", "RESET")
    admin.call("FLUSHALL")


def without_sanitize(reply: Any) -> Any:
    """A reply without Redis 8's sanitize-payload flag (7.0 shows it only after `reset`)."""
    if isinstance(reply, bytes):
        return reply.replace(b" sanitize-payload", b"")
    if isinstance(reply, list):
        return [without_sanitize(item) for item in reply if item != b"sanitize-payload"]
    return reply


def refusal_kind(reply: Any) -> str:
    """What the ACL check refused ("command", "key", "channel"), in 8.x's or 7.0's words;
    "" when the reply is no NOPERM error."""
    if not (isinstance(reply, str) and reply.startswith("-NOPERM")):
        return ""
    if "to run the" in reply:
        return "command"
    return "key" if " key" in reply else "channel"


def wait_blocked(admin: Client, count: int) -> None:
    """Wait (5 s at most) until `count` clients are blocked."""
    deadline = time.monotonic() + 5
    while admin.call("CLIENT", "LIST").count(b" flags=b ") < count:
        assert time.monotonic() < deadline, "the clients did not block"
        time.sleep(0.01)


def log_entries(admin: Client, *count: str) -> list[dict[bytes, Any]]:
    """ACL LOG's entries (newest first) as dicts."""
    return [dict(zip(entry[::2], entry[1::2], strict=True))
            for entry in admin.call("ACL", "LOG", *count)]


# -- fixtures ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ref_proc() -> Iterator[ServerProcess | None]:
    """This module's own redis-server (its users stay out of other modules), None when it is
    not installed (which CI does not allow, as tests/conftest.py's redis_ref)."""
    if redis_server_path() is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server must be installed in CI for compatibility tests")
        yield None
        return
    proc = ServerProcess("redis").start()
    yield proc
    proc.stop()


@pytest.fixture
def ours(srv: ServerProcess) -> Iterator[Client]:
    """An admin connection (the default user) to our server; the ACL state is reset after."""
    admin = Client(srv)
    yield admin
    reset_acl(admin)
    admin.close()


@pytest.fixture
def theirs(ref_proc: ServerProcess | None) -> Iterator[Client | None]:
    """The same on redis-server, or None when it is not installed."""
    if ref_proc is None:
        yield None
        return
    admin = Client(ref_proc)
    yield admin
    reset_acl(admin)
    admin.close()


@pytest.fixture
def ref(theirs: Client | None) -> Client:
    """The admin connection to redis-server, for tests that only compare."""
    if theirs is None:
        pytest.skip("redis-server not installed")
    return theirs


def present(*admins: Client | None) -> list[Client]:
    """The servers a test runs on: ours, and redis-server when it is installed."""
    return [admin for admin in admins if admin is not None]


# == 1. SETUSER, GETUSER, LIST ===================================================================
# Rule sets whose description is the same in 7.0 and 8.4.
COMPARED_RULES: list[list[str]] = [
    ["on", ">pw", "%R~r:*", "%W~w:*", "~rw:*", "&chan:*", "+@all", "-flushall"],
    ["%R~x", "%W~x"],  # read, then write, on one pattern: ~x
    ["%W~x", "%R~x", "~y"],
    ["~x", "%R~x"],
    ["%R~*"],
    ["%RW~*"],
    ["~x", "~x", "&a", "&a"],
    ["allkeys", "allchannels", "+@all", "-@dangerous"],
    ["allkeys", "allchannels", "resetkeys", "~a", "resetchannels", "&b"],
    ["~x", "allkeys"],
    ["&x", "allchannels", "resetchannels"],
    ["-@all", "+@read"],
    ["+@all", "-get"],
    ["-@all", "+get"],
    ["-@all", "+config|get"],
    ["+@all", "-config", "+config|get"],
    ["-@all", "+select|0", "+select|1"],
    ["-@all", "+select|0", "+select|0"],
    ["+@all", "-@all", "+get"],  # +@all and -@all clear the rules before them
    ["-@all", "+@read", "+@all"],
    ["allcommands", "nocommands"],
    ["allcommands", "allkeys", "allchannels"],
    ["nopass"],
    [">a", ">b", "<a"],
    [f"#{FOO_SHA}", ">x", f"!{FOO_SHA}"],
    ["nopass", ">x"],
    [">x", "nopass"],
    ["on", ">x", "resetpass"],
    ["on", "off"],
    ["on"],
    ["skip-sanitize-payload"],
    ["on", ">x", "~k", "+get", "(+set ~y)", "reset"],
    ["(+get ~x)", "(+set ~y &c)"],  # each selector as one argument
    ["(+get", "~z)", "(", "+set", "~w", ")"],  # spread over several
    ["~a", "(+get ~x)", "clearselectors"],
    ["()"],
]


@pytest.mark.parametrize("rules", COMPARED_RULES, ids=" ".join)
def test_description_matches_redis(ours: Client, ref: Client, rules: list[str]) -> None:
    for admin in (ours, ref):
        assert admin.call("ACL", "SETUSER", "u", *rules) == b"OK"
    for command in (["ACL", "GETUSER", "u"], ["ACL", "LIST"]):
        assert without_sanitize(ours.call(*command)) == without_sanitize(ref.call(*command))


# Our exact descriptions, including the rule orders 7.0 does not keep.
DESCRIBED: list[tuple[list[str], str]] = [
    (["%R~x", "%W~x"], "off sanitize-payload ~x resetchannels -@all"),
    (["on", ">foo", "%R~r:*", "%W~w:*", "&chan:*", "+@all", "-flushall"],
     f"on sanitize-payload #{FOO_SHA} %R~r:* %W~w:* resetchannels &chan:* +@all -flushall"),
    (["skip-sanitize-payload", "allkeys", "allchannels"],
     "off skip-sanitize-payload ~* &* -@all"),
    (["on", "nopass", "~k", "+get", "reset"], "off sanitize-payload resetchannels -@all"),
    (["(+get ~x)", "(+set", "~y", "&c)"], "off sanitize-payload resetchannels -@all "
     "(~x resetchannels -@all +get) (~y resetchannels &c -@all +set)"),
    (["-@all", "+get", "+set", "+get"], "off sanitize-payload resetchannels -@all +set +get"),
    (["-@all", "+@read", "-get", "+set"],
     "off sanitize-payload resetchannels -@all +@read -get +set"),
    (["-@all", "+config|get", "+client|list"],
     "off sanitize-payload resetchannels -@all +config|get +client|list"),
    (["-@all", "+config|get", "+config"], "off sanitize-payload resetchannels -@all +config"),
    (["-@all", "+config|get", "-config"], "off sanitize-payload resetchannels -@all -config"),
    (["-@all", "+xadd", "-xadd"], "off sanitize-payload resetchannels -@all -xadd"),
    (["+@all", "+set", "-@write", "+set", "-@write"],
     "off sanitize-payload resetchannels +@all +set -@write"),
    (["-@all", "+@READ", "+GET"], "off sanitize-payload resetchannels -@all +@read +get"),
    (["-@all", "+get", "+@all"], "off sanitize-payload resetchannels +@all"),
]


@pytest.mark.parametrize(("rules", "described"), DESCRIBED, ids=[" ".join(r) for r, _ in DESCRIBED])
def test_description(ours: Client, rules: list[str], described: str) -> None:
    assert ours.call("ACL", "SETUSER", "u", *rules) == b"OK"
    assert ours.call("ACL", "LIST") == [
        b"user default on nopass sanitize-payload ~* &* +@all", b"user u " + described.encode()]
    root = described.split(" (")[0]  # (the root selector's commands, as GETUSER shows them)
    commands = re.search(r"[-+]@all.*", root)
    assert commands is not None
    assert ours.call("ACL", "GETUSER", "u")[4:6] == [b"commands", commands.group().encode()]


def test_getuser_reply(ours: Client) -> None:
    assert ours.call("ACL", "SETUSER", "u", "on", ">foo", "%R~a", "~b", "&c", "-@all", "+get",
                     "(+set ~x)") == b"OK"
    assert ours.call("ACL", "GETUSER", "u") == [
        b"flags", [b"on", b"sanitize-payload"], b"passwords", [FOO_SHA.encode()],
        b"commands", b"-@all +get", b"keys", b"%R~a ~b", b"channels", b"&c",
        b"selectors", [[b"commands", b"-@all +set", b"keys", b"~x", b"channels", b""]]]


def setuser_error(op: str, why: str) -> str:
    return f"-ERR Error in ACL SETUSER modifier '{op}': {why}"


BAD_HASH = ("The password hash must be exactly 64 characters and contain only lowercase "
            "hexadecimal characters")
NO_SUCH_PASSWORD = "The password you are trying to remove from the user does not exist"
UNKNOWN = "Unknown command or category name in ACL"
SYNTAX = "Syntax error"
KEYS_AFTER_ALL = ("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and "
                  "does not have any effect. Try 'resetkeys' to start with an empty list of "
                  "patterns")
CHANNELS_AFTER_ALL = ("Adding a pattern after the * pattern (or the 'allchannels' flag) is not "
                      "valid and does not have any effect. Try 'resetchannels' to start with an "
                      "empty list of channels")

SETUSER_ERRORS: list[tuple[list[str], str]] = [
    (["on", "#abc"], setuser_error("#abc", BAD_HASH)),
    ([f"#{FOO_SHA.upper()}"], setuser_error(f"#{FOO_SHA.upper()}", BAD_HASH)),
    (["!abc"], setuser_error("!abc", BAD_HASH)),
    (["<nope"], setuser_error("<nope", NO_SUCH_PASSWORD)),
    ([">x", f"!{FOO_SHA}"], setuser_error(f"!{FOO_SHA}", NO_SUCH_PASSWORD)),
    (["+nosuch"], setuser_error("+nosuch", UNKNOWN)),
    (["-nosuch"], setuser_error("-nosuch", UNKNOWN)),
    (["+@nosuch"], setuser_error("+@nosuch", UNKNOWN)),
    (["-@nosuch"], setuser_error("-@nosuch", UNKNOWN)),
    (["allkeys", "~x"], setuser_error("~x", KEYS_AFTER_ALL)),
    (["~*", "%R~x"], setuser_error("%R~x", KEYS_AFTER_ALL)),
    (["allchannels", "&x"], setuser_error("&x", CHANNELS_AFTER_ALL)),
    (["&*", "&x"], setuser_error("&x", CHANNELS_AFTER_ALL)),
    (["+get|x|y"], setuser_error("+get|x|y", UNKNOWN)),
    (["+config|"], setuser_error("+config|", SYNTAX)),
    (["+config|get|x"], setuser_error(
        "+config|get|x", "Allowing first-arg of a subcommand is not supported")),
    (["+config|nosuch"], setuser_error("+config|nosuch", UNKNOWN)),
    (["-select|0"], setuser_error("-select|0", UNKNOWN)),
    (["%X~x"], setuser_error("%X~x", SYNTAX)),
    (["%~x"], setuser_error("%~x", SYNTAX)),
    (["%RR~x"], setuser_error("%RR~x", SYNTAX)),
    (["~a b"], setuser_error("~a b", SYNTAX)),
    (["&a b"], setuser_error("&a b", SYNTAX)),
    (["on", "bogus"], setuser_error("bogus", SYNTAX)),
    (["(+nosuch ~x)"], setuser_error("(+nosuch ~x)", UNKNOWN)),
    (["(+get", "~x"], "-ERR Unmatched parenthesis in acl selector starting at '(+get'."),
    (["(+get ~x)", "(+set"], "-ERR Unmatched parenthesis in acl selector starting at '(+set'."),
]


@pytest.mark.parametrize(("rules", "error"), SETUSER_ERRORS,
                         ids=[" ".join(r) for r, _ in SETUSER_ERRORS])
def test_setuser_errors(ours: Client, theirs: Client | None, rules: list[str],
                        error: str) -> None:
    for admin in present(ours, theirs):
        assert admin.call("ACL", "SETUSER", "u", *rules) == error
        assert admin.call("ACL", "GETUSER", "u") is None  # no rule applied, no user made


def test_a_failed_setuser_changes_nothing(ours: Client, theirs: Client | None) -> None:
    for admin in present(ours, theirs):
        assert admin.call("ACL", "SETUSER", "u", "on", ">pw", "~a", "+get") == b"OK"
        before = admin.call("ACL", "GETUSER", "u")
        assert admin.call("ACL", "SETUSER", "u", "off", "resetkeys", "+nosuch") == (
            setuser_error("+nosuch", UNKNOWN))
        assert admin.call("ACL", "GETUSER", "u") == before


GENPASS_ERROR = ("-ERR ACL GENPASS argument must be the number of bits for the output password, "
                 "a positive number up to 4096")
COMMAND_ERRORS: list[tuple[list[str], Any]] = [
    (["ACL", "SETUSER", "a b", "on"], "-ERR Usernames can't contain spaces or null characters"),
    (["ACL", "DELUSER", "default"], "-ERR The 'default' user cannot be removed"),
    (["ACL", "DELUSER", "nobody", "default"], "-ERR The 'default' user cannot be removed"),
    (["ACL", "DELUSER", "nobody"], 0),
    (["ACL", "DRYRUN", "nobody", "GET", "x"], "-ERR User 'nobody' not found"),
    (["ACL", "DRYRUN", "default", "nosuch", "x"], "-ERR Command 'nosuch' not found"),
    (["ACL", "DRYRUN", "default", "CONFIG", "nosuch"], "-ERR Command 'CONFIG' not found"),
    (["ACL", "DRYRUN", "default", "GET"], "-ERR wrong number of arguments for 'get' command"),
    (["ACL", "DRYRUN", "default", "GET", "a", "b"],
     "-ERR wrong number of arguments for 'get' command"),
    (["ACL", "DRYRUN", "default", "CONFIG"],
     "-ERR wrong number of arguments for 'config' command"),
    (["ACL", "DRYRUN", "default", "CONFIG", "GET", "x"], b"OK"),
    (["ACL", "GENPASS", "0"], GENPASS_ERROR),
    (["ACL", "GENPASS", "-1"], GENPASS_ERROR),
    (["ACL", "GENPASS", "4097"], GENPASS_ERROR),
    (["ACL", "GENPASS", "x"], "-ERR value is not an integer or out of range"),
    (["ACL", "GENPASS", "1", "2"],
     "-ERR unknown subcommand or wrong number of arguments for 'GENPASS'. Try ACL HELP."),
    (["ACL", "LOAD"], NO_ACL_FILE),
    (["ACL", "SAVE"], NO_ACL_FILE),
]


@pytest.mark.parametrize(("args", "reply"), COMMAND_ERRORS,
                         ids=[" ".join(a) for a, _ in COMMAND_ERRORS])
def test_acl_command_errors(ours: Client, theirs: Client | None, args: list[str],
                            reply: Any) -> None:
    for admin in present(ours, theirs):
        assert admin.call(*args) == reply


def test_genpass_lengths(ours: Client, theirs: Client | None) -> None:
    for admin in present(ours, theirs):
        for bits, chars in ((1, 1), (4, 1), (5, 2), (255, 64), (256, 64), (4096, 1024)):
            password = admin.call("ACL", "GENPASS", str(bits))
            assert len(password) == chars, bits
            assert set(password.decode()) <= set("0123456789abcdef")
        first, second = admin.call("ACL", "GENPASS"), admin.call("ACL", "GENPASS")
        assert len(first) == len(second) == 64 and first != second


DRYRUNS: list[tuple[list[str], bytes]] = [
    (["GET", "k"], b"OK"),
    (["PUBLISH", "c", "m"], b"OK"),
    (["AUTH", "x"], b"OK"),  # AUTH and HELLO need no permission
    (["HELLO"], b"OK"),
    (["GET", "x"], b"User dr has no permissions to access the 'x' key"),
    (["SET", "k", "v"], b"User dr has no permissions to run the 'set' command"),
    (["PUBLISH", "z", "m"], b"User dr has no permissions to access the 'z' channel"),
    (["CONFIG", "GET", "x"], b"User dr has no permissions to run the 'config|get' command"),
]


def test_dryrun(ours: Client, theirs: Client | None) -> None:
    for admin in present(ours, theirs):
        assert admin.call("ACL", "SETUSER", "dr", "on", "nopass", "~k", "&c", "-@all", "+get",
                          "+publish") == b"OK"
    for args, reply in DRYRUNS:
        assert ours.call("ACL", "DRYRUN", "dr", *args) == reply
        if theirs is None:
            continue
        other = theirs.call("ACL", "DRYRUN", "dr", *args)
        if reply == b"OK":
            assert other == b"OK", args
        else:  # (7.0: "This user has no permissions ...")
            assert isinstance(other, bytes) and b" has no" in other, args
            assert other.partition(b" has no")[2] == reply.partition(b" has no")[2], args


def test_acl_pubsub_default(ours: Client, theirs: Client | None) -> None:
    for admin in present(ours, theirs):
        assert admin.call("CONFIG", "SET", "acl-pubsub-default", "allchannels") == b"OK"
        assert admin.call("ACL", "SETUSER", "u", "~a") == b"OK"
        assert admin.call("ACL", "SETUSER", "w", "&x") == setuser_error("&x", CHANNELS_AFTER_ALL)
        assert admin.call("ACL", "SETUSER", "v", "resetchannels", "&x", "reset") == b"OK"
        assert without_sanitize(admin.call("ACL", "LIST"))[1:] == [
            b"user u off ~a &* -@all", b"user v off &* -@all"]


# == 2. Permission checks ========================================================================
APP_RULES = ["on", ">pw", "%R~r:*", "%W~w:*", "~k:*", "&chan:*", "+@all", "-flushall"]
APP_CASES: list[tuple[list[str], str | None]] = [
    (["GET", "r:1"], None),
    (["SET", "r:1", "x"], NO_KEY),
    (["GET", "w:1"], NO_KEY),
    (["SET", "w:1", "x"], None),
    (["GET", "k:1"], None),
    (["SET", "k:1", "x"], None),
    (["GET", "other"], NO_KEY),
    (["EXISTS", "w:1"], None),  # (a key flagged neither read nor write: any pattern will do)
    (["EXISTS", "other"], NO_KEY),
    (["DEL", "r:1"], NO_KEY),
    (["DEL", "w:1"], None),
    (["RENAME", "w:1", "w:2"], NO_KEY),  # the source is read too
    (["COPY", "r:1", "w:2"], None),
    (["KEYS", "*"], None),
    (["XRANGE", "r:s", "-", "+"], None),
    (["XRANGE", "w:s", "-", "+"], NO_KEY),
    (["XADD", "r:s", "*", "f", "v"], NO_KEY),
    (["XADD", "w:s", "*", "f", "v"], None),
    (["XREAD", "STREAMS", "r:s", "0"], None),
    (["XREAD", "STREAMS", "w:s", "0"], NO_KEY),
    (["XREAD", "STREAMS", "k:s", "r:s", "0", "0"], None),
    (["XREAD", "STREAMS", "k:s", "other", "0", "0"], NO_KEY),
    # XREADGROUP's key spec is RO ACCESS (COMMAND INFO, in 7.0 and 8): reading is enough.
    (["XREADGROUP", "GROUP", "g", "c", "STREAMS", "r:s", ">"], None),
    (["XREADGROUP", "GROUP", "g", "c", "STREAMS", "w:s", ">"], NO_KEY),
    (["XACK", "r:s", "g", "1-1"], NO_KEY),
    (["XACK", "w:s", "g", "1-1"], None),
    (["XGROUP", "CREATE", "r:s", "g2", "0"], NO_KEY),
    (["XGROUP", "CREATE", "w:s", "g2", "0"], None),
    (["XINFO", "STREAM", "r:s"], None),
    (["XINFO", "STREAM", "w:s"], NO_KEY),
    (["MGET", "k:1", "r:1"], None),
    (["MGET", "k:1", "w:1"], NO_KEY),
    (["MGET", "k:1", "other"], NO_KEY),
    (["FLUSHALL"], no_command("app", "flushall")),
    (["PUBLISH", "chan:1", "m"], None),
    (["PUBLISH", "other", "m"], NO_CHANNEL),
    (["SUBSCRIBE", "chan:1", "chan:2"], None),
    (["SUBSCRIBE", "chan:1", "other"], NO_CHANNEL),
    (["SSUBSCRIBE", "other"], NO_CHANNEL),
    (["PSUBSCRIBE", "chan:*"], None),  # a pattern is matched as the same text
    (["PSUBSCRIBE", "chan:1*"], NO_CHANNEL),
    (["PSUBSCRIBE", "*"], NO_CHANNEL),
    (["UNSUBSCRIBE", "other"], None),  # unsubscribing is never refused
]


def prepare_app(admin: Client) -> None:
    """The user `app` and the keys its cases use."""
    assert admin.call("ACL", "SETUSER", "app", *APP_RULES) == b"OK"
    for stream in ("r:s", "w:s", "k:s"):
        admin.call("XADD", stream, "1-1", "f", "v")
        assert admin.call("XGROUP", "CREATE", stream, "g", "0") == b"OK"
    for key in ("r:1", "w:1", "k:1"):
        admin.call("SET", key, "v")


def assert_refusals(replies: list[object], refusal: str | None) -> None:
    """Our reply (first) is the refusal expected, or none; redis-server's, when there, is
    a refusal of the same kind (its texts are 7.0's)."""
    if refusal is None:
        assert refusal_kind(replies[0]) == "", replies[0]
    else:
        assert replies[0] == refusal
    for reply in replies[1:]:
        assert refusal_kind(reply) == refusal_kind(replies[0]), reply


@pytest.mark.parametrize(("args", "refusal"), APP_CASES, ids=[" ".join(a) for a, _ in APP_CASES])
def test_key_and_channel_permissions(ours: Client, theirs: Client | None, args: list[str],
                                     refusal: str | None) -> None:
    replies = []
    for admin in present(ours, theirs):
        prepare_app(admin)
        user = Client(admin.proc, "app", "pw")
        replies.append(user.call(*args))
        user.close()
    assert_refusals(replies, refusal)


SEL_RULES = ["on", ">pw", "~a", "-@all", "+get", "(~b +set)", "+select|0", "+config|get"]
SELECTOR_CASES: list[tuple[list[str], str | None]] = [
    (["GET", "a"], None),
    (["SET", "b", "1"], None),  # the selector gives a second chance
    (["GET", "b"], NO_KEY),  # no selector allows both: the key refusal is the relevant one
    (["SET", "a", "1"], NO_KEY),
    (["SET", "c", "1"], NO_KEY),
    (["SELECT", "0"], None),  # +select|0: that first argument only
    (["SELECT", "1"], no_command("sel", "select")),
    (["CONFIG", "GET", "port"], None),
    (["CONFIG", "SET", "port", "1"], no_command("sel", "config|set")),
    (["CONFIG", "RESETSTAT"], no_command("sel", "config|resetstat")),
    (["PING"], no_command("sel", "ping")),
    (["AUTH", "sel", "pw"], None),  # no-auth commands need no permission
    (["HELLO", "2"], None),
]


@pytest.mark.parametrize(("args", "refusal"), SELECTOR_CASES,
                         ids=[" ".join(a) for a, _ in SELECTOR_CASES])
def test_selectors_first_args_and_subcommands(ours: Client, theirs: Client | None,
                                              args: list[str], refusal: str | None) -> None:
    replies = []
    for admin in present(ours, theirs):
        assert admin.call("ACL", "SETUSER", "sel", *SEL_RULES) == b"OK"
        user = Client(admin.proc, "sel", "pw")
        replies.append(user.call(*args))
        user.close()
    assert_refusals(replies, refusal)


def test_refused_command_aborts_the_transaction(ours: Client, theirs: Client | None) -> None:
    for admin in present(ours, theirs):
        prepare_app(admin)
        user = Client(admin.proc, "app", "pw")
        assert user.call("MULTI") == b"OK"
        assert user.call("SET", "w:1", "new") == b"QUEUED"
        refused = user.call("SET", "r:1", "new")
        assert refusal_kind(refused) == "key"
        if admin is ours:
            assert refused == NO_KEY
        assert user.call("EXEC") == "-EXECABORT Transaction discarded because of previous errors."
        assert admin.call("MGET", "r:1", "w:1") == [b"v", b"v"]
        entry = log_entries(admin, "1")[0]
        assert (entry[b"reason"], entry[b"context"], entry[b"object"]) == (b"key", b"multi",
                                                                             b"r:1")


def test_exec_rechecks_rules_changed_since_queueing(ours: Client, theirs: Client | None) -> None:
    for admin in present(ours, theirs):
        assert admin.call("ACL", "SETUSER", "t", "on", ">pw", "~*", "&*", "+@all") == b"OK"
        user = Client(admin.proc, "t", "pw")
        for args in (["MULTI"], ["GET", "x"], ["SET", "y", "1"], ["PUBLISH", "c", "m"], ["PING"]):
            assert user.call(*args) in (b"OK", b"QUEUED")
        assert admin.call("ACL", "SETUSER", "t", "-get", "resetkeys", "~y",
                          "resetchannels") == b"OK"
        assert user.call("EXEC") == [
            EXEC_CHANGED + "no permission to execute the command or subcommand", b"OK",
            EXEC_CHANGED + "no permission to access one of the channels used as arguments",
            b"PONG"]
        assert user.call("MULTI") == b"OK"
        assert user.call("SET", "y", "2") == b"QUEUED"
        assert admin.call("ACL", "SETUSER", "t", "resetkeys", "~z") == b"OK"
        assert user.call("EXEC") == [EXEC_CHANGED + "no permission to touch the specified keys"]
        assert admin.call("GET", "y") == b"1"
        assert [(e[b"reason"], e[b"context"], e[b"object"]) for e in log_entries(admin)] == [
            (b"key", b"multi", b"y"), (b"channel", b"multi", b"c"),
            (b"command", b"multi", b"get")]


def test_authentication(ours: Client, theirs: Client | None) -> None:
    for admin in present(ours, theirs):
        admin.call("ACL", "SETUSER", "alice", "on", ">secret", "~*", "+@all")
        admin.call("ACL", "SETUSER", "dis", "off", ">secret", "~*", "+@all")
        conn = Client(admin.proc)
        assert conn.call("AUTH", "alice", "wrong") == WRONGPASS
        assert conn.call("AUTH", "nobody", "secret") == WRONGPASS
        assert conn.call("AUTH", "dis", "secret") == WRONGPASS  # off
        assert conn.call("HELLO", "2", "AUTH", "alice", "wrong") == WRONGPASS
        assert conn.call("HELLO", "2", "AUTH", "nobody", "x") == WRONGPASS
        assert conn.call("AUTH", "secret") == NO_DEFAULT_PASSWORD  # default is nopass
        assert conn.call("ACL", "WHOAMI") == b"default"
        assert conn.call("AUTH", "alice", "secret") == b"OK"
        assert conn.call("ACL", "WHOAMI") == b"alice"
        hello = conn.call("HELLO", "3", "AUTH", "default", "anything")  # nopass: any password
        assert isinstance(hello, dict) and hello[b"proto"] == 3
        assert conn.call("ACL", "WHOAMI") == b"default"
        assert conn.call("HELLO", "2", "AUTH", "alice", "secret")[4:6] == [b"proto", 2]
        assert conn.call("ACL", "WHOAMI") == b"alice"
        conn.close()


# == 3. ACL LOG and INFO =========================================================================
def refuse_some(admin: Client) -> list[tuple[Any, ...]]:
    """Refusals of each kind by the user `lg`; the ACL log's entries, newest first."""
    assert admin.call("ACL", "SETUSER", "lg", "on", ">p", "~k", "&c", "+@all",
                      "-config|set") == b"OK"
    user = Client(admin.proc, "lg", "p")
    for args in (["GET", "other"], ["GET", "other"], ["PUBLISH", "zz", "m"],
                 ["CONFIG", "SET", "port", "1"]):
        assert refusal_kind(user.call(*args))
    assert user.call("MULTI") == b"OK"
    assert refusal_kind(user.call("GET", "o3")) == "key"
    assert user.call("DISCARD") == b"OK"
    stranger = Client(admin.proc)
    assert stranger.call("AUTH", "lg", "bad") == WRONGPASS
    entries = log_entries(admin)
    for entry in entries:
        info = entry[b"client-info"]
        user_field = b" user=default " if entry[b"reason"] == b"auth" else b" user=lg "
        assert info.startswith(b"id=") and user_field in info
    return [(e[b"count"], e[b"reason"], e[b"context"], e[b"object"], e[b"username"])
            for e in entries]


LOGGED = [
    (1, b"auth", b"toplevel", b"AUTH", b"lg"),
    (1, b"key", b"multi", b"o3", b"lg"),
    (1, b"command", b"toplevel", b"config|set", b"lg"),
    (1, b"channel", b"toplevel", b"zz", b"lg"),
    (2, b"key", b"toplevel", b"other", b"lg"),  # the same refusal again: counted
]


def test_acl_log_entries(ours: Client, theirs: Client | None) -> None:
    for admin in present(ours, theirs):
        assert refuse_some(admin) == LOGGED
        assert [e[b"object"] for e in log_entries(admin, "2")] == [b"AUTH", b"o3"]
        assert admin.call("ACL", "LOG", "RESET") == b"OK"
        assert admin.call("ACL", "LOG") == []


def denial_stats(admin: Client) -> dict[str, int]:
    info = admin.call("INFO", "stats").decode()
    return {name: int(value) for name, _, value in
            (line.partition(":") for line in info.split("\r\n"))
            if name.startswith("acl_access_denied_")}


def test_info_counts_refusals(ours: Client) -> None:
    assert ours.call("CONFIG", "RESETSTAT") == b"OK"
    refuse_some(ours)
    assert denial_stats(ours) == {"acl_access_denied_auth": 1, "acl_access_denied_cmd": 1,
                                  "acl_access_denied_key": 3, "acl_access_denied_channel": 1}
    assert ours.call("CONFIG", "RESETSTAT") == b"OK"
    assert set(denial_stats(ours).values()) == {0}


# == 4. Connections ==============================================================================
def test_deluser_closes_the_users_connections(ours: Client, theirs: Client | None) -> None:
    for admin in present(ours, theirs):
        for name in ("alice", "bob"):
            admin.call("ACL", "SETUSER", name, "on", f">{name}", "~*", "&*", "+@all")
        alice1, alice2 = Client(admin.proc, "alice", "alice"), Client(admin.proc, "alice", "alice")
        blocked = Client(admin.proc, "alice", "alice")
        blocked.conn.send("XREAD", "BLOCK", "0", "STREAMS", "nokey", "$")
        wait_blocked(admin, 1)
        bob = Client(admin.proc, "bob", "bob")
        assert alice1.call("ACL", "WHOAMI") == b"alice"
        alice_id = alice1.call("CLIENT", "ID")
        assert b" user=alice " in admin.call("CLIENT", "LIST", "ID", str(alice_id))
        assert b" user=default " in admin.call("CLIENT", "INFO")
        assert admin.call("ACL", "DELUSER", "alice", "nobody") == 1
        assert alice1.closed_by_server() and alice2.closed_by_server()
        assert blocked.closed_by_server()
        assert bob.call("PING") == b"PONG"
        assert admin.call("ACL", "USERS") == [b"bob", b"default"]
        # A client deleting its own user gets its reply, then is closed.
        assert bob.call("ACL", "DELUSER", "bob") == 1
        assert bob.closed_by_server()
        assert admin.call("ACL", "USERS") == [b"default"]


def test_client_kill_user(ours: Client, theirs: Client | None) -> None:
    for admin in present(ours, theirs):
        for name in ("alice", "bob"):
            admin.call("ACL", "SETUSER", name, "on", f">{name}", "~*", "&*", "+@all")
        alices = [Client(admin.proc, "alice", "alice") for _ in range(2)]
        bob = Client(admin.proc, "bob", "bob")
        assert admin.call("CLIENT", "KILL", "USER", "nobody") == "-ERR No such user 'nobody'"
        assert admin.call("CLIENT", "KILL", "USER", "alice") == 2
        assert all(alice.closed_by_server() for alice in alices)
        assert bob.call("PING") == b"PONG"
        assert admin.call("CLIENT", "KILL", "USER", "alice") == 0
        assert admin.call("ACL", "USERS") == [b"alice", b"bob", b"default"]  # (users stay)


def test_reset_returns_to_the_default_user(ours: Client, theirs: Client | None) -> None:
    for admin in present(ours, theirs):
        admin.call("ACL", "SETUSER", "alice", "on", ">pw", "~*", "+@all")
        conn = Client(admin.proc, "alice", "pw")
        assert conn.call("RESET") == b"RESET"
        assert conn.call("ACL", "WHOAMI") == b"default"
        assert conn.call("AUTH", "alice", "pw") == b"OK"
        assert admin.call("ACL", "SETUSER", "default", "resetpass", ">dpw") == b"OK"
        assert conn.call("RESET") == b"RESET"  # the default user now needs its password
        assert conn.call("PING") == NOAUTH
        assert conn.call("AUTH", "dpw") == b"OK"
        assert conn.call("ACL", "WHOAMI") == b"default"


def test_default_user_changes(ours: Client, theirs: Client | None) -> None:
    for admin in present(ours, theirs):
        old = Client(admin.proc)
        assert old.call("PING") == b"PONG"  # (accepted before the change)
        assert admin.call("ACL", "SETUSER", "default", "resetpass", ">pw") == b"OK"
        new = Client(admin.proc)
        assert new.call("PING") == NOAUTH
        assert old.call("PING") == b"PONG"  # logged in already: it keeps working
        assert new.call("AUTH", "pw") == b"OK"
        assert new.call("PING") == b"PONG"
        assert admin.call("ACL", "GETUSER", "default")[2:4] == [b"passwords", [sha("pw").encode()]]
        assert admin.call("ACL", "SETUSER", "default", "nopass", "off") == b"OK"
        waiting = Client(admin.proc)
        assert waiting.call("PING") == NOAUTH  # an off default user logs nobody in
        assert waiting.call("AUTH", "x") == NO_DEFAULT_PASSWORD
        assert waiting.call("AUTH", "default", "x") == WRONGPASS
        assert waiting.call("AUTH", "default", "pw") == WRONGPASS  # (nopass took it away)


def test_requirepass_is_the_default_users_password(ours: Client, theirs: Client | None) -> None:
    for admin in present(ours, theirs):
        assert admin.call("CONFIG", "SET", "requirepass", "foo") == b"OK"
        flags, passwords = without_sanitize(admin.call("ACL", "GETUSER", "default"))[1:4:2]
        assert (flags, passwords) == ([b"on"], [FOO_SHA.encode()])
        waiting = Client(admin.proc)
        assert waiting.call("PING") == NOAUTH
        assert admin.call("ACL", "SETUSER", "alice", "on", ">pw", "+@all", "~*") == b"OK"
        assert without_sanitize(admin.call("ACL", "LIST"))[1] == (
            b"user default on #" + FOO_SHA.encode() + b" ~* &* +@all")
        assert admin.call("CONFIG", "SET", "requirepass", "") == b"OK"
        flags, passwords = without_sanitize(admin.call("ACL", "GETUSER", "default"))[1:4:2]
        assert (flags, passwords) == ([b"on", b"nopass"], [])
        assert Client(admin.proc).call("PING") == b"PONG"


def test_waiting_clients_run_once_no_password_is_needed(ours: Client,
                                                        theirs: Client | None) -> None:
    for admin in present(ours, theirs):
        assert admin.call("CONFIG", "SET", "requirepass", "foo") == b"OK"
        waiting = Client(admin.proc)
        assert waiting.call("PING") == NOAUTH
        assert admin.call("CONFIG", "SET", "requirepass", "") == b"OK"
        assert waiting.call("PING") == b"PONG"
        assert waiting.call("ACL", "WHOAMI") == b"default"
        assert admin.call("ACL", "SETUSER", "default", "off") == b"OK"
        off = Client(admin.proc)
        assert off.call("PING") == NOAUTH
        assert admin.call("ACL", "SETUSER", "default", "on") == b"OK"
        assert off.call("PING") == b"PONG"


def test_blocked_command_is_checked_again_when_woken(ours: Client) -> None:
    """Redis 7.2+ runs a woken command through processCommand again: rules changed while it
    waited apply (7.0 serves it as it was)."""
    assert ours.call("ACL", "SETUSER", "b", "on", ">p", "+@all", "~s", "~t") == b"OK"
    user = Client(ours.proc, "b", "p")
    user.conn.send("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    other = Client(ours.proc, "b", "p")
    other.conn.send("XREAD", "BLOCK", "0", "STREAMS", "t", "$")
    wait_blocked(ours, 2)
    assert ours.call("ACL", "SETUSER", "b", "resetkeys", "~t") == b"OK"
    ours.call("XADD", "s", "1-1", "f", "v")
    ours.call("XADD", "t", "1-1", "f", "v")
    assert plain(user.conn.read()) == NO_KEY
    assert plain(other.conn.read()) == [[b"t", [[b"1-1", [b"f", b"v"]]]]]
    assert [(e[b"reason"], e[b"context"], e[b"object"]) for e in log_entries(ours)] == [
        (b"key", b"toplevel", b"s")]


def subscribe(proc: ServerProcess, *args: str) -> Client:
    conn = Client(proc, "s", "p")
    assert conn.call(*args)[:2] == [args[0].lower().encode(), args[1].encode()]
    return conn


def test_setuser_closes_subscribers_that_lose_channels(ours: Client,
                                                       theirs: Client | None) -> None:
    for admin in present(ours, theirs):
        assert admin.call("ACL", "SETUSER", "s", "on", ">p", "~*", "+@all", "&news.*",
                          "&sport") == b"OK"
        sport = subscribe(admin.proc, "SUBSCRIBE", "sport")
        news = subscribe(admin.proc, "SUBSCRIBE", "news.a")
        pattern = subscribe(admin.proc, "PSUBSCRIBE", "news.*")
        quiet = Client(admin.proc, "s", "p")  # no subscriptions
        assert admin.call("ACL", "SETUSER", "s", "&extra") == b"OK"  # nothing taken away
        for conn in (sport, news, pattern):
            assert conn.call("PING") == [b"pong", b""]
        assert admin.call("ACL", "SETUSER", "s", "resetchannels", "&news.*", "&extra") == b"OK"
        assert sport.closed_by_server()
        assert news.call("PING") == [b"pong", b""]
        assert pattern.call("PING") == [b"pong", b""]
        assert quiet.call("PING") == b"PONG"
        assert admin.call("ACL", "SETUSER", "s", "resetchannels", "&news.a") == b"OK"
        assert pattern.closed_by_server()  # its pattern is no longer allowed as such
        assert news.call("PING") == [b"pong", b""]


def test_subscriber_revoking_its_own_channels_gets_the_reply(ours: Client) -> None:
    """Redis 8 closes it after the reply (deauthenticateAndCloseClient); 7.0 crashes here."""
    assert ours.call("ACL", "SETUSER", "s", "on", ">p", "~*", "+@all", "&a") == b"OK"
    conn = Client(ours.proc, "s", "p")
    assert isinstance(conn.call("HELLO", "3"), dict)
    assert conn.call("SUBSCRIBE", "a") == [b"subscribe", b"a", 1]
    conn.conn.send("ACL", "SETUSER", "s", "resetchannels")
    conn.conn.sock.settimeout(5)
    assert conn.conn.sock.recv(100) == b"+OK\r\n"
    assert conn.closed_by_server()


# == 5. Users in the config file and in the ACL file =============================================
class ConfiguredServer(ServerProcess):
    """A server started with a config file (whose path comes first on the command line)."""

    def __init__(self, kind: str, conf: Path, *extra: str) -> None:
        super().__init__(kind, extra_args=["--appendonly", "no", *extra])
        self.conf = str(conf)

    def command(self) -> list[str]:
        command = super().command()
        at = 1 if self.kind == "redis" else 3  # (redis-server <conf> / python -m server <conf>)
        return [*command[:at], self.conf, *command[at:]]


def kinds(ref_proc: ServerProcess | None) -> list[str]:
    """The kinds of server a test runs: ours, and redis-server when it is installed."""
    return ["xstreamd", "redis"] if ref_proc is not None else ["xstreamd"]


def test_users_from_the_config_file(tmp_path: Path, ref_proc: ServerProcess | None) -> None:
    conf = tmp_path / "server.conf"
    conf.write_text("user alice on >secret ~app:* +@all\nuser bob off nopass &news\n")
    described = []
    for kind in kinds(ref_proc):
        with ConfiguredServer(kind, conf) as proc:
            alice = Client(proc, "alice", "secret")
            assert alice.call("ACL", "WHOAMI") == b"alice"
            assert alice.call("SET", "app:1", "v") == b"OK"
            assert refusal_kind(alice.call("GET", "other")) == "key"
            assert Client(proc).call("AUTH", "bob", "x") == WRONGPASS  # off
            described.append(without_sanitize(Client(proc).call("ACL", "LIST")))
    assert described[0] == [
        b"user alice on #" + sha("secret").encode() + b" ~app:* resetchannels +@all",
        b"user bob off nopass resetchannels &news -@all",
        b"user default on nopass ~* &* +@all"]
    assert all(other == described[0] for other in described[1:])


def start_fails(kind: str, conf: Path) -> str:
    """The log of a server that must exit at start with a non-zero status."""
    proc = ConfiguredServer(kind, conf)
    with pytest.raises(RuntimeError, match="exited early"):
        proc.start()
    log = proc.read_log()
    assert proc.stop() not in (0, None)
    return log


def test_bad_acl_setups_stop_the_start(tmp_path: Path, ref_proc: ServerProcess | None) -> None:
    bad_file = tmp_path / "bad.acl"
    bad_file.write_text("user a on\nbogus line\n")
    setups = {
        "bad user line": ("user alice on >x +nosuch\n", "+nosuch"),
        "bad aclfile": (f"aclfile {bad_file}\n", LOAD_FAILED),
        "missing aclfile": (f"aclfile {tmp_path / 'missing.acl'}\n", "No such file or directory"),
        "user lines and aclfile": (f"user alice on\naclfile {bad_file}\n",
                                   "please define either an ACL file or declare users directly "
                                   "in your redis.conf, but not both."),
    }
    for name, (text, logged) in setups.items():
        conf = tmp_path / "server.conf"
        conf.write_text(text)
        for kind in kinds(ref_proc):
            assert logged in start_fails(kind, conf), (name, kind)


@pytest.fixture
def aclfile_servers(tmp_path: Path, ref_proc: ServerProcess | None
                    ) -> Iterator[list[tuple[ServerProcess, Path]]]:
    """Ours (and redis-server) started with `aclfile`, each with its own file of one user."""
    started = []
    for kind in kinds(ref_proc):
        path = tmp_path / f"{kind}.acl"
        path.write_text("user alice on >secret ~app:* +@all\n")
        proc = ServerProcess(kind, extra_args=["--appendonly", "no", "--aclfile", str(path)])
        started.append((proc.start(), path))
    yield started
    for proc, _ in started:
        proc.stop()


def test_acl_save(aclfile_servers: list[tuple[ServerProcess, Path]]) -> None:
    saved = []
    for proc, path in aclfile_servers:
        admin = Client(proc)
        assert admin.call("ACL", "SETUSER", "bob", "on", ">b", "%R~r:*", "(+get ~x)", "-@all",
                          "+get", "&ch") == b"OK"
        assert admin.call("ACL", "SAVE") == b"OK"
        saved.append(path.read_bytes())
        assert without_sanitize(b"".join(line + b"\n" for line in admin.call("ACL", "LIST"))) == (
            without_sanitize(saved[-1]))
    assert saved[0] == (
        f"user alice on sanitize-payload #{sha('secret')} ~app:* resetchannels +@all\n"
        f"user bob on sanitize-payload #{sha('b')} %R~r:* resetchannels &ch -@all +get "
        "(~x resetchannels -@all +get)\n"
        "user default on nopass sanitize-payload ~* &* +@all\n").encode()
    assert all(without_sanitize(other) == without_sanitize(saved[0]) for other in saved[1:])


EDITED = ("user alice on >secret ~other:* +@all\nuser carol on >c ~* +@all\n"
          "user default on nopass ~* &* +@all\n")


def test_acl_load(aclfile_servers: list[tuple[ServerProcess, Path]]) -> None:
    for proc, path in aclfile_servers:
        admin = Client(proc)
        assert admin.call("ACL", "SETUSER", "bob", "on", ">b", "~*", "+@all") == b"OK"
        bob = Client(proc, "bob", "b")
        path.write_text(EDITED)
        assert admin.call("ACL", "LOAD") == b"OK"
        assert bob.closed_by_server()  # bob is gone
        assert admin.call("PING") == b"PONG"
        assert without_sanitize(admin.call("ACL", "LIST")) == [
            b"user alice on #" + sha("secret").encode() + b" ~other:* resetchannels +@all",
            b"user carol on #" + sha("c").encode() + b" ~* resetchannels +@all",
            b"user default on nopass ~* &* +@all"]
        carol = Client(proc, "carol", "c")
        assert carol.call("ACL", "WHOAMI") == b"carol"


def test_acl_load_keeps_clients_of_users_still_defined(
        aclfile_servers: list[tuple[ServerProcess, Path]]) -> None:
    proc, path = aclfile_servers[0]  # (redis-server 7.0 closes them)
    alice = Client(proc, "alice", "secret")
    path.write_text(EDITED)
    assert Client(proc).call("ACL", "LOAD") == b"OK"
    assert alice.call("ACL", "WHOAMI") == b"alice"
    assert alice.call("SET", "other:1", "v") == b"OK"
    assert alice.call("SET", "app:1", "v") == NO_KEY


def bad_file_errors(path: Path) -> dict[str, str]:
    """ACL files with errors, and ACL LOAD's error for each (in our file's path)."""
    p = str(path)
    return {
        "user alice on >secret +nosuch bogus\nuser bob on\nfoo bar\nuser x (+get\n":
            f"-ERR {p}:1: Error in applying operation '+nosuch': {UNKNOWN}. {p}:1: {SYNTAX}. "
            f"{p}:3 should start with user keyword followed by the username. "
            f"{p}:4: Unmatched parenthesis in selector definition.{LOAD_FAILED}",
        "user a #abc\nuser b +@nosuch +nosuch2 ~*\n":
            f"-ERR {p}:1: {BAD_HASH}. {p}:2: Error in applying operation '+@nosuch': {UNKNOWN}. "
            f"{p}:2: Error in applying operation '+nosuch2': {UNKNOWN}. {LOAD_FAILED}",
        "\n\nuser\n": f"-ERR {p}:3 should start with user keyword followed by the username. "
                      f"{LOAD_FAILED}",
    }


def test_acl_load_errors_change_nothing(aclfile_servers: list[tuple[ServerProcess, Path]]) -> None:
    ours_path = aclfile_servers[0][1]
    for proc, path in aclfile_servers:
        admin = Client(proc)
        alice = Client(proc, "alice", "secret")
        before = admin.call("ACL", "LIST")
        for text, error in bad_file_errors(ours_path).items():
            path.write_text(text)
            assert admin.call("ACL", "LOAD") == error.replace(str(ours_path), str(path))
            assert admin.call("ACL", "LIST") == before
        assert alice.call("ACL", "WHOAMI") == b"alice"


def test_acl_load_duplicate_user(aclfile_servers: list[tuple[ServerProcess, Path]]) -> None:
    for proc, path in aclfile_servers:
        path.write_text("user alice on\nuser bob on\nuser bob off\n")
        assert Client(proc).call("ACL", "LOAD") == (
            f"-ERR WARNING: Duplicate user 'bob' found on line 3. {LOAD_FAILED}")
