"""A stream: a rax from each node's 16-byte master ID key to a listpack node,
exactly Redis's t_stream.c layout (see stream_node.py for the bytes).

Entries are never Python objects: appending encodes the entry's elements once
and appends them to the tail listpack; reading decodes them on the fly
(stream_iter.py).  Trimming lives in stream_trim.py.

Fields are passed and returned as flat lists ``[f1, v1, f2, v2, ...]`` of
bytes; duplicate field names are allowed.  IDs are ``(ms, seq)`` tuples.
"""

from __future__ import annotations

import struct
import sys
import time
from collections.abc import Callable, Iterable, Iterator

from storage import native, stream_resp
from storage.listpack import (
    EOF_BYTE,
    HEADER_SIZE,
    NUMELE_UNKNOWN,
    Listpack,
    ListpackError,
    cached_element,
    decode_element,
    encode_element,
    pack_header,
)
from storage.rax import Rax
from storage.stream_id import (
    MAX_ID,
    MIN_ID,
    UINT64_MAX,
    StreamID,
    id_to_key,
    incr_id,
    key_to_id,
)
from storage.stream_idmp import IdmpState
from storage.stream_iter import (
    Entry,
    collect_backward,
    collect_forward,
    decode_fields,
    iter_backward,
    iter_forward,
)
from storage.stream_node import (
    FLAG_DELETED,
    FLAG_SAMEFIELDS,
    MAX_NODE_BYTES,
    StreamCorruption,
    StreamNode,
    check_node,
    enc_diff,
    enc_int,
    encode_entry,
    encode_master,
    encode_values,
    entry_id_at,
    int_cached,
    master_info,
    node_last_id,
    node_layout,
    read_master,
    set_master_counts,
    skip_entry_body,
)
from storage.stream_seek import MARK_EVERY, mark_bytes, seek_entry
from storage.stream_trim import trim_stream

# The C build of an entry's step into the tail node, or None (storage/native.py).
_append_entry = native.append_entry
_xadd_run = native.xadd_run

__all__ = [
    "MSG_EXHAUSTED",
    "MSG_ID_TOO_SMALL",
    "MSG_ID_ZERO",
    "MSG_TOO_LARGE",
    "Stream",
    "StreamCorruption",
    "StreamError",
    "StreamIDError",
]

MSG_ID_ZERO = "ERR The ID specified in XADD must be greater than 0-0"
MSG_ID_TOO_SMALL = (
    "ERR The ID specified in XADD is equal or smaller than the target stream top item"
)
MSG_EXHAUSTED = "ERR The stream has exhausted the last possible ID, unable to add more items"
MSG_TOO_LARGE = "ERR Elements are too large to be stored"

_M64 = UINT64_MAX
_EOF = bytes((EOF_BYTE,))
_ZERO_DIFF = enc_int(0)  # a node's first entry has its master's ID
_time_ns = time.time_ns
_unpack_key = struct.Struct(">QQ").unpack  # key_to_id without the call
_SAMEFIELDS = bytes((FLAG_SAMEFIELDS, 1))  # the flags element
_LP_COUNT_4 = enc_int(4)  # lp-count of an entry of one SAMEFIELDS value


class StreamError(ValueError):
    """A stream operation refused; ``str(err)`` is Redis's exact error text."""


class StreamIDError(StreamError):
    """XADD's ID is not acceptable (0-0, not above the top item, exhausted)."""


class Stream:
    """Public state (read freely, write only through methods except where noted):

    ``length`` live entries; ``last_id`` the last ID ever added (or XSETID);
    ``first_id`` of the first live entry (MIN_ID when empty);
    ``max_deleted_entry_id`` the largest ID removed by delete(); ``entries_added``
    ever (stored as ``length + _removed``, so that appending counts once);
    ``cgroups`` / ``cgroups_ref``: None until the consumer-group module
    creates them (it owns their contents); ``idmp``: the IDMP state (XADD IDMP,
    XCFGSET), see storage.stream_idmp.
    """

    TYPE_NAME = "stream"  # what TYPE answers
    ENCODING = "stream"  # what OBJECT ENCODING answers

    __slots__ = (
        "_rax",  # read through the rax property, which brings the tail's counts up to date
        "length",
        "last_id",
        "top_is_last_id",  # the newest live entry's ID is last_id (see last_entry_id)
        "first_id",
        "max_deleted_entry_id",
        # entries_added - length: the entries deleted or trimmed since they were added, or
        # what XSETID or a load sets. Whatever removes entries adds them here.
        "_removed",
        "cgroups",
        "cgroups_ref",
        "idmp",  # the idempotent-production state (storage.stream_idmp), never None
        "lru",  # last access or access frequency (storage.access), set when stored
        # Tail node cache, so XADD does not seek the rax.  _tail is None when
        # unknown; anything that changes the tail node's counts resets it.
        # While _tail_behind is set, the tail listpack's header (size, element count)
        # and its master entry's count lag behind its entries: append() writes only the
        # entries, _catch_up() the rest, before anything else reads the node.
        "_tail",
        "_tail_master",
        "_tail_key",
        "_tail_names",
        "_tail_field",  # _tail_names[0] when the master entry has one field, else None
        "_tail_count",
        "_tail_total",
        "_tail_nele",
        "_tail_behind",
        "_head_hint",  # (listpack, size, first entry offset, end of tombstone run): trimming
        "_seek_hint",  # where the last lookup by ID ended: see _find
        "__weakref__",  # (the cold tier's registry refers to streams weakly)
    )

    def __init__(self) -> None:
        self._rax = Rax()
        self.length = 0
        self.last_id: StreamID = MIN_ID
        # True once XADD added the entry last_id; False once that entry may be gone or
        # last_id moved past it (XDEL of it, XSETID, a load): last_entry_id then walks.
        self.top_is_last_id = False
        self.first_id: StreamID = MIN_ID
        self.max_deleted_entry_id: StreamID = MIN_ID
        self._removed = 0
        self.cgroups: Rax | None = None
        self.cgroups_ref: Rax | None = None
        self.idmp = IdmpState()  # IDMP-DURATION / IDMP-MAXSIZE from the server's defaults
        self.lru = 0
        self._tail: StreamNode | None = None
        self._tail_master: StreamID = MIN_ID
        self._tail_key = b""  # id_to_key(_tail_master)
        self._tail_names: list[bytes] = []
        self._tail_field: bytes | None = None
        self._tail_count = 0  # live entries in the tail node
        self._tail_total = 0  # live + deleted entries in the tail node
        self._tail_nele = 0  # the tail listpack's element count, as its header should hold it
        self._tail_behind = False
        self._head_hint: tuple[Listpack, int, int, int] | None = None
        self._seek_hint: tuple[StreamNode, bytes, int, StreamID, StreamID | None] | None = None

    def __len__(self) -> int:
        return self.length

    @property
    def entries_added(self) -> int:
        """Entries ever added (XINFO STREAM's entries-added)."""
        return self.length + self._removed

    @entries_added.setter
    def entries_added(self, value: int) -> None:
        self._removed = value - self.length

    @property
    def rax(self) -> Rax:
        """The nodes by master ID key, every node's bytes complete (see _tail_behind)."""
        if self._tail_behind:
            self._catch_up()
        return self._rax

    def __bool__(self) -> bool:
        return True  # an empty stream is still a key: never falsy

    def __repr__(self) -> str:
        return (
            f"<Stream length={self.length} nodes={len(self.rax)} "
            f"last_id={self.last_id[0]}-{self.last_id[1]}>"
        )

    # --- appending ------------------------------------------------------------

    def _load_tail(self) -> StreamNode | None:
        last = self.rax.last()
        if last is None:
            self._tail = None
            return None
        key, lp = last
        count, deleted, names, _ = read_master(lp.buf)  # type: ignore[union-attr]
        self._tail = lp  # type: ignore[assignment]
        self._tail_master = key_to_id(key)
        self._tail_key = key
        self._tail_names = names
        self._tail_field = names[0] if len(names) == 1 else None
        self._tail_count = count
        self._tail_total = count + deleted
        self._tail_nele = lp.buf[4] | (lp.buf[5] << 8)
        return lp  # type: ignore[return-value]

    def _catch_up(self) -> None:
        """Write what append() left behind in the tail node: its listpack header and
        its master entry's count. An element count that reached NUMELE_UNKNOWN stays
        there, as in lpInsert."""
        self._tail_behind = False
        tail = self._tail
        assert tail is not None
        buf = tail.buf
        nele = self._tail_nele
        pack_header(buf, 0, len(buf), nele if nele < NUMELE_UNKNOWN else NUMELE_UNKNOWN)
        count = self._tail_count
        if not tail.replace_int_inplace(HEADER_SIZE, count):
            tail.replace(HEADER_SIZE, count)  # a longer encoding (128, 4096, ...)

    def _node_changed(self, lp: Listpack) -> None:
        """A node's counts changed (or it was removed) outside append()."""
        assert not self._tail_behind, "the tail's counts were read before _catch_up()"
        if lp is self._tail:
            self._tail = None
        self._seek_hint = None

    def next_id(
        self, id_spec: StreamID | None = None, seq_given: bool = True, now_ms: int | None = None
    ) -> StreamID:
        """The ID append() would give the entry, or raise StreamIDError (as
        xaddCommand + streamAppendItem check, in their order)."""
        last = self.last_id
        if id_spec is None:
            if last == MAX_ID:
                raise StreamIDError(MSG_EXHAUSTED)
            if now_ms is None:
                now_ms = time.time_ns() // 1_000_000
            elif not 0 <= now_ms <= _M64:
                raise ValueError("now_ms out of range")
            return (now_ms, 0) if now_ms > last[0] else incr_id(last)
        if not (0 <= id_spec[0] <= _M64 and 0 <= id_spec[1] <= _M64):
            raise ValueError("stream ID out of range")
        if seq_given and id_spec[0] == 0 and id_spec[1] == 0:
            raise StreamIDError(MSG_ID_ZERO)
        if last == MAX_ID:
            raise StreamIDError(MSG_EXHAUSTED)
        if seq_given:
            new = (id_spec[0], id_spec[1])
        elif id_spec[0] == last[0]:
            if last[1] == UINT64_MAX:
                raise StreamIDError(MSG_ID_TOO_SMALL)
            new = (last[0], last[1] + 1)
        else:
            new = (id_spec[0], 0)
        if new <= last:
            raise StreamIDError(MSG_ID_TOO_SMALL)
        return new

    def append_pair(self, field: bytes, value: bytes, now_ms: int, max_bytes: int = 4096,
                    max_entries: int = 100) -> StreamID:
        """append([field, value], None, True, now_ms, max_bytes, max_entries): XADD key *
        field value, most XADDs. Its usual case is written out here: the tail node has room,
        its master entry has this one field, and the ID is the next one. Anything else (a new
        node, another field, an exhausted sequence, unusual limits) takes append()."""
        tail = self._tail
        ms, seq = self.last_id
        # (a max_bytes of 0, no limit, fails the size test below: append() reads it)
        if (tail is not None and field == self._tail_field and seq < _M64
                and max_bytes <= MAX_NODE_BYTES):
            buf = tail.buf
            total = self._tail_total
            if (len(buf) + len(field) + len(value) < max_bytes
                    and (not max_entries or total < max_entries)):
                if now_ms > ms:
                    ms = now_ms
                    seq = 0
                else:
                    seq += 1
                new = (ms, seq)
                master_ms, master_seq = self._tail_master
                ms_diff = ms - master_ms
                seq_diff = seq - master_seq
                # append()'s SAMEFIELDS entry for one field: flags, diffs, value, lp-count 4.
                body = b"".join((_SAMEFIELDS, int_cached(ms_diff) or enc_diff(ms_diff),
                                 int_cached(seq_diff) or enc_diff(seq_diff),
                                 cached_element(value) or encode_element(value), _LP_COUNT_4,
                                 _EOF))
                return self._add_to_tail(tail, body, 5, total, new)
        return self.append([field, value], None, True, now_ms, max_bytes, max_entries)

    def tail_appender(
        self, max_bytes: int, max_entries: int
    ) -> tuple[Callable[[list[bytes], int], StreamID | None], Callable[[], None],
               Callable[..., tuple[int, int, int, int, bytes | None]] | None] | None:
        """For a run of `XADD key * field value ...` (stream_cmds.xadd_pipelined): ``(add,
        done, run)``, or None where append() must do each (no C step built, no tail node, a
        master count past 7 bits).

        ``add(fields, now_ms)`` puts one entry into the tail node, as append() would, and
        returns its ID; or returns None with the stream unchanged where append() must take
        over (the node is full, the sequence would wrap, the count's encoding would grow).
        Meanwhile the stream's counters (length, last ID, the tail's counts) live in the
        closure's variables, so a run costs no attribute writes: ``done()`` writes them back,
        and must run before anything else reads the stream or append() takes over (and
        before the appender is dropped). The tail's header is left behind, as append()
        leaves it (_tail_behind).

        ``run(commands, j, key, name, now_ns, clock, recent, notable_us, effects, out)`` is
        the whole command loop of xadd_pipelined in C (storage/_native.c's xadd_run, on
        this appender's node and counters), and None when that was not built: it takes
        commands from j on while add() would, and returns ``(j, now_ns, start_ns, slow_us,
        slow_id)``. With clock None it takes `XADD key ms-seq ...` instead, each with its own
        ID (the AOF replay's run: replay_fast.replay_xadd_run)."""
        if _append_entry is None:
            return None
        tail = self._tail
        if tail is None and self.length:
            tail = self._load_tail()
        if tail is None:
            return None
        buf = tail.buf
        if buf[HEADER_SIZE] >= 0x80:  # (the master count is past a 7-bit uint)
            return None
        mms, mseq = self._tail_master
        names = self._tail_names
        limit = max_bytes if 0 < max_bytes <= MAX_NODE_BYTES else MAX_NODE_BYTES
        total = first_total = self._tail_total
        nele = self._tail_nele
        count = self._tail_count
        length = self.length
        last = self.last_id

        def add(fields: list[bytes], now_ms: int) -> StreamID | None:
            nonlocal total, nele, count, length, last
            if (max_entries and total >= max_entries) or count >= 127:
                return None
            if now_ms > last[0]:
                new = (now_ms, 0)
            elif last[1] < _M64:
                new = (last[0], last[1] + 1)
            else:
                return None
            start = len(buf) - 1  # (where the entry goes: the end byte's place)
            nbody = _append_entry(buf, new[0] - mms, new[1] - mseq, fields, names, limit)
            if nbody <= 0:
                return None
            if not total % MARK_EVERY and tail.marks is not None:
                tail.marks += mark_bytes(start - node_layout(tail)[2])
            nele += nbody
            total += 1
            count += 1
            length += 1
            last = new
            return new

        def run(commands: list[list[bytes]], j: int, key: bytes, name: bytes, now_ns: int,
                clock: Callable[[], int] | None, recent: list[int] | None, notable_us: int,
                effects: list[list[bytes]] | None, out: list[bytes] | None,
                ) -> tuple[int, int, int, int, bytes | None]:
            # xadd_run with this appender's node and counters: (j, now_ns, start_ns,
            # slow_us, slow_id), see its doc.
            nonlocal total, nele, count, length, last
            marks = tail.marks
            fixed = (mms, mseq, limit, max_entries,
                     -1 if marks is None else node_layout(tail)[2], MARK_EVERY)
            state = [total, nele, count, length, last[0], last[1], now_ns]
            try:
                j, start_ns, slow_us, slow_id, new_marks = _xadd_run(  # type: ignore[misc]
                    commands, j, key, name, buf, names, fixed, state, clock, recent,
                    notable_us, effects, out)
            except BaseException:
                tail.marks = None  # (incomplete now: built again when a seek needs them)
                raise
            finally:
                total, nele, count, length, last_ms, last_seq, now_ns = state
                last = (last_ms, last_seq)
            if new_marks:
                tail.marks = marks + new_marks  # type: ignore[operator]
            return j, now_ns, start_ns, slow_us, slow_id

        def done() -> None:
            if total == first_total:
                return
            self._tail_nele = nele
            self._tail_total = total
            self._tail_count = count
            self._tail_behind = True
            self.length = length
            self.last_id = last
            self.top_is_last_id = True

        return add, done, (run if _xadd_run is not None else None)

    def append(
        self,
        fields: list[bytes],
        id_spec: StreamID | None = None,
        seq_given: bool = True,
        now_ms: int | None = None,
        max_bytes: int = 4096,
        max_entries: int = 100,
    ) -> StreamID:
        """Add an entry (streamAppendItem) and return its ID.

        ``id_spec`` None means ``*``; with ``seq_given`` False it is ``ms-*``.
        ``now_ms`` (the command's time, for ``*``) defaults to the wall
        clock.  ``max_bytes`` /
        ``max_entries`` are stream-node-max-bytes / -entries (0 = 1 GiB / no
        limit).  Raises StreamIDError / StreamError with Redis's texts."""
        if id_spec is None:
            # XADD *: next_id's common cases inlined (a new ms, or the next seq).
            if now_ms is None:
                now_ms = _time_ns() // 1_000_000
            last = self.last_id
            if now_ms > last[0]:
                new = (now_ms, 0)
            elif last[1] < _M64:
                new = (last[0], last[1] + 1)
            else:
                new = self.next_id(None, True, now_ms)
        else:
            new = self.next_id(id_spec, seq_given, now_ms)
        tail = self._tail
        if tail is None and self.length:
            tail = self._load_tail()
        if tail is not None and _append_entry is not None:
            # The C step (storage/native.py): the size test and the entry's bytes in one call;
            # a full node (-1) takes the way below, which seals it.
            total = self._tail_total
            if not (max_entries and total >= max_entries):
                master = self._tail_master
                start = len(tail.buf) - 1  # (where the entry goes: the end byte's place)
                limit = max_bytes if 0 < max_bytes <= MAX_NODE_BYTES else MAX_NODE_BYTES
                nbody = _append_entry(tail.buf, new[0] - master[0], new[1] - master[1], fields,
                                      self._tail_names, limit)
                if nbody > 0:
                    if not total % MARK_EVERY and tail.marks is not None:
                        tail.marks += mark_bytes(start - node_layout(tail)[2])
                    # (_add_to_tail's bookkeeping)
                    self._tail_nele += nbody
                    self._tail_total = total + 1
                    count = self._tail_count = self._tail_count + 1
                    if count < 128 and tail.buf[HEADER_SIZE] < 0x80:
                        self._tail_behind = True
                    else:
                        self._catch_up()
                    self.length += 1
                    self.last_id = new
                    self.top_is_last_id = True
                    return new
        nfields = len(fields)
        if tail is not None:
            buf = tail.buf
            total = self._tail_total
            # The fields' total size (two len() calls beat a join for one pair).
            if nfields == 2:
                elelen = len(fields[0]) + len(fields[1])
            else:
                elelen = len(b"".join(fields))
            if (len(buf) + elelen >= (max_bytes if 0 < max_bytes <= MAX_NODE_BYTES
                                      else MAX_NODE_BYTES)
                    or (max_entries and total >= max_entries)):
                if self._tail_behind:
                    self._catch_up()
                tail.buf = bytearray(tail.buf)  # shrink to fit, as lpShrinkToFit
                tail = None
        if tail is None:
            if nfields & 1 or not nfields:
                raise ValueError("fields must be a non-empty flat list of field/value pairs")
            if len(b"".join(fields)) > MAX_NODE_BYTES:  # (an entry that fits the tail is smaller)
                raise StreamError(MSG_TOO_LARGE)
            self._new_node(new, fields)
            if not self.length:  # (a stream has no node while it is empty: see delete)
                self.first_id = new
        else:
            # The ID's distance from the master entry, as the int64s Redis stores; the
            # cache holds only small ints, so a hit needs no wrap-around.
            master = self._tail_master
            ms_diff = new[0] - master[0]
            seq_diff = new[1] - master[1]
            ms_enc = int_cached(ms_diff) or enc_diff(ms_diff)
            seq_enc = int_cached(seq_diff) or enc_diff(seq_diff)
            names = self._tail_names
            if not nfields & 1 and fields[0::2] == names:
                # The master entry's fields (SAMEFIELDS): flags, diffs, the values (cached
                # encodings if short), lp-count.
                values = fields[1::2]
                encs = [*map(cached_element, values)]
                if None in encs:  # encode the misses (encode_element caches short ones)
                    encs = encode_values(values)
                lp_count = len(encs) + 3
                nbody = lp_count + 1
                body = b"".join([_SAMEFIELDS, ms_enc, seq_enc, *encs,
                                 int_cached(lp_count) or enc_int(lp_count), _EOF])
            else:
                if nfields & 1 or not nfields:
                    raise ValueError("fields must be a non-empty flat list of field/value pairs")
                body, nbody = encode_entry(fields, ms_enc, seq_enc, False)
                body += _EOF
            return self._add_to_tail(tail, body, nbody, total, new)
        self.length += 1
        self.last_id = new
        self.top_is_last_id = True
        return new

    def _add_to_tail(self, tail: StreamNode, body: bytes, nbody: int, total: int,
                     new: StreamID) -> StreamID:
        """The end of append() and append_pair() for an entry that goes into the tail node:
        `body` (its `nbody` elements, then the end byte) replaces the node's end byte.
        `total` is the node's entries (live and deleted) before it."""
        buf = tail.buf
        if not total % MARK_EVERY and tail.marks is not None:  # keep the marks complete
            tail.marks += mark_bytes(len(buf) - 1 - node_layout(tail)[2])
        # tail.append_encoded(body, nbody), without the header: the header and the master
        # count are written by _catch_up(), once for a run of appends (see _tail_behind),
        # while the count stays a 7-bit uint: the node's size is then what it will be with
        # them written, so the node-full test sees the bytes Redis's does.
        del buf[-1]
        buf += body
        self._tail_nele += nbody
        self._tail_total = total + 1
        count = self._tail_count = self._tail_count + 1
        if count < 128 and buf[HEADER_SIZE] < 0x80:
            self._tail_behind = True
        else:
            self._catch_up()
        self.length += 1
        self.last_id = new
        self.top_is_last_id = True
        return new

    def _new_node(self, new: StreamID, fields: list[bytes]) -> None:
        """Start a new tail node whose master entry (and first entry) is ``new``."""
        names = fields[0::2]
        head, nhead = encode_master(names)
        body, nbody = encode_entry(fields, _ZERO_DIFF, _ZERO_DIFF, True)
        lp = StreamNode(None, None, b"")  # no entry to mark yet
        lp.append_encoded(head + body, nhead + nbody)
        lp.master = master_info(names, len(head) - 4)  # minus count, deleted
        key = id_to_key(new)
        self.rax.insert(key, lp)
        self._seek_hint = None  # its node may no longer be the last one
        self._tail = lp
        self._tail_key = key
        self._tail_master = new
        self._tail_names = names
        self._tail_field = names[0] if len(names) == 1 else None
        self._tail_count = 1
        self._tail_total = 1
        self._tail_nele = lp.buf[4] | (lp.buf[5] << 8)

    # --- deleting ---------------------------------------------------------------

    def delete(self, id: StreamID) -> bool:
        """Delete one entry (XDEL): flag it DELETED, drop the node when its last
        live entry goes.  Updates length, first_id and max_deleted_entry_id.
        False if there is no live entry with that ID."""
        if not self.length:
            return False
        found = self._find(id)
        if found is None:
            return False
        key, lp, flags_off, _ = found
        if id == self.last_id:
            self.top_is_last_id = False
        buf = lp.buf
        buf[flags_off] |= FLAG_DELETED  # 7-bit uint element, same size
        count, off = decode_element(buf, HEADER_SIZE)
        if count == 1:
            self.rax.remove(key)
            self._node_changed(lp)
        else:
            set_master_counts(lp, count - 1, decode_element(buf, off)[0] + 1)  # type: ignore[operator]
            if lp is self._tail:
                self._tail_count -= 1  # _tail_total (live + deleted) is unchanged
        self.length -= 1
        self._removed += 1
        if id > self.max_deleted_entry_id:
            self.max_deleted_entry_id = id
        if not self.length:
            self.first_id = MIN_ID
        elif id == self.first_id:
            self.first_id = self.first_entry_id() or MIN_ID
        return True

    def trim(
        self,
        strategy: str,
        threshold: int | StreamID,
        approx: bool = False,
        limit: int = 0,
        can_delete: Callable[[StreamID], bool] | None = None,
        on_delete: Callable[[StreamID], None] | None = None,
    ) -> int:
        """XTRIM / XADD trimming; returns the number of entries removed.  See
        stream_trim.trim_stream."""
        return trim_stream(self, strategy, threshold, approx, limit, can_delete, on_delete)

    # --- reading ------------------------------------------------------------------

    def iter_range(self, start: StreamID, end: StreamID, rev: bool = False) -> Iterator[Entry]:
        """Live entries with start <= id <= end as ``(id, fields)``, ascending
        (descending with ``rev``).  The fields list is fresh and the caller's."""
        if rev:
            return iter_backward(self.rax, start, end)
        return iter_forward(self.rax, start, end)

    def range(
        self, start: StreamID, end: StreamID, count: int = 0, rev: bool = False
    ) -> list[Entry]:
        """Like iter_range, as a list of at most ``count`` entries (0 = all)."""
        return self._collect(start, end, count, rev, False)

    def range_reply(
        self, start: StreamID, end: StreamID, count: int = 0, rev: bool = False
    ) -> list[list[bytes | list[bytes]]]:
        """range() in XRANGE's reply shape: ``[[b"ms-seq", fields], ...]`` (the
        IDs formatted while decoding, cheaper than format_id per entry)."""
        return self._collect(start, end, count, rev, True)

    def range_resp(
        self, start: StreamID, end: StreamID, count: int = 0, rev: bool = False,
        keys_out: list[bytes] | None = None,
    ) -> tuple[list[bytes | memoryview], int] | None:
        """range_reply() already in RESP: (the entries' RESP in parts, how many entries),
        byte for byte what encoding range_reply()'s list gives, served from the cache of
        encoded nodes (storage.stream_resp). None when that cache is off. With keys_out
        (ascending only), the entries' 16-byte ID keys are appended to it, in runs."""
        if not stream_resp.max_bytes():
            return None
        if count < 0:
            count = 0
        if start > end or not self.length:
            return [], 0
        rax = self.rax
        last_key = self._tail_key if self._tail is not None else rax.last()[0]  # type: ignore[index]
        if rev:
            item = self._node_for(end)
            return stream_resp.backward(rax, item, start, end, count, last_key)  # type: ignore[arg-type]
        if start <= self.first_id:
            item = rax.first()
        elif (hinted := self._from_hint(start)) is not None:
            item = hinted[0], hinted[1]  # (a cursor going on where its last read stopped)
        else:
            item = self._node_for(start) or rax.first()
        ended: list[tuple[bytes, StreamNode, stream_resp.NodeResp]] = []
        found = stream_resp.forward(rax, item, start, end, count, last_key,  # type: ignore[arg-type]
                                    keys_out, ended)
        if ended:
            # The next read of a cursor (XREADGROUP >, XREAD from the last ID, XRANGE
            # paging) starts in this node: the hint spares it the rax walk. Its bounds are
            # the node's master ID and its last live entry (resp.keys holds the live ones).
            key, node, resp = ended[0]
            self._seek_hint = (node, key, 0, _unpack_key(key), _unpack_key(resp.keys[-16:]))
        return found

    def _collect(self, start: StreamID, end: StreamID, count: int, rev: bool, reply: bool) -> list:
        if count < 0:
            count = 0
        if start > end:
            return []
        if rev:
            node = self._node_for(end)
            if node is None:
                return []
            return collect_backward(self.rax, start, end, count, reply, node)
        after = 0
        if start <= self.first_id:  # XRANGE - ...: the head node, no floor() walk
            node = self.rax.first()
        elif (hinted := self._from_hint(start)) is not None:
            node = hinted[0], hinted[1]
            after = hinted[2]
        else:
            node = self._node_for(start) or self.rax.first()
        if node is None:
            return []
        last_key = self._tail_key if self._tail is not None else None
        resume: list = []
        out = collect_forward(self.rax, start, end, count, reply, node, last_key, after, resume)
        if resume:  # a cursor read (XREAD, XREADGROUP backlog, batches) goes on from there
            old = self._seek_hint
            last = old[4] if old is not None and old[0] is resume[1] else None
            self._seek_hint = (resume[1], resume[0], resume[2], resume[3], last)
        return out

    def _node_for(self, id: StreamID) -> tuple[bytes, object] | None:
        """(key, node) of the node that may hold ``id``: the last one whose master ID
        is <= id.  The tail node without a rax walk when it is the one (XREAD,
        XREADGROUP and most claims look at recent entries)."""
        if self._tail_behind:
            self._catch_up()
        tail = self._tail
        if tail is not None and id >= self._tail_master:
            return self._tail_key, tail
        return self._rax.floor(id_to_key(id))

    def _from_hint(self, id: StreamID) -> tuple[bytes, StreamNode, int] | None:
        """(key, node, offset) from ``_seek_hint`` when ``id`` lies in its node at or
        after its entry: every entry before that offset (relative to the node's first
        entry) has an ID below ``id``, so a seek can start there, without the rax walk.

        Lookups by ID come in ascending runs (XREADGROUP history, XCLAIM, XAUTOCLAIM)
        and cursor reads go on where the last one stopped, so the hint is where the
        last lookup or COUNT-limited range ended: (node, key, offset, a bound: every
        entry before the offset has a smaller ID, the node's last ID or None).
        Valid while the node stays in the rax with no node inserted after it (reset
        by _node_changed and _new_node); entries never move relative to the first."""
        if self._tail_behind:
            self._catch_up()
        hint = self._seek_hint
        if hint is None or id < hint[3]:
            return None
        node, key, after, hid, last = hint
        if last is None and node is not self._tail:
            last = node_last_id(node.buf, _unpack_key(key))
            self._seek_hint = (node, key, after, hid, last)
        if last is not None and id > last:
            return None
        return key, node, after

    def contains(self, id: StreamID) -> bool:
        """Whether ``id`` is a live entry (no field is decoded)."""
        return self._find(id) is not None

    def _find(self, id: StreamID) -> tuple[bytes, StreamNode, int, int] | None:
        """(node key, node, flags offset, body offset) of the live entry ``id``, or
        None.  The body starts just after the entry's seq-diff."""
        hinted = self._from_hint(id)
        if hinted is not None:
            return self._find_in(*hinted, id)
        item = self._node_for(id)
        if item is None:
            return None
        return self._find_in(item[0], item[1], 0, id)  # type: ignore[arg-type]

    def _find_in(
        self, key: bytes, node: StreamNode, after: int, id: StreamID
    ) -> tuple[bytes, StreamNode, int, int] | None:
        buf = node.buf
        mms, mseq = _unpack_key(key)
        names, _, first_off = node_layout(node)
        off = seek_entry(node, buf, mms, mseq, len(names), first_off, id, after)
        if off >= len(buf) - 1:
            return None
        eid, body = entry_id_at(buf, off, mms, mseq)
        old = self._seek_hint
        last = old[4] if old is not None and old[0] is node else None
        self._seek_hint = (node, key, off - first_off, eid, last)
        if eid != id or buf[off] & FLAG_DELETED:
            return None
        return key, node, off, body

    def get(self, id: StreamID) -> list[bytes] | None:
        """The fields of the live entry ``id``, or None."""
        found = self._find(id)
        if found is None:
            return None
        _, node, off, body = found
        buf = node.buf
        # Values are sliced from a bytes copy of the node (one memcpy of a few KB).
        return decode_fields(bytes(buf), body, buf[off], node_layout(node)[1])[0]

    def first_entry_id(self) -> StreamID | None:
        """ID of the first live entry, None when empty."""
        first = self.rax.first()
        if first is None:
            return None
        key, lp = first
        buf = lp.buf  # type: ignore[union-attr]
        mms, mseq = key_to_id(key)
        names, _, off = node_layout(lp)  # type: ignore[arg-type]
        hint = self._head_hint  # entries before hint[3] are known tombstones
        if hint is not None and hint[0] is lp and hint[1] == len(buf) and hint[2] == off:
            off = hint[3]
        stop = len(buf) - 1
        dec = decode_element
        while off < stop:
            flags = buf[off]
            ms_diff, off = dec(buf, off + 2)
            seq_diff, off = dec(buf, off)
            if not flags & FLAG_DELETED:
                return ((mms + ms_diff) & _M64, (mseq + seq_diff) & _M64)  # type: ignore[operator]
            off = skip_entry_body(buf, off, flags, len(names))
        for eid, _ in iter_forward(self.rax, MIN_ID, MAX_ID):  # not reached: no empty nodes
            return eid
        return None

    def last_entry_id(self) -> StreamID | None:
        """ID of the last live entry, None when empty."""
        if self.top_is_last_id and self.length:
            return self.last_id
        last = self._collect(MIN_ID, MAX_ID, 1, True, False)
        return last[0][0] if last else None

    # --- nodes, memory, loading ---------------------------------------------------

    def nodes(self) -> Iterator[tuple[StreamID, Listpack]]:
        """``(master_id, listpack)`` of every node, ascending.  Read-only use."""
        for key, lp in self.rax.items():
            yield key_to_id(key), lp  # type: ignore[misc]

    def node_count(self) -> int:
        """Number of listpack nodes (XINFO's radix-tree-keys)."""
        return len(self.rax)

    def rax_node_count(self) -> int:
        """Number of rax tree nodes (XINFO's radix-tree-nodes)."""
        return self.rax.node_count()

    def memory_usage(self) -> int:
        """Bytes in memory: listpack buffers (allocated size) and their objects, the rax
        nodes and this object; a cold node (storage/cold) counts its objects and where its
        bytes lie, not the bytes. Consumer groups are not included."""
        total = sys.getsizeof(self) + self.rax.memory_usage() + sys.getsizeof(self._tail_names)
        getsize = sys.getsizeof
        for lp in self.rax.values():
            total += getsize(lp)
            ref = lp.cold  # type: ignore[union-attr]
            if ref is None:
                total += getsize(lp.buf)  # type: ignore[union-attr]
            else:  # (its bytes are on disk)
                total += getsize(ref) + getsize(ref.place)
            if lp.marks is not None:  # type: ignore[union-attr]
                total += getsize(lp.marks)  # type: ignore[union-attr]
        return total

    @classmethod
    def from_nodes(
        cls,
        nodes: Iterable[tuple[StreamID | bytes, Listpack | bytes | bytearray]],
        last_id: StreamID,
        entries_added: int,
        max_deleted_entry_id: StreamID = MIN_ID,
        length: int | None = None,
        validate: bool = True,
    ) -> Stream:
        """Rebuild a stream from a snapshot: nodes as ``(master_id or 16-byte key,
        listpack or its bytes)`` in any order (in key order, as files list them, the tree is
        built whole).  With ``validate`` every node is checked byte by byte (check_node),
        node ranges must not overlap, no ID may exceed ``last_id`` and ``length`` (if given)
        must match; raises StreamCorruption.  Without it, a given ``length`` is taken as it
        is (Redis's loader takes the stored length too) and the nodes' headers are checked
        only.  first_id is recomputed."""
        s = cls()
        total = 0
        count_nodes = validate or length is None
        spans: list[tuple[StreamID, StreamID]] = []
        keys: list[bytes] = []
        lps: list[StreamNode] = []
        for master, node in nodes:
            if isinstance(master, (bytes, bytearray)):
                if len(master) != 16:
                    raise StreamCorruption("stream node key is not 16 bytes")
                key = bytes(master)
                mid = key_to_id(key)
            else:
                mid = (master[0], master[1])
                if not (0 <= mid[0] <= _M64 and 0 <= mid[1] <= _M64):
                    raise StreamCorruption("stream node master ID out of range")
                key = id_to_key(mid)
            lp = StreamNode(node.buf if isinstance(node, Listpack) else bytearray(node))
            if validate:
                info = check_node(mid, lp)
                if info.ids[-1] > last_id:
                    raise StreamCorruption("stream entry ID above the stream's last ID")
                spans.append((info.ids[0], info.ids[-1]))
                total += info.count
            else:
                try:  # (the listpack's header and end byte only, as Redis's shallow check)
                    lp.validate(deep=False)
                except ListpackError as exc:
                    raise StreamCorruption(f"bad stream listpack: {exc}") from None
                if count_nodes:
                    total += read_master(lp.buf)[0]
            keys.append(key)
            lps.append(lp)
        try:
            s.rax.fill_sorted(keys, lps)  # (keys in order: the tree built whole)
        except ValueError:  # not in order: one at a time, which also finds a duplicate
            for key, lp in zip(keys, lps, strict=True):
                if not s.rax.try_insert(key, lp):
                    raise StreamCorruption("duplicate stream node") from None
        if validate:
            spans.sort()
            for (_, prev_last), (first, _) in zip(spans, spans[1:], strict=False):
                if first <= prev_last:
                    raise StreamCorruption("stream nodes overlap")
            if length is not None and length != total:
                raise StreamCorruption("stream length does not match its nodes")
        s.length = total if count_nodes else length  # type: ignore[assignment]
        s.last_id = (last_id[0], last_id[1])
        s.entries_added = entries_added
        s.max_deleted_entry_id = (max_deleted_entry_id[0], max_deleted_entry_id[1])
        s.first_id = s.first_entry_id() or MIN_ID
        return s

    def set_id(
        self,
        last_id: StreamID,
        entries_added: int | None = None,
        max_deleted: StreamID | None = None,
    ) -> None:
        """Raw setter for XSETID (the command layer validates)."""
        if (last_id[0], last_id[1]) != self.last_id:
            self.top_is_last_id = False
        self.last_id = (last_id[0], last_id[1])
        if entries_added is not None:
            self.entries_added = entries_added
        if max_deleted is not None:
            self.max_deleted_entry_id = (max_deleted[0], max_deleted[1])
