"""A pending entry (t_stream.c's streamNACK) and the key layout of a group's pel_by_time tree:
the delivery time, 8 bytes big-endian, then the 16-byte ID key, so that a walk of the tree
meets the entries oldest delivery first. storage/consumer_group.py keeps the trees;
storage/consumer_group_claim.py reads them."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from storage.consumer_group import Consumer

PEL_TIME = struct.Struct(">Q")
_M64 = 2**64 - 1
MAX_DELIVERY_COUNT = 2**63 - 1  # LLONG_MAX: where a delivery count stops growing (XNACK FATAL)


def next_delivery_count(count: int) -> int:
    """One more delivery, saturating at MAX_DELIVERY_COUNT as Redis 8.8 does."""
    return count + 1 if count < MAX_DELIVERY_COUNT else count


class NACK:
    """A pending entry: last delivery time, deliveries so far, current owner."""

    __slots__ = ("delivery_time", "delivery_count", "consumer")

    def __init__(self, delivery_time: int, delivery_count: int, consumer: Consumer | None) -> None:
        self.delivery_time = delivery_time
        self.delivery_count = delivery_count
        self.consumer = consumer

    def __repr__(self) -> str:
        owner = self.consumer.name if self.consumer is not None else None
        return f"<NACK time={self.delivery_time} count={self.delivery_count} owner={owner!r}>"


def time_prefix(t: int) -> bytes:
    """The 8 leading bytes of a pel_by_time key: the delivery time, clamped into uint64."""
    return PEL_TIME.pack(t if 0 <= t <= _M64 else min(max(t, 0), _M64))


def time_key(t: int, key: bytes) -> bytes:
    """pel_by_time key: delivery time (clamped into uint64) then the ID key."""
    return time_prefix(t) + key
