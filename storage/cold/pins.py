"""Which segment files the files on disk that restarts load (dump.rdb, the AOF base) refer to.

A snapshot written while streams have cold nodes refers to their bytes where they lie (a
segment number, an offset) instead of carrying them, so those segments must outlive the
nodes in memory: a segment is deleted only once no such file refers to it. The sets are kept
per kind of file ("rdb", "aof") in ``PINS`` in the cold directory (JSON, written to a temp
file, fsynced and renamed), so that a restart that loads one kind still keeps the segments
of the other.

A snapshot widens its kind's set to the old set plus the segments it will refer to before it
starts (a crash after its file is renamed into place, before the set is narrowed, keeps
both); once its file is in place the set becomes exactly those segments.
"""

from __future__ import annotations

import json
import os

__all__ = ["PinFile"]


class PinFile:
    def __init__(self, path: str) -> None:
        self.path = path
        self.sets: dict[str, frozenset[int]] = {}
        self.keep_all = False
        try:
            with open(path, encoding="utf-8") as fh:
                saved = json.load(fh)
            self.sets = {str(kind): frozenset(int(n) for n in numbers)
                         for kind, numbers in saved.items()}
        except FileNotFoundError:
            pass
        except (OSError, ValueError, TypeError, AttributeError):
            # A damaged pin file (it is written atomically, so only by hand or by the disk):
            # no segment is known to be unused, so this process deletes none.
            self.keep_all = True

    @property
    def sets(self) -> dict[str, frozenset[int]]:
        return self._sets

    @sets.setter
    def sets(self, sets: dict[str, frozenset[int]]) -> None:
        self._sets = sets
        self.pinned: frozenset[int] = frozenset().union(*sets.values())

    def widen(self, kind: str, numbers: frozenset[int]) -> None:
        self.set(kind, self.sets.get(kind, frozenset()) | numbers)

    def set(self, kind: str, numbers: frozenset[int]) -> None:
        if self.sets.get(kind) == numbers:
            return
        sets = dict(self.sets)
        if numbers:
            sets[kind] = numbers
        else:
            sets.pop(kind, None)
        self._write(sets)
        self.sets = sets

    def _write(self, sets: dict[str, frozenset[int]]) -> None:
        tmp = f"{self.path}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({kind: sorted(numbers) for kind, numbers in sets.items()}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        fd = os.open(os.path.dirname(self.path) or ".", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
