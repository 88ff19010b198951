"""What each client's buffers hold, for CLIENT LIST / CLIENT INFO, INFO and MEMORY STATS.

The fields keep Redis's names; what they measure here:

* qbuf: the query buffer's bytes not parsed yet, a partly received bulk included (Redis's
  querybuf, whose big bulks it reads into a buffer of their own size: the same count);
* qbuf-free: the rest of the buffer's allocation (bytes parsed and not dropped yet, and the
  spare room a growing buffer keeps);
* argv-mem: arguments read and held: those of a command not complete yet, of the commands
  waiting behind a blocked one, and of the command running (CLIENT LIST / INFO's own, as
  Redis counts it);
* multi-mem: a transaction's queued commands (their arguments and the lists holding them);
* obl / oll: the replies encoded and not handed to the transport yet: their bytes and
  pieces (Redis's reply buffer and list);
* omem: all the output pending: obl and what the transport has not sent yet
  (get_write_buffer_size()), which is what the output limits are checked against;
* tot-mem: all of the above (the query buffer by its allocation) and the client's own
  objects (the client, its connection and its reader).

INFO's mem_clients_normal (and MEMORY STATS' clients.normal) is the sum of the clients'
tot-mem, client_recent_max_input_buffer and client_recent_max_output_buffer the largest
query buffer and pending output among the clients connected now.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from server.client import Client


@dataclass(slots=True)
class ClientMemory:
    qbuf: int
    qbuf_free: int
    argv_mem: int
    multi_mem: int
    obl: int
    oll: int
    omem: int
    tot_mem: int

    def fields(self) -> str:
        """CLIENT LIST's buffer fields from qbuf to omem, rbs and rbp (no static reply buffer
        here: the default size, never used) in their place."""
        return (f"qbuf={self.qbuf} qbuf-free={self.qbuf_free} argv-mem={self.argv_mem} "
                f"multi-mem={self.multi_mem} rbs=16384 rbp=0 obl={self.obl} oll={self.oll} "
                f"omem={self.omem} tot-mem={self.tot_mem}")


def _args_bytes(commands: Iterable[list[bytes]]) -> int:
    return sum(sum(map(len, argv)) for argv in commands)


def measure(client: Client, running: list[bytes] | None = None) -> ClientMemory:
    """The client's buffers now; `running`: the command it is running (the caller's)."""
    sink = client.sink
    reader = getattr(sink, "reader", None)
    if reader is not None:
        qbuf = reader.pending_bytes()
        allocated = reader.allocated_bytes()
        argv_mem = reader.partial_args_bytes()
    else:
        qbuf = allocated = argv_mem = 0
    if client.pending_cmds:
        argv_mem += _args_bytes(client.pending_cmds)
    if running:
        argv_mem += sum(map(len, running))
    multi = client.multi
    multi_mem = 0
    if multi is not None:
        multi_mem = (_args_bytes(multi) + sum(map(sys.getsizeof, multi))
                     + sys.getsizeof(multi))
    obl = client.output_bytes()
    omem = obl + (sink.output_size() if sink is not None else 0)
    return ClientMemory(
        # (the allocation ends with a NUL byte, in no way free)
        qbuf=qbuf, qbuf_free=max(allocated - qbuf - 1, 0), argv_mem=argv_mem,
        multi_mem=multi_mem, obl=obl, oll=len(client.out), omem=omem,
        tot_mem=allocated + argv_mem + multi_mem + omem + _own_objects(client, sink, reader))


def _own_objects(client: Client, sink: object, reader: object) -> int:
    """The client's objects and containers, its connection's and its transport's."""
    size = (sys.getsizeof(client) + sys.getsizeof(client.out) + sys.getsizeof(client.watched)
            + sys.getsizeof(client.watched_stale) + sys.getsizeof(client.pending_cmds)
            + sys.getsizeof(client.waiting_pushes))
    if reader is not None:
        size += (sys.getsizeof(sink) + sys.getsizeof(reader)
                 + sys.getsizeof(getattr(sink, "transport", None)))
    return size


def clients_memory(clients: Iterable[Client]) -> int:
    """INFO's mem_clients_normal: what the clients hold in all (their tot-mem)."""
    return sum(measure(client).tot_mem for client in clients)


def largest_buffers(clients: Iterable[Client]) -> tuple[int, int]:
    """The largest query buffer (its allocation) and pending output among the clients."""
    largest_in = largest_out = 0
    for client in clients:
        reader = getattr(client.sink, "reader", None)
        if reader is not None:
            largest_in = max(largest_in, reader.allocated_bytes())
        sink = client.sink
        largest_out = max(largest_out, client.output_bytes()
                          + (sink.output_size() if sink is not None else 0))
    return largest_in, largest_out
