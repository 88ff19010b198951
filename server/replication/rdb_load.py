"""A replica receiving and loading its primary's RDB (readSyncBulkPayload): into a temp file
in `dir`, then loaded in place of the data, then kept as this server's own dbfilename, as
Redis keeps it.

The primary sends `$<length>\\r\\n` and that many bytes (an RDB it saved to disk), or
`$EOF:<40 characters>\\r\\n`, the RDB, and the same 40 characters (one written straight to the
socket: repl-diskless-sync). Newlines before the header only keep the link alive.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import TYPE_CHECKING

from server.persistence.dataset import LoadError

if TYPE_CHECKING:
    from server.app import Server
    from server.replication.replica import MasterLink

_CHUNK = 1 << 16
_MARK = 40  # RDB_EOF_MARK_SIZE


class RdbTransferError(Exception):
    """The RDB did not arrive whole, or does not load (the message says which)."""


async def receive_rdb(link: MasterLink, reader: asyncio.StreamReader) -> str:
    """The RDB's bytes, written to a temp file whose path is returned."""
    header = await link._line(reader)
    if header.startswith(b"-"):
        raise RdbTransferError(f"MASTER aborted replication with an error: "
                               f"{header[1:].decode(errors='replace')}")
    if not header.startswith(b"$"):
        raise RdbTransferError(f"bad protocol from MASTER, the first byte is not '$' (we "
                               f"received '{header[:64].decode(errors='replace')}'), are you "
                               f"sure the host and port are right?")
    mark = b""
    if header.startswith(b"$EOF:"):
        mark = header[5:]
        if len(mark) != _MARK:
            raise RdbTransferError("bad EOF mark from MASTER")
        link.sync_total = -1
        link.server.log.notice("MASTER <-> REPLICA sync: receiving streamed RDB from master "
                               "with EOF to disk")
    else:
        try:
            link.sync_total = int(header[1:])
        except ValueError:
            raise RdbTransferError("bad RDB length from MASTER") from None
        if link.sync_total < 0:
            raise RdbTransferError("bad RDB length from MASTER")
        link.server.log.notice(f"MASTER <-> REPLICA sync: receiving {link.sync_total} bytes "
                               f"from master to disk")
    link.sync_read = 0
    path = link.temp_rdb_path()
    try:
        with open(path, "wb") as out:
            if mark:
                await _copy_until_mark(link, reader, out, mark)
            else:
                await _copy_length(link, reader, out, link.sync_total)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        link.remove_temp(path)
        raise
    return path


async def _read(link: MasterLink, reader: asyncio.StreamReader, n: int) -> bytes:
    data = await asyncio.wait_for(reader.read(n), link.server.config["repl-timeout"])
    if not data:
        raise RdbTransferError("the master went away in the middle of the transfer "
                               f"({link.sync_read} bytes received)")
    link.last_io = time.monotonic()
    link.sync_read += len(data)
    link.repl.input_bytes += len(data)
    return data


async def _copy_length(link: MasterLink, reader: asyncio.StreamReader, out: object,
                       length: int) -> None:
    left = length
    while left:
        data = await _read(link, reader, min(_CHUNK, left))
        out.write(data)  # type: ignore[attr-defined]
        left -= len(data)


async def _copy_until_mark(link: MasterLink, reader: asyncio.StreamReader, out: object,
                           mark: bytes) -> None:
    """Everything up to the mark; the last 40 bytes are held back until more come, since
    they may be the mark."""
    tail = b""
    while True:
        data = tail + await _read(link, reader, _CHUNK)
        if data.endswith(mark):
            out.write(data[:-_MARK])  # type: ignore[attr-defined]
            link.sync_read -= _MARK
            return
        out.write(data[:-_MARK])  # type: ignore[attr-defined]
        tail = data[-_MARK:]


def install_rdb(server: Server, path: str) -> None:
    """Load the received RDB in place of the data (all of it, or nothing: a file that does
    not load leaves the data as it was), keep it as dbfilename, and start the AOF again
    from the new data."""
    p = server.persistence
    server.log.notice("MASTER <-> REPLICA sync: Flushing old data")
    server.log.notice("MASTER <-> REPLICA sync: Loading DB in memory")
    try:
        p.loader.load_snapshot(path, own=False)  # (a primary's file: no cold references)
    except (LoadError, OSError) as exc:
        os.unlink(path)
        raise RdbTransferError(f"Failed trying to load the MASTER synchronization DB from "
                               f"disk: {exc}") from None
    try:
        os.replace(path, os.path.abspath(server.config["dbfilename"]))
        server.cold_tier.unpin("rdb")  # (the file that referred to cold segments is replaced)
    except OSError as exc:
        server.log.warning(f"Failed trying to rename the temp DB into "
                           f"{server.config['dbfilename']} in MASTER <-> REPLICA "
                           f"synchronization: {exc.strerror}")
        os.unlink(path)
    p.after_replica_load()
