"""What the command table knows of a command beside its handler: where its keys are (key
specs, and the keys of a given argv) and its ACL categories. ACL, client-side caching and
COMMAND read them here.

Key specs come from the command's documentation when it has them (server/commands registers
them into DOCUMENTED as it loads), else they are derived from the key positions the command was
registered with.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.encoder import SetReply, SimpleString
from server.dispatch import CommandSpec
from server.parsing import eq


class SyntaxParseError(ValueError):
    """A documentation string (argument syntax or key spec) that does not parse."""


# Key spec flags in the order Redis prints them.
KEY_FLAGS = ("RO", "RW", "OW", "RM", "access", "update", "insert", "delete", "not_key",
             "incomplete", "variable_flags")


@dataclass(frozen=True, slots=True)
class KeySpec:
    flags: tuple[str, ...]
    begin: tuple[str, ...]  # ("index", "1") / ("keyword", "STREAMS", "1") / ("unknown",)
    # range: (lastkey, keystep, limit); keynum: (keynumidx, firstkey, keystep); None: unknown
    find: tuple[int, ...] | None
    notes: str | None = None
    find_type: str = "range"

    @classmethod
    def parse(cls, text: str) -> KeySpec:
        parts = [part.strip() for part in text.split(";", 3)]
        flags = tuple(parts[0].split())
        unknown = [f for f in flags if f not in KEY_FLAGS]
        if unknown or len(parts) < 3:
            raise SyntaxParseError(f"bad key spec {text!r}")
        begin = tuple(parts[1].split())
        find_words = parts[2].split()
        find = None if find_words == ["unknown"] else tuple(int(w) for w in find_words[1:])
        if begin[0] not in ("index", "keyword", "unknown") or (
                find is not None and (find_words[0] not in ("range", "keynum")
                                      or len(find) != 3)):
            raise SyntaxParseError(f"bad key spec {text!r}")
        return cls(tuple(sorted(flags, key=KEY_FLAGS.index)), begin, find,
                   parts[3] if len(parts) > 3 else None,
                   find_words[0] if find is not None else "range")

    def reply(self) -> dict[bytes, object]:
        out: dict[bytes, object] = {}
        if self.notes:
            out[b"notes"] = self.notes.encode()
        out[b"flags"] = SetReply([SimpleString(f) for f in self.flags])
        kind = self.begin[0]
        spec: dict[bytes, object] = {}
        if kind == "index":
            spec[b"index"] = int(self.begin[1])
        elif kind == "keyword":
            spec[b"keyword"] = self.begin[1].encode()
            spec[b"startfrom"] = int(self.begin[2])
        out[b"begin_search"] = {b"type": kind.encode(), b"spec": spec}
        if self.find is None:
            out[b"find_keys"] = {b"type": b"unknown", b"spec": {}}
        elif self.find_type == "keynum":
            index, first, step = self.find
            out[b"find_keys"] = {b"type": b"keynum", b"spec": {
                b"keynumidx": index, b"firstkey": first, b"keystep": step}}
        else:
            last, step, limit = self.find
            out[b"find_keys"] = {b"type": b"range", b"spec": {
                b"lastkey": last, b"keystep": step, b"limit": limit}}
        return out


# fullname -> the key specs its documentation gives (filled by server/commands/command_cmd.py).
DOCUMENTED: dict[str, list[KeySpec]] = {}


def key_specs(spec: CommandSpec) -> list[KeySpec]:
    """The command's key specs: documented ones, else derived from its key positions."""
    documented = DOCUMENTED.get(spec.fullname)
    if documented:
        return documented
    if spec.key_keyword:
        begin: tuple[str, ...] = ("keyword", spec.key_keyword, "1")
        find = (-1, 1, 2)
    elif spec.first_key:
        begin = ("index", str(spec.first_key))
        last = spec.last_key - spec.first_key if spec.last_key >= 0 else spec.last_key
        find = (last, spec.step, 0)
    else:
        return []
    access = ("RW", "update") if spec.is_write else ("RO", "access")
    return [KeySpec(access, begin, find)]


def has_keys(spec: CommandSpec) -> bool:
    """Whether the command takes keys: a key spec not flagged not_key (SSUBSCRIBE's and
    SPUBLISH's shard channels are not keys), as Redis's doesCommandHaveKeys decides."""
    return any("not_key" not in ks.flags for ks in key_specs(spec))


def key_flags(spec: CommandSpec, argv: list[bytes], ks: KeySpec) -> tuple[str, ...]:
    """A key's access flags; variable_flags means they depend on the arguments (SET's GET makes
    it read the key, as Redis's setGetKeys reports)."""
    if "variable_flags" not in ks.flags:
        return ks.flags
    if spec.fullname == "set" and not any(eq(arg, b"get") for arg in argv[3:]):
        return ("OW", "update")
    return tuple(f for f in ks.flags if f != "variable_flags")


def keys_of(spec: CommandSpec, argv: list[bytes], include_not_keys: bool = False) -> list[bytes]:
    return [key for key, _ in keys_with_specs(spec, argv, include_not_keys)]


def keys_with_specs(spec: CommandSpec, argv: list[bytes],
                    include_not_keys: bool = False) -> list[tuple[bytes, KeySpec]]:
    """The keys of argv (a full command) with the key spec each was found by, in key spec
    order, as Redis's getKeysUsingKeySpecs walks them. Specs flagged not_key (shard channels)
    are skipped unless include_not_keys (Redis's GET_KEYSPEC_INCLUDE_NOT_KEYS)."""
    return [(argv[pos], ks) for pos, ks in key_positions(spec, argv, include_not_keys)]


def key_positions(spec: CommandSpec, argv: list[bytes],
                  include_not_keys: bool = False) -> list[tuple[int, KeySpec]]:
    """keys_with_specs, with the keys' positions in argv instead of the keys."""
    out: list[tuple[int, KeySpec]] = []
    for ks in key_specs(spec):
        if ks.find is None or ("not_key" in ks.flags and not include_not_keys):
            continue
        if ks.begin[0] == "index":
            first = int(ks.begin[1])
        elif ks.begin[0] == "keyword":
            first = _after_keyword(argv, ks.begin[1].encode(), int(ks.begin[2]))
            if first < 0:
                continue
        else:
            continue
        if ks.find_type == "keynum":  # EVAL's numkeys, then that many keys
            out.extend((i, ks) for i in _keynum_positions(argv, first, ks.find))
            continue
        last, step, limit = ks.find
        if last >= 0:
            stop = first + last
        elif limit:  # keys are 1/limit of what follows (XREAD's STREAMS k1 k2 id1 id2)
            stop = first + (len(argv) - first) // limit + last
        else:
            stop = len(argv) + last
        if stop >= len(argv) or stop < first:
            continue  # too few arguments: no keys from this spec, as Redis does
        out.extend((i, ks) for i in range(first, stop + 1, step))
    return out


def _keynum_positions(argv: list[bytes], first: int, find: tuple[int, ...]) -> range:
    """The keys of a keynum spec: the count at first + keynumidx, the keys from
    first + firstkey. Empty when the count is not a number or too big for argv."""
    index, first_key, step = find
    try:
        count = int(argv[first + index])
    except (IndexError, ValueError):
        return range(0)
    start = first + first_key
    if count <= 0 or start + (count - 1) * step >= len(argv):
        return range(0)
    return range(start, start + count * step, step)


def _after_keyword(argv: list[bytes], keyword: bytes, startfrom: int) -> int:
    """Index of the argument after `keyword`, searched from startfrom (negative: from the end,
    backwards); -1 when absent."""
    word = keyword.lower()
    if startfrom >= 0:
        indexes = range(startfrom, len(argv))
    else:
        indexes = range(len(argv) + startfrom, 0, -1)
    for i in indexes:
        if argv[i].lower() == word:
            return i + 1
    return -1


# ACL categories in the order Redis lists them.
CATEGORY_ORDER = ("@keyspace", "@read", "@write", "@set", "@sortedset", "@list", "@hash",
                   "@string", "@bitmap", "@hyperloglog", "@geo", "@stream", "@pubsub", "@admin",
                   "@fast", "@slow", "@blocking", "@dangerous", "@connection", "@transaction",
                   "@scripting")


def in_order(items: list[str], order: tuple[str, ...]) -> list[str]:
    rank = {name: i for i, name in enumerate(order)}
    return sorted(items, key=lambda item: rank.get(item, len(order)))


def acl_categories(spec: CommandSpec) -> list[str]:
    """The command's ACL categories ("@slow", ...) in Redis's order, as COMMAND INFO shows
    them and ACL CAT / COMMAND LIST FILTERBY ACLCAT select by."""
    # A container registered without categories is @slow, as Redis's containers are.
    cats = list(spec.categories) or (["@slow"] if spec.subcommands else [])
    return in_order(cats, CATEGORY_ORDER)
