"""A script running past busy-reply-threshold (Redis's "busy script"): the other clients,
connected before or while it runs, are served meanwhile: BUSY for everything but the
allow-busy commands (SCRIPT KILL, SHUTDOWN NOSAVE, AUTH, HELLO, MULTI, ...), SCRIPT KILL stops a
script that has not written (UNKILLABLE otherwise), SHUTDOWN NOSAVE ends the server, blocked
clients wait for the script's end, and afterwards everyone is served normally."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest
import redis

from tests.helpers import ServerProcess
from tests.integration.ops_helpers import IS_REDIS, call, connect, read_replies, resp, running

pytestmark = pytest.mark.skipif(IS_REDIS, reason="xstreamd's process is started here")

BUSY = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
KILLED = "Script killed by user with SCRIPT KILL..."  # (redis-py drops the "ERR ")
UNKILLABLE = ("UNKILLABLE Sorry the script already executed write commands against the dataset. "
              "You can either wait the script termination or kill the server in a hard way "
              "using the SHUTDOWN NOSAVE command.")
FOREVER = "while true do end"
# Writes, then runs for about 1.5 s (TIME is allowed in scripts): a script SCRIPT KILL refuses.
WRITE_THEN_SPIN = (
    "redis.call('xadd', KEYS[1], '*', 'f', 'v') "
    "local t = redis.call('time') local start = t[1] * 1000000 + t[2] "
    "repeat t = redis.call('time') until t[1] * 1000000 + t[2] - start > 1500000 "
    "return 'done'")


@pytest.fixture()
def proc() -> Iterator[ServerProcess]:
    with running(["--busy-reply-threshold", "100"]) as server:
        yield server


def _background_eval(port: int, script: str, *keys: str,
                     password: str | None = None) -> dict[str, object]:
    """EVAL script on its own connection, in a thread: the dict gets "reply", "error" or
    "lost" (the connection closed unanswered)."""
    result: dict[str, object] = {}

    def run() -> None:
        client = redis.Redis(port=port, password=password, socket_timeout=30)
        try:
            result["reply"] = client.eval(script, len(keys), *keys)
        except redis.ResponseError as exc:
            result["error"] = str(exc)
        except redis.ConnectionError as exc:  # (the server ended meanwhile)
            result["lost"] = str(exc)
        finally:
            client.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    result["thread"] = thread
    return result


def _finished(result: dict[str, object], timeout: float = 20) -> dict[str, object]:
    result["thread"].join(timeout)  # type: ignore[attr-defined]
    assert {"reply", "error", "lost"} & set(result), "the script's caller got no reply"
    return result


def _wait_busy(port: int) -> socket.socket:
    """A connection made while the script runs, once the server answers it BUSY."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        sock = connect(port)
        reply = call(sock, "PING")
        if isinstance(reply, Exception):
            assert str(reply) == BUSY
            return sock
        sock.close()
        time.sleep(0.02)
    raise AssertionError("the server never answered BUSY")


def test_a_read_only_script_is_killed_and_everyone_is_served_again(proc: ServerProcess) -> None:
    before = connect(proc.port)
    assert call(before, "PING") == b"PONG"
    background = _background_eval(proc.port, FOREVER)
    other = _wait_busy(proc.port)
    assert str(call(before, "GET", "x")) == BUSY
    assert str(call(other, "XADD", "s", "*", "f", "v")) == BUSY
    assert call(other, "SCRIPT", "KILL") == b"OK"
    error = str(_finished(background)["error"])
    assert error.startswith(KILLED + " script: ") and error.endswith(", on @user_script:1.")
    assert call(before, "PING") == b"PONG" and call(other, "PING") == b"PONG"
    assert call(other, "XLEN", "s") == 0
    assert "Slow script detected" in proc.read_log()
    assert "Lua script killed by user with SCRIPT KILL." in proc.read_log()


def test_pcall_cannot_keep_a_killed_script_alive(proc: ServerProcess) -> None:
    background = _background_eval(
        proc.port, "local f = function() while 1 do redis.call('ping') end end "
                   "while 1 do pcall(f) end")
    other = _wait_busy(proc.port)
    assert call(other, "SCRIPT", "KILL") == b"OK"
    assert str(_finished(background)["error"]).startswith(KILLED)


def test_the_callers_pipelined_command_runs_after_the_killed_script(proc: ServerProcess) -> None:
    """Redis's "Timedout script does not cause a false dead client"."""
    caller = connect(proc.port)
    caller.sendall(resp("EVAL", "while 1 do redis.call('ping') end", "0") + resp("PING"))
    other = _wait_busy(proc.port)
    assert call(other, "SCRIPT", "KILL") == b"OK"
    killed, pong = read_replies(caller, 2)
    assert str(killed).startswith("ERR " + KILLED) and pong == b"PONG"


def test_replies_of_the_same_loop_pass_are_written_while_the_script_is_busy(
        proc: ServerProcess) -> None:
    """A command read in the same event-loop pass as the EVAL, just before it: its reply must
    not wait for the script's end. Sent many times to meet that pass at least once."""
    other = connect(proc.port)
    for _ in range(15):
        caller = connect(proc.port)
        caller.sendall(resp("EVAL", FOREVER, "0"))
        other.sendall(resp("PING"))  # answered PONG, or BUSY once the script is busy
        first = read_replies(other, 1)[0]
        assert first == b"PONG" or str(first) == BUSY
        # Kill it (the script may not be busy yet: NOTBUSY until it is).
        deadline = time.monotonic() + 10
        while call(other, "SCRIPT", "KILL") != b"OK":
            assert time.monotonic() < deadline
        assert str(read_replies(caller, 1)[0]).startswith("ERR " + KILLED)
        caller.close()


def test_a_script_that_wrote_cannot_be_killed(proc: ServerProcess) -> None:
    background = _background_eval(proc.port, WRITE_THEN_SPIN, "s")
    other = _wait_busy(proc.port)
    assert str(call(other, "SCRIPT", "KILL")) == UNKILLABLE
    assert str(call(other, "PING")) == BUSY
    assert _finished(background)["reply"] == b"done"
    assert call(other, "XLEN", "s") == 1
    assert str(call(other, "SCRIPT", "KILL")) == "NOTBUSY No scripts in execution right now."


def test_what_runs_while_busy_and_what_is_refused(proc: ServerProcess) -> None:
    background = _background_eval(proc.port, FOREVER)
    other = _wait_busy(proc.port)
    # The lookup's errors come first; the allow-busy commands run.
    assert str(call(other, "NOSUCH")).startswith("ERR unknown command 'NOSUCH'")
    assert str(call(other, "GET")) == "ERR wrong number of arguments for 'get' command"
    hello = call(other, "HELLO", "2", "SETNAME", "meanwhile")
    assert isinstance(hello, list) and b"server" in hello
    assert str(call(other, "CLIENT", "GETNAME")) == BUSY
    assert str(call(other, "SHUTDOWN")) == BUSY  # (only SHUTDOWN NOSAVE is taken)
    # A transaction: MULTI runs, a command refused meanwhile flags it, EXEC discards it.
    assert call(other, "MULTI") == b"OK"
    assert str(call(other, "SET", "k", "v")) == BUSY
    assert str(call(other, "EXEC")) == ("EXECABORT Transaction discarded because of: " + BUSY)
    assert call(other, "SCRIPT", "KILL") == b"OK"
    _finished(background)
    assert call(other, "CLIENT", "GETNAME") == b"meanwhile"
    assert call(other, "GET", "k") is None
    stats = call(other, "INFO", "commandstats")
    assert isinstance(stats, bytes) and b"cmdstat_get:" in stats and b"rejected_calls=0" in stats


def test_a_new_connection_authenticates_and_kills_the_script() -> None:
    with running(["--busy-reply-threshold", "100", "--requirepass", "secret"]) as proc:
        background = _background_eval(proc.port, FOREVER, password="secret")
        deadline = time.monotonic() + 10
        while True:
            sock = connect(proc.port)
            call(sock, "AUTH", "secret")
            reply = call(sock, "PING")
            if isinstance(reply, Exception):
                break
            sock.close()
            assert time.monotonic() < deadline
        assert str(reply) == BUSY
        fresh = connect(proc.port)
        assert str(call(fresh, "SCRIPT", "KILL")) == "NOAUTH Authentication required."
        # redis-cli does what a user would: connect, AUTH, SCRIPT KILL.
        out = subprocess.run(["redis-cli", "-p", str(proc.port), "-a", "secret",
                              "--no-auth-warning", "SCRIPT", "KILL"],
                             capture_output=True, text=True, timeout=20)
        assert out.stdout.strip() == "OK"
        assert str(_finished(background)["error"]).startswith(KILLED)
        # The connections made meanwhile are the event loop's now, and keep their state.
        assert call(sock, "PING") == b"PONG"
        assert call(fresh, "AUTH", "secret") == b"OK" and call(fresh, "PING") == b"PONG"


def test_blocked_clients_wait_for_the_scripts_end(proc: ServerProcess) -> None:
    """Redis's "Timedout scripts and unblocked command": the script's XADD wakes the blocked
    reader only once the script ended, and what it sees then is the whole script's work."""
    reader = connect(proc.port)
    reader.sendall(resp("XREAD", "BLOCK", "0", "STREAMS", "s", "$"))
    watcher = connect(proc.port)
    deadline = time.monotonic() + 10
    while b"blocked_clients:1" not in call(watcher, "INFO", "clients"):  # type: ignore[operator]
        assert time.monotonic() < deadline
    background = _background_eval(proc.port, WRITE_THEN_SPIN, "s")
    _wait_busy(proc.port)
    reader.settimeout(0.5)
    with pytest.raises(TimeoutError):
        reader.recv(1)
    assert _finished(background)["reply"] == b"done"
    reader.settimeout(10)
    [[stream, entries]] = read_replies(reader, 1)[0]  # type: ignore[misc]
    assert stream == b"s" and len(entries) == 1


def test_shutdown_nosave_ends_the_server_and_drops_the_scripts_writes(tmp_path: str) -> None:
    """Redis's "SHUTDOWN NOSAVE can kill a timedout script anyway": the script has not ended,
    so nothing of it is in the AOF; what came before is."""
    with running(["--busy-reply-threshold", "100", "--appendonly", "yes",
                  "--appendfsync", "always", "--pidfile", "xstreamd.pid"]) as proc:
        client = redis.Redis(port=proc.port)
        client.xadd("before", {"f": "v"})
        background = _background_eval(
            proc.port, "redis.call('xadd', 'during', '*', 'f', 'v') while true do end")
        other = _wait_busy(proc.port)
        assert os.path.exists(os.path.join(proc.dir, "xstreamd.pid"))
        other.sendall(resp("SHUTDOWN", "NOSAVE"))
        assert other.recv(100) == b""  # no reply: the connection closes
        assert proc.proc is not None and proc.proc.wait(10) == 0
        assert "lost" in _finished(background)  # (the caller's connection closed unanswered)
        assert "User requested shutdown..." in proc.read_log()
        assert not os.path.exists(os.path.join(proc.dir, "xstreamd.pid"))
        restarted = ServerProcess(extra_args=["--appendonly", "yes"], workdir=proc.dir)
        with restarted:
            again = redis.Redis(port=restarted.port)
            assert again.xlen("before") == 1 and again.exists("during") == 0


def test_a_sigint_after_a_sigterm_exits_while_a_script_is_busy(proc: ServerProcess) -> None:
    background = _background_eval(proc.port, FOREVER)
    _wait_busy(proc.port)
    assert proc.proc is not None
    proc.proc.send_signal(signal.SIGTERM)  # (taken when the script ends, as in Redis)
    time.sleep(0.3)
    assert proc.proc.poll() is None
    proc.proc.send_signal(signal.SIGINT)  # (after SIGTERM: "you insist")
    assert proc.proc.wait(10) == 1
    assert "You insist... exiting now." in proc.read_log()
    assert "lost" in _finished(background)


def test_two_sigints_exit_while_a_script_is_busy(proc: ServerProcess) -> None:
    background = _background_eval(proc.port, FOREVER)
    _wait_busy(proc.port)
    assert proc.proc is not None
    proc.proc.send_signal(signal.SIGINT)
    time.sleep(0.3)  # (two signals sent at once may arrive as one)
    assert proc.proc.poll() is None
    proc.proc.send_signal(signal.SIGINT)
    assert proc.proc.wait(10) == 1
    assert "lost" in _finished(background)


def test_sigterm_shuts_down_once_the_script_ends(proc: ServerProcess) -> None:
    background = _background_eval(proc.port, FOREVER)
    other = _wait_busy(proc.port)
    assert proc.proc is not None
    proc.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    assert proc.proc.poll() is None
    assert call(other, "SCRIPT", "KILL") == b"OK"
    assert proc.proc.wait(10) == 0
    assert "Received SIGTERM scheduling shutdown..." in proc.read_log()
    assert str(_finished(background)["error"]).startswith(KILLED)


def test_the_threshold_is_an_option_with_lua_time_limit_as_its_alias(
        proc: ServerProcess) -> None:
    client = redis.Redis(port=proc.port)
    assert client.config_get("busy-reply-threshold") == {"busy-reply-threshold": "100"}
    assert client.config_set("lua-time-limit", 0)
    assert client.config_get("lua-time-limit") == {"lua-time-limit": "0"}
    # 0: never busy (a long script just runs; the others wait for it).
    assert client.eval("local i = 0 while i < 3000000 do i = i + 1 end return i", 0) == 3000000
