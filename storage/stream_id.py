"""Stream entry IDs: ``(ms, seq)`` tuples of unsigned 64-bit ints.

Tuples are cheap, hashable and compare in ID order.  The rax key of an ID is
its 16-byte big-endian encoding (ms then seq), so byte order equals ID order
(streamEncodeID / streamDecodeID in t_stream.c).

Parsing follows t_stream.c's streamGenericParseIDOrReply and util.c's
string2ull exactly, quirks included: a part that string2ll rejects falls back
to strtoull, so leading zeros ("007"), a leading "+", leading whitespace and
"-0" are accepted, while "-1" is rejected.  Real redis-server replies to
``XRANGE s " 5" +`` and ``XRANGE s +5 +`` without error, and so do we.
"""

from __future__ import annotations

import struct

__all__ = [
    "INVALID_END_MSG",
    "INVALID_ID_MSG",
    "INVALID_START_MSG",
    "MAX_ID",
    "MIN_ID",
    "UINT64_MAX",
    "InvalidStreamID",
    "StreamID",
    "decr_id",
    "format_counter",
    "format_id",
    "id_to_key",
    "incr_id",
    "key_to_id",
    "parse_id",
    "parse_range_bound",
    "parse_xadd_id",
]

StreamID = tuple[int, int]

UINT64_MAX = 2**64 - 1
_LLONG_MAX = 2**63 - 1
MIN_ID: StreamID = (0, 0)
MAX_ID: StreamID = (UINT64_MAX, UINT64_MAX)

INVALID_ID_MSG = "ERR Invalid stream ID specified as stream command argument"
INVALID_START_MSG = "ERR invalid start ID for the interval"
INVALID_END_MSG = "ERR invalid end ID for the interval"

_KEY = struct.Struct(">QQ")
_pack_key = _KEY.pack
_unpack_key = _KEY.unpack

# isspace() in the C locale, which strtoull skips before the number.
_C_SPACE = frozenset(b" \t\n\v\f\r")
# streamGenericParseIDOrReply copies the argument into a 128-byte buffer.
_MAX_ARG_LEN = 127


class InvalidStreamID(ValueError):
    """An unparsable or out-of-range ID; ``str(err)`` is Redis's exact error text."""

    def __init__(self, message: str = INVALID_ID_MSG) -> None:
        super().__init__(message)


# --- encoding ------------------------------------------------------------------


def id_to_key(id: StreamID) -> bytes:
    """16-byte big-endian rax key (ms then seq)."""
    return _pack_key(id[0], id[1])


def key_to_id(key: bytes) -> StreamID:
    return _unpack_key(key)


def format_id(id: StreamID) -> bytes:
    """b"ms-seq"."""
    return b"%d-%d" % id


def format_counter(n: int) -> bytes:
    """A stream counter (entries-added, a group's entries-read) as an XSETID / XGROUP
    argument. Those parse a long long, so a counter pushed past LLONG_MAX (XSETID
    ENTRIESADDED 2^63-1, then XADD) is written as LLONG_MAX: the AOF must load back."""
    return b"%d" % min(n, _LLONG_MAX)


def incr_id(id: StreamID) -> StreamID:
    """The next ID (streamIncrID); OverflowError after MAX_ID."""
    ms, seq = id
    if seq < UINT64_MAX:
        return (ms, seq + 1)
    if ms < UINT64_MAX:
        return (ms + 1, 0)
    raise OverflowError("stream ID overflow")


def decr_id(id: StreamID) -> StreamID:
    """The previous ID (streamDecrID); OverflowError before MIN_ID."""
    ms, seq = id
    if seq > 0:
        return (ms, seq - 1)
    if ms > 0:
        return (ms - 1, UINT64_MAX)
    raise OverflowError("stream ID underflow")


# --- number parsing (util.c) -----------------------------------------------------


def _string2ll(s: bytes) -> int | None:
    """util.c string2ll: only the canonical decimal form of an int64."""
    if s == b"0":
        return 0
    neg = s[:1] == b"-"
    digits = s[1:] if neg else s
    if not digits or not digits.isdigit() or digits[0] == 48 or len(digits) > 19:
        return None
    v = int(digits)
    if neg:
        return -v if v <= 2**63 else None
    return v if v < 2**63 else None


def _string2ull(s: bytes) -> int | None:
    """util.c string2ull: string2ll (negative -> error), else strtoull(s, 10) which
    must consume the whole string and not overflow."""
    if not s:
        return None
    v = _string2ll(s)
    if v is not None:
        return v if v >= 0 else None
    n = len(s)
    i = 0
    while i < n and s[i] in _C_SPACE:
        i += 1
    neg = False
    if i < n and (s[i] == 43 or s[i] == 45):  # '+' or '-'
        neg = s[i] == 45
        i += 1
    digits = s[i:]
    if not digits or not digits.isdigit():
        return None
    v = int(digits)
    if v > UINT64_MAX:
        return None  # ERANGE
    return (-v) & UINT64_MAX if neg else v  # strtoull negates in unsigned arithmetic


def _as_c_string(arg: bytes) -> bytes:
    """The argument as the C code sees it: at most 127 bytes, cut at the first NUL."""
    if len(arg) > _MAX_ARG_LEN:
        raise InvalidStreamID()
    nul = arg.find(b"\0")
    return arg if nul < 0 else arg[:nul]


# --- ID parsing --------------------------------------------------------------------


def parse_id(arg: bytes, missing_seq: int = 0, strict: bool = False) -> StreamID:
    """Parse ``ms-seq``, ``ms`` (seq = ``missing_seq``), ``-`` (MIN_ID) or ``+``
    (MAX_ID; both rejected when ``strict``).  Raises InvalidStreamID."""
    ms_part, sep, seq_part = arg.partition(b"-")
    # Fast path: plain digits (leading zeros are fine, strtoull takes them).
    if ms_part.isdigit() and len(ms_part) <= 20:
        if sep:
            if seq_part.isdigit() and len(seq_part) <= 20:
                ms = int(ms_part)
                seq = int(seq_part)
                if ms <= UINT64_MAX and seq <= UINT64_MAX:
                    return (ms, seq)
                raise InvalidStreamID()
        else:
            ms = int(ms_part)
            if ms <= UINT64_MAX:
                return (ms, missing_seq)
            raise InvalidStreamID()
    elif not strict and (arg == b"-" or arg == b"+"):  # (XRANGE - +: _parse_generic's answer)
        return MIN_ID if arg == b"-" else MAX_ID
    id, _ = _parse_generic(bytes(arg), missing_seq, strict, False)
    return id


def _parse_generic(
    arg: bytes, missing_seq: int, strict: bool, allow_seq_star: bool
) -> tuple[StreamID, bool]:
    """streamGenericParseIDOrReply: (id, seq_given)."""
    s = _as_c_string(arg)
    if s == b"-" or s == b"+":
        if strict:
            raise InvalidStreamID()
        return (MIN_ID if s == b"-" else MAX_ID), True
    ms_part, sep, seq_part = s.partition(b"-")
    ms = _string2ull(ms_part)
    if ms is None:
        raise InvalidStreamID()
    if not sep:
        return (ms, missing_seq), True
    if allow_seq_star and seq_part == b"*":
        return (ms, 0), False
    seq = _string2ull(seq_part)
    if seq is None:
        raise InvalidStreamID()
    return (ms, seq), True


def parse_range_bound(arg: bytes, is_start: bool) -> tuple[StreamID, bool]:
    """Parse an XRANGE/XREVRANGE/XPENDING interval bound.

    Returns ``(id, exclusive)`` where ``id`` is already the *inclusive* bound: a
    ``(`` start is incremented and a ``(`` end decremented, as xrangeGenericCommand
    does.  An omitted seq means 0 for a start and UINT64_MAX for an end.  An
    exclusive bound is parsed strictly, so ``(-`` and ``(+`` are invalid IDs;
    ``(`` + MAX_ID as start / ``(`` + MIN_ID as end raise "invalid start/end ID
    for the interval"."""
    missing_seq = 0 if is_start else UINT64_MAX
    if len(arg) > 1 and arg[0] == 40:  # '('
        id = parse_id(arg[1:], missing_seq, strict=True)
        try:
            return (incr_id(id) if is_start else decr_id(id)), True
        except OverflowError:
            raise InvalidStreamID(INVALID_START_MSG if is_start else INVALID_END_MSG) from None
    return parse_id(arg, missing_seq), False


def parse_xadd_id(arg: bytes) -> tuple[StreamID | None, bool]:
    """Parse XADD's ID argument: ``(None, True)`` for ``*`` (auto), ``((ms, 0),
    False)`` for ``ms-*`` (seq auto), ``((ms, seq), True)`` for ``ms-seq`` and
    ``((ms, 0), True)`` for ``ms``.  ``-``/``+`` are invalid (strict parsing).
    The 0-0 check is the caller's / Stream.append's."""
    if arg == b"*":
        return None, True
    ms_part, sep, seq_part = arg.partition(b"-")
    if ms_part.isdigit() and len(ms_part) <= 20:
        ms = int(ms_part)
        if ms <= UINT64_MAX:
            if not sep:
                return (ms, 0), True
            if seq_part == b"*":
                return (ms, 0), False
            if seq_part.isdigit() and len(seq_part) <= 20:
                seq = int(seq_part)
                if seq <= UINT64_MAX:
                    return (ms, seq), True
                raise InvalidStreamID()
        else:
            raise InvalidStreamID()
    arg = bytes(arg)
    # XADD tests the C string for "*" before parsing (so "*\0junk" is "*" too).
    if _as_c_string(arg) == b"*":
        return None, True
    return _parse_generic(arg, 0, True, True)
