"""The listening sockets: TCP on each bind address (port 0: none), the Unix socket
(unixsocket, unixsocketperm), tcp-keepalive on them, and the socket file's removal at
shutdown."""

from __future__ import annotations

import contextlib
import os
import socket
from typing import TYPE_CHECKING

from server.connection import Connection, set_keepalive
from server.persistence_errors import StartupError

if TYPE_CHECKING:
    from server.core import ServerCore


async def listen(server: ServerCore) -> None:
    config = server.config
    port = config["port"]
    backlog = config["tcp-backlog"]
    for address in config["bind"] if port else ():  # (port 0: no TCP listener)
        host = address.lstrip("-")
        try:
            listener = await server.loop.create_server(
                lambda: Connection(server), host, port, reuse_address=True, backlog=backlog,
                family=socket.AF_INET6 if ":" in host else socket.AF_INET,
            )
        except OSError as exc:
            if address.startswith("-"):  # "-::1": optional address, as in redis.conf
                continue
            raise OSError(exc.errno, f"Could not create server TCP listening socket "
                                     f"{host}:{port}: {exc.strerror}") from exc
        server.listeners.append(listener)
    set_listeners_keepalive(server, config["tcp-keepalive"])
    config.on_change("tcp-keepalive", lambda interval: set_listeners_keepalive(server, interval))
    if server.listeners:
        server.log.notice(f"Ready to accept connections tcp on port {port}")
    path = config["unixsocket"]
    if path:
        await _listen_unix(server, path, backlog)
    if not server.listeners:
        raise StartupError("Configured to not listen anywhere, exiting.")


async def _listen_unix(server: ServerCore, path: str, backlog: int) -> None:
    """The unixsocket listener, as Redis's: a file left at the path goes first (a
    previous run's), unixsocketperm sets its mode, and failing to listen ends the start."""
    with contextlib.suppress(OSError):
        os.unlink(path)
    try:
        listener = await server.loop.create_unix_server(
            lambda: Connection(server), path, backlog=backlog)
        perm = server.config["unixsocketperm"]
        if perm:
            os.chmod(path, perm)
    except OSError as exc:
        raise StartupError(f"Failed opening Unix socket: bind: {exc.strerror or exc}"
                           ) from None
    server.listeners.append(listener)
    server.unix_listening = True
    server.log.notice("Ready to accept connections unix")


def set_listeners_keepalive(server: ServerCore, interval: int) -> None:
    """tcp-keepalive for the connections accepted from now on (see set_keepalive)."""
    for listener in server.listeners:
        for sock in listener.sockets:
            set_keepalive(sock, interval)


def stop_listening(server: ServerCore) -> None:
    """Close the listeners (no new clients)."""
    for listener in server.listeners:
        listener.close()


def remove_unix_socket(server: ServerCore) -> None:
    """At shutdown, the unix socket's file goes (when this server made it)."""
    if server.unix_listening:
        server.log.notice("Removing the unix socket file.")
        try:
            os.unlink(server.config["unixsocket"])
        except OSError as exc:
            server.log.warning(f"Error removing the unix socket file: {exc.strerror}")
