"""Loading data: the AOF (manifest, base, incr files) or the snapshot (dbfilename) at start,
DEBUG RELOAD and DEBUG LOADAOF. Whatever is loaded goes into the live databases only as a
whole: a failure restores what was there (and at start, stops the server with the file name,
the problem and its offset).

A snapshot or AOF base is read by its first bytes: "REDIS" an RDB file (rdb_reader), "XSNAP"
the old format (snapshot.py). When dbfilename is missing but the old default dump.xsnap is
in the directory, that is loaded (the next save writes dbfilename, as RDB).
"""

from __future__ import annotations

import gc
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from protocol.encoder import OK
from server.cold_tier import cold_refs_of
from server.errors import SYNTAX, CommandError
from server.persistence.aof_load import AofLoadError, replay_file
from server.persistence.background import PersistenceError
from server.persistence.dataset import LoadError, LoadResult
from server.persistence.manifest import BASE, Manifest, ManifestError
from server.persistence.rdb_reader import is_rdb, parse_rdb
from server.persistence.rewrite import write_base_file
from server.persistence.snapshot import is_snapshot, parse_snapshot
from server.persistence_errors import StartupError
from server.scripting import functions
from server.scripting.functions import libraries_of
from storage.keyspace import Database

if TYPE_CHECKING:
    from server.client import Client
    from server.log import Logger
    from server.persistence.manager import Persistence
    from storage.cold import ColdTier

LEGACY_SNAPSHOT = "dump.xsnap"  # the snapshot's name before the server wrote RDB files
_TEMP_SNAPSHOT = re.compile(r"temp-\d+\.(rdb|xsnap)")


class Loader:
    def __init__(self, p: Persistence) -> None:
        self.p = p

    # -- start --------------------------------------------------------------------------------
    def load_at_start(self) -> None:
        p = self.p
        files = p.files
        if not p.config["appendonly"]:
            self._start_snapshot()
            return
        if files.exists():
            try:
                man = files.load()
            except (ManifestError, OSError) as exc:
                raise StartupError(f"Fatal error reading the AOF manifest "
                                   f"{files.manifest_path}: {exc}") from None
            start = time.monotonic()
            try:
                commands = self.replay_manifest(man)
            except (AofLoadError, LoadError) as exc:
                raise StartupError(str(exc)) from None
            p.log.notice(f"DB loaded from append only file: {time.monotonic() - start:.3f} "
                         f"seconds ({commands} commands)")
            files.delete_history()
            for name in files.clean_orphans():
                p.log.notice(f"Removed leftover AOF file {name}")
        else:
            self._start_snapshot()
            self.write_initial_aof()
        p.open_aof()

    def _start_snapshot(self) -> None:
        log = self.p.log
        path = self.p.config["dbfilename"]
        self._remove_temp_snapshots(os.path.dirname(os.path.abspath(path)))
        if not os.path.exists(path):
            legacy = os.path.join(os.path.dirname(path), LEGACY_SNAPSHOT)
            if os.path.basename(path) == LEGACY_SNAPSHOT or not os.path.exists(legacy):
                return
            log.notice(f"{path} not found: loading the old snapshot {LEGACY_SNAPSHOT} (the next "
                       f"save writes {path} in RDB format)")
            path = legacy
        start = time.monotonic()
        try:
            self.load_snapshot(path)
        except (LoadError, OSError) as exc:
            raise StartupError(f"Fatal error loading the snapshot {path}: {exc}") from None
        log.notice(f"DB loaded from disk: {time.monotonic() - start:.3f} seconds")

    @staticmethod
    def _remove_temp_snapshots(directory: str) -> None:
        try:
            names = os.listdir(directory)
        except OSError:
            return
        for name in names:
            if _TEMP_SNAPSHOT.fullmatch(name):
                try:
                    os.unlink(os.path.join(directory, name))
                except OSError:
                    pass

    def write_initial_aof(self) -> None:
        """A base file of the current data and a manifest listing it (first start with the AOF
        on, or shutting down before the first background rewrite finished)."""
        p = self.p
        files = p.files
        files.ensure_dir()
        temp = files.path(f"temp-rewriteaof-{os.getpid()}.aof")
        use_rdb = p.config["aof-use-rdb-preamble"]
        refs = p.server.cold_tier.snapshot_refs("aof", refers=use_rdb)
        installed = False
        try:
            write_base_file(temp, p.server.dbs, use_rdb, libraries=libraries_of(p.server),
                            cold_refs=cold_refs_of(refs))
            base, _ = files.install_base(temp)
            installed = True
        finally:
            if refs is not None:
                refs.done(installed)
        p.log.notice(f"Creating AOF base file {base.name} on server start")

    # -- loading ------------------------------------------------------------------------------
    @contextmanager
    def _loading(self) -> Iterator[None]:
        """Load into emptied databases; on any failure put the previous contents back."""
        server = self.p.server
        saved = [(db.data, db.expires) for db in server.dbs]
        for db in server.dbs:
            db.data = {}
            db.expires = {}
        server.tracking.invalidate_all()  # (emptyData: caches of the old data are stale)
        server.loading = True  # no OOM/MISCONF refusals while replaying
        try:
            yield
        except BaseException:
            for db, (data, expires) in zip(server.dbs, saved, strict=True):
                db.data = data
                db.expires = expires
            raise
        finally:
            server.loading = False
        server.touch_all_watched()

    def replay_manifest(self, man: Manifest) -> int:
        """Replay base + incr files into the databases; returns the commands run."""
        p = self.p
        server = p.server
        to_load = man.files_to_load()
        commands = 0
        with self._loading():
            for i, f in enumerate(to_load):
                path = p.files.path(f.name)
                if not os.path.exists(path):
                    raise AofLoadError(f"The AOF file {f.name} doesn't exist (listed in "
                                       f"{p.files.manifest_path})")
                last = i == len(to_load) - 1
                start = 0
                if f.kind == BASE and _head(path) != b"":
                    try:
                        result = load_data_file(path, len(server.dbs), server.access,
                                                aof_base=True,
                                                cold=server.cold_tier.for_loading)
                    except LoadError as exc:
                        raise LoadError(f"Error loading the AOF base {f.name}: {exc}") from None
                    _install(server.dbs, result.dbs)
                    install_functions(server, result.libraries)
                    _log_origin(p.log, result)
                    start = result.end  # (Redis's RDB preamble: commands may follow it)
                    if start >= os.path.getsize(path):
                        continue
                res = replay_file(server, path, f.name, last, p.config["aof-load-truncated"],
                                  offset=start)
                commands += res.commands
                if res.failed:
                    p.log.warning(f"{res.failed} command(s) of {f.name} failed on replay")
        return commands

    def load_snapshot(self, path: str, flush: bool = True, merge: bool = False,
                      own: bool = True) -> None:
        """Load a snapshot in place of the data (or with `flush` False over it: a key or a
        library already there is an error, unless `merge` lets the file's replace it).
        `own` False: a file from elsewhere (a primary's), which may not refer to cold nodes."""
        p = self.p
        dbs = p.server.dbs
        with self._loading():
            result = load_data_file(path, len(dbs), p.server.access,
                                    cold=p.server.cold_tier.for_loading if own else None)
            _log_origin(p.log, result)
            if flush:
                _install(dbs, result.dbs)
                install_functions(p.server, result.libraries)
            else:
                _merge(dbs, result.dbs, merge)
                merge_functions(p.server, result.libraries, merge)
        p.keys_loaded = result.keys_loaded
        p.keys_expired = result.keys_expired

    # -- DEBUG --------------------------------------------------------------------------------
    def debug_reload(self, client: Client, argv: list[bytes]) -> object:
        """DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save the snapshot, empty the data (not
        with NOFLUSH), load it back (MERGE: what is there already is replaced)."""
        save = flush = True
        merge = False
        for opt in argv[2:]:
            low = opt.lower()
            if low == b"nosave":
                save = False
            elif low == b"noflush":
                flush = False
            elif low == b"merge":
                merge = True
            else:
                raise CommandError("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and "
                                   "NOSAVE options.")
        p = self.p
        path = p.config["dbfilename"]
        if save:
            try:
                p.save()
            except (OSError, PersistenceError) as exc:
                p.log.warning(f"DEBUG RELOAD: error saving the snapshot: {exc}")
                raise CommandError("ERR") from None
        try:
            self.load_snapshot(path, flush, merge)
        except (LoadError, OSError) as exc:
            p.log.warning(f"DEBUG RELOAD: error loading {path}: {exc}")
            raise CommandError(f"ERR Error trying to load the RDB dump {path}: {exc}") from None
        p.log.warning("DB reloaded by DEBUG RELOAD")
        return OK

    def debug_loadaof(self, client: Client, argv: list[bytes]) -> object:
        """DEBUG LOADAOF: write the AOF out, empty the data, replay the AOF."""
        p = self.p
        if len(argv) != 2:
            raise CommandError(SYNTAX)
        if p.aof_state == "on":
            p.writer.flush(force_fsync=True)
        if not p.files.exists():
            raise CommandError("ERR There is no AOF to load")
        try:
            self.replay_manifest(p.files.load())
        except (AofLoadError, LoadError, ManifestError, OSError) as exc:
            p.log.warning(f"DEBUG LOADAOF failed: {exc}")
            raise CommandError(f"ERR Error loading the AOF: {exc}") from None
        p.server.dirty = 0
        p.log.warning("Append Only File loaded by DEBUG LOADAOF")
        return OK


def install_functions(server: Any, libraries: list[bytes]) -> None:
    """The function libraries a snapshot held (a library that no longer loads is an error
    in the file, as for a bad record)."""
    try:
        functions.install(server, libraries)
    except CommandError as exc:
        raise LoadError(f"a function library failed to load: {exc.message}") from None


def merge_functions(server: Any, libraries: list[bytes], replace: bool) -> None:
    """The snapshot's libraries added to those loaded (DEBUG RELOAD NOFLUSH [MERGE])."""
    registry = functions.registry_of(server)
    for code in libraries:
        try:
            registry.load(code, replace=replace, timeout=False)
        except CommandError as exc:
            raise LoadError(f"a function library failed to load: {exc.message}") from None


def _merge(live: list[Database], loaded: list[Database], replace: bool) -> None:
    """The snapshot's keys added to the data: a key there already is an error, unless
    `replace` (checked for every key before any is added)."""
    if not replace:
        for db, new in zip(live, loaded, strict=True):
            for key in new.data:
                if key in db.data:
                    raise LoadError(f"duplicate key '{key.decode(errors='replace')}'")
    for db, new in zip(live, loaded, strict=True):
        for key, value in new.data.items():
            db.data[key] = value
            if key in new.expires:
                db.expires[key] = new.expires[key]
            else:
                db.expires.pop(key, None)


def _install(live: list[Database], loaded: list[Database]) -> None:
    for db, new in zip(live, loaded, strict=True):
        db.data = new.data
        db.expires = new.expires


def _head(path: str) -> bytes:
    """The format a base file starts with: b"REDIS" (RDB), b"XSNAP" (the old snapshot) or
    b"" (commands)."""
    with open(path, "rb") as fh:
        head = fh.read(5)
    return head if is_rdb(head) or is_snapshot(head) else b""


def load_data_file(path: str, ndbs: int, access: Any, aof_base: bool = False,
                   cold: Callable[[], ColdTier] | None = None) -> LoadResult:
    """Decode a snapshot file of either format (told by its magic) into fresh databases;
    `cold` gives the tier that references to cold nodes load into (rdb_reader.parse_rdb)."""
    with open(path, "rb") as fh:
        data = fh.read()
    with _collector_paused():
        if is_snapshot(data):
            return parse_snapshot(memoryview(data), ndbs, access=access)
        if is_rdb(data) or not aof_base:
            return parse_rdb(data, ndbs, access=access, aof_base=aof_base, cold=cold)
    raise LoadError("not a snapshot file")


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a file is decoded: decoding makes no garbage
    cycles, only objects that stay, and the collector's passes over a heap that keeps
    growing took a fifth of an RDB load. It is on again afterwards unless it was off
    (DEBUG SET-CYCLIC-GC 0); its first pass then takes the loaded objects once."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _log_origin(log: Logger, result: LoadResult) -> None:
    """What Redis says of an RDB it loads: who wrote it, how old it is, the counts."""
    aux = result.aux
    for name in (b"redis-ver", b"valkey-ver", b"xstreamd-ver"):
        if name in aux:
            who = name.split(b"-")[0].decode()
            log.notice(f"Loading RDB produced by {who} version "
                       f"{aux[name].decode(errors='replace')}")
    ctime = aux.get(b"ctime", b"")
    if ctime.isdigit():
        log.notice(f"RDB age {max(0, int(time.time()) - int(ctime))} seconds")
    log.notice(f"Done loading RDB, keys loaded: {result.keys_loaded}, keys expired: "
               f"{result.keys_expired}.")
