"""The server's memory, as Redis accounts for it (getMemoryOverheadData): behind INFO memory,
MEMORY STATS and MEMORY DOCTOR.

Python allocates through its own arenas and libc's malloc, with no count of the bytes asked
for, so the process's resident size (RSS) stands in for Redis's zmalloc total, as INFO's
used_memory does here: the allocator's own ratios are then 1 (what it holds is what is
resident), and the peak and startup figures are RSS readings (the startup one taken once the
server is set up, before it loads its data). The overheads are what this server can measure:
the clients' buffers (server/client_memory.py), the script caches and the databases' hash
tables.
"""

from __future__ import annotations

import os
import resource
import struct
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from server.client_memory import clients_memory

if TYPE_CHECKING:
    from server.app import Server

# Redis's doctor finds nothing to say below this much memory (total_allocated < 5 MB). Here
# the interpreter alone holds tens of MB, so what the instance allocated since it started
# is compared instead.
_EMPTY_BYTES = 5 * 1024 * 1024
_CLIENT_BUFFER_BYTES = 200 * 1024  # per client, on average
_MANY_SCRIPTS = 1000


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class _Readings:
    """The highest RSS seen (used_memory_peak) and the first (used_memory_startup)."""

    peak = 0
    startup = 0


def note_startup() -> None:
    """Take the startup reading (used_memory_startup) now: the server calls it once set up,
    before loading any data. (Otherwise the first reading is taken as the startup one.)"""
    _Readings.startup = _Readings.peak = rss_bytes()


def _float32(value: float) -> float:
    """The ratios and percentages are C floats in Redis's struct redisMemOverhead."""
    return struct.unpack("f", struct.pack("f", value))[0]


@dataclass
class DbOverhead:
    id: int
    main: int  # the keys' hash table (overhead.hashtable.main)
    expires: int  # the expiry times' (overhead.hashtable.expires)


@dataclass
class MemoryOverhead:
    total_allocated: int
    peak_allocated: int
    startup_allocated: int
    clients_normal: int
    lua_caches: int  # the EVAL script cache's bodies
    functions_caches: int  # the function libraries' code
    script_vms: int  # the Lua interpreters
    cached_scripts: int
    clients: int
    dbs: list[DbOverhead] = field(default_factory=list)
    total_keys: int = 0

    @property
    def db_hashtables(self) -> int:
        return sum(db.main + db.expires for db in self.dbs)

    @property
    def overhead_total(self) -> int:
        """What is not the dataset. (The interpreters' memory at startup is in startup.)"""
        return min(self.total_allocated,
                   self.startup_allocated + self.clients_normal + self.lua_caches
                   + self.functions_caches + self.db_hashtables)

    @property
    def dataset(self) -> int:
        return self.total_allocated - self.overhead_total

    @property
    def net_usage(self) -> int:
        """What the instance allocated since it started (at least 1, as in Redis)."""
        return max(self.total_allocated - self.startup_allocated, 1)

    @property
    def bytes_per_key(self) -> int:
        return self.net_usage // self.total_keys if self.total_keys else 0

    @property
    def dataset_percentage(self) -> float:
        return _float32(self.dataset * 100 / self.net_usage)

    @property
    def peak_percentage(self) -> float:
        return _float32(self.total_allocated * 100 / self.peak_allocated)


def measure(server: Server) -> MemoryOverhead:
    rss = rss_bytes()
    _Readings.peak = max(_Readings.peak, rss)
    if not _Readings.startup:
        _Readings.startup = rss
    scripts = getattr(server, "scripts", None)
    registry = getattr(server, "functions", None)
    dbs = []
    total_keys = 0
    for db in server.dbs:
        if db.data:
            total_keys += len(db.data)
            dbs.append(DbOverhead(db.id, sys.getsizeof(db.data),
                                  sys.getsizeof(db.expires) if db.expires else 0))
    return MemoryOverhead(
        total_allocated=rss,
        peak_allocated=_Readings.peak,
        startup_allocated=_Readings.startup,
        clients_normal=clients_memory(server.clients.values()),
        lua_caches=scripts.cache_memory() if scripts is not None else 0,
        functions_caches=(sum(len(code) for code in registry.payloads())
                          if registry is not None else 0),
        script_vms=((scripts.lua_memory() if scripts is not None else 0)
                    + (registry.memory() if registry is not None else 0)),
        cached_scripts=len(scripts.scripts) if scripts is not None else 0,
        clients=len(server.clients),
        dbs=dbs,
        total_keys=total_keys,
    )


def stats_reply(mh: MemoryOverhead) -> dict[str, object]:
    """MEMORY STATS: Redis 8's fields in its order (a map; a flat array in RESP2)."""
    used = mh.total_allocated
    reply: dict[str, object] = {
        "peak.allocated": mh.peak_allocated,
        "total.allocated": used,
        "startup.allocated": mh.startup_allocated,
        "replication.backlog": 0,
        "replica.fullsync.buffer": 0,
        "clients.slaves": 0,
        "clients.normal": mh.clients_normal,
        "cluster.links": 0,
        "aof.buffer": 0,
        "lua.caches": mh.lua_caches,
        "functions.caches": mh.functions_caches,
        "script.VMs": mh.script_vms,
    }
    for db in mh.dbs:
        reply[f"db.{db.id}"] = {"overhead.hashtable.main": db.main,
                                "overhead.hashtable.expires": db.expires}
    reply.update({
        "overhead.db.hashtable.lut": mh.db_hashtables,
        # (a Python dict grows in one step: nothing is ever half rehashed)
        "overhead.db.hashtable.rehashing": 0,
        "overhead.total": mh.overhead_total,
        "db.dict.rehashing.count": 0,
        "keys.count": mh.total_keys,
        "keys.bytes-per-key": mh.bytes_per_key,
        "dataset.bytes": mh.dataset,
        "dataset.percentage": mh.dataset_percentage,
        "peak.percentage": mh.peak_percentage,
        # The allocator's view: RSS stands for all three, so its ratios are 1 (see above).
        "allocator.allocated": used,
        "allocator.active": used,
        "allocator.resident": used,
        "allocator.muzzy": 0,
        "allocator-fragmentation.ratio": 1.0,
        "allocator-fragmentation.bytes": 0,
        "allocator-rss.ratio": 1.0,
        "allocator-rss.bytes": 0,
        "rss-overhead.ratio": 1.0,
        "rss-overhead.bytes": 0,
        "fragmentation": 1.0,
        "fragmentation.bytes": 0,
    })
    return reply


def doctor_report(mh: MemoryOverhead) -> str:
    """MEMORY DOCTOR: Redis's report (getMemoryDoctorReport), from the same measures. The
    fragmentation findings need ratios above 1, which this accounting never has."""
    findings: list[str] = []
    if mh.total_allocated - mh.startup_allocated < _EMPTY_BYTES:
        return ("Hi Sam, this instance is empty or is using very little memory, my issues "
                "detector can't be used in these conditions. Please, leave for your mission on "
                "Earth and fill it with some data. The new Sam and I will be back to our "
                "programming as soon as I finished rebooting.\n")
    if _float32(mh.peak_allocated / mh.total_allocated) > 1.5:
        findings.append(_BIG_PEAK)
    if mh.clients and mh.clients_normal // mh.clients > _CLIENT_BUFFER_BYTES:
        findings.append(_BIG_CLIENT_BUFFERS)
    if mh.cached_scripts > _MANY_SCRIPTS:
        findings.append(_MANY_SCRIPTS_TEXT)
    if not findings:
        return ("Hi Sam, I can't find any memory issue in your instance. I can only account "
                "for what occurs on this base.\n")
    return ("Sam, I detected a few issues in this Redis instance memory implants:\n\n"
            + "".join(findings) + "I'm here to keep you safe, Sam. I want to help you.\n")


_BIG_PEAK = (
    " * Peak memory: In the past this instance used more than 150% the memory that is "
    "currently using. The allocator is normally not able to release memory after a peak, so "
    "you can expect to see a big fragmentation ratio, however this is actually harmless and "
    "is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is "
    "currently bigger than expected, the memory will be used as soon as you fill the Redis "
    "instance with more data. If the memory peak was only occasional and you want to try to "
    "reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is "
    "to shutdown and restart the instance.\n\n")
_BIG_CLIENT_BUFFERS = (
    " * Big client buffers: The clients output buffers in this instance are greater than "
    "200K per client (on average). This may result from different causes, like Pub/Sub "
    "clients subscribed to channels bot not receiving data fast enough, so that data piles "
    "on the Redis instance output buffer, or clients sending commands with large replies or "
    "very large sequences of commands in the same pipeline. Please use the CLIENT LIST "
    "command in order to investigate the issue if it causes problems in your instance, or to "
    "understand better why certain clients are using a big amount of memory.\n\n")
_MANY_SCRIPTS_TEXT = (
    " * Many scripts: There seem to be many cached scripts in this instance (more than 1000). "
    "This may be because scripts are generated and `EVAL`ed, instead of being parameterized "
    "(with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called "
    "periodically, the scripts' caches may end up consuming most of your memory.\n\n")
