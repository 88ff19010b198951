"""Pipelining on one redis-py connection: pack many commands, send once, read replies.

redis-py's Pipeline costs a few Python calls per command; for bulk XADD that overhead
dominates, so the writer packs commands itself (with hiredis when it is installed) and
uses the connection's own send and read methods. Error replies are returned in place,
never raised mid-way, so the connection never falls out of step with the server.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import redis
from redis.connection import AbstractConnection

try:
    from hiredis import pack_command as _pack_one
except ImportError:  # hiredis is optional for the connector
    _pack_one = None

Command = Sequence[Any]


@contextmanager
def connection(client: redis.Redis) -> Iterator[AbstractConnection]:
    """Borrow a connection from the client's pool; drop it if anything goes wrong."""
    pool = client.connection_pool
    conn = pool.get_connection()
    try:
        yield conn
    except BaseException:
        conn.disconnect()  # replies may be left unread: never reuse it
        raise
    finally:
        pool.release(conn)


def send(conn: AbstractConnection, commands: Sequence[Command]) -> None:
    if _pack_one is not None:
        conn.send_packed_command([b"".join(_pack_one(tuple(c)) for c in commands)])
    else:
        conn.send_packed_command(conn.pack_commands(commands))


def read(conn: AbstractConnection, count: int) -> list[Any]:
    replies: list[Any] = []
    for _ in range(count):
        try:
            replies.append(conn.read_response())
        except redis.ResponseError as exc:
            replies.append(exc)
    return replies


def roundtrip(conn: AbstractConnection, commands: Sequence[Command]) -> list[Any]:
    """Send ``commands`` in one write and return their replies (errors as values)."""
    if not commands:
        return []
    send(conn, commands)
    return read(conn, len(commands))
