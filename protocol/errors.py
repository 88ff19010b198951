"""Protocol-level errors raised by the request reader.

The texts are Redis's (networking.c) word for word, without the leading '-'.
"""

from __future__ import annotations

__all__ = [
    "ProtocolError",
    "EXPECTED_DOLLAR",
    "INVALID_BULK_LEN",
    "INVALID_MULTIBULK_LEN",
    "TOO_BIG_BULK_COUNT",
    "TOO_BIG_INLINE",
    "TOO_BIG_MBULK_COUNT",
    "UNBALANCED_QUOTES",
    "UNAUTH_BULK_LEN",
    "UNAUTH_MULTIBULK_LEN",
]

INVALID_MULTIBULK_LEN = "ERR Protocol error: invalid multibulk length"
INVALID_BULK_LEN = "ERR Protocol error: invalid bulk length"
TOO_BIG_MBULK_COUNT = "ERR Protocol error: too big mbulk count string"
TOO_BIG_BULK_COUNT = "ERR Protocol error: too big bulk count string"
TOO_BIG_INLINE = "ERR Protocol error: too big inline request"
UNBALANCED_QUOTES = "ERR Protocol error: unbalanced quotes in request"
# Stricter limits while a password is required and the client has not authenticated yet.
UNAUTH_MULTIBULK_LEN = "ERR Protocol error: unauthenticated multibulk length"
UNAUTH_BULK_LEN = "ERR Protocol error: unauthenticated bulk length"
# Formatted with the offending byte (see expected_dollar()).
EXPECTED_DOLLAR = "ERR Protocol error: expected '$', got '{}'"


class ProtocolError(Exception):
    """A malformed request stream; the connection must be closed after the reply.

    ``str(e)`` is Redis's full error text WITHOUT the leading '-', e.g.
    ``'ERR Protocol error: invalid multibulk length'``. A byte >= 0x80 quoted in the text
    (``expected '$', got 'X'``) is carried as a surrogate escape, so
    ``text.encode('utf-8', 'surrogateescape')`` gives back Redis's exact bytes; ``reply``
    does that and returns the whole wire reply, ``-<text>\\r\\n``.
    """

    @property
    def text(self) -> str:
        return str(self)

    @property
    def reply(self) -> bytes:
        return b"-" + str(self).encode("utf-8", "surrogateescape") + b"\r\n"


def expected_dollar(byte: int) -> ProtocolError:
    """Redis formats the byte with %c, then turns '\\r' and '\\n' into spaces."""
    if byte in (10, 13):
        byte = 32
    char = bytes((byte,)).decode("utf-8", "surrogateescape")
    return ProtocolError(EXPECTED_DOLLAR.format(char))
