"""A consumer-group worker that shuts down gracefully with XNACK (Redis 8.8).

The worker reads jobs from the stream ``jobs`` as a member of the group ``workers`` and
acknowledges each one it finishes. When it is asked to stop (SIGTERM, SIGINT, or
``--stop-after N`` jobs), it does not leave its unfinished jobs pending until their idle
time runs out: it hands them back to the group with ``XNACK ... SILENT`` (the interrupted
delivery does not count), and another worker reading with ``XREADGROUP ... CLAIM`` gets them
at once, ahead of everything else. A job the worker cannot handle goes back with ``FAIL``
(another worker may manage it); a malformed one with ``FATAL``: its delivery count becomes
the maximum, and the worker that claims it next moves it to the stream ``jobs:dead`` (any
job delivered ``MAX_DELIVERIES`` times goes there) instead of trying again.

Start a server, add jobs and run two workers:

    python -m server --port 6390 &
    python examples/xnack_consumer.py --port 6390 --generate 10 --name w1 --stop-after 3
    python examples/xnack_consumer.py --port 6390 --name w2

The first worker takes a batch, finishes three jobs and releases the rest; the second one
claims the released jobs first. Each prints one line per job: ``<worker> done|released|failed|dead
<id>``.
"""

from __future__ import annotations

import argparse
import signal
import sys

import redis

STREAM = "jobs"
GROUP = "workers"
DEAD = "jobs:dead"
MAX_DELIVERIES = 5


def generate(client: redis.Redis, count: int) -> None:
    """Add ``count`` jobs; the group is created (at the stream's start) if needed."""
    try:
        client.xgroup_create(STREAM, GROUP, "0", mkstream=True)
    except redis.ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise
    for i in range(count):
        client.xadd(STREAM, {"job": str(i), "payload": "bad" if i == count - 1 else "ok"})


class Worker:
    def __init__(self, client: redis.Redis, name: str, batch: int, stop_after: int) -> None:
        self.client = client
        self.name = name
        self.batch = batch
        self.stop_after = stop_after  # 0: until signalled or idle
        self.stopping = False
        self.done = 0

    def stop(self, *_: object) -> None:
        self.stopping = True

    def read(self) -> list[tuple[bytes, dict[bytes, bytes], int]]:
        # CLAIM 60000: jobs another worker released (XNACK) come first, then jobs idle for a
        # minute (a crashed worker's), then new ones.
        reply = self.client.execute_command(
            "XREADGROUP", "GROUP", GROUP, self.name, "COUNT", self.batch, "CLAIM", 60000,
            "BLOCK", 500, "STREAMS", STREAM, ">")
        if not reply:
            return []
        entries = reply[0][1] if isinstance(reply, list) else reply[STREAM.encode()]
        # (id, fields, deliveries before this one)
        return [(entry[0], dict(zip(entry[1][0::2], entry[1][1::2], strict=True)), entry[3])
                for entry in entries]

    def release(self, ids: list[bytes], mode: str = "SILENT") -> int:
        if not ids:
            return 0
        return int(self.client.execute_command("XNACK", STREAM, GROUP, mode, "IDS", len(ids),
                                               *ids))

    def run(self) -> int:
        """Work until stopped or there is nothing left; returns the jobs finished."""
        while not self.stopping:
            jobs = self.read()
            if not jobs:
                break
            for i, (job_id, fields, deliveries) in enumerate(jobs):
                if self.stopping:
                    # Graceful shutdown: hand the rest of the batch back at once.
                    rest = [jid for jid, _, _ in jobs[i:]]
                    self.release(rest)
                    for jid in rest:
                        print(f"{self.name} released {jid.decode()}", flush=True)
                    break
                if deliveries >= MAX_DELIVERIES:  # (FATAL: the maximum)
                    self.client.xadd(DEAD, {b"id": job_id, **fields})
                    self.client.xack(STREAM, GROUP, job_id)
                    print(f"{self.name} dead {job_id.decode()}", flush=True)
                    continue
                if fields.get(b"payload") == b"bad":
                    self.release([job_id], "FATAL")  # never worth retrying
                    print(f"{self.name} failed {job_id.decode()}", flush=True)
                    continue
                self.client.xack(STREAM, GROUP, job_id)
                self.done += 1
                print(f"{self.name} done {job_id.decode()}", flush=True)
                if self.stop_after and self.done >= self.stop_after:
                    self.stopping = True
        return self.done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6379)
    parser.add_argument("--name", default="worker-1")
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--generate", type=int, default=0, help="add this many jobs first")
    parser.add_argument("--stop-after", type=int, default=0,
                        help="stop (releasing the rest) after finishing this many jobs")
    args = parser.parse_args(argv)
    client = redis.Redis(host=args.host, port=args.port)
    # The raw reply: with CLAIM each entry is [id, fields, idle ms, deliveries before].
    client.set_response_callback("XREADGROUP", lambda response, **options: response)
    if args.generate:
        generate(client, args.generate)
    worker = Worker(client, args.name, args.batch, args.stop_after)
    signal.signal(signal.SIGTERM, worker.stop)
    signal.signal(signal.SIGINT, worker.stop)
    worker.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
