"""One asyncio.Protocol per client: feed the reader, run the commands, write the replies."""

from __future__ import annotations

import asyncio
import os
import resource
import socket
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocol.encoder import ErrorReply, encode
from protocol.reader import ProtocolError, make_reader
from server.client import REPLY_MUTED
from server.dispatch import run_commands

if TYPE_CHECKING:
    from server.app import Server
    from server.client import Client

# Set XSTREAMD_PURE_PYTHON_READER=1 to use the pure-Python RESP reader (tests run both).
_USE_HIREDIS = os.environ.get("XSTREAMD_PURE_PYTHON_READER", "") in ("", "0")

_LOOPBACK_PREFIXES = ("127.", "::1", "::ffff:127.")

MAX_CLIENTS_TEXT = "ERR max number of clients reached"

# A read this big comes from a client sending faster than it is served. It then sits out one
# loop iteration, so that the other clients are served between its reads (libuv reads such a
# socket up to 32 times, 8 MiB, per wake-up; Redis reads 16 KiB per client per iteration).
_FAIR_READ = 64 * 1024

# Output under an output limit is handed to the transport in pieces past this size: joining
# them would copy the pending output just when it is largest (limit plus one reply is the
# most it may hold); smaller output goes joined, in one write.
_JOIN_MAX = 1 << 20
_JOIN = b"".join

# A connection that held this much (query buffer, pending output) when it closes has the cron
# trim malloc's heap at its next tick: what its buffers took there goes back to the system
# (server/heap.py; the biggest buffers are mapped on their own and go back at once).
_BIG_BUFFERS = 1 << 20

# Descriptors kept for the server's own use (listeners, log, AOF, ...): CONFIG_MIN_RESERVED_FDS.
RESERVED_FDS = 32

PROTECTED_MODE_TEXT = (
    "DENIED Redis is running in protected mode because protected mode is enabled and no password "
    "is set for the default user. In this mode connections are only accepted from the loopback "
    "interface. If you want to connect from external computers to Redis you may adopt one of the "
    "following solutions: 1) Just disable protected mode sending the command 'CONFIG SET "
    "protected-mode no' from the loopback interface by connecting to Redis from the same host "
    "the server is running, however MAKE SURE Redis is not publicly accessible from internet if "
    "you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just "
    "disable the protected mode by editing the Redis configuration file, and setting the protected "
    "mode option to 'no', and then restarting the server. 3) If you started the server manually "
    "just for testing, restart it with the '--protected-mode no' option. 4) Set up an "
    "authentication password for the default user. NOTE: You only need to do one of the above "
    "things in order for the server to start accepting connections from the outside."
)


def is_loopback_host(host: str) -> bool:
    return host.startswith(_LOOPBACK_PREFIXES) or host == "localhost"


def binds_loopback_only(bind: list[str]) -> bool:
    """True when every bind address is a loopback one: no outside peer can connect then, so
    protected mode has nothing to check. (Redis 7 refuses outside peers whatever the bind
    list, as long as protected mode is on and no password is set: same result.)"""
    return all(is_loopback_host(address.lstrip("-")) for address in bind)


def _format_addr(peer: object) -> str:
    if isinstance(peer, tuple) and len(peer) >= 2:
        host = str(peer[0])
        return f"[{host}]:{peer[1]}" if ":" in host else f"{host}:{peer[1]}"
    return str(peer or "")


def _no_client() -> None:
    """Connection._client before the client is made, and once it is gone."""


class Connection(asyncio.Protocol):
    """Owned by its transport while open. It refers to its client weakly: the client refers
    to it (Client.sink), and a strong reference back would make a cycle that only the cyclic
    collector frees, with the query buffer and the pending output in it. The server's
    client table keeps the client while it is connected; once it closes, both go as soon as
    nothing refers to them, and what they hold is dropped even before (release)."""

    __slots__ = ("server", "transport", "_client", "reader", "send")

    def __init__(self, server: Server) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self._client: Callable[[], Client | None] = _no_client
        # ClientSink.send: the transport's own write, set once connected.
        self.send = _discard
        self.reader = make_reader(server.config["proto-max-bulk-len"], use_hiredis=_USE_HIREDIS)
        # Accepted, and connection_made not called yet (the loop calls it in its next pass):
        # a script that goes busy meanwhile serves it all the same (server/scripting/busy.py).
        server.connecting.add(self)

    # -- asyncio.Protocol ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        held = self.transport
        if held is transport:  # (made early by a busy script's pass: busy.py)
            return
        self.transport = transport  # type: ignore[assignment]
        self.send = transport.write  # type: ignore[attr-defined]
        server = self.server
        server.connecting.discard(self)
        if self.client is not None and held is not None:
            self._take_over(held, transport)
            return
        config = server.config
        peer = transport.get_extra_info("peername")
        sock = transport.get_extra_info("sockname")
        unix = isinstance(sock, str)  # (a Unix socket's name is its path: a local peer)
        # Admission as in Redis's acceptCommonHandler / clientAcceptHandler: a refused
        # connection gets one error line and never becomes a client.
        refusal = None
        if len(server.clients) >= config["maxclients"]:
            refusal = MAX_CLIENTS_TEXT
        elif (config["protected-mode"] and server.acl.users.default.nopass and not unix
              and not binds_loopback_only(config["bind"])):
            host = str(peer[0]) if isinstance(peer, tuple) else ""
            if not is_loopback_host(host):
                refusal = PROTECTED_MODE_TEXT
        if refusal is not None:
            server.stats.rejected_connections += 1
            transport.write(b"-" + refusal.encode() + b"\r\n")  # type: ignore[attr-defined]
            transport.close()
            return
        if unix:  # both ends are named after the socket's path, as in Redis
            addr = laddr = f"{config['unixsocket']}:0"
        else:
            addr, laddr = _format_addr(peer), _format_addr(sock)
        client = server.new_client(self, addr, laddr)
        client.unix_socket = unix
        self._client = weakref.ref(client)
        self.reader.unauthenticated = not client.authenticated
        if server.log.level <= 1:  # verbose
            server.log.verbose(f"Accepted {client.addr}")

    def _take_over(self, held: Any, transport: asyncio.BaseTransport) -> None:
        """The event loop's transport replaces the stand-in of a connection accepted while a
        script was busy (server/scripting/busy.py): what it could not write yet goes first."""
        if held.unsent:
            transport.write(bytes(held.unsent))  # type: ignore[attr-defined]
        if not held.reading:
            transport.pause_reading()  # type: ignore[attr-defined]

    @property
    def client(self) -> Client | None:
        """Its client while it is connected (None before, and once it closed)."""
        return self._client()

    def data_received(self, data: bytes) -> None:
        client = self._client()
        if client is None or client.closed or client.close_asap:
            return
        server = self.server
        size = len(data)
        server.stats.read_sizes.append(size)  # (total_reads_processed, total_net_input_bytes)
        client.last_interaction = server.cached_monotonic
        reader = self.reader
        # The common read: complete commands and nothing buffered before them (so no query
        # limit can apply), for a client whose class has no output limit (output_limit's
        # limits_of, inlined).
        commands = reader.direct(data) if size <= reader.direct_max else None
        if commands is not None and (server.pubsub_output_limit if client.subscribed
                                     else server.normal_output_limit) is None:
            run_commands(client, commands)
            if not client.authenticated:  # (RESET brings the unauthenticated limits back)
                self._after_unauthenticated_batch(client)
            elif size >= _FAIR_READ:
                self._sit_out_one_iteration()
            return
        try:
            if commands is None:
                commands = reader.parse(data)
            while commands:
                if not self._run(client, commands):
                    return
                # An unauthenticated reader hands out one command a call, so that AUTH lifts
                # its limits for the next command (and RESET brings them back).
                if not client.authenticated:
                    if not self._after_unauthenticated_batch(client):
                        return
                elif reader.unauthenticated:
                    reader.unauthenticated = False
                elif reader.error is None:
                    break  # the reader handed out every complete command at once
                # The reader hands out the commands before a bad frame first and raises on
                # the next call, so ask again until it has nothing complete left.
                commands = reader.get_commands()
        except ProtocolError as exc:
            self._protocol_error(str(exc))
            return
        if reader.pending_bytes() > server.query_buffer_limit:
            server.log.warning(f"Closing client that reached max query buffer length: "
                               f"id={client.id} addr={client.addr} "
                               f"qbuf={reader.pending_bytes()}")
            server.stats.client_query_buffer_limit_disconnections += 1
            self.close_client()
        elif size >= _FAIR_READ:
            self._sit_out_one_iteration()

    def _after_unauthenticated_batch(self, client: Client) -> bool:
        """After commands ran for a client that is (now) not authenticated: its reader gets
        the unauthenticated limits, and its replies, which pile up even before they reach the
        socket, close it past a small limit as in Redis. False if it was closed."""
        self.reader.unauthenticated = True
        if client.closed or client.close_after_reply:
            return False
        return not client.check_output_limit()

    def _sit_out_one_iteration(self) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.pause_reading()
            self.server.loop.call_soon(self._resume_after_sitting_out)

    def _resume_after_sitting_out(self) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.resume_reading()

    def _run(self, client: Client, commands: list[list[bytes]]) -> bool:
        """Run a batch of commands. When the client's class has an output limit, one at a
        time with the limit checked after each, so that a client that does not read is
        closed one reply past its limit, not a whole pipeline's worth of replies past it
        (Redis checks as it adds each reply). False when the client is done with: closed,
        closing, or to close after its reply."""
        server = self.server
        if (server.pubsub_output_limit if client.subscribed
                else server.normal_output_limit) is None:
            run_commands(client, commands)
        else:
            for argv in commands:
                run_commands(client, [argv])
                if client.close_after_reply or client.check_output_limit():
                    return False
        return not (client.close_after_reply or client.closed)

    def _protocol_error(self, text: str) -> None:
        """Answer the commands before the bad frame, then the error, then close (Redis's way)."""
        client = self.client
        assert client is not None
        reason = text.removeprefix("ERR ").removeprefix("Protocol error: ")
        self.server.log.verbose(f"Protocol error ({reason}) from client: id={client.id} "
                                f"addr={client.addr}")
        if not client.reply_flags & REPLY_MUTED:  # (CLIENT REPLY OFF drops this one too)
            client.out.append(encode(_error(text)))
        client.close_after_reply = True
        if not client.pending_write:
            client.pending_write = True
            self.server.pending_writes.append(client)
        self.server.schedule_before_sleep()

    def eof_received(self) -> bool:
        # The read that finds the connection closed is a read event too, for INFO's
        # total_reads_processed as for Redis. (False: the transport closes itself.)
        self.server.stats.read_sizes.append(0)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        client = self._client()
        self._note_big_buffers(client)
        if client is not None:
            if not client.closed and self.server.log.level <= 1:
                self.server.log.verbose(f"Client closed connection id={client.id} "
                                        f"addr={client.addr}")
            self.server.remove_client(client)
        self._release()
        # The transport, which let go of this protocol, and its write method (self.send).
        self.transport = None
        self.send = _discard

    def _note_big_buffers(self, client: Client | None) -> None:
        """Before its buffers go: ask for a heap trim if they are big (_BIG_BUFFERS)."""
        held = self.reader.allocated_bytes() + self.output_size()
        if client is not None:
            held += client.output_bytes()
        if held >= _BIG_BUFFERS:
            self.server.heap.request()

    def _release(self) -> None:
        """The connection closed: its query buffer and parser state go now, and its client
        (whose own buffers Server.remove_client released) is no longer its client."""
        self.reader.release()
        self._client = _no_client

    # -- ClientSink ---------------------------------------------------------------------------
    def write(self, pieces: list[bytes], size: int) -> None:
        """Hand output to the transport, then apply the output limits to what it holds."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        client = self._client()
        if client is None or client.close_asap:
            return
        if size <= _JOIN_MAX:
            transport.write(_JOIN(pieces))
        else:
            transport.writelines(pieces)
        # What is pending now is what the transport could not send at once (the client's
        # list was emptied): nothing, most of the time, and then no limit can be reached.
        if transport.get_write_buffer_size():
            client.check_output_limit()
        else:
            client.obl_soft_since = 0.0

    def close_for_output_limit(self) -> None:
        """Redis's freeClientAsync for a client over its output limit: nothing more is read
        from it, what it has pending is dropped now, and it closes in the next loop pass."""
        client = self._client()
        if client is None or client.close_asap:
            return
        self.server.log.warning(
            f"Client id={client.id} addr={client.addr} scheduled to be closed ASAP for "
            f"overcoming of output buffer limits.")
        self.server.stats.client_output_buffer_limit_disconnections += 1
        client.close_asap = True
        self._note_big_buffers(client)
        client.drop_output()
        self.pause_reading()
        self.server.loop.call_soon(self.close_client, True)

    def close_client(self, abort: bool = False) -> None:
        client = self._client()
        self._note_big_buffers(client)
        if client is not None:
            self.server.remove_client(client)
        transport = self.transport
        if transport is not None:
            if abort:
                transport.abort()  # (what it could not send yet is dropped)
            else:
                transport.close()  # (it sends what it holds first)
        self.reader.release()

    def pause_reading(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self.transport is not None:
            self.transport.resume_reading()

    def output_size(self) -> int:
        return self.transport.get_write_buffer_size() if self.transport else 0


def adjust_open_files_limit(server: Server) -> None:
    """Redis's adjustOpenFilesLimit: raise the descriptor limit to maxclients + 32, or lower
    maxclients to what the limit allows, so running out of descriptors shows up as
    '-ERR max number of clients reached' rather than as failed accepts."""
    maxclients = server.config["maxclients"]
    needed = maxclients + RESERVED_FDS
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    original = soft
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    error = "the hard limit is lower"
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    except (OSError, ValueError) as exc:
        error = str(exc)
    log = server.log
    if soft >= needed:
        log.notice(f"Increased maximum number of open files to {needed} (it was originally set "
                   f"to {original}).")
        return
    reduced = soft - RESERVED_FDS
    if reduced < 1:
        log.warning(f"Your current 'ulimit -n' of {soft} is not enough for the server to start. "
                    f"Please increase your open file limit to at least {needed}. Exiting.")
        raise SystemExit(1)
    log.warning(f"You requested maxclients of {maxclients} requiring at least {needed} max file "
                f"descriptors.")
    log.warning(f"Server can't set maximum open files to {needed} because of OS error: {error}.")
    log.warning(f"Current maximum open files is {soft}. maxclients has been reduced to {reduced} "
                f"to compensate for low ulimit. If you need higher maxclients increase "
                f"'ulimit -n'.")
    server.config.set_from_text("maxclients", str(reduced))


def set_keepalive(sock: Any, interval: int) -> None:
    """tcp-keepalive as anetKeepAlive sets it: probe an idle peer after `interval` seconds
    (0: no probes). Set on the listening sockets, whose options Linux copies into every
    socket it accepts (the keep-alive timer included), so a connection costs no syscalls for
    it; CONFIG SET changes it for the connections accepted from then on, as in Redis."""
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1 if interval else 0)
        if interval and hasattr(socket, "TCP_KEEPIDLE"):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, interval)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, max(1, interval // 3))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 3)
    except OSError:
        pass


def _discard(data: bytearray) -> None:
    """send() before a transport exists: nothing to write to."""


def _error(text: str) -> object:
    return ErrorReply(text)
