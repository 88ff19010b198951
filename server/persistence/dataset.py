"""What loading a data file gives, whatever its format (RDB or the old xsnap snapshot): fresh
databases filled from the file, the function libraries, the aux fields and counts. The live
databases are replaced only once a whole file decoded into one of these, so a bad file never
leaves a half-loaded server."""

from __future__ import annotations

from storage.access import AccessClock
from storage.keyspace import Database


class LoadError(ValueError):
    """A data file that cannot be loaded; the message says what and where."""


class LoadResult:
    __slots__ = ("dbs", "keys_loaded", "keys_expired", "aux", "libraries", "version", "end")

    def __init__(self, ndbs: int, access: AccessClock) -> None:
        self.dbs = [Database(i, access=access) for i in range(ndbs)]
        self.keys_loaded = 0
        self.keys_expired = 0  # skipped because their time to live had passed
        self.aux: dict[bytes, bytes] = {}
        self.libraries: list[bytes] = []  # the function libraries' code, in file order
        self.version = 0  # the file format's version
        self.end = 0  # the offset just after the file's data (an AOF base may go on after it)
