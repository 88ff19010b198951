"""Full resynchronization on the primary (startBgsaveForReplication, updateSlavesWaitingBgsave):
an RDB of the dataset at one offset of the stream, for every replica waiting for one.

* To disk (`repl-diskless-sync no`): the persistence's BGSAVE writes dbfilename; when it
  succeeds, each waiting replica is sent `$<length>\\r\\n` and the file, then what the stream
  carried meanwhile.
* Diskless (the default): after `repl-diskless-sync-delay` seconds, so that replicas arriving
  together share one child, a child writes the RDB straight to their sockets between
  `$EOF:<mark>\\r\\n` and the mark. The parent writes nothing to those sockets until the child
  has exited; the child reports through a pipe which replicas got the whole file.

Either way `+FULLRESYNC <replid> <offset>` goes to a replica when its child starts: the RDB
holds the data as of that offset, and the replica is sent the stream from there.
"""

from __future__ import annotations

import asyncio
import os
import select
import time
from typing import TYPE_CHECKING

from server.persistence.fork import spawn
from server.persistence.manager import PersistenceError
from server.persistence.rdb_writer import write_rdb
from server.replication.primary import SEND_BULK, WAIT_BGSAVE_END, WAIT_BGSAVE_START
from server.scripting.functions import libraries_of

if TYPE_CHECKING:
    from server.client import Client
    from server.persistence.fork import Child
    from server.replication.primary import ReplicaLink
    from server.replication.state import Replication

_CHUNK = 1 << 16
_FORKING = object()  # FullSync.child while a diskless child waits for its sockets to drain
# Bytes a replica's socket may have queued in the parent before the file is read further.
_SEND_QUEUE = 4 << 20


class FullSync:
    def __init__(self, repl: Replication) -> None:
        self.repl = repl
        self.server = repl.server
        self.child: Child | object | None = None  # a diskless child, while it writes
        self.waiting_since = 0.0  # when the first replica started waiting (the delay)
        self.disk_replicas: list[ReplicaLink] = []  # waiting for the BGSAVE in progress

    # -- asking -------------------------------------------------------------------------------
    def request(self, link: ReplicaLink) -> None:
        """A replica needs an RDB: it waits for the next child that can serve it."""
        if not any(self._waiting()):
            self.waiting_since = time.monotonic()
        link.state = WAIT_BGSAVE_START
        self.repl.sync_full += 1
        self.try_start()

    def _waiting(self) -> list[ReplicaLink]:
        return [c.repl for c in self.repl.replicas
                if c.repl is not None and c.repl.state == WAIT_BGSAVE_START]

    def try_start(self) -> None:
        """Start a child for the replicas waiting, when none runs (called again by the cron
        until one can start)."""
        waiting = self._waiting()
        p = self.server.persistence
        if not waiting or self.child is not None or p.jobs.child is not None:
            return
        config = self.server.config
        diskless = config["repl-diskless-sync"] and all(link.capa_eof for link in waiting)
        if diskless:
            limit = config["repl-diskless-sync-max-replicas"]
            if (time.monotonic() - self.waiting_since < config["repl-diskless-sync-delay"]
                    and not (limit and len(waiting) >= limit)):
                return
            self._start_diskless(waiting)
        else:
            self._start_disk(waiting)

    def _begin(self, links: list[ReplicaLink]) -> None:
        """+FULLRESYNC to each: the RDB stands for the stream's current offset, and what is
        fed from now on is held for them. The stream starts again with a SELECT."""
        repl = self.repl
        repl.seldb = -1
        line = f"+FULLRESYNC {repl.replid} {repl.offset}\r\n".encode()
        for link in links:
            link.state = WAIT_BGSAVE_END
            link.held = []
            link.held_bytes = 0
            _write_now(link.client, b"" if link.old_protocol else line)

    # -- to disk ------------------------------------------------------------------------------
    def _start_disk(self, links: list[ReplicaLink]) -> None:
        p = self.server.persistence
        try:
            p.jobs.start_bgsave(portable=True)  # (no references to this server's cold files)
        except PersistenceError as exc:
            self.server.log.warning(f"BGSAVE for replication failed: {exc}")
            for link in links:
                link.client.sink.close_client()  # type: ignore[union-attr]
            return
        self.server.log.notice("Starting BGSAVE for SYNC with target: disk")
        self._begin(links)
        self.disk_replicas = links
        p.jobs.bgsave_listeners.append(self._disk_done)

    def _disk_done(self, ok: bool) -> None:
        links = [link for link in self.disk_replicas if link.state == WAIT_BGSAVE_END]
        self.disk_replicas = []
        if not ok:
            self.server.log.warning("BGSAVE for replication failed")
            for link in links:
                link.client.sink.close_client()  # type: ignore[union-attr]
            return
        path = os.path.abspath(self.server.config["dbfilename"])
        for link in links:
            try:
                fh = open(path, "rb")  # noqa: SIM115 - closed by the sending task
            except OSError as exc:
                self.server.log.warning(f"SYNC failed. Can't open/stat DB after BGSAVE: {exc}")
                link.client.sink.close_client()  # type: ignore[union-attr]
                continue
            link.state = SEND_BULK
            self.server.loop.create_task(self._send_file(link, fh))

    async def _send_file(self, link: ReplicaLink, fh: object) -> None:
        """`$<length>\\r\\n` and the file, at the pace the replica's socket takes it."""
        client = link.client
        transport = client.sink.transport  # type: ignore[union-attr]
        try:
            size = os.fstat(fh.fileno()).st_size  # type: ignore[attr-defined]
            transport.write(b"$%d\r\n" % size)
            while not client.closed:
                if transport.get_write_buffer_size() > _SEND_QUEUE:
                    await asyncio.sleep(0.002)
                    continue
                data = fh.read(_CHUNK)  # type: ignore[attr-defined]
                if not data:
                    break
                self.repl.output_bytes += len(data)
                transport.write(data)
        finally:
            fh.close()  # type: ignore[attr-defined]
        if not client.closed:
            self.server.log.notice(f"Synchronization with replica {client.addr} succeeded")
            link.go_online()

    # -- diskless -----------------------------------------------------------------------------
    def _start_diskless(self, links: list[ReplicaLink]) -> None:
        self._begin(links)
        self.child = _FORKING
        self._fork_when_drained(links)

    def _fork_when_drained(self, links: list[ReplicaLink]) -> None:
        """The child writes to the sockets itself: what the parent queued for them (the
        +FULLRESYNC line) must be out first."""
        links = [link for link in links if not link.client.closed]
        if not all(_drained(link.client) for link in links):
            self.server.loop.call_later(0.002, self._fork_when_drained, links)
            return
        self.child = None
        if links:
            self._fork(links)

    def _fork(self, ready: list[ReplicaLink]) -> None:
        server = self.server
        fds = [link.client.sink.transport.get_extra_info("socket").fileno()  # type: ignore
               for link in ready]
        mark = os.urandom(20).hex().encode()
        status_read, status_write = os.pipe()
        dbs = server.dbs
        libraries = libraries_of(server)

        def work() -> None:
            os.close(status_read)
            out = _SocketsWriter(fds)
            out.write(b"$EOF:" + mark + b"\r\n")
            write_rdb(out, dbs, libraries)
            out.write(mark)
            os.write(status_write, b"".join(b"1" if ok else b"0" for ok in out.alive))

        p = server.persistence
        close = [fd for fd in p.jobs.listen_fds() if fd not in fds]
        try:
            child = spawn("rdb", work, lambda code: self._diskless_done(
                ready, code, status_read), server.loop, close, server.log)
        except OSError as exc:
            os.close(status_read)
            os.close(status_write)
            server.log.warning(f"Can't fork for diskless replication: {exc.strerror}")
            for link in ready:
                link.client.sink.close_client()  # type: ignore[union-attr]
            return
        os.close(status_write)
        self.child = child
        p.jobs.child = child  # (one child at a time, persistence's included)
        server.stats.note_fork(child.fork_usec, server.latency)
        server.log.notice("Starting BGSAVE for SYNC with target: replicas sockets")

    def _diskless_done(self, links: list[ReplicaLink], code: int, status_fd: int) -> None:
        self.child = None
        p = self.server.persistence
        if p.jobs.child is not None and p.jobs.child.done:
            p.jobs.child = None
        try:
            status = os.read(status_fd, len(links)) if code == 0 else b""
        except OSError:
            status = b""
        finally:
            os.close(status_fd)
        for i, link in enumerate(links):
            if link.state != WAIT_BGSAVE_END or link.client.closed:
                continue
            if status[i:i + 1] == b"1":
                self.server.log.notice(f"Diskless sync of replica {link.client.addr} succeeded")
                link.go_online()
            else:
                self.server.log.warning(f"Diskless sync of replica {link.client.addr} failed")
                link.client.sink.close_client()  # type: ignore[union-attr]
        self.try_start()

    def cron(self) -> None:
        """Keep replicas waiting for a disk BGSAVE alive with newlines, and start the
        children that could not start before."""
        for client in self.repl.replicas:
            link = client.repl
            if link is not None and link.state in (WAIT_BGSAVE_START, WAIT_BGSAVE_END) \
                    and self.child is None:
                transport = client.sink.transport  # type: ignore[union-attr]
                if link.state == WAIT_BGSAVE_START or link in self.disk_replicas:
                    transport.write(b"\n")
        self.try_start()


def _drained(client: Client) -> bool:
    """Nothing queued for the socket: a child may write to it directly."""
    return client.sink.transport.get_write_buffer_size() == 0  # type: ignore[union-attr]


def _write_now(client: Client, data: bytes) -> None:
    """Straight to the transport, after the replies queued before it (the handshake's)."""
    transport = client.sink.transport  # type: ignore[union-attr]
    if client.out:
        transport.write(b"".join(client.out))
        client.out = []
    transport.write(data)


class _SocketsWriter:
    """In the child: a file-like object writing everything to every replica's socket (non-
    blocking sockets shared with the parent: a full one is waited for with select). A
    replica whose socket fails is dropped; the others go on."""

    def __init__(self, fds: list[int]) -> None:
        self.fds = fds
        self.alive = [True] * len(fds)

    def write(self, data: bytes | bytearray | memoryview) -> int:
        view = memoryview(data)
        for i, fd in enumerate(self.fds):
            if not self.alive[i]:
                continue
            sent = 0
            try:
                while sent < len(view):
                    try:
                        sent += os.write(fd, view[sent:])
                    except BlockingIOError:
                        select.select([], [fd], [], 1.0)
            except OSError:
                self.alive[i] = False
        if not any(self.alive):
            raise OSError("every replica's connection failed")
        return len(view)

    def flush(self) -> None:
        pass
