"""The other clients while a script runs past busy-reply-threshold (Redis's "busy script").

A script runs inside its command, so the event loop is stopped meanwhile. Past the
threshold, the script's instruction hook calls serve_other_clients() about every 100,000 Lua
instructions: what the other clients sent is read from their sockets directly (the event loop
never sees it) and answered as Redis answers it during a busy script: SCRIPT KILL stops a
script that has not written yet (UNKILLABLE otherwise), anything else gets BUSY. Bytes of a
command not complete yet stay in the client's reader for the loop to finish after the script.
"""

from __future__ import annotations

import os
import select
import socket
from typing import TYPE_CHECKING, Any

from protocol.reader import ProtocolError

if TYPE_CHECKING:
    from server.app import Server
    from server.client import Client

BUSY = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
UNKILLABLE = ("UNKILLABLE Sorry the script already executed write commands against the "
              "dataset. You can either wait the script termination or kill the server in a "
              "hard way using the SHUTDOWN NOSAVE command.")
NOAUTH = "NOAUTH Authentication required."


class Arrivals:
    """Connections accepted while a script runs: answered here, then handed to the event
    loop (with whatever they sent that is not a complete command yet) once it ends."""

    def __init__(self) -> None:
        self.sockets: list[tuple[socket.socket, Any]] = []  # (socket, its Connection)

    def accept(self, server: Server) -> None:
        from server.connection import Connection

        for listener in server.listeners:
            for listening in listener.sockets:
                own = socket.socket(fileno=os.dup(listening.fileno()))
                own.setblocking(False)
                try:
                    while True:
                        try:
                            sock, _ = own.accept()
                        except (BlockingIOError, InterruptedError):
                            break
                        sock.setblocking(False)
                        self.sockets.append((sock, Connection(server)))
                finally:
                    own.close()  # (the duplicate descriptor only)

    def hand_over(self, server: Server) -> None:
        """After the script: the event loop takes the connections over."""
        loop = server.loop
        for sock, conn in self.sockets:
            loop.create_task(loop.connect_accepted_socket(lambda c=conn: c, sock))
        self.sockets.clear()


def serve_other_clients(server: Server, caller: Client, wrote: bool,
                        arrivals: Arrivals) -> bool:
    """Answer what the other clients sent; True when one of them asked for SCRIPT KILL and
    the script may be killed."""
    arrivals.accept(server)
    connections: dict[int, Any] = {}
    poller = select.poll()
    for sock, conn in arrivals.sockets:
        connections[sock.fileno()] = (None, conn, sock)
        poller.register(sock.fileno(), select.POLLIN)
    for client in server.clients.values():
        sink = client.sink
        transport = getattr(sink, "transport", None)
        if client is caller or client.closed or transport is None or transport.is_closing():
            continue
        sock = transport.get_extra_info("socket")
        if sock is None:
            continue
        fd = sock.fileno()
        connections[fd] = (client, sink, None)
        poller.register(fd, select.POLLIN)
    kill = False
    for fd, _ in poller.poll(0):
        client, sink, new_sock = connections[fd]
        try:
            data = os.read(fd, 65536)
        except OSError:
            continue
        if not data:  # (the end of the connection: the event loop sees it afterwards)
            continue
        try:
            commands = sink.reader.parse(data)
        except ProtocolError:
            continue  # (the reader keeps the error: the event loop answers it afterwards)
        for argv in commands:
            text = _answer(client, argv, wrote, server)
            reply = b"+OK\r\n" if text is None else b"-" + text.encode() + b"\r\n"
            if text is None:
                kill = True
            else:
                server.stats.error_reply(text)
            if new_sock is not None:
                try:
                    new_sock.send(reply)
                except OSError:
                    pass
            else:
                sink.transport.write(reply)
    return kill


def _answer(client: Client | None, argv: list[bytes], wrote: bool,
            server: Server) -> str | None:
    """The error for one command, or None for a SCRIPT KILL that kills the script. (A
    connection accepted meanwhile is not a client yet: it is logged in as a new client
    would be.)"""
    default = server.acl.users.default
    logged_in = (client.authenticated if client is not None
                 else default.nopass and default.enabled)
    if not logged_in:
        return NOAUTH
    if len(argv) == 2 and argv[0].lower() == b"script" and argv[1].lower() == b"kill":
        return UNKILLABLE if wrote else None
    return BUSY
