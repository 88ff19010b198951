"""Calls, usec and latency histograms, all read from one count per call."""

from __future__ import annotations

from server import command_stats
from server.dispatch import CommandSpec


def _spec() -> CommandSpec:
    return CommandSpec(name="x", arity=1, flags=(), handler=None)


def test_calls_and_usec_come_from_the_durations() -> None:
    spec = _spec()
    for us in (3, 3, 10, 0):
        command_stats.record(spec, us)
    assert spec.calls == 4
    assert spec.usec == 16
    assert command_stats.histogram(spec) == {3: 2, 10: 1, 0: 1}


def test_calls_while_tracking_is_off_count_but_stay_out_of_the_histogram() -> None:
    spec = _spec()
    command_stats.record(spec, 5)
    command_stats.set_tracking([spec], False)
    command_stats.record(spec, 5)
    command_stats.record(spec, 7)
    assert spec.calls == 3
    assert command_stats.histogram(spec) == {5: 1}
    command_stats.set_tracking([spec], False)  # (already off: nothing changes)
    command_stats.set_tracking([spec], True)
    command_stats.record(spec, 7)
    assert spec.calls == 4 and spec.usec == 24
    assert command_stats.histogram(spec) == {5: 1, 7: 1}
    command_stats.set_tracking([spec], True)
    assert command_stats.histogram(spec) == {5: 1, 7: 1}


def test_reset_forgets_everything_in_either_state() -> None:
    spec = _spec()
    command_stats.record(spec, 5)
    command_stats.set_tracking([spec], False)
    command_stats.record(spec, 6)
    command_stats.reset(spec)
    assert spec.calls == 0 and command_stats.histogram(spec) == {}
    command_stats.record(spec, 6)  # still off: counted, not in the histogram
    assert spec.calls == 1 and command_stats.histogram(spec) == {}
    command_stats.set_tracking([spec], True)
    command_stats.record(spec, 6)
    assert spec.calls == 2 and command_stats.histogram(spec) == {6: 1}


def test_recent_calls_are_folded_before_any_reading() -> None:
    """A call only appends its duration; every reading counts the appended ones first, and a
    negative duration (the wall clock stepped back during the call) counts as 0 us."""
    spec = _spec()
    spec.recent.extend((4, 4, -3))
    assert spec.durations == {}
    assert spec.calls == 3 and spec.usec == 8
    assert spec.recent == [] and spec.durations == {4: 2, 0: 1}
    spec.recent.append(9)
    assert command_stats.histogram(spec) == {4: 2, 0: 1, 9: 1}
    spec.recent.append(1)
    command_stats.reset(spec)
    assert spec.calls == 0 and spec.recent == []
