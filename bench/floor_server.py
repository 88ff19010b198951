"""The floor for a Python server: uvloop + hiredis, answering every command with a constant.

    python bench/floor_server.py PORT            # the floor: parse, answer a constant
    python bench/floor_server.py PORT --append   # ... and append every XADD to a real Stream

Issue #9 quotes the first as the least CPU per command a Python server can spend (it does no
dispatch, keeps no data): `bench/run.py --only floor` measures it beside ours and Redis's.
With --append each `XADD key * field value ...` goes into one storage.stream.Stream (the
listpack append our server does) and is answered with the new ID, still with no dispatch,
checks or statistics: the least a Python server built on this storage spends per XADD
(`bench/run.py --only floor_append`).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import hiredis
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from storage.stream import Stream  # noqa: E402

# A stream ID, as XADD answers; PING's +PONG costs the same to write.
REPLY = b"$15\r\n1700000000000-0\r\n"


class FloorProtocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.reader = hiredis.Reader()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        reader = self.reader
        reader.feed(data)
        count = 0
        while reader.gets() is not False:
            count += 1
        if count:
            self.transport.write(REPLY * count)  # type: ignore[union-attr]


class AppendFloorProtocol(FloorProtocol):
    """Replies are written once per event-loop iteration, as our server's before-sleep pass
    does (writing each read's replies at once lets clients answer sooner, so fewer requests
    arrive per wake-up and the CPU per request rises: measured 10-19% for our server)."""

    stream = Stream()  # one stream for every connection, as the benchmark's one key
    pending: list[AppendFloorProtocol] = []  # protocols with replies to write

    def __init__(self) -> None:
        super().__init__()
        self.out: list[bytes] = []

    def data_received(self, data: bytes) -> None:
        reader = self.reader
        reader.feed(data)
        out = self.out
        had_output = bool(out)
        while (argv := reader.gets()) is not False:
            if len(argv) >= 5 and argv[2] == b"*":  # XADD key * field value ...
                new_id = b"%d-%d" % self.stream.append(argv[3:], None, True, None, 4096, 100)
                out.append(b"$%d\r\n%s\r\n" % (len(new_id), new_id))
            else:  # redis-benchmark's CONFIG GET at start
                out.append(b"*0\r\n")
        if out and not had_output:
            pending = AppendFloorProtocol.pending
            if not pending:
                asyncio.get_running_loop().call_soon(AppendFloorProtocol.write_pending)
            pending.append(self)

    @staticmethod
    def write_pending() -> None:
        pending, AppendFloorProtocol.pending = AppendFloorProtocol.pending, []
        for protocol in pending:
            protocol.transport.write(b"".join(protocol.out))  # type: ignore[union-attr]
            protocol.out = []


async def main(port: int, protocol: type[FloorProtocol]) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(protocol, "127.0.0.1", port, reuse_address=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    uvloop.install()
    asyncio.run(main(int(sys.argv[1]),
                     AppendFloorProtocol if "--append" in sys.argv[2:] else FloorProtocol))
