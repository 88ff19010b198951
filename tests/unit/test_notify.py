"""notify-keyspace-events: parsing the classes and the form CONFIG GET shows."""

from __future__ import annotations

import pytest

from server import notify
from server.config import ConfigError


@pytest.mark.parametrize(("text", "shown"), [
    ("", ""), ("K", "K"), ("gKE", "gKE"), ("EKg", "gKE"), ("$lshzxeKE", "$lshzxeKE"),
    ("KA", "AK"), ("AKEm", "AKEm"), ("Kn", "nK"), ("tdn", "tdn"), ("oc", "oc"),
    # A covers g$lshzxetd only, and n, o and c are not shown beside it (as Redis does).
    ("KEAnoc", "AKE"), ("g$lshzxetdK", "AK"),
])
def test_render_is_redis_form(text: str, shown: str) -> None:
    assert notify.render_flags(notify.parse_flags(text)) == shown


def test_a_excludes_miss_new_and_the_8_2_classes() -> None:
    flags = notify.parse_flags("A")
    for bit in (notify.KEY_MISS, notify.NEW, notify.OVERWRITTEN, notify.TYPE_CHANGED,
                notify.KEYSPACE, notify.KEYEVENT):
        assert not flags & bit
    assert flags & notify.STREAM and flags & notify.GENERIC and flags & notify.EVICTED


@pytest.mark.parametrize("text", ["q", "KEq", " ", "a", "k"])
def test_unknown_class_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="Invalid event class character"):
        notify.parse_flags(text)


def test_replaced_events() -> None:
    assert notify.replaced_events(None, b"x") == []
    assert notify.replaced_events(b"a", b"b") == [(notify.OVERWRITTEN, b"overwritten")]
    assert notify.replaced_events(b"a", 1) == [(notify.OVERWRITTEN, b"overwritten"),
                                               (notify.TYPE_CHANGED, b"type_changed")]


def test_channels() -> None:
    assert notify.keyspace_channel(3, b"k:1") == b"__keyspace@3__:k:1"
    assert notify.keyevent_channel(0, b"xadd") == b"__keyevent@0__:xadd"
