"""Stream IDs as the connector sees them: ``"ms-seq"`` strings and ``(ms, seq)`` tuples.

Offsets are per-stream IDs of the last entry already read, so a read range is always
half-open ``(lo, hi]``: exclusive start, inclusive end. Pure functions, no I/O.
"""

from __future__ import annotations

MAX_U64 = (1 << 64) - 1
ZERO = "0-0"

StreamId = tuple[int, int]


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def parse_id(text: str | bytes, *, default_seq: int = 0) -> StreamId:
    """Parse ``ms-seq`` (or a bare ``ms``, whose seq is ``default_seq``) into a tuple."""
    if isinstance(text, bytes):
        text = text.decode()
    text = text.strip()
    ms_part, sep, seq_part = text.partition("-")
    if not _digits(ms_part) or (sep and not _digits(seq_part)):
        raise ValueError(f"invalid stream ID {text!r}")
    ms = int(ms_part)
    seq = int(seq_part) if sep else default_seq
    if ms > MAX_U64 or seq > MAX_U64:
        raise ValueError(f"invalid stream ID {text!r}")
    return ms, seq


def format_id(sid: StreamId) -> str:
    return f"{sid[0]}-{sid[1]}"


def normalize(text: str | bytes) -> str:
    """Canonical ``ms-seq`` text for an ID given as ``ms-seq`` or ``ms``."""
    return format_id(parse_id(text))


def successor(text: str) -> str | None:
    """The smallest ID greater than ``text``; None after the largest possible ID."""
    ms, seq = parse_id(text)
    if seq < MAX_U64:
        return f"{ms}-{seq + 1}"
    if ms < MAX_U64:
        return f"{ms + 1}-0"
    return None


def predecessor(text: str) -> str:
    """The largest ID smaller than ``text`` (``0-0`` stays ``0-0``)."""
    ms, seq = parse_id(text)
    if seq > 0:
        return f"{ms}-{seq - 1}"
    if ms > 0:
        return f"{ms - 1}-{MAX_U64}"
    return ZERO


def id_less(a: str, b: str) -> bool:
    return parse_id(a) < parse_id(b)


def id_max(a: str, b: str) -> str:
    return a if parse_id(a) >= parse_id(b) else b


def id_min(a: str, b: str) -> str:
    return a if parse_id(a) <= parse_id(b) else b


def split_range(lo: str, hi: str, parts: int, first: str | None = None) -> list[tuple[str, str]]:
    """Split ``(lo, hi]`` into at most ``parts`` ordered, adjacent sub-ranges.

    The cut points are whole milliseconds spread evenly between the first candidate ID
    (``first`` when the caller knows the first entry, else the successor of ``lo``) and
    ``hi``. Every ID of ``(lo, hi]`` falls in exactly one sub-range, and the sub-ranges are
    returned in ID order, so reading them in order yields the entries in stream order.
    The result depends only on the arguments, so planning the same range twice gives the
    same split.
    """
    lo_t, hi_t = parse_id(lo), parse_id(hi)
    if hi_t <= lo_t:
        return []
    if parts <= 1:
        return [(lo, hi)]
    start_t = parse_id(first) if first is not None else parse_id(successor(lo) or hi)
    start_t = max(start_t, parse_id(successor(lo) or hi))
    if start_t > hi_t:
        return [(lo, hi)]
    span = hi_t[0] - start_t[0] + 1  # milliseconds covered, each one indivisible
    parts = min(parts, span)
    ranges: list[tuple[str, str]] = []
    prev = lo
    for i in range(1, parts):
        cut_ms = start_t[0] + span * i // parts  # first ms of sub-range i
        cut = predecessor(f"{cut_ms}-0")
        if parse_id(cut) <= parse_id(prev):
            continue
        ranges.append((prev, cut))
        prev = cut
    ranges.append((prev, hi))
    return ranges
