"""The floor for a Python server: uvloop + hiredis, answering every command with a constant.

    python bench/floor_server.py PORT

Issue #9 quotes this as the least CPU per command a Python server can spend (it does no
dispatch, keeps no data): `bench/run.py --floor` measures it beside ours and Redis's.
"""

from __future__ import annotations

import asyncio
import sys

import hiredis
import uvloop

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


async def main(port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(FloorProtocol, "127.0.0.1", port, reuse_address=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    uvloop.install()
    asyncio.run(main(int(sys.argv[1])))
