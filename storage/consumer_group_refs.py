"""The stream's reverse index of pending references (``stream.cgroups_ref``: 16-byte ID
key -> list of the groups that have the ID pending) and the reference policies built on it:
DELREF drops an entry from every group's PEL, ACKED lets an entry go only when no group
still needs it.  storage.consumer_group keeps the index up to date on every PEL change."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from storage.rax import Rax
from storage.stream_id import StreamID, id_to_key

if TYPE_CHECKING:
    from storage.consumer_group import ConsumerGroup
    from storage.stream import Stream

__all__ = [
    "acked_checker",
    "delref_hook",
    "entry_referenced",
    "min_group_last_id",
    "ref_add",
    "ref_remove",
    "referencing_groups",
    "remove_references",
]


def min_group_last_id(s: Stream) -> StreamID | None:
    """The smallest last-delivered ID among the groups, None without groups."""
    if not s.cgroups:
        return None
    ids = [g.last_id for g in s.cgroups.values()]  # type: ignore[union-attr]
    return min(ids) if ids else None


# --- cgroups_ref: which groups hold an ID pending ----------------------------------------


def ref_add(s: Stream, key: bytes, group: ConsumerGroup) -> None:
    refs = s.cgroups_ref
    if refs is None:
        refs = s.cgroups_ref = Rax()
    holders: list[ConsumerGroup] | None = refs.find(key)  # type: ignore[assignment]
    if holders is None:
        refs.insert(key, [group])
    else:
        holders.append(group)


def ref_remove(s: Stream, key: bytes, group: ConsumerGroup) -> None:
    refs = s.cgroups_ref
    assert refs is not None
    holders: list[ConsumerGroup] = refs.find(key)  # type: ignore[assignment]
    for i, g in enumerate(holders):
        if g is group:
            del holders[i]
            break
    if not holders:
        refs.remove(key)


def referencing_groups(s: Stream, id: StreamID) -> list[ConsumerGroup]:
    """The groups that have ``id`` pending (a copy)."""
    if s.cgroups_ref is None:
        return []
    holders = s.cgroups_ref.find(id_to_key(id))
    return list(holders) if holders else []  # type: ignore[call-overload]


def remove_references(s: Stream, id: StreamID) -> int:
    """DELREF: drop ``id`` from every group's PEL; returns how many groups had it."""
    refs = s.cgroups_ref
    if refs is None:
        return 0
    key = id_to_key(id)
    holders: list[ConsumerGroup] | None = refs.find(key)  # type: ignore[assignment]
    if not holders:
        return 0
    holders = list(holders)
    for group in holders:
        group._remove_key(s, key)
    return len(holders)


def delref_hook(s: Stream) -> Callable[[StreamID], None]:
    """``on_delete`` for Stream.trim under DELREF."""

    def on_delete(id: StreamID) -> None:
        remove_references(s, id)

    return on_delete


def entry_referenced(s: Stream, id: StreamID) -> bool:
    """ACKED: does some group still need ``id``?  True while it is pending in a
    group or some group has not delivered it yet (its last ID is before it)."""
    refs = s.cgroups_ref
    if refs is not None and id_to_key(id) in refs:
        return True
    floor = min_group_last_id(s)
    return floor is not None and id > floor


def acked_checker(s: Stream) -> Callable[[StreamID], bool]:
    """``can_delete`` for the ACKED policy: an entry may go only when no group has
    it pending and every group has already delivered it (its last ID is at or
    past the entry).  The smallest last ID is taken once, when this is made."""
    floor = min_group_last_id(s)
    refs = s.cgroups_ref

    def can_delete(id: StreamID) -> bool:
        if floor is None:
            return True
        if id > floor:
            return False
        return refs is None or id_to_key(id) not in refs

    return can_delete
