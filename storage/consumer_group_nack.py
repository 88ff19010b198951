"""XNACK (Redis 8.8): release pending entries back to their group without acknowledging
them. A released entry loses its owner and goes to the end of the group's NACK zone
(``ConsumerGroup.nacked``) with delivery time 0, so XCLAIM, XAUTOCLAIM and XREADGROUP CLAIM
take it whatever their minimum idle time, the NACK zone first and in release order.

The mode sets the delivery count: SILENT takes one delivery back (not below 0), FAIL leaves
it, FATAL sets it to the maximum (LLONG_MAX); RETRYCOUNT, when given, sets it to exactly that
instead. FORCE creates an unowned entry for an ID that is not pending, if the stream still
has that entry, with a delivery count of 0 before the mode or RETRYCOUNT applies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from storage.consumer_group_pel import MAX_DELIVERY_COUNT, NACK
from storage.stream_id import StreamID, id_to_key

if TYPE_CHECKING:
    from storage.consumer_group import ConsumerGroup
    from storage.stream import Stream

__all__ = ["FAIL", "FATAL", "MAX_DELIVERY_COUNT", "MODES", "SILENT", "nack", "set_count"]

SILENT = "silent"
FAIL = "fail"
FATAL = "fatal"
MODES = {b"silent": SILENT, b"fail": FAIL, b"fatal": FATAL}


def set_count(entry: NACK, mode: str, retry_count: int = -1) -> None:
    """The delivery count after an XNACK (nackSetDeliveryCount)."""
    if retry_count >= 0:
        entry.delivery_count = retry_count
    elif mode == SILENT:
        if entry.delivery_count > 0:
            entry.delivery_count -= 1
    elif mode == FATAL:
        entry.delivery_count = MAX_DELIVERY_COUNT


def nack(group: ConsumerGroup, s: Stream, ids: list[StreamID], mode: str,
         retry_count: int = -1, force: bool = False) -> int:
    """Release ``ids`` (in order; an ID given twice counts twice) and return how many were
    released: pending ones, and with ``force`` also those created for live entries."""
    released = 0
    for entry_id in ids:
        key = id_to_key(entry_id)
        entry: NACK | None = group.pel.find(key)  # type: ignore[assignment]
        if entry is not None:
            set_count(entry, mode, retry_count)
            group._to_nack_zone(key, entry)
        elif force and s.get(entry_id) is not None:
            entry = NACK(0, 0, None)
            set_count(entry, mode, retry_count)
            group._insert_nack(s, key, entry)
        else:
            continue
        released += 1
    return released
