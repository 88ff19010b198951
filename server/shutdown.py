"""Shutting down, as Redis's prepareForShutdown / finishShutdown: SHUTDOWN or a signal asks
for it, the event-loop pass ends, the shutdown hooks (persistence's final AOF flush and
snapshot) run with the SHUTDOWN flags, then every client and listener closes. A hook that
cannot do its part (a failed final save without FORCE) stops the shutdown: the server serves
on and nothing kept only in memory is given up."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import TYPE_CHECKING, NoReturn

from protocol.encoder import ErrorReply
from server.listen import remove_unix_socket, stop_listening
from server.shutdown_flags import FAILED, FORCE, NOSAVE

if TYPE_CHECKING:
    from server.client import Client
    from server.core import ServerCore


def request_shutdown(server: ServerCore, flags: int,
                     message: str = "Received shutdown request, scheduling shutdown...",
                     client: Client | None = None) -> None:
    """Shut down once this event-loop pass ends, with these SHUTDOWN flags; `client`
    (who sent SHUTDOWN) gets an error if it fails."""
    if client is not None:
        server.shutdown_waiters.append(client)
    requested = server.shutdown_requested
    if requested is not None and not requested.done():
        server.log.warning(message)
        requested.set_result(flags)


def on_signal(server: ServerCore, sig: int) -> None:
    """SIGTERM/SIGINT: a graceful shutdown, as Redis's sigShutdownHandler; a second
    SIGINT while it runs exits at once."""
    requested = server.shutdown_requested
    if requested is not None and requested.done():
        if sig == signal.SIGINT:
            server.log.warning("You insist... exiting now.")
            os._exit(1)
        return
    name = signal.Signals(sig).name
    flags = server.config["shutdown-on-sigint" if sig == signal.SIGINT else
                          "shutdown-on-sigterm"]
    request_shutdown(server, flags, f"Received {name} scheduling shutdown...")


def finish_shutdown(server: ServerCore, flags: int) -> bool:
    """The replies of the last commands go out, the shutdown hooks flush the AOF and save
    the final snapshot, then everything closes. False, with the server still serving, when
    a hook could not do its part."""
    server.log.warning("User requested shutdown...")
    server.before_sleep()
    for hook in server.shutdown_hooks:
        if not hook(flags):
            server.log.warning("Errors trying to shut down the server. Check the logs for "
                               "more information.")
            waiters, server.shutdown_waiters = server.shutdown_waiters, []
            for client in waiters:
                if not client.closed:
                    server.write_reply(client, ErrorReply(FAILED))
            return False
    stop_listening(server)
    _close_everything(server)
    return True


def shutdown_during_script(server: ServerCore) -> NoReturn:
    """SHUTDOWN NOSAVE while a script is busy (the script holds the event loop): the
    shutdown's steps here and now, then the process ends, as Redis's exit(0). The busy
    script's effects are dropped: it has not ended, so nothing of it was logged."""
    server.log.warning("User requested shutdown...")
    for hook in server.shutdown_hooks:
        hook(NOSAVE | FORCE)  # (the process ends here whatever they manage)
    _close_everything(server)
    pidfile = server.config["pidfile"]
    if pidfile:
        with contextlib.suppress(OSError):
            os.unlink(pidfile)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def _close_everything(server: ServerCore) -> None:
    """The shutdown's last steps: every client closed, the unix socket removed."""
    for client in list(server.clients.values()):
        if client.sink is not None:
            client.sink.close_client()
    remove_unix_socket(server)
    server.log.warning("xstreamd is now ready to exit, bye bye...")
