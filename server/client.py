"""Per-client state, independent of the transport (commands see this, never the connection)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

from server.output_limit import over_output_limit

if TYPE_CHECKING:
    from server.app import Server
    from server.blocking import BlockState
    from server.pubsub import Subscriptions
    from server.replication.primary import ReplicaLink
    from server.tracking import TrackingState
    from storage.keyspace import Database


# Client.reply_flags (CLIENT REPLY ON | OFF | SKIP).
REPLY_OFF = 1
REPLY_SKIP = 2
REPLY_SKIP_NEXT = 4
REPLY_MUTED = REPLY_OFF | REPLY_SKIP  # no reply reaches the client while one of these is set
# Pub/Sub output for the client whose command is running waits for that command's reply
# (a RESP3 subscriber publishing to itself gets PUBLISH's reply first, as in Redis 7.2+).
REPLY_PUSHES_WAITING = 8


class ClientSink(Protocol):
    """What a client needs from its connection: flushing output and closing."""

    def write(self, pieces: list[bytes], size: int) -> None: ...  # (size: their bytes)
    def send(self, data: bytes) -> None: ...  # write() of one piece, without the limits
    def close_client(self) -> None: ...
    def pause_reading(self) -> None: ...
    def resume_reading(self) -> None: ...
    def output_size(self) -> int: ...
    def close_for_output_limit(self) -> None: ...  # (server/output_limit.py)


class Client:
    """One connected client. Output goes to `out` and is written once per event-loop batch."""

    __slots__ = (
        "id", "server", "sink", "addr", "laddr", "name", "lib_name", "lib_ver", "db", "protocol",
        "authenticated", "logged_in", "created", "last_interaction", "last_cmd", "multi",
        "multi_error", "watched", "watched_stale", "cas_dirty", "reply_flags", "in_exec",
        "blocked", "out", "out_counted", "out_size", "unchecked_output", "close_after_reply",
        "close_asap", "closed",
        "monitor", "no_evict", "no_touch", "pending_write", "user",
        "obl_soft_since", "pending_cmds", "aof_woff", "block_exec_us", "subs", "subscribed",
        "checked_path", "acl_checked", "waiting_pushes", "tracking", "scripted", "unix_socket",
        "repl", "repl_master",
        "__weakref__",  # (its connection refers to it weakly: server/connection.py)
    )

    def __init__(self, client_id: int, server: Server, sink: ClientSink | None,
                 addr: str = "", laddr: str = "") -> None:
        self.id = client_id
        self.server = server
        self.sink = sink
        self.addr = addr
        self.laddr = laddr
        self.unix_socket = False  # connected through the unixsocket (CLIENT LIST's flag U)
        self.name = b""
        self.lib_name = b""
        self.lib_ver = b""
        self.db: Database = server.dbs[0]
        self.protocol = 2
        self.user = server.acl.users.default  # (server/acl/user.py)
        # Logged in (Redis's c->authenticated): at once when the default user needs no
        # password. `authenticated` is whether it may run commands (not authRequired()):
        # logged in, or the default user needs no password now (server/acl/access.py keeps
        # it up to date when the users change).
        self.logged_in = self.user.nopass and self.user.enabled
        self.authenticated = self.logged_in
        now = time.monotonic()
        self.created = now
        self.last_interaction = now
        self.last_cmd = b"NULL"
        self.multi: list[list[bytes]] | None = None  # queued commands while in MULTI
        self.multi_error = False  # a queued command was rejected: EXEC answers EXECABORT
        self.watched: list[tuple[int, bytes]] = []
        # The watched keys that had expired (but were still stored) at WATCH, or that a SWAPDB
        # replaced with an expired key (watchedKey.expired): for the transaction they do
        # not exist, so their deletion is no change.
        self.watched_stale: set[tuple[int, bytes]] = set()
        self.cas_dirty = False  # a WATCHed key was touched
        self.in_exec = False
        self.blocked: BlockState | None = None
        # How long the command it is blocked on has run so far (its latency once it completes).
        self.block_exec_us = 0
        self.out: list[bytes] = []  # encoded replies not written yet (protocol.encoder)
        # output_bytes()'s running count: the first out_counted pieces of `out` hold
        # out_size bytes (reset with the list: Server.write_clients, release).
        self.out_counted = 0
        self.out_size = 0
        self.unchecked_output = 0  # pushed since its limits were last checked (CHECK_STEP)
        self.pending_write = False
        self.close_after_reply = False
        # Over an output limit: to be closed in the next loop pass, its output dropped
        # meanwhile (Redis's CLIENT_CLOSE_ASAP: server/output_limit.py).
        self.close_asap = False
        # CLIENT REPLY: REPLY_OFF, REPLY_SKIP (this command's reply is dropped), REPLY_SKIP_NEXT
        # (the next one's is); 0 normally, so the hot path tests one int.
        self.reply_flags = 0
        self.closed = False
        self.monitor = False
        self.no_evict = False
        self.no_touch = False
        self.obl_soft_since = 0.0
        self.pending_cmds: list[list[bytes]] = []
        self.aof_woff = 0  # the AOF write pass that carried its last write (WAITAOF)
        self.subs: Subscriptions | None = None  # its Pub/Sub subscriptions (server/pubsub.py)
        self.subscribed = False  # in Pub/Sub mode: it holds at least one subscription
        # Its commands take the checked path (dispatch._execute_checked) even when nothing
        # else would send them there: see refresh_checked_path.
        # Its user lacks some permission: every command passes the ACL check.
        self.acl_checked = not self.user.grants_everything()
        self.checked_path = self.acl_checked
        self.waiting_pushes: list[bytes] = []  # see REPLY_PUSHES_WAITING
        self.tracking: TrackingState | None = None  # CLIENT TRACKING (server/tracking.py)
        self.scripted = False  # the client Lua scripts run their commands as (CLIENT_SCRIPT)
        # A replica's link, once it sent REPLCONF or PSYNC (server/replication/primary.py).
        self.repl: ReplicaLink | None = None
        self.repl_master = False  # the client a replica runs its primary's stream as

    def refresh_checked_path(self) -> None:
        """To be called when no_touch, subscribed, tracking or the user's rules change.
        NO-TOUCH needs call()'s handling, and so does a subscriber: a RESP2 one may run only
        a few commands, and the Pub/Sub output its own commands send any subscriber waits
        for their replies. So does a tracking client: call() remembers the keys it reads,
        and the invalidations its own commands cause wait for their replies too. A user
        without every permission has each command checked (_checked's ACL check)."""
        self.acl_checked = not self.user.grants_everything()
        self.checked_path = (self.no_touch or self.subscribed or self.tracking is not None
                             or self.acl_checked)

    def set_default_user(self) -> None:
        """clientSetDefaultAuth: the default user, logged in if it needs no password."""
        user = self.server.acl.users.default
        self.user = user
        self.logged_in = self.authenticated = user.nopass and user.enabled
        self.refresh_checked_path()

    def command_done(self) -> None:
        """resetClient's part for CLIENT REPLY: a SKIP ends with its command, and one asked
        for by CLIENT REPLY SKIP applies from the next command. Then the Pub/Sub output the
        command's reply held back."""
        flags = self.reply_flags
        self.reply_flags = ((flags & (REPLY_OFF | REPLY_PUSHES_WAITING))
                            | (REPLY_SKIP if flags & REPLY_SKIP_NEXT else 0))
        self.release_pushes()

    def release_pushes(self) -> None:
        """The pushes held back until the command's reply (REPLY_PUSHES_WAITING), after it;
        also for a command that gave no reply (it blocked again)."""
        if self.reply_flags & REPLY_PUSHES_WAITING:
            self.reply_flags &= ~REPLY_PUSHES_WAITING
            self.out += self.waiting_pushes
            self.waiting_pushes = []

    def reply(self, value: Any) -> None:
        """Encode a reply into the output buffer and queue the client for the next write pass."""
        self.server.write_reply(self, value)

    def check_output_limit(self) -> bool:
        """After output was queued for it: the output limits, checked as Redis checks them
        as replies are added (server/output_limit.py says when). A client over one is closed
        in the next loop pass, and what is queued for it meanwhile is dropped. True when it
        is closing (or closed)."""
        self.unchecked_output = 0
        if self.closed:
            return True
        if self.close_asap:
            if self.out:
                self.drop_output()
            return True
        sink = self.sink
        if sink is not None and over_output_limit(self, sink):
            sink.close_for_output_limit()
            return True
        return False

    def output_bytes(self) -> int:
        """Bytes of replies encoded and not handed to the transport yet (CLIENT LIST's obl,
        the output limits). Counted as it goes: only the pieces appended since the last call
        are measured, so checking after every reply costs nothing quadratic."""
        out = self.out
        pieces = len(out)
        counted = self.out_counted
        if pieces != counted:
            if pieces == counted + 1:
                self.out_size += len(out[-1])
            elif pieces > counted:
                self.out_size += sum(map(len, out[counted:]))
            else:  # (the list was replaced without the count: start over)
                self.out_size = sum(map(len, out))
            self.out_counted = pieces
        return self.out_size

    def drop_output(self) -> None:
        """Forget the replies not written yet (and their count)."""
        self.out = []
        self.out_counted = self.out_size = 0
        self.waiting_pushes = []

    def release(self) -> None:
        """The client closed and every registry forgot it (Server.remove_client): what it
        still holds goes at once, without waiting for anyone to drop the client itself
        (a write pass's list may hold it a moment longer): its pending output, the commands
        waiting behind a blocking one, a transaction's queued commands, its watched keys."""
        self.drop_output()
        self.pending_cmds = []
        self.multi = None
        self.watched = []
        self.watched_stale = set()

    @property
    def db_index(self) -> int:
        return self.db.id

    def flags_text(self) -> str:
        """CLIENT LIST's flags, in the order Redis writes them."""
        flags = "O" if self.monitor else ""
        if self.repl is not None and self.repl.state:
            flags += "S"
        if self.repl_master:
            flags += "M"
        if self.subscribed:
            flags += "P"
        if self.multi is not None:
            flags += "x"
        if self.blocked is not None:
            flags += "b"
        tracking = self.tracking
        if tracking is not None:
            flags += "t"
            if tracking.broken:
                flags += "R"
            if tracking.bcast:
                flags += "B"
        if self.cas_dirty:
            flags += "d"
        if self.close_after_reply:
            flags += "c"
        if self.close_asap:
            flags += "A"
        if self.unix_socket:
            flags += "U"
        if self.no_evict:
            flags += "e"
        if self.no_touch:
            flags += "T"
        return flags or "N"
