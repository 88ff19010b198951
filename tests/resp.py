"""A raw RESP client for tests that assert the exact bytes of replies."""

from __future__ import annotations

import socket

import hiredis

from tests.helpers import ServerProcess


def encode(*args: str | bytes | int) -> bytes:
    """A command as a RESP multibulk frame."""
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


class Conn:
    """A raw client: call() returns the exact bytes of one reply (RESP2 or RESP3)."""

    def __init__(self, server: ServerProcess) -> None:
        self.sock = socket.create_connection((server.host, server.port), timeout=10)
        self.file = self.sock.makefile("rb")

    def call(self, *args: str | bytes | int) -> bytes:
        self.sock.sendall(encode(*args))
        return self.read()

    def read(self) -> bytes:
        line = self.file.readline()
        if not line:
            raise EOFError
        kind, rest = line[:1], line[1:-2]
        if kind in b"$=!" and rest != b"-1":
            return line + self.file.read(int(rest) + 2)
        if kind in b"*%~>|" and rest != b"-1":
            n = int(rest) * (2 if kind in b"%|" else 1)
            return line + b"".join(self.read() for _ in range(n))
        return line

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
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a.encode() if isinstance(a, str) else a
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
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
