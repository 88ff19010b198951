"""INFO: sections and field names as Redis writes them."""

from __future__ import annotations

import os
import platform
import resource
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from server.app import Server

DEFAULT_SECTIONS = ("server", "clients", "memory", "persistence", "stats", "replication", "cpu",
                    "modules", "errorstats", "cluster", "keyspace")
ALL_EXTRA = ("commandstats",)


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def human_bytes(n: float) -> str:
    for unit in ("B", "K", "M", "G", "T", "P"):
        if n < 1024 or unit == "P":
            return f"{n}B" if unit == "B" else f"{n:.2f}{unit}"
        n /= 1024
    return f"{n}B"


class _Peak:
    value = 0


def _server(s: Server) -> list[tuple[str, object]]:
    from server.app import VERSION

    now = time.time()
    uptime = int(now - s.start_time)
    return [
        ("redis_version", VERSION), ("xstreamd_version", "0.1.0"), ("redis_git_sha1", "00000000"),
        ("redis_git_dirty", 0), ("redis_build_id", "0"), ("redis_mode", "standalone"),
        ("os", f"{platform.system()} {platform.release()} {platform.machine()}"),
        ("arch_bits", 64), ("multiplexing_api", "asyncio/uvloop"),
        ("python_version", platform.python_version()), ("process_id", os.getpid()),
        ("process_supervised", "no"), ("run_id", s.run_id), ("tcp_port", s.tcp_port),
        ("server_time_usec", int(now * 1_000_000)), ("uptime_in_seconds", uptime),
        ("uptime_in_days", uptime // 86400), ("hz", s.config["hz"]),
        ("configured_hz", s.config["hz"]), ("executable", sys.argv[0]), ("config_file", ""),
        ("io_threads_active", 0),
    ]


def _clients(s: Server) -> list[tuple[str, object]]:
    max_out = max((len(c.out) for c in s.clients.values()), default=0)
    return [
        ("connected_clients", len(s.clients)), ("cluster_connections", 0),
        ("maxclients", s.config["maxclients"]), ("client_recent_max_input_buffer", 0),
        ("client_recent_max_output_buffer", max_out),
        ("blocked_clients", s.blocking.blocked_clients), ("tracking_clients", 0),
        ("pubsub_clients", 0), ("watching_clients", sum(1 for c in s.clients.values() if c.watched)),
        ("clients_in_timeout_table", sum(1 for c in s.clients.values()
                                         if c.blocked is not None and c.blocked.deadline)),
        ("total_watched_keys", len(s.watched_keys)),
        ("total_blocking_keys", len(s.blocking.blocking_keys)),
    ]


def _memory(s: Server) -> list[tuple[str, object]]:
    rss = rss_bytes()
    _Peak.value = max(_Peak.value, rss)
    maxmemory = s.config["maxmemory"]
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return [
        ("used_memory", rss), ("used_memory_human", human_bytes(rss)),
        ("used_memory_rss", rss), ("used_memory_rss_human", human_bytes(rss)),
        ("used_memory_peak", _Peak.value), ("used_memory_peak_human", human_bytes(_Peak.value)),
        ("total_system_memory", total), ("total_system_memory_human", human_bytes(total)),
        ("maxmemory", maxmemory), ("maxmemory_human", human_bytes(maxmemory)),
        ("maxmemory_policy", s.config["maxmemory-policy"]),
        ("mem_fragmentation_ratio", "1.00"), ("mem_allocator", "libc"),
        ("mem_clients_normal", sum(len(c.out) for c in s.clients.values())),
    ]


def _persistence(s: Server) -> list[tuple[str, object]]:
    if s.persistence is not None:
        return s.persistence.info_fields()
    return [("loading", 0), ("rdb_changes_since_last_save", s.dirty),
            ("rdb_bgsave_in_progress", 0), ("aof_enabled", 0), ("aof_rewrite_in_progress", 0)]


def _stats(s: Server) -> list[tuple[str, object]]:
    st = s.stats
    return [
        ("total_connections_received", st.total_connections_received),
        ("total_commands_processed", st.total_commands_processed),
        ("instantaneous_ops_per_sec", int(st.instantaneous("ops"))),
        ("total_net_input_bytes", st.net_input_bytes),
        ("total_net_output_bytes", st.net_output_bytes),
        ("instantaneous_input_kbps", f"{st.instantaneous('in') / 1024:.2f}"),
        ("instantaneous_output_kbps", f"{st.instantaneous('out') / 1024:.2f}"),
        ("rejected_connections", st.rejected_connections),
        ("expired_keys", st.expired_keys), ("evicted_keys", 0),
        ("keyspace_hits", st.keyspace_hits), ("keyspace_misses", st.keyspace_misses),
        ("pubsub_channels", 0), ("pubsub_patterns", 0),
        ("total_error_replies", st.total_error_replies),
        ("unexpected_error_replies", st.unexpected_error_replies),
        ("total_reads_processed", st.total_commands_processed),
        ("client_query_buffer_limit_disconnections", st.client_query_buffer_limit_disconnections),
        ("client_output_buffer_limit_disconnections",
         st.client_output_buffer_limit_disconnections),
    ]


def _replication(s: Server) -> list[tuple[str, object]]:
    return [("role", "master"), ("connected_slaves", 0), ("master_repl_offset", 0)]


def _cpu(s: Server) -> list[tuple[str, object]]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return [("used_cpu_sys", f"{usage.ru_stime:.6f}"), ("used_cpu_user", f"{usage.ru_utime:.6f}")]


def _commandstats(s: Server) -> list[tuple[str, object]]:
    from server.dispatch import COMMANDS

    rows: list[tuple[str, object]] = []
    specs = []
    for spec in COMMANDS.values():
        specs.append(spec)
        specs.extend(spec.subcommands.values())
    for spec in specs:
        if spec.calls or spec.rejected_calls or spec.failed_calls:
            per_call = spec.usec / spec.calls if spec.calls else 0.0
            rows.append((f"cmdstat_{spec.fullname}",
                         f"calls={spec.calls},usec={spec.usec},usec_per_call={per_call:.2f},"
                         f"rejected_calls={spec.rejected_calls},failed_calls={spec.failed_calls}"))
    return rows


def _keyspace(s: Server) -> list[tuple[str, object]]:
    return [(f"db{db.id}", f"keys={len(db.data)},expires={len(db.expires)},avg_ttl=0")
            for db in s.dbs if db.data]


_SECTIONS = {
    "server": _server, "clients": _clients, "memory": _memory, "persistence": _persistence,
    "stats": _stats, "replication": _replication, "cpu": _cpu, "modules": lambda s: [],
    "errorstats": lambda s: [], "cluster": lambda s: [("cluster_enabled", 0)],
    "keyspace": _keyspace, "commandstats": _commandstats,
}


def render_info(server: Server, requested: list[str]) -> str:
    names: list[str] = []
    if not requested or requested == ["default"]:
        names = list(DEFAULT_SECTIONS)
    else:
        for name in requested:
            low = name.lower()
            if low in ("all", "everything"):
                names.extend(DEFAULT_SECTIONS + ALL_EXTRA)
            elif low == "default":
                names.extend(DEFAULT_SECTIONS)
            elif low in _SECTIONS:
                names.append(low)
    seen: set[str] = set()
    parts = []
    for name in names:
        if name in seen:
            continue
        seen.add(name)
        fields = _SECTIONS[name](server)
        title = "Keyspace" if name == "keyspace" else name.capitalize()
        if name == "cpu":
            title = "CPU"
        body = "".join(f"{k}:{v}\r\n" for k, v in fields)
        parts.append(f"# {title}\r\n{body}")
    return "\r\n".join(parts)
