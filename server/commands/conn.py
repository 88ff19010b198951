"""Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET."""

from __future__ import annotations

from protocol.encoder import OK, Raw, SimpleString
from server.client import REPLY_OFF, REPLY_SKIP_NEXT, Client
from server.commands.client_cmds import validate_name
from server.dispatch import command
from server.errors import DB_INDEX_OUT_OF_RANGE, SYNTAX, CommandError, client_text, wrong_arity
from server.parsing import eq, parse_c_int, parse_int
from server.version import VERSION

PONG = Raw(b"+PONG\r\n")
WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."


@command("ping", -1, "fast sentinel", categories="@fast @connection",
         summary="Returns the server's liveliness response.", group="connection")
def ping(client: Client, argv: list[bytes]) -> object:
    if len(argv) > 2:
        raise wrong_arity("ping")
    # Like Redis, PING reports a persistence failure (it is how clients health-check).
    persistence = client.server.persistence
    if persistence is not None:
        reason = persistence.misconf()
        if reason is not None:
            raise CommandError(reason)
    if client.subscribed and client.protocol == 2:  # (in Pub/Sub mode replies are arrays)
        return [b"pong", argv[1] if len(argv) == 2 else b""]
    return argv[1] if len(argv) == 2 else PONG


@command("echo", 2, "loading stale fast", categories="@fast @connection",
         summary="Returns the given string.", group="connection")
def echo(client: Client, argv: list[bytes]) -> object:
    return argv[1]


def authenticate(client: Client, command: bytes, username: bytes, password: bytes) -> None:
    """AUTH and HELLO AUTH (`command`, as sent): log the client in as the user, or record
    the failure (INFO stats' acl_access_denied_auth, ACL LOG) and answer WRONGPASS."""
    acl = client.server.acl
    user = acl.users.authenticate(username, password)
    if user is None:
        acl.record_auth_failure(client, command, username)
        raise CommandError(WRONGPASS)
    client.logged_in = client.authenticated = True
    client.user = user
    client.refresh_checked_path()


@command("auth", -2, "noscript loading stale fast no-auth sentinel allow-busy",
         categories="@fast @connection", summary="Authenticates the connection.",
         group="connection")
def auth(client: Client, argv: list[bytes]) -> object:
    if len(argv) > 3:
        raise CommandError(SYNTAX)
    if len(argv) == 2:
        if client.server.acl.users.default.nopass:
            raise CommandError(
                "ERR AUTH <password> called without any password configured for the default "
                "user. Are you sure your configuration is correct?")
        username, password = b"default", argv[1]
    else:
        username, password = argv[1], argv[2]
    authenticate(client, argv[0], username, password)
    return OK


_HELLO_NOAUTH = (
    "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
    "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and "
    "select the RESP protocol version at the same time")


@command("hello", -1, "noscript loading stale fast no-auth sentinel allow-busy",
         categories="@fast @connection", summary="Handshakes with the Redis server.",
         since="6.0.0", group="connection")
def hello(client: Client, argv: list[bytes]) -> object:
    protover = 0
    if len(argv) >= 2:
        try:
            protover = parse_int(argv[1])
        except CommandError:
            raise CommandError("ERR Protocol version is not an integer or out of range") from None
        if protover < 2 or protover > 3:
            raise CommandError("NOPROTO unsupported protocol version")
    setname: bytes | None = None
    credentials: tuple[bytes, bytes] | None = None
    i = 2
    while i < len(argv):
        more = len(argv) - i - 1
        if eq(argv[i], b"auth") and more >= 2:
            credentials = (argv[i + 1], argv[i + 2])
            i += 3
        elif eq(argv[i], b"setname") and more >= 1:
            setname = argv[i + 1]
            validate_name(setname, "Client names")  # checked while parsing, as Redis does
            i += 2
        else:
            raise CommandError(f"ERR Syntax error in HELLO option '{client_text(argv[i])}'")
    if credentials is not None:
        authenticate(client, argv[0], *credentials)
    if not client.logged_in:  # (even when no password is needed now, as in Redis)
        raise CommandError(_HELLO_NOAUTH)
    if setname is not None:
        client.name = setname
    if protover:
        client.protocol = protover
    return {
        b"server": b"redis",
        b"version": VERSION.encode(),
        b"proto": client.protocol,
        b"id": client.id,
        b"mode": b"standalone",
        b"role": b"master",
        b"modules": [],
    }


@command("select", 2, "loading stale fast", categories="@fast @connection",
         summary="Changes the selected database.", group="connection")
def select(client: Client, argv: list[bytes]) -> object:
    index = parse_c_int(argv[1])
    dbs = client.server.dbs
    if index < 0 or index >= len(dbs):
        raise CommandError(DB_INDEX_OUT_OF_RANGE)
    client.db = dbs[index]
    return OK


@command("quit", -1, "noscript loading stale fast no-auth allow-busy",
         categories="@fast @connection", summary="Closes the connection.", group="connection")
def quit_(client: Client, argv: list[bytes]) -> object:
    client.close_after_reply = True
    return OK


@command("reset", 1, "noscript loading stale fast no-auth allow-busy",
         categories="@fast @connection", summary="Resets the connection.", since="6.2.0",
         group="connection")
def reset(client: Client, argv: list[bytes]) -> object:
    server = client.server
    client.multi = None
    client.multi_error = False
    server.unwatch_all(client)
    if client.monitor:
        client.monitor = False
        if client in server.monitors:
            server.monitors.remove(client)
    client.db = server.dbs[0]
    client.protocol = 2
    client.name = b""
    client.no_evict = False
    client.no_touch = False
    server.pubsub.forget(client)  # (leaves Pub/Sub mode, which refreshes checked_path)
    server.tracking.disable(client)
    client.refresh_checked_path()
    # CLIENT REPLY OFF ends (RESET's own reply is sent); a SKIP in force still drops it.
    client.reply_flags &= ~(REPLY_OFF | REPLY_SKIP_NEXT)
    client.set_default_user()
    return SimpleString("RESET")
