"""server.acl_log: grouping, order, length and ids of ACL LOG entries (acl.c's rules)."""

from __future__ import annotations

from server.acl_log import AclLog


def add(log: AclLog, user: bytes, now_ms: int, max_len: int = 128) -> None:
    log.add("auth", "toplevel", b"AUTH", user, f"id={now_ms}", now_ms, max_len)


def summary(log: AclLog) -> list[tuple[bytes, int, int]]:
    return [(e.username, e.count, e.entry_id) for e in log.entries]


def test_an_event_like_a_recent_entry_is_counted_there() -> None:
    log = AclLog()
    add(log, b"bob", 1_000)
    add(log, b"carol", 2_000)
    add(log, b"bob", 61_000)  # 60 s after bob's entry was last updated: still grouped
    assert summary(log) == [(b"bob", 2, 0), (b"carol", 1, 1)]
    bob = log.entries[0]
    assert (bob.created_ms, bob.updated_ms, bob.client_info) == (1_000, 61_000, "id=61000")
    add(log, b"bob", 121_001)  # over 60 s since the last update: a new entry
    assert summary(log) == [(b"bob", 1, 2), (b"bob", 2, 0), (b"carol", 1, 1)]


def test_other_context_object_or_user_is_another_entry() -> None:
    log = AclLog()
    log.add("auth", "toplevel", b"AUTH", b"bob", "", 0, 128)
    log.add("auth", "multi", b"AUTH", b"bob", "", 0, 128)
    log.add("auth", "toplevel", b"auth", b"bob", "", 0, 128)
    log.add("auth", "toplevel", b"AUTH", b"Bob", "", 0, 128)
    assert [e.count for e in log.entries] == [1, 1, 1, 1]


def test_only_the_ten_newest_entries_are_grouped_with() -> None:
    log = AclLog()
    for i in range(11):
        add(log, b"u%d" % i, i)
    add(log, b"u0", 20)  # u0 is the 11th newest: not looked at
    assert log.entries[0].username == b"u0" and log.entries[0].count == 1
    assert len(log.entries) == 12


def test_length_limit_and_reset() -> None:
    log = AclLog()
    for i in range(5):
        add(log, b"u%d" % i, i, max_len=3)
    assert summary(log) == [(b"u4", 1, 4), (b"u3", 1, 3), (b"u2", 1, 2)]
    log.reset()
    add(log, b"u9", 10)
    assert summary(log) == [(b"u9", 1, 5)]  # ids go on after a reset
