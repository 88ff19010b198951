"""CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO: client-side caching's commands
(networking.c's clientCommand parts, tracking.c's checkPrefixCollisionsOrReply). The tracking
itself is server/tracking.py."""

from __future__ import annotations

from protocol.encoder import OK, SetReply
from server.client import Client
from server.dispatch import command
from server.errors import SYNTAX, CommandError, client_text
from server.parsing import parse_int

_CAT = "@slow @connection"
_FLAGS = "noscript loading stale sentinel"
_SWITCH = ("before disabling tracking for this client, and then re-enabling it with a "
           "different mode.")


class _Options:
    __slots__ = ("redirect", "bcast", "optin", "optout", "noloop", "prefixes")

    def __init__(self) -> None:
        self.redirect = 0
        self.bcast = self.optin = self.optout = self.noloop = False
        self.prefixes: list[bytes] = []


def _parse_options(client: Client, argv: list[bytes]) -> _Options:
    """The options after ON / OFF, checked in order as Redis parses them (for OFF too)."""
    opts = _Options()
    i = 3
    while i < len(argv):
        word = argv[i].lower()
        more = i + 1 < len(argv)
        if word == b"redirect" and more:
            i += 1
            if opts.redirect:
                raise CommandError("ERR A client can only redirect to a single other client")
            opts.redirect = parse_int(argv[i])
            # The client must exist now (it may go later: the redirect is then "broken").
            if opts.redirect not in client.server.clients:
                raise CommandError("ERR The client ID you want redirect to does not exist")
        elif word == b"bcast":
            opts.bcast = True
        elif word == b"optin":
            opts.optin = True
        elif word == b"optout":
            opts.optout = True
        elif word == b"noloop":
            opts.noloop = True
        elif word == b"prefix" and more:
            i += 1
            opts.prefixes.append(argv[i])
        else:
            raise CommandError(SYNTAX)
        i += 1
    return opts


def _check_on(client: Client, opts: _Options) -> None:
    """The combinations CLIENT TRACKING ON refuses, in Redis's order."""
    state = client.tracking
    if opts.prefixes and not opts.bcast:
        raise CommandError("ERR PREFIX option requires BCAST mode to be enabled")
    if state is not None and state.bcast != opts.bcast:
        raise CommandError(f"ERR You can't switch BCAST mode on/off {_SWITCH}")
    if opts.bcast and (opts.optin or opts.optout):
        raise CommandError("ERR OPTIN and OPTOUT are not compatible with BCAST")
    if opts.optin and opts.optout:
        raise CommandError("ERR You can't specify both OPTIN mode and OPTOUT mode")
    if state is not None and (opts.optin and state.optout or opts.optout and state.optin):
        raise CommandError(f"ERR You can't switch OPTIN/OPTOUT mode {_SWITCH}")
    if opts.bcast:
        _check_prefix_collisions(client, opts.prefixes)


def _overlap(a: bytes, b: bytes) -> bool:
    """Two prefixes overlap when one starts the other: both would match the same keys."""
    return a.startswith(b) or b.startswith(a)


def _prefix_text(prefix: bytes) -> str:
    return client_text(prefix).replace("\r", " ").replace("\n", " ")


def _check_prefix_collisions(client: Client, prefixes: list[bytes]) -> None:
    """checkPrefixCollisionsOrReply. (Where Redis finds two overlapping new prefixes after
    the first, it replies the error and then enables tracking and replies OK too: two replies
    to one command. Here the error is the only reply and nothing changes.)"""
    existing = sorted(client.tracking.prefixes) if client.tracking is not None else []
    for i, prefix in enumerate(prefixes):
        for old in existing:
            if _overlap(old, prefix):
                raise CommandError(
                    f"ERR Prefix '{_prefix_text(prefix)}' overlaps with an existing prefix "
                    f"'{_prefix_text(old)}'. Prefixes for a single client must not overlap.")
        for other in prefixes[i + 1:]:
            if _overlap(prefix, other):
                raise CommandError(
                    f"ERR Prefix '{_prefix_text(prefix)}' overlaps with another provided "
                    f"prefix '{_prefix_text(other)}'. Prefixes for a single client must not "
                    "overlap.")


@command("client|tracking", -3, _FLAGS, categories=_CAT, since="6.0.0",
         summary="Controls server-assisted client-side caching for the connection.",
         group="connection")
def client_tracking(client: Client, argv: list[bytes]) -> object:
    opts = _parse_options(client, argv)
    status = argv[2].lower()
    tracking = client.server.tracking
    if status == b"on":
        _check_on(client, opts)
        tracking.enable(client, opts.redirect, opts.bcast, opts.optin, opts.optout,
                        opts.noloop, opts.prefixes)
    elif status == b"off":
        tracking.disable(client)
    else:
        raise CommandError(SYNTAX)
    return OK


@command("client|caching", 3, _FLAGS, categories=_CAT, since="6.0.0",
         summary="Instructs the server whether to track the keys in the next request.",
         group="connection")
def client_caching(client: Client, argv: list[bytes]) -> object:
    state = client.tracking
    if state is None:
        raise CommandError("ERR CLIENT CACHING can be called only when the client is in "
                           "tracking mode with OPTIN or OPTOUT mode enabled")
    mode = argv[2].lower()
    if mode == b"yes":
        if not state.optin:
            raise CommandError("ERR CLIENT CACHING YES is only valid when tracking is enabled "
                               "in OPTIN mode.")
    elif mode == b"no":
        if not state.optout:
            raise CommandError("ERR CLIENT CACHING NO is only valid when tracking is enabled "
                               "in OPTOUT mode.")
    else:
        raise CommandError(SYNTAX)
    state.caching = True  # for the next command (dispatch._execute_checked clears it)
    return OK


@command("client|getredir", 2, _FLAGS, categories=_CAT, since="6.0.0",
         summary="Returns the client ID to which the connection's tracking notifications are "
         "redirected.", group="connection")
def client_getredir(client: Client, argv: list[bytes]) -> object:
    state = client.tracking
    return state.redirect if state is not None else -1


@command("client|trackinginfo", 2, _FLAGS, categories=_CAT, since="6.2.0",
         summary="Returns information about server-assisted client-side caching for the "
         "connection.", group="connection")
def client_trackinginfo(client: Client, argv: list[bytes]) -> object:
    state = client.tracking
    if state is None:
        return {b"flags": SetReply([b"off"]), b"redirect": -1, b"prefixes": []}
    return {
        b"flags": SetReply([b"on", *state.flag_names()]),
        b"redirect": state.redirect,
        b"prefixes": sorted(state.prefixes),
    }
