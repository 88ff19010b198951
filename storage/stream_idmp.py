"""A stream's idempotent-production state (Redis 8.6's IDMP, t_stream.c's idmpProducer):
per producer ID (pid) the idempotent IDs (iids) it used, each with the ID of the entry it
added, oldest first; the stream's IDMP-DURATION and IDMP-MAXSIZE; the counters XINFO STREAM
shows (iids-added, iids-duplicates).

An iid is kept until its entry's ID is IDMP-DURATION seconds old (``expire``, run on a timer
as Redis's handleExpiredIdmpEntries, never while a command runs) or until its producer has
IDMP-MAXSIZE newer iids (``record`` evicts the oldest). A record's time is its entry ID's
milliseconds. ``records()`` and ``from_records()`` are the interface for persistence: the AOF
rewrite writes the records as XIDMPRECORD commands.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from storage.stream_id import StreamID

__all__ = [
    "BUILTIN_DURATION",
    "BUILTIN_MAXSIZE",
    "DEFAULTS",
    "MAX_DURATION",
    "MAX_MAXSIZE",
    "MIN_DURATION",
    "MIN_MAXSIZE",
    "IdmpState",
    "set_defaults",
]

MIN_DURATION, MAX_DURATION = 1, 86400  # seconds (CONFIG_STREAM_IDMP_*_DURATION)
MIN_MAXSIZE, MAX_MAXSIZE = 1, 10000  # iids per producer (CONFIG_STREAM_IDMP_*_MAXSIZE)

# Redis's defaults for stream-idmp-duration and stream-idmp-maxsize.
BUILTIN_DURATION, BUILTIN_MAXSIZE = 100, 100
# A new stream takes these (stream-idmp-duration, stream-idmp-maxsize) when it is created.
DEFAULTS = {"duration": BUILTIN_DURATION, "maxsize": BUILTIN_MAXSIZE}

# lookup_or_record results (XIDMPRECORD)
RECORD_NEW = 0
RECORD_SAME = 1
RECORD_CONFLICT = -1


def set_defaults(duration: int | None = None, maxsize: int | None = None) -> None:
    """The server's stream-idmp-duration / stream-idmp-maxsize, for streams created later."""
    if duration is not None:
        DEFAULTS["duration"] = duration
    if maxsize is not None:
        DEFAULTS["maxsize"] = maxsize


class IdmpState:
    """``producers``: pid -> {iid: entry ID}, each dict in insertion order (oldest first)."""

    __slots__ = ("duration", "maxsize", "producers", "iids_added", "iids_duplicates")

    def __init__(self, duration: int | None = None, maxsize: int | None = None) -> None:
        self.duration = DEFAULTS["duration"] if duration is None else duration
        self.maxsize = DEFAULTS["maxsize"] if maxsize is None else maxsize
        self.producers: dict[bytes, dict[bytes, StreamID]] = {}
        self.iids_added = 0
        self.iids_duplicates = 0

    def __repr__(self) -> str:
        return (f"<IdmpState duration={self.duration} maxsize={self.maxsize} "
                f"pids={self.pids_tracked} iids={self.iids_tracked}>")

    @property
    def pids_tracked(self) -> int:
        return len(self.producers)

    @property
    def iids_tracked(self) -> int:
        return sum(map(len, self.producers.values()))

    # --- XADD IDMP ---------------------------------------------------------------------

    def lookup(self, pid: bytes, iid: bytes) -> StreamID | None:
        """The entry a producer already added with this iid, or None."""
        iids = self.producers.get(pid)
        return None if iids is None else iids.get(iid)

    def duplicate(self, pid: bytes, iid: bytes) -> StreamID | None:
        """lookup() for XADD: a hit counts as a duplicate (iids-duplicates)."""
        found = self.lookup(pid, iid)
        if found is not None:
            self.iids_duplicates += 1
        return found

    def record(self, pid: bytes, iid: bytes, entry_id: StreamID) -> None:
        """Remember that ``pid`` added ``entry_id`` with ``iid`` (iid not yet known); past
        IDMP-MAXSIZE the producer's oldest iid goes."""
        iids = self.producers.get(pid)
        if iids is None:
            iids = self.producers[pid] = {}
        iids[iid] = (entry_id[0], entry_id[1])
        self.iids_added += 1
        if len(iids) > self.maxsize:
            del iids[next(iter(iids))]

    def lookup_or_record(self, pid: bytes, iid: bytes, entry_id: StreamID) -> int:
        """XIDMPRECORD: RECORD_SAME if the iid already names this entry, RECORD_CONFLICT if
        another, else records it and returns RECORD_NEW."""
        found = self.lookup(pid, iid)
        if found is not None:
            return RECORD_SAME if found == entry_id else RECORD_CONFLICT
        self.record(pid, iid, entry_id)
        return RECORD_NEW

    # --- configuration and expiry ----------------------------------------------------------

    def configure(self, duration: int | None, maxsize: int | None) -> bool:
        """XCFGSET: set what is given; a value that changes clears every producer's iids
        (an unchanged one does not, so producers may all set it before they start). Returns
        whether anything changed."""
        changed = False
        if duration is not None and duration != self.duration:
            self.duration = duration
            changed = True
        if maxsize is not None and maxsize != self.maxsize:
            self.maxsize = maxsize
            changed = True
        if changed:
            self.producers.clear()
        return changed

    def expire(self, now_ms: int) -> bool:
        """Drop the iids whose entry ID is IDMP-DURATION seconds old or older, and the
        producers left with none. Returns whether anything was dropped."""
        threshold = now_ms - self.duration * 1000
        modified = False
        for pid in list(self.producers):
            iids = self.producers[pid]
            while iids:
                oldest = next(iter(iids))
                if iids[oldest][0] > threshold:
                    break
                del iids[oldest]
                modified = True
            if not iids:
                del self.producers[pid]
                modified = True
        return modified

    # --- persistence -----------------------------------------------------------------------

    def records(self) -> Iterator[tuple[bytes, bytes, StreamID]]:
        """(pid, iid, entry ID) of every tracked iid: producers in pid byte order (Redis's
        rax order), each producer's iids oldest first. A record's time is its ID's ms."""
        for pid in sorted(self.producers):
            for iid, entry_id in self.producers[pid].items():
                yield pid, iid, entry_id

    @classmethod
    def from_records(cls, duration: int, maxsize: int,
                     records: Iterable[tuple[bytes, bytes, StreamID]],
                     iids_added: int = 0, iids_duplicates: int = 0) -> IdmpState:
        """Rebuild a state from records() and the counters (for a snapshot loader)."""
        state = cls(duration, maxsize)
        for pid, iid, entry_id in records:
            state.producers.setdefault(pid, {})[iid] = (entry_id[0], entry_id[1])
        state.iids_added = iids_added
        state.iids_duplicates = iids_duplicates
        return state

    def copy(self) -> IdmpState:
        """An independent copy (COPY of a stream)."""
        return IdmpState.from_records(self.duration, self.maxsize, self.records(),
                                      self.iids_added, self.iids_duplicates)
