"""The pure-Python request rules: the reader interface, limits, and Redis's parsing rules.

Holds RequestReader (the interface), the limit constants, _RespParser (buffer, state and a
pure-Python port of Redis's networking.c rules, processInlineBuffer / processMultibulkBuffer,
shared by both readers) and PythonRequestReader. HiredisRequestReader and make_reader() live in
protocol.reader, the public entry point, which re-exports the names here (and _RespParser) and
documents the contract of get_commands(); import from there. This module imports nothing from
protocol.reader, so imports go one way.
"""

from __future__ import annotations

from protocol.errors import (
    INVALID_BULK_LEN,
    INVALID_MULTIBULK_LEN,
    TOO_BIG_BULK_COUNT,
    TOO_BIG_INLINE,
    TOO_BIG_MBULK_COUNT,
    UNAUTH_BULK_LEN,
    UNAUTH_MULTIBULK_LEN,
    ProtocolError,
    expected_dollar,
)
from protocol.inline import split_args

__all__ = [
    "DEFAULT_MAX_MULTIBULK_LEN",
    "DEFAULT_PROTO_MAX_BULK_LEN",
    "INLINE_MAX_SIZE",
    "PythonRequestReader",
    "RequestReader",
    "UNAUTH_MAX_BULK_LEN",
    "UNAUTH_MAX_MULTIBULK_LEN",
]

DEFAULT_PROTO_MAX_BULK_LEN = 512 * 1024 * 1024
DEFAULT_MAX_MULTIBULK_LEN = 2**31 - 1  # INT_MAX, as Redis 7+ (6.x refused over 1024 * 1024)
INLINE_MAX_SIZE = 64 * 1024  # PROTO_INLINE_MAX_SIZE: header lines and inline requests
# Limits for a client that must still authenticate (Redis's processMultibulkBuffer).
UNAUTH_MAX_MULTIBULK_LEN = 10
UNAUTH_MAX_BULK_LEN = 16384

_LLONG_MAX = (1 << 63) - 1
_LLONG_MIN = -(1 << 63)
_STAR = 42
_DOLLAR = 36
# Buffers up to this size that hold only complete canonical frames take direct(): far below
# every limit (the smallest proto-max-bulk-len is 1 MiB; 1M arguments need 4 MiB).
_FAST_MAX = 64 * 1024


class RequestReader:
    """Interface of the request readers; make_reader() picks an implementation."""

    __slots__ = ()

    proto_max_bulk_len: int
    max_multibulk_len: int
    unauthenticated: bool

    def feed(self, data: bytes) -> None:
        raise NotImplementedError

    def get_commands(self) -> list[list[bytes]]:
        raise NotImplementedError

    def parse(self, data: bytes) -> list[list[bytes]]:
        """feed(data) then get_commands(), in one call (a reader may skip the buffering)."""
        self.feed(data)
        return self.get_commands()

    # The longest read direct() may take now: 0 while it takes none (something is buffered,
    # a frame is unfinished, the reader failed or is unauthenticated, or it cannot at all).
    direct_max: int

    def direct(self, data: bytes) -> list[list[bytes]] | None:
        """What parse(data) returns, when data (at most direct_max bytes, not empty) holds
        only complete commands and reading it needs none of the buffer's rules; None (and
        nothing changed) otherwise, and the caller then uses parse()."""
        return None

    def pending_bytes(self) -> int:
        raise NotImplementedError

    def release(self) -> None:
        """Drop everything buffered (the connection closed)."""
        raise NotImplementedError

    def allocated_bytes(self) -> int:
        """Memory the buffer holds: pending_bytes() and the room around them."""
        raise NotImplementedError

    def partial_args_bytes(self) -> int:
        """Bytes of the arguments already read of a command not complete yet."""
        raise NotImplementedError

    # The kept protocol error (see protocol.reader's docstring), None while healthy.
    error: ProtocolError | None


def _find_cr(buf: bytearray, pos: int) -> int:
    """strchr(buf + pos, '\\r'): the C search stops at a NUL byte and then finds nothing."""
    cr = buf.find(b"\r", pos)
    if cr >= 0 and buf.find(b"\0", pos, cr) >= 0:
        return -1
    return cr


def _string2ll(buf: bytearray, start: int, end: int) -> int | None:
    """Redis's string2ll(): strict decimal, no sign but '-', no leading zeros, < 21 chars."""
    n = end - start
    if n <= 0 or n >= 21:
        return None
    s = bytes(buf[start:end])
    if s.isdigit():
        if s[0] == 48 and n > 1:
            return None
        v = int(s)
        return v if v <= _LLONG_MAX else None
    if n > 1 and s[0] == 45 and s[1] != 48 and s[1:].isdigit():
        v = -int(s[1:])
        return v if v >= _LLONG_MIN else None
    return None


class _RespParser(RequestReader):
    """Buffer, state and the Python parsing rules, shared by both readers."""

    __slots__ = (
        "_max_bulk",
        "_max_mbulk",
        "_unauthenticated",
        "_fast_max",
        "direct_max",
        "_buf",
        "_pos",
        "_mbulk",
        "_bulk",
        "_argv",
        "error",
    )

    def __init__(
        self,
        proto_max_bulk_len: int = DEFAULT_PROTO_MAX_BULK_LEN,
        max_multibulk_len: int = DEFAULT_MAX_MULTIBULK_LEN,
    ) -> None:
        # Both limits are read at every header, so they can be changed at run time.
        self._max_bulk = proto_max_bulk_len
        self._max_mbulk = max_multibulk_len
        # While True (a password is required and the client has not authenticated), frames
        # get Redis's unauthenticated limits and get_commands() returns at most one command,
        # so the server can lift the limits right after an AUTH, as Redis parses command by
        # command.
        self._unauthenticated = False
        self._buf = bytearray()
        self._pos = 0  # start of the unparsed bytes in _buf
        self._mbulk = 0  # arguments still expected by the current multibulk frame
        self._bulk = -1  # length of the argument being read, -1 before its header
        self._argv: list[bytes] = []
        self.error: ProtocolError | None = None
        self._fast_max = 0
        self.direct_max = 0
        self._limits_changed()

    @property
    def proto_max_bulk_len(self) -> int:
        return self._max_bulk

    @proto_max_bulk_len.setter
    def proto_max_bulk_len(self, value: int) -> None:
        self._max_bulk = value
        self._limits_changed()

    @property
    def unauthenticated(self) -> bool:
        return self._unauthenticated

    @unauthenticated.setter
    def unauthenticated(self, value: bool) -> None:
        self._unauthenticated = value
        self._refresh_direct_max()

    @property
    def max_multibulk_len(self) -> int:
        return self._max_mbulk

    @max_multibulk_len.setter
    def max_multibulk_len(self, value: int) -> None:
        self._max_mbulk = value
        self._limits_changed()

    def _limits_changed(self) -> None:
        """_fast_max: the largest read that may skip the buffer (HiredisRequestReader.parse).
        No complete frame in n bytes can break a limit n is below: an argument is shorter
        than n, and a frame of k arguments takes at least 6k bytes ("$0\r\n\r\n" each).
        No read takes that path after an error."""
        if self.error is not None:
            self._fast_max = 0
        else:
            self._fast_max = min(_FAST_MAX, self._max_bulk, 6 * self._max_mbulk - 1)
        self._refresh_direct_max()

    def _refresh_direct_max(self) -> None:
        """direct_max: _fast_max while a read may be parsed without the buffer (nothing
        buffered, no frame in progress, no error, authenticated), else 0, so that a caller
        needs one test for all of them. Called wherever one of them changes."""
        self.direct_max = (0 if self._buf or self._mbulk or self._unauthenticated
                           else self._fast_max)

    def feed(self, data: bytes) -> None:
        if self.error is None and data:
            self._buf += data
            self.direct_max = 0

    def pending_bytes(self) -> int:
        """Bytes buffered and not yet read into arguments (Redis's query buffer: the arguments
        already read from an unfinished command do not count, nor does a bulk header)."""
        return len(self._buf) - self._pos

    def release(self) -> None:
        """Drop what is buffered and the unfinished command's arguments, at once: the
        connection is gone (a partly received bulk may hold hundreds of MB)."""
        self._buf = bytearray()
        self._pos = self._mbulk = 0
        self._bulk = -1
        self._argv = []
        self._refresh_direct_max()

    def allocated_bytes(self) -> int:
        """The buffer's allocation: the bytes not parsed yet, those parsed and not dropped
        yet (_compact), and the spare room a growing bytearray keeps."""
        return self._buf.__alloc__()

    def partial_args_bytes(self) -> int:
        return sum(map(len, self._argv))

    def _fail(self, err: ProtocolError) -> None:
        # The error is kept as a copy that is never raised, and raised as fresh copies
        # (kept_error): a raised exception holds the frames it went through, this reader's
        # among them, so keeping it would make a reference cycle that only the cyclic
        # collector frees, with the buffer the frames still refer to.
        self.error = ProtocolError(str(err))
        self._fast_max = self.direct_max = 0
        self.release()

    def kept_error(self) -> ProtocolError:
        """A copy of the kept error, to raise (see _fail)."""
        assert self.error is not None
        return ProtocolError(str(self.error))

    def _compact(self) -> None:
        if self._pos:
            del self._buf[: self._pos]
            self._pos = 0

    def _parse_frame(self) -> list[bytes] | None:
        """Parse one request at _pos (which must be < len(_buf)).

        Returns its argv (empty for a request Redis skips), or None when more data is needed.
        """
        if self._mbulk or self._buf[self._pos] == _STAR:
            return self._parse_multibulk()
        return self._parse_inline()

    def _parse_inline(self) -> list[bytes] | None:
        buf = self._buf
        pos = self._pos
        # strchr(querybuf + qb_pos, '\n'): a NUL before the newline hides it.
        nl = buf.find(b"\n", pos)
        if nl < 0 or buf.find(b"\0", pos, nl) >= 0:
            if len(buf) - pos > INLINE_MAX_SIZE:
                raise ProtocolError(TOO_BIG_INLINE)
            return None
        end = nl - 1 if nl > pos and buf[nl - 1] == 13 else nl
        argv = split_args(bytes(buf[pos:end]))
        self._pos = nl + 1
        return argv

    def _parse_multibulk(self) -> list[bytes] | None:
        buf = self._buf
        pos = self._pos
        end = len(buf)
        if not self._mbulk:
            cr = _find_cr(buf, pos)
            if cr < 0:
                if end - pos > INLINE_MAX_SIZE:
                    raise ProtocolError(TOO_BIG_MBULK_COUNT)
                return None
            if cr >= end - 1:  # Redis wants one more byte after '\r' (it never checks '\n')
                return None
            count = _string2ll(buf, pos + 1, cr)
            if count is None or count > self._max_mbulk:
                raise ProtocolError(INVALID_MULTIBULK_LEN)
            if count > UNAUTH_MAX_MULTIBULK_LEN and self._unauthenticated:
                raise ProtocolError(UNAUTH_MULTIBULK_LEN)
            pos = cr + 2
            if count <= 0:
                self._pos = pos
                return []
            self._mbulk = count
            self._argv = []
        argv = self._argv
        mbulk = self._mbulk
        bulk = self._bulk
        find = buf.find
        while mbulk:
            if bulk < 0:
                cr = find(b"\r", pos)
                digits = buf[pos + 1 : cr] if 0 <= cr < end - 1 and buf[pos] == _DOLLAR else b""
                # Fast path for a well-formed '$<len>\r': no NUL can hide its '\r' then.
                if digits.isdigit() and len(digits) < 21 and (digits[0] != 48 or len(digits) == 1):
                    bulk = int(digits)
                    if bulk > self._max_bulk:
                        raise ProtocolError(INVALID_BULK_LEN)
                    if bulk > UNAUTH_MAX_BULK_LEN and self._unauthenticated:
                        raise ProtocolError(UNAUTH_BULK_LEN)
                else:
                    cr = self._bulk_header(pos)
                    if cr < 0:
                        break
                    bulk = _string2ll(buf, pos + 1, cr)  # type: ignore[assignment]
                pos = cr + 2
            if end - pos < bulk + 2:  # payload and the two bytes Redis skips after it
                break
            argv.append(bytes(buf[pos : pos + bulk]))
            pos += bulk + 2
            bulk = -1
            mbulk -= 1
        self._pos = pos
        self._mbulk = mbulk
        self._bulk = bulk
        if mbulk:
            return None
        self._argv = []
        return argv

    def _bulk_header(self, pos: int) -> int:
        """The exact rules for a bulk header at pos that the fast path did not accept.

        Returns the offset of its '\\r' (and then the length is valid), or -1 to wait.
        """
        buf = self._buf
        cr = _find_cr(buf, pos)
        if cr < 0:
            if len(buf) - pos > INLINE_MAX_SIZE:
                raise ProtocolError(TOO_BIG_BULK_COUNT)
            return -1
        if cr >= len(buf) - 1:
            return -1
        if buf[pos] != _DOLLAR:
            raise expected_dollar(buf[pos])
        size = _string2ll(buf, pos + 1, cr)
        if size is None or size < 0 or size > self._max_bulk:
            raise ProtocolError(INVALID_BULK_LEN)
        if size > UNAUTH_MAX_BULK_LEN and self._unauthenticated:
            raise ProtocolError(UNAUTH_BULK_LEN)
        return cr

    def _python_commands(self, out: list[list[bytes]]) -> None:
        buf = self._buf
        one = self._unauthenticated
        while self._pos < len(buf):
            cmd = self._parse_frame()
            if cmd is None:
                return
            if cmd:
                out.append(cmd)
                if one:
                    return

    def _get_python_commands(self) -> list[list[bytes]]:
        """get_commands() with the Python rules only."""
        if self.error is not None:
            raise self.kept_error()
        out: list[list[bytes]] = []
        try:
            self._python_commands(out)
        except ProtocolError as err:
            self._fail(err)
            if not out:
                raise
        # One command a call (unauthenticated): drop the consumed bytes only once they are
        # half the buffer, or a batch of many small commands would cost quadratic copying.
        if not self._unauthenticated or self._pos * 2 > len(self._buf):
            self._compact()
        self._refresh_direct_max()
        return out


class PythonRequestReader(_RespParser):
    """Pure-Python reader."""

    __slots__ = ()

    def _refresh_direct_max(self) -> None:
        self.direct_max = 0  # every read goes through the buffer

    def get_commands(self) -> list[list[bytes]]:
        return self._get_python_commands()

