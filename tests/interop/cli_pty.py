"""Drive interactive programs (redis-cli's REPL, --stat) through a pseudo-terminal."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time


class Pty:
    """A program whose stdin/stdout/stderr are a pseudo-terminal (so it runs interactively).

    TERM=dumb makes linenoise read plain lines and print plain prompts, with no escape codes.
    """

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        master, slave = pty.openpty()
        full_env = dict(os.environ, TERM="dumb")
        full_env.update(env or {})
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                     env=full_env, close_fds=True)
        os.close(slave)
        self.fd = master
        self.buffer = b""

    def read_until(self, token: bytes, timeout: float = 15.0) -> bytes:
        """Read until the output ends with token; returns everything read (token included)."""
        deadline = time.monotonic() + timeout
        while not self.buffer.endswith(token):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {token!r} after {self.buffer[-500:]!r}")
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.2))
            if ready:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:  # the program exited
                    raise TimeoutError(f"closed before {token!r}: {self.buffer[-500:]!r}") from None
                self.buffer += data
        out, self.buffer = self.buffer, b""
        return out

    def read_for(self, seconds: float) -> bytes:
        """Everything printed within `seconds` (for programs that never stop by themselves)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.2))
            if ready:
                try:
                    self.buffer += os.read(self.fd, 65536)
                except OSError:
                    break
        out, self.buffer = self.buffer, b""
        return out

    def write_line(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        os.close(self.fd)


class Repl(Pty):
    """redis-cli's interactive mode: send a line, get what it printed before the next prompt."""

    def __init__(self, port: int, *args: str, env: dict[str, str] | None = None) -> None:
        super().__init__(["redis-cli", "-p", str(port), *args], env)
        self.prompt = f"127.0.0.1:{port}> ".encode()
        self.read_until(self.prompt)

    def send(self, line: str) -> str:
        self.write_line(line)
        out = self.read_until(self.prompt)[: -len(self.prompt)].decode()
        out = out.replace("\r\n", "\n")
        echoed = line + "\n"
        assert out.startswith(echoed), out
        return out[len(echoed):]

    def quit(self) -> int:
        self.write_line("quit")
        code = self.proc.wait(timeout=10)
        os.close(self.fd)
        return code
