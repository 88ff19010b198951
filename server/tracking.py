"""Client-side caching (Redis's tracking.c): which clients may hold which keys, and the
invalidation messages they get when those keys change.

Default mode: the keys a tracking client reads (readonly commands) go into a table
key -> client ids; a change to the key sends each of those clients one invalidation and
forgets them. Keys are not per database, as in Redis. BCAST mode: clients register key
prefixes; every changed key that starts with one is collected per prefix and sent, sorted,
in the before-sleep pass. A message goes to the client itself as a RESP3 push
(`>2 invalidate [keys]`, or a null for "everything": FLUSHALL/FLUSHDB), or to the client it
redirects to: a RESP3 push too, or for a RESP2 client in Pub/Sub mode a message on the
`__redis__:invalidate` channel.

Like Redis, the table keeps the ids of clients that stopped tracking (or left) until their
keys change or are flushed; they are skipped then.
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING

from protocol.encoder import encode
from server.command_meta import keys_of

if TYPE_CHECKING:
    from server.app import Server
    from server.client import Client
    from server.dispatch import CommandSpec

_INVALIDATE_PUSH = b">2\r\n$10\r\ninvalidate\r\n"
# The Pub/Sub form for a RESP2 redirect target (addReplyPubsubMessage without the message).
_INVALIDATE_MESSAGE = b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"
# "Every key" after a flush, in the tracking client's protocol (shared.null[c->resp]), even
# when it goes to a redirect target of the other protocol: what Redis sends.
_FLUSH_BODY = {2: b"$-1\r\n", 3: b"_\r\n"}


class TrackingState:
    """One client's CLIENT TRACKING settings (client.tracking; None while tracking is off)."""

    __slots__ = ("redirect", "bcast", "optin", "optout", "noloop", "caching", "broken",
                 "prefixes")

    def __init__(self) -> None:
        self.redirect = 0  # the client id invalidations go to, 0 = the client itself
        self.bcast = False
        self.optin = False
        self.optout = False
        self.noloop = False
        self.caching = False  # CLIENT CACHING yes (OPTIN) / no (OPTOUT) for the next command
        self.broken = False  # the redirect client is gone
        self.prefixes: dict[bytes, None] = {}  # BCAST prefixes, in the order registered

    def flag_names(self) -> list[bytes]:
        """CLIENT TRACKINGINFO's flags after "on", in Redis's order."""
        names = [b"bcast"] if self.bcast else []
        if self.optin:
            names += [b"optin", b"caching-yes"] if self.caching else [b"optin"]
        if self.optout:
            names += [b"optout", b"caching-no"] if self.caching else [b"optout"]
        if self.noloop:
            names.append(b"noloop")
        if self.broken:
            names.append(b"broken_redirect")
        return names


class _Prefix:
    """A BCAST prefix: its clients, and the keys changed since the last before-sleep pass
    with the client that changed each last (None: expiry, eviction), for NOLOOP."""

    __slots__ = ("clients", "changed")

    def __init__(self) -> None:
        self.clients: dict[Client, None] = {}
        self.changed: dict[bytes, Client | None] = {}


class Tracking:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.table: dict[bytes, dict[int, None]] = {}  # key -> ids of clients that read it
        self.items = 0  # ids in the table (INFO tracking_total_items)
        self.prefixes: dict[bytes, _Prefix] = {}
        self.clients = 0  # clients with tracking on (INFO tracking_clients)
        self._limit_rounds = 0  # trackingLimitUsedSlots' timeout_counter

    # -- clients ------------------------------------------------------------------------------
    def enable(self, client: Client, redirect: int, bcast: bool, optin: bool, optout: bool,
               noloop: bool, prefixes: list[bytes]) -> None:
        """enableTracking: (re)configure a client's tracking. Prefixes add to those it has."""
        state = client.tracking
        if state is None:
            state = client.tracking = TrackingState()
            self.clients += 1
            client.refresh_checked_path()  # its reads must reach dispatch.call
        state.redirect = redirect
        state.bcast, state.optin, state.optout, state.noloop = bcast, optin, optout, noloop
        state.broken = False
        if bcast:
            for prefix in prefixes or [b""]:
                entry = self.prefixes.get(prefix)
                if entry is None:
                    entry = self.prefixes[prefix] = _Prefix()
                    if len(self.prefixes) == 1:
                        self._hook_broadcast(True)
                entry.clients[client] = None
                state.prefixes[prefix] = None
            self._refresh_active()

    def disable(self, client: Client) -> None:
        """disableTracking (CLIENT TRACKING off, RESET, the client left). Its ids stay in the
        table until their keys change."""
        state = client.tracking
        if state is None:
            return
        client.tracking = None
        self.clients -= 1
        client.refresh_checked_path()
        for prefix in state.prefixes:
            entry = self.prefixes[prefix]
            del entry.clients[client]
            if not entry.clients:
                del self.prefixes[prefix]
                if not self.prefixes:
                    self._hook_broadcast(False)
        self._refresh_active()

    def _refresh_active(self) -> None:
        # server.tracking_active: whether a key change may owe invalidations (the one test
        # hot paths such as XADD's make).
        self.server.tracking_active = bool(self.table or self.prefixes)

    def _hook_broadcast(self, on: bool) -> None:
        """The BCAST pass runs before sleep only while there are prefixes. (A new list on
        removal: before_sleep may be iterating the old one.)"""
        server = self.server
        if on:
            server.before_sleep_hooks.append(self.broadcast)
        else:
            server.before_sleep_hooks = [h for h in server.before_sleep_hooks
                                         if h != self.broadcast]

    # -- remembering keys ---------------------------------------------------------------------
    def remember_keys(self, client: Client, spec: CommandSpec, argv: list[bytes]) -> None:
        """trackingRememberKeys: after a readonly command of a tracking client (whatever its
        reply), the keys it named, unless OPTIN without CACHING yes / OPTOUT with CACHING no."""
        state = client.tracking
        if state is None or state.bcast:
            return
        if (state.optin and not state.caching) or (state.optout and state.caching):
            return
        table = self.table
        cid = client.id
        for key in keys_of(spec, argv):
            ids = table.get(key)
            if ids is None:
                ids = table[key] = {}
            if cid not in ids:
                ids[cid] = None
                self.items += 1
        if table:
            self.server.tracking_active = True

    # -- invalidating -------------------------------------------------------------------------
    def invalidate_key(self, key: bytes, by: Client | None, bcast: bool = True,
                       now: bool = False, running: Client | None = None) -> None:
        """trackingInvalidateKey: `key` changed (by a client's command, or by the server when
        `by` is None: expiry, eviction). Queued for the BCAST prefixes it matches; sent to the
        clients that read it, which are forgotten. `now`: outside any command's execution
        (eviction, the table limit), so even the running client gets it before its reply.
        `running`: the client whose command is being processed, when its handler has not
        started yet (else Server.current_client): NOLOOP leaves it out."""
        if bcast and self.prefixes:
            self._collect_for_broadcast(key, by)
        ids = self.table.pop(key, None)
        if ids is None:
            return
        self.items -= len(ids)
        if not self.table:
            self._refresh_active()
        server = self.server
        current = running or server.current_client
        body = None
        for cid in ids:
            target = server.clients.get(cid)
            state = target.tracking if target is not None else None
            if state is None or state.bcast:
                continue
            if state.noloop and target is current:
                continue  # NOLOOP: not about changes made by the client itself
            if body is None:
                body = encode([key])
            self.send(target, body, now)

    def _collect_for_broadcast(self, key: bytes, by: Client | None) -> None:
        """trackingRememberKeyToBroadcast: the key, under every prefix it starts with."""
        for prefix, entry in self.prefixes.items():
            if key.startswith(prefix):
                entry.changed[key] = by
                self.server.schedule_before_sleep()

    def invalidate_all(self) -> None:
        """trackingInvalidateKeysOnFlush: FLUSHALL / FLUSHDB (any database: keys are not per
        database) send every tracking client a null, and the table is emptied."""
        if self.clients:
            for client in list(self.server.clients.values()):
                if client.tracking is not None:
                    self.send(client, _FLUSH_BODY[client.protocol])
        self.table = {}
        self.items = 0
        self._refresh_active()

    def broadcast(self) -> None:
        """trackingBroadcastInvalidationMessages (before sleep): per prefix, the keys changed
        since the last pass to each of its clients; a NOLOOP client's own changes left out."""
        for prefix in sorted(self.prefixes):
            entry = self.prefixes[prefix]
            changed = entry.changed
            if not changed:
                continue
            entry.changed = {}
            keys = sorted(changed)
            body = encode(keys)
            for client in list(entry.clients):
                state = client.tracking
                if state is not None and state.noloop:
                    theirs = [k for k in keys if changed[k] is not client]
                    if theirs:
                        self.send(client, encode(theirs) if len(theirs) < len(keys) else body)
                else:
                    self.send(client, body)

    def limit_used_slots(self, running: Client | None = None) -> None:
        """trackingLimitUsedSlots (before `running`'s command, and in the cron): past
        tracking-table-max-keys, forget keys and invalidate them as if they changed, up to
        100 more per call while the table stays over the limit. Redis picks the keys at
        random; the oldest entries go first here."""
        max_keys = self.server.config["tracking-table-max-keys"]
        table = self.table
        if not max_keys or len(table) <= max_keys:
            self._limit_rounds = 0
            return
        effort = 100 * (self._limit_rounds + 1)
        for key in list(islice(table, effort)):  # (the oldest entries first)
            self.invalidate_key(key, None, bcast=False, now=True, running=running)
            if len(table) <= max_keys:
                self._limit_rounds = 0
                return
        self._limit_rounds += 1

    # -- sending ------------------------------------------------------------------------------
    def send(self, client: Client, body: bytes, now: bool = False) -> None:
        """sendTrackingMessage: an invalidation (body: the keys array, or a null) for a
        tracking client, to it or to the client it redirects to."""
        state = client.tracking
        target = client
        if state is not None and state.redirect:
            target = self.server.clients.get(state.redirect)  # type: ignore[assignment]
            if target is None:
                state.broken = True
                if client.protocol == 3:
                    self._push(client, encode_redir_broken(state.redirect), now)
                return
            if target.protocol == 3:
                self._push(target, _INVALIDATE_PUSH + body, now)
            elif target.subscribed:
                self._push(target, _INVALIDATE_MESSAGE + body, now)
            return
        if client.protocol == 3:  # (RESP2 has no pushes: nothing to send)
            self._push(client, _INVALIDATE_PUSH + body, now)

    def _push(self, client: Client, data: bytes, now: bool) -> None:
        """Server.write_push holds the running client's pushes until its reply; an
        invalidation made before its command runs (`now`) goes out at once."""
        self.server.write_push(client, data, hold=not now or client.in_exec)


def encode_redir_broken(redirect: int) -> bytes:
    return b">2\r\n$21\r\ntracking-redir-broken\r\n:%d\r\n" % redirect
