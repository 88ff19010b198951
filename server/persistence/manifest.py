"""The multi-part AOF manifest (Redis 7's layout): one base file, then incremental files, named
and listed in `<appendfilename>.manifest` inside the AOF directory.

    file appendonly.aof.2.base.aof seq 2 type b
    file appendonly.aof.2.incr.aof seq 2 type i
    file appendonly.aof.3.incr.aof seq 3 type i

`b` is the base (commands, or an RDB file named `.base.rdb`, as Redis 7 names it), `i` the
incremental files in replay order, `h` history files waiting for deletion. The manifest is only
ever replaced atomically (temp file, fsync, rename, fsync of the directory), so at any instant it
names a complete, loadable set of files.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

BASE = "b"
INCR = "i"
HISTORY = "h"


class ManifestError(ValueError):
    """A manifest that cannot be parsed; the message is user-facing."""


@dataclass(slots=True)
class AofFile:
    name: str
    seq: int
    kind: str  # BASE, INCR or HISTORY


@dataclass(slots=True)
class Manifest:
    base: AofFile | None = None
    incrs: list[AofFile] = field(default_factory=list)
    history: list[AofFile] = field(default_factory=list)
    base_seq: int = 0  # highest base sequence number used so far
    incr_seq: int = 0  # highest incr sequence number used so far

    def files_to_load(self) -> list[AofFile]:
        """Base first (when any), then the incremental files in order."""
        return ([self.base] if self.base is not None else []) + list(self.incrs)

    def dump(self) -> str:
        lines = []
        for f in ([self.base] if self.base else []) + self.history + self.incrs:
            lines.append(f"file {f.name} seq {f.seq} type {f.kind}\n")
        return "".join(lines)

    @classmethod
    def parse(cls, text: str) -> Manifest:
        man = cls()
        for lineno, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            words = line.split()
            if len(words) % 2:
                raise ManifestError(f"Invalid AOF manifest file format (line {lineno})")
            pairs = dict(zip(words[0::2], words[1::2], strict=True))
            name, seq_text, kind = pairs.get("file"), pairs.get("seq"), pairs.get("type")
            if name is None or seq_text is None or kind not in (BASE, INCR, HISTORY):
                raise ManifestError(f"Invalid AOF manifest file format (line {lineno})")
            if "/" in name or name in (".", ".."):
                raise ManifestError(f"Invalid AOF file name in manifest (line {lineno})")
            try:
                seq = int(seq_text)
            except ValueError:
                raise ManifestError(f"Invalid AOF manifest sequence (line {lineno})") from None
            if seq < 1:
                raise ManifestError(f"Invalid AOF manifest sequence (line {lineno})")
            entry = AofFile(name, seq, kind)
            if kind == BASE:
                if man.base is not None:
                    raise ManifestError("Found duplicate base file information in manifest")
                man.base = entry
                man.base_seq = max(man.base_seq, seq)
            elif kind == INCR:
                if man.incrs and seq <= man.incrs[-1].seq:
                    raise ManifestError("Found a non-monotonic sequence number in manifest")
                man.incrs.append(entry)
                man.incr_seq = max(man.incr_seq, seq)
            else:
                man.history.append(entry)
        if man.base is None and not man.incrs:
            raise ManifestError("Found an empty AOF manifest")
        return man

    # -- naming -------------------------------------------------------------------------------
    def new_base(self, prefix: str, rdb: bool = False) -> AofFile:
        """The next base file: `.base.rdb` when it is an RDB file, else `.base.aof`."""
        self.base_seq += 1
        ext = "rdb" if rdb else "aof"
        return AofFile(f"{prefix}.{self.base_seq}.base.{ext}", self.base_seq, BASE)

    def new_incr(self, prefix: str) -> AofFile:
        self.incr_seq += 1
        return AofFile(f"{prefix}.{self.incr_seq}.incr.aof", self.incr_seq, INCR)

    def copy(self) -> Manifest:
        return Manifest(self.base, list(self.incrs), list(self.history), self.base_seq,
                        self.incr_seq)


def manifest_name(prefix: str) -> str:
    return f"{prefix}.manifest"


def is_own_file(prefix: str, name: str) -> bool:
    """A base/incr file name this prefix would produce (for cleaning orphans up)."""
    pattern = re.escape(prefix) + r"\.\d+\.(base\.(aof|rdb)|incr\.aof)"
    return re.fullmatch(pattern, name) is not None


def fsync_dir(path: str) -> None:
    """Make a rename or a new file in path durable (the directory entry itself)."""
    fd = os.open(path or ".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: str, data: bytes) -> None:
    """Replace path with data: temp file in the same directory, fsync, rename, fsync dir."""
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, f"temp-{name}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(directory)


def load_manifest(path: str) -> Manifest:
    with open(path, encoding="utf-8", errors="strict") as fh:
        try:
            text = fh.read()
        except UnicodeDecodeError:
            raise ManifestError("The AOF manifest file is not valid text") from None
    return Manifest.parse(text)


def save_manifest(path: str, manifest: Manifest) -> None:
    write_atomic(path, manifest.dump().encode())
