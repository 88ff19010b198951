"""AOF rewrite: the shortest command sequence that rebuilds the current state, as Redis's
rewriteAppendOnlyFile writes it.

- a string: SET key value; a stream: one XADD per live entry with its ID, then
  XSETID key last-id ENTRIESADDED n MAXDELETEDID id (an empty stream is created with
  XADD key MAXLEN 0 0-1 x y first, which XSETID then resets), then its groups;
- each consumer group: XGROUP CREATE key group last-id ENTRIESREAD n, XNACK ... FORCE for
  the entries released by XNACK, one XCLAIM key group consumer 0 id TIME ms RETRYCOUNT n
  JUSTID FORCE per owned pending entry, and XGROUP CREATECONSUMER for consumers with
  nothing pending (see group_rewrite.py);
- the stream's IDMP state: XCFGSET key IDMP-DURATION s IDMP-MAXSIZE n when not the
  defaults, XIDMPRECORD key pid iid id per record (Redis 8.6);
- a key with a time to live: PEXPIREAT key ms.

With aof-use-rdb-preamble yes (the default) the base is an RDB file instead (rdb_writer.py),
as Redis 7 writes it. Run in a forked child (background.py) so the parent keeps serving; the
same code writes the base file synchronously at first start.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import BinaryIO

from protocol.encoder import encode_command
from server.persistence.group_rewrite import group_commands, pending_deleted_ids
from server.persistence.rdb_values import has_cold_nodes
from server.persistence.rdb_writer import write_rdb
from storage.cold import node_bytes
from storage.keyspace import Database, StringValue
from storage.rax import Rax
from storage.stream import Stream
from storage.stream_id import MAX_ID, MIN_ID, StreamID, format_counter, format_id
from storage.stream_idmp import DEFAULTS as IDMP_DEFAULTS
from storage.stream_iter import iter_forward
from storage.stream_node import StreamNode

_FLUSH_AT = 1 << 16

PerKey = Callable[[], None] | None


def stream_commands(key: bytes, s: Stream) -> Iterator[list[bytes]]:
    """The commands that rebuild stream s under key."""
    # Entries that are deleted but still pending in a group are re-added with a placeholder
    # body so XCLAIM ... FORCE can recreate their PEL entries, then deleted again (KEEPREF).
    ghosts = pending_deleted_ids(s)
    if s.length or ghosts:
        ghost_iter = iter(ghosts)
        ghost = next(ghost_iter, None)
        for eid, fields in _live_entries(s):
            while ghost is not None and ghost < eid:
                yield [b"XADD", key, format_id(ghost), b"x", b"y"]
                ghost = next(ghost_iter, None)
            yield [b"XADD", key, format_id(eid), *fields]
        while ghost is not None:
            yield [b"XADD", key, format_id(ghost), b"x", b"y"]
            ghost = next(ghost_iter, None)
    else:
        # XADD MAXLEN 0 creates the key empty; XSETID then resets its counters.
        yield [b"XADD", key, b"MAXLEN", b"0", b"0-1", b"x", b"y"]
    setid = [b"XSETID", key, format_id(s.last_id), b"ENTRIESADDED", format_counter(s.entries_added),
             b"MAXDELETEDID", format_id(s.max_deleted_entry_id)]
    yield setid
    yield from group_commands(key, s)
    yield from idmp_commands(key, s)
    if ghosts:
        # Ghosts below the first entry (trimmed while pending) go by a trim, which leaves
        # max-deleted-entry-id alone as the original trim did (and XSETID cannot set it back
        # to 0-0); the others were XDELed, so max-deleted-entry-id already covers them.
        first = s.first_entry_id() if s.length else None
        below = [g for g in ghosts if first is None or g < first]
        if below:
            yield ([b"XTRIM", key, b"MINID", b"=", format_id(first)] if first is not None
                   else [b"XTRIM", key, b"MAXLEN", b"=", b"0"])
        if len(below) < len(ghosts):
            yield [b"XDEL", key, *(format_id(g) for g in ghosts[len(below):])]
        yield setid


def _live_entries(s: Stream) -> Iterator[tuple[StreamID, list[bytes]]]:
    """Every live entry, ascending. A cold node's are decoded from a copy of its bytes read
    from its file, the node left cold: the rewrite of a backlog larger than memory does not
    bring it back into memory (the child's copy of it, which would then grow)."""
    if not has_cold_nodes(s):
        yield from s.iter_range(MIN_ID, MAX_ID)
        return
    for key, node in s.rax.items():
        if node.cold is not None:  # type: ignore[attr-defined]
            node = StreamNode(bytearray(node_bytes(node)))  # type: ignore[arg-type]
        one = Rax()
        one.insert(key, node)
        yield from iter_forward(one, MIN_ID, MAX_ID)


def idmp_commands(key: bytes, s: Stream) -> Iterator[list[bytes]]:
    """The stream's IDMP state, as Redis's rewriteStreamObject writes it: XCFGSET when its
    limits differ from the server's defaults, then XIDMPRECORD per record whose entry is
    still in the stream (XIDMPRECORD refuses the others). iids-added and iids-duplicates are
    not carried over: the replayed XIDMPRECORDs count as added, as in Redis."""
    idmp = s.idmp
    if idmp.duration != IDMP_DEFAULTS["duration"] or idmp.maxsize != IDMP_DEFAULTS["maxsize"]:
        yield [b"XCFGSET", key, b"IDMP-DURATION", b"%d" % idmp.duration,
               b"IDMP-MAXSIZE", b"%d" % idmp.maxsize]
    for pid, iid, entry_id in idmp.records():
        if s.get(entry_id) is not None:
            yield [b"XIDMPRECORD", key, pid, iid, format_id(entry_id)]


def key_commands(key: bytes, value: object, expire: int | None) -> Iterator[list[bytes]]:
    if isinstance(value, StringValue):
        yield [b"SET", key, value.data]
    elif isinstance(value, Stream):
        yield from stream_commands(key, value)
    else:
        raise TypeError(f"cannot rewrite a value of type {type(value).__name__}")
    if expire is not None:
        yield [b"PEXPIREAT", key, b"%d" % expire]


def state_commands(dbs: Iterable[Database], per_key: PerKey = None) -> Iterator[list[bytes]]:
    for db in dbs:
        if not db.data:
            continue
        yield [b"SELECT", b"%d" % db.id]
        expires = db.expires
        for key, value in list(db.data.items()):
            yield from key_commands(key, value, expires.get(key))
            if per_key is not None:
                per_key()


def write_commands(out: BinaryIO, dbs: Iterable[Database], per_key: PerKey = None,
                   libraries: Iterable[bytes] = ()) -> int:
    """Write the rewrite of dbs to out, after a FUNCTION LOAD per function library (as
    Redis's rewriteFunctions); returns the bytes written. per_key (if given) runs after each
    key: rdb-key-save-delay, for tests that need a slow rewrite."""
    buf = bytearray()
    for code in libraries:
        buf += encode_command([b"FUNCTION", b"LOAD", code])
    total = 0
    for argv in state_commands(dbs, per_key):
        buf += encode_command(argv)
        if len(buf) >= _FLUSH_AT:
            out.write(buf)
            total += len(buf)
            buf = bytearray()
    out.write(buf)
    return total + len(buf)


def write_base_file(path: str, dbs: Sequence[Database], use_rdb: bool = False,
                    per_key: PerKey = None, libraries: Sequence[bytes] = (),
                    cold_refs: Callable[[], None] | None = None) -> int:
    """Write a base file at path (commands, or an RDB file) and fsync it; the caller renames
    it into place. Returns its size. `cold_refs` (an RDB base only): cold stream nodes are
    written as references, and this is called to make their segments durable."""
    with open(path, "wb", buffering=1 << 16) as fh:
        if use_rdb:
            write_rdb(fh, dbs, libraries, aof_base=True, per_key=per_key,
                      cold_refs=cold_refs is not None)
        else:
            write_commands(fh, dbs, per_key, libraries)
        fh.flush()
        os.fsync(fh.fileno())
        if use_rdb and cold_refs is not None:
            cold_refs()
        return fh.tell()
