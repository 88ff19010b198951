"""XPENDING key group [[IDLE min-idle-time] start end count [consumer]] (t_stream.c).

Without a range: the summary [count, smallest ID, largest ID, [[consumer, count]...]]
(nil, nil, nil when nothing is pending; the per-consumer counts are bulk strings, as Redis
writes them). With a range: [ID, consumer, idle ms, deliveries] for each pending entry;
an entry released by XNACK shows the consumer "" and the idle time -1.
"""

from __future__ import annotations

from protocol.encoder import NULL_ARRAY
from server.client import Client
from server.commands.group_common import lookup_stream_group, now_ms
from server.commands.stream_args import parse_ll, parse_range
from server.dispatch import command
from server.errors import SYNTAX, CommandError
from server.parsing import eq
from storage.stream_id import format_id


@command("xpending", -3, "readonly", keys=(1, 1, 1), categories="@read @stream @slow",
         summary="Returns the information and entries from a stream consumer group's pending "
         "entries list.", since="5.0.0", group="stream", tips="nondeterministic_output")
def xpending(client: Client, argv: list[bytes]) -> object:
    argc = len(argv)
    if argc != 3 and not 6 <= argc <= 9:
        raise CommandError(SYNTAX)
    # The range arguments are checked before the key, as Redis does.
    min_idle = 0
    consumer_name = None
    if argc >= 6:
        at = 3
        if eq(argv[3], b"idle"):
            min_idle = parse_ll(argv[4])
            if argc < 8:
                raise CommandError(SYNTAX)
            at = 5
        count = max(parse_ll(argv[at + 2]), 0)
        start, end = parse_range(argv[at], argv[at + 1])
        if at + 3 < argc:
            consumer_name = argv[at + 3]
    stream, group = lookup_stream_group(client, argv[1], argv[2])
    if argc == 3:
        n, first, last, owners = group.pending_summary()
        if not n:
            return [0, None, None, NULL_ARRAY]
        assert first is not None and last is not None
        return [n, format_id(first), format_id(last),
                [[name, b"%d" % pending] for name, pending in owners]]
    consumer = None
    if consumer_name is not None:
        consumer = group.lookup_consumer(consumer_name)
        if consumer is None:
            return []
    now = now_ms()
    # An entry released by XNACK has no owner: "" and an idle time of -1 (Redis 8.8).
    return [
        [format_id(eid), nack.consumer.name, max(now - nack.delivery_time, 0),
         nack.delivery_count] if nack.consumer is not None
        else [format_id(eid), b"", -1, nack.delivery_count]
        for eid, nack in group.pending_range(start, end, count, consumer, now, min_idle)
    ]
