"""Reply values -> RESP2 / RESP3 bytes (as Redis 7/8 write them).

Python values map to RESP types as follows (RESP3 / RESP2):

    bytes, bytearray, memoryview   bulk string            $<len>\\r\\n...\\r\\n
    str                            bulk string of its UTF-8 (surrogateescape)
    int                            :<n>, as a C long long (outside int64: wrapped, as Redis's
                                   casts of unsigned counters do; never an invalid integer)
    bool                           #t / #f                 :1 / :0
    float                          ,<text>                 bulk string of the same text
    None                           _                       $-1 (null bulk)
    list, tuple                    *<n> (recursively)
    dict                           %<n> k v ...            *<2n> k v ...
    set, frozenset, SetReply       ~<n>                    *<n>
    Push                           ><n>                    *<n>
    SimpleString                   +<text>
    ErrorReply                     -<text> (the text carries its code: "ERR ...", "WRONGTYPE ...")
    Verbatim                       =<len>\\r\\ntxt:<text>   bulk string of the text
    NULL_ARRAY                     _                       *-1
    Raw                            written as it is, whatever the protocol

Floats use Redis's d2string() rules: "nan", "inf", "-inf", "0"/"-0", integral values within
+-2^62 as integers, anything else as Python's shortest round-trip repr().
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from protocol import native

_c_encode_command = native.encode_command
_c_encode_commands = native.encode_commands

__all__ = [
    "EMPTY_ARRAY",
    "NULL_ARRAY",
    "NULL_BULK2",
    "OK",
    "PONG",
    "QUEUED",
    "ErrorReply",
    "Push",
    "Raw",
    "SetReply",
    "SimpleString",
    "Verbatim",
    "encode",
    "encode_command",
    "encode_command_python",
    "encode_commands",
    "encode_entry",
    "encode_entries",
    "encode_into",
    "format_double",
]


class SimpleString(str):
    """A status reply: +<text>\\r\\n."""

    __slots__ = ()


class ErrorReply(str):
    """An error reply: -<text>\\r\\n; the text starts with its code, e.g. 'ERR ...'."""

    __slots__ = ()


class Push(list):
    """An out-of-band push (pub/sub style): >n in RESP3, *n in RESP2."""

    __slots__ = ()


class SetReply(list):
    """An ordered set reply: ~n in RESP3, *n in RESP2."""

    __slots__ = ()


class Raw(bytes):
    """Bytes already in RESP form, written as they are."""

    __slots__ = ()


class Verbatim:
    """A verbatim string: =<len>\\r\\n<fmt>:<text>\\r\\n in RESP3, a bulk string in RESP2."""

    __slots__ = ("text", "fmt")

    def __init__(self, text: str | bytes, fmt: str = "txt") -> None:
        if len(fmt) != 3:
            raise ValueError("verbatim format must be 3 characters")
        self.text = text
        self.fmt = fmt

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Verbatim) and self.text == other.text and self.fmt == other.fmt

    def __hash__(self) -> int:
        return hash((self.text, self.fmt))

    def __repr__(self) -> str:
        return f"Verbatim({self.text!r}, {self.fmt!r})"


class _NullArray:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NULL_ARRAY"

    def __reduce__(self) -> str:
        return "NULL_ARRAY"


NULL_ARRAY = _NullArray()

OK = Raw(b"+OK\r\n")
PONG = Raw(b"+PONG\r\n")
QUEUED = Raw(b"+QUEUED\r\n")
EMPTY_ARRAY = Raw(b"*0\r\n")  # the same in both protocols
NULL_BULK2 = Raw(b"$-1\r\n")  # RESP2's null bulk, whatever the client's protocol

CRLF = b"\r\n"
# Precomputed replies and headers; a list index beats bytes formatting about 3x.
_N_INT = 10000
_N_BULK = 1024
_N_AGG = 1024
_INT = [b":%d\r\n" % i for i in range(_N_INT)]
_LLONG_MIN = -(1 << 63)
_LLONG_MAX = (1 << 63) - 1
_BULK = [b"$%d\r\n" % i for i in range(_N_BULK)]
# For the dispatcher's loop, which writes a bulk string reply without calling encode_into.
BULK_HEADERS, N_BULK_HEADERS = _BULK, _N_BULK
_ARRAY = [b"*%d\r\n" % i for i in range(_N_AGG)]
# The same headers without their CRLF, for _entries' CRLF-joined lines.
_BULK_LINE = [b"$%d" % i for i in range(_N_BULK)]
_ARRAY_LINE = [b"*%d" % i for i in range(_N_AGG)]
# (for the AOF reader's check that a run of commands is the file's bytes written canonically)
BULK_LINES, ARRAY_LINES = _BULK_LINE, _ARRAY_LINE
_NULL3 = b"_\r\n"
_NULL_BULK = b"$-1\r\n"
_NULL_ARRAY2 = b"*-1\r\n"
_TRUE3 = b"#t\r\n"
_FALSE3 = b"#f\r\n"

_Append = Callable[[bytes], None]


def format_double(d: float) -> str:
    """The text Redis's d2string() gives for a double."""
    if d != d:
        return "nan"
    if d == math.inf:
        return "inf"
    if d == -math.inf:
        return "-inf"
    if d == 0.0:
        return "-0" if math.copysign(1.0, d) < 0 else "0"
    # Integral doubles within +-LLONG_MAX/2 are printed as integers.
    if -4611686018427387903.0 <= d <= 4611686018427387903.0 and d == int(d):
        return str(int(d))
    return repr(d)


def encode(value: Any, protocol: int = 2) -> bytes:
    """Encode one reply for a client speaking RESP `protocol` (2 or 3)."""
    t = type(value)
    if t is Raw:
        return value
    if t is int and 0 <= value < _N_INT:
        return _INT[value]
    if t is bytes:
        n = len(value)
        return b"".join((_BULK[n] if n < _N_BULK else b"$%d\r\n" % n, value, CRLF))
    parts: list[bytes] = []
    _encode(parts.append, value, protocol == 3)
    return b"".join(parts)


def encode_into(out: list[bytes], value: Any, protocol: int = 2) -> None:
    """Append the encoding of one reply to a batch's chunks, which b"".join(out) makes the
    bytes to write: one copy of each piece, where appending to a bytearray copied them into
    it first (and transports take exact bytes cheapest; see the server's before-sleep)."""
    t = type(value)
    if t is bytes:  # (in the order of how often each is a whole reply)
        n = len(value)
        out += (_BULK[n] if n < _N_BULK else b"$%d\r\n" % n, value, CRLF)
    elif t is Raw:
        out.append(value)
    elif t is int and 0 <= value < _N_INT:
        out.append(_INT[value])
    else:
        _encode(out.append, value, protocol == 3)


def encode_command(argv: list[bytes]) -> bytes:
    """A command as a RESP array of bulk strings (what clients send, what the AOF holds):
    in C (protocol/_native.c) when it is built, else encode_command_python. Every write
    pays this once on its way to the AOF and the replicas."""
    if _c_encode_command is not None:
        data = _c_encode_command(argv)
        if data is not None:
            return data
    return encode_command_python(argv)


def encode_commands(argvs: list[list[bytes]]) -> bytes:
    """encode_command of each argv, joined: a run of writes propagated together."""
    if _c_encode_commands is not None:
        data = _c_encode_commands(argvs)
        if data is not None:
            return data
    return b"".join(map(encode_command, argvs))


def encode_command_python(argv: list[bytes]) -> bytes:
    """encode_command's Python way (arguments that are not bytes, or no C module).

    Written as its RESP lines joined by CRLF, like _entries: a quarter fewer instructions
    for a five-argument XADD than hiredis.pack_command, whose sprintf and sds copies cost
    more than the list appends."""
    try:
        lines = [_ARRAY_LINE[len(argv)]]
        append = lines.append
        for arg in argv:
            append(_BULK_LINE[len(arg)])
            append(arg)
        append(b"")
        return CRLF.join(lines)
    except (IndexError, TypeError):  # a long argument or command, a str or an int
        return _encode_command_any(argv)


def _encode_command_any(argv: list[Any]) -> bytes:
    parts = [b"*%d\r\n" % len(argv)]
    for arg in argv:
        if type(arg) is not bytes:
            arg = arg if isinstance(arg, (bytearray, memoryview)) else str(arg).encode()
        parts.append(b"$%d\r\n%b\r\n" % (len(arg), arg))
    return b"".join(parts)


def _int_line(v: int) -> bytes:
    if not _LLONG_MIN <= v <= _LLONG_MAX:
        v = (v - _LLONG_MIN) % (1 << 64) + _LLONG_MIN  # (long long) v
    return b":%d\r\n" % v


def _encode(ap: _Append, v: Any, p3: bool) -> None:
    t = type(v)
    if t is bytes:
        n = len(v)
        ap(_BULK[n] if n < _N_BULK else b"$%d\r\n" % n)
        ap(v)
        ap(CRLF)
    elif t is list or t is tuple:
        n = len(v)
        if n and type(v[0]) is list and _entries(ap, v):
            return
        ap(_ARRAY[n] if n < _N_AGG else b"*%d\r\n" % n)
        _items(ap, v, p3)
    elif t is int:
        ap(_INT[v] if 0 <= v < _N_INT else _int_line(v))
    elif t is Raw:
        ap(v)
    elif t is str:
        b = v.encode("utf-8", "surrogateescape")
        n = len(b)
        ap(_BULK[n] if n < _N_BULK else b"$%d\r\n" % n)
        ap(b)
        ap(CRLF)
    elif v is None:
        ap(_NULL3 if p3 else _NULL_BULK)
    else:
        _encode_other(ap, v, t, p3)


def _items(ap: _Append, items: Any, p3: bool) -> None:
    # Bulk strings and nested arrays inline: they are most of every reply (XRANGE entries).
    for x in items:
        t = type(x)
        if t is bytes:
            n = len(x)
            ap(_BULK[n] if n < _N_BULK else b"$%d\r\n" % n)
            ap(x)
            ap(CRLF)
        elif t is list:
            n = len(x)
            if n and type(x[0]) is list and _entries(ap, x):
                continue
            ap(_ARRAY[n] if n < _N_AGG else b"*%d\r\n" % n)
            _items(ap, x, p3)
        else:
            _encode(ap, x, p3)


def _entries(ap: _Append, entries: list) -> bool:
    """Stream entries, the bulk of XRANGE / XREAD replies: ``[[id, [f, v, ...]], ...]``
    with every string a bytes shorter than _N_BULK.  Written as one piece (the RESP
    lines joined by CRLF: two list appends per string instead of three, no type
    dispatch, no recursion), the same in RESP2 and RESP3.  False, with nothing
    written, when ``entries`` does not have that shape."""
    n = len(entries)
    lines = [_ARRAY_LINE[n] if n < _N_AGG else b"*%d" % n]
    ap_line = lines.append
    bulk = _BULK_LINE
    try:
        for e in entries:
            if type(e) is not list or len(e) != 2:
                return False
            eid, fields = e
            if type(eid) is not bytes or type(fields) is not list:
                return False
            ap_line(b"*2")
            ap_line(bulk[len(eid)])
            ap_line(eid)
            ap_line(_ARRAY_LINE[len(fields)])
            for x in fields:
                if type(x) is not bytes:
                    return False
                ap_line(bulk[len(x)])
                ap_line(x)
    except IndexError:  # a string or field list longer than the precomputed headers
        return False
    ap_line(b"")  # the last line's CRLF
    ap(CRLF.join(lines))
    return True


def encode_entry(eid: bytes, fields: list[bytes]) -> bytes:
    """One stream entry's RESP, ``*2 $id *2n $f $v ...``: the same in RESP2 and RESP3."""
    bulk = _BULK_LINE
    n = len(fields)
    lines = [b"*2", bulk[len(eid)] if len(eid) < _N_BULK else b"$%d" % len(eid), eid,
             _ARRAY_LINE[n] if n < _N_AGG else b"*%d" % n]
    ap_line = lines.append
    for x in fields:
        m = len(x)
        ap_line(bulk[m] if m < _N_BULK else b"$%d" % m)
        ap_line(x)
    ap_line(b"")
    return CRLF.join(lines)


def encode_entries(entries: list) -> bytes:
    """Stream entries ``[[id, fields], ...]`` without the array header: their RESP one after
    the other (the items of an XRANGE reply)."""
    out: list[bytes] = []
    ap = out.append
    if entries and _entries(ap, entries):
        whole = out[0]
        return whole[whole.index(b"\r\n") + 2:]  # (drop the *<n> header _entries wrote)
    for e in entries:
        ap(encode_entry(e[0], e[1]))
    return b"".join(out)


def _aggregate(ap: _Append, kind: bytes, n: int) -> None:
    ap(b"%b%d\r\n" % (kind, n))


def _line(text: str) -> bytes:
    # A status or error line must not break the framing (as addReplyErrorFormat does).
    if "\r" in text or "\n" in text:
        text = text.replace("\r", " ").replace("\n", " ")
    return text.encode("utf-8", "surrogateescape")


def _encode_other(ap: _Append, v: Any, t: type, p3: bool) -> None:
    if t is SimpleString:
        ap(b"+" + _line(v) + CRLF)
    elif t is ErrorReply:
        line = _line(v)
        ap((line if line[:1] == b"-" else b"-" + line) + CRLF)
    elif t is bool:
        if p3:
            ap(_TRUE3 if v else _FALSE3)
        else:
            ap(_INT[1] if v else _INT[0])
    elif t is dict:
        if p3:
            _aggregate(ap, b"%", len(v))
        else:
            n = 2 * len(v)
            ap(_ARRAY[n] if n < _N_AGG else b"*%d\r\n" % n)
        for key, val in v.items():
            _encode(ap, key, p3)
            _encode(ap, val, p3)
    elif t is float:
        text = format_double(v).encode()
        if p3:
            ap(b"," + text + CRLF)
        else:
            ap(_BULK[len(text)] + text + CRLF)
    elif t is SetReply or t is set or t is frozenset:
        if p3:
            _aggregate(ap, b"~", len(v))
        else:
            n = len(v)
            ap(_ARRAY[n] if n < _N_AGG else b"*%d\r\n" % n)
        _items(ap, v, p3)
    elif t is Push:
        if p3:
            _aggregate(ap, b">", len(v))
        else:
            n = len(v)
            ap(_ARRAY[n] if n < _N_AGG else b"*%d\r\n" % n)
        _items(ap, v, p3)
    elif v is NULL_ARRAY:
        ap(_NULL3 if p3 else _NULL_ARRAY2)
    elif t is Verbatim:
        text = v.text.encode("utf-8", "surrogateescape") if isinstance(v.text, str) else v.text
        if p3:
            ap(b"=%d\r\n%b:%b\r\n" % (len(text) + 4, v.fmt.encode(), text))
        else:
            ap(b"$%d\r\n%b\r\n" % (len(text), text))
    elif t is bytearray:
        ap(b"$%d\r\n" % len(v) + bytes(v) + CRLF)
    elif t is memoryview:
        ap(b"$%d\r\n" % v.nbytes + v.tobytes() + CRLF)
    else:
        _encode_subclass(ap, v, p3)


def _encode_subclass(ap: _Append, v: Any, p3: bool) -> None:
    """Subclasses of the supported types (IntEnum, a bytes or list subclass, ...)."""
    if isinstance(v, Raw):
        ap(bytes(v))
    elif isinstance(v, ErrorReply):
        _encode_other(ap, ErrorReply(v), ErrorReply, p3)
    elif isinstance(v, SimpleString):
        _encode_other(ap, SimpleString(v), SimpleString, p3)
    elif isinstance(v, bool):
        _encode_other(ap, bool(v), bool, p3)
    elif isinstance(v, int):
        ap(_int_line(int(v)))
    elif isinstance(v, float):
        _encode_other(ap, float(v), float, p3)
    elif isinstance(v, bytes | bytearray | memoryview):
        _encode(ap, bytes(v), p3)
    elif isinstance(v, str):
        _encode(ap, str(v), p3)
    elif isinstance(v, Push):
        _encode_other(ap, v, Push, p3)
    elif isinstance(v, SetReply | set | frozenset):
        _encode_other(ap, v, SetReply, p3)
    elif isinstance(v, list | tuple):
        n = len(v)
        ap(b"*%d\r\n" % n)
        _items(ap, v, p3)
    elif isinstance(v, dict):
        _encode_other(ap, v, dict, p3)
    else:
        raise TypeError(f"cannot encode {type(v).__name__} as a RESP reply")
