"""CLIENT subcommands: ID, SETNAME, GETNAME, SETINFO, LIST, INFO, KILL, UNBLOCK, PAUSE,
UNPAUSE, NO-EVICT, NO-TOUCH, HELP (TRACKING and its kin are in tracking_cmds.py)."""

from __future__ import annotations

import time

from protocol.encoder import OK, Verbatim
from server.client import REPLY_OFF, REPLY_SKIP, REPLY_SKIP_NEXT, Client
from server.client_info import client_info_line, client_type
from server.commands.help import help_reply
from server.dispatch import NO_REPLY, command, container
from server.errors import SYNTAX, CommandError, client_text, subcommand_syntax_error
from server.parsing import eq, parse_block_timeout, parse_int
from server.pause import ALL, WRITE

container("client", -2, "sentinel", summary="A container for client connection commands.",
          since="2.4.0", group="connection")

_CAT = "@slow @connection"
_ADMIN_CAT = "@admin @slow @dangerous @connection"
_CLIENT_TYPES = (b"normal", b"master", b"replica", b"slave", b"pubsub")


def validate_name(name: bytes, what: str) -> None:
    """Names are printable ASCII without spaces (33..126), as Redis checks."""
    if any(b < 33 or b > 126 for b in name):
        raise CommandError(f"ERR {what} cannot contain spaces, newlines or special characters.")


@command("client|id", 2, "noscript loading stale", categories=_CAT, since="5.0.0",
         summary="Returns the unique client ID of the connection.", group="connection")
def client_id(client: Client, argv: list[bytes]) -> object:
    return client.id


@command("client|setname", 3, "noscript loading stale", categories=_CAT, since="2.6.9",
         summary="Sets the connection name.", group="connection")
def client_setname(client: Client, argv: list[bytes]) -> object:
    validate_name(argv[2], "Client names")
    client.name = argv[2]
    return OK


@command("client|getname", 2, "noscript loading stale", categories=_CAT, since="2.6.9",
         summary="Returns the name of the connection.", group="connection")
def client_getname(client: Client, argv: list[bytes]) -> object:
    return client.name or None


@command("client|setinfo", 4, "noscript loading stale", categories=_CAT, since="7.2.0",
         summary="Sets information specific to the client or connection.", group="connection")
def client_setinfo(client: Client, argv: list[bytes]) -> object:
    attr = argv[2].lower()
    if attr not in (b"lib-name", b"lib-ver"):
        raise CommandError(f"ERR Unrecognized option '{client_text(argv[2])}'")
    validate_name(argv[3], client_text(argv[2]))
    if attr == b"lib-name":
        client.lib_name = argv[3]
    else:
        client.lib_ver = argv[3]
    return OK


def _check_type(value: bytes) -> bytes:
    kind = value.lower()
    if kind not in _CLIENT_TYPES:
        raise CommandError(f"ERR Unknown client type '{client_text(value)}'")
    return b"slave" if kind == b"replica" else kind


@command("client|list", -2, "admin noscript loading stale", categories=_ADMIN_CAT,
         since="2.4.0", summary="Lists open connections.", group="connection",
         tips="nondeterministic_output")
def client_list(client: Client, argv: list[bytes]) -> object:
    clients = sorted(client.server.clients.values(), key=lambda c: c.id)
    if len(argv) == 4 and eq(argv[2], b"type"):
        kind = _check_type(argv[3])
        clients = [c for c in clients if client_type(c) == kind]
    elif len(argv) >= 4 and eq(argv[2], b"id"):
        wanted: list[int] = []
        for raw in argv[3:]:
            try:
                wanted.append(parse_int(raw))
            except CommandError:
                raise CommandError("ERR Invalid client ID") from None
        by_id = client.server.clients
        clients = [by_id[i] for i in wanted if i in by_id]
    elif len(argv) != 2:
        raise CommandError(SYNTAX)
    return Verbatim("".join(client_info_line(c, argv if c is client else None) + "\n"
                            for c in clients))


@command("client|info", 2, "noscript loading stale", categories=_CAT, since="6.2.0",
         summary="Returns information about the connection.", group="connection",
         tips="nondeterministic_output")
def client_info(client: Client, argv: list[bytes]) -> object:
    return Verbatim(client_info_line(client, argv) + "\n")


_ID_ERROR = "ERR client-id should be greater than 0"


@command("client|kill", -3, "admin noscript loading stale", categories=_ADMIN_CAT,
         since="2.4.0", summary="Terminates open connections.", group="connection")
def client_kill(client: Client, argv: list[bytes]) -> object:
    server = client.server
    if len(argv) == 3:  # old form: CLIENT KILL addr:port
        addr = client_text(argv[2])
        for other in list(server.clients.values()):
            if other.addr == addr:
                _kill(client, other)
                return OK
        raise CommandError("ERR No such client")
    filters: list[tuple[bytes, object]] = []
    skipme = True
    i = 2
    while i < len(argv):
        if i + 1 >= len(argv):
            raise CommandError(SYNTAX)
        name, value = argv[i].lower(), argv[i + 1]
        parsed: object = client_text(value)
        if name == b"id":
            try:
                parsed = parse_int(value)
            except CommandError:
                raise CommandError(_ID_ERROR) from None
            if parsed <= 0:  # type: ignore[operator]
                raise CommandError(_ID_ERROR)
        elif name == b"type":
            parsed = _check_type(value)
        elif name == b"skipme":
            if value.lower() not in (b"yes", b"no"):
                raise CommandError(SYNTAX)
            skipme = value.lower() == b"yes"
            i += 2
            continue
        elif name == b"maxage":
            parsed = parse_int(value)
        elif name == b"user":
            parsed = client.server.acl.users.get(value)
            if parsed is None:
                raise CommandError(f"ERR No such user '{client_text(value)}'")
        elif name not in (b"addr", b"laddr"):
            raise CommandError(SYNTAX)
        filters.append((name, parsed))
        i += 2
    killed = 0
    now = time.monotonic()
    for other in list(server.clients.values()):
        if skipme and other is client:
            continue
        if all(_filter_matches(other, name, value, now) for name, value in filters):
            _kill(client, other)
            killed += 1
    return killed


def _filter_matches(other: Client, name: bytes, value: object, now: float) -> bool:
    if name == b"id":
        return other.id == value
    if name == b"addr":
        return other.addr == value
    if name == b"laddr":
        return other.laddr == value
    if name == b"type":
        return client_type(other) == value
    if name == b"user":
        return other.user is value
    if name == b"maxage":
        return now - other.created >= value  # type: ignore[operator]
    return True


def _kill(killer: Client, victim: Client) -> None:
    if victim is killer:
        victim.close_after_reply = True  # the reply is sent first, then the connection closes
    elif victim.sink is not None:
        victim.sink.close_client()


def _on_off(argv: list[bytes]) -> bool:
    value = argv[2].lower()
    if value not in (b"on", b"off"):
        raise CommandError(SYNTAX)
    return value == b"on"


@command("client|no-evict", 3, "admin noscript loading stale", categories=_ADMIN_CAT,
         since="7.0.0", summary="Sets the client eviction mode of the connection.",
         group="connection")
def client_no_evict(client: Client, argv: list[bytes]) -> object:
    client.no_evict = _on_off(argv)
    return OK


@command("client|no-touch", 3, "noscript loading stale", categories=_CAT, since="7.2.0",
         summary="Controls whether commands sent by the client affect the LRU/LFU of accessed "
         "keys.", group="connection")
def client_no_touch(client: Client, argv: list[bytes]) -> object:
    client.no_touch = _on_off(argv)
    client.refresh_checked_path()
    return OK


@command("client|reply", 3, "noscript loading stale", categories=_CAT, since="3.2.0",
         summary="Instructs the server whether to reply to commands.", group="connection")
def client_reply(client: Client, argv: list[bytes]) -> object:
    """ON answers OK; OFF drops every reply from here on, itself included; SKIP drops the
    next command's (and has none itself). The dropping is in dispatch.run_commands and
    Server.write_reply; Client.command_done moves SKIP along."""
    mode = argv[2].lower()
    if mode == b"on":
        client.reply_flags &= ~(REPLY_OFF | REPLY_SKIP)
        return OK
    if mode == b"off":
        client.reply_flags |= REPLY_OFF
        return NO_REPLY
    if mode == b"skip":
        if not client.reply_flags & REPLY_OFF:
            client.reply_flags |= REPLY_SKIP_NEXT
        return NO_REPLY
    raise CommandError(SYNTAX)


@command("client|unblock", -3, "admin noscript loading stale", categories=_ADMIN_CAT,
         since="5.0.0", summary="Unblocks a client blocked by a blocking command from a "
         "different connection.", group="connection")
def client_unblock(client: Client, argv: list[bytes]) -> object:
    if len(argv) > 4:
        raise subcommand_syntax_error(argv)
    target_id = parse_int(argv[2])
    as_error = False
    if len(argv) == 4:
        reason = argv[3].lower()
        if reason not in (b"timeout", b"error"):
            raise CommandError("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
        as_error = reason == b"error"
    target = client.server.clients.get(target_id)
    if target is None:
        return 0
    return 1 if client.server.blocking.unblock_by_request(target, as_error) else 0


@command("client|pause", -3, "admin noscript loading stale sentinel", categories=_ADMIN_CAT,
         since="3.0.0", summary="Suspends commands processing.", group="connection")
def client_pause(client: Client, argv: list[bytes]) -> object:
    if len(argv) > 4:
        raise subcommand_syntax_error(argv)
    timeout_ms = parse_block_timeout(argv[2], time.time_ns() // 1_000_000)
    mode = ALL
    if len(argv) == 4:
        if eq(argv[3], b"write"):
            mode = WRITE
        elif not eq(argv[3], b"all"):
            raise CommandError("ERR CLIENT PAUSE mode must be WRITE or ALL")
    client.server.pause.pause(timeout_ms, mode)
    return OK


@command("client|unpause", 2, "admin noscript loading stale sentinel", categories=_ADMIN_CAT,
         since="6.2.0", summary="Resumes processing commands from paused clients.",
         group="connection")
def client_unpause(client: Client, argv: list[bytes]) -> object:
    client.server.pause.unpause()
    return OK


@command("client|help", 2, "loading stale", categories=_CAT, since="5.0.0",
         summary="Returns helpful text about the different subcommands.", group="connection")
def client_help(client: Client, argv: list[bytes]) -> object:
    return help_reply("CLIENT", [
        "CACHING (YES|NO)",
        "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
        "GETREDIR",
        "    Return the client ID we are redirecting to when tracking is enabled.",
        "GETNAME",
        "    Return the name of the current connection.",
        "ID",
        "    Return the ID of the current connection.",
        "INFO",
        "    Return information about the current client connection.",
        "KILL <ip:port>",
        "    Kill connection made from <ip:port>.",
        "KILL <option> <value> [<option> <value> [...]]",
        "    Kill connections. Options are:",
        "    * ADDR (<ip:port>|<unixsocket>:0)",
        "      Kill connections made from the specified address",
        "    * LADDR (<ip:port>|<unixsocket>:0)",
        "      Kill connections made to specified local address",
        "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
        "      Kill connections by type.",
        "    * USER <username>",
        "      Kill connections authenticated by <username>.",
        "    * SKIPME (YES|NO)",
        "      Skip killing current connection (default: yes).",
        "    * ID <client-id>",
        "      Kill connections by client id.",
        "    * MAXAGE <maxage>",
        "      Kill connections older than the specified age.",
        "LIST [options ...]",
        "    Return information about client connections. Options:",
        "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
        "      Return clients of specified type.",
        "UNPAUSE",
        "    Stop the current client pause, resuming traffic.",
        "PAUSE <timeout> [WRITE|ALL]",
        "    Suspend all, or just write, clients for <timeout> milliseconds.",
        "REPLY (ON|OFF|SKIP)",
        "    Control the replies sent to the current connection.",
        "SETNAME <name>",
        "    Assign the name <name> to the current connection.",
        "SETINFO <option> <value>",
        "    Set client meta attr. Options are:",
        "    * LIB-NAME: the client lib name.",
        "    * LIB-VER: the client lib version.",
        "UNBLOCK <clientid> [TIMEOUT|ERROR]",
        "    Unblock the specified blocked client.",
        "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
        "         [OPTIN] [OPTOUT] [NOLOOP]",
        "    Control server assisted client side caching.",
        "TRACKINGINFO",
        "    Report tracking status for the current connection.",
        "NO-EVICT (ON|OFF)",
        "    Protect current client connection from eviction.",
        "NO-TOUCH (ON|OFF)",
        "    Will not touch LRU/LFU stats when this mode is on.",
    ])
