"""The replica's side (replication.c's connectWithMaster, syncWithMaster, readSyncBulkPayload):
a link to the primary that connects, authenticates, says what it can do, asks PSYNC, loads
the RDB or continues, then applies the stream and acknowledges its offset.

The link is one coroutine per connection attempt; it starts again a second after any
failure (the primary went away, sent garbage, or answered an error), with a partial resync
when the history it had is still the primary's. The stream's commands are run by the master
client (flag M in CLIENT LIST): no reply reaches the primary, except REPLCONF ACK.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from typing import TYPE_CHECKING

from protocol.encoder import encode_command
from protocol.reader import ProtocolError, make_reader
from server.dispatch import run_commands
from server.replication.rdb_load import RdbTransferError, install_rdb, receive_rdb

if TYPE_CHECKING:
    from server.app import Server
    from server.client import Client
    from server.replication.state import Replication

# The link's states, as INFO's master_link_status and ROLE name them.
CONNECT = "connect"
CONNECTING = "connecting"
HANDSHAKE = "handshake"
TRANSFER = "sync"
CONNECTED = "connected"

_RETRY_SECONDS = 1.0
_READ = 1 << 16


class LinkError(Exception):
    """The link failed: the message says why (it goes to the log)."""


class _MasterSink:
    """The master client's connection as ClientSink: replies go nowhere (the primary reads
    only REPLCONF ACK, which the link writes itself)."""

    def __init__(self, link: MasterLink) -> None:
        self.link = link

    def write(self, data: object, size: int = 0) -> None:
        pass

    def send(self, data: bytes) -> None:
        pass

    def close_client(self) -> None:
        self.link.drop("the master client was closed")

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def output_size(self) -> int:
        return 0


class MasterLink:
    def __init__(self, repl: Replication, host: str, port: int) -> None:
        self.repl = repl
        self.server: Server = repl.server
        self.host = host
        self.port = port
        self.state = CONNECT
        self.task: asyncio.Task[None] | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.client: Client | None = None  # the master client, while the stream flows
        self.last_io = time.monotonic()
        self.down_since = time.monotonic()  # (master_link_down_since_seconds)
        self.sync_total = -1  # master_sync_total_bytes (-1: not known, EOF-marked)
        self.sync_read = 0
        self.ever_connected = False
        self._stopped = False

    # -- life ---------------------------------------------------------------------------------
    def start(self) -> None:
        self.task = self.server.loop.create_task(self._run())

    def stop(self) -> None:
        """REPLICAOF NO ONE or another primary: the link ends for good."""
        self._stopped = True
        self._close_connection()
        if self.task is not None:
            self.task.cancel()

    def drop(self, reason: str) -> None:
        """Close this connection; the coroutine starts another."""
        self.server.log.warning(f"Connection with master lost ({reason}).")
        self._close_connection()

    def _close_connection(self) -> None:
        writer, self.writer = self.writer, None
        if writer is not None:
            writer.close()
        client, self.client = self.client, None
        if client is not None:
            self.server.remove_client(client)
        if self.state == CONNECTED:
            self.down_since = time.monotonic()
        self.state = CONNECT

    @property
    def up(self) -> bool:
        return self.state == CONNECTED

    async def _run(self) -> None:
        log = self.server.log
        while not self._stopped:
            try:
                await self._attempt()
            except asyncio.CancelledError:
                raise
            except (OSError, LinkError, ProtocolError, RdbTransferError,
                    asyncio.IncompleteReadError) as exc:
                if not self._stopped:
                    log.warning(f"Error condition on socket for SYNC: {exc}"
                                if self.state != CONNECTED else
                                f"Connection with master lost: {exc}")
            except Exception as exc:  # a bug must not end replication for good
                log.warning(f"Replication link error: {exc!r}")
            self._close_connection()
            if not self._stopped:
                await asyncio.sleep(_RETRY_SECONDS)

    async def _attempt(self) -> None:
        self.state = CONNECTING
        self.server.log.notice(f"Connecting to MASTER {self.host}:{self.port}")
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port, limit=1 << 20),
            self.server.config["repl-timeout"])
        self.writer = writer
        self.last_io = time.monotonic()
        self.state = HANDSHAKE
        self.server.log.notice("MASTER <-> REPLICA sync started")
        await self._handshake(reader, writer)
        reply = await self._psync(reader, writer)
        if reply.startswith(b"+FULLRESYNC"):
            await self._full_sync(reader, reply)
        elif reply.startswith(b"+CONTINUE"):
            self._continue(reply)
        else:
            raise LinkError(f"unexpected reply to PSYNC from master: "
                            f"{reply.decode(errors='replace')}")
        await self._stream(reader)

    # -- handshake ----------------------------------------------------------------------------
    async def _command(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                       *argv: bytes) -> bytes:
        writer.write(encode_command(list(argv)))
        await writer.drain()
        return await self._line(reader)

    async def _line(self, reader: asyncio.StreamReader) -> bytes:
        """The next reply line, newlines sent to keep the link alive skipped."""
        timeout = self.server.config["repl-timeout"]
        while True:
            line = await asyncio.wait_for(reader.readline(), timeout)
            if not line:
                raise LinkError("the master closed the connection")
            self.last_io = time.monotonic()
            line = line.rstrip(b"\r\n")
            if line:
                return line

    async def _handshake(self, reader: asyncio.StreamReader,
                         writer: asyncio.StreamWriter) -> None:
        config = self.server.config
        pong = await self._command(reader, writer, b"PING")
        if pong.startswith(b"-") and not pong.startswith((b"-NOAUTH", b"-NOPERM",
                                                          b"-ERR operation not permitted")):
            raise LinkError(f"error reply to PING from master: '{pong.decode(errors='replace')}'")
        if config["masterauth"]:
            user = config["masteruser"]
            argv = [b"AUTH", *([user.encode()] if user else []), config["masterauth"].encode()]
            reply = await self._command(reader, writer, *argv)
            if reply.startswith(b"-"):
                raise LinkError(f"unable to AUTH to MASTER: {reply.decode(errors='replace')}")
        port = config["replica-announce-port"] or config["port"]
        await self._command(reader, writer, b"REPLCONF", b"listening-port", str(port).encode())
        if config["replica-announce-ip"]:
            await self._command(reader, writer, b"REPLCONF", b"ip-address",
                                config["replica-announce-ip"].encode())
        # (An error here, from an old primary, is no reason to stop: Redis goes on too.)
        await self._command(reader, writer, b"REPLCONF", b"capa", b"eof", b"capa", b"psync2")

    async def _psync(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
        """PSYNC with the history this server has (its own, if it was a primary, or the
        last primary's), or `PSYNC ? -1` when it has none to offer."""
        repl = self.repl
        if repl.backlog is not None or self.ever_connected:
            argv = [b"PSYNC", repl.replid.encode(), str(repl.offset + 1).encode()]
        else:
            argv = [b"PSYNC", b"?", b"-1"]
        self.server.log.notice(f"Trying a partial resynchronization (request "
                               f"{argv[1].decode()}:{argv[2].decode()}).")
        reply = await self._command(reader, writer, *argv)
        if reply.startswith((b"-NOMASTERLINK", b"-LOADING")):
            raise LinkError(f"master is currently unable to PSYNC but should be in the "
                            f"future: {reply.decode(errors='replace')}")
        return reply

    # -- full and partial resynchronization ---------------------------------------------------
    async def _full_sync(self, reader: asyncio.StreamReader, reply: bytes) -> None:
        words = reply.split()
        if len(words) != 3 or len(words[1]) != 40:
            raise LinkError(f"bad +FULLRESYNC reply: {reply.decode(errors='replace')}")
        replid, offset = words[1].decode(), int(words[2])
        self.server.log.notice(f"Full resync from master: {replid}:{offset}")
        self.state = TRANSFER
        path = await receive_rdb(self, reader)
        install_rdb(self.server, path)
        repl = self.repl
        repl.replid = replid
        repl.clear_replid2()
        repl.offset = offset
        repl.free_backlog()
        repl.ensure_backlog()
        self.server.log.notice("MASTER <-> REPLICA sync: Finished with success")

    def _continue(self, reply: bytes) -> None:
        """+CONTINUE [new replid]: the primary has what we lack; a new ID (the primary was
        promoted meanwhile) becomes ours, the old one replid2."""
        words = reply.split()
        repl = self.repl
        if len(words) == 2 and words[1].decode() != repl.replid:
            repl.replid2 = repl.replid
            repl.second_replid_offset = repl.offset + 1
            repl.replid = words[1].decode()
        repl.ensure_backlog()
        self.server.log.notice("MASTER <-> REPLICA sync: Master accepted a Partial "
                               "Resynchronization.")

    # -- the stream ---------------------------------------------------------------------------
    async def _stream(self, reader: asyncio.StreamReader) -> None:
        server = self.server
        client = server.new_client(_MasterSink(self), f"{self.host}:{self.port}", "")
        client.authenticated = client.logged_in = True
        client.repl_master = True
        self.client = client
        self.state = CONNECTED
        self.ever_connected = True
        self.send_ack()
        parser = make_reader(server.config["proto-max-bulk-len"])
        unapplied = bytearray()
        timeout = server.config["repl-timeout"]
        while True:
            data = await asyncio.wait_for(reader.read(_READ), timeout)
            if not data:
                raise LinkError("the master closed the connection")
            self.last_io = time.monotonic()
            self.repl.input_bytes += len(data)
            unapplied += data
            commands = parser.parse(data)
            consumed = len(unapplied) - parser.pending_bytes()
            if commands:
                self._apply(client, commands, bytes(unapplied[:consumed]))
            del unapplied[:consumed]
            if self.client is not client:  # dropped while applying
                return

    def _apply(self, client: Client, commands: list[list[bytes]], data: bytes) -> None:
        """Run the primary's commands, each followed by its bytes into this server's own
        stream (so an ACK written by one of them counts what came before it). Keys whose
        time passed here but not yet on the primary are still there for its commands."""
        server = self.server
        dbs = server.dbs
        clocks = [db.clock for db in dbs]
        for db in dbs:
            db.clock = _never_expired
        try:
            sizes = [len(encode_command(argv)) for argv in commands]
            exact = sum(sizes) == len(data)
            position = 0
            for argv, size in zip(commands, sizes, strict=True):
                run_commands(client, [argv])
                if exact:
                    self.repl.feed_stream(data[position:position + size])
                    position += size
            if not exact:
                self.repl.feed_stream(data)
        finally:
            for db, clock in zip(dbs, clocks, strict=True):
                db.clock = clock
        client.out.clear()

    def send_ack(self) -> None:
        """REPLCONF ACK <offset>: what this replica has applied."""
        writer = self.writer
        if writer is not None and self.state == CONNECTED:
            writer.write(encode_command([b"REPLCONF", b"ACK", str(self.repl.offset).encode()]))

    def cron(self, now: float) -> None:
        """Once a second: the ACK, and the link's timeout."""
        if self.state == CONNECTED:
            self.send_ack()
        if self.state in (HANDSHAKE, TRANSFER, CONNECTED) and \
                now - self.last_io > self.server.config["repl-timeout"]:
            self.drop("timeout")

    def temp_rdb_path(self) -> str:
        return f"temp-{int(time.time())}.{os.getpid()}.rdb"

    def remove_temp(self, path: str) -> None:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _never_expired() -> int:
    return 0
