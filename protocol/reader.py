"""Sans-IO request reader: bytes from a client -> command argv lists.

It follows Redis's networking.c (processInlineBuffer / processMultibulkBuffer) to the byte,
error texts included. Two implementations give identical results for any sequence of feed()
and get_commands() calls:

* PythonRequestReader: a pure-Python port of those rules.
* HiredisRequestReader: runs hiredis.Reader over the buffer (requests in multibulk form are RESP
  arrays of bulk strings) and accepts its output only where it provably equals what Redis reads
  (see _hiredis_pass); everything else, including every partial frame and every error, goes
  through the Python rules.

Contract of get_commands(): it parses everything buffered and returns the complete commands in
order (empty commands such as "*0\\r\\n" or a blank inline line are skipped, as Redis does).
When it meets a malformed frame it returns the commands that precede it and keeps the error;
the next call raises it. If no command precedes the error, the call raises at once. After an
error the reader is dead: feed() ignores data and every get_commands() raises the same error.
``reader.error`` shows a kept error without calling get_commands() again, so a server can run
the returned batch, then send ``error.reply`` and close.

Parsing happens in get_commands(), so limits that depend on how much is buffered (the 64 KiB
header and inline limits) see everything fed since the previous call, as Redis sees one read.
"""

from __future__ import annotations

import re
from itertools import chain

import hiredis

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
    "HiredisRequestReader",
    "INLINE_MAX_SIZE",
    "ProtocolError",
    "PythonRequestReader",
    "RequestReader",
    "make_reader",
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
# Bytes that start the RESP3 types hiredis turns into bytes elements ('+', '=', '(') or into a
# plain top-level list ('~', '|'); a batch holding none of them needs no per-frame check.
_SUSPECT_BYTES = b"+=(~|"
# hiredis allocates an array as soon as it reads its header, whatever the count (16 GiB for
# "*2147483647"), and nests arrays about a thousand deep (Redis refuses any nested one): 63 KB
# of "*999999\r\n" cost it seconds of CPU. So a header of 1000 or more reaches hiredis only
# where it starts the bytes hiredis gets and its elements could fit in them (_hiredis_span);
# the Python rules read the others (a payload that merely contains such bytes only costs the
# faster path). With at most 999 slots per nested level, a nest costs hiredis no more than
# reading the same bytes as commands would.
_BIG_COUNT_RE = re.compile(rb"\*[0-9]{4}")
_COUNT_LINE_RE = re.compile(rb"\*([0-9]{4,10})\r\n")  # (longer: over INT_MAX anyway)
# hiredis passes per get_commands() call; bounds the work when hiredis keeps stopping early
# (e.g. inline commands mixed with multibulk ones), since each pass feeds it the whole rest.
_MAX_HIREDIS_PASSES = 4
_HIREDIS_WINDOW = 64 * 1024
# Buffers up to this size that hold only complete canonical frames take direct(): far below
# every limit (the smallest proto-max-bulk-len is 1 MiB; 1M arguments need 4 MiB).
_FAST_MAX = 64 * 1024
# Canonical sizes: '$<n>\r\n' + n bytes + '\r\n' for an argument, '*<n>\r\n' for a header.
_ITEM_SIZE = [n + 5 + len(str(n)) for n in range(8192)]
_HEADER_SIZE = [3 + len(str(n)) for n in range(1024)]
_JOIN = b"".join


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

    # The kept protocol error (see the module docstring), None while the reader is healthy.
    error: ProtocolError | None


def make_reader(
    proto_max_bulk_len: int = DEFAULT_PROTO_MAX_BULK_LEN,
    use_hiredis: bool = True,
    max_multibulk_len: int = DEFAULT_MAX_MULTIBULK_LEN,
) -> RequestReader:
    cls = HiredisRequestReader if use_hiredis else PythonRequestReader
    return cls(proto_max_bulk_len, max_multibulk_len)


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

    def _fail(self, err: ProtocolError) -> None:
        self.error = err
        self._fast_max = self.direct_max = 0
        self._buf = bytearray()
        self._pos = self._mbulk = 0
        self._bulk = -1
        self._argv = []

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
            raise self.error
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


class HiredisRequestReader(_RespParser):
    """hiredis.Reader for runs of complete multibulk frames, the Python rules for the rest."""

    __slots__ = ("_hr", "_fast_hr")

    def __init__(
        self,
        proto_max_bulk_len: int = DEFAULT_PROTO_MAX_BULK_LEN,
        max_multibulk_len: int = DEFAULT_MAX_MULTIBULK_LEN,
    ) -> None:
        super().__init__(proto_max_bulk_len, max_multibulk_len)
        self._hr: hiredis.Reader | None = None  # kept only while it holds no partial reply
        self._fast_hr = hiredis.Reader()  # direct()'s reader, empty between calls

    def parse(self, data: bytes) -> list[list[bytes]]:
        # With nothing buffered, a read of complete frames is parsed straight from `data`.
        if 0 < len(data) <= self.direct_max:
            fast = self.direct(data)
            if fast is not None:
                return fast
        self.feed(data)
        return self.get_commands()

    def get_commands(self) -> list[list[bytes]]:
        if self.error is not None:
            raise self.error
        if self._unauthenticated:  # one command at a time: the Python rules suffice
            self._hr = None
            return self._get_python_commands()
        buf = self._buf
        n = len(buf)
        if not self._pos and not self._mbulk and 0 < n <= self._fast_max:
            fast = self.direct(buf)
            if fast is not None:
                buf.clear()
                self._refresh_direct_max()
                return fast
        out: list[list[bytes]] = []
        passes = 0
        try_hiredis = True
        try:
            while self._pos < len(buf):
                if (
                    try_hiredis
                    and passes < _MAX_HIREDIS_PASSES
                    and not self._mbulk
                    and buf[self._pos] == _STAR
                ):
                    passes += 1
                    if not self._hiredis_pass(out):
                        passes = _MAX_HIREDIS_PASSES  # the rest of this batch goes to Python
                    # hiredis stopped before the end: a partial frame, an error, or a frame
                    # it reads differently from Redis. The Python rules take the next frame.
                    try_hiredis = False
                    continue
                cmd = self._parse_frame()
                if cmd is None:
                    break
                if cmd:
                    out.append(cmd)
                try_hiredis = True
        except ProtocolError as err:
            self._fail(err)
            self._hr = None
            if not out:
                raise
        self._compact()
        self._refresh_direct_max()
        return out

    def direct(self, data: bytes | bytearray) -> list[list[bytes]] | None:
        """The common case in few operations: a small buffer holding only complete, canonical
        multibulk frames (one read of unpipelined or lightly pipelined commands). Too small for
        any limit to matter. Reads `data` without keeping it; None when anything is unusual
        (the caller then takes the general path from the untouched bytes)."""
        if data[0] != _STAR:
            return None
        n = len(data)
        if _BIG_COUNT_RE.search(data) is not None and _hiredis_span(data, 0, n) < n:
            return None
        hr = self._fast_hr
        hr.feed(data)
        cmds = []
        # The frames' canonical size counting one length digit per argument: exact when every
        # argument is shorter than 10 bytes, less otherwise. Canonical frames that hiredis read
        # take no more than the data, so reaching its size proves they fill it.
        size = 0
        try:
            while (cmd := hr.gets()) is not False:
                if type(cmd) is not list or not cmd:  # ("*0" frames: the general path)
                    return self._drop_direct_reader()
                # Every argument must be bytes (no nested array, integer, ...): join takes
                # nothing else that hiredis returns, and checks them all in one C call.
                k = len(cmd)
                size += _HEADER_SIZE[k] + 6 * k + len(_JOIN(cmd))
                cmds.append(cmd)
                if size == n:
                    break  # (hiredis has nothing more to read then)
        except Exception:  # hiredis.ProtocolError (the Python rules give Redis's error),
            # IndexError (1024 arguments or more) or TypeError: the general path
            return self._drop_direct_reader()
        # A partial frame after the complete ones makes the canonical size fall short; bytes
        # that start other RESP types ('+', '=', ...) need the frames checked one by one.
        # (_SUSPECT_BYTES as ints: `int in bytes` is one memchr each, faster on short data
        # than a translate, which builds a table first, or a regex.)
        if ((size != n and (not cmds or _canonical_size(cmds) != n))
                or ((43 in data or 61 in data or 40 in data or 126 in data or 124 in data)
                    and not _all_canonical(data, 0, cmds))):
            return self._drop_direct_reader()
        return cmds

    def _drop_direct_reader(self) -> None:
        """After a direct() batch it did not take: its hiredis reader may hold part of it."""
        self._fast_hr = hiredis.Reader()

    def _hiredis_pass(self, out: list[list[bytes]]) -> bool:
        """Let hiredis read complete frames from _pos; append them to out, advance _pos.

        Returns False when hiredis's reading could not be accepted (nothing consumed).
        """
        buf = self._buf
        pos = self._pos
        # hiredis reads up to a big header it must not see, the Python rules from there.
        avail = _hiredis_span(buf, pos, len(buf))
        if not avail:
            return True
        hr = self._hr or hiredis.Reader()
        self._hr = None  # given back below only if it ends between two frames
        cmds: list = []
        append = cmds.append
        gets = hr.gets
        broken = False
        # Fed in windows: hiredis moves its unread bytes to the front after each reply once
        # it has read 1 KiB, which is quadratic on a buffer of many megabytes.
        try:
            if avail <= _HIREDIS_WINDOW:
                hr.feed(buf, pos, avail)
                while (cmd := gets()) is not False:
                    append(cmd)
            else:
                for off in range(pos, pos + avail, _HIREDIS_WINDOW):
                    hr.feed(buf, off, min(_HIREDIS_WINDOW, pos + avail - off))
                    while (cmd := gets()) is not False:
                        append(cmd)
        except Exception:  # hiredis.ProtocolError; its reading stops here, ours goes on
            broken = True
        if not cmds:
            return True  # nothing read; the Python rules take the next frame
        # Only lists of bytes can be Redis commands ('*' arrays of '$' strings). Exact type
        # checks also reject hiredis's PushNotification ('>') and every other RESP3 type
        # except the ones _SUSPECT_BYTES start.
        if set(map(type, cmds)) != {list}:
            return False
        if not {bytes}.issuperset(map(type, chain.from_iterable(cmds))):
            return False
        # Where the frames end if they are canonical (checked next). hiredis's has_data()
        # cannot tell: it is false when the buffer ends exactly between two elements of an
        # unfinished array. A reader holding part of a reply would resume mid-frame later.
        used = _canonical_size(cmds)
        end = pos + used
        if _has_suspect(buf, pos, end) and not _all_canonical(buf, pos, cmds):
            return False
        # Limits: only a large enough batch can hold an argument or a frame over a limit.
        limit = self._max_bulk
        if used > limit and max(map(len, chain.from_iterable(cmds))) > limit:
            return False
        limit = self._max_mbulk
        if used > 6 * limit and max(map(len, cmds)) > limit:
            return False
        if all(cmds):
            out += cmds
        else:
            out.extend(filter(None, cmds))  # "*0\r\n" frames are skipped, as Redis does
        self._pos = end
        if used == avail and not broken:
            self._hr = hr
        return True


def _hiredis_span(buf: bytes | bytearray, pos: int, end: int) -> int:
    """How many bytes from pos hiredis may read: up to the first array header of 1000 or
    more elements, except one at pos whose elements could all fit in the bytes after it
    (at least 6 bytes each, "$0\r\n\r\n"), so that big commands keep the fast reading."""
    big = _BIG_COUNT_RE.search(buf, pos, end)
    if big is not None and big.start() == pos:
        line = _COUNT_LINE_RE.match(buf, pos, end)
        if line is not None and int(line.group(1)) * 6 <= end - line.end():
            big = _BIG_COUNT_RE.search(buf, pos + 1, end)
    return (end if big is None else big.start()) - pos


def _has_suspect(buf: bytearray, pos: int, end: int) -> bool:
    if end - pos <= 256:  # one translate beats five searches on short spans...
        span = buf[pos:end]
        return len(span.translate(None, _SUSPECT_BYTES)) != len(span)
    find = buf.find  # ...and memchr-based searches (no copy) match it on long ones
    return (
        find(b"+", pos, end) >= 0
        or find(b"=", pos, end) >= 0
        or find(b"(", pos, end) >= 0
        or find(b"~", pos, end) >= 0
        or find(b"|", pos, end) >= 0
    )


def _canonical_size(cmds: list[list[bytes]]) -> int:
    """Bytes taken by cmds written as '*<n>\\r\\n' frames of '$<len>\\r\\n<arg>\\r\\n'."""
    try:  # table lookups keep the loop in C; one longer argument takes the slower way
        return sum(map(_ITEM_SIZE.__getitem__, map(len, chain.from_iterable(cmds)))) + sum(
            map(_HEADER_SIZE.__getitem__, map(len, cmds))
        )
    except IndexError:
        lens = list(map(len, chain.from_iterable(cmds)))
        counts = list(map(len, cmds))
        return (
            sum(lens)
            + 5 * len(lens)
            + sum(map(len, map(str, lens)))
            + 3 * len(counts)
            + sum(map(len, map(str, counts)))
        )


def _all_canonical(buf: bytes | bytearray, pos: int, cmds: list[list[bytes]]) -> bool:
    """Check that every frame starts with '*' and every argument with '$' at the offsets
    the canonical encoding puts them. hiredis reads numbers exactly like Redis does, so
    with the type bytes right its reading is Redis's. By induction on the items in buffer
    order, the first item of another type sits where we look, so none is missed."""
    off = pos
    item_size = _ITEM_SIZE
    try:
        for cmd in cmds:
            if buf[off] != _STAR:
                return False
            k = len(cmd)
            off += _HEADER_SIZE[k] if k < 1024 else 3 + len(str(k))
            for arg in cmd:
                if buf[off] != _DOLLAR:
                    return False
                n = len(arg)
                off += item_size[n] if n < 8192 else n + 5 + len(str(n))
    except IndexError:  # (past the end of buf: not where a canonical frame would be)
        return False
    return True
