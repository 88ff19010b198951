"""INFO: sections and field names as Redis writes them (genRedisInfoString).

Sections come out in Redis's fixed order whatever order they were asked in; "default" is the
usual set, "all" adds commandstats and latencystats, "everything" is "all" (there are no
modules). An unknown section name adds nothing.
"""

from __future__ import annotations

import os
import platform
import resource
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from server import client_memory, command_stats, memory_report
from server.dispatch import all_specs, commands_processed
from server.latency_histogram import percentiles_line
from server.memory_report import rss_bytes  # noqa: F401 - (also read from here: app, stats)
from server.replication.report import memory_fields as replication_memory
from server.replication.report import replication_section
from server.replication.report import stats_fields as replication_stats
from server.version import VERSION, XSTREAMD_VERSION
from storage import stream_resp

if TYPE_CHECKING:
    from server.app import Server

Fields = list[tuple[str, object]]


ORDER = ("server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules",
         "commandstats", "errorstats", "latencystats", "cluster", "keyspace")
DEFAULT_SECTIONS = frozenset(ORDER) - {"commandstats", "latencystats"}
ALL_SECTIONS = frozenset(ORDER)
_TITLES = {"cpu": "CPU"}


def human_bytes(n: float) -> str:
    """Redis's bytesToHuman: 1023B, 1.00K, 12.50M ..."""
    for unit in ("B", "K", "M", "G", "T", "P"):
        if n < 1024 or unit == "P":
            return f"{int(n)}B" if unit == "B" else f"{n:.2f}{unit}"
        n /= 1024
    return f"{n:.2f}E"


def _server(s: Server) -> Fields:
    now = time.time()
    uptime = int(now - s.start_time)
    return [
        ("redis_version", VERSION), ("redis_git_sha1", "00000000"), ("redis_git_dirty", 0),
        ("redis_build_id", "0"), ("redis_mode", "standalone"),
        ("os", f"{platform.system()} {platform.release()} {platform.machine()}"),
        ("arch_bits", 64), ("monotonic_clock", "POSIX clock_gettime"),
        ("multiplexing_api", "asyncio"), ("atomicvar_api", "none"),
        ("gcc_version", "0.0.0"), ("process_id", os.getpid()), ("process_supervised", "no"),
        ("run_id", s.run_id), ("tcp_port", s.config["port"]),
        ("server_time_usec", int(now * 1_000_000)), ("uptime_in_seconds", uptime),
        ("uptime_in_days", uptime // 86400), ("hz", s.config["hz"]),
        ("configured_hz", s.config["hz"]), ("lru_clock", int(now) & ((1 << 24) - 1)),
        ("executable", os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""),
        ("config_file", s.config.config_file), ("io_threads_active", 0),
        *_listeners(s),
        ("xstreamd_version", XSTREAMD_VERSION), ("python_version", platform.python_version()),
    ]


def _listeners(s: Server) -> Fields:
    """One line per kind of listener, numbered by kind as Redis's connection types (0 tcp,
    1 unix): its addresses as configured, then its port."""
    config = s.config
    fields: Fields = []
    if config["port"]:
        binds = ",".join(f"bind={address}" for address in config["bind"])
        fields.append(("listener0", f"name=tcp,{binds},port={config['port']}"))
    if s.unix_listening:
        fields.append(("listener1", f"name=unix,bind={config['unixsocket']}"))
    return fields


def _clients(s: Server) -> Fields:
    clients = s.clients.values()
    max_in, max_out = client_memory.largest_buffers(clients)
    return [
        ("connected_clients", len(s.clients)), ("cluster_connections", 0),
        ("maxclients", s.config["maxclients"]), ("client_recent_max_input_buffer", max_in),
        ("client_recent_max_output_buffer", max_out),
        ("blocked_clients", s.blocking.blocked_clients),
        ("tracking_clients", s.tracking.clients),
        ("pubsub_clients", s.pubsub.clients),
        ("watching_clients", sum(1 for c in clients if c.watched)),
        ("clients_in_timeout_table",
         sum(1 for c in clients if c.blocked is not None and c.blocked.deadline)),
        ("total_watched_keys", len(s.watched_keys)),
        ("total_blocking_keys", len(s.blocking.blocking_keys)),
        ("total_blocking_keys_on_nokey", s.blocking.keys_on_nokey()),
    ]


def _memory(s: Server) -> Fields:
    # The process's resident size is what counts against maxmemory here (memory_report.py).
    mh = memory_report.measure(s)
    used = rss = mh.total_allocated
    peak = mh.peak_allocated
    maxmemory = s.config["maxmemory"]
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return [
        ("used_memory", used), ("used_memory_human", human_bytes(used)),
        ("used_memory_rss", rss), ("used_memory_rss_human", human_bytes(rss)),
        ("used_memory_peak", peak), ("used_memory_peak_human", human_bytes(peak)),
        ("used_memory_peak_perc", f"{mh.peak_percentage:.2f}%"),
        ("used_memory_overhead", mh.overhead_total),
        ("used_memory_startup", mh.startup_allocated),
        ("used_memory_dataset", mh.dataset),
        ("used_memory_dataset_perc", f"{mh.dataset_percentage:.2f}%"),
        # The allocator's view, which monitoring (the Prometheus exporter) reads: with the
        # process's resident size standing for all of it, as in MEMORY STATS, the allocator
        # holds what it was asked for, so its ratios are 1 and its overheads 0.
        ("allocator_allocated", used), ("allocator_active", used),
        ("allocator_resident", used), ("allocator_muzzy", 0),
        ("total_system_memory", total), ("total_system_memory_human", human_bytes(total)),
        *_scripts_memory(s),
        ("maxmemory", maxmemory), ("maxmemory_human", human_bytes(maxmemory)),
        ("maxmemory_policy", s.config["maxmemory-policy"]),
        ("allocator_frag_ratio", "1.00"), ("allocator_frag_bytes", 0),
        ("allocator_rss_ratio", "1.00"), ("allocator_rss_bytes", 0),
        ("rss_overhead_ratio", "1.00"), ("rss_overhead_bytes", 0),
        ("mem_fragmentation_ratio", "1.00"), ("mem_fragmentation_bytes", 0),
        ("mem_not_counted_for_evict", 0),
        # The cache of encoded stream nodes that range reads are served from (not Redis's).
        ("mem_stream_reply_cache", stream_resp.used_bytes()),
        # stream-hot-memory (server/cold_tier.py): sealed nodes in memory and on disk.
        *s.cold_tier.info_fields(),
        # No cluster or defragmenter here: what they would hold is nothing.
        *replication_memory(s.replication).items(),
        ("mem_clients_slaves", 0), ("mem_clients_normal", mh.clients_normal),
        ("mem_cluster_links", 0), ("mem_aof_buffer", 0), ("mem_allocator", "libc"),
        ("active_defrag_running", 0), ("lazyfree_pending_objects", 0), ("lazyfreed_objects", 0),
    ]


def _persistence(s: Server) -> Fields:
    if s.persistence is not None:
        return s.persistence.info_fields()
    return [
        ("loading", 1 if s.loading else 0), ("async_loading", 0),
        ("rdb_changes_since_last_save", s.dirty), ("rdb_bgsave_in_progress", 0),
        ("rdb_last_save_time", int(s.start_time)), ("rdb_last_bgsave_status", "ok"),
        ("rdb_last_bgsave_time_sec", -1), ("rdb_current_bgsave_time_sec", -1), ("rdb_saves", 0),
        ("aof_enabled", 0), ("aof_rewrite_in_progress", 0), ("aof_rewrite_scheduled", 0),
        ("aof_last_rewrite_time_sec", -1), ("aof_current_rewrite_time_sec", -1),
        ("aof_last_bgrewrite_status", "ok"), ("aof_rewrites", 0),
        ("aof_last_write_status", "ok"),
    ]


def _reply_cache_stats() -> Fields:
    hits, misses = stream_resp.stats()
    return [("stream_reply_cache_hits", hits), ("stream_reply_cache_misses", misses)]


def _stats(s: Server) -> Fields:
    """Redis 8's stats fields. Those of features this server does not have (replication,
    client eviction, defragmentation, scripts, ACL rules, I/O threads) are 0, the
    truth here; the eventloop_* fields are left out: the asyncio loop offers no hook at each
    iteration to count or time them."""
    st = s.stats
    processed = commands_processed()  # (a sum over the command table: computed once)
    over_total_ms, over_current_ms = st.over_maxmemory_ms(time.monotonic())
    repl = replication_stats(s.replication)
    return [
        ("total_connections_received", st.total_connections_received),
        ("total_commands_processed", processed),
        ("instantaneous_ops_per_sec", int(st.instantaneous("ops"))),
        ("total_net_input_bytes", st.net_input_bytes),
        ("total_net_output_bytes", st.net_output_bytes),
        ("total_net_repl_input_bytes", repl["total_net_repl_input_bytes"]),
        ("total_net_repl_output_bytes", repl["total_net_repl_output_bytes"]),
        ("instantaneous_input_kbps", f"{st.instantaneous('in') / 1024:.2f}"),
        ("instantaneous_output_kbps", f"{st.instantaneous('out') / 1024:.2f}"),
        ("instantaneous_input_repl_kbps", "0.00"), ("instantaneous_output_repl_kbps", "0.00"),
        ("rejected_connections", st.rejected_connections),
        ("sync_full", repl["sync_full"]), ("sync_partial_ok", repl["sync_partial_ok"]),
        ("sync_partial_err", repl["sync_partial_err"]),
        ("expired_subkeys", 0), ("expired_keys", st.expired_keys),
        ("expired_stale_perc", f"{st.expired_stale_perc * 100:.2f}"),
        ("expired_time_cap_reached_count", st.expire_cycles_stopped_early),
        ("expire_cycle_cpu_milliseconds", st.expire_cycle_usec // 1000),
        ("evicted_keys", st.evicted_keys), ("evicted_clients", 0), ("evicted_scripts", 0),
        ("total_eviction_exceeded_time", over_total_ms),
        ("current_eviction_exceeded_time", over_current_ms),
        ("keyspace_hits", st.keyspace_hits), ("keyspace_misses", st.keyspace_misses),
        *_reply_cache_stats(),
        ("pubsub_channels", len(s.pubsub.channels)), ("pubsub_patterns", len(s.pubsub.patterns)),
        ("pubsubshard_channels", len(s.pubsub.shard_channels)),
        ("latest_fork_usec", st.latest_fork_usec), ("total_forks", st.total_forks),
        ("migrate_cached_sockets", 0), ("slave_expires_tracked_keys", 0),
        ("active_defrag_hits", 0), ("active_defrag_misses", 0),
        ("active_defrag_key_hits", 0), ("active_defrag_key_misses", 0),
        ("total_active_defrag_time", 0), ("current_active_defrag_time", 0),
        ("tracking_total_keys", len(s.tracking.table)),
        ("tracking_total_items", s.tracking.items),
        ("tracking_total_prefixes", len(s.tracking.prefixes)),
        ("unexpected_error_replies", st.unexpected_error_replies),
        ("total_error_replies", st.total_error_replies),
        ("dump_payload_sanitizations", 0),
        ("total_reads_processed", st.reads_processed),
        ("total_writes_processed", st.writes_processed),
        ("io_threaded_reads_processed", 0), ("io_threaded_writes_processed", 0),
        ("client_query_buffer_limit_disconnections", st.client_query_buffer_limit_disconnections),
        ("client_output_buffer_limit_disconnections",
         st.client_output_buffer_limit_disconnections),
        ("reply_buffer_shrinks", 0), ("reply_buffer_expands", 0),
        ("acl_access_denied_auth", st.auth_failures),
        ("acl_access_denied_cmd", st.acl_denied["command"]),
        ("acl_access_denied_key", st.acl_denied["key"]),
        ("acl_access_denied_channel", st.acl_denied["channel"]),
    ]


def _scripts_memory(s: Server) -> Fields:
    """The Lua interpreters' memory (EVAL's and the functions'), the script cache and the
    function libraries (Redis 7's fields)."""
    scripts = getattr(s, "scripts", None)
    lua = scripts.lua_memory() if scripts is not None else 0
    cached = scripts.cache_memory() if scripts is not None else 0
    count = len(scripts.scripts) if scripts is not None else 0
    registry = getattr(s, "functions", None)
    vm_functions = registry.memory() if registry is not None else 0
    libraries = registry.payloads() if registry is not None else []
    functions_memory = sum(len(code) for code in libraries)
    total = lua + vm_functions
    return [
        ("used_memory_lua", lua), ("used_memory_vm_eval", lua),
        ("used_memory_lua_human", human_bytes(lua)), ("used_memory_scripts_eval", cached),
        ("number_of_cached_scripts", count),
        ("number_of_functions", len(registry.functions) if registry is not None else 0),
        ("number_of_libraries", len(libraries)), ("used_memory_vm_functions", vm_functions),
        ("used_memory_vm_total", total), ("used_memory_vm_total_human", human_bytes(total)),
        ("used_memory_functions", functions_memory),
        ("used_memory_scripts", cached + functions_memory),
        ("used_memory_scripts_human", human_bytes(cached + functions_memory)),
    ]


def _replication(s: Server) -> Fields:
    return replication_section(s.replication)


def _cpu(s: Server) -> Fields:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return [
        ("used_cpu_sys", f"{usage.ru_stime:.6f}"), ("used_cpu_user", f"{usage.ru_utime:.6f}"),
        ("used_cpu_sys_children", f"{children.ru_stime:.6f}"),
        ("used_cpu_user_children", f"{children.ru_utime:.6f}"),
        ("used_cpu_sys_main_thread", f"{usage.ru_stime:.6f}"),
        ("used_cpu_user_main_thread", f"{usage.ru_utime:.6f}"),
    ]


def _commandstats(s: Server) -> Fields:
    rows: Fields = []
    for spec in all_specs():
        calls, usec = spec.calls, spec.usec
        if calls or spec.rejected_calls or spec.failed_calls:
            per_call = usec / calls if calls else 0.0
            rows.append((f"cmdstat_{spec.fullname}",
                         f"calls={calls},usec={usec},usec_per_call={per_call:.2f},"
                         f"rejected_calls={spec.rejected_calls},"
                         f"failed_calls={spec.failed_calls}"))
    return rows


def _latencystats(s: Server) -> Fields:
    """Each command's latency percentiles (latency-tracking-info-percentiles), in us."""
    if not s.config["latency-tracking"]:
        return []
    percentiles = s.config["latency-tracking-info-percentiles"]
    rows: Fields = []
    for spec in all_specs():
        counts = command_stats.histogram(spec)
        if counts:
            rows.append((f"latency_percentiles_usec_{spec.fullname}",
                         percentiles_line(counts, percentiles)))
    return rows


def _errorstats(s: Server) -> Fields:
    return [(f"errorstat_{code}", f"count={n}") for code, n in s.stats.errors.items()]


def _keyspace(s: Server) -> Fields:
    return [(f"db{db.id}", f"keys={len(db.data)},expires={len(db.expires)},"
                           f"avg_ttl={db.avg_ttl()},subexpiry=0")
            for db in s.dbs if db.data]


_SECTIONS: dict[str, Callable[[Server], Fields]] = {
    "server": _server, "clients": _clients, "memory": _memory, "persistence": _persistence,
    "stats": _stats, "replication": _replication, "cpu": _cpu, "modules": lambda s: [],
    "commandstats": _commandstats, "errorstats": _errorstats, "latencystats": _latencystats,
    "cluster": lambda s: [("cluster_enabled", 0)], "keyspace": _keyspace,
}


def wanted_sections(requested: list[str]) -> set[str]:
    if not requested:
        return set(DEFAULT_SECTIONS)
    names: set[str] = set()
    for name in requested:
        low = name.lower()
        if low == "default":
            names |= DEFAULT_SECTIONS
        elif low in ("all", "everything"):
            names |= ALL_SECTIONS
        elif low in _SECTIONS:
            names.add(low)
    return names


def render_info(server: Server, requested: list[str]) -> str:
    names = wanted_sections(requested)
    parts = []
    for name in ORDER:
        if name in names:
            body = "".join(f"{k}:{v}\r\n" for k, v in _SECTIONS[name](server))
            parts.append(f"# {_TITLES.get(name, name.capitalize())}\r\n{body}")
    return "\r\n".join(parts)
