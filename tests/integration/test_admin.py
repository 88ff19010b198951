"""Server administration end to end: INFO, CONFIG GET/SET/RESETSTAT, TIME, DEBUG, SLOWLOG,
MONITOR, COMMAND, MEMORY USAGE, ROLE, WAIT, SHUTDOWN.

`XSTREAMD_TEST_TARGET=redis` runs this file against Debian's redis-server 7.0.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
import redis

from tests.helpers import TARGET, ServerProcess
from tests.integration.server_fixtures import flushed_conn, module_server
from tests.resp import Conn, encode

ours_only = pytest.mark.skipif(TARGET == "redis", reason="xstreamd-specific")


def arity(name: str) -> bytes:
    return f"-ERR wrong number of arguments for '{name}' command\r\n".encode()


def info_fields(reply: bytes) -> dict[str, str]:
    """The fields of an INFO bulk reply (section headers dropped)."""
    body = reply.split(b"\r\n", 1)[1].decode()
    out = {}
    for line in body.split("\r\n"):
        if line and not line.startswith("#") and ":" in line:
            key, value = line.split(":", 1)
            out[key] = value
    return out


def section_titles(reply: bytes) -> list[str]:
    return re.findall(r"^# (\w+)\r$", reply.decode(), flags=re.M)


srv = module_server("--enable-debug-command", "local")


@pytest.fixture
def c(srv: ServerProcess) -> Iterator[Conn]:
    with flushed_conn(srv) as conn:
        yield conn
        conn.call("CONFIG", "SET", "slowlog-log-slower-than", "10000")
        conn.call("CONFIG", "SET", "maxmemory", "0")


# -- INFO ---------------------------------------------------------------------------------------
REQUIRED = {
    "server": ["redis_version", "redis_mode", "os", "arch_bits", "process_id", "run_id",
               "tcp_port", "server_time_usec", "uptime_in_seconds", "uptime_in_days", "hz",
               "configured_hz", "executable", "config_file"],
    "clients": ["connected_clients", "maxclients", "blocked_clients", "tracking_clients",
                "clients_in_timeout_table"],
    "memory": ["used_memory", "used_memory_human", "used_memory_rss", "used_memory_peak",
               "used_memory_peak_human", "total_system_memory", "maxmemory", "maxmemory_human",
               "maxmemory_policy", "mem_fragmentation_ratio", "mem_replication_backlog",
               "mem_total_replication_buffers", "mem_cluster_links", "mem_allocator",
               "active_defrag_running"],
    "persistence": ["loading", "rdb_changes_since_last_save", "rdb_bgsave_in_progress",
                    "aof_enabled", "aof_rewrite_in_progress"],
    "stats": ["total_connections_received", "total_commands_processed",
              "instantaneous_ops_per_sec", "total_net_input_bytes", "total_net_output_bytes",
              "instantaneous_input_kbps", "instantaneous_output_kbps", "rejected_connections",
              "expired_keys", "evicted_keys", "keyspace_hits", "keyspace_misses",
              "pubsub_channels", "pubsub_patterns", "total_error_replies"],
    "replication": ["role", "connected_slaves", "master_repl_offset"],
    "cpu": ["used_cpu_sys", "used_cpu_user"],
}


def test_info_default_sections_in_redis_order(c: Conn) -> None:
    reply = c.call("INFO")
    assert reply.startswith(b"$")
    assert section_titles(reply) == ["Server", "Clients", "Memory", "Persistence", "Stats",
                                     "Replication", "CPU", "Modules", "Errorstats", "Cluster",
                                     "Keyspace"]
    assert section_titles(c.call("INFO", "default")) == section_titles(reply)
    everything = section_titles(c.call("INFO", "all"))
    assert "Commandstats" in everything and everything.index("Commandstats") < everything.index(
        "Errorstats")


def test_info_fields_per_section(c: Conn) -> None:
    for section, names in REQUIRED.items():
        reply = c.call("INFO", section)
        assert section_titles(reply) == [section.upper() if section == "cpu"
                                         else section.capitalize()]
        fields = info_fields(reply)
        missing = [n for n in names if n not in fields]
        assert not missing, (section, missing)
    server = info_fields(c.call("INFO", "server"))
    assert server["redis_mode"] == "standalone"
    assert int(server["process_id"]) > 0 and int(server["tcp_port"]) > 0
    assert info_fields(c.call("INFO", "replication"))["role"] == "master"
    assert info_fields(c.call("INFO", "cluster"))["cluster_enabled"] == "0"


@ours_only
def test_info_server_version(c: Conn) -> None:
    assert info_fields(c.call("INFO", "server"))["redis_version"] == "8.10.0"


def test_info_several_sections_come_in_fixed_order(c: Conn) -> None:
    assert section_titles(c.call("INFO", "keyspace", "SERVER", "clients")) == [
        "Server", "Clients", "Keyspace"]
    assert c.call("INFO", "nosuchsection") == b"$0\r\n\r\n"
    assert c.call("INFO", "nosuchsection", "cpu").count(b"# CPU") == 1


def test_info_keyspace(c: Conn) -> None:
    assert c.call("INFO", "keyspace") == b"$12\r\n# Keyspace\r\n\r\n"
    c.call("SET", "a", "1")
    c.call("SET", "b", "1", "EX", "1000")
    c.call("SELECT", "3")
    c.call("SET", "c", "1")
    fields = info_fields(c.call("INFO", "keyspace"))
    assert fields["db0"].startswith("keys=2,expires=1,avg_ttl=")
    assert fields["db3"].startswith("keys=1,expires=0,avg_ttl=0")
    if TARGET != "redis":  # Redis estimates avg_ttl in its expire cycle, so it starts at 0
        avg_ttl = int(fields["db0"].split("avg_ttl=")[1].split(",")[0])
        assert 900_000 < avg_ttl <= 1_000_000


def test_info_stats_counters(c: Conn) -> None:
    c.call("CONFIG", "RESETSTAT")
    c.call("SET", "k", "v")
    c.call("GET", "k")
    c.call("NOSUCH")
    stats = info_fields(c.call("INFO", "stats"))
    assert int(stats["total_commands_processed"]) >= 3
    assert int(stats["total_error_replies"]) == 1
    assert int(stats["total_net_input_bytes"]) > 0
    errors = info_fields(c.call("INFO", "errorstats"))
    assert errors == {"errorstat_ERR": "count=1"}


def test_keyspace_hits_and_misses(c: Conn) -> None:
    c.call("CONFIG", "RESETSTAT")
    for args in (("GET", "a"), ("EXISTS", "a"), ("TYPE", "a"), ("TTL", "a"),
                 ("OBJECT", "ENCODING", "a"), ("SET", "a", "1"), ("GET", "a"), ("EXISTS", "a", "b"),
                 ("KEYS", "*"), ("SCAN", "0"), ("RENAME", "a", "b"), ("EXPIRE", "b", "100"),
                 ("DBSIZE",)):
        c.call(*args)
    stats = info_fields(c.call("INFO", "stats"))
    assert (stats["keyspace_hits"], stats["keyspace_misses"]) == ("2", "6")


def test_info_commandstats(c: Conn) -> None:
    c.call("CONFIG", "RESETSTAT")
    c.call("SET", "k", "v")
    c.call("SET", "k", "v", "EX", "0")  # fails inside the command
    c.call("CLIENT", "ID")
    fields = info_fields(c.call("INFO", "commandstats"))
    assert re.fullmatch(r"calls=2,usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=0,"
                        r"failed_calls=1", fields["cmdstat_set"])
    assert fields["cmdstat_client|id"].startswith("calls=1,")
    assert "cmdstat_get" not in fields


def test_rejections_in_commandstats_and_errorstats(c: Conn) -> None:
    """rejectCommand: an arity error counts as the command's rejected call; a rejected EXEC
    (even outside MULTI) answers, and is counted as, EXECABORT."""
    c.call("CONFIG", "RESETSTAT")
    assert c.call("GET") == arity("get")
    assert c.call("EXEC", "x") == (b"-EXECABORT Transaction discarded because of: wrong number "
                                   b"of arguments for 'exec' command\r\n")
    assert c.call("NOSUCH").startswith(b"-ERR unknown command 'NOSUCH'")
    fields = info_fields(c.call("INFO", "commandstats"))
    assert re.fullmatch(r"calls=0,usec=0,usec_per_call=0\.00,rejected_calls=1,failed_calls=0",
                        fields["cmdstat_get"])
    errors = info_fields(c.call("INFO", "errorstats"))
    assert errors == {"errorstat_ERR": "count=2", "errorstat_EXECABORT": "count=1"}


def test_commands_count_once_they_complete(srv: ServerProcess) -> None:
    """total_commands_processed and a command's calls count what ran to the end: rejected
    commands do not count, a blocked XREAD counts once whether it is served or times out, and
    a command queued in MULTI counts when EXEC runs it."""
    c, served, timed_out = Conn(srv), Conn(srv), Conn(srv)
    try:
        c.call("CONFIG", "RESETSTAT")
        c.call("DEL", "cnt:a")
        assert c.call("NOSUCH").startswith(b"-ERR unknown command")
        assert c.call("XLEN") == arity("xlen")
        served.sock.sendall(encode("XREAD", "BLOCK", "0", "STREAMS", "cnt:a", "$"))
        timed_out.sock.sendall(encode("XREAD", "BLOCK", "50", "STREAMS", "cnt:b", "$"))
        deadline = time.monotonic() + 5
        while b"blocked_clients:2" not in c.call("INFO", "clients"):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        c.call("XADD", "cnt:a", "*", "f", "v")
        assert served.read().startswith(b"*1\r\n")
        assert timed_out.read() == b"*-1\r\n"
        assert c.call("MULTI") == b"+OK\r\n"
        assert c.call("XLEN", "cnt:a") == b"+QUEUED\r\n"
        assert c.call("EXEC") == b"*1\r\n:1\r\n"
        fields = info_fields(c.call("INFO", "commandstats"))
        assert fields["cmdstat_xread"].startswith("calls=2,")
        assert fields["cmdstat_xlen"].startswith("calls=1,")
        # CONFIG RESETSTAT (counted once it ran), DEL, XREAD x2, XADD, the INFO polls,
        # MULTI, XLEN, EXEC, INFO commandstats.
        stats = info_fields(c.call("INFO", "stats"))
        counted = int(stats["total_commands_processed"])
        polls = int(fields["cmdstat_info"].split(",")[0].removeprefix("calls="))
        assert counted == 2 + 2 + 1 + polls + 3 + 1
    finally:
        for conn in (c, served, timed_out):
            conn.close()


def test_client_list_cmd_is_the_command_looked_up(srv: ServerProcess) -> None:
    """CLIENT LIST's cmd= is set when the command is looked up, before any check: NULL for an
    unknown command or subcommand, the command for an arity error or a command queued in
    MULTI, and EXEC (not the last queued command) after EXEC."""
    a, b = Conn(srv), Conn(srv)
    try:
        a_id = int(a.call("CLIENT", "ID")[1:-2])

        def cmd() -> bytes:
            line = b.call("CLIENT", "LIST", "ID", str(a_id))
            found = re.search(rb" cmd=(\S+) ", line)
            assert found is not None
            return found.group(1)

        assert cmd() == b"client|id"
        for args, expected in [(("FOOBAR",), b"NULL"), (("XADD",), b"xadd"),
                               (("XINFO", "FOO"), b"NULL"), (("XINFO",), b"xinfo"),
                               (("MULTI",), b"multi"), (("XLEN", "s"), b"xlen"),
                               (("EXEC",), b"exec"), (("PING",), b"ping")]:
            a.call(*args)
            assert cmd() == expected, args
    finally:
        a.close()
        b.close()


def test_info_is_verbatim_in_resp3(c: Conn) -> None:
    c.call("HELLO", "3")
    reply = c.call("INFO", "server")
    assert reply.startswith(b"=") and b"\r\ntxt:# Server\r\n" in reply


# -- CONFIG -------------------------------------------------------------------------------------
def test_config_get(c: Conn) -> None:
    assert c.call("CONFIG", "GET", "maxmemory") == b"*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n"
    # A plain name is answered under the name as given.
    assert c.call("CONFIG", "GET", "MAXMEMORY") == b"*2\r\n$9\r\nMAXMEMORY\r\n$1\r\n0\r\n"
    assert c.call("CONFIG", "GET", "nosuchoption") == b"*0\r\n"
    r = redis.Redis(host=c.sock.getpeername()[0], port=c.sock.getpeername()[1])
    try:
        found = r.config_get("stream-node-max-*")
        assert found == {"stream-node-max-bytes": "4096", "stream-node-max-entries": "100"}
        several = r.execute_command("CONFIG", "GET", "hz", "timeout", "hz")
        assert several == {b"hz": b"10", b"timeout": b"0"}
        assert set(r.config_get("*")) >= {"port", "bind", "databases", "maxclients", "dir",
                                           "appendonly", "appendfsync", "save", "requirepass",
                                           "lua-time-limit", "busy-reply-threshold"}
        # A pattern matches an option's alias too, answered under the alias.
        assert r.config_get("lua*") == {"lua-time-limit": "5000"}
    finally:
        r.close()
    assert c.call("CONFIG", "GET") == arity("config|get")


def test_shutdown_on_signal_options(c: Conn) -> None:
    """Flags in any order and case, shown in Redis's order; 'default' adds none."""
    def get() -> bytes:
        return c.call("CONFIG", "GET", "shutdown-on-sigterm").split(b"\r\n")[-2]

    failed = ("-ERR CONFIG SET failed (possibly related to argument 'shutdown-on-sigterm') - "
              "{}\r\n")
    try:
        for value, shown in (("force nosave", b"nosave force"), ("NOW", b"now"),
                             ("default force", b"force"), ("default", b"default")):
            assert c.call("CONFIG", "SET", "shutdown-on-sigterm", value) == b"+OK\r\n"
            assert get() == shown
        choices = "argument(s) must be one of the following: default, save, nosave, now, force"
        for value, reason in (("save nosave", "shutdown options SAVE and NOSAVE can't be used "
                                              "simultaneously"),
                              ("bogus", choices), ("", choices)):
            assert c.call("CONFIG", "SET", "shutdown-on-sigterm", value) == failed.format(
                reason).encode()
        assert get() == b"default"
    finally:
        c.call("CONFIG", "SET", "shutdown-on-sigterm", "default")


def test_config_set_and_effects(c: Conn) -> None:
    assert c.call("CONFIG", "SET", "maxmemory", "2mb") == b"+OK\r\n"
    assert c.call("CONFIG", "GET", "maxmemory") == b"*2\r\n$9\r\nmaxmemory\r\n$7\r\n2097152\r\n"
    assert c.call("CONFIG", "SET", "maxmemory", "1") == b"+OK\r\n"
    deadline = time.monotonic() + 10  # the memory figure is sampled by the server's cron
    while (reply := c.call("SET", "k", "v")) == b"+OK\r\n" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert reply == b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
    assert c.call("GET", "k") != reply  # reads are still served
    assert c.call("CONFIG", "SET", "maxmemory", "0") == b"+OK\r\n"
    assert c.call("SET", "k", "v") == b"+OK\r\n"
    assert c.call("CONFIG", "SET", "hz", "1000") == b"+OK\r\n"
    assert c.call("CONFIG", "GET", "hz") == b"*2\r\n$2\r\nhz\r\n$3\r\n500\r\n"
    assert c.call("CONFIG", "SET", "hz", "10", "timeout", "0") == b"+OK\r\n"


def test_config_set_errors(c: Conn) -> None:
    assert c.call("CONFIG", "SET", "nosuch", "1") == (
        b"-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\r\n")
    assert c.call("CONFIG", "SET", "timeout", "x") == (
        b"-ERR CONFIG SET failed (possibly related to argument 'timeout') - argument couldn't "
        b"be parsed into an integer\r\n")
    assert c.call("CONFIG", "SET", "maxmemory", "lots") == (
        b"-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be "
        b"a memory value\r\n")
    assert c.call("CONFIG", "SET", "appendfsync", "sometimes") == (
        b"-ERR CONFIG SET failed (possibly related to argument 'appendfsync') - argument(s) "
        b"must be one of the following: everysec, always, no\r\n")
    assert c.call("CONFIG", "SET", "databases", "4") == (
        b"-ERR CONFIG SET failed (possibly related to argument 'databases') - can't set "
        b"immutable config\r\n")
    assert c.call("CONFIG", "SET", "timeout", "1", "timeout", "2") == (
        b"-ERR CONFIG SET failed (possibly related to argument 'timeout') - duplicate "
        b"parameter\r\n")
    assert c.call("CONFIG", "SET", "timeout", "1", "hz") == b"-ERR syntax error\r\n"
    assert c.call("CONFIG", "SET", "timeout") == arity("config|set")
    # All or nothing: a bad value anywhere leaves every option as it was.
    assert c.call("CONFIG", "SET", "timeout", "7", "maxclients", "0").startswith(
        b"-ERR CONFIG SET failed (possibly related to argument 'maxclients')")
    assert c.call("CONFIG", "GET", "timeout") == b"*2\r\n$7\r\ntimeout\r\n$1\r\n0\r\n"


def test_config_misc(c: Conn) -> None:
    assert c.call("CONFIG") == arity("config")
    assert c.call("CONFIG", "NOPE") == b"-ERR unknown subcommand 'NOPE'. Try CONFIG HELP.\r\n"
    assert c.call("CONFIG", "RESETSTAT", "x") == arity("config|resetstat")
    assert c.call("CONFIG", "HELP").startswith(b"*")


# -- TIME, DEBUG, MEMORY ------------------------------------------------------------------------
def test_time(c: Conn) -> None:
    before = time.time()
    reply = c.call("TIME")
    after = time.time()
    match = re.fullmatch(rb"\*2\r\n\$\d+\r\n(\d+)\r\n\$\d+\r\n(\d+)\r\n", reply)
    assert match is not None
    seconds, micros = int(match.group(1)), int(match.group(2))
    assert 0 <= micros < 1_000_000
    assert int(before) - 1 <= seconds <= after + 1
    assert c.call("TIME", "x") == arity("time")


def test_role_is_a_master_without_replicas(c: Conn, srv: ServerProcess) -> None:
    assert c.call("ROLE") == b"*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"
    assert c.call("ROLE", "x") == arity("role")
    fields = info_fields(c.call("INFO", "replication"))
    assert fields["role"] == "master" and fields["connected_slaves"] == "0"
    client = redis.Redis(host=srv.host, port=srv.port)
    try:
        assert client.role() == [b"master", 0, []]
    finally:
        client.close()


def test_wait_without_replicas(c: Conn, srv: ServerProcess) -> None:
    assert c.call("WAIT", "0", "0") == b":0\r\n"
    assert c.call("WAIT", "-1", "0") == b":0\r\n"
    assert c.call("WAIT", "x", "0") == b"-ERR value is not an integer or out of range\r\n"
    assert c.call("WAIT", "1", "x") == b"-ERR timeout is not an integer or out of range\r\n"
    assert c.call("WAIT", "1", "-1") == b"-ERR timeout is negative\r\n"
    assert c.call("WAIT", "1") == arity("wait")
    start = time.monotonic()
    assert c.call("WAIT", "1", "100") == b":0\r\n"  # no replica acknowledges: the timeout
    assert time.monotonic() - start >= 0.09
    assert c.call("MULTI") == b"+OK\r\n"
    assert c.call("WAIT", "1", "0") == b"+QUEUED\r\n"
    assert c.call("EXEC") == b"*1\r\n:0\r\n"  # no waiting inside a transaction
    # WAIT 1 0 waits forever; CLIENT UNBLOCK ends it with the timeout's reply or an error.
    other = Conn(srv)
    try:
        waiter_id = int(c.call("CLIENT", "ID")[1:-2])
        unblocked = b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
        for how, reply in ((), b":0\r\n"), (("ERROR",), unblocked):
            c.sock.sendall(encode("WAIT", "1", "0"))
            for _ in range(500):  # until the server lists it as blocked
                if b"flags=b" in other.call("CLIENT", "LIST", "ID", str(waiter_id)):
                    break
                time.sleep(0.01)
            assert other.call("CLIENT", "UNBLOCK", str(waiter_id), *how) == b":1\r\n"
            assert c.read() == reply
    finally:
        other.close()


def test_debug(c: Conn) -> None:
    assert c.call("DEBUG", "SLEEP", "0") == b"+OK\r\n"
    assert c.call("DEBUG", "SLEEP", "0.01") == b"+OK\r\n"
    assert c.call("DEBUG", "SLEEP", "nonsense") == b"+OK\r\n"  # strtod: no number means 0
    assert c.call("DEBUG") == arity("debug")
    assert c.call("DEBUG", "SLEEP") == (
        b"-ERR unknown subcommand or wrong number of arguments for 'SLEEP'. Try DEBUG HELP.\r\n")
    assert c.call("DEBUG", "NOPE") == (
        b"-ERR unknown subcommand or wrong number of arguments for 'NOPE'. Try DEBUG HELP.\r\n")
    assert c.call("DEBUG", "HELP").startswith(b"*")


def test_debug_disabled() -> None:
    with ServerProcess(TARGET, extra_args=["--appendonly", "no",
                                           "--enable-debug-command", "no"]) as proc:
        conn = Conn(proc)
        try:
            assert conn.call("DEBUG", "SLEEP", "0") == (
                b"-ERR DEBUG command not allowed. If the enable-debug-command option is set to "
                b"\"local\", you can run it from a local connection, otherwise you need to set "
                b"this option in the configuration file, and then restart the server.\r\n")
        finally:
            conn.close()


def test_memory_usage(c: Conn) -> None:
    c.call("SET", "k", "v" * 1000)
    usage = c.call("MEMORY", "USAGE", "k")
    assert usage.startswith(b":") and int(usage[1:-2]) >= 1000
    assert c.call("MEMORY", "USAGE", "nope") == b"$-1\r\n"
    assert c.call("MEMORY", "USAGE", "k", "SAMPLES", "5").startswith(b":")
    assert c.call("MEMORY", "USAGE", "k", "SAMPLES") == b"-ERR syntax error\r\n"


def test_memory_purge_gives_freed_memory_back(c: Conn) -> None:
    """After a big stream is deleted, MEMORY PURGE leaves used_memory near where it was
    before the stream (Redis counts its allocator's bytes; here the heap is trimmed)."""
    def used() -> int:
        return int(info_fields(c.call("INFO", "memory"))["used_memory"])

    before = used()
    value = "v" * 200
    for _batch in range(40):  # 20,000 entries, about 5 MB
        c.sock.sendall(b"".join(encode("XADD", "big", "*", "f", value) for _ in range(500)))
        for _ in range(500):
            c.read()
    grown = used() - before
    assert grown > 3_000_000
    assert c.call("DEL", "big") == b":1\r\n"
    assert c.call("MEMORY", "PURGE") == b"+OK\r\n"
    assert used() - before < grown / 2


def test_memory_subcommands_arity(c: Conn) -> None:
    assert c.call("MEMORY", "PURGE", "x") == arity("memory|purge")
    assert c.call("MEMORY", "MALLOC-STATS", "x") == arity("memory|malloc-stats")
    assert c.call("MEMORY", "NOPE") == (
        b"-ERR unknown subcommand 'NOPE'. Try MEMORY HELP.\r\n")


@ours_only
def test_memory_malloc_stats_is_libcs_answer(c: Conn) -> None:
    """INFO says mem_allocator:libc; Redis built on libc answers MALLOC-STATS this way."""
    assert c.call("MEMORY", "MALLOC-STATS") == (
        b"$45\r\nStats not supported for the current allocator\r\n")


# -- SLOWLOG ------------------------------------------------------------------------------------
def test_slowlog(c: Conn) -> None:
    assert c.call("SLOWLOG", "RESET") == b"+OK\r\n"
    assert c.call("CONFIG", "SET", "slowlog-log-slower-than", "0") == b"+OK\r\n"
    c.call("CLIENT", "SETNAME", "slowpoke")
    c.call("SET", "k", "v")
    c.call("AUTH", "default", "secret")
    long_arg = "x" * 200
    c.call("ECHO", long_arg)
    c.call("DEL", *[f"k{i}" for i in range(40)])
    r = redis.Redis(host=c.sock.getpeername()[0], port=c.sock.getpeername()[1])
    try:
        entries = r.slowlog_get(-1)
    finally:
        r.close()
    by_command = {e["command"].split(b" ")[0]: e for e in entries}
    assert by_command[b"SET"]["command"] == b"SET k v"
    assert by_command[b"SET"]["client_name"] == b"slowpoke"
    assert by_command[b"AUTH"]["command"] == b"AUTH (redacted) (redacted)"
    assert by_command[b"ECHO"]["command"] == (
        b"ECHO " + b"x" * 128 + b"... (72 more bytes)")
    del_args = by_command[b"DEL"]["command"].split(b" ")
    assert len(del_args) == 32 + 3 and del_args[-4:] == [b"...", b"(10", b"more", b"arguments)"]
    ids = [e["id"] for e in entries]
    assert ids == sorted(ids, reverse=True)  # newest first
    assert int(c.call("SLOWLOG", "LEN")[1:-2]) == len(entries) + 1
    one = c.call("SLOWLOG", "GET", "1")
    assert one.startswith(b"*1\r\n*6\r\n:")
    assert c.call("SLOWLOG", "GET", "-2") == (
        b"-ERR count should be greater than or equal to -1\r\n")
    assert c.call("SLOWLOG", "GET", "x") == (
        b"-ERR count should be greater than or equal to -1\r\n")
    assert c.call("SLOWLOG", "GET", "1", "2") == (
        b"-ERR unknown subcommand or wrong number of arguments for 'GET'. Try SLOWLOG HELP.\r\n")
    assert c.call("SLOWLOG", "RESET") == b"+OK\r\n"  # logged itself, after the reset
    assert c.call("CONFIG", "SET", "slowlog-log-slower-than", "-1") == b"+OK\r\n"
    c.call("PING")
    assert c.call("SLOWLOG", "LEN") == b":1\r\n"


def test_slowlog_max_len_and_exec(c: Conn) -> None:
    c.call("CONFIG", "SET", "slowlog-max-len", "3")
    try:
        c.call("SLOWLOG", "RESET")
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
        c.call("MULTI")
        c.call("PING")
        c.call("EXEC")  # EXEC itself is never logged, the commands it ran are
        for i in range(5):
            c.call("ECHO", str(i))
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "-1")
        reply = c.call("SLOWLOG", "GET", "-1")
        assert reply.startswith(b"*3\r\n") and b"$4\r\nEXEC\r\n" not in reply
    finally:
        c.call("CONFIG", "SET", "slowlog-max-len", "128")


# -- MONITOR ------------------------------------------------------------------------------------
def test_monitor(c: Conn, srv: ServerProcess) -> None:
    mon = Conn(srv)
    try:
        assert mon.call("MONITOR") == b"+OK\r\n"
        my_addr = c.call("CLIENT", "INFO").split(b"addr=", 1)[1].split(b" ", 1)[0].decode()
        c.call("SET", 'a"b\\', "x y\n\t\x01")
        c.call("AUTH", "default", "pw")
        c.call("CONFIG", "GET", "hz")  # admin commands are not shown
        c.call("NOSUCH")  # nor rejected ones
        c.call("SELECT", "2")
        c.call("MULTI")
        c.call("PING")
        c.call("EXEC")
        c.call("SELECT", "0")
        lines = [mon.read() for _ in range(7)]
    finally:
        mon.close()
    prefix = r"\+\d+\.\d{6} \[(\d+) " + re.escape(my_addr) + r"\] "
    shown = []
    for line in lines:
        match = re.fullmatch(prefix + r"(.*)\r\n", line.decode())
        assert match is not None, line
        shown.append((match.group(1), match.group(2)))
    assert shown == [
        ("0", r'"CLIENT" "INFO"'),
        ("0", r'"SET" "a\"b\\" "x y\n\t\x01"'),
        ("0", r'"AUTH" "(redacted)" "(redacted)"'),
        ("2", r'"SELECT" "2"'),
        ("2", r'"MULTI"'),
        ("2", r'"PING"'),
        ("2", r'"EXEC"'),
    ]


# -- COMMAND ------------------------------------------------------------------------------------
def test_command_count_list_info(srv: ServerProcess) -> None:
    r = redis.Redis(host=srv.host, port=srv.port)
    try:
        count = r.command_count()
        table = r.execute_command("COMMAND")
        assert len(table) == count
        names = set(r.command_list())
        assert {b"get", b"set", b"ping", b"client|list", b"config|get", b"multi"} <= names
        assert set(r.command_list(category="keyspace")) >= {b"del", b"expire", b"scan"}
        assert set(r.command_list(pattern="conf*")) >= {b"config", b"config|get"}
    finally:
        r.close()
    c = Conn(srv)
    try:
        assert c.call("COMMAND", "GETKEYS", "SET", "k", "v") == b"*1\r\n$1\r\nk\r\n"
        assert c.call("COMMAND", "GETKEYS", "DEL", "a", "b") == (
            b"*2\r\n$1\r\na\r\n$1\r\nb\r\n")
        assert c.call("COMMAND", "GETKEYS", "OBJECT", "ENCODING", "k") == b"*1\r\n$1\r\nk\r\n"
        docs = c.call("COMMAND", "DOCS", "get")
        assert docs.startswith(b"*2\r\n$3\r\nget\r\n*")
        assert b"$7\r\nsummary\r\n" in docs and b"$5\r\nsince\r\n$5\r\n1.0.0\r\n" in docs
        assert c.call("COMMAND", "DOCS", "nosuch") == b"*0\r\n"
    finally:
        c.close()


def test_command_info_shape(c: Conn) -> None:
    assert c.call("COMMAND", "INFO", "nosuch") == b"*1\r\n$-1\r\n"
    reply = c.call("COMMAND", "INFO", "set", "nosuch")
    assert reply.startswith(b"*2\r\n*10\r\n$3\r\nset\r\n:-3\r\n")
    reply = c.call("COMMAND", "INFO", "get")
    assert reply.startswith(b"*1\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n"
                            b":1\r\n:1\r\n:1\r\n")
    c.call("HELLO", "3")
    reply = c.call("COMMAND", "INFO", "get")
    assert reply.startswith(b"*1\r\n*10\r\n$3\r\nget\r\n:2\r\n~2\r\n+readonly\r\n+fast\r\n")
    assert b"$5\r\nflags\r\n~2\r\n+RO\r\n+access\r\n" in reply


def test_command_errors(c: Conn) -> None:
    assert c.call("COMMAND", "GETKEYS", "NOSUCH", "a") == b"-ERR Invalid command specified\r\n"
    assert c.call("COMMAND", "GETKEYS", "PING", "x") == (
        b"-ERR The command has no key arguments\r\n")
    assert c.call("COMMAND", "GETKEYS", "GET", "a", "b") == (
        b"-ERR Invalid number of arguments specified for command\r\n")
    assert c.call("COMMAND", "COUNT", "x") == arity("command|count")
    assert c.call("COMMAND", "NOPE") == b"-ERR unknown subcommand 'NOPE'. Try COMMAND HELP.\r\n"
    assert c.call("COMMAND", "LIST", "FILTERBY", "nope", "x") == b"-ERR syntax error\r\n"
    assert c.call("COMMAND", "LIST", "FILTERBY", "aclcat", "nosuchcat") == b"*0\r\n"


# -- SHUTDOWN -----------------------------------------------------------------------------------
def test_shutdown_errors(c: Conn) -> None:
    assert c.call("SHUTDOWN", "FOO") == b"-ERR syntax error\r\n"
    assert c.call("SHUTDOWN", "SAVE", "NOSAVE") == b"-ERR syntax error\r\n"
    assert c.call("SHUTDOWN", "ABORT", "NOW") == b"-ERR syntax error\r\n"
    assert c.call("PING") == b"+PONG\r\n"


def test_shutdown_nosave_stops_the_server() -> None:
    proc = ServerProcess(TARGET, extra_args=["--appendonly", "no"]).start()
    try:
        conn = Conn(proc)
        conn.sock.sendall(encode("SHUTDOWN", "NOSAVE"))
        assert conn.file.read() == b""  # no reply: the connection just closes
        conn.close()
        assert proc.proc is not None
        assert proc.proc.wait(timeout=15) == 0
    finally:
        proc.stop()


@ours_only
@pytest.mark.parametrize("container", ["ACL", "MEMORY", "OBJECT", "CONFIG", "CLIENT", "COMMAND",
                                       "SLOWLOG", "XINFO", "XGROUP"])
def test_every_help_exists_and_names_only_real_subcommands(c: Conn, container: str) -> None:
    """Every container's unknown-subcommand error says 'Try <CONTAINER> HELP.': that HELP
    answers, in addReplyHelp's shape, and each subcommand it names is one we have."""
    reply = c.call(container, "HELP")
    lines = [line[1:].decode() for line in reply.split(b"\r\n")[1:] if line.startswith(b"+")]
    assert lines[0] == f"{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert lines[-2:] == ["HELP", "    Prints this help."]
    names = [line.split()[0].split("|")[0] for line in lines[1:-2]
             if not line.startswith((" ", "("))]  # ("(no subcommand)": COMMAND alone)
    assert names
    for name in names:
        answer = c.call(container, name)
        assert b"unknown subcommand" not in answer, (container, name, answer)


def test_module_list_is_empty(c: Conn) -> None:
    # No module is loaded: the reply of a Redis without modules (RESP2 and RESP3).
    assert c.call("MODULE", "LIST") == b"*0\r\n"
    c.call("HELLO", "3")
    assert c.call("MODULE", "LIST") == b"*0\r\n"
    assert c.call("MODULE", "LIST", "x") == (
        b"-ERR wrong number of arguments for 'module|list' command\r\n")
    assert c.call("MODULE") == b"-ERR wrong number of arguments for 'module' command\r\n"
