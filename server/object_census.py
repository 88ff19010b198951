"""DEBUG CLIENT-OBJECTS: how many of the objects a client connection is made of are alive in
the process, connected or not.

Every object of a closed connection should be gone at once, without the cyclic collector.
With it turned off (DEBUG SET-CYCLIC-GC 0), a client, connection or request reader still
alive beyond the connected ones is held by a reference cycle or a forgotten reference: a
leak, which this count shows. It walks every object the collector tracks: a debugging aid,
slow on a big dataset.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

from protocol.reader import RequestReader
from server.client import Client
from server.connection import Connection

if TYPE_CHECKING:
    from server.app import Server


def census(server: Server) -> dict[str, int]:
    """connected: the clients in the server's table; clients: the Client objects alive that
    belong to a connection; fake-clients: those of no connection (the scripts' client, the
    AOF loader's); connections and readers: the Connection and request reader objects."""
    clients = fake = connections = readers = 0
    for obj in gc.get_objects():
        if isinstance(obj, Client):
            if obj.sink is None:
                fake += 1
            else:
                clients += 1
        elif isinstance(obj, Connection):
            connections += 1
        elif isinstance(obj, RequestReader):
            readers += 1
    return {"connected": len(server.clients), "clients": clients, "fake-clients": fake,
            "connections": connections, "readers": readers}
