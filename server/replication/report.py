"""INFO's replication section, with Redis's field names and order (Sentinel and redis-py's
Sentinel client read them), and the replication fields of its stats section."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from server.replication.state import Replication

Fields = list[tuple[str, object]]


def replication_section(repl: Replication) -> Fields:
    now = time.monotonic()
    config = repl.server.config
    rows: Fields = []
    link = repl.master
    if link is None:
        rows.append(("role", "master"))
    else:
        rows += [("role", "slave"), ("master_host", link.host), ("master_port", link.port),
                 ("master_link_status", "up" if link.up else "down"),
                 ("master_last_io_seconds_ago", int(now - link.last_io) if link.up else -1),
                 ("master_sync_in_progress", int(link.state == "sync"))]
        rows += [("slave_read_repl_offset", repl.offset), ("slave_repl_offset", repl.offset)]
        if link.state == "sync":
            total = link.sync_total
            rows += [("master_sync_total_bytes", total),
                     ("master_sync_read_bytes", link.sync_read),
                     ("master_sync_left_bytes", total - link.sync_read if total >= 0 else -1),
                     ("master_sync_perc", f"{link.sync_read * 100 / total:.2f}"
                      if total > 0 else "0.00"),
                     ("master_sync_last_io_seconds_ago", int(now - link.last_io))]
        if not link.up:
            rows.append(("master_link_down_since_seconds", int(now - link.down_since)))
        rows += [("slave_priority", config["replica-priority"]),
                 ("slave_read_only", int(config["replica-read-only"])),
                 ("replica_announced", int(config["replica-announced"]))]
    online = [c for c in repl.replicas if c.repl is not None]
    rows.append(("connected_slaves", len(online)))
    if config["min-replicas-to-write"] and config["min-replicas-max-lag"] and link is None:
        rows.append(("min_slaves_good_slaves", repl.good_replicas()))
    for index, client in enumerate(online):
        rows.append(client.repl.info_line(index, now))  # type: ignore[union-attr]
    backlog = repl.backlog
    rows += [("master_failover_state", "no-failover"),
             ("master_replid", repl.replid), ("master_replid2", repl.replid2),
             ("master_repl_offset", repl.offset),
             ("second_repl_offset", repl.second_replid_offset),
             ("repl_backlog_active", int(backlog is not None)),
             ("repl_backlog_size", config["repl-backlog-size"]),
             ("repl_backlog_first_byte_offset", backlog.first_offset if backlog else 0),
             ("repl_backlog_histlen", backlog.histlen if backlog else 0)]
    return rows


def stats_fields(repl: Replication) -> dict[str, object]:
    """INFO stats' replication counters, by field name."""
    return {"sync_full": repl.sync_full, "sync_partial_ok": repl.sync_partial_ok,
            "sync_partial_err": repl.sync_partial_err,
            "total_net_repl_input_bytes": repl.input_bytes,
            "total_net_repl_output_bytes": repl.output_bytes}


def memory_fields(repl: Replication) -> dict[str, object]:
    """INFO memory's mem_replication_backlog and mem_total_replication_buffers."""
    backlog = repl.backlog
    held = sum(c.repl.held_bytes + c.output_bytes() for c in repl.replicas
               if c.repl is not None)
    size = backlog.histlen if backlog is not None else 0
    return {"mem_replication_backlog": size, "mem_total_replication_buffers": size + held}
