"""Persistence wired into the server: loading at start, the AOF feed and its before-sleep write
pass, MISCONF refusals, turning the AOF on and off, INFO persistence and the shutdown path.
Background children (BGSAVE, BGREWRITEAOF, SAVE) and the save rules and automatic rewrites the
cron starts are in background.py (BackgroundJobs, `persistence.jobs`), loading in loader.py.

`attach(server)` creates it; Server.serve() calls load() before listening.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocol.encoder import OK
from server.errors import CommandError
from server.parsing import parse_int
from server.persistence.aof import AofWriter
from server.persistence.aof_files import AofFiles
from server.persistence.aof_wait import AofWaiters
from server.persistence.background import (
    OFF,
    ON,
    WAIT_REWRITE,
    BackgroundJobs,
    PersistenceError,
    unlink_quietly,
)
from server.persistence.loader import Loader
from server.persistence_errors import StartupError
from server.shutdown_flags import FORCE, NOSAVE, SAVE

if TYPE_CHECKING:
    from server.app import Server
    from server.client import Client
    from server.dispatch import CommandSpec

# OFF, ON, WAIT_REWRITE and PersistenceError are imported from this module by other code; they
# are defined in background.py, which needs them too (imports go manager -> background only).

RDB_MISCONF = (
    "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to "
    "disk. Commands that may modify the data set are disabled, because this instance is "
    "configured to report errors during writes if RDB snapshotting fails "
    "(stop-writes-on-bgsave-error option). Please check the Redis logs for details about the "
    "RDB error.")


def _make_feed(p: Persistence) -> Callable[[int, list[bytes]], None]:
    """The propagate hook: the command goes to the AOF writer (not while loading the files).
    A plain function, as it runs for every write command: an object's __call__ costs twice a
    function call."""

    def feed(db: int, argv: list[bytes]) -> None:
        if not p.server.loading:
            p.writer.feed(db, argv)

    def feed_run(db: int, argvs: list[list[bytes]]) -> None:
        if not p.server.loading:
            p.writer.feed_run(db, argvs)

    feed.run = feed_run  # type: ignore[attr-defined]  # (Server.propagate_run)
    return feed


def _register(hooks: list[Any], hook: Any, on: bool) -> None:
    """Put hook in the list or take it out."""
    if on and hook not in hooks:
        hooks.append(hook)
    elif not on and hook in hooks:
        hooks.remove(hook)


class Persistence:
    def __init__(self, server: Server) -> None:
        self.server = server
        config = server.config
        self.config = config
        self.log = server.log
        self.writer = AofWriter(config["appendfsync"])
        self.writer.on_latency = self._aof_latency
        self.writer.on_data = self._on_aof_data
        self.writer.worker.on_synced = self._on_synced
        self.aof_waiters = AofWaiters(self)
        self.files = AofFiles(config["appenddirname"], config["appendfilename"])
        self.loader = Loader(self)
        self._aof_state = OFF
        self._last_bgsave_ok = True
        self._feed = _make_feed(self)
        self._feeding = False
        self.jobs = BackgroundJobs(self)  # children, save rules, their statistics
        # appendfsync always: replies held back while the AOF cannot be written
        self.held: list[Client] = []
        self.batch_writers: set[Client] = set()  # ran a write command since the last pass
        self._last_error_log = 0.0
        self._reported_error = False
        self.keys_loaded = 0
        self.keys_expired = 0

        server.persistence = self
        server.before_sleep_hooks.append(self.before_sleep)
        server.cron_hooks.append(self.cron)
        # (first: a failed final save stops the shutdown before any other hook acts)
        server.shutdown_hooks.insert(0, self.on_shutdown)
        server.debug_handlers["reload"] = self.loader.debug_reload
        server.debug_handlers["loadaof"] = self.loader.debug_loadaof
        server.debug_handlers["aof-write-error"] = self._debug_write_error
        config.on_change("appendonly", self._set_appendonly)
        config.on_change("appendfsync", self._set_appendfsync)
        config.on_change("dir", self._set_dir)

    # The hooks are registered only while they have work, since they run for every write:
    # the AOF feed while commands go to the AOF, the MISCONF check while a refusal is possible
    # (or a write must be noted for appendfsync always). Three states decide: the setters
    # below keep the registrations in step.
    @property
    def feeding(self) -> bool:
        """Commands go to the AOF buffer (AOF on, or a first rewrite running)."""
        return self._feeding

    @feeding.setter
    def feeding(self, on: bool) -> None:
        self._feeding = on
        _register(self.server.propagate_hooks, self._feed, on)
        self._arm_refusal()

    @property
    def aof_on(self) -> bool:
        return self._aof_state == ON

    @property
    def aof_state(self) -> str:
        return self._aof_state

    @aof_state.setter
    def aof_state(self, state: str) -> None:
        self._aof_state = state
        self._arm_refusal()

    @property
    def last_bgsave_ok(self) -> bool:
        return self._last_bgsave_ok

    @last_bgsave_ok.setter
    def last_bgsave_ok(self, ok: bool) -> None:
        self._last_bgsave_ok = ok
        self._arm_refusal()

    def _arm_refusal(self) -> None:
        armed = self._feeding or self._aof_state != OFF or not self._last_bgsave_ok
        _register(self.server.refusal_checks, self.refuse, armed)

    # -- start --------------------------------------------------------------------------------
    def load(self) -> None:
        """Load the AOF (or the snapshot when there is no AOF) before the server listens;
        raise StartupError with a clear message when the files are damaged."""
        start = time.monotonic()
        try:
            self.loader.load_at_start()
        except StartupError:
            raise
        except OSError as exc:
            raise StartupError(f"Fatal error loading the data: {exc}") from None
        self.server.dirty = 0
        self.jobs.lastsave = int(time.time())
        self.log.verbose(f"Persistence ready in {time.monotonic() - start:.3f} seconds")

    def open_aof(self) -> None:
        """AOF on at start: append to the newest incr file (one is created when needed)."""
        files = self.files
        files.ensure_dir()
        if files.manifest is None or not files.manifest.incrs:
            fd, path = files.create_incr()
            os.close(fd)
            self.log.notice(f"Creating AOF incr file {os.path.basename(path)} on server start")
        man = files.manifest
        assert man is not None
        self.writer.open(files.path(man.incrs[-1].name), files.sizes_except_last())
        self.jobs.rewrite_base_size = self.writer.current_size
        self.aof_state = ON
        self.feeding = True

    # -- the write pass -----------------------------------------------------------------------
    def _on_aof_data(self) -> None:
        if self.server.loop is not None:
            self.server.schedule_before_sleep()

    def before_sleep(self) -> None:
        writer = self.writer
        if writer.fd < 0:  # (writer.is_open without the property call: every loop pass)
            return
        fresh = writer.fresh
        writer.fresh = False
        writers = self.batch_writers
        if writers:
            self.batch_writers = set()
        ok = True
        if writer.buf or writer.unsynced or writer.error is not None:
            ok = writer.flush()
        # WAITAOF: the pass that carried these clients' writes (the next one if this failed).
        seq = writer.write_seq if ok else writer.write_seq + 1
        for client in writers:
            client.aof_woff = seq
        if not ok:
            self._write_failed(writers if fresh else set())
            return
        if writer.write_error is None and writer.fsync_error is None:
            self._write_recovered()
        self.aof_waiters.progress()

    def _aof_latency(self, what: str, ms: int) -> None:
        """The latency monitor's AOF events, named as in Redis's flushAppendOnlyFile."""
        monitor = self.server.latency
        if what == "fsync":
            monitor.add_if_needed("aof-fsync-always", ms)
            return
        if self.writer.worker.pending:
            event = "aof-write-pending-fsync"
        elif self.jobs.child is not None:
            event = "aof-write-active-child"
        else:
            event = "aof-write-alone"
        monitor.add_if_needed(event, ms)
        monitor.add_if_needed("aof-write", ms)

    def _on_synced(self) -> None:
        """From the fsync worker thread: WAITAOF clients may be answered now."""
        loop = self.server.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.aof_waiters.progress)

    def _write_failed(self, writers: set[Client]) -> None:
        writer = self.writer
        server = self.server
        if writer.policy == "always" and writers:
            # The writes of this batch are not on disk: their clients get no reply until they
            # are (never a lie). Readers are answered; later writes get MISCONF.
            pending = server.pending_writes
            self.held.extend(c for c in pending if c in writers)
            server.pending_writes = [c for c in pending if c not in writers]
        now = time.monotonic()
        if now - self._last_error_log > 30 or not self._reported_error:
            err = writer.error
            self.log.warning(f"Error writing to the AOF file: {err.strerror if err else '?'}")
            self._last_error_log = now
        self._reported_error = True

    def _write_recovered(self) -> None:
        if self._reported_error:
            self.log.warning("AOF write error looks solved, Redis can write again.")
            self._reported_error = False
        if self.held:
            held, self.held = self.held, []
            self.server.pending_writes.extend(c for c in held if not c.closed)

    # -- refusals -----------------------------------------------------------------------------
    def misconf(self) -> str | None:
        if self.last_bgsave_ok and self.writer.error is None:
            return None  # the usual answer, checked first: this runs for every write
        config = self.config
        if config["stop-writes-on-bgsave-error"] and config["save"] and not self.last_bgsave_ok:
            return RDB_MISCONF
        if self.aof_state != OFF:
            err = self.writer.error
            if err is not None:
                return f"MISCONF Errors writing to the AOF file: {os.strerror(err.errno or 5)}"
        return None

    def refuse(self, client: Client, spec: CommandSpec) -> str | None:
        if not spec.is_write or self.server.loading:
            return None
        if self._last_bgsave_ok and self.writer.error is None:  # misconf() is None, inlined
            if self._feeding:
                self.batch_writers.add(client)
            return None
        reason = self.misconf()
        if reason is None and self.feeding:
            self.batch_writers.add(client)  # its reply waits if this batch can't be written
        return reason

    # -- cron ---------------------------------------------------------------------------------
    def cron(self) -> None:
        jobs = self.jobs
        child = jobs.child
        if child is not None:
            child.poll()
        writer = self.writer
        if writer.is_open:
            writer.background_fsync()
            if writer.error is not None or self.held:
                self.server.schedule_before_sleep()  # retry the write (Redis: every cron)
        jobs.start_due()

    # -- the commands' entry points (the work is in BackgroundJobs) ---------------------------
    @property
    def lastsave(self) -> int:
        """LASTSAVE: the Unix time of the last successful save (or of the load at start)."""
        return self.jobs.lastsave

    def start_rewrite(self) -> str:
        """BGREWRITEAOF: 'started' or 'scheduled'; raises PersistenceError."""
        return self.jobs.start_rewrite()

    def start_bgsave(self, schedule: bool = False) -> str:
        """BGSAVE: 'started' or 'scheduled'; raises PersistenceError."""
        return self.jobs.start_bgsave(schedule)

    def save(self) -> None:
        """SAVE: a snapshot written synchronously; raises OSError or PersistenceError."""
        self.jobs.save()

    def after_flushall(self) -> None:
        """FLUSHALL's part (flushAllDataAndResetRDB): a BGSAVE under way would write the keys
        just removed, so it is stopped; with save rules the empty dataset is saved at once,
        so that no restart brings them back. A failed save is logged; FLUSHALL still holds."""
        jobs = self.jobs
        if jobs.child is not None and jobs.child.kind == "rdb":
            jobs.kill_child()
        if self.config["save"]:
            try:
                jobs.save(counted=False)
            except (OSError, PersistenceError) as exc:
                self.log.warning(f"Error saving the snapshot after FLUSHALL: {exc}")

    def _debug_write_error(self, client: Client, argv: list[bytes]) -> object:
        """DEBUG AOF-WRITE-ERROR <errno>: make AOF writes fail with errno (0 stops it), to test
        the MISCONF path without filling a disk."""
        if len(argv) != 3:
            raise CommandError("ERR wrong number of arguments for 'debug|aof-write-error'")
        self.writer.inject_errno = max(0, parse_int(argv[2]))
        return OK

    def after_replica_load(self) -> None:
        """A replica loaded its primary's RDB (restartAOFAfterSYNC): the AOF starts again
        from a rewrite of the new data, its old files being of the old data."""
        if self.aof_state != OFF:
            self._set_appendonly(False)
            self._set_appendonly(True)

    # -- configuration ------------------------------------------------------------------------
    def _set_appendonly(self, value: bool) -> None:
        if value and self.aof_state == OFF:
            self.files = AofFiles(self.config["appenddirname"], self.config["appendfilename"])
            self.files.ensure_dir()
            self.files.discard()  # stale: the new AOF starts from a base of the current data
            self.aof_state = WAIT_REWRITE
            self.log.notice("AOF enabled, background rewrite of the initial AOF scheduled")
            jobs = self.jobs
            try:
                jobs.start_rewrite()
            except PersistenceError as exc:
                self.log.warning(str(exc))
                jobs.rewrite_scheduled = True
        elif not value and self.aof_state != OFF:
            jobs = self.jobs
            if jobs.child is not None and jobs.child.kind == "aof":
                jobs.kill_child()
                jobs.rewrite_scheduled = False
            if self.aof_state == ON:
                self.writer.shutdown()
            else:
                self.writer.buf.clear()
                self.writer.retire()
                unlink_quietly(self.files.temp_incr_path())
            self.aof_state = OFF
            self.feeding = False
            self._release_all()
            self.aof_waiters.aof_turned_off()
            self.log.notice("AOF disabled")

    def _set_appendfsync(self, value: str) -> None:
        self.writer.policy = value
        if value == "always" and self.writer.is_open:
            self.writer.flush(force_fsync=True)

    def _set_dir(self, value: str) -> None:
        os.chdir(value)

    def _release_all(self) -> None:
        if self.held:
            self.server.pending_writes.extend(c for c in self.held if not c.closed)
            self.held = []
            self.server.schedule_before_sleep()

    # -- shutdown -----------------------------------------------------------------------------
    def on_shutdown(self, flags: int) -> bool:
        """finishShutdown's persistence part: children killed, the AOF flushed and fsynced
        (or, before its first rewrite ended, written whole), then the final snapshot when
        there are save rules and no NOSAVE, or with SAVE. False when the data could not be
        made safe and FORCE was not given: the server must go on (its AOF still open)."""
        force = flags & FORCE
        self.jobs.kill_child()
        if self.aof_state == ON:
            self.writer.flush(force_fsync=True)
            self.writer.worker.drain()
            if self.writer.error is not None:
                self.log.warning("Error flushing the AOF at shutdown: "
                                 f"{os.strerror(self.writer.error.errno or 5)}")
        elif self.aof_state == WAIT_REWRITE:
            self.writer.buf.clear()
            self.writer.retire()
            try:
                self.loader.write_initial_aof()
            except OSError as exc:
                self.log.warning(f"Error writing the initial AOF at shutdown: {exc}")
                if not force:
                    self.log.warning("Writing initial AOF, can't exit.")
                    self.feeding = False  # (as after a failed rewrite: a new one is due)
                    self.jobs.rewrite_scheduled = True
                    return False
                self.log.warning("Writing initial AOF. Exit anyway.")
        if (self.config["save"] and not flags & NOSAVE) or flags & SAVE:
            self.log.notice("Saving the final snapshot before exiting.")
            try:
                self.jobs.save()
            except (OSError, PersistenceError) as exc:
                self.log.warning(f"Error saving the final snapshot: {exc}")
                if not force:
                    self.log.warning("Error trying to save the DB, can't exit.")
                    return False
                self.log.warning("Error trying to save the DB. Exit anyway.")
        if self.aof_state == ON:
            self.writer.shutdown()
        return True

    # -- INFO ---------------------------------------------------------------------------------
    def info_fields(self) -> list[tuple[str, object]]:
        jobs = self.jobs
        child = jobs.child
        rdb_child = child is not None and child.kind == "rdb"
        aof_child = child is not None and child.kind == "aof"
        writer = self.writer
        fields: list[tuple[str, object]] = [
            ("loading", int(self.server.loading)), ("async_loading", 0),
            ("current_cow_peak", 0), ("current_cow_size", 0), ("current_cow_size_age", 0),
            ("current_fork_perc", "0.00"), ("current_save_keys_processed", 0),
            ("current_save_keys_total", 0),
            ("rdb_changes_since_last_save", self.server.dirty),
            ("rdb_bgsave_in_progress", int(rdb_child)),
            ("rdb_last_save_time", jobs.lastsave),
            ("rdb_last_bgsave_status", "ok" if self.last_bgsave_ok else "err"),
            ("rdb_last_bgsave_time_sec", jobs.last_bgsave_secs),
            ("rdb_current_bgsave_time_sec", int(child.elapsed) if rdb_child else -1),
            ("rdb_saves", jobs.rdb_saves), ("rdb_last_cow_size", 0),
            ("rdb_last_load_keys_expired", self.keys_expired),
            ("rdb_last_load_keys_loaded", self.keys_loaded),
            ("aof_enabled", int(self.aof_state != OFF)),
            ("aof_rewrite_in_progress", int(aof_child)),
            ("aof_rewrite_scheduled", int(jobs.rewrite_scheduled)),
            ("aof_last_rewrite_time_sec", jobs.last_rewrite_secs),
            ("aof_current_rewrite_time_sec", int(child.elapsed) if aof_child else -1),
            ("aof_last_bgrewrite_status", "ok" if jobs.last_rewrite_ok else "err"),
            ("aof_rewrites", jobs.rewrites),
            ("aof_rewrites_consecutive_failures", jobs.rewrite_failures),
            ("aof_last_write_status", "ok" if writer.error is None else "err"),
            ("aof_last_cow_size", 0), ("module_fork_in_progress", 0),
            ("module_fork_last_cow_size", 0),
        ]
        if self.aof_state != OFF:
            fields += [
                ("aof_current_size", writer.current_size),
                ("aof_base_size", jobs.rewrite_base_size),
                ("aof_pending_rewrite", int(jobs.rewrite_scheduled)),
                ("aof_buffer_length", len(writer.buf)),
                ("aof_pending_bio_fsync", writer.worker.pending),
                ("aof_delayed_fsync", writer.delayed_fsync),
            ]
        return fields


def attach(server: Server) -> Persistence:
    """Create the persistence manager for server (it registers its own hooks)."""
    return Persistence(server)
