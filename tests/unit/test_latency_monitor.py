"""The latency monitor's time series, LATENCY GRAPH's sparkline and LATENCY DOCTOR's report."""

from __future__ import annotations

from server.config import Config
from server.latency import TS_LEN, LatencyMonitor, TimeSeries, graph
from server.latency_report import (
    DISABLED,
    NO_ADVICE,
    NOTHING_SEEN,
    SPIKES_SEEN,
    ReportContext,
    doctor_report,
)


def _ctx(**changes: object) -> ReportContext:
    ctx = ReportContext(threshold_ms=5, slowlog_slower_than_us=10000, appendfsync="everysec",
                        hz=10, fork_rate_gb_s=0.0, anon_huge_pages=0)
    for name, value in changes.items():
        setattr(ctx, name, value)
    return ctx


def test_one_sample_per_second_keeps_the_worst() -> None:
    series = TimeSeries()
    series.add(100, 7)
    series.add(100, 3)
    series.add(100, 9)
    series.add(101, 2)
    assert series.in_order() == [(100, 9), (101, 2)]
    assert series.latest() == (101, 2)
    assert series.max == 9


def test_ring_keeps_the_last_160_seconds() -> None:
    series = TimeSeries()
    for second in range(1, TS_LEN + 11):
        series.add(second, second)
    kept = series.in_order()
    assert len(kept) == TS_LEN
    assert kept[0] == (11, 11) and kept[-1] == (TS_LEN + 10, TS_LEN + 10)
    assert series.max == TS_LEN + 10


def test_threshold_and_reset() -> None:
    config = Config()
    monitor = LatencyMonitor(config)
    monitor.add_if_needed("command", 500)
    assert monitor.events == {}  # off while the threshold is 0
    config.set_from_text("latency-monitor-threshold", "10")
    monitor.add_if_needed("command", 9)
    monitor.add_if_needed("command", 10)
    monitor.add_if_needed("fork", 12)
    assert set(monitor.events) == {"command", "fork"}
    assert monitor.reset("COMMAND") == 1  # event names match in any case
    assert monitor.reset("nosuch") == 0
    assert monitor.reset() == 1
    assert monitor.events == {}


def test_graph_of_one_sample_matches_redis() -> None:
    series = TimeSeries()
    series.add(1000, 20)
    assert graph("command", series, 1000) == (
        "command - high 20 ms, low 20 ms (all time high 20 ms)\n"
        + "-" * 80 + "\n"
        + " \n \n \n_\n \n0\ns\n")


def test_graph_scales_bars_and_writes_labels_downwards() -> None:
    series = TimeSeries()
    for when, latency in [(1000, 10), (1001, 40), (1002, 25), (1100, 100)]:
        series.add(when, latency)
    lines = graph("fork", series, 1130).split("\n")
    assert lines[0] == "fork - high 100 ms, low 10 ms (all time high 100 ms)"
    # 12 steps over 4 rows of "_o#" ('|' under the top): 10 -> step 0, 40 -> 4, 25 -> 2,
    # 100 -> 11 (the last step).
    assert lines[2:6] == ["   #", "   |", " o |", "_|#|"]
    assert lines[6] == "    "
    # Ages 130s, 129s, 128s, 30s: "2m", "2m", "2m", "30s", one character a row.
    assert lines[7:10] == ["2223", "mmm0", "   s"]


def test_graph_wraps_at_80_columns() -> None:
    series = TimeSeries()
    for second in range(1, 101):
        series.add(second, second % 7)
    text = graph("command", series, 101)
    blocks = text.split("\n\n")
    assert len(blocks) == 2
    assert all(len(row) == 20 for row in blocks[1].rstrip("\n").split("\n"))


def test_doctor_disabled_and_quiet() -> None:
    assert doctor_report({}, _ctx(threshold_ms=0)) == DISABLED
    assert doctor_report({}, _ctx()) == NOTHING_SEEN
    report = doctor_report({}, _ctx(anon_huge_pages=2 << 20))
    assert report.startswith("\nI have a few advices for you:\n\n- I detected a non zero amount")


def test_doctor_command_event() -> None:
    series = TimeSeries()
    series.add(1, 20)
    series.add(2, 30)
    report = doctor_report({"command": series}, _ctx())
    assert report.startswith(SPIKES_SEEN + "1. command: 2 latency spikes (average 25ms, mean "
                             "deviation 5ms, period ")
    assert "Worst all time event 30ms.\n" in report
    assert "Please use 'CONFIG SET slowlog-log-slower-than 5000'." in report
    assert "- Check your Slow Log" in report and "- Deleting, expiring" in report
    disabled = doctor_report({"command": series}, _ctx(slowlog_slower_than_us=-1))
    assert "Try to enable the Slow Log Redis feature" in disabled


def test_doctor_advices_that_depend_on_settings() -> None:
    series = TimeSeries()
    series.add(1, 8)
    fsync = doctor_report({"aof-fsync-always": series}, _ctx(appendfsync="always"))
    assert "Your fsync policy is set to 'always'." in fsync
    # The advice still counts under another policy, so the header stays without its text.
    quiet = doctor_report({"aof-fsync-always": series}, _ctx())
    assert quiet.endswith("\nI have a few advices for you:\n\n")
    assert "'hz' configuration" in doctor_report({"expire-cycle": series}, _ctx())
    assert "'hz' configuration" not in doctor_report({"expire-cycle": series}, _ctx(hz=100))
    assert doctor_report({"custom-event": series}, _ctx()).endswith(NO_ADVICE)


def test_doctor_fork_quality() -> None:
    series = TimeSeries()
    series.add(1, 8)
    slow = doctor_report({"fork": series}, _ctx(fork_rate_gb_s=2.5))
    assert "Fork rate is 2.50 GB/sec (terrible)." in slow and "hypervisior" in slow
    fast = doctor_report({"fork": series}, _ctx(fork_rate_gb_s=150.0))
    assert "(excellent)" in fast and fast.endswith(NO_ADVICE)
