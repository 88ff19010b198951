"""A raw RESP client for tests that assert the exact bytes of replies."""

from __future__ import annotations

import socket
from typing import BinaryIO

import hiredis

from tests.helpers import ServerProcess


def encode(*args: str | bytes | int) -> bytes:
    """A command as a RESP multibulk frame."""
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


def read_raw(file: BinaryIO) -> bytes:
    """The exact bytes of one reply (RESP2 or RESP3) read from a socket's file."""
    line = file.readline()
    if not line:
        raise EOFError
    kind, rest = line[:1], line[1:-2]
    if kind in b"$=!" and rest != b"-1":
        return line + file.read(int(rest) + 2)
    if kind in b"*%~>|" and rest != b"-1":
        n = int(rest) * (2 if kind in b"%|" else 1)
        return line + b"".join(read_raw(file) for _ in range(n))
    return line


class Conn:
    """A raw client: call() returns the exact bytes of one reply (RESP2 or RESP3)."""

    def __init__(self, server: ServerProcess) -> None:
        self.sock = socket.create_connection((server.host, server.port), timeout=10)
        self.file = self.sock.makefile("rb")

    def call(self, *args: str | bytes | int) -> bytes:
        self.sock.sendall(encode(*args))
        return self.read()

    def read(self) -> bytes:
        return read_raw(self.file)

    def at_eof(self) -> bool:
        return self.file.read(1) == b""

    def close(self) -> None:
        self.file.close()
        self.sock.close()


class RawConn:
    """One RESP connection that returns each reply's exact bytes."""

    def __init__(self, server: ServerProcess) -> None:
        self.sock = socket.create_connection((server.host, server.port), timeout=10)

    def call(self, *args: str | bytes) -> bytes:
        self.sock.sendall(encode(*args))
        reader = hiredis.Reader()
        data = b""
        while True:
            chunk = self.sock.recv(65536)
            assert chunk, "connection closed"
            data += chunk
            reader.feed(chunk)
            if reader.gets() is not False:
                return data

    def value(self, *args: str | bytes) -> object:
        """The reply parsed by hiredis (maps as dicts, RESP2 arrays as lists)."""
        reader = hiredis.Reader()
        reader.feed(self.call(*args))
        return reader.gets()

    def info(self, key: str) -> dict:
        """XINFO STREAM key as a dict (RESP2 flat array or RESP3 map)."""
        reply = self.value("XINFO", "STREAM", key)
        if isinstance(reply, list):
            return dict(zip(reply[0::2], reply[1::2], strict=True))
        return reply  # type: ignore[return-value]

    def close(self) -> None:
        self.sock.close()


class ParsedConn:
    """A raw connection: send commands now, read their replies (parsed by hiredis) later;
    `raw` keeps the bytes received."""

    def __init__(self, server: ServerProcess) -> None:
        self.sock = socket.create_connection((server.host, server.port), timeout=10)
        self.reader = hiredis.Reader()
        self.raw = b""

    def send(self, *args: str | bytes | int) -> None:
        self.sock.sendall(encode(*args))

    def read(self, timeout: float = 10.0) -> object:
        self.sock.settimeout(timeout)
        while True:
            reply = self.reader.gets()
            if reply is not False:
                return reply
            chunk = self.sock.recv(65536)
            assert chunk, "connection closed"
            self.raw += chunk
            self.reader.feed(chunk)

    def call(self, *args: str | bytes | int) -> object:
        self.send(*args)
        return self.read()

    def nothing_pending(self, wait: float = 0.2) -> bool:
        """True when no reply arrives within `wait` seconds (the client is still waiting)."""
        self.sock.settimeout(wait)
        try:
            chunk = self.sock.recv(65536)
        except TimeoutError:
            return True
        self.raw += chunk
        self.reader.feed(chunk)
        return False

    def close(self) -> None:
        self.sock.close()
