"""MEMORY DOCTOR's findings and MEMORY STATS' derived figures, from given measures."""

from __future__ import annotations

from server.memory_report import DbOverhead, MemoryOverhead, doctor_report, stats_reply

MB = 1024 * 1024


def _measures(**changes: object) -> MemoryOverhead:
    values: dict[str, object] = dict(
        total_allocated=60 * MB, peak_allocated=60 * MB, startup_allocated=30 * MB,
        clients_normal=0, lua_caches=0, functions_caches=0, script_vms=0, cached_scripts=0,
        clients=1, dbs=[DbOverhead(0, 4096, 0)], total_keys=10)
    values.update(changes)
    return MemoryOverhead(**values)  # type: ignore[arg-type]


def test_an_instance_that_grew_little_is_empty_to_the_doctor() -> None:
    report = doctor_report(_measures(total_allocated=34 * MB, peak_allocated=80 * MB))
    assert report.startswith("Hi Sam, this instance is empty or is using very little memory")


def test_no_finding() -> None:
    assert doctor_report(_measures()) == (
        "Hi Sam, I can't find any memory issue in your instance. I can only account for what "
        "occurs on this base.\n")


def test_findings_in_redis_order() -> None:
    report = doctor_report(_measures(peak_allocated=100 * MB, clients_normal=2 * 300 * 1024,
                                     clients=2, cached_scripts=1001))
    assert report.startswith(
        "Sam, I detected a few issues in this Redis instance memory implants:\n\n * Peak memory:")
    peak, clients, scripts = (report.index(f" * {name}:") for name in
                              ("Peak memory", "Big client buffers", "Many scripts"))
    assert peak < clients < scripts
    assert report.endswith(".\n\nI'm here to keep you safe, Sam. I want to help you.\n")


def test_thresholds_are_strict() -> None:
    """Peak above 150% of the current use, more than 200K of output per client, more than
    1000 cached scripts: at the limits, nothing."""
    at_limits = _measures(peak_allocated=90 * MB, clients_normal=200 * 1024, cached_scripts=1000)
    assert doctor_report(at_limits).startswith("Hi Sam, I can't find any memory issue")


def test_derived_figures() -> None:
    mh = _measures(clients_normal=1000, lua_caches=500)
    assert mh.overhead_total == 30 * MB + 1000 + 500 + 4096
    assert mh.dataset == 60 * MB - mh.overhead_total
    assert mh.bytes_per_key == 30 * MB // 10
    stats = stats_reply(mh)
    assert stats["db.0"] == {"overhead.hashtable.main": 4096, "overhead.hashtable.expires": 0}
    assert stats["peak.percentage"] == 100.0
    assert abs(stats["dataset.percentage"] - mh.dataset * 100 / (30 * MB)) < 1e-4
    # (never more overhead than memory)
    assert _measures(startup_allocated=60 * MB, lua_caches=MB).dataset == 0
