"""Shared pieces of the stream command families (stream_cmds, xread, xinfo, group_cmds):
the stream lookup with its WRONGTYPE check, ID parsing with Redis's error texts, XADD/XTRIM
trim options, the KEEPREF/DELREF/ACKED reference policies, the XDELEX/XACKDEL IDS block,
COUNT/BLOCK parsing and the reply shape of entries.

Consumer groups plug into trimming and deleting through `register_ref_hooks` (see RefHooks):
until a module registers hooks, or while a stream has no groups (`stream.cgroups is None`),
DELREF and ACKED behave exactly like KEEPREF.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from protocol.encoder import Raw
from server import notify
from server.errors import NOT_INTEGER, SYNTAX, CommandError, WrongTypeError, client_text
from server.parsing import (
    eq,
    is_canonical_int,
    parse_block_timeout,
)
from storage import native
from storage.stream import Stream
from storage.stream_id import (
    INVALID_ID_MSG,
    MAX_ID,
    InvalidStreamID,
    StreamID,
    format_id,
    id_to_key,
    parse_id,
    parse_range_bound,
    parse_xadd_id,
)

if TYPE_CHECKING:
    from server.client import Client

_c_id_keys = native.id_keys

# Entries as the storage yields them: (id, [f1, v1, f2, v2, ...]).
Entry = tuple[StreamID, list[bytes]]

# Reference policies of XADD/XTRIM/XDELEX/XACKDEL (Redis 8.2).
KEEPREF = "keepref"
DELREF = "delref"
ACKED = "acked"
_POLICIES = {b"keepref": KEEPREF, b"delref": DELREF, b"acked": ACKED}

MAXLEN = "maxlen"
MINID = "minid"

ERR_MAXLEN_MINID = "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
ERR_MAXLEN_NEGATIVE = "ERR The MAXLEN argument must be >= 0."
ERR_LIMIT_NEGATIVE = "ERR The LIMIT argument must be >= 0."
ERR_LIMIT_NO_STRATEGY = (
    "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
)
ERR_XTRIM_NO_STRATEGY = "ERR syntax error, XTRIM must be called with a trimming strategy"
ERR_LIMIT_NO_APPROX = "ERR syntax error, LIMIT cannot be used without the special ~ option"
ERR_NUMIDS_POSITIVE = "ERR Number of IDs must be a positive integer"
ERR_NUMIDS_MISMATCH = "ERR The `numids` parameter must match the number of arguments"
ERR_IDS_REQUIRED = "ERR IDS option is required"
# XADD IDMP / IDMPAUTO (Redis 8.6)
ERR_IDMP_TWICE = "ERR syntax error, IDMP/IDMPAUTO specified multiple times"
ERR_IDMPAUTO_PID = "ERR syntax error, IDMPAUTO requires a non-empty producer ID"
ERR_IDMP_PID = "ERR syntax error, IDMP requires a non-empty producer ID"
ERR_IDMP_IID = "ERR syntax error, IDMP requires a non-empty idempotent ID"
ERR_IDMP_AUTO_ID_ONLY = "ERR syntax error, IDMP/IDMPAUTO can be used only with auto-generated IDs"

# XDELEX / XACKDEL per-ID result codes.
DEL_NO_ID = -1
DEL_DELETED = 1
DEL_REFERENCED = 2


# -- lookups ------------------------------------------------------------------------------------
def lookup_stream(client: Client, key: bytes) -> Stream | None:
    """The stream at key, None when absent; WRONGTYPE when the key holds something else."""
    value = client.db.get(key)
    if value is None:
        return None
    if type(value) is not Stream:
        raise WrongTypeError()
    return value


def read_stream(client: Client, key: bytes) -> Stream | None:
    """lookup_stream for read commands: also counts a keyspace hit or miss (lookupKeyRead)."""
    stream = lookup_stream(client, key)
    note_read(client, stream is not None, key)
    return stream


def note_read(client: Client, found: bool, key: bytes) -> None:
    """Count a keyspace hit or miss for INFO stats; a miss is a keymiss event."""
    if found:
        client.server.stats.keyspace_hits += 1
    else:
        client.server.stats.keyspace_misses += 1
        client.server.notify(notify.KEY_MISS, b"keymiss", key, client.db.id)


def lookup_or_create(client: Client, key: bytes) -> Stream:
    """The stream at key, created empty (and stored) when absent."""
    stream = lookup_stream(client, key)
    if stream is None:
        stream = Stream()
        client.db.add(key, stream)
    return stream


def node_limits(client: Client) -> tuple[int, int]:
    """stream-node-max-bytes and stream-node-max-entries, as CONFIG SET left them."""
    server = client.server
    return server.stream_node_max_bytes, server.stream_node_max_entries


# -- IDs ----------------------------------------------------------------------------------------
def parse_strict_id(arg: bytes, missing_seq: int = 0) -> StreamID:
    """An ID where `-` and `+` are not accepted (streamParseStrictIDOrReply)."""
    try:
        return parse_id(arg, missing_seq, strict=True)
    except InvalidStreamID as exc:
        raise CommandError(str(exc)) from None


def parse_strict_id_keys(args: list[bytes]) -> list[bytes]:
    """parse_strict_id of each argument (XACK's many IDs), as the IDs' 16-byte keys
    (id_to_key), which the PEL is looked up by: plain ``ms-seq`` of at most 19 digits each
    (always below 2**64) without the general parser's calls (in C when it is built)."""
    if _c_id_keys is not None:
        keys = _c_id_keys(args)
        if keys is not None:
            return keys
    out = []
    add = out.append
    for arg in args:
        ms, sep, seq = arg.partition(b"-")
        if sep and len(ms) < 20 and len(seq) < 20 and ms.isdigit() and seq.isdigit():
            add(id_to_key((int(ms), int(seq))))
        else:
            add(id_to_key(parse_strict_id(arg)))
    return out


def parse_loose_id(arg: bytes, missing_seq: int = 0) -> StreamID:
    """An ID where `-` is 0-0 and `+` the maximum ID (streamParseIDOrReply)."""
    try:
        return parse_id(arg, missing_seq)
    except InvalidStreamID as exc:
        raise CommandError(str(exc)) from None


def parse_range(start_arg: bytes, end_arg: bytes) -> tuple[StreamID, StreamID]:
    """XRANGE-style bounds with `-`, `+`, incomplete IDs and `(` exclusive bounds, as
    inclusive IDs. The start is parsed (and checked) first, as xrangeGenericCommand does."""
    try:
        start, _ = parse_range_bound(start_arg, True)
        end, _ = parse_range_bound(end_arg, False)
    except InvalidStreamID as exc:
        raise CommandError(str(exc)) from None
    return start, end


def entries_reply(parts: list[bytes | memoryview], n: int) -> Raw:
    """An array of n stream entries whose RESP is in parts (Stream.range_resp)."""
    return Raw(b"".join([b"*%d\r\n" % n, *parts]))


def format_entry(entry: Entry) -> list[object]:
    """[id, [field, value, ...]] as every stream reply shows an entry."""
    return [format_id(entry[0]), entry[1]]


def format_entries(entries: list[Entry]) -> list[list[object]]:
    return [[format_id(eid), fields] for eid, fields in entries]


# -- integers -----------------------------------------------------------------------------------
def parse_ll(arg: bytes, error: str = NOT_INTEGER) -> int:
    """getLongLongFromObjectOrReply: a canonical signed 64-bit integer."""
    if not is_canonical_int(arg):
        raise CommandError(error)
    return int(arg)


def parse_count(arg: bytes) -> int:
    """COUNT of XRANGE/XREAD: an integer, negative meaning 0 (no limit for XREAD)."""
    value = parse_ll(arg)
    return value if value > 0 else 0


class ReadBudget:
    """XREAD / XREADGROUP MAXCOUNT and MAXSIZE (Redis 8.10): what the reply may hold in total
    across all the streams named. MAXCOUNT counts entries; MAXSIZE the bytes of their fields
    and values, and stops before an entry that would go past it, except the reply's first
    entry, which is always served (a reader always makes progress). 0 means no limit, and so
    does a negative value, as for COUNT. Streams left when the budget is spent are not
    served (they are missing from the reply, as streams with nothing new are)."""

    __slots__ = ("maxcount", "maxsize", "used_count", "used_size")

    def __init__(self, maxcount: int = 0, maxsize: int = 0) -> None:
        self.maxcount = maxcount
        self.maxsize = maxsize
        self.used_count = 0
        self.used_size = 0

    @property
    def limited(self) -> bool:
        return bool(self.maxcount or self.maxsize)

    def spent(self) -> bool:
        if self.maxcount and self.used_count >= self.maxcount:
            return True
        return bool(self.maxsize and self.used_count and self.used_size >= self.maxsize)

    def count_limit(self, count: int) -> int:
        """A stream's COUNT (0 = all) narrowed to what MAXCOUNT leaves."""
        if not self.maxcount:
            return count
        left = max(self.maxcount - self.used_count, 0)
        return left if not count else min(count, left)

    def accept(self, fields: list[bytes] | None) -> bool:
        """Whether one more entry with these fields fits; if so it is counted."""
        if self.maxcount and self.used_count >= self.maxcount:
            return False
        size = sum(map(len, fields)) if fields else 0
        if self.maxsize and self.used_count and self.used_size + size > self.maxsize:
            return False
        self.used_count += 1
        self.used_size += size
        return True


def parse_budget_value(arg: bytes) -> int:
    """MAXCOUNT / MAXSIZE: an integer, 0 or negative meaning no limit (as COUNT)."""
    return parse_count(arg)


def policy_of(arg: bytes) -> str | None:
    """KEEPREF / DELREF / ACKED (any case) as a policy name, else None."""
    if 5 <= len(arg) <= 7:
        return _POLICIES.get(arg.lower())
    return None


# -- XADD / XTRIM options -------------------------------------------------------------------------
class TrimArgs:
    """What streamParseAddOrTrimArgsOrReply leaves: the trim strategy and threshold, `~`,
    LIMIT, the reference policy, NOMKSTREAM, IDMP pid iid / IDMPAUTO pid and (XADD) the
    position of the ID argument."""

    __slots__ = (
        "strategy", "maxlen", "minid", "approx", "limit", "limit_given", "policy",
        "nomkstream", "id_pos", "id_spec", "seq_given", "idmp_pid", "idmp_iid", "idmp_auto",
    )

    def __init__(self) -> None:
        self.strategy: str | None = None
        self.maxlen = 0
        self.minid: StreamID = (0, 0)
        self.approx = False
        self.limit = 0
        self.limit_given = False
        self.policy = KEEPREF
        self.nomkstream = False
        self.id_pos = 0
        # XADD's ID: None for `*`; seq_given False for `ms-*`.
        self.id_spec: StreamID | None = None
        self.seq_given = True
        self.idmp_pid: bytes | None = None  # IDMP pid iid, or IDMPAUTO pid (iid None)
        self.idmp_iid: bytes | None = None
        self.idmp_auto = False

    @property
    def threshold(self) -> int | StreamID:
        return self.maxlen if self.strategy == MAXLEN else self.minid


def parse_trim_args(argv: list[bytes], xadd: bool, max_entries: int,
                    replaying: bool = False) -> TrimArgs:
    """Parse XADD's options and ID (whose index goes to `id_pos`) or XTRIM's options,
    checking them in Redis's order and with its texts. `max_entries` is
    stream-node-max-entries (the default LIMIT of `~` trimming is 100 nodes' worth).
    `replaying` (the AOF being loaded: Redis's mustObeyClient) lets IDMP come with an
    explicit ID, as a propagated XADD IDMP has it."""
    args = TrimArgs()
    argc = len(argv)
    i = 2
    while i < argc:
        opt = argv[i]
        more = argc - 1 - i
        if xadd and opt == b"*":
            break  # the common case: auto ID
        low = opt.lower() if len(opt) <= 10 else b""
        if (low == b"maxlen" or low == b"minid") and more:
            if args.strategy is not None:
                raise CommandError(ERR_MAXLEN_MINID)
            args.approx = False
            nxt = argv[i + 1]
            if more >= 2 and nxt == b"~":
                args.approx = True
                i += 1
            elif more >= 2 and nxt == b"=":
                i += 1
            if low == b"maxlen":
                args.maxlen = parse_ll(argv[i + 1])
                if args.maxlen < 0:
                    raise CommandError(ERR_MAXLEN_NEGATIVE)
                args.strategy = MAXLEN
            else:
                args.minid = parse_strict_id(argv[i + 1])
                args.strategy = MINID
            i += 2
            continue
        if low == b"limit" and more:
            args.limit = parse_ll(argv[i + 1])
            if args.limit < 0:
                raise CommandError(ERR_LIMIT_NEGATIVE)
            args.limit_given = True
            i += 2
            continue
        if xadd and low == b"nomkstream":
            args.nomkstream = True
        elif xadd and low == b"idmpauto" and more:
            if args.idmp_pid is not None:
                raise CommandError(ERR_IDMP_TWICE)
            if not argv[i + 1]:
                raise CommandError(ERR_IDMPAUTO_PID)
            args.idmp_pid = argv[i + 1]
            args.idmp_auto = True
            i += 1
        elif xadd and low == b"idmp" and more >= 2:
            if args.idmp_pid is not None:
                raise CommandError(ERR_IDMP_TWICE)
            if not argv[i + 1]:
                raise CommandError(ERR_IDMP_PID)
            if not argv[i + 2]:
                raise CommandError(ERR_IDMP_IID)
            args.idmp_pid = argv[i + 1]
            args.idmp_iid = argv[i + 2]
            i += 2
        elif (policy := policy_of(opt)) is not None:
            args.policy = policy
        elif xadd:
            try:  # the ID, or anything else reported as an invalid ID
                args.id_spec, args.seq_given = parse_xadd_id(opt)
            except InvalidStreamID as exc:
                raise CommandError(str(exc)) from None
            if args.idmp_pid is not None and opt != b"*" and not replaying:
                raise CommandError(ERR_IDMP_AUTO_ID_ONLY)
            break
        else:
            raise CommandError(SYNTAX)
        i += 1
    args.id_pos = i
    if args.limit and args.strategy is None:
        raise CommandError(ERR_LIMIT_NO_STRATEGY)
    if not xadd and args.strategy is None:
        raise CommandError(ERR_XTRIM_NO_STRATEGY)
    if args.limit_given:
        if not args.approx:
            raise CommandError(ERR_LIMIT_NO_APPROX)
    elif args.approx:
        args.limit = 100 * max_entries  # at most 100 nodes' worth of work
    else:
        args.limit = 0
    return args


# -- consumer-group references ---------------------------------------------------------------------
class RefHooks(Protocol):
    """What the consumer-group module provides so that trimming and deleting honour the
    DELREF and ACKED policies. Only called for streams whose `cgroups` is not None."""

    def is_referenced(self, stream: Stream, entry_id: StreamID) -> bool:
        """ACKED: True while some group still needs the entry (pending somewhere, or not yet
        delivered to a group)."""
        ...

    def drop_refs(self, stream: Stream, entry_id: StreamID) -> bool:
        """DELREF: remove the entry from every group's PEL; True if any reference went."""
        ...


_ref_hooks: RefHooks | None = None


def register_ref_hooks(hooks: RefHooks | None) -> None:
    """Install (or with None remove) the consumer-group reference hooks."""
    global _ref_hooks
    _ref_hooks = hooks


def ref_hooks(stream: Stream, policy: str) -> RefHooks | None:
    """The hooks to apply for policy on stream, or None when it acts as KEEPREF."""
    if policy == KEEPREF or stream.cgroups is None:
        return None
    return _ref_hooks


def trim_callbacks(
    stream: Stream, policy: str
) -> tuple[Callable[[StreamID], bool] | None, Callable[[StreamID], None] | None]:
    """(can_delete, on_delete) for Stream.trim under policy."""
    hooks = ref_hooks(stream, policy)
    if hooks is None:
        return None, None
    if policy == ACKED:
        return (lambda eid: not hooks.is_referenced(stream, eid)), None
    return None, (lambda eid: hooks.drop_refs(stream, eid) and None)


def apply_trim(stream: Stream, args: TrimArgs) -> int:
    """Trim stream as args say; returns the number of entries removed."""
    can_delete, on_delete = trim_callbacks(stream, args.policy)
    return stream.trim(args.strategy or MAXLEN, args.threshold, args.approx, args.limit,
                       can_delete, on_delete)


def trim_effect_args(stream: Stream, args: TrimArgs) -> list[bytes]:
    """The trim options as they must be replayed (AOF): always exact (`=`), without LIMIT,
    and for `~` the threshold rewritten to the state reached (the length, or the first
    entry's ID tombstones included), as streamRewriteTrimArgument does."""
    if args.strategy == MAXLEN:
        value = stream.length if args.approx else args.maxlen
        out = [b"MAXLEN", b"=", b"%d" % value]
    else:
        if args.approx:
            first = next(stream.nodes(), None)
            value_id = first[0] if first is not None else MAX_ID
        else:
            value_id = args.minid
        out = [b"MINID", b"=", format_id(value_id)]
    if args.policy != KEEPREF:
        out.append(args.policy.upper().encode())
    return out


# -- XDELEX / XACKDEL ---------------------------------------------------------------------------
def parse_del_args(argv: list[bytes], start: int) -> tuple[str, list[StreamID]]:
    """[KEEPREF|DELREF|ACKED] IDS numids id... (the IDS block may come anywhere): returns the
    policy and the parsed IDs (all parsed before anything is changed)."""
    policy: str | None = None
    ids_at = -1
    numids = 0
    argc = len(argv)
    i = start
    while i < argc:
        opt = argv[i]
        if eq(opt, b"ids") and i + 1 < argc:
            arg = argv[i + 1]
            numids = int(arg) if is_canonical_int(arg) else 0
            if numids < 1:
                raise CommandError(ERR_NUMIDS_POSITIVE)
            if numids > argc - i - 2:
                raise CommandError(ERR_NUMIDS_MISMATCH)
            ids_at = i + 2
            i = ids_at + numids
            continue
        found = policy_of(opt)
        if found is None or policy is not None:
            raise CommandError(SYNTAX)
        policy = found
        i += 1
    if ids_at < 0:
        raise CommandError(ERR_IDS_REQUIRED)
    ids = [parse_strict_id(arg) for arg in argv[ids_at:ids_at + numids]]
    return policy or KEEPREF, ids


def delete_with_policy(stream: Stream, entry_id: StreamID, policy: str) -> int:
    """Delete one entry under policy: DEL_DELETED, DEL_NO_ID or DEL_REFERENCED (ACKED and a
    group still needs it). With DELREF the references go even when the entry is gone."""
    hooks = ref_hooks(stream, policy)
    if hooks is not None:
        if policy == ACKED:
            if hooks.is_referenced(stream, entry_id):
                return DEL_REFERENCED
        else:
            hooks.drop_refs(stream, entry_id)
    return DEL_DELETED if stream.delete(entry_id) else DEL_NO_ID


__all__ = [
    "ACKED", "DELREF", "DEL_DELETED", "DEL_NO_ID", "DEL_REFERENCED", "INVALID_ID_MSG", "KEEPREF",
    "MAXLEN", "MINID", "Entry", "ReadBudget", "RefHooks", "TrimArgs", "apply_trim",
    "delete_with_policy", "format_entries", "format_entry", "lookup_or_create", "lookup_stream",
    "node_limits", "parse_block_timeout", "parse_budget_value", "parse_count", "parse_del_args",
    "parse_ll", "parse_loose_id",
    "parse_range", "parse_strict_id", "parse_trim_args", "policy_of", "ref_hooks",
    "register_ref_hooks", "trim_callbacks", "trim_effect_args",
]


def refuse_block_in_script(client: Client, argv: list[bytes]) -> None:
    """XREAD / XREADGROUP with BLOCK from a script: Redis's error (a script cannot wait),
    found where the option parser meets BLOCK, before the STREAMS part."""
    if not client.scripted:
        return
    for arg in argv[1:]:
        if eq(arg, b"streams"):
            return
        if eq(arg, b"block"):
            raise CommandError(f"ERR {client_text(argv[0])} command is not allowed with BLOCK "
                               "option from scripts")
