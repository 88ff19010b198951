"""The other clients while a script runs past busy-reply-threshold (Redis's "busy script").

A script runs inside its command, so the event loop stands still meanwhile. Past the
threshold, the script's instruction hook calls BusyPeriod.serve() (about every 100,000 Lua
instructions), which does what Redis's processEventsWhileBlocked does:

* what the other clients sent is read from their sockets directly (the event loop never sees
  it) and run through the usual path, where the busy check (server/dispatch.py) answers BUSY
  to everything but the commands flagged allow-busy (SCRIPT KILL, SHUTDOWN, AUTH, HELLO,
  MULTI...); the script's own client is not read (Redis "protects" it);
* connections that arrive are accepted and become clients at once, on a stand-in transport
  over their socket (HeldSocket), which the event loop replaces once the script ends;
* every client's pending output but the script caller's is written (replies of commands run
  before the script, in the same loop iteration, included).

Blocked clients are not woken meanwhile, and no timer runs: only reads and writes. A
SIGTERM or SIGINT shuts the server down once the script ends (the event loop takes it then),
as in Redis; a second SIGINT exits at once.
"""

from __future__ import annotations

import gc
import os
import select
import signal
import socket
from typing import TYPE_CHECKING, Any

from server.connection import Connection

if TYPE_CHECKING:
    from server.app import Server
    from server.client import Client

UNKILLABLE_TEXT = ("UNKILLABLE Sorry the script already executed write commands against the "
                   "dataset. You can either wait the script termination or kill the server in "
                   "a hard way using the SHUTDOWN NOSAVE command.")

_READ_SIZE = 16 * 1024  # per client per pass, as Redis's PROTO_IOBUF_LEN


class HeldSocket:
    """The transport of a connection accepted while a script is busy: writes go straight to
    the socket (what it cannot take yet waits in `unsent`). Replaced by the event loop's own
    transport when the script ends (Connection.connection_made)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.unsent = bytearray()
        self.closing = False
        self.reading = True

    def write(self, data: bytes) -> None:
        if self.closing:
            return
        if self.unsent:
            self.unsent += data
            return
        try:
            sent = self.sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self.closing = True
            return
        if sent < len(data):
            self.unsent += data[sent:]

    def writelines(self, pieces: list[bytes]) -> None:
        self.write(b"".join(pieces))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        try:
            if name == "peername":
                return self.sock.getpeername()
            if name == "sockname":
                return self.sock.getsockname()
        except OSError:
            return default
        return self.sock if name == "socket" else default

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    abort = close

    def get_write_buffer_size(self) -> int:
        return len(self.unsent)

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def is_reading(self) -> bool:
        return self.reading and not self.closing


class BusyPeriod:
    """From the moment a script is found busy to its end."""

    def __init__(self, server: Server, caller: Client) -> None:
        self.server = server
        self.caller = caller
        self.poller = select.epoll()
        # fd -> (the Connection, its socket when accepted here); listeners: fd -> socket.
        self.watched: dict[int, tuple[Any, socket.socket | None]] = {}
        self.listeners: dict[int, socket.socket] = {}
        self.arrivals: list[tuple[socket.socket, Any]] = []  # (socket, its Connection)
        self.signalled = False  # a SIGTERM or SIGINT came meanwhile
        # Ours meanwhile, for the second SIGINT; the event loop's handlers still get the
        # signals afterwards (through its wake-up descriptor, which every signal writes to).
        self.loop_handlers: dict[int, Any] = {}
        try:
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.loop_handlers[sig] = signal.signal(sig, self._on_signal)
        except ValueError:  # (not the main thread: a server run in a test's thread)
            pass
        for listener in server.listeners:
            for listening in listener.sockets:
                # Our own descriptor for the listening socket: the loop keeps its own.
                own = socket.socket(fileno=os.dup(listening.fileno()))
                own.setblocking(False)
                self.listeners[own.fileno()] = own
                self.poller.register(own.fileno(), select.EPOLLIN)
        self._make_accepted()
        for client in server.clients.values():
            sink = client.sink
            transport = getattr(sink, "transport", None)
            if client is caller or client.closed or transport is None:
                continue
            sock = transport.get_extra_info("socket")
            if sock is not None and not transport.is_closing():
                self._watch(sock.fileno(), sink, None)

    def _make_accepted(self) -> None:
        """Connections the event loop accepted in the pass that started the script wait for
        a connection_made call it would make in its next pass: made here (found through
        their transport, which refers to them), they are served like the others."""
        for conn in list(self.server.connecting):
            transport = next((ref for ref in gc.get_referrers(conn)
                              if callable(getattr(ref, "get_protocol", None))
                              and ref.get_protocol() is conn), None)
            if transport is not None:
                conn.connection_made(transport)

    def _on_signal(self, sig: int, frame: object) -> None:
        """sigShutdownHandler's part that cannot wait for the script's end: a SIGINT after
        a shutdown was asked for (by a signal, or SHUTDOWN) exits at once."""
        shutdown = self.server.shutdown_requested
        if sig == signal.SIGINT and (self.signalled or (shutdown is not None
                                                        and shutdown.done())):
            self.server.log.warning("You insist... exiting now.")
            os._exit(1)
        self.signalled = True

    def _watch(self, fd: int, conn: Any, sock: socket.socket | None) -> None:
        try:
            self.poller.register(fd, select.EPOLLIN)
        except OSError:
            return
        self.watched[fd] = (conn, sock)

    def _unwatch(self, fd: int) -> None:
        self.watched.pop(fd, None)
        try:
            self.poller.unregister(fd)
        except OSError:
            pass

    def serve(self) -> None:
        """One pass: accept, read and run, write."""
        for fd, _ in self.poller.poll(0):
            listening = self.listeners.get(fd)
            if listening is not None:
                self._accept(listening)
                continue
            conn, sock = self.watched.get(fd, (None, None))
            if conn is None:
                continue
            transport = conn.transport
            if transport is None or transport.is_closing():
                self._unwatch(fd)
                continue
            try:
                data = os.read(fd, _READ_SIZE)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:  # the peer closed: the event loop sees it again afterwards
                self._unwatch(fd)
                if sock is not None:  # (a connection of ours: nobody else will)
                    transport.close()
                    conn.connection_lost(None)
                continue
            conn.data_received(data)
        self.write_output()

    def _accept(self, listening: socket.socket) -> None:
        while True:
            try:
                sock, _ = listening.accept()
            except OSError:  # (nothing more to accept: BlockingIOError)
                return
            sock.setblocking(False)
            if sock.family != socket.AF_UNIX:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = Connection(self.server)
            conn.connection_made(HeldSocket(sock))  # type: ignore[arg-type]
            self.arrivals.append((sock, conn))
            if conn.client is not None:
                self._watch(sock.fileno(), conn, sock)

    def write_output(self) -> None:
        """The before-sleep write for every client but the script's caller."""
        server = self.server
        pending = server.pending_writes
        if not pending:
            return
        caller = self.caller
        server.pending_writes = [client for client in pending if client is caller]
        server.write_clients([client for client in pending if client is not caller])

    def end(self) -> None:
        """The script ended: the event loop takes the connections made meanwhile over."""
        self.write_output()
        for sig, handler in self.loop_handlers.items():
            if handler is not None:
                signal.signal(sig, handler)
        self.poller.close()
        for own in self.listeners.values():
            own.close()  # (our duplicate descriptor only)
        loop = self.server.loop
        for sock, conn in self.arrivals:
            held = conn.transport
            if conn.client is None or held is None or held.is_closing():
                if conn.client is not None and not conn.client.closed:
                    conn.connection_lost(None)
                sock.close()
                continue
            loop.create_task(loop.connect_accepted_socket(lambda c=conn: c, sock))
        self.arrivals.clear()
