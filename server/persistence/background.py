"""Background children and when they run: BGSAVE and BGREWRITEAOF (with what finishing or
failing them changes), SAVE, the save rules and automatic AOF rewrites the cron starts, and
the snapshot and rewrite statistics INFO persistence shows.

The Persistence manager owns one BackgroundJobs (`persistence.jobs`) and delegates to it; the
fork and reap mechanics are in fork.py, the files the children write in rdb_writer.py and
rewrite.py.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from server.cold_tier import SnapshotRefs, cold_refs_of
from server.persistence.fork import Child, spawn
from server.persistence.rdb_writer import save_rdb, temp_name
from server.persistence.rewrite import write_base_file
from server.scripting.functions import libraries_of

if TYPE_CHECKING:
    from server.persistence.manager import Persistence

# The AOF's states (Persistence.aof_state): here, as a rewrite's outcome depends on them.
OFF, ON, WAIT_REWRITE = "off", "on", "wait_rewrite"

BGSAVE_RETRY_DELAY = 5.0  # seconds between save-rule retries after a failed BGSAVE
REWRITE_RETRY_DELAY = 60.0  # seconds before an automatic rewrite is retried after a failure


class PersistenceError(Exception):
    """A persistence command refused; str() is the reply text."""


class BackgroundJobs:
    def __init__(self, p: Persistence) -> None:
        self.p = p
        self.server = p.server
        self.config = p.config
        self.log = p.log
        self.child: Child | None = None
        self.child_killed = False
        # The cold segments the child's file refers to (pinned until it is in place).
        self.child_refs: SnapshotRefs | None = None
        self.rewrite_scheduled = False
        self.bgsave_scheduled = False
        # Told whether the BGSAVE under way succeeded, once it ends (replication sends the
        # file to the replicas that waited for it).
        self.bgsave_listeners: list[Callable[[bool], None]] = []
        # snapshot statistics
        self.lastsave = int(time.time())
        self.last_bgsave_try = 0.0
        self.last_bgsave_secs = -1
        self.rdb_saves = 0
        self.dirty_before_bgsave = 0
        # rewrite statistics
        self.rewrites = 0
        self.rewrite_failures = 0  # consecutive
        self.last_rewrite_ok = True
        self.last_rewrite_secs = -1
        self.last_rewrite_fail_time = 0.0
        self.rewrite_base_size = 0

    # -- cron ---------------------------------------------------------------------------------
    def start_due(self) -> None:
        """The cron's part, once no child runs: a scheduled rewrite, then a scheduled or due
        BGSAVE, then an automatic rewrite when the AOF has grown enough."""
        if self.child is not None:
            return
        if self.rewrite_scheduled:
            self._try(self.start_rewrite)
        elif self.bgsave_scheduled or self._save_rule_due():
            self._try(self.start_bgsave)
        elif self._auto_rewrite_due():
            self.log.notice(f"Starting automatic rewriting of AOF on "
                            f"{self._growth()}% growth")
            self._try(self.start_rewrite)

    def _try(self, start: Any) -> None:
        try:
            start()
        except PersistenceError as exc:
            self.log.warning(str(exc))

    def _save_rule_due(self) -> bool:
        dirty = self.server.dirty
        if not dirty:
            return False
        now = time.time()
        if (not self.p.last_bgsave_ok
                and time.monotonic() - self.last_bgsave_try < BGSAVE_RETRY_DELAY):
            return False
        for seconds, changes in self.config["save"]:
            if dirty >= changes and now - self.lastsave > seconds:
                self.log.notice(f"{changes} changes in {seconds} seconds. Saving...")
                return True
        return False

    def _growth(self) -> int:
        base = self.rewrite_base_size or 1
        return (self.p.writer.current_size - base) * 100 // base

    def _auto_rewrite_due(self) -> bool:
        config = self.config
        if self.p.aof_state != ON or not config["auto-aof-rewrite-percentage"]:
            return False
        if self.p.writer.current_size < config["auto-aof-rewrite-min-size"]:
            return False
        if (not self.last_rewrite_ok
                and time.monotonic() - self.last_rewrite_fail_time < REWRITE_RETRY_DELAY):
            return False
        return self._growth() >= config["auto-aof-rewrite-percentage"]

    # -- children -----------------------------------------------------------------------------
    def listen_fds(self) -> list[int]:
        """The listening sockets, which a child closes (it must not hold the port)."""
        fds = []
        for listener in self.server.listeners:
            for sock in listener.sockets or ():
                fds.append(sock.fileno())
        return fds

    def _key_delay(self) -> Any:
        delay_us = self.config["rdb-key-save-delay"]
        if delay_us <= 0:
            return None
        return lambda: time.sleep(delay_us / 1_000_000)

    def start_rewrite(self) -> str:
        """BGREWRITEAOF: 'started' or 'scheduled'; raises PersistenceError."""
        p = self.p
        if self.child is not None and self.child.kind == "aof":
            raise PersistenceError(
                "ERR Background append only file rewriting already in progress")
        # (not while an EXEC or a script runs: its effects go out when it ends, after the
        # child took its image, and would be applied twice)
        if self.child is not None or p.server.propagate_batch is not None:
            self.rewrite_scheduled = True
            return "scheduled"
        self.rewrite_scheduled = False
        writer = p.writer
        files = p.files
        if p.aof_state == ON:
            if not writer.flush(force_fsync=True):
                self._rewrite_failed()  # the automatic rewrite waits before trying again
                raise PersistenceError(
                    f"ERR Can't rewrite the append only file now: "
                    f"{os.strerror(writer.error.errno or 5) if writer.error else 'write error'}")
            try:
                fd, path = files.create_incr()
            except OSError as exc:
                self._rewrite_failed()
                raise PersistenceError(f"ERR Can't open a new AOF incr file: {exc.strerror}") \
                    from None
            writer.open(path, files.sizes_except_last(), fd=fd)
        elif p.aof_state == WAIT_REWRITE:
            files.ensure_dir()
            writer.buf.clear()  # whatever came before the fork is in the child's image
            writer.open(files.temp_incr_path(), 0, truncate=True)
            p.feeding = True
        else:
            files.ensure_dir()
        use_rdb = self.config["aof-use-rdb-preamble"]
        dbs = self.server.dbs
        libraries = libraries_of(self.server)
        per_key = self._key_delay()
        aof_dir = files.dir
        refs = self.server.cold_tier.snapshot_refs("aof", refers=use_rdb)
        cold_refs = cold_refs_of(refs)

        def work() -> None:
            write_base_file(os.path.join(aof_dir, f"temp-rewriteaof-bg-{os.getpid()}.aof"),
                            dbs, use_rdb, per_key, libraries, cold_refs)

        try:
            self.child = spawn("aof", work, self._rewrite_done, self.server.loop,
                               self.listen_fds(), self.log)
            self.server.stats.note_fork(self.child.fork_usec, self.server.latency)
            self.child_refs = refs
        except OSError as exc:
            if refs is not None:
                refs.done(False)
            self._rewrite_failed()
            raise PersistenceError(f"ERR Can't rewrite append only file in background: fork: "
                                   f"{exc.strerror}") from None
        self.child_killed = False
        self.log.notice(f"Background append only file rewriting started by pid "
                        f"{self.child.pid}")
        return "started"

    def _rewrite_done(self, code: int) -> None:
        refs, self.child_refs = self.child_refs, None
        installed = False
        try:
            installed = self._install_rewrite(code)
        finally:
            if refs is not None:
                refs.done(installed)

    def _install_rewrite(self, code: int) -> bool:
        p = self.p
        child = self.child
        assert child is not None
        self.child = None
        temp = p.files.temp_rewrite_path(child.pid)
        if code != 0:
            unlink_quietly(temp)
            if not self.child_killed:
                self.log.warning(f"Background AOF rewrite terminated with "
                                 f"{'error' if code > 0 else f'signal {-code}'}")
                self._rewrite_failed()
            return False
        try:
            if p.files.manifest is None and p.files.exists():
                p.files.load()
            first = p.aof_state == WAIT_REWRITE
            temp_incr = p.files.temp_incr_path() if first else None
            if first:
                p.writer.flush()
            # With the AOF off the base is the whole state: older incr files are history.
            base, incr_path = p.files.install_base(temp, temp_incr,
                                                   keep_incr=p.aof_state != OFF)
        except (OSError, ValueError) as exc:
            unlink_quietly(temp)
            self.log.warning(f"Error installing the rewritten AOF: {exc}")
            self._rewrite_failed()
            return False
        if first:
            p.writer.path = incr_path
            p.aof_state = ON
            self.log.notice("Background AOF rewrite finished successfully; AOF is on")
        if p.aof_state == ON:
            p.writer.other_size = p.files.size_of(base)
            self.rewrite_base_size = p.writer.current_size
        self.rewrites += 1
        self.rewrite_failures = 0
        self.last_rewrite_ok = True
        self.last_rewrite_secs = int(child.elapsed)
        self.log.notice("Background AOF rewrite finished successfully")
        return True

    def _rewrite_failed(self) -> None:
        p = self.p
        self.last_rewrite_ok = False
        self.rewrite_failures += 1
        self.last_rewrite_fail_time = time.monotonic()
        if p.aof_state == WAIT_REWRITE:
            # The temp incr only makes sense with its base: stop feeding until the retry.
            p.feeding = False
            p.writer.buf.clear()
            p.writer.retire()
            self.rewrite_scheduled = True

    def start_bgsave(self, schedule: bool = False, portable: bool = False) -> str:
        """BGSAVE: 'started' or 'scheduled'; raises PersistenceError. `portable`: the file
        carries cold nodes' bytes instead of referring to them (it is sent to a replica)."""
        if self.child is not None:
            if self.child.kind == "rdb":
                raise PersistenceError("ERR Background save already in progress")
            if not schedule:
                raise PersistenceError(
                    "ERR Another child process is active (AOF?): can't BGSAVE right now. Use "
                    "BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.")
            self.bgsave_scheduled = True
            return "scheduled"
        self.bgsave_scheduled = False
        path = os.path.abspath(self.config["dbfilename"])
        dbs = self.server.dbs
        libraries = libraries_of(self.server)
        per_key = self._key_delay()
        self.dirty_before_bgsave = self.server.dirty
        self.last_bgsave_try = time.monotonic()
        refs = self.server.cold_tier.snapshot_refs("rdb", refers=not portable)
        cold_refs = cold_refs_of(refs)
        try:
            self.child = spawn("rdb", lambda: save_rdb(path, dbs, libraries, per_key=per_key,
                                                       cold_refs=cold_refs),
                               self._bgsave_done, self.server.loop, self.listen_fds(),
                               self.log)
            self.server.stats.note_fork(self.child.fork_usec, self.server.latency)
            self.child_refs = refs
        except OSError as exc:
            if refs is not None:
                refs.done(False)
            self.p.last_bgsave_ok = False
            raise PersistenceError(f"ERR Can't save in background: fork: {exc.strerror}") \
                from None
        self.child_killed = False
        self.log.notice(f"Background saving started by pid {self.child.pid}")
        return "started"

    def _bgsave_done(self, code: int) -> None:
        child = self.child
        assert child is not None
        self.child = None
        refs, self.child_refs = self.child_refs, None
        if refs is not None:
            refs.done(code == 0)
        self.last_bgsave_secs = int(child.elapsed)
        listeners, self.bgsave_listeners = self.bgsave_listeners, []
        for listener in listeners:  # (a full resynchronization waits for this file)
            listener(code == 0)
        if code == 0:
            self.lastsave = int(time.time())
            self.server.dirty = max(0, self.server.dirty - self.dirty_before_bgsave)
            self.p.last_bgsave_ok = True
            self.rdb_saves += 1
            self.log.notice("Background saving terminated with success")
            return
        unlink_quietly(os.path.join(os.path.dirname(os.path.abspath(self.config["dbfilename"])),
                                    temp_name(child.pid)))
        if self.child_killed:
            return
        self.p.last_bgsave_ok = False
        how = "error" if code > 0 else f"terminated by signal {-code}"
        self.log.warning(f"Background saving {how}")

    def kill_child(self) -> None:
        if self.child is not None:
            self.child_killed = True
            self.log.notice(f"Killing running {self.child.kind} child: {self.child.pid}")
            self.child.kill()

    def save(self, counted: bool = True) -> None:
        """SAVE: a snapshot written synchronously; raises OSError or PersistenceError.
        `counted`: whether INFO's rdb_saves counts it (FLUSHALL's save is not counted)."""
        if self.child is not None and self.child.kind == "rdb":
            raise PersistenceError("ERR Background save already in progress")
        refs = self.server.cold_tier.snapshot_refs("rdb")
        ok = False
        try:
            save_rdb(os.path.abspath(self.config["dbfilename"]), self.server.dbs,
                     libraries_of(self.server), cold_refs=cold_refs_of(refs))
            ok = True
        finally:
            if refs is not None:
                refs.done(ok)
        self.lastsave = int(time.time())
        self.server.dirty = 0
        self.p.last_bgsave_ok = True
        if counted:
            self.rdb_saves += 1
        self.log.notice("DB saved on disk")


def unlink_quietly(path: str) -> None:
    """Remove path if it is there (a leftover temp file): errors are ignored."""
    try:
        os.unlink(path)
    except OSError:
        pass
