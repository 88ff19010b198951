"""The AOF directory: the manifest, opening the newest incremental file, switching to a new one
when a rewrite starts, installing the rewritten base when it ends, and cleaning up.

Every step that changes which files make up the AOF ends with an atomic manifest replacement,
so a crash at any point leaves a manifest whose files replay to a consistent state:

1. rewrite starts: a new empty incr file is created, then the manifest lists
   old base + old incrs + new incr; new writes go to the new incr; the child writes the
   new base to a temp file (not in the manifest);
2. rewrite ends: the temp file is renamed to the next base name, then the manifest lists
   new base + the incr opened in step 1 (the old files become history and are deleted).

A crash between the rename and the manifest leaves an unreferenced base file, removed at the
next start along with temp files.
"""

from __future__ import annotations

import os

from server.persistence.manifest import (
    HISTORY,
    AofFile,
    Manifest,
    fsync_dir,
    is_own_file,
    load_manifest,
    manifest_name,
    save_manifest,
)
from server.persistence.rdb_encoding import MAGIC as RDB_MAGIC

TEMP_INCR_SUFFIX = ".incr"


class AofFiles:
    """Paths and the manifest of the AOF directory. The directory's absolute path is fixed when
    the AOF is opened, so a later CONFIG SET dir does not split it."""

    def __init__(self, dirname: str, prefix: str) -> None:
        if "/" in prefix or not prefix or prefix in (".", ".."):
            raise ValueError(f"appendfilename can't be a path, just a filename: {prefix!r}")
        self.dirname = dirname
        self.prefix = prefix
        self.dir = os.path.abspath(dirname)
        self.manifest: Manifest | None = None

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    @property
    def manifest_path(self) -> str:
        return self.path(manifest_name(self.prefix))

    def exists(self) -> bool:
        return os.path.exists(self.manifest_path)

    def load(self) -> Manifest:
        self.manifest = load_manifest(self.manifest_path)
        return self.manifest

    def ensure_dir(self) -> None:
        os.makedirs(self.dir, exist_ok=True)

    def temp_rewrite_path(self, pid: int) -> str:
        return self.path(f"temp-rewriteaof-bg-{pid}.aof")

    def temp_incr_path(self) -> str:
        return self.path(f"temp-{self.prefix}{TEMP_INCR_SUFFIX}")

    def size_of(self, f: AofFile | None) -> int:
        if f is None:
            return 0
        try:
            return os.path.getsize(self.path(f.name))
        except OSError:
            return 0

    def sizes_except_last(self) -> int:
        """Bytes of the base and every incr but the last (the one being appended to)."""
        man = self.manifest
        if man is None:
            return 0
        return self.size_of(man.base) + sum(self.size_of(f) for f in man.incrs[:-1])

    # -- changing the set of files ------------------------------------------------------------
    def create_incr(self) -> tuple[int, str]:
        """Create the next incr file, list it in the manifest (atomically) and return an
        append-mode descriptor for it. On failure nothing changed (the file is removed)."""
        assert self.manifest is not None
        man = self.manifest.copy()
        incr = man.new_incr(self.prefix)
        path = self.path(incr.name)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            man.incrs.append(incr)
            save_manifest(self.manifest_path, man)
        except BaseException:
            os.close(fd)
            _unlink(path)
            raise
        self.manifest = man
        return fd, path

    def install_base(self, temp_path: str, temp_incr: str | None = None,
                     keep_incr: bool = True) -> tuple[AofFile, str]:
        """Rename a finished rewrite into the next base (`.base.rdb` when it is an RDB file);
        keep only the newest incr (or the temp incr of a first rewrite, renamed to the next
        incr; or none at all when the AOF is off and the rewrite is all there is). Returns
        (base, incr path)."""
        man = (self.manifest or Manifest()).copy()
        with open(temp_path, "rb") as fh:
            is_rdb = fh.read(len(RDB_MAGIC)) == RDB_MAGIC
        base = man.new_base(self.prefix, rdb=is_rdb)
        old = ([man.base] if man.base is not None else [])
        if temp_incr is not None:
            old += man.incrs
            incr = man.new_incr(self.prefix)
            os.replace(temp_incr, self.path(incr.name))
            man.incrs = [incr]
        elif not keep_incr:
            old += man.incrs
            man.incrs = []
        else:
            old += man.incrs[:-1]
            man.incrs = man.incrs[-1:]
        os.replace(temp_path, self.path(base.name))
        man.base = base
        man.history += [AofFile(f.name, f.seq, HISTORY) for f in old]
        save_manifest(self.manifest_path, man)
        self.manifest = man
        self.delete_history()
        incr_path = self.path(man.incrs[-1].name) if man.incrs else ""
        return base, incr_path

    def delete_history(self) -> None:
        man = self.manifest
        if man is None or not man.history:
            return
        for f in man.history:
            _unlink(self.path(f.name))
        man.history = []

    def discard(self) -> None:
        """Forget the current files (turning the AOF on again starts from a fresh base)."""
        if self.exists():
            try:
                man = self.load()
            except (OSError, ValueError):
                man = None
            _unlink(self.manifest_path)
            if man is not None:
                for f in man.files_to_load() + man.history:
                    _unlink(self.path(f.name))
            fsync_dir(self.dir)
        self.manifest = None

    def clean_orphans(self) -> list[str]:
        """Remove temp files and base/incr files the manifest does not list; returns names."""
        removed = []
        try:
            names = os.listdir(self.dir)
        except OSError:
            return removed
        listed = set()
        if self.manifest is not None:
            listed = {f.name for f in self.manifest.files_to_load()}
        for name in names:
            orphan = name not in listed and is_own_file(self.prefix, name)
            if orphan or name.startswith(("temp-rewriteaof-", f"temp-{self.prefix}")):
                _unlink(self.path(name))
                removed.append(name)
        return removed


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
