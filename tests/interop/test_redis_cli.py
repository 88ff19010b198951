"""redis-cli against the server: the interactive REPL (through a pseudo-terminal), RESP3 (-3),
AUTH at the prompt, --stat, --bigkeys / --memkeys, --pipe mass insertion of stream entries
with errors counted, --scan, -r and -x.

The expected transcripts are what redis-cli prints for Redis itself
(`XSTREAMD_TEST_TARGET=redis` checks them against Debian's redis-server 7.0).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time

import pytest

from tests.helpers import ServerProcess
from tests.integration.ops_helpers import IS_REDIS, call, connect, info, running
from tests.interop.cli_pty import Pty, Repl

pytestmark = pytest.mark.skipif(shutil.which("redis-cli") is None,
                                reason="redis-cli is not installed")

PASSWORD = "cli-pass"


def cli(port: int, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["redis-cli", "-p", str(port), *args], input=stdin,
                          capture_output=True, timeout=60, env={**os.environ, **(env or {})},
                          check=False)


RESP2_TRANSCRIPT = [
    ("XADD s 1-1 f v g w", '"1-1"\n'),
    ("XADD s 1-2 f v2", '"1-2"\n'),
    ("XADD s 1-1 a b", "(error) ERR The ID specified in XADD is equal or smaller than the "
                       "target stream top item\n"),
    ("XLEN s", "(integer) 2\n"),
    ("XRANGE s - +", '1) 1) "1-1"\n   2) 1) "f"\n      2) "v"\n      3) "g"\n      4) "w"\n'
                     '2) 1) "1-2"\n   2) 1) "f"\n      2) "v2"\n'),
    ("XREVRANGE s + - COUNT 1", '1) 1) "1-2"\n   2) 1) "f"\n      2) "v2"\n'),
    ("XRANGE s 5 6", "(empty array)\n"),
    ("XGROUP CREATE s grp 0", "OK\n"),
    ("XREADGROUP GROUP grp alice COUNT 1 STREAMS s >",
     '1) 1) "s"\n   2) 1) 1) "1-1"\n         2) 1) "f"\n            2) "v"\n'
     '            3) "g"\n            4) "w"\n'),
    ("XPENDING s grp", '1) (integer) 1\n2) "1-1"\n3) "1-1"\n4) 1) 1) "alice"\n      2) "1"\n'),
    ("XACK s grp 1-1", "(integer) 1\n"),
    ("XREAD BLOCK 10 STREAMS s $", "(nil)\n"),
    ("XADD", "(error) ERR wrong number of arguments for 'xadd' command\n"),
    ("GET nokey", "(nil)\n"),
    ("DEL s", "(integer) 1\n"),
]

RESP3_TRANSCRIPT = [
    ("XADD s 1-1 f v", '"1-1"\n'),
    ("XADD s 1-2 g w", '"1-2"\n'),
    ("XGROUP CREATE s grp 0", "OK\n"),
    ("XREAD COUNT 5 STREAMS s 0",
     '1# "s" => \n   1) 1) "1-1"\n      2) 1) "f"\n         2) "v"\n'
     '   2) 1) "1-2"\n      2) 1) "g"\n         2) "w"\n'),
    ("XREADGROUP GROUP grp alice STREAMS s >",
     '1# "s" => \n   1) 1) "1-1"\n      2) 1) "f"\n         2) "v"\n'
     '   2) 1) "1-2"\n      2) 1) "g"\n         2) "w"\n'),
    ("XPENDING s grp", '1) (integer) 2\n2) "1-1"\n3) "1-2"\n4) 1) 1) "alice"\n      2) "2"\n'),
    ("XAUTOCLAIM s grp bob 0 0-0",
     '1) "0-0"\n2) 1) 1) "1-1"\n      2) 1) "f"\n         2) "v"\n'
     '   2) 1) "1-2"\n      2) 1) "g"\n         2) "w"\n3) (empty array)\n'),
    ("XREAD BLOCK 10 STREAMS s $", "(nil)\n"),
    ("XLEN nokey", "(integer) 0\n"),
]


def test_interactive_session(flushed: ServerProcess) -> None:
    repl = Repl(flushed.port)
    try:
        for line, expected in RESP2_TRANSCRIPT:
            assert repl.send(line) == expected, line
    finally:
        assert repl.quit() == 0


def test_interactive_resp3(flushed: ServerProcess) -> None:
    repl = Repl(flushed.port, "-3")
    try:
        for line, expected in RESP3_TRANSCRIPT:
            assert repl.send(line) == expected, line
        hello = repl.send("HELLO 3")
        assert hello.startswith('1# "server" => "redis"\n2# "version" => ')
        assert '3# "proto" => (integer) 3\n' in hello
    finally:
        assert repl.quit() == 0


def test_interactive_auth() -> None:
    with running(["--requirepass", PASSWORD]) as proc:
        repl = Repl(proc.port)
        try:
            assert repl.send("XLEN s") == "(error) NOAUTH Authentication required.\n"
            assert repl.send("AUTH nope") == (
                "(error) WRONGPASS invalid username-password pair or user is disabled.\n")
            assert repl.send(f"AUTH {PASSWORD}") == "OK\n"
            assert repl.send("XLEN s") == "(integer) 0\n"
            assert repl.send("ACL WHOAMI") == '"default"\n'
        finally:
            assert repl.quit() == 0
        # REDISCLI_AUTH keeps the password off the command line.
        done = cli(proc.port, "XADD", "s", "1-1", "f", "v", env={"REDISCLI_AUTH": PASSWORD})
        assert done.stdout == b"1-1\n"


def test_user_login_and_refusals(flushed: ServerProcess) -> None:
    """redis-cli --user / --pass logs in as an ACL user, whose refusals it prints as Redis's."""
    port = flushed.port
    assert cli(port, "ACL", "SETUSER", "ingest", "on", ">pw", "~events:*", "+@stream",
               "+ping").stdout == b"OK\n"
    login = ["--user", "ingest", "--pass", "pw", "--no-auth-warning"]
    assert cli(port, *login, "XADD", "events:a", "1-1", "f", "v").stdout == b"1-1\n"
    # Redis 8's refusal texts (7.0's said "this user has no permissions to ...").
    key_refusal, command_refusal = (
        ("this user has no permissions to access one of the keys used as arguments",
         "this user has no permissions to run the 'get' command") if IS_REDIS else
        ("No permissions to access a key",
         "User ingest has no permissions to run the 'get' command"))
    assert cli(port, *login, "XADD", "other", "1-1", "f", "v").stdout == (
        f"NOPERM {key_refusal}\n\n".encode())
    assert cli(port, *login, "GET", "events:a").stdout == (
        f"NOPERM {command_refusal}\n\n".encode())
    # A failed login leaves the connection with the default user (nopass here), as in Redis.
    failed = cli(port, "--user", "ingest", "--pass", "bad", "--no-auth-warning", "PING")
    assert failed.stderr.startswith(b"AUTH failed: WRONGPASS") and failed.stdout == b"PONG\n"
    assert cli(port, "ACL", "DELUSER", "ingest").stdout == b"1\n"


def test_interactive_help_has_summary(srv: ServerProcess) -> None:
    repl = Repl(srv.port)
    try:
        text = repl.send("HELP XADD")
        assert "XADD" in text and "summary:" in text and "group:" in text and "stream" in text
    finally:
        repl.quit()


def test_interactive_help_shows_syntax(srv: ServerProcess) -> None:
    repl = Repl(srv.port)
    try:
        assert "MAXLEN|MINID" in repl.send("HELP XADD")
    finally:
        repl.quit()


def test_stat(flushed: ServerProcess) -> None:
    sock = connect(flushed.port)
    for key in ("a", "b", "c"):
        assert call(sock, "XADD", key, "1-1", "f", "v") == b"1-1"
    blocked = connect(flushed.port)
    blocked.sendall(b"*6\r\n$5\r\nXREAD\r\n$5\r\nBLOCK\r\n$1\r\n0\r\n$7\r\nSTREAMS\r\n"
                    b"$1\r\nz\r\n$1\r\n$\r\n")
    stat = Pty(["redis-cli", "-p", str(flushed.port), "--stat", "-i", "0.2"])
    try:
        text = stat.read_for(2.0).decode().replace("\r\n", "\n")
    finally:
        stat.close()
    lines = text.splitlines()
    assert lines[0].startswith("------- data ------ ---")
    assert lines[1].split() == ["keys", "mem", "clients", "blocked", "requests", "connections"]
    rows = [line.split() for line in lines[2:] if re.match(r"^\d+\s", line)]
    assert len(rows) >= 3
    for keys, mem, clients, blocked_count, requests, delta, connections in rows:
        assert keys == "3"
        assert re.fullmatch(r"\d+(\.\d+)?[BKMG]", mem)
        assert int(clients) >= 3 and blocked_count == "1"
        assert int(requests) > 0 and re.fullmatch(r"\(\+\d+\)", delta)
        assert int(connections) > 0
    # --stat sends one INFO a tick, so the request counter moves by one a row.
    counts = [int(row[4]) for row in rows]
    assert counts == sorted(counts) and counts[-1] > counts[0]


def test_bigkeys_and_memkeys(flushed: ServerProcess) -> None:
    sock = connect(flushed.port)
    for i in range(1, 6):
        call(sock, "XADD", "big", f"{i}-1", "f", "v" * 100)
    call(sock, "XADD", "small", "1-1", "f", "v")
    done = cli(flushed.port, "--bigkeys")
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert "Sampled 2 keys in the keyspace!" in out
    assert "Biggest stream found '\"big\"' has 5 entries" in out
    assert "2 streams with 6 entries (100.00% of keys, avg size 3.00)" in out
    done = cli(flushed.port, "--memkeys")
    assert done.returncode == 0, done.stderr
    match = re.search(r"2 streams with (\d+) bytes \(100\.00% of keys", done.stdout.decode())
    assert match and int(match.group(1)) > 500


def test_pipe_mass_insertion_of_stream_entries(flushed: ServerProcess) -> None:
    frames = []
    bad = 0
    for i in range(1, 20001):
        key, entry_id, value = b"events", f"{i}-0".encode(), f"payload-{i}".encode()
        frames.append(b"*5\r\n$4\r\nXADD\r\n$6\r\n%s\r\n$%d\r\n%s\r\n$1\r\nf\r\n$%d\r\n%s\r\n"
                      % (key, len(entry_id), entry_id, len(value), value))
        if i % 5000 == 0:  # an ID that is not greater than the top item: an error reply
            frames.append(b"*5\r\n$4\r\nXADD\r\n$6\r\nevents\r\n$3\r\n1-0\r\n$1\r\nf\r\n$1\r\nx\r\n")
            bad += 1
    done = cli(flushed.port, "--pipe", stdin=b"".join(frames))
    assert done.returncode == 1  # redis-cli --pipe exits 1 when any reply was an error
    out = done.stdout.decode()
    assert "All data transferred. Waiting for the last reply..." in out
    assert f"errors: {bad}, replies: {20000 + bad}" in out
    sock = connect(flushed.port)
    assert call(sock, "XLEN", "events") == 20000
    assert call(sock, "XRANGE", "events", "20000-0", "+") == [[b"20000-0",
                                                              [b"f", b"payload-20000"]]]


def test_scan_repeat_and_stdin_argument(flushed: ServerProcess) -> None:
    done = cli(flushed.port, "-r", "5", "XADD", "rep", "*", "f", "v")
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 5
    for key in ("sensor:1", "sensor:2", "other"):
        cli(flushed.port, "XADD", key, "1-1", "f", "v")
    done = cli(flushed.port, "--scan", "--pattern", "sensor:*")
    assert sorted(done.stdout.split()) == [b"sensor:1", b"sensor:2"]
    # -x: the last argument comes from stdin (a binary-safe payload).
    done = cli(flushed.port, "-x", "XADD", "blob", "1-1", "data", stdin=b"\x00\x01 line\nnext")
    assert done.stdout == b"1-1\n"
    sock = connect(flushed.port)
    assert call(sock, "XRANGE", "blob", "-", "+") == [[b"1-1", [b"data", b"\x00\x01 line\nnext"]]]
    assert int(info(sock, "keyspace")["db0"].split(",")[0].split("=")[1]) == 5


def test_subscribe_prints_messages(flushed: ServerProcess) -> None:
    """redis-cli SUBSCRIBE (and --csv PSUBSCRIBE) prints each message as it comes."""
    listeners = [
        subprocess.Popen(["redis-cli", "-p", str(flushed.port), "SUBSCRIBE", "news"],
                         stdout=subprocess.PIPE, text=True),
        subprocess.Popen(["redis-cli", "-p", str(flushed.port), "--csv", "PSUBSCRIBE", "ne*"],
                         stdout=subprocess.PIPE, text=True),
    ]
    try:
        with connect(flushed.port) as conn:
            deadline = time.monotonic() + 10
            while call(conn, "PUBSUB", "NUMSUB", "news")[1] != 1 or \
                    call(conn, "PUBSUB", "NUMPAT") != 1:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            assert call(conn, "PUBLISH", "news", "hello") == 2
        plain, csv = ([listener.stdout.readline() for _ in range(lines)]  # type: ignore[union-attr]
                      for listener, lines in zip(listeners, (6, 3), strict=True))
        assert plain == ["subscribe\n", "news\n", "1\n", "message\n", "news\n", "hello\n"]
        assert csv == ["Reading messages... (press Ctrl-C to quit)\n", '"psubscribe","ne*",1\n',
                       '"pmessage","ne*","news","hello"\n']
    finally:
        for listener in listeners:
            listener.kill()
            listener.wait()
