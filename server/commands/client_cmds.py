"""CLIENT subcommands."""

from __future__ import annotations

import time

from protocol.encoder import OK, Verbatim
from server.client import Client
from server.dispatch import command, container
from server.errors import SYNTAX, CommandError
from server.parsing import eq, parse_int

container("client", -2, "sentinel", summary="A container for client connection commands.",
          since="2.4.0", group="connection")

_CAT = "@slow @connection"


def validate_name(name: bytes, what: str) -> None:
    """Names are printable ASCII without spaces (33..126), as Redis checks."""
    if any(b < 33 or b > 126 for b in name):
        raise CommandError(f"ERR {what} cannot contain spaces, newlines or special characters.")


def client_info_line(client: Client) -> str:
    now = time.monotonic()
    multi = len(client.multi) if client.multi is not None else -1
    return (
        f"id={client.id} addr={client.addr} laddr={client.laddr} fd=8 "
        f"name={client.name.decode(errors='replace')} age={int(now - client.created)} "
        f"idle={int(now - client.last_interaction)} flags={client.flags_text()} "
        f"db={client.db.id} sub=0 psub=0 ssub=0 multi={multi} watch={len(client.watched)} "
        f"qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=16384 rbp=0 obl={len(client.out)} "
        f"oll=0 omem={client.sink.output_size() if client.sink else 0} tot-mem=0 events=r "
        f"cmd={client.last_cmd.decode()} user={client.user} redir=-1 resp={client.protocol} "
        f"lib-name={client.lib_name.decode(errors='replace')} "
        f"lib-ver={client.lib_ver.decode(errors='replace')}"
    )


@command("client|id", 2, "noscript loading stale", categories=_CAT, since="5.0.0")
def client_id(client: Client, argv: list[bytes]) -> object:
    return client.id


@command("client|setname", 3, "noscript loading stale", categories=_CAT, since="2.6.9")
def client_setname(client: Client, argv: list[bytes]) -> object:
    validate_name(argv[2], "Client names")
    client.name = argv[2]
    return OK


@command("client|getname", 2, "noscript loading stale", categories=_CAT, since="2.6.9")
def client_getname(client: Client, argv: list[bytes]) -> object:
    return client.name or None


@command("client|setinfo", 4, "noscript loading stale", categories=_CAT, since="7.2.0")
def client_setinfo(client: Client, argv: list[bytes]) -> object:
    attr = argv[2].lower()
    if attr == b"lib-name":
        validate_name(argv[3], "lib-name")
        client.lib_name = argv[3]
    elif attr == b"lib-ver":
        validate_name(argv[3], "lib-ver")
        client.lib_ver = argv[3]
    else:
        raise CommandError(f"ERR Unrecognized option '{argv[2].decode(errors='replace')}'")
    return OK


def _matching_clients(client: Client, argv: list[bytes], start: int) -> list[Client]:
    """CLIENT LIST [TYPE t] [ID id...] filters."""
    clients = list(client.server.clients.values())
    i = start
    while i < len(argv):
        if eq(argv[i], b"type") and i + 1 < len(argv):
            kind = argv[i + 1].lower()
            if kind not in (b"normal", b"master", b"replica", b"slave", b"pubsub"):
                raise CommandError(f"ERR Unknown client type '{argv[i + 1].decode(errors='replace')}'")
            if kind != b"normal":
                clients = []
            i += 2
        elif eq(argv[i], b"id") and i + 1 < len(argv):
            ids = set()
            for raw in argv[i + 1:]:
                try:
                    value = parse_int(raw)
                except CommandError:
                    raise CommandError("ERR Invalid client ID") from None
                if value <= 0:
                    raise CommandError("ERR Invalid client ID")
                ids.add(value)
            clients = [c for c in clients if c.id in ids]
            i = len(argv)
        else:
            raise CommandError(SYNTAX)
    return clients


@command("client|list", -2, "admin noscript loading stale", categories="@admin @slow @dangerous @connection",
         since="2.4.0")
def client_list(client: Client, argv: list[bytes]) -> object:
    clients = _matching_clients(client, argv, 2)
    return Verbatim("".join(client_info_line(c) + "\n" for c in clients))


@command("client|info", 2, "noscript loading stale", categories=_CAT, since="6.2.0")
def client_info(client: Client, argv: list[bytes]) -> object:
    return Verbatim(client_info_line(client) + "\n")


@command("client|kill", -3, "admin noscript loading stale", categories="@admin @slow @dangerous @connection",
         since="2.4.0")
def client_kill(client: Client, argv: list[bytes]) -> object:
    server = client.server
    if len(argv) == 3:  # old form: CLIENT KILL addr:port
        addr = argv[2].decode(errors="replace")
        for other in list(server.clients.values()):
            if other.addr == addr:
                _kill(client, other)
                return OK
        raise CommandError("ERR No such client")
    filters: list[tuple[bytes, bytes]] = []
    skipme = True
    i = 2
    while i < len(argv):
        if i + 1 >= len(argv):
            raise CommandError(SYNTAX)
        name, value = argv[i].lower(), argv[i + 1]
        if name == b"id":
            try:
                ident = parse_int(value)
            except CommandError:
                raise CommandError("ERR client-id should be greater than 0") from None
            if ident <= 0:
                raise CommandError("ERR client-id should be greater than 0")
        elif name == b"type":
            if value.lower() not in (b"normal", b"master", b"replica", b"slave", b"pubsub"):
                raise CommandError(f"ERR Unknown client type '{value.decode(errors='replace')}'")
        elif name == b"skipme":
            if value.lower() not in (b"yes", b"no"):
                raise CommandError(SYNTAX)
            skipme = value.lower() == b"yes"
        elif name == b"maxage":
            parse_int(value)
        elif name not in (b"addr", b"laddr", b"user"):
            raise CommandError(SYNTAX)
        filters.append((name, value))
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


def _filter_matches(other: Client, name: bytes, value: bytes, now: float) -> bool:
    if name == b"id":
        return other.id == int(value)
    if name == b"addr":
        return other.addr == value.decode(errors="replace")
    if name == b"laddr":
        return other.laddr == value.decode(errors="replace")
    if name == b"type":
        return value.lower() == b"normal"
    if name == b"user":
        return value.decode(errors="replace") == other.user
    if name == b"maxage":
        return now - other.created >= int(value)
    return True


def _kill(killer: Client, victim: Client) -> None:
    if victim is killer:
        victim.close_after_reply = True
    elif victim.sink is not None:
        victim.sink.close_client()


def _on_off(argv: list[bytes]) -> bool:
    value = argv[2].lower()
    if value not in (b"on", b"off"):
        raise CommandError(SYNTAX)
    return value == b"on"


@command("client|no-evict", 3, "admin noscript loading stale", categories="@admin @slow @dangerous @connection",
         since="7.0.0")
def client_no_evict(client: Client, argv: list[bytes]) -> object:
    client.no_evict = _on_off(argv)
    return OK


@command("client|no-touch", 3, "noscript loading stale", categories=_CAT, since="7.2.0")
def client_no_touch(client: Client, argv: list[bytes]) -> object:
    client.no_touch = _on_off(argv)
    return OK


@command("client|unblock", -3, "admin noscript loading stale", categories="@admin @slow @dangerous @connection",
         since="5.0.0")
def client_unblock(client: Client, argv: list[bytes]) -> object:
    target_id = parse_int(argv[2])
    as_error = False
    if len(argv) == 4:
        reason = argv[3].lower()
        if reason not in (b"timeout", b"error"):
            raise CommandError("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
        as_error = reason == b"error"
    elif len(argv) > 4:
        raise CommandError(SYNTAX)
    target = client.server.clients.get(target_id)
    if target is None:
        return 0
    return 1 if client.server.blocking.unblock_by_request(target, as_error) else 0


@command("client|help", 2, "loading stale", categories=_CAT, since="5.0.0")
def client_help(client: Client, argv: list[bytes]) -> object:
    from server.commands.help import help_reply

    return help_reply("CLIENT", [
        "ID", "    Return the ID of the current connection.",
        "GETNAME", "    Return the name of the current connection.",
        "SETNAME <name>", "    Assign the name <name> to the current connection.",
        "SETINFO <option> <value>", "    Set client meta attr (LIB-NAME, LIB-VER).",
        "LIST [TYPE (NORMAL|MASTER|REPLICA|PUBSUB)] [ID <id> [<id> ...]]",
        "    Return information about client connections.",
        "INFO", "    Return information about the current client connection.",
        "KILL <ip:port>", "    Kill connection made from <ip:port>.",
        "KILL <option> <value> [<option> <value> [...]]",
        "    Kill connections. Options are: ID, ADDR, LADDR, TYPE, USER, SKIPME, MAXAGE.",
        "UNBLOCK <clientid> [TIMEOUT|ERROR]",
        "    Unblock the specified blocked client.",
        "NO-EVICT (ON|OFF)", "    Protect current client connection from eviction.",
        "NO-TOUCH (ON|OFF)", "    Will not touch LRU/LFU stats when this mode is on.",
    ])
