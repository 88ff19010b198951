"""MEMORY: USAGE (a key's size), STATS and DOCTOR (server/memory_report.py), PURGE (give freed
heap memory back), MALLOC-STATS, HELP."""

from __future__ import annotations

from protocol.encoder import OK, Verbatim
from server.client import Client
from server.commands.help import help_reply
from server.dispatch import command, container
from server.errors import SYNTAX, CommandError
from server.eviction import value_size
from server.memory_report import doctor_report, measure, stats_reply
from server.parsing import eq, parse_int

container("memory", -2, summary="A container for memory diagnostics commands.", since="4.0.0",
          group="server")


@command("memory|help", 2, "loading stale", categories="@slow", since="4.0.0",
         group="server",
         summary="Returns helpful text about the different subcommands.")
def memory_help(client: Client, argv: list[bytes]) -> object:
    return help_reply("MEMORY", [
        "DOCTOR",
        "    Return memory problems reports.",
        "MALLOC-STATS",
        "    Return internal statistics report from the memory allocator.",
        "PURGE",
        "    Attempt to purge dirty pages for reclamation by the allocator.",
        "STATS",
        "    Return information about the memory usage of the server.",
        "USAGE <key> [SAMPLES <count>]",
        "    Return memory in bytes used by <key> and its value. Nested values are",
        "    sampled up to <count> times (default: 5, 0 means sample all).",
    ])


@command("memory|usage", -3, "readonly", keys=(2, 2, 1), categories="@read @slow",
         since="4.0.0", group="server",
         summary="Estimates the memory usage of a key.")
def memory_usage(client: Client, argv: list[bytes]) -> object:
    i = 3
    while i < len(argv):
        if eq(argv[i], b"samples") and i + 1 < len(argv):
            if parse_int(argv[i + 1]) < 0:
                raise CommandError(SYNTAX)
            i += 2
        else:
            raise CommandError(SYNTAX)
    value = client.db.peek(argv[2])
    return None if value is None else value_size(argv[2], value)


@command("memory|purge", 2, "", categories="@slow", since="4.0.0", group="server",
         tips="request_policy:all_shards response_policy:all_succeeded",
         summary="Asks the allocator to release memory.")
def memory_purge(client: Client, argv: list[bytes]) -> object:
    """Redis purges jemalloc's dirty pages; here malloc_trim hands every whole free page of
    the heap back to the system at once (the cron does it too, once enough was freed)."""
    client.server.heap.trim()
    return OK


@command("memory|malloc-stats", 2, "", categories="@slow", since="4.0.0", group="server",
         tips="nondeterministic_output request_policy:all_shards response_policy:special",
         summary="Returns the allocator statistics.")
def memory_malloc_stats(client: Client, argv: list[bytes]) -> object:
    # What Redis answers when built on libc's malloc, as this server runs (mem_allocator:libc).
    return Verbatim("Stats not supported for the current allocator")


@command("memory|stats", 2, "", categories="@slow", since="4.0.0", group="server",
         tips="nondeterministic_output request_policy:all_shards response_policy:special",
         summary="Returns details about memory usage.")
def memory_stats(client: Client, argv: list[bytes]) -> object:
    return stats_reply(measure(client.server))


@command("memory|doctor", 2, "", categories="@slow", since="4.0.0", group="server",
         tips="nondeterministic_output request_policy:all_shards response_policy:special",
         summary="Outputs a memory problems report.")
def memory_doctor(client: Client, argv: list[bytes]) -> object:
    return Verbatim(doctor_report(measure(client.server)))
