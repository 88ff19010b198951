"""The server core: the state every client shares (databases, clients, statistics, limits),
the registries the subsystems and commands plug into, and the event-loop hooks (the
before-sleep pass, the cron).

It knows no command and constructs no subsystem: server/app.py composes it with them. The
subsystems it calls on (blocking, pubsub, tracking, acl, evictor) are attributes that the
composition sets; the registries are lists of hooks:

- propagate_hooks: a write's effect as a command (the AOF; replicas); a hook with a `run`
  attribute takes a run of them in one call through it (propagate_run);
- before_sleep_hooks, cron_hooks: work after each event-loop batch, and on the timer;
- close_hooks: what a closing client must be taken out of (blocking, Pub/Sub, tracking...);
- shutdown_hooks: the shutdown's steps (server/shutdown.py);
- refusal_checks: why a write must be refused now (MISCONF, READONLY, NOREPLICAS; the
  cold tier's when it cannot write nodes out, which grows with the data and so is also
  counted in data_refusals).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocol.encoder import encode_into
from server import command_stats, notify, shutdown
from server.block_request import POSTPONE, BlockRequest, timeout_reply
from server.client import REPLY_MUTED, REPLY_PUSHES_WAITING, Client
from server.config import Config
from server.connection import adjust_open_files_limit
from server.dispatch import (
    CommandSpec,
    all_specs,
    clear_fast_lookup,
    commands_processed,
    lookup,
    run_commands,
)
from server.errors import OOM_TEXT
from server.heap import HeapTrimmer
from server.latency import LatencyMonitor
from server.listen import listen
from server.log import Logger
from server.memory_report import rss_bytes
from server.monitor_feed import feed_monitors
from server.output_limit import CHECK_STEP
from server.pause import ClientPause
from server.slowlog import Slowlog
from server.stats import Stats
from server.version import VERSION
from storage import native
from storage.access import AccessClock
from storage.keyspace import Database

if TYPE_CHECKING:
    from server.acl.access import AccessControl
    from server.blocking import Blocking
    from server.cold_tier import ColdTierService
    from server.eviction import Evictor
    from server.pubsub import PubSub
    from server.tracking import Tracking

PropagateHook = Callable[[int, list[bytes]], None]
CloseHook = Callable[[Client], None]
_JOIN = b"".join
# The cron trims the heap once this much was freed in it since the last trim (jemalloc, which
# Redis uses, likewise gives back freed pages within seconds); over maxmemory, one page will do.
HEAP_TRIM_MIN_FREED = 1 << 20
_PAGE = os.sysconf("SC_PAGE_SIZE")


class ServerCore:
    # The subsystems, set by the composition (server/app.py).
    blocking: Blocking
    pubsub: PubSub
    tracking: Tracking
    acl: AccessControl
    evictor: Evictor
    cold_tier: ColdTierService

    def __init__(self, config: Config, logger: Logger | None = None) -> None:
        self.config = config
        self.log = logger or Logger(config["loglevel"], config["logfile"])
        # The clocks and policy behind every value's `lru` (OBJECT IDLETIME / FREQ, eviction).
        self.access = AccessClock()
        self.access.log_factor = self._mirror_into(self.access, "lfu-log-factor", "log_factor")
        self.access.decay_time = self._mirror_into(self.access, "lfu-decay-time", "decay_time")
        self.dbs = [Database(i, access=self.access) for i in range(config["databases"])]
        for db in self.dbs:
            db.on_expire = self._key_expired
            db.on_new = self._key_created
        self.clients: dict[int, Client] = {}
        self.next_client_id = 1
        self.stats = Stats()
        self.pause = ClientPause(self)
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]
        self.pending_writes: list[Client] = []
        # A script runs past busy-reply-threshold: the BUSY error the others get meanwhile
        # (server/scripting/busy.py); "" otherwise.
        self.script_busy = ""
        self.connecting: set[Any] = set()  # Connections accepted, not made yet
        self.script_deny_disabled = False  # DEBUG SET-DISABLE-DENY-SCRIPTS
        self._before_sleep_scheduled = False
        self.propagate_hooks: list[PropagateHook] = []
        # The hooks that also take what only replicas get (PUBLISH): the replication stream's.
        self.replica_hooks: list[PropagateHook] = []
        # The effects of an EXEC or a script, held until it ends (propagate_batch), each with
        # whether it is for replicas only.
        self.propagate_batch: list[tuple[int, list[bytes], bool]] | None = None
        self._batch_depth = 0
        self.before_sleep_hooks: list[Callable[[], None]] = []
        self.cron_hooks: list[Callable[[], None]] = []
        # Run every loading-process-events-interval-bytes of an AOF replayed (the cron does not
        # run while the server loads).
        self.loading_hooks: list[Callable[[], None]] = []
        # Run at shutdown with its flags (server/shutdown_flags.py); False: it can't be done
        # (the final save failed), so the server does not exit.
        self.shutdown_hooks: list[Callable[[int], bool]] = []
        self.shutdown_waiters: list[Client] = []  # clients whose SHUTDOWN is under way
        self.refusal_checks: list[Callable[[Client, CommandSpec], str | None]] = []
        # How many of them may answer differently after a write adds data, as the OOM check
        # may: while any is registered, a pipelined run (CommandSpec.pipelined) is not taken,
        # since it asks the checks once for all its commands.
        self.data_refusals = 0
        # Why a script that may write (a shebang without no-writes) cannot start now, beside
        # MISCONF: a read-only replica's READONLY, NOREPLICAS (scriptPrepareForRun).
        self.script_write_checks: list[Callable[[Client], str | None]] = []
        self.close_hooks: list[CloseHook] = []
        # Checked before any command, on the dispatcher's checked path (add_command_gate).
        self.command_gates: list[Callable[[Client, CommandSpec], str | None]] = []
        self.watched_keys: dict[tuple[int, bytes], set[Client]] = {}
        self.monitors: list[Client] = []
        # The client whose command's handler call() runs, when it is one that can be sent
        # Pub/Sub output or invalidations (Client.checked_path): they wait for its reply.
        self.current_client: Client | None = None
        # Client-side caching; tracking_active (kept by Tracking) is whether a key change may
        # owe invalidation messages: the one test that hot paths make.
        self.tracking_active = False
        # notify-keyspace-events as bits (server/notify.py); 0, the default, sends nothing.
        self.notify_flags: int = self._mirror("notify-keyspace-events", "notify_flags")
        self.slowlog = Slowlog()
        self.dirty = 0  # changes since the last snapshot
        self.listeners: list[asyncio.AbstractServer] = []
        self.run_id = os.urandom(20).hex()
        self.start_time = time.time()
        self.shutdown_requested: asyncio.Future[int] | None = None  # its result: the flags
        self.cron_loops = 0
        # time.monotonic() as of the last cron tick, as Redis's server.unixtime: what a read
        # stamps on its client (CLIENT LIST's idle=, the idle timeout: whole seconds) without
        # reading the clock at every read.
        self.cached_monotonic = time.monotonic()
        # The wall clock (ns) when the running top-level command started: Redis's
        # commandTimeSnapshot, which XADD's * takes (set by dispatch's call and run_commands).
        self.command_time_ns = time.time_ns()
        self.unix_listening = False  # (the unixsocket file is ours to remove at shutdown)
        # A replica: keys whose time passed read as missing but stay until the primary's DEL,
        # and the active expiry cycle does not run (server/replication sets it).
        self.replica_mode = False
        # A replica with replica-ignore-maxmemory: no eviction, no OOM (its primary evicts).
        self.ignore_maxmemory = False
        self.loading = False
        self.persistence: Any = None  # server.persistence manager, when enabled
        self.debug_handlers: dict[str, Callable[[Client, list[bytes]], Any]] = {}
        self.used_memory = 0  # RSS, what maxmemory is checked against (_measure_memory)
        self.heap = HeapTrimmer()  # gives freed memory back, so that the RSS falls
        self._next_heap_trim = 0.0  # when the cron looks at the heap's free bytes next
        self._heap_dirty = 0  # self.dirty when it last looked
        config.on_change("loglevel", self.log.set_level)
        # Read on every command: kept as attributes rather than looked up in the config.
        # slowlog-log-slower-than, with "never" (a negative value) as a duration no command
        # reaches, and latency-monitor-threshold (ms, 0 = off) likewise; notable_us is the
        # lower of the two, so a command makes one comparison for both.
        self.latency = LatencyMonitor(config)
        self.slowlog_min_us = 0
        self.latency_min_us = 0
        self.notable_us = 0
        self._set_slowlog_threshold(config["slowlog-log-slower-than"])
        config.on_change("slowlog-log-slower-than", self._set_slowlog_threshold)
        self._set_latency_threshold(config["latency-monitor-threshold"])
        config.on_change("latency-monitor-threshold", self._set_latency_threshold)
        # latency-tracking decides what the histograms show (server/command_stats.py).
        config.on_change("latency-tracking",
                         lambda on: command_stats.set_tracking(all_specs(), on))
        if not config["latency-tracking"]:
            command_stats.set_tracking(all_specs(), False)
        self.maxmemory: int = config["maxmemory"]
        config.on_change("maxmemory", self._set_maxmemory)
        # Read by every XADD: attributes, cheaper than two config lookups.
        self.stream_node_max_bytes: int = self._mirror("stream-node-max-bytes",
                                                       "stream_node_max_bytes")
        self.stream_node_max_entries: int = self._mirror("stream-node-max-entries",
                                                         "stream_node_max_entries")
        self.query_buffer_limit: int = self._mirror("client-query-buffer-limit",
                                                    "query_buffer_limit")
        # (hard, soft, soft_seconds) for normal clients, None when unlimited (the default).
        self.normal_output_limit: tuple[int, int, int] | None = None
        self.pubsub_output_limit: tuple[int, int, int] | None = None  # clients in Pub/Sub mode
        self._set_output_limits(config["client-output-buffer-limit"])
        config.on_change("client-output-buffer-limit", self._set_output_limits)
        config.on_change("proto-max-bulk-len", self._set_bulk_limit)

    # -- output -------------------------------------------------------------------------------
    def write_reply(self, client: Client, value: Any) -> None:
        if client.reply_flags & REPLY_MUTED:  # CLIENT REPLY OFF / SKIP
            return
        encode_into(client.out, value, client.protocol)
        if not client.pending_write:
            self.queue_write(client)
        client.check_output_limit()

    def notify(self, kind: int, event: bytes, key: bytes, dbid: int) -> None:
        """notifyKeyspaceEvent: publish an event of class `kind` about `key` (a no-op unless
        notify-keyspace-events asks for that class)."""
        flags = self.notify_flags
        if not flags & kind:
            return
        if flags & notify.KEYSPACE:
            self.pubsub.publish(notify.keyspace_channel(dbid, key), event)
        if flags & notify.KEYEVENT:
            self.pubsub.publish(notify.keyevent_channel(dbid, event), key)

    def notify_replaced(self, db: Database, key: bytes, old: object, new: object) -> None:
        """The overwritten / type_changed events of a write that replaced `old` with `new`."""
        if self.notify_flags:
            for kind, event in notify.replaced_events(old, new):
                self.notify(kind, event, key, db.id)

    def write_push(self, client: Client, data: bytes, hold: bool = True) -> None:
        """Encoded Pub/Sub output (a message, a subscription's confirmation, an invalidation):
        written even under CLIENT REPLY OFF, as Redis's CLIENT_PUSHING does. The running
        client's waits for its command's reply, unless `hold` is False (it was caused before
        the command ran)."""
        if client.closed:
            return
        if hold and client is self.current_client:  # after its command's reply (command_done)
            client.waiting_pushes.append(data)
            client.reply_flags |= REPLY_PUSHES_WAITING
            return
        client.out.append(data)
        if not client.pending_write:
            self.queue_write(client)
        client.unchecked_output += len(data)
        if client.unchecked_output >= CHECK_STEP:  # (server/output_limit.py)
            client.check_output_limit()

    def queue_write(self, client: Client) -> None:
        """The client has output: the before-sleep pass writes it (once per batch)."""
        client.pending_write = True
        self.pending_writes.append(client)
        if not self._before_sleep_scheduled:
            self.schedule_before_sleep()

    def _mirror(self, option: str, attr: str) -> Any:
        """An option's value, for the attribute ``attr``, which CONFIG SET keeps up to date
        from now on: for options read too often for a config lookup."""
        return self._mirror_into(self, option, attr)

    def _mirror_into(self, target: object, option: str, attr: str) -> Any:
        """_mirror for an attribute of another object."""
        self.config.on_change(option, lambda value: setattr(target, attr, value))
        return self.config[option]

    def schedule_before_sleep(self) -> None:
        if not self._before_sleep_scheduled:
            self._before_sleep_scheduled = True
            self.loop.call_soon(self.before_sleep)

    def before_sleep(self) -> None:
        """Runs once after each batch of reads: wake blocked clients, flush the AOF (fsync first
        with appendfsync always, so no reply is sent for a write that is not on disk), then
        write every client's pending output once."""
        self._before_sleep_scheduled = False
        if self.blocking.ready_keys:
            self.blocking.handle_ready_keys()
        for hook in self.before_sleep_hooks:
            hook()
        pending = self.pending_writes
        if pending:
            self.pending_writes = []
            self.write_clients(pending)

    def write_clients(self, pending: list[Client]) -> None:
        """Write these clients' pending output (before_sleep's last step)."""
        # The output of an authenticated client whose class (normal, or pubsub for a
        # subscriber) has no output limit goes straight to the transport (sink.send); the
        # sink's write() applies the limits.
        normal_limit = self.normal_output_limit
        pubsub_limit = self.pubsub_output_limit
        written = 0
        writes = len(pending)  # (less the clients with nothing to write, counted below)
        for client in pending:
            client.pending_write = False
            sink = client.sink
            if client.closed or sink is None:
                writes -= 1
                continue
            out = client.out
            if out:
                client.out = []
                client.out_counted = client.out_size = 0
                if client.authenticated and (pubsub_limit if client.subscribed
                                             else normal_limit) is None:
                    # Exact bytes, which uvloop writes as they are (anything else it wraps in
                    # a memoryview first). join hands back a lone bytes chunk uncopied.
                    data = _JOIN(out)
                    written += len(data)
                    sink.send(data)
                else:
                    size = sum(map(len, out))
                    written += size
                    sink.write(out, size)
            else:
                writes -= 1
            if client.close_after_reply:
                sink.close_client()
        stats = self.stats
        stats.net_output_bytes += written
        stats.writes_processed += writes
        stats.fold_reads()  # (once a pass, so that the read sizes never pile up)

    # -- running commands ---------------------------------------------------------------------
    def block_or_answer(self, client: Client, request: BlockRequest, argv: list[bytes]) -> None:
        """A command asked to wait: block the client (not inside EXEC, which answers at once
        with the command's timeout reply)."""
        if request is POSTPONE:
            # The command runs again, with every check, once the pause ends.
            client.pending_cmds.append(argv)
            self.pause.postpone(client)
            return
        if client.in_exec:
            self.write_reply(client, timeout_reply(request.timeout_reply))
            return
        self.blocking.block(client, request, lookup(argv))

    def resume_client(self, client: Client) -> None:
        """After a client is unblocked, continue with the commands it pipelined meanwhile."""
        if client.pending_cmds and client.blocked is None and not client.closed:
            commands = client.pending_cmds
            client.pending_cmds = []
            self.loop.call_soon(run_commands, client, commands)

    # -- keyspace signals ---------------------------------------------------------------------
    def signal_modified_key(self, db: Database, key: bytes, internal: bool = False,
                            before_command: bool = False) -> None:
        """A key changed (signalModifiedKey): invalidate WATCHes on it (touchWatchedKey) and
        the client-side caches that may hold it (trackingInvalidateKey). `internal`: the
        server changed it (expiry, eviction), not the running client's command;
        `before_command`: it happened before the running client's command ran (eviction),
        so that client's invalidation precedes the reply instead of following it."""
        if self.watched_keys:
            ref = (db.id, key)
            watchers = self.watched_keys.get(ref)
            if watchers:
                for client in watchers:
                    if ref in client.watched_stale:
                        # Expired at WATCH: its deletion changes nothing (touchWatchedKey).
                        if key not in db.data:
                            client.watched_stale.discard(ref)
                        continue
                    client.cas_dirty = True
        if self.tracking_active:
            self.tracking.invalidate_key(key, None if internal else self.current_client,
                                         now=before_command)

    def signal_key_as_ready(self, db: Database, key: bytes) -> None:
        self.blocking.signal_key_as_ready(db.id, key)

    def key_changed(self, db: Database, key: bytes, internal: bool = False) -> None:
        """Both signals: for writes that add data blocked readers may want."""
        if self.watched_keys or self.tracking_active:
            self.signal_modified_key(db, key, internal)
        if self.blocking.blocking_keys:
            self.blocking.signal_key_as_ready(db.id, key)

    def _key_expired(self, db: Database, key: bytes) -> None:
        """A key's time passed (lazily or in the active cycle): log a DEL, as Redis does."""
        self.stats.expired_keys += 1
        self.notify(notify.EXPIRED, b"expired", key, db.id)
        self.propagate(db, [b"DEL", key])
        self.key_changed(db, key, internal=True)

    def _key_created(self, db: Database, key: bytes) -> None:
        self.notify(notify.NEW, b"new", key, db.id)

    def touch_all_watched(self, db: Database | None = None) -> None:
        """FLUSHDB/FLUSHALL/SWAPDB: every watched key in db (or all dbs) is dirty."""
        for (db_id, _key), watchers in self.watched_keys.items():
            if db is None or db_id == db.id:
                for client in watchers:
                    client.cas_dirty = True

    # -- propagation: the one way writes reach the AOF and the replicas ------------------------
    def propagate(self, db: Database, argv: list[bytes], changes: int = 1) -> None:
        """Record a write's effect (alsoPropagate); argv is the command that reproduces it.
        ``changes`` is what it adds to the dirty counter (rdb_changes_since_last_save), which
        Redis counts per command: per entry deleted or acknowledged for some."""
        self.dirty += changes
        batch = self.propagate_batch
        if batch is not None:
            batch.append((db.id, argv, False))
            return
        for hook in self.propagate_hooks:
            hook(db.id, argv)

    def propagate_run(self, db: Database, argvs: list[list[bytes]]) -> None:
        """propagate() of each argv in turn, for a run of writes (a pipeline of XADDs): a
        hook with a `run` form takes them all in one call, which saves the AOF a call chain
        and an encoding per write."""
        self.dirty += len(argvs)
        dbid = db.id
        batch = self.propagate_batch
        if batch is not None:
            batch.extend([(dbid, argv, False) for argv in argvs])
            return
        for hook in self.propagate_hooks:
            run = getattr(hook, "run", None)
            if run is not None:
                run(dbid, argvs)
            else:
                for argv in argvs:
                    hook(dbid, argv)

    def propagate_to_replicas(self, db: Database, argv: list[bytes]) -> None:
        """forceCommandPropagation(PROPAGATE_REPL): the command reaches the replicas (so
        their subscribers get PUBLISH's message) but not the AOF."""
        batch = self.propagate_batch
        if batch is not None:
            batch.append((db.id, argv, True))
            return
        for hook in self.replica_hooks:
            hook(db.id, argv)

    def begin_propagation_batch(self) -> None:
        """EXEC and scripts: the effects of the commands they run go out together when the
        outermost of them ends (end_propagation_batch)."""
        self._batch_depth += 1
        if self.propagate_batch is None:
            self.propagate_batch = []

    def end_propagation_batch(self) -> None:
        """propagatePendingCommands: one effect goes out alone, several inside MULTI / EXEC
        (MULTI in the first one's database, so a SELECT goes before it, and EXEC in the
        last one's, so none goes before EXEC)."""
        self._batch_depth -= 1
        if self._batch_depth > 0:
            return
        batch, self.propagate_batch = self.propagate_batch, None
        if not batch:
            return
        if len(batch) > 1:
            batch = [(batch[0][0], [b"MULTI"], False), *batch,
                     (batch[-1][0], [b"EXEC"], False)]
        for dbid, argv, replicas_only in batch:
            for hook in self.replica_hooks if replicas_only else self.propagate_hooks:
                hook(dbid, argv)

    # -- checks and statistics ----------------------------------------------------------------
    def refuse_reason(self, client: Client, spec: CommandSpec) -> str | None:
        """Why a write/denyoom command must be refused now (OOM, MISCONF), or None.
        (dispatch.call has the same steps inline.)"""
        if self.maxmemory and spec.denyoom and self.out_of_memory():
            return OOM_TEXT
        for check in self.refusal_checks:
            reason = check(client, spec)
            if reason is not None:
                return reason
        return None

    def over_maxmemory(self) -> bool:
        """Memory is above maxmemory (never while loading the data at start)."""
        return (self.used_memory > self.maxmemory and not self.loading
                and not self.ignore_maxmemory)

    def out_of_memory(self) -> bool:
        """Over maxmemory even after evicting what the policy allows (performEvictions'
        EVICT_FAIL): commands that may grow memory are refused."""
        return self.over_maxmemory() and not self.evictor.perform()

    def _set_maxmemory(self, value: int) -> None:
        """CONFIG SET maxmemory (updateMaxmemory): measure the memory now, so that the very
        next command is checked against the new limit rather than the cron's last reading."""
        self.maxmemory = value
        if value:
            self._measure_memory(time.monotonic())
            if value < self.used_memory:
                self.log.warning(
                    f"WARNING: the new maxmemory value set via CONFIG SET ({value}) is smaller "
                    f"than the current memory usage ({self.used_memory}). This will result in "
                    "key eviction and/or the inability to accept new write commands depending "
                    "on the maxmemory-policy.")

    def _measure_memory(self, now: float) -> None:
        """Read used_memory (the RSS), what maxmemory is checked against. It changes only
        here, so here is where it crosses maxmemory. (As in Redis, whose check runs only
        while maxmemory is set, a period above it that maxmemory 0 interrupts goes on
        counting until a limit is set again.)"""
        self.used_memory = rss_bytes()
        # Over the limit, memory freed since the last trim (a DEL, a FLUSHALL, an XTRIM)
        # may only be waiting in malloc's heap: hand it back before refusing writes.
        if self.over_maxmemory() and self.heap.trim_if_freed(_PAGE):
            self.used_memory = rss_bytes()
        self.stats.note_over_maxmemory(self.over_maxmemory(), now)

    def _set_slowlog_threshold(self, value: int) -> None:
        self.slowlog_min_us = value if value >= 0 else 1 << 64
        self.notable_us = min(self.slowlog_min_us, self.latency_min_us)

    def _set_latency_threshold(self, value_ms: int) -> None:
        self.latency_min_us = value_ms * 1000 if value_ms else 1 << 64
        self.notable_us = min(self.slowlog_min_us, self.latency_min_us)

    def _set_output_limits(self, limits: dict[str, tuple[int, int, int]]) -> None:
        normal = limits.get("normal")
        self.normal_output_limit = normal if normal and (normal[0] or normal[1]) else None
        pubsub = limits.get("pubsub")
        self.pubsub_output_limit = pubsub if pubsub and (pubsub[0] or pubsub[1]) else None

    def _set_bulk_limit(self, limit: int) -> None:
        """CONFIG SET proto-max-bulk-len applies to connections already open too."""
        for client in self.clients.values():
            reader = getattr(client.sink, "reader", None)
            if reader is not None:
                reader.proto_max_bulk_len = limit

    def note_slow_command(self, client: Client, spec: CommandSpec, argv: list[bytes],
                          elapsed_us: int, reply: Any) -> None:
        """A command took at least the slowlog's or the latency monitor's threshold. (The
        latency monitor, as Redis's, leaves out runs of a command that blocks.)"""
        if elapsed_us >= self.slowlog_min_us:
            self.slowlog_add(client, spec, argv, elapsed_us)
        if client.blocked is None and type(reply) is not BlockRequest:
            self.latency.add_if_needed("fast-command" if "fast" in spec.flags else "command",
                                       elapsed_us // 1000)

    def slowlog_add(self, client: Client, spec: CommandSpec, argv: list[bytes],
                    elapsed_us: int) -> None:
        """A command took at least slowlog-log-slower-than microseconds."""
        if "skip-slowlog" not in spec.flags:
            self.slowlog.add(client, argv, elapsed_us, self.config["slowlog-max-len"])

    def feed_monitors(self, client: Client, argv: list[bytes]) -> None:
        feed_monitors(self.monitors, client, argv)

    # -- clients ------------------------------------------------------------------------------
    def new_client(self, sink: Any, addr: str, laddr: str) -> Client:
        client = Client(self.next_client_id, self, sink, addr, laddr)
        self.next_client_id += 1
        self.clients[client.id] = client
        self.stats.total_connections_received += 1
        return client

    def remove_client(self, client: Client) -> None:
        if client.closed:
            return
        client.closed = True
        self.clients.pop(client.id, None)
        for hook in self.close_hooks:
            hook(client)
        client.release()

    def forget_monitor(self, client: Client) -> None:
        if client.monitor and client in self.monitors:
            self.monitors.remove(client)

    def unwatch_all(self, client: Client) -> None:
        for ref in client.watched:
            watchers = self.watched_keys.get(ref)
            if watchers is not None:
                watchers.discard(client)
                if not watchers:
                    del self.watched_keys[ref]
        client.watched = []
        client.watched_stale.clear()
        client.cas_dirty = False

    # -- cron ---------------------------------------------------------------------------------
    def add_command_gate(self, gate: Callable[[Client, CommandSpec], str | None]) -> None:
        """A check every command passes from now on (until remove_command_gate)."""
        if gate not in self.command_gates:
            self.command_gates.append(gate)
            clear_fast_lookup()  # (the fast path skips the gates: empty it)

    def remove_command_gate(self, gate: Callable[[Client, CommandSpec], str | None]) -> None:
        if gate in self.command_gates:
            self.command_gates.remove(gate)

    def set_replica_mode(self, on: bool) -> None:
        self.replica_mode = on
        self.log.role = "S" if on else "M"  # (the role letter of the log lines, as Redis's)
        paused = on or self.pause.mode is not None
        for db in self.dbs:
            db.expiry_paused = paused

    def _active_expire_cycle(self) -> None:
        """activeExpireCycle over every database, with its statistics and latency event."""
        if not any(db.active_expire_enabled for db in self.dbs):
            return  # (DEBUG SET-ACTIVE-EXPIRE 0: Redis skips the cycle, statistics too)
        started = time.perf_counter()
        sampled = expired = 0
        stopped_early = False
        for db in self.dbs:
            if db.expires:
                cycle = db.active_expire()
                sampled += cycle.sampled
                expired += len(cycle.removed)
                stopped_early = stopped_early or cycle.stopped_early
        elapsed = time.perf_counter() - started
        self.stats.note_expire_cycle(int(elapsed * 1_000_000), sampled, expired, stopped_early)
        self.latency.add_if_needed("expire-cycle", int(elapsed * 1000))

    def cron(self) -> None:
        """serverCron: active expiry, client timeouts, stats sampling, persistence timers."""
        self.cron_loops += 1
        self.cached_monotonic = time.monotonic()
        self.access.tick()
        try:
            self._active_expire_cycle()
            self.stats.sample(commands_processed())
            # Once a second, if anything was written since (mallinfo2 walks malloc's free
            # lists: a few ms on a fragmented heap of a GB), or asked for (a client that
            # held big buffers closed).
            if self.heap.requested or (self.cached_monotonic >= self._next_heap_trim
                                       and self.dirty != self._heap_dirty):
                self._next_heap_trim = self.cached_monotonic + 1.0
                self._heap_dirty = self.dirty
                self.heap.trim_if_freed(HEAP_TRIM_MIN_FREED)
            if self.maxmemory:
                self._measure_memory(self.cached_monotonic)
            self.evictor.forget_stale(self.cached_monotonic)
            if self.tracking.clients:  # (an idle server goes under a lowered limit too)
                self.tracking.limit_used_slots()
            idle_timeout = self.config["timeout"]
            if idle_timeout:
                now = self.cached_monotonic
                for client in list(self.clients.values()):
                    # (clientsCronHandleTimeout: not replicas, the primary's link, blocked
                    # clients, MONITOR or clients in Pub/Sub mode)
                    if (client.blocked is None and not client.monitor
                            and now - client.last_interaction > idle_timeout
                            and client.sink is not None and client.repl is None
                            and not client.repl_master
                            and (client.subs is None or not client.subs.total())):
                        self.log.verbose("Closing idle client")
                        client.sink.close_client()
            for hook in self.cron_hooks:
                hook()
        except Exception as exc:  # the cron must never stop
            self.log.warning(f"cron error: {exc!r}")
        self.loop.call_later(1.0 / self.config["hz"], self.cron)

    # -- start and stop -----------------------------------------------------------------------
    async def serve(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.shutdown_requested = self.loop.create_future()
        if self.persistence is not None:
            self.persistence.load()
        adjust_open_files_limit(self)
        self.log.notice(f"Server initialized, xstreamd (Redis {VERSION} compatible)")
        if not native.available():  # (see storage/native.py)
            self.log.notice("The stream listpack loops run in Python: storage/_native was not "
                            "built, or XSTREAMD_PURE_PYTHON is set")
        await listen(self)
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.loop.add_signal_handler(sig, shutdown.on_signal, self, sig)
        self.loop.add_signal_handler(signal.SIGHUP, self.log.reopen)
        self.loop.call_later(1.0 / self.config["hz"], self.cron)
        while not shutdown.finish_shutdown(self, await self.shutdown_requested):
            self.shutdown_requested = self.loop.create_future()  # it failed: serve on
