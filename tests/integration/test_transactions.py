"""MULTI / EXEC / DISCARD / WATCH / UNWATCH end to end, raw and through redis-py pipelines.

`XSTREAMD_TEST_TARGET=redis` runs this file against Debian's redis-server 7.0.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis

from tests.helpers import ServerProcess
from tests.integration.server_fixtures import flushed_conn, module_server
from tests.resp import Conn

OK = b"+OK\r\n"
QUEUED = b"+QUEUED\r\n"
EXECABORT = b"-EXECABORT Transaction discarded because of previous errors.\r\n"


srv = module_server("--enable-debug-command", "local")


def _exec_ping(c: Conn) -> bytes:
    """MULTI, PING, EXEC: EXEC's reply (nil when a WATCH aborted it)."""
    assert c.call("MULTI") == OK
    assert c.call("PING") == QUEUED
    return c.call("EXEC")


@pytest.fixture
def c(srv: ServerProcess) -> Iterator[Conn]:
    with flushed_conn(srv) as conn:
        yield conn


@pytest.fixture
def other(srv: ServerProcess) -> Iterator[Conn]:
    conn = Conn(srv)
    yield conn
    conn.close()


def test_multi_exec_runs_queued_commands_in_order(c: Conn) -> None:
    assert c.call("MULTI") == OK
    assert c.call("SET", "a", "1") == QUEUED
    assert c.call("GET", "a") == QUEUED
    assert c.call("PING") == QUEUED
    assert c.call("EXEC") == b"*3\r\n+OK\r\n$1\r\n1\r\n+PONG\r\n"
    assert c.call("MULTI") == OK
    assert c.call("EXEC") == b"*0\r\n"


def test_other_clients_see_nothing_until_exec(c: Conn, other: Conn) -> None:
    c.call("MULTI")
    c.call("SET", "x", "1")
    assert other.call("GET", "x") == b"$-1\r\n"
    c.call("EXEC")
    assert other.call("GET", "x") == b"$1\r\n1\r\n"


def test_state_errors(c: Conn) -> None:
    assert c.call("EXEC") == b"-ERR EXEC without MULTI\r\n"
    assert c.call("DISCARD") == b"-ERR DISCARD without MULTI\r\n"
    c.call("MULTI")
    assert c.call("MULTI") == b"-ERR MULTI calls can not be nested\r\n"
    assert c.call("WATCH", "k") == b"-ERR WATCH inside MULTI is not allowed\r\n"
    # Neither error aborts the transaction.
    assert c.call("SET", "k", "v") == QUEUED
    assert c.call("EXEC") == b"*1\r\n+OK\r\n"


def test_discard(c: Conn) -> None:
    c.call("MULTI")
    c.call("SET", "k", "v")
    assert c.call("DISCARD") == OK
    assert c.call("EXISTS", "k") == b":0\r\n"
    assert c.call("EXEC") == b"-ERR EXEC without MULTI\r\n"


def test_queue_time_errors_abort_exec(c: Conn) -> None:
    c.call("MULTI")
    assert c.call("SET", "a", "1") == QUEUED
    assert c.call("NOSUCHCMD") == (
        b"-ERR unknown command 'NOSUCHCMD', with args beginning with: \r\n")
    assert c.call("GET") == b"-ERR wrong number of arguments for 'get' command\r\n"
    assert c.call("EXEC") == EXECABORT
    assert c.call("EXISTS", "a") == b":0\r\n"
    assert c.call("EXEC") == b"-ERR EXEC without MULTI\r\n"


def test_runtime_errors_are_returned_in_place(c: Conn) -> None:
    c.call("SET", "s", "v")
    c.call("MULTI")
    c.call("SET", "k", "1")
    c.call("EXPIRE", "k", "notanumber")
    c.call("SET", "k2", "2")
    assert c.call("EXEC") == (
        b"*3\r\n+OK\r\n-ERR value is not an integer or out of range\r\n+OK\r\n")
    assert c.call("EXISTS", "k", "k2") == b":2\r\n"


def test_rejected_exec_discards_the_transaction(c: Conn) -> None:
    c.call("MULTI")
    c.call("SET", "k", "v")
    assert c.call("EXEC", "extra") == (
        b"-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' "
        b"command\r\n")
    assert c.call("DISCARD") == b"-ERR DISCARD without MULTI\r\n"
    assert c.call("EXISTS", "k") == b":0\r\n"


def test_no_multi_commands_are_refused_at_queue_time(c: Conn) -> None:
    c.call("MULTI")
    assert c.call("SHUTDOWN") == b"-ERR Command not allowed inside a transaction\r\n"
    assert c.call("EXEC") == EXECABORT


def test_monitor_inside_exec(c: Conn) -> None:
    c.call("MULTI")
    assert c.call("MONITOR") == QUEUED
    assert c.call("EXEC") == b"*1\r\n-ERR MONITOR isn't allowed for DENY BLOCKING client\r\n"
    assert c.call("PING") == b"+PONG\r\n"  # still an ordinary client


def test_commands_run_in_the_transactions_database(c: Conn) -> None:
    c.call("MULTI")
    c.call("SELECT", "5")
    c.call("SET", "k", "in5")
    c.call("SELECT", "0")
    assert c.call("EXEC") == b"*3\r\n+OK\r\n+OK\r\n+OK\r\n"
    assert c.call("EXISTS", "k") == b":0\r\n"
    c.call("SELECT", "5")
    assert c.call("GET", "k") == b"$3\r\nin5\r\n"


# -- WATCH --------------------------------------------------------------------------------------
def test_watch_aborts_when_another_client_writes(c: Conn, other: Conn) -> None:
    c.call("SET", "balance", "10")
    assert c.call("WATCH", "balance") == OK
    other.call("SET", "balance", "20")
    c.call("MULTI")
    c.call("SET", "balance", "11")
    assert c.call("EXEC") == b"*-1\r\n"
    assert c.call("GET", "balance") == b"$2\r\n20\r\n"


def test_watch_without_changes_executes(c: Conn, other: Conn) -> None:
    c.call("SET", "k", "1")
    c.call("WATCH", "k", "missing")
    other.call("GET", "k")  # reads do not count
    other.call("SET", "unrelated", "x")
    c.call("MULTI")
    c.call("SET", "k", "2")
    assert c.call("EXEC") == b"*1\r\n+OK\r\n"


def test_watch_missing_key_then_created(c: Conn, other: Conn) -> None:
    c.call("WATCH", "new")
    other.call("SET", "new", "x")
    assert _exec_ping(c) == b"*-1\r\n"


def test_own_writes_before_multi_also_abort(c: Conn) -> None:
    c.call("WATCH", "k")
    c.call("SET", "k", "mine")
    assert _exec_ping(c) == b"*-1\r\n"


def test_unwatch_and_discard_forget_watches(c: Conn, other: Conn) -> None:
    c.call("WATCH", "k")
    assert c.call("UNWATCH") == OK
    other.call("SET", "k", "x")
    assert _exec_ping(c) == b"*1\r\n+PONG\r\n"
    c.call("WATCH", "k")
    c.call("MULTI")
    c.call("DISCARD")
    other.call("SET", "k", "y")
    assert _exec_ping(c) == b"*1\r\n+PONG\r\n"


def test_exec_forgets_watches(c: Conn, other: Conn) -> None:
    c.call("WATCH", "k")
    c.call("MULTI")
    c.call("EXEC")
    other.call("SET", "k", "x")
    assert _exec_ping(c) == b"*1\r\n+PONG\r\n"


def test_watched_key_expiring_aborts(c: Conn) -> None:
    c.call("SET", "k", "v", "PX", "30")
    c.call("WATCH", "k")
    time.sleep(0.1)
    assert _exec_ping(c) == b"*-1\r\n"


def test_watch_is_per_database(c: Conn, other: Conn) -> None:
    c.call("WATCH", "k")
    other.call("SELECT", "1")
    other.call("SET", "k", "x")  # same name, other database
    assert _exec_ping(c) == b"*1\r\n+PONG\r\n"


def test_flush_touches_existing_watched_keys(c: Conn, other: Conn) -> None:
    c.call("SET", "k", "v")
    c.call("WATCH", "k")
    other.call("FLUSHALL")
    assert _exec_ping(c) == b"*-1\r\n"
    # A watched key that does not exist is not changed by a flush.
    c.call("WATCH", "absent")
    other.call("FLUSHDB")
    assert _exec_ping(c) == b"*1\r\n+PONG\r\n"


def test_swapdb_touches_watched_keys(c: Conn, other: Conn) -> None:
    other.call("SELECT", "1")
    other.call("SET", "k", "in1")
    c.call("WATCH", "k")  # absent in db 0, present in db 1: the swap brings it in
    other.call("SWAPDB", "0", "1")
    assert _exec_ping(c) == b"*-1\r\n"


@pytest.fixture
def no_active_expiry(c: Conn) -> Iterator[None]:
    """Keys whose time passed stay stored until something looks them up."""
    assert c.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == OK
    yield
    c.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def _stale(conn: Conn, key: str, value: str = "v") -> None:
    """key stored with a time that has already passed (1 ms, then a wait)."""
    assert conn.call("SET", key, value, "PX", "1") == OK
    time.sleep(0.01)


def test_watching_an_expired_key_changes_nothing(c: Conn, other: Conn,
                                                 no_active_expiry: None) -> None:
    _stale(c, "x")
    assert c.call("WATCH", "x") == OK
    assert c.call("DBSIZE") == b":1\r\n"  # WATCH does not delete it
    assert other.call("GET", "x") == b"$-1\r\n"  # (this does: no change for the watcher)
    assert _exec_ping(c) == b"*1\r\n+PONG\r\n"
    # Recreated after WATCH: a change.
    _stale(c, "y")
    c.call("WATCH", "y")
    other.call("SET", "y", "new")
    assert _exec_ping(c) == b"*-1\r\n"


def test_a_watched_key_that_expires_before_exec_aborts_it(c: Conn,
                                                          no_active_expiry: None) -> None:
    assert c.call("SET", "x", "v", "PX", "50") == OK
    c.call("WATCH", "x")
    time.sleep(0.1)
    assert c.call("DBSIZE") == b":1\r\n"
    assert _exec_ping(c) == b"*-1\r\n"


def test_swapdb_bringing_or_taking_expired_keys_changes_nothing(
        c: Conn, other: Conn, no_active_expiry: None) -> None:
    # Nothing in db 1, an expired x in db 0: the swap replaces nothing with nothing.
    _stale(other, "x")
    c.call("SELECT", "1")
    c.call("WATCH", "x")
    other.call("SWAPDB", "0", "1")
    assert _exec_ping(c) == b"*1\r\n+PONG\r\n"
    # Expired keys on both sides.
    other.call("FLUSHALL")
    other.call("SELECT", "1")
    _stale(other, "x", "in1")
    other.call("SELECT", "0")
    _stale(other, "x", "in0")
    c.call("WATCH", "x")
    other.call("SWAPDB", "0", "1")
    assert _exec_ping(c) == b"*1\r\n+PONG\r\n"
    # An expired key replaced with a live one is a change.
    other.call("FLUSHALL")
    other.call("SELECT", "1")
    _stale(other, "x")
    other.call("SELECT", "0")
    other.call("SET", "x", "live")
    c.call("WATCH", "x")
    other.call("SWAPDB", "0", "1")
    assert _exec_ping(c) == b"*-1\r\n"
    c.call("SELECT", "0")


def test_expire_and_persist_count_as_changes(c: Conn, other: Conn) -> None:
    c.call("SET", "k", "v")
    c.call("WATCH", "k")
    other.call("EXPIRE", "k", "100")
    assert _exec_ping(c) == b"*-1\r\n"
    c.call("WATCH", "k")
    other.call("PERSIST", "k")
    assert _exec_ping(c) == b"*-1\r\n"


def test_watch_arity(c: Conn) -> None:
    assert c.call("WATCH") == b"-ERR wrong number of arguments for 'watch' command\r\n"
    assert c.call("UNWATCH", "k") == b"-ERR wrong number of arguments for 'unwatch' command\r\n"


def test_error_statistics(c: Conn) -> None:
    c.call("CONFIG", "RESETSTAT")
    c.call("MULTI")
    c.call("NOSUCH")
    c.call("EXEC")
    info = c.call("INFO", "errorstats").decode()
    assert "errorstat_ERR:count=1\r\n" in info
    assert "errorstat_EXECABORT:count=1\r\n" in info


# -- redis-py -----------------------------------------------------------------------------------
def test_redis_py_transactional_pipeline(srv: ServerProcess) -> None:
    r = redis.Redis(host=srv.host, port=srv.port)
    try:
        r.flushall()
        with r.pipeline(transaction=True) as pipe:
            pipe.set("a", 1).get("a").exists("a", "b").ttl("a")
            assert pipe.execute() == [True, b"1", 1, -1]
        with r.pipeline(transaction=True) as pipe:
            pipe.set("a", 2)
            pipe.expire("a", "bad")  # fails when run, the rest still happens
            with pytest.raises(redis.ResponseError):
                pipe.execute()
        assert r.get("a") == b"2"
    finally:
        r.close()


def test_redis_py_optimistic_locking(srv: ServerProcess) -> None:
    r = redis.Redis(host=srv.host, port=srv.port)
    intruder = redis.Redis(host=srv.host, port=srv.port)
    try:
        r.flushall()
        r.set("counter", 0)
        attempts = 0

        def increment(pipe: redis.client.Pipeline) -> None:
            nonlocal attempts
            attempts += 1
            value = int(pipe.get("counter"))
            if attempts == 1:
                intruder.set("counter", 100)  # forces one retry
            pipe.multi()
            pipe.set("counter", value + 1)

        r.transaction(increment, "counter")
        assert attempts == 2
        assert r.get("counter") == b"101"
        with r.pipeline() as pipe:
            pipe.watch("counter")
            intruder.set("counter", 5)
            pipe.multi()
            pipe.set("counter", 6)
            with pytest.raises(redis.WatchError):
                pipe.execute()
    finally:
        r.close()
        intruder.close()
