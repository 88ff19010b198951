"""LATENCY: the latency monitor's events (LATEST, HISTORY, GRAPH, DOCTOR, RESET) and the
per-command latency histograms (HISTOGRAM)."""

from __future__ import annotations

import time

from protocol.encoder import Verbatim
from server import command_stats
from server.client import Client
from server.commands.help import help_reply
from server.dispatch import all_specs, command, container, find_by_fullname
from server.errors import CommandError
from server.latency import graph
from server.latency_histogram import cumulative_distribution
from server.latency_report import ReportContext, anon_huge_pages, doctor_report

_ADMIN = "@admin @slow @dangerous"
_TIPS = "nondeterministic_output request_policy:all_nodes response_policy:special"
_FLAGS = "admin noscript loading stale"

container("latency", -2, summary="A container for latency diagnostics commands.",
          since="2.8.13", group="server")


@command("latency|latest", 2, _FLAGS, categories=_ADMIN, since="2.8.13", group="server",
         tips=_TIPS, summary="Returns the latest latency samples for all events.")
def latency_latest(client: Client, argv: list[bytes]) -> object:
    rows = []
    for event, series in client.server.latency.events.items():
        when, latency = series.latest()
        rows.append([event.encode(), when, latency, series.max])
    return rows


@command("latency|history", 3, _FLAGS, categories=_ADMIN, since="2.8.13", group="server",
         tips=_TIPS, summary="Returns timestamp-latency samples for an event.")
def latency_history(client: Client, argv: list[bytes]) -> object:
    series = client.server.latency.events.get(argv[2].decode(errors="replace"))
    if series is None:
        return []
    return [[when, latency] for when, latency in series.in_order()]


@command("latency|graph", 3, _FLAGS, categories=_ADMIN, since="2.8.13", group="server",
         tips=_TIPS, summary="Returns a latency graph for an event.")
def latency_graph(client: Client, argv: list[bytes]) -> object:
    event = argv[2].decode(errors="replace")
    series = client.server.latency.events.get(event)
    if series is None:
        raise CommandError(f"ERR No samples available for event '{event}'")
    return Verbatim(graph(event, series, int(time.time())))


@command("latency|doctor", 2, _FLAGS, categories=_ADMIN, since="2.8.13", group="server",
         tips=_TIPS, summary="Returns a human-readable latency analysis report.")
def latency_doctor(client: Client, argv: list[bytes]) -> object:
    server = client.server
    config = server.config
    ctx = ReportContext(
        threshold_ms=config["latency-monitor-threshold"],
        slowlog_slower_than_us=config["slowlog-log-slower-than"],
        appendfsync=config["appendfsync"],
        hz=config["hz"],
        fork_rate_gb_s=server.stats.fork_rate_gb_s,
        anon_huge_pages=anon_huge_pages(),
    )
    return Verbatim(doctor_report(server.latency.events, ctx))


@command("latency|reset", -2, _FLAGS, categories=_ADMIN, since="2.8.13", group="server",
         tips="request_policy:all_nodes response_policy:all_succeeded",
         summary="Resets the latency data for one or more events.")
def latency_reset(client: Client, argv: list[bytes]) -> object:
    monitor = client.server.latency
    if len(argv) == 2:
        return monitor.reset()
    return sum(monitor.reset(name.decode(errors="replace")) for name in argv[2:])


@command("latency|histogram", -2, _FLAGS, categories=_ADMIN, since="7.0.0", group="server",
         tips=_TIPS, summary="Returns the cumulative distribution of latencies of a subset or "
         "all commands.")
def latency_histogram(client: Client, argv: list[bytes]) -> object:
    """A map of full command name -> {calls, histogram_usec}. Named commands that do not
    exist are skipped; a container brings its subcommands' histograms too."""
    if len(argv) == 2:
        specs = all_specs()
    else:
        specs = []
        for name in argv[2:]:
            spec = find_by_fullname(name)
            if spec is not None:
                specs.append(spec)
                specs.extend(spec.subcommands.values())
    reply = {}
    for spec in specs:
        counts = command_stats.histogram(spec)
        if counts:
            reply[spec.fullname_bytes] = {
                b"calls": sum(counts.values()),
                b"histogram_usec": dict(cumulative_distribution(counts)),
            }
    return reply


@command("latency|help", 2, "loading stale", categories="@slow", since="2.8.13",
         group="server", summary="Returns helpful text about the different subcommands.")
def latency_help(client: Client, argv: list[bytes]) -> object:
    return help_reply("LATENCY", [
        "DOCTOR",
        "    Return a human readable latency analysis report.",
        "GRAPH <event>",
        "    Return an ASCII latency graph for the <event> class.",
        "HISTORY <event>",
        "    Return time-latency samples for the <event> class.",
        "LATEST",
        "    Return the latest latency samples for all events.",
        "RESET [<event> ...]",
        "    Reset latency data of one or more <event> classes.",
        "    (default: reset all data for all event classes)",
        "HISTOGRAM [COMMAND ...]",
        "    Return a cumulative distribution of latencies in the format of a histogram for "
        "the specified command names.",
        "    If no commands are specified then all histograms are replied.",
    ])
