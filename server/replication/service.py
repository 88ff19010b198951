"""Replication plugged into the server core: its propagate hook (state.py adds it with the
backlog), what a closing client leaves, the once-a-second work (replicationCron), REPLCONF
GETACK before the event loop sleeps, and the refusals of writes (a read-only replica's
READONLY, min-replicas-to-write's NOREPLICAS)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from protocol.encoder import encode_command
from server.replication import roles
from server.replication.primary import ONLINE
from server.replication.state import Replication

if TYPE_CHECKING:
    from server.app import Server
    from server.client import Client
    from server.dispatch import CommandSpec

READONLY_TEXT = "READONLY You can't write against a read only replica."
MASTERDOWN_TEXT = ("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to "
                   "'no'.")
NOREPLICAS_TEXT = "NOREPLICAS Not enough good replicas to write."
_GETACK = encode_command([b"REPLCONF", b"GETACK", b"*"])


def attach(server: Server) -> Replication:
    repl = Replication(server)
    service = _Service(repl)
    repl.role_changed = service.arm_refusal
    server.close_hooks.append(repl.detach)
    server.script_write_checks.append(service.refuse_script)
    server.shutdown_hooks.append(service.on_shutdown)
    server.cron_hooks.append(service.cron)
    server.before_sleep_hooks.append(service.before_sleep)
    config = server.config
    for option in ("replica-read-only", "min-replicas-to-write", "replica-serve-stale-data",
                   "replica-ignore-maxmemory"):
        config.on_change(option, lambda _value: service.arm_refusal())
    target = config["replicaof"]
    if target is not None:
        roles.follow(repl, target[0], target[1])
    service.arm_refusal()
    return repl


class _Service:
    def __init__(self, repl: Replication) -> None:
        self.repl = repl
        self.server = repl.server
        self.next_second = 0.0

    def arm_refusal(self) -> None:
        """The write refusal check is registered only while it can refuse anything (every
        write command takes the slower path while a check is registered)."""
        config = self.server.config
        needed = (config["replica-read-only"] and self.repl.master is not None) \
            or config["min-replicas-to-write"] > 0
        checks = self.server.refusal_checks
        if needed and self.refuse not in checks:
            checks.append(self.refuse)
        elif not needed and self.refuse in checks:
            checks.remove(self.refuse)
        server = self.server
        replica = self.repl.master is not None
        if replica and not config["replica-serve-stale-data"]:
            server.add_command_gate(self.stale_gate)
        else:
            server.remove_command_gate(self.stale_gate)
        server.ignore_maxmemory = replica and config["replica-ignore-maxmemory"]

    def stale_gate(self, client: Client, spec: CommandSpec) -> str | None:
        """replica-serve-stale-data no: while the link is down only the commands flagged
        stale (INFO, REPLICAOF, ...) run."""
        link = self.repl.master
        if link is None or link.up or "stale" in spec.flags or client.repl_master:
            return None
        return MASTERDOWN_TEXT

    def refuse(self, client: Client, spec: CommandSpec) -> str | None:
        if not spec.is_write or client.repl_master:
            return None
        repl = self.repl
        config = self.server.config
        if repl.master is not None:
            return READONLY_TEXT if config["replica-read-only"] else None
        wanted = config["min-replicas-to-write"]
        if wanted and config["min-replicas-max-lag"] and repl.good_replicas() < wanted:
            return NOREPLICAS_TEXT
        return None

    def on_shutdown(self, flags: int) -> bool:
        """The link to the primary ends for good before the clients close (its coroutine
        must not reconnect while the event loop winds down)."""
        link = self.repl.master
        if link is not None:
            link.stop()
        return True

    def refuse_script(self, caller: Client) -> str | None:
        """A script that may write, at its start (scriptPrepareForRun)."""
        repl = self.repl
        config = self.server.config
        if repl.master is not None:
            if config["replica-read-only"] and not caller.repl_master:
                return "READONLY Can not run script with write flag on readonly replica"
            return None
        wanted = config["min-replicas-to-write"]
        if wanted and config["min-replicas-max-lag"] and repl.good_replicas() < wanted:
            return NOREPLICAS_TEXT
        return None

    def before_sleep(self) -> None:
        waiters = self.repl.waiters
        if waiters.getack_due:
            waiters.getack_due = False
            if self.repl.replicas:
                self.repl.feed_stream(_GETACK)

    def cron(self) -> None:
        """Once a second (the server's cron runs hz times a second)."""
        now = time.monotonic()
        if now < self.next_second:
            return
        self.next_second = now + 1.0
        repl = self.repl
        self.arm_refusal()  # (REPLICAOF changed the role)
        link = repl.master
        if link is not None:
            roles.start_links(repl)
            link.cron(now)
        config = self.server.config
        if now - repl.last_ping >= config["repl-ping-replica-period"]:
            repl.last_ping = now
            repl.ping_replicas()
        timeout = config["repl-timeout"]
        for client in list(repl.replicas):
            state = client.repl
            if state is not None and state.state == ONLINE and not state.old_protocol \
                    and not state.rdb_only and now - state.ack_time > timeout:
                self.server.log.warning(f"Disconnecting timedout replica (streaming sync): "
                                        f"{client.addr}")
                if client.sink is not None:
                    client.sink.close_client()
        repl.full_sync.cron()
        if repl.backlog_idle_expired(now):
            self.server.log.notice(f"Replication backlog freed after "
                                   f"{config['repl-backlog-ttl']} seconds without connected "
                                   f"replicas.")
            repl.free_backlog()
