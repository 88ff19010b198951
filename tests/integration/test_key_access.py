"""Keys' access times and frequencies: OBJECT IDLETIME / FREQ, which lookups count as a use,
CLIENT NO-TOUCH, TOUCH, RESTORE ... IDLETIME / FREQ, and redis-cli --hotkeys.

RESTORE's IDLETIME sets an access time in the past, so no test sleeps. `XSTREAMD_TEST_TARGET=redis`
runs this file against Debian's redis-server 7.0.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator

import pytest
import redis

from tests.helpers import TARGET, ServerProcess
from tests.integration.server_fixtures import module_server

srv = module_server("--enable-debug-command", "local")

LFU_SELECTED = ("An LFU maxmemory policy is selected, idle time not tracked. Please note that "
                "when switching between policies at runtime LRU and LFU data will take some "
                "time to adjust.")
LFU_NOT_SELECTED = ("An LFU maxmemory policy is not selected, access frequency not tracked. "
                    "Please note that when switching between policies at runtime LRU and LFU "
                    "data will take some time to adjust.")


@pytest.fixture
def r(srv: ServerProcess) -> Iterator[redis.Redis]:
    client = redis.Redis(host=srv.host, port=srv.port)
    client.flushall()
    yield client
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("lfu-decay-time", "1")
    client.close()


def old_stream(r: redis.Redis, key: str, idle: int = 1000) -> None:
    """A stream whose last access was `idle` seconds ago (under an LRU policy)."""
    r.xadd("tmp", {"f": "v"}, id="1-1")
    payload = r.dump("tmp")
    r.delete("tmp")
    assert r.restore(key, 0, payload, idletime=idle)
    assert 1000 <= r.object("idletime", key) <= 1002


def test_idletime_of_a_new_key_is_zero(r: redis.Redis) -> None:
    r.xadd("s", {"f": "v"})
    assert r.object("idletime", "s") == 0
    assert r.object("idletime", "missing") is None


@pytest.mark.parametrize("command", [
    ("TYPE", "s"), ("EXISTS", "s"), ("TTL", "s"), ("PTTL", "s"), ("EXPIRETIME", "s"),
    ("OBJECT", "ENCODING", "s"), ("OBJECT", "REFCOUNT", "s"), ("MEMORY", "USAGE", "s"),
    ("DBSIZE",), ("KEYS", "*"), ("SCAN", "0"),
])
def test_lookups_that_leave_the_access_time(r: redis.Redis, command: tuple[str, ...]) -> None:
    old_stream(r, "s")
    r.execute_command(*command)
    assert r.object("idletime", "s") >= 1000


@pytest.mark.parametrize("command", [
    ("XLEN", "s"), ("XRANGE", "s", "-", "+"), ("XREVRANGE", "s", "+", "-"),
    ("XREAD", "STREAMS", "s", "0"), ("XADD", "s", "*", "f", "v"), ("XINFO", "STREAM", "s"),
    ("XTRIM", "s", "MAXLEN", "5"), ("DUMP", "s"), ("TOUCH", "s"), ("EXPIRE", "s", "100"),
    ("PERSIST", "s"), ("XGROUP", "CREATE", "s", "g", "0"),
])
def test_lookups_that_count_as_a_use(r: redis.Redis, command: tuple[str, ...]) -> None:
    old_stream(r, "s")
    r.execute_command(*command)
    assert r.object("idletime", "s") <= 1


def test_touch_counts_the_keys_it_finds(r: redis.Redis) -> None:
    old_stream(r, "a")
    old_stream(r, "b")
    assert r.touch("a", "nope", "b") == 2
    assert r.object("idletime", "a") <= 1
    assert r.object("idletime", "b") <= 1


@pytest.mark.skipif(TARGET == "redis", reason="CLIENT NO-TOUCH is Redis 7.2's")
def test_client_no_touch(r: redis.Redis) -> None:
    """A NO-TOUCH client's reads leave keys alone, except TOUCH; OFF restores the default."""
    old_stream(r, "s")
    assert r.execute_command("CLIENT", "NO-TOUCH", "ON") == b"OK"
    r.xrange("s")
    r.xlen("s")
    assert r.object("idletime", "s") >= 1000
    assert r.touch("s") == 1
    assert r.object("idletime", "s") <= 1
    old_stream(r, "t")
    # In a pipeline too (one read, several commands).
    pipe = r.pipeline(transaction=False)
    pipe.xlen("t").xrange("t").object("idletime", "t")
    assert pipe.execute()[2] >= 1000
    assert r.execute_command("CLIENT", "NO-TOUCH", "OFF") == b"OK"
    r.xlen("t")
    assert r.object("idletime", "t") <= 1


def test_rename_and_move_keep_a_used_key(r: redis.Redis) -> None:
    old_stream(r, "s")
    r.rename("s", "t")
    assert r.object("idletime", "t") <= 1


def test_idletime_refused_under_lfu_and_freq_under_lru(r: redis.Redis) -> None:
    r.xadd("s", {"f": "v"})
    with pytest.raises(redis.ResponseError, match="^" + LFU_NOT_SELECTED):
        r.object("freq", "s")
    r.config_set("maxmemory-policy", "allkeys-lfu")
    with pytest.raises(redis.ResponseError, match="^" + LFU_SELECTED):
        r.object("idletime", "s")
    assert r.object("freq", "missing") is None


def test_lfu_counter_starts_at_five_and_grows_with_use(r: redis.Redis) -> None:
    r.config_set("maxmemory-policy", "allkeys-lfu")
    r.xadd("s", {"f": "v"})
    assert r.object("freq", "s") == 5
    assert r.object("freq", "s") == 5  # OBJECT FREQ itself is no use
    for _ in range(300):
        r.xlen("s")
    grown = r.object("freq", "s")
    assert 6 <= grown < 20  # logarithmic: lfu-log-factor 10
    r.type("s")
    r.exists("s")
    assert r.object("freq", "s") == grown


def test_restore_sets_idletime_or_freq(r: redis.Redis) -> None:
    r.xadd("tmp", {"f": "v"}, id="1-1")
    payload = r.dump("tmp")
    assert r.restore("s", 0, payload, idletime=5000)
    assert 5000 <= r.object("idletime", "s") <= 5002
    r.config_set("maxmemory-policy", "volatile-lfu")
    assert r.restore("f", 0, payload, frequency=100)
    assert r.object("freq", "f") == 100
    r.config_set("lfu-decay-time", "0")  # never decays
    assert r.object("freq", "f") == 100
    # Under LFU, IDLETIME is accepted and ignored (a new key's counter); FREQ likewise under LRU.
    assert r.restore("i", 0, payload, idletime=5000)
    assert r.object("freq", "i") == 5
    r.config_set("maxmemory-policy", "allkeys-lru")
    assert r.restore("q", 0, payload, frequency=100)
    assert r.object("idletime", "q") <= 1


def test_new_lfu_options_in_config(r: redis.Redis) -> None:
    assert r.config_get("lfu-*") == {"lfu-log-factor": "10", "lfu-decay-time": "1"}
    assert r.config_get("maxmemory-samples") == {"maxmemory-samples": "5"}
    assert r.config_get("maxmemory-eviction-tenacity") == {"maxmemory-eviction-tenacity": "10"}
    for option, bad in (("lfu-log-factor", "-1"), ("maxmemory-samples", "0"),
                        ("maxmemory-eviction-tenacity", "101")):
        with pytest.raises(redis.ResponseError, match=f"argument '{option}'.*must be between"):
            r.config_set(option, bad)


def test_redis_cli_hotkeys_lists_the_most_used_keys(srv: ServerProcess, r: redis.Redis) -> None:
    r.xadd("cold", {"f": "v"})
    refused = subprocess.run(["redis-cli", "-p", str(srv.port), "--hotkeys"],
                             capture_output=True, text=True, timeout=30)
    assert LFU_NOT_SELECTED in refused.stdout + refused.stderr
    r.config_set("maxmemory-policy", "allkeys-lfu")
    # Keys made under LFU: "cold" made before holds an LRU clock, which LFU reads as a
    # counter that depends on the time of day (as in Redis), sometimes decayed to 0.
    payload = r.dump("cold")
    r.delete("cold")
    r.restore("cold", 0, payload)  # (new keys: LFU's initial counter)
    r.restore("hot", 0, payload)
    for _ in range(500):
        r.xlen("hot")
    done = subprocess.run(["redis-cli", "-p", str(srv.port), "--hotkeys"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert 'keyname: "hot"' in done.stdout
    assert 'keyname: "cold"' in done.stdout
    assert done.stdout.index('keyname: "hot"') < done.stdout.index('keyname: "cold"')


def test_debug_object(r: redis.Redis) -> None:
    """The value's encoding, serialized length (DUMP's payload less 11 bytes), lru field."""
    old_stream(r, "s")
    idle = r.execute_command("DEBUG", "OBJECT", "s").decode().rsplit(":", 1)[1]
    assert int(idle) >= 1000  # (DEBUG OBJECT is no use of the key)
    r.set("str", "hello")
    r.set("n", "12345")
    for key, encoding in (("s", "stream"), ("str", "embstr"), ("n", "int")):
        reply = r.execute_command("DEBUG", "OBJECT", key).decode()
        found = re.fullmatch(r"Value at:0x[0-9a-f]+ refcount:1 encoding:(\S+) "
                             r"serializedlength:(\d+) lru:(\d+) lru_seconds_idle:(\d+)", reply)
        assert found, reply
        assert found.group(1) == encoding
        assert int(found.group(2)) == len(r.dump(key)) - 11
    assert int(found.group(4)) <= 1
    with pytest.raises(redis.ResponseError, match="^no such key$"):
        r.execute_command("DEBUG", "OBJECT", "missing")


def test_idle_times_survive_debug_reload_under_an_lru_policy(r: redis.Redis) -> None:
    """The snapshot keeps them (as an RDB does under an LRU or LFU policy)."""
    r.config_set("maxmemory-policy", "allkeys-lru")
    old_stream(r, "s")
    r.xadd("fresh", {"f": "v"})
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"
    assert r.object("idletime", "s") >= 1000
    assert r.object("idletime", "fresh") <= 1
    r.config_set("maxmemory-policy", "allkeys-lfu")
    r.config_set("lfu-decay-time", "0")
    r.xadd("tmp", {"f": "v"}, id="1-1")
    assert r.restore("f", 0, r.dump("tmp"), frequency=99)
    assert r.execute_command("DEBUG", "RELOAD") == b"OK"
    assert r.object("freq", "f") == 99


def test_bad_input(r: redis.Redis) -> None:
    r.xadd("s", {"f": "v"})
    for args, text in (
        (("OBJECT", "IDLETIME"), "wrong number of arguments for 'object|idletime' command"),
        (("OBJECT", "FREQ", "s", "x"), "wrong number of arguments for 'object|freq' command"),
        (("DEBUG", "OBJECT"), "unknown subcommand or wrong number of arguments for 'OBJECT'. "
                              "Try DEBUG HELP."),
        (("RESTORE", "k", "0", "x", "IDLETIME", "-1"), "Invalid IDLETIME value, must be >= 0"),
        (("RESTORE", "k", "0", "x", "FREQ", "256"),
         "Invalid FREQ value, must be >= 0 and <= 255"),
        (("CONFIG", "SET", "maxmemory-policy", "sometimes"),
         "CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) "
         "must be one of the following: volatile-lru, volatile-lfu, volatile-random, "
         "volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"),
    ):
        with pytest.raises(redis.ResponseError) as caught:
            r.execute_command(*args)
        assert str(caught.value) == text, args
