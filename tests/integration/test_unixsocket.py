"""Listening on a Unix socket (unixsocket, unixsocketperm), with or without a TCP port (port 0
listens on none), and tcp-backlog: real servers, redis-py and redis-cli over the socket.
Everything here holds for Debian's redis-server too (XSTREAMD_TEST_TARGET=redis), except
INFO's listener lines, which came after Redis 7.0."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import tempfile
from collections.abc import Iterator

import pytest
import redis

from tests.helpers import TARGET, ServerProcess
from tests.integration.ops_helpers import IS_REDIS, call, connect, info, is_closed, read_replies
from tests.resp import encode as resp

IMMUTABLE = "ERR CONFIG SET failed (possibly related to argument '{}') - can't set immutable config"


@pytest.fixture
def sock_dir() -> Iterator[str]:
    """A short directory for socket files (a socket's path must stay under 108 bytes)."""
    path = tempfile.mkdtemp(prefix="xs-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def unix_connect(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(path)
    return sock


def client_fields(line: bytes) -> dict[str, str]:
    return dict(field.split("=", 1) for field in line.decode().split())


def test_unix_socket_only_serves_clients_named_after_the_socket(sock_dir: str) -> None:
    path = os.path.join(sock_dir, "xs.sock")
    proc = ServerProcess(TARGET, extra_args=["--unixsocketperm", "700"], unix_socket=path,
                         tcp=False).start()
    try:
        mode = os.stat(path).st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o700
        r = redis.Redis(unix_socket_path=path)
        first = r.xadd("s", {"f": "v"})
        assert r.xrange("s") == [(first, {b"f": b"v"})]
        fields = client_fields(r.execute_command("CLIENT", "INFO"))
        assert (fields["addr"], fields["laddr"], fields["flags"]) == (f"{path}:0", f"{path}:0",
                                                                        "U")
        assert r.config_get("unixsocket*") == {"unixsocket": path, "unixsocketperm": "700"}
        assert r.config_get("port") == {"port": "0"}
        server = info(unix_connect(path), "server")
        assert server["tcp_port"] == "0"
        if not IS_REDIS:  # (listener lines came with Redis 7.2)
            assert "listener0" not in server
            assert server["listener1"] == f"name=unix,bind={path}"
        for name, value in (("unixsocket", "/tmp/other.sock"), ("unixsocketperm", "777"),
                            ("tcp-backlog", "10")):
            with pytest.raises(redis.ResponseError) as caught:
                r.config_set(name, value)
            assert str(caught.value) == IMMUTABLE.format(name)[4:]
        # redis-cli over the socket, as users run it
        out = subprocess.run(["redis-cli", "-s", path, "XLEN", "s"], capture_output=True,
                             text=True, timeout=30)
        assert out.stdout.strip() == "1"
        r.close()
    finally:
        proc.stop()


def test_tcp_and_unix_together(sock_dir: str) -> None:
    path = os.path.join(sock_dir, "xs.sock")
    proc = ServerProcess(TARGET, unix_socket=path).start()
    try:
        tcp = connect(proc.port)
        local = unix_connect(path)
        assert call(local, "CLIENT", "SETNAME", "over-unix") == b"OK"
        listing = call(tcp, "CLIENT", "LIST")
        assert isinstance(listing, bytes)
        lines = {client_fields(line)["name"]: client_fields(line)
                 for line in listing.splitlines()}
        assert lines["over-unix"]["addr"] == f"{path}:0"
        assert lines["over-unix"]["flags"] == "U"
        assert lines[""]["addr"].startswith("127.0.0.1:") and lines[""]["flags"] == "N"
        if not IS_REDIS:
            server = info(tcp, "server")
            assert server["listener0"] == f"name=tcp,bind=127.0.0.1,port={proc.port}"
            assert server["listener1"] == f"name=unix,bind={path}"
        # MONITOR names a Unix socket's client unix:<path>
        assert call(tcp, "MONITOR") == b"OK"
        assert call(local, "SET", "k", "v") == b"OK"
        line = read_replies(tcp, 1)[0]
        assert isinstance(line, bytes)
        assert line.split(b" ", 1)[1] == f'[0 unix:{path}] "SET" "k" "v"'.encode()
        # CLIENT KILL ADDR reaches it by that address
        other = connect(proc.port)
        assert call(other, "CLIENT", "KILL", "ADDR", f"{path}:0") == 1
        assert is_closed(local)
    finally:
        proc.stop()


def test_unix_clients_are_local_for_protected_mode(sock_dir: str) -> None:
    """Protected mode refuses outside TCP peers when no password is set; a Unix socket's
    client is always local."""
    path = os.path.join(sock_dir, "xs.sock")
    proc = ServerProcess(TARGET, extra_args=["--bind", "0.0.0.0", "--protected-mode", "yes"],
                         unix_socket=path).start()
    try:
        assert call(unix_connect(path), "PING") == b"PONG"
    finally:
        proc.stop()


def test_a_file_left_at_the_path_is_replaced_and_shutdown_removes_the_socket(
        sock_dir: str) -> None:
    path = os.path.join(sock_dir, "xs.sock")
    with open(path, "w") as fh:  # a previous run's leftover
        fh.write("stale")
    proc = ServerProcess(TARGET, unix_socket=path, tcp=False).start()
    try:
        assert stat.S_ISSOCK(os.stat(path).st_mode)
        local = unix_connect(path)
        local.sendall(resp("SHUTDOWN", "NOSAVE"))
        assert is_closed(local)
        assert proc.proc is not None and proc.proc.wait(timeout=15) == 0
        assert not os.path.exists(path)
        assert "Removing the unix socket file." in proc.read_log()
    finally:
        proc.stop()


@pytest.mark.parametrize(("args", "message"), [
    (["--port", "0"], "Configured to not listen anywhere, exiting."),
    (["--port", "0", "--unixsocket", "/nonexistent-dir/xs.sock"],
     "Failed opening Unix socket: bind: No such file or directory"),
    (["--unixsocketperm", "999"], "argument couldn't be parsed as an octal number"),
    (["--unixsocketperm", "1000"], "argument must be between 0 and 777 inclusive"),
])
def test_start_refused(args: list[str], message: str) -> None:
    proc = ServerProcess(TARGET, extra_args=args)
    with pytest.raises(RuntimeError, match="exited early"):
        proc.start(timeout=15)
    try:
        assert proc.proc is not None and proc.proc.wait(timeout=15) == 1
        assert message in proc.read_log()
    finally:
        proc.stop()


def test_tcp_backlog_is_the_listening_queue() -> None:
    proc = ServerProcess(TARGET, extra_args=["--tcp-backlog", "37"]).start()
    try:
        r = redis.Redis(port=proc.port)
        assert r.config_get("tcp-backlog") == {"tcp-backlog": "37"}
        if shutil.which("ss"):  # (iproute2) shows a listening socket's backlog as its Send-Q
            out = subprocess.run(["ss", "-Hltn", f"sport = :{proc.port}"],
                                 capture_output=True, text=True, timeout=30)
            assert [line.split()[2] for line in out.stdout.splitlines()] == ["37"]
        r.close()
    finally:
        proc.stop()
    default = ServerProcess(TARGET).start()
    try:
        assert redis.Redis(port=default.port).config_get("tcp-backlog") == {
            "tcp-backlog": "511"}
    finally:
        default.stop()
