"""Stream trimming (XTRIM, XADD MAXLEN/MINID), as t_stream.c's streamTrim in
Redis 8.2+, with the KEEPREF / DELREF / ACKED reference policies.

Walking nodes from the head, for each node:

* MAXLEN stops once ``length <= maxlen``; LIMIT stops before a node whose live
  entries would take the removed count past the limit (node granularity).
* A node is *eligible* when it lies wholly inside the trim range: MAXLEN if
  ``length - count >= maxlen``, MINID if its last entry (deleted or not) is
  below the threshold.
* KEEPREF (no hooks): an eligible node is dropped whole.
* ACKED (``can_delete``) / DELREF (``on_delete``): an eligible node is walked
  entry by entry instead (Redis 8.2's per-entry path, made to apply to ``~``
  too by redis#14623): an entry ``can_delete`` refuses is skipped and stays,
  later ones may still go; ``on_delete`` runs for each removed entry and also
  for tombstones passed over (redis#15581).  The node is dropped when no live
  entry is left, and the walk carries on to the next node.
* ``~`` stops at the first node that is not eligible.  Otherwise the entries of
  that node are marked deleted up to the boundary (skipping refused ones) and
  the walk ends there; if that left the node without live entries it is
  dropped (redis#15815: Redis never keeps a node with count 0).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from storage.listpack import HEADER_SIZE, Listpack, decode_element
from storage.rax import Rax
from storage.stream_id import MIN_ID, UINT64_MAX, StreamID, key_to_id
from storage.stream_node import (
    FLAG_DELETED,
    node_last_id,
    read_master,
    set_master_counts,
    skip_entry_body,
)

if TYPE_CHECKING:
    from storage.stream import Stream

__all__ = ["trim_stream"]

_M64 = UINT64_MAX


def trim_stream(
    s: Stream,
    strategy: str,
    threshold: int | StreamID,
    approx: bool = False,
    limit: int = 0,
    can_delete: Callable[[StreamID], bool] | None = None,
    on_delete: Callable[[StreamID], None] | None = None,
) -> int:
    """Trim ``s``; ``strategy`` is "maxlen" (threshold: int >= 0) or "minid"
    (threshold: an ID).  ``limit`` 0 means no limit.  Returns entries removed."""
    if strategy == "maxlen":
        by_len = True
        maxlen = int(threshold)  # type: ignore[arg-type]
        if maxlen < 0:
            raise ValueError("maxlen must be >= 0")
        minid: StreamID = MIN_ID
        if s.length <= maxlen:
            return 0
    elif strategy == "minid":
        by_len = False
        maxlen = 0
        minid = (threshold[0], threshold[1])  # type: ignore[index]
    else:
        raise ValueError(f"unknown trim strategy {strategy!r}")
    per_entry = can_delete is not None or on_delete is not None
    removed_total = 0
    length_before = s.length
    try:
        removed_total = _walk(
            s, by_len, maxlen, minid, approx, limit, per_entry, can_delete, on_delete
        )
    finally:  # also when a hook raised: the entries already gone stay gone
        if not s.length:
            s.first_id = MIN_ID
        elif s.length != length_before:
            s.first_id = s.first_entry_id() or MIN_ID
    return removed_total


def _walk(
    s: Stream,
    by_len: bool,
    maxlen: int,
    minid: StreamID,
    approx: bool,
    limit: int,
    per_entry: bool,
    can_delete: Callable[[StreamID], bool] | None,
    on_delete: Callable[[StreamID], None] | None,
) -> int:
    rax = s.rax
    item = rax.first()
    removed_total = 0
    while item is not None:
        if by_len and s.length <= maxlen:
            break
        key, lp = item
        buf = lp.buf  # type: ignore[union-attr]
        count, off = decode_element(buf, HEADER_SIZE)
        if limit and removed_total + count > limit:  # type: ignore[operator]
            break
        master = key_to_id(key)
        if by_len:
            eligible = s.length - count >= maxlen  # type: ignore[operator]
        else:
            eligible = node_last_id(buf, master) < minid
        if eligible and not per_entry:
            rax.remove(key)
            s._node_changed(lp)  # type: ignore[arg-type]
            s.length -= count  # type: ignore[operator]
            s._removed += count  # (entries_added stays)
            removed_total += count  # type: ignore[operator]
            item = _next_node(rax, key)
            if item is None:  # (the last node: the newest entry went with it)
                s.top_is_last_id = False
            continue
        if approx and not eligible:
            break
        deleted, off = decode_element(buf, off)
        names, first_off = read_master(buf)[2:]
        removed = _trim_node(
            s,
            key,
            lp,  # type: ignore[arg-type]
            count,  # type: ignore[arg-type]
            deleted,  # type: ignore[arg-type]
            len(names),
            first_off,
            by_len,
            maxlen,
            minid,
            can_delete,
            on_delete,
        )
        removed_total += removed
        if not eligible:
            break
        item = _next_node(rax, key)
    return removed_total


def _next_node(rax: Rax, key: bytes) -> tuple[bytes, object] | None:
    it = rax.iterator()
    it.seek(">", key)
    return (it.key, it.value) if it.next() else None


def _trim_node(
    s: Stream,
    key: bytes,
    lp: Listpack,
    count: int,
    deleted: int,
    nmaster: int,
    first_off: int,
    by_len: bool,
    maxlen: int,
    minid: StreamID,
    can_delete: Callable[[StreamID], bool] | None,
    on_delete: Callable[[StreamID], None] | None,
) -> int:
    """Mark the node's entries deleted from the head up to the trim boundary, then
    fix its master counts (or drop it when no live entry is left).  Returns how
    many live entries were removed (``s.length`` already reduced).

    Exact trimming on every XADD re-walks the head node's growing run of
    tombstones; ``s._head_hint`` remembers where that run ends (checked against
    the listpack object, its size and first entry offset: entries never move
    otherwise) so the next walk starts there.  Not used with ``on_delete``,
    which must also see the tombstones."""
    buf = lp.buf
    mms, mseq = key_to_id(key)
    stop = len(buf) - 1
    off = first_off
    hint = s._head_hint
    if (
        hint is not None
        and on_delete is None
        and hint[0] is lp
        and hint[1] == len(buf)
        and hint[2] == off
    ):
        off = hint[3]
    dead_end = off  # end of the run of deleted entries from where the walk started
    dec = decode_element
    removed = 0
    try:
        while off < stop:
            if by_len and s.length <= maxlen:
                break
            flags_off = off
            flags = buf[off]
            ms_diff, off = dec(buf, off + 2)
            seq_diff, off = dec(buf, off)
            eid = ((mms + ms_diff) & _M64, (mseq + seq_diff) & _M64)  # type: ignore[operator]
            if not by_len and eid >= minid:
                break
            off = skip_entry_body(buf, off, flags, nmaster)
            if flags & FLAG_DELETED:
                if on_delete is not None:
                    on_delete(eid)
                if dead_end == flags_off:
                    dead_end = off
                continue
            if can_delete is not None and not can_delete(eid):
                continue
            if on_delete is not None:
                on_delete(eid)
            buf[flags_off] = flags | FLAG_DELETED  # 7-bit uint element, same size
            if eid == s.last_id:
                s.top_is_last_id = False
            removed += 1
            s.length -= 1
            s._removed += 1
            if dead_end == flags_off:
                dead_end = off
    finally:  # keep the node consistent even if a hook raised midway
        if removed:
            s._node_changed(lp)
            if removed == count:
                s.rax.remove(key)
                s._head_hint = None
            else:
                size = len(buf)
                set_master_counts(lp, count - removed, deleted + removed)
                shift = len(buf) - size  # only the master entry changed size
                s._head_hint = (lp, len(buf), first_off + shift, dead_end + shift)
    return removed
