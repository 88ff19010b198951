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
error the reader is dead: feed() ignores data and every get_commands() raises the same error
(an equal copy each time: the kept one is never raised, so that the frames a raised error
holds never tie the reader into a reference cycle).
``reader.error`` shows a kept error without calling get_commands() again, so a server can run
the returned batch, then send ``error.reply`` and close.

Parsing happens in get_commands(), so limits that depend on how much is buffered (the 64 KiB
header and inline limits) see everything fed since the previous call, as Redis sees one read.

This module is the public entry point. It holds make_reader(), HiredisRequestReader and the
checks that hiredis read a batch as Redis would (_hiredis_span, and protocol/native.py's
frames_end in C or, where it was not built, _has_suspect, _canonical_size, _all_canonical).
The interface (RequestReader), the limits, the Python rules (_RespParser, which both readers
extend) and PythonRequestReader live in protocol.python_reader and are re-exported here;
protocol.python_reader imports nothing from this module.
"""

from __future__ import annotations

import re
from itertools import chain

import hiredis

from protocol import native
from protocol.errors import ProtocolError
from protocol.python_reader import (
    _DOLLAR,
    _STAR,
    DEFAULT_MAX_MULTIBULK_LEN,
    DEFAULT_PROTO_MAX_BULK_LEN,
    INLINE_MAX_SIZE,
    PythonRequestReader,
    RequestReader,
    _RespParser,
)
from protocol.python_reader import UNAUTH_MAX_BULK_LEN as UNAUTH_MAX_BULK_LEN
from protocol.python_reader import UNAUTH_MAX_MULTIBULK_LEN as UNAUTH_MAX_MULTIBULK_LEN

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
# Canonical sizes: '$<n>\r\n' + n bytes + '\r\n' for an argument, '*<n>\r\n' for a header.
# (built by digit count: a third of the start-up time of a str() per length)
_ITEM_SIZE = [n + 5 + digits for digits, low, high in ((1, 0, 10), (2, 10, 100), (3, 100, 1000),
                                                       (4, 1000, 8192)) for n in range(low, high)]
_HEADER_SIZE = [3 + len(str(n)) for n in range(1024)]
_JOIN = b"".join
# The C check that hiredis's commands are the frames' exact bytes, or None (protocol/native.py).
_frames_end = native.frames_end
# _BIG_COUNT_RE.search(data) is not None, as one memchr pass in C when it is built.
_has_big_count = native.has_big_count or (lambda data: _BIG_COUNT_RE.search(data) is not None)
# direct() takes it for reads longer than this: on a command or two, the size sum below is
# exact and costs less than the call (instructions counted by bench/bench_instructions.py).
_C_CHECK_FROM = 512


def make_reader(
    proto_max_bulk_len: int = DEFAULT_PROTO_MAX_BULK_LEN,
    use_hiredis: bool = True,
    max_multibulk_len: int = DEFAULT_MAX_MULTIBULK_LEN,
) -> RequestReader:
    cls = HiredisRequestReader if use_hiredis else PythonRequestReader
    return cls(proto_max_bulk_len, max_multibulk_len)


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
            raise self.kept_error()
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

    def release(self) -> None:
        super().release()
        self._hr = None  # (it may hold the start of a frame)

    def direct(self, data: bytes | bytearray) -> list[list[bytes]] | None:
        """The common case in few operations: a small buffer holding only complete, canonical
        multibulk frames (one read of unpipelined or lightly pipelined commands). Too small for
        any limit to matter. Reads `data` without keeping it; None when anything is unusual
        (the caller then takes the general path from the untouched bytes)."""
        if data[0] != _STAR:
            return None
        n = len(data)
        if _has_big_count(data) and _hiredis_span(data, 0, n) < n:
            return None
        hr = self._fast_hr
        hr.feed(data)
        cmds = []
        if n > _C_CHECK_FROM and _frames_end is not None:
            # The C check (protocol/native.py): the frames compared in place.
            try:
                while (cmd := hr.gets()) is not False:
                    cmds.append(cmd)
            except Exception:  # hiredis.ProtocolError: the general path (Redis's error)
                return self._drop_direct_reader()
            # Every frame canonical and complete (a partial one after them ends short of
            # the data), none of them "*0" (the general path skips those).
            if not cmds or _frames_end(data, 0, cmds) != n or not all(cmds):
                return self._drop_direct_reader()
            return cmds
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
        if _frames_end is not None:  # the C check (protocol/native.py): the frames, in place
            end = _frames_end(buf, pos, cmds)
            if end < 0:
                return False
            used = end - pos
        else:
            # Only lists of bytes can be Redis commands ('*' arrays of '$' strings). Exact
            # type checks also reject hiredis's PushNotification ('>') and every other RESP3
            # type except the ones _SUSPECT_BYTES start.
            if set(map(type, cmds)) != {list}:
                return False
            if not {bytes}.issuperset(map(type, chain.from_iterable(cmds))):
                return False
            # Where the frames end if they are canonical (checked next). hiredis's has_data()
            # cannot tell: it is false when the buffer ends exactly between two elements of
            # an unfinished array. A reader holding part of a reply would resume mid-frame.
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
