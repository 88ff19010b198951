"""Connections: to the primary (at ``host``/``port``, or the one Sentinel names now), to
replicas for reads, and running an operation so that it survives a failover.

Nothing here is pickled. Clients are created per process on first use and cached; readers
and writers carry ``ConnOptions``/``ReadOptions`` only and ask for a client where they run.

Every client returns raw RESP2 replies: RESP2 is pinned (newer redis-py defaults to RESP3)
and response callbacks are cleared, so a command returns the server's reply as is (bytes,
lists, None), which keeps parsing explicit and cheap.

Failover. With ``sentinels`` the primary's client is redis-py's ``Sentinel.master_for``:
each new connection asks Sentinel for the current primary, and a connection that meets a
READONLY reply (its server was demoted) is dropped as a connection error. Operations run
through a ``Link``: ``Primary.run(fn)`` calls ``fn(client)`` and, when it fails with a
connection error, a timeout, READONLY or a write that too few replicas acknowledged,
drops the pool's connections and calls ``fn`` again, with backoff, until ``retryTimeout``
seconds have passed since the first failure. Callers choose what ``fn`` covers so that
running it twice is safe (a read, a whole idempotent write transaction, a claim that the
planner takes over again; see the README for pipelined writes, which are at-least-once).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel

from spark_connector import ids, streams
from spark_connector.options import PREFER_REPLICA, Address, ConnOptions, ReadOptions

T = TypeVar("T")
log = logging.getLogger("spark_connector")

FIRST_BACKOFF = 0.1  # seconds; doubled after every failed attempt, up to MAX_BACKOFF
MAX_BACKOFF = 2.0
SENTINEL_TIMEOUT = 5.0  # seconds, at most, for a Sentinel to answer (it answers at once)
MAX_REPLICA_FAILURES = 3  # a partition's reads on replicas that failed, before giving up
REPLICA_POLL = 0.1  # seconds between looks at a lagging replica


class NotReplicated(RuntimeError):
    """A write reached the primary, but fewer replicas than ``waitReplicas`` acknowledged
    it within ``waitTimeout`` (WAIT)."""


class PrimaryUnavailable(redis.ConnectionError):
    """An operation kept failing against the primary for ``retryTimeout`` seconds."""


class ReplicaUnavailable(RuntimeError):
    """``readFrom=replica``: no replica could serve a partition's range."""


# Errors after which an operation is run again against the primary as it is then: the
# server went away or timed out (MasterNotFoundError and LOADING are ConnectionErrors
# too), it was demoted to a replica (READONLY; Sentinel-managed connections turn that into
# a ConnectionError themselves), or a write was not replicated as asked (WAIT, or the
# primary's own min-replicas-to-write: NOREPLICAS, as right after a failover).
RETRYABLE: tuple[type[Exception], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    redis.ReadOnlyError,
    NotReplicated,
)
RETRYABLE_REPLIES = ("NOREPLICAS",)


def retryable(exc: BaseException) -> bool:
    """Whether ``call`` runs an operation again after ``exc``."""
    if isinstance(exc, RETRYABLE):
        return True
    return isinstance(exc, redis.ResponseError) and str(exc).startswith(RETRYABLE_REPLIES)


def _no_retry() -> Retry:
    # redis-py's own retries (10 by default) would hide failures from the loop below
    return Retry(NoBackoff(), 0)


def _raw(client: redis.Redis) -> redis.Redis:
    client.response_callbacks.clear()
    return client


def _server_kwargs(conn: ConnOptions) -> dict[str, Any]:
    return {
        "db": conn.db,
        "username": conn.username,
        "password": conn.password,
        "socket_timeout": conn.timeout,
        "socket_connect_timeout": conn.timeout,
        "decode_responses": False,
        "protocol": 2,
    }


_lock = threading.RLock()
_sentinels: dict[tuple[Any, ...], Sentinel] = {}
_primaries: dict[tuple[int, ConnOptions], redis.Redis] = {}
_replicas: dict[tuple[int, ConnOptions, Address], redis.Redis] = {}


def sentinel(conn: ConnOptions) -> Sentinel:
    """The cached redis-py ``Sentinel`` for ``conn.sentinels`` in this process."""
    key = (os.getpid(), conn.sentinels, conn.sentinel_username, conn.sentinel_password,
           conn.timeout)
    with _lock:
        found = _sentinels.get(key)
        if found is None:
            timeout = min(conn.timeout, SENTINEL_TIMEOUT)
            found = Sentinel(
                list(conn.sentinels),
                sentinel_kwargs={
                    "socket_timeout": timeout,
                    "socket_connect_timeout": timeout,
                    "username": conn.sentinel_username,
                    "password": conn.sentinel_password,
                    "retry": _no_retry(),
                },
            )
            _sentinels[key] = found
        return found


def client(conn: ConnOptions) -> redis.Redis:
    """The cached client of this process for the primary ``conn`` names."""
    key = (os.getpid(), conn)
    with _lock:
        found = _primaries.get(key)
        if found is None:
            if conn.sentinels:
                assert conn.sentinel_master is not None
                found = sentinel(conn).master_for(
                    conn.sentinel_master, retry=_no_retry(), **_server_kwargs(conn)
                )
            else:
                # with retryTimeout the loop in call() retries; without, redis-py's own
                # retries stay as they were
                own = {"retry": _no_retry()} if conn.retry_timeout > 0 else {}
                found = redis.Redis(
                    host=conn.host,
                    port=conn.port,
                    unix_socket_path=conn.unix_path,  # (when set, host and port go unused)
                    **own,
                    **_server_kwargs(conn),
                )
            _primaries[key] = _raw(found)
        return found


def replica_client(conn: ConnOptions, address: Address) -> redis.Redis:
    """The cached client of this process for the replica at ``address``."""
    key = (os.getpid(), conn, address)
    with _lock:
        found = _replicas.get(key)
        if found is None:
            found = _raw(redis.Redis(host=address[0], port=address[1], retry=_no_retry(),
                                     **_server_kwargs(conn)))
            _replicas[key] = found
        return found


def replica_addresses(ropts: ReadOptions) -> list[Address]:
    """The replicas to read from: option ``replicas``, or those Sentinel knows and does not
    consider down (``SENTINEL REPLICAS``)."""
    if ropts.replicas:
        return list(ropts.replicas)
    conn = ropts.conn
    if not conn.sentinels or conn.sentinel_master is None:
        return []
    found = sentinel(conn).discover_slaves(conn.sentinel_master)
    return [(str(host), int(port)) for host, port in found]


def close_clients() -> None:
    """Close every client this process opened (used by stop() and tests)."""
    with _lock:
        for found in [*_primaries.values(), *_replicas.values()]:
            try:
                found.close()
            except Exception:  # closing is best effort
                pass
        for watcher in _sentinels.values():
            try:
                watcher.close()
            except Exception:  # closing is best effort
                pass
        _primaries.clear()
        _replicas.clear()
        _sentinels.clear()


def call(conn: ConnOptions, fn: Callable[[redis.Redis], T], what: str) -> T:
    """``fn(client)`` on the primary, run again after a retryable failure (see the module
    docstring) until ``conn.retry_timeout`` seconds have passed since the first one.

    ``fn`` must be safe to run again after it failed part-way."""
    deadline: float | None = None
    delay = FIRST_BACKOFF
    attempts = 0
    while True:
        attempts += 1
        target = client(conn)
        try:
            return fn(target)
        except (*RETRYABLE, redis.ResponseError) as exc:
            if not retryable(exc):
                raise
            now = time.monotonic()
            if deadline is None:
                deadline = now + conn.retry_timeout
            if now >= deadline:
                if attempts == 1:
                    raise
                raise PrimaryUnavailable(
                    f"{what}: failed {attempts} times in {conn.retry_timeout:g}s "
                    f"(retryTimeout) against {conn.describe()}; last error: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            log.warning(
                "%s failed (%s: %s); trying again against %s in %.1fs",
                what, type(exc).__name__, exc, conn.describe(), delay,
            )
            try:
                target.connection_pool.disconnect()  # reconnect (and re-resolve) next time
            except Exception:  # disconnecting is best effort
                pass
            time.sleep(min(delay, max(deadline - now, 0.0)))
            delay = min(delay * 2, MAX_BACKOFF)


class Link(Protocol):
    """Where an operation runs: ``run(fn, what)`` returns ``fn(client)``."""

    def run(self, fn: Callable[[redis.Redis], T], what: str) -> T: ...


class Direct:
    """One given client, no retries (for callers that hold a client, e.g. tests)."""

    def __init__(self, target: redis.Redis) -> None:
        self.client = target

    def run(self, fn: Callable[[redis.Redis], T], what: str) -> T:
        return fn(self.client)


class Primary:
    """The primary ``conn`` names, with retries across failovers (see ``call``)."""

    def __init__(self, conn: ConnOptions) -> None:
        self.conn = conn

    def run(self, fn: Callable[[redis.Redis], T], what: str) -> T:
        return call(self.conn, fn, what)


def as_link(target: redis.Redis | Link) -> Link:
    return Direct(target) if isinstance(target, redis.Redis) else target


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Replica:
    """One partition's reads on a replica whose copy of ``stream`` has reached ``sync``.

    The planner read the range's end from the primary, so a replica may serve the range
    only once its stream's last-generated-id is at least ``sync`` (the range's end, or the
    primary's last ID then, if lower): replication applies a primary's writes in order, so
    it then holds every entry of the range the primary held when planning. Replicas (from
    Sentinel or option ``replicas``) are polled, starting at ``seed`` so that partitions
    spread over them, until one is a replica (ROLE) that has caught up, for up to
    ``replicaWaitTimeout`` seconds. Nothing found: ``preferReplica`` reads from the primary,
    ``replica`` fails. A replica that fails mid-range is replaced the same way.
    """

    def __init__(self, ropts: ReadOptions, stream: str, sync: str, seed: int = 0) -> None:
        self.ropts = ropts
        self.stream = stream
        self.sync = sync
        self.seed = seed
        self.address: Address | None = None  # the replica in use (None: none yet, or primary)
        self.primary: Primary | None = None  # set when preferReplica fell back to the primary
        self._client: redis.Redis | None = None
        self._failures = 0

    def run(self, fn: Callable[[redis.Redis], T], what: str) -> T:
        while True:
            if self.primary is not None:
                return self.primary.run(fn, what)
            if self._client is None:
                self._pick()
                continue
            try:
                return fn(self._client)
            except (*RETRYABLE, redis.ResponseError) as exc:
                if isinstance(exc, redis.ResponseError) and not _unavailable(exc):
                    raise
                self._failures += 1
                log.warning("%s failed on replica %s (%s: %s)", what, self.address,
                            type(exc).__name__, exc)
                try:
                    self._client.connection_pool.disconnect()
                except Exception:  # disconnecting is best effort
                    pass
                self._client = None
                self.address = None

    def _pick(self) -> None:
        ropts = self.ropts
        problems: dict[str, str] = {}
        candidates: list[Address] = []
        if self._failures < MAX_REPLICA_FAILURES:
            try:
                candidates = replica_addresses(ropts)
            except RETRYABLE as exc:
                problems["sentinel"] = f"{type(exc).__name__}: {exc}"
        else:
            problems["reads"] = f"failed on replicas {self._failures} times"
        if candidates:
            start = self.seed % len(candidates)
            candidates = candidates[start:] + candidates[:start]
        deadline = time.monotonic() + ropts.replica_wait_timeout
        while candidates:
            for address in list(candidates):
                ready, why, hopeless = self._probe(address)
                if ready:
                    self._client = replica_client(ropts.conn, address)
                    self.address = address
                    return
                problems[f"{address[0]}:{address[1]}"] = why
                if hopeless:
                    candidates.remove(address)
            if not candidates or time.monotonic() >= deadline:
                break
            time.sleep(REPLICA_POLL)
        detail = "; ".join(f"{k}: {v}" for k, v in problems.items()) or "no replica is known"
        if ropts.read_from == PREFER_REPLICA:
            log.info("stream %r up to %s: reading the primary (no replica ready: %s)",
                     self.stream, self.sync, detail)
            self.primary = Primary(ropts.conn)
            return
        raise ReplicaUnavailable(
            f"readFrom=replica: no replica has stream {self.stream!r} up to {self.sync} "
            f"within replicaWaitTimeout={ropts.replica_wait_timeout:g}s ({detail})"
        )

    def _probe(self, address: Address) -> tuple[bool, str, bool]:
        """(ready, what is wrong, whether waiting cannot help)."""
        target = replica_client(self.ropts.conn, address)
        try:
            role = target.execute_command("ROLE")
            if _text(role[0]) != "slave":
                return False, f"not a replica (ROLE {_text(role[0])})", True
            found = streams.infos(target, [self.stream])[self.stream]
        except (*RETRYABLE, redis.ResponseError) as exc:
            try:
                target.connection_pool.disconnect()
            except Exception:  # disconnecting is best effort
                pass
            return False, f"{type(exc).__name__}: {exc}", True
        last = found.last_generated_id if found is not None else ids.ZERO
        if ids.id_less(last, self.sync):
            return False, f"lagging: its stream ends at {last}", False
        return True, "", False


def _unavailable(exc: redis.ResponseError) -> bool:
    """Replies of a replica that cannot serve reads now (link down with stale data off,
    loading a new copy)."""
    return str(exc).startswith(("MASTERDOWN", "LOADING"))
