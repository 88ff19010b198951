"""Writing the append-only file: the in-memory buffer fed by Server.propagate, SELECT insertion,
the write pass before replies go out, the fsync policies and write errors.

Group commit: commands are buffered as they execute; the before-sleep pass writes the whole
buffer with one write() and, with `appendfsync always`, one fdatasync(), before any client reply
of that event-loop batch is written. With `everysec` a worker thread fdatasyncs at most once per
second; with `no` the kernel decides.

Write passes are numbered (`write_seq`, counting those that wrote something) and `synced_seq`
is the last pass known to be on disk, so WAITAOF can tell whether a client's writes are.

A failed write (ENOSPC, EIO...) keeps the unwritten bytes in the buffer, sets the error that
turns write commands into MISCONF errors, and is retried every pass; the file is truncated back
to its last complete command so a short write never leaves half a command in the middle.
"""

from __future__ import annotations

import errno
import os
import queue
import threading
import time
from collections.abc import Callable

from protocol.encoder import encode_command, encode_commands

FsyncFn = Callable[[int], None]


def _fsync_default(fd: int) -> None:
    os.fdatasync(fd)




class FsyncWorker:
    """One background thread for the everysec fsyncs."""

    def __init__(self, fsync: FsyncFn) -> None:
        self._fsync = fsync
        self._jobs: queue.SimpleQueue[tuple[int, int]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self.pending = 0  # jobs queued and not finished (aof_pending_bio_fsync)
        self.error: OSError | None = None  # last fsync failure, cleared by a success
        self.synced_seq = 0  # the write pass the last successful fsync covered
        # Called from the worker thread after each successful fsync (the owner makes it wake
        # the event loop).
        self.on_synced: Callable[[], None] = lambda: None
        self._lock = threading.Lock()

    def _ensure(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="aof-fsync", daemon=True)
            self._thread.start()

    def fsync(self, fd: int, seq: int = 0) -> None:
        """Queue an fsync of fd, which holds the write passes up to seq."""
        with self._lock:
            self.pending += 1
        self._ensure()
        self._jobs.put((fd, seq))

    def _run(self) -> None:
        while True:
            fd, seq = self._jobs.get()
            try:
                self._fsync(fd)
                self.error = None
                if seq > self.synced_seq:
                    self.synced_seq = seq
                    self.on_synced()
            except OSError as exc:
                if exc.errno != errno.EBADF:
                    self.error = exc
            finally:
                with self._lock:
                    self.pending -= 1

    def drain(self, timeout: float = 30.0) -> None:
        """Wait until every queued job ran (shutdown, switching to `always`)."""
        deadline = time.monotonic() + timeout
        while self.pending and time.monotonic() < deadline:
            time.sleep(0.001)


class AofWriter:
    """The open incremental file and its buffer. Not thread-safe: the event loop owns it; only
    fdatasync calls run in the worker thread."""

    def __init__(self, policy: str = "everysec", fsync: FsyncFn | None = None) -> None:
        self.policy = policy
        self.fsync_fn = fsync or _fsync_default
        self.worker = FsyncWorker(self.fsync_fn)
        self.fd = -1
        self.path = ""
        self.buf = bytearray()
        self.selected_db = -1
        self.file_size = 0  # bytes of complete commands in the current file
        self.other_size = 0  # bytes in the base and older incr files (aof_current_size)
        self.unsynced = False  # written since the last fsync
        self.last_fsync = time.monotonic()
        self.write_error: OSError | None = None
        self.fsync_error: OSError | None = None  # an `always` fsync that failed
        self.delayed_fsync = 0
        self.write_seq = 0  # write passes that wrote something
        self._synced_seq = 0  # the last of them fsynced here (the worker keeps its own)
        self.fresh = False  # commands were added since the owner last cleared this
        self.inject_errno = 0  # test hook (DEBUG AOF-WRITE-ERROR): writes fail with this errno
        # MULTI/EXEC: commands of a transaction are collected and written as one unit.
        # Set by the owner: called when the buffer goes from empty to non-empty.
        self.on_data: Callable[[], None] = lambda: None
        # Set by the owner: told how long each write ("write") and `always` fsync ("fsync")
        # took, in milliseconds (the latency monitor's AOF events).
        self.on_latency: Callable[[str, int], None] = lambda what, ms: None

    # -- files --------------------------------------------------------------------------------
    @property
    def is_open(self) -> bool:
        return self.fd >= 0

    def open(self, path: str, other_size: int = 0, fd: int | None = None,
             truncate: bool = False) -> None:
        """Append to path (or the already open fd for it) from now on, creating it; the
        previous file is fsynced and closed."""
        if fd is None:
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | (os.O_TRUNC if truncate else 0)
            fd = os.open(path, flags, 0o644)
        self.retire()
        self.fd = fd
        self.path = path
        self.file_size = os.fstat(fd).st_size
        self.other_size = other_size
        self.selected_db = -1

    def retire(self) -> None:
        """Fsync and close the current file synchronously (switching files, turning off)."""
        if self.fd < 0:
            return
        fd, self.fd = self.fd, -1
        self.worker.drain()  # no queued fsync may run on a closed (maybe reused) descriptor
        if self.unsynced:
            try:
                self.fsync_fn(fd)
                self._synced_seq = self.write_seq
            except OSError:
                pass
        os.close(fd)
        self.unsynced = False

    @property
    def synced_seq(self) -> int:
        """The last write pass known to be on disk."""
        return max(self._synced_seq, self.worker.synced_seq)

    @property
    def current_size(self) -> int:
        return self.other_size + self.file_size

    # -- feeding ------------------------------------------------------------------------------
    def feed(self, db: int, argv: list[bytes]) -> None:
        # (this runs for every write command)
        buf = self.buf
        if not buf:
            self.on_data()
        if db != self.selected_db:
            buf += encode_command([b"SELECT", str(db).encode()])
            self.selected_db = db
        buf += encode_command(argv)
        self.fresh = True

    def feed_run(self, db: int, argvs: list[list[bytes]]) -> None:
        """feed() of each argv in turn (Server.propagate_run): the first one through feed(),
        which wakes the write pass and selects the database, the rest encoded in one go."""
        self.feed(db, argvs[0])
        self.buf += encode_commands(argvs[1:])

    def reset_selected_db(self) -> None:
        self.selected_db = -1

    # -- writing ------------------------------------------------------------------------------
    def flush(self, force_fsync: bool = False) -> bool:
        """Write the buffer (and fsync it with `always` or force_fsync). True when everything
        written so far is where the policy promises it is; False after an error."""
        if self.fd < 0:
            return True
        if self.buf:
            if not self._write_buffer():
                return False
            self.unsynced = True
        if self.unsynced and (force_fsync or self.policy == "always"):
            started = time.perf_counter()
            try:
                self.fsync_fn(self.fd)
            except OSError as exc:
                self.fsync_error = exc
                return False
            if self.policy == "always":
                self.on_latency("fsync", int((time.perf_counter() - started) * 1000))
            self.fsync_error = None
            self.unsynced = False
            self.last_fsync = time.monotonic()
            self._synced_seq = self.write_seq
        return True

    def _write_buffer(self) -> bool:
        buf = self.buf
        done = 0
        try:
            if self.inject_errno:
                raise OSError(self.inject_errno, os.strerror(self.inject_errno))
            started = time.perf_counter()
            done = os.write(self.fd, buf)
            while done < len(buf):  # rare for regular files: copy the rest
                done += os.write(self.fd, buf[done:])
            self.on_latency("write", int((time.perf_counter() - started) * 1000))
        except OSError as exc:
            if done:
                done = self._undo_partial(done)
            if done:
                del buf[:done]
            self.write_error = exc
            return False
        buf.clear()
        self.file_size += done
        self.write_seq += 1
        if self.write_error is not None:
            self.write_error = None
        return True

    def _undo_partial(self, done: int) -> int:
        """After a short write, cut the file back to its last complete command (as Redis does);
        when that fails too, keep what was written and drop it from the buffer instead."""
        try:
            os.ftruncate(self.fd, self.file_size)
            return 0
        except OSError:
            self.file_size += done
            return done

    def background_fsync(self) -> None:
        """everysec: called from the cron; an fsync at most once a second, in the worker."""
        if self.policy != "everysec" or self.fd < 0:
            return
        if not self.unsynced and self.worker.error is None:  # a failed fsync is retried
            return
        now = time.monotonic()
        if now - self.last_fsync < 1.0:
            return
        if self.worker.pending:
            self.delayed_fsync += 1  # the previous one is still running: try again next tick
            return
        self.worker.fsync(self.fd, self.write_seq)
        self.unsynced = False
        self.last_fsync = now

    @property
    def error(self) -> OSError | None:
        """The error that makes write commands fail (MISCONF), or None."""
        return self.write_error or self.fsync_error or self.worker.error

    def shutdown(self) -> None:
        """Write and fsync everything, stop using the file (SHUTDOWN, appendonly no)."""
        self.flush(force_fsync=True)
        self.worker.drain()
        self.retire()
