"""In-process CPU cost of the consumer-group hot path (issue #9): XREADGROUP COUNT 10 `>`
then XACK of those 10 ids, run through the dispatcher and the encoder as the server does
(no sockets), per entry.

    python bench/bench_groups.py [--rounds 5] [--entries 20000] [--aof] [--profile]

``--aof`` adds a propagate hook (as an enabled AOF has), so the XCLAIM effects are built.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol.encoder import encode_into  # noqa: E402
from server.app import Server  # noqa: E402
from server.client import Client  # noqa: E402
from server.config import Config  # noqa: E402
from server.dispatch import execute  # noqa: E402


def setup(entries: int, aof: bool) -> tuple[Client, list[list[bytes]]]:
    server = Server(Config())
    if aof:
        log: list[list[bytes]] = []
        server.propagate_hooks.append(lambda db, argv: log.append(argv))
    client = Client(1, server, None)
    for i in range(entries):
        execute(client, [b"XADD", b"bench:s", b"*", b"sensor", b"%d" % (i * 7919 % 1000000),
                         b"temp", b"21.5", b"site", b"lab-a"])
    execute(client, [b"XGROUP", b"CREATE", b"bench:s", b"g", b"0"])
    return client, []


def load(client: Client, entries: int) -> int:
    out = client.out
    done = 0
    read = [b"XREADGROUP", b"GROUP", b"g", b"c", b"COUNT", b"10", b"STREAMS", b"bench:s", b">"]
    while done < entries:
        reply = execute(client, list(read))
        encode_into(out, reply, 2)
        ids = [e[0] for e in reply[0][1]]  # type: ignore[index]
        if not ids:
            break
        ack = execute(client, [b"XACK", b"bench:s", b"g", *ids])
        encode_into(out, ack, 2)
        b"".join(out)  # what the before-sleep pass writes
        out.clear()
        done += len(ids)
    return done


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--entries", type=int, default=20_000)
    parser.add_argument("--aof", action="store_true")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    best = float("inf")
    for _ in range(args.rounds):
        client, _ = setup(args.entries, args.aof)
        gc.collect()
        if args.profile:
            prof = cProfile.Profile()
            prof.enable()
            load(client, args.entries)
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)
            return
        t0 = time.process_time()
        done = load(client, args.entries)
        best = min(best, (time.process_time() - t0) / done * 1e6)
    print(f"XREADGROUP COUNT 10 + XACK, per entry{' (aof hook)' if args.aof else ''}: "
          f"{best:.2f} us")


if __name__ == "__main__":
    main()
