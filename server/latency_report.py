"""LATENCY DOCTOR: Redis's human-readable analysis of the latency monitor's events
(createLatencyReport), with its wording, so that what users paste in a help request reads
as it does for Redis.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from server.latency import TimeSeries

DISABLED = (
    "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. "
    "You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable "
    "it. If we weren't in a deep space mission I'd suggest to take a look at "
    "https://redis.io/topics/latency-monitor.\n")
NOTHING_SEEN = (
    "Dave, no latency spike was observed during the lifetime of this Redis instance, not in "
    "the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and "
    "think things over.\n")
SPIKES_SEEN = ("Dave, I have observed latency spikes in this Redis instance. You don't mind "
               "talking about it, do you Dave?\n\n")
NO_ADVICE = ("\nWhile there are latency events logged, I'm not able to suggest any easy fix. "
             "Please use the Redis community to get some help, providing this report in your "
             "help request.\n")

# The advices in the order the report gives them; {threshold_us} is filled in.
_ADVICE_TEXT = {
    "better_vm": "- If you are using a virtual machine, consider upgrading it with a faster one "
    "using a hypervisior that provides less latency during fork() calls. Xen is known to have "
    "poor fork() performance. Even in the context of the same VM provider, certain kinds of "
    "instances can execute fork faster than others.\n",
    "slowlog_enabled": "- There are latency issues with potentially slow commands you are "
    "using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET "
    "slowlog-log-slower-than {threshold_us}'. If the Slow log is disabled Redis is not able to "
    "log slow commands execution for you.\n",
    "slowlog_tuning": "- Your current Slow Log configuration only logs events that are slower "
    "than your configured latency monitor threshold. Please use 'CONFIG SET "
    "slowlog-log-slower-than {threshold_us}'.\n",
    "slowlog_inspect": "- Check your Slow Log to understand what are the commands you are "
    "running which are too slow to execute. Please check https://redis.io/commands/slowlog for "
    "more information.\n",
    "scheduler": "- The system is slow to execute Redis code paths not containing system "
    "calls. This usually means the system does not provide Redis CPU time to run for long "
    "periods. You should try to:\n"
    "  1) Lower the system load.\n"
    "  2) Use a computer / VM just for Redis if you are running other software in the same "
    "system.\n"
    "  3) Check if you have a \"noisy neighbour\" problem.\n"
    "  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your "
    "system.\n"
    "  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if "
    "you are using Jemalloc. However this may create fragmentation problems.\n",
    "local_disk": "- It is strongly advised to use local disks for persistence, especially if "
    "you are using AOF. Remote disks provided by platform-as-a-service providers are known to "
    "be slow.\n",
    "ssd": "- SSD disks are able to reduce fsync latency, and total time needed for "
    "snapshotting and AOF log rewriting (resulting in smaller memory usage and smaller final "
    "AOF rewrite buffer flushes). With extremely high write load SSD disks can be a good "
    "option. However Redis should perform reasonably with high load using normal disks. Use "
    "this advice as a last resort.\n",
    "data_writeback": "- Mounting ext3/4 filesystems with data=writeback can provide a "
    "performance boost compared to data=ordered, however this mode of operation provides less "
    "guarantees, and sometimes it can happen that after a hard crash the AOF file will have a "
    "half-written command at the end and will require to be repaired before Redis restarts.\n",
    "disk_contention": "- Try to lower the disk contention. This is often caused by other disk "
    "intensive processes running in the same computer (including other Redis instances).\n",
    "no_appendfsync": "- Assuming from the point of view of data safety this is viable in your "
    "environment, you could try to enable the 'no-appendfsync-on-rewrite' option, so that "
    "fsync will not be performed while there is a child rewriting the AOF file or producing an "
    "RDB file (the moment where there is high disk contention).\n",
    "relax_fsync_policy": "- Your fsync policy is set to 'always'. It is very hard to get good "
    "performances with such a setup, if possible try to relax the fsync policy to 'onesec'.\n",
    "write_load_info": "- Latency during the AOF atomic rename operation or when the final "
    "difference is flushed to the AOF file at the end of the rewrite, sometimes is caused by "
    "very high write load, causing the AOF buffer to get very large. If possible try to send "
    "less commands to accomplish the same work, or use Lua scripts to group multiple "
    "operations into a single EVALSHA call.\n",
    "hz": "- In order to make the Redis keys expiring process more incremental, try to set the "
    "'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n",
    "large_objects": "- Deleting, expiring or evicting (because of maxmemory policy) large "
    "objects is a blocking operation. If you have very large objects that are often deleted, "
    "expired, or evicted, try to fragment those objects into multiple smaller objects.\n",
    "mass_eviction": "- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or "
    "allocation of large objects via sets or sorted sets intersections, STORE option of SORT, "
    "Redis Cluster large keys migrations (RESTORE command), may create sudden memory pressure "
    "forcing the server to block trying to evict keys. \n",
    "disable_thp": "- I detected a non zero amount of anonymous huge pages used by your "
    "process. This creates very serious latency events in different conditions, especially "
    "when Redis is persisting on disk. To disable THP support use the command 'echo never > "
    "/sys/kernel/mm/transparent_hugepage/enabled', make sure to also add it into /etc/rc.local "
    "so that the command will be executed again after a reboot. Note that even if you have "
    "already disabled THP, you still need to restart the Redis process to get rid of the huge "
    "pages already created.\n",
}

# Advices each event class brings (the slow-log ones for "command" depend on the settings).
_EVENT_ADVICE = {
    "fast-command": ("scheduler",),
    "aof-write-pending-fsync": ("local_disk", "disk_contention", "ssd", "data_writeback"),
    "aof-write-active-child": ("no_appendfsync", "data_writeback", "ssd"),
    "aof-write-alone": ("local_disk", "data_writeback", "ssd"),
    "aof-fsync-always": ("relax_fsync_policy",),
    "aof-fstat": ("disk_contention", "local_disk"),
    "rdb-unlink-temp-file": ("disk_contention", "local_disk"),
    "aof-rewrite-diff-write": ("write_load_info", "data_writeback", "ssd", "local_disk"),
    "aof-rename": ("write_load_info", "data_writeback", "ssd", "local_disk"),
    "expire-cycle": ("hz", "large_objects"),
    "eviction-del": ("large_objects",),
    "eviction-cycle": ("mass_eviction",),
}


@dataclass
class ReportContext:
    """The settings and measurements the advices depend on."""

    threshold_ms: int
    slowlog_slower_than_us: int
    appendfsync: str
    hz: int
    fork_rate_gb_s: float  # of the last fork, 0 before any
    anon_huge_pages: int  # bytes of the process's memory in transparent huge pages


@dataclass
class EventStats:
    """analyzeLatencyForEvent: the samples kept, their average, mean absolute deviation
    (both truncated to whole ms), and the seconds they span."""

    samples: int = 0
    avg: int = 0
    mad: int = 0
    period: int = 0

    @classmethod
    def of(cls, series: TimeSeries, now: int) -> EventStats:
        kept = series.in_order()
        if not kept:
            return cls()
        latencies = [latency for _, latency in kept]
        avg = sum(latencies) // len(kept)
        mad = sum(abs(avg - latency) for latency in latencies) // len(kept)
        period = now - min(when for when, _ in kept)
        return cls(len(kept), avg, mad, period or 1)


def doctor_report(events: dict[str, TimeSeries], ctx: ReportContext) -> str:
    if not events and not ctx.threshold_ms:
        return DISABLED
    now = int(time.time())
    advices: set[str] = set()
    lines: list[str] = []
    for number, (event, series) in enumerate(events.items(), start=1):
        if number == 1:
            lines.append(SPIKES_SEEN)
        stats = EventStats.of(series, now)
        line = (f"{number}. {event}: {stats.samples} latency spikes (average {stats.avg}ms, "
                f"mean deviation {stats.mad}ms, period {stats.period / stats.samples:.2f} sec). "
                f"Worst all time event {series.max}ms.")
        name = event.lower()
        if name == "fork":
            line += _fork_quality(ctx.fork_rate_gb_s, advices)
        elif name == "command":
            if ctx.slowlog_slower_than_us < 0:
                advices.add("slowlog_enabled")
            elif ctx.slowlog_slower_than_us // 1000 > ctx.threshold_ms:
                advices.add("slowlog_tuning")
            advices.update(("slowlog_inspect", "large_objects"))
        advices.update(_EVENT_ADVICE.get(name, ()))
        lines.append(line + "\n")
    if ctx.anon_huge_pages > 0:
        advices.add("disable_thp")
    if not events and not advices:
        lines.append(NOTHING_SEEN)
    elif not advices:
        lines.append(NO_ADVICE)
    else:
        lines.append("\nI have a few advices for you:\n\n")
        # Two advices apply only under a setting (as in Redis, they still count as advices).
        if ctx.appendfsync != "always":
            advices.discard("relax_fsync_policy")
        if ctx.hz >= 100:
            advices.discard("hz")
        for key, text in _ADVICE_TEXT.items():
            if key in advices:
                lines.append(text.format(threshold_us=ctx.threshold_ms * 1000))
    return "".join(lines)


def _fork_quality(rate: float, advices: set[str]) -> str:
    if rate < 10:
        quality = "terrible"
        advices.add("better_vm")
    elif rate < 25:
        quality = "poor"
        advices.add("better_vm")
    elif rate < 100:
        quality = "good"
    else:
        quality = "excellent"
    return f" Fork rate is {rate:.2f} GB/sec ({quality})."


def anon_huge_pages() -> int:
    """Bytes of this process's memory backed by transparent huge pages (AnonHugePages in
    /proc/self/smaps), 0 when unknown."""
    total_kb = 0
    try:
        with open("/proc/self/smaps", "rb") as fh:
            for line in fh:
                if line.startswith(b"AnonHugePages:"):
                    total_kb += int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return total_kb * 1024
