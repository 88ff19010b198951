"""Server options: defaults, redis.conf-style files, command-line flags, CONFIG GET/SET.

Options keep Redis's names. Values are stored parsed (int, bool, str, ...); CONFIG GET renders
them back in Redis's text form.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from server import notify, shutdown_flags
from server.errors import ConfigError
from server.latency_histogram import format_percentile
from server.parsing import is_canonical_int
from storage.glob import compile_glob

# Checks a config file's `user` line as it is read: (words, names seen so far) -> None, or
# (index of the word to name, the reason). The ACL package registers it
# (register_user_line_check); without it the lines are checked when the ACL loads them.
UserLineCheck = Callable[[list[bytes], set[bytes]], "tuple[int, str] | None"]
_user_line_check: UserLineCheck | None = None


def register_user_line_check(check: UserLineCheck) -> None:
    global _user_line_check
    _user_line_check = check


_ULLONG_MAX = 2**64 - 1
_MEMORY_UNITS = {
    "": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000**2, "mb": 1024**2, "g": 1000**3, "gb": 1024**3,
}


def parse_memory(text: str) -> int:
    """Redis's memtoull: ASCII digits, then an optional unit (b, k, kb, m, mb, g, gb, in any
    case); no sign, no spaces; no digits at all reads as 0. Values wrap at 2^64 as in C."""
    digits = text[: len(text) - len(text.lstrip("0123456789"))]
    unit = text[len(digits):].lower()
    if unit not in _MEMORY_UNITS or len(digits) >= 128:
        raise ConfigError("argument must be a memory value")
    value = min(int(digits), _ULLONG_MAX) if digits else 0  # strtoull saturates
    return value * _MEMORY_UNITS[unit] & _ULLONG_MAX


def parse_bool(text: str) -> bool:
    low = text.lower()
    if low == "yes":
        return True
    if low == "no":
        return False
    raise ConfigError("argument must be 'yes' or 'no'")


def _int_range(lo: int, hi: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        # string2ll's rules, as Redis's numericParseString: no '+', spaces or leading zeros.
        if not (text.isascii() and is_canonical_int(text.encode())):
            raise ConfigError("argument couldn't be parsed into an integer")
        value = int(text)
        if not lo <= value <= hi:
            raise ConfigError(f"argument must be between {lo} and {hi} inclusive")
        return value

    return parse


class MemoryRange:
    """The parser of a memory option (a byte count within [lo, hi], units allowed). A class
    rather than a closure so that CONFIG REWRITE can tell these options by their parser."""

    def __init__(self, lo: int, hi: int) -> None:
        self.lo = lo
        self.hi = hi

    def __call__(self, text: str) -> int:
        value = parse_memory(text)
        if not self.lo <= value <= self.hi:
            raise ConfigError(f"argument must be between {self.lo} and {self.hi} inclusive")
        return value


class Choice:
    """The parser of an enum option (one of `choices`, any case); a class for the same reason."""

    def __init__(self, *choices: str) -> None:
        self.choices = choices

    def __call__(self, text: str) -> str:
        low = text.lower()
        if low not in self.choices:
            raise ConfigError("argument(s) must be one of the following: "
                              + ", ".join(self.choices))
        return low


def _string(text: str) -> str:
    return text


def _replicaof(text: str) -> tuple[str, int] | None:
    """'host port' (a replica of that primary), or 'no one' / '' (a primary)."""
    words = text.split()
    if not words or [w.lower() for w in words] == ["no", "one"]:
        return None
    if len(words) != 2:
        raise ConfigError("wrong number of arguments")
    return words[0], _int_range(0, 65535)(words[1])


def _render_replicaof(value: tuple[str, int] | None) -> str:
    return "" if value is None else f"{value[0]} {value[1]}"


def _notify_flags(text: str) -> int:
    return notify.parse_flags(text)


def _render_notify_flags(flags: int) -> str:
    return notify.render_flags(flags)


def _save_rules(text: str) -> list[tuple[int, int]]:
    """'3600 1 300 100' -> [(3600, 1), (300, 100)]; '' disables snapshots on a timer."""
    parts = text.split()
    if len(parts) % 2:
        raise ConfigError("Invalid save parameters")
    try:
        rules = [(int(parts[i]), int(parts[i + 1])) for i in range(0, len(parts), 2)]
    except ValueError as exc:
        raise ConfigError("Invalid save parameters") from exc
    if any(s < 1 or c < 0 for s, c in rules):
        raise ConfigError("Invalid save parameters")
    return rules


def _render_save(rules: list[tuple[int, int]]) -> str:
    return " ".join(f"{s} {c}" for s, c in rules)


def _client_output_buffer_limit(text: str) -> dict[str, tuple[int, int, int]]:
    """'normal 0 0 0 pubsub 32mb 8mb 60' -> {class: (hard, soft, soft_seconds)}."""
    parts = text.split()
    if not parts or len(parts) % 4:
        raise ConfigError("Wrong number of arguments in buffer limit configuration.")
    limits: dict[str, tuple[int, int, int]] = {}
    for i in range(0, len(parts), 4):
        cls = parts[i].lower()
        if cls == "slave":
            cls = "replica"
        if cls not in ("normal", "replica", "pubsub"):
            raise ConfigError("Invalid client class specified in buffer limit configuration.")
        try:
            hard, soft = parse_memory(parts[i + 1]), parse_memory(parts[i + 2])
            secs = int(parts[i + 3])
        except (ConfigError, ValueError) as exc:
            raise ConfigError("Error in hard, soft or soft_seconds setting in buffer limit "
                              "configuration.") from exc
        limits[cls] = (hard, soft, secs)
    return limits


def _render_obl(limits: dict[str, tuple[int, int, int]]) -> str:
    # Redis still names the replica class "slave" here.
    return " ".join(f"{'slave' if cls == 'replica' else cls} {h} {s} {secs}"
                    for cls, (h, s, secs) in limits.items())


_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?inf(?:inity)?",
                      re.IGNORECASE)


def _percentiles(text: str) -> list[float]:
    """latency-tracking-info-percentiles: numbers in [0, 100] ("" for none), as strtold reads
    them (no spaces around, no NaN)."""
    values = []
    for word in text.split(" ") if text else []:
        if not _DECIMAL.fullmatch(word):
            raise ConfigError("Invalid latency-tracking-info-percentiles parameters")
        value = float(word)
        if not 0.0 <= value <= 100.0:
            raise ConfigError("latency-tracking-info-percentiles parameters should sit between "
                              "[0.0,100.0]")
        values.append(value)
    return values


def _render_percentiles(values: list[float]) -> str:
    return " ".join(map(format_percentile, values))


_OCTAL = re.compile(r"[ \t\n\v\f\r]*[+-]?[0-7]+")


def _octal_perm(text: str) -> int:
    """unixsocketperm, as strtoll reads base 8 with nothing allowed after the number (an
    empty value reads as 0), then 0 to 0777."""
    if not text:
        return 0
    if not _OCTAL.fullmatch(text):
        raise ConfigError("argument couldn't be parsed as an octal number")
    value = int(text.lstrip(" \t\n\v\f\r"), 8)
    if not 0 <= value <= 0o777:
        raise ConfigError("argument must be between 0 and 777 inclusive")
    return value


def _render_octal(value: int) -> str:
    return f"{value:o}"


def _shutdown_on_signal(text: str) -> int:
    try:
        return shutdown_flags.parse_option(text)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _hz(text: str) -> int:
    """Any int is accepted; the value is clamped to 1..500 (CONFIG_MIN_HZ/CONFIG_MAX_HZ)."""
    return min(500, max(1, _int_range(0, 2**31 - 1)(text)))


def _render_default(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    return str(value)


@dataclass(frozen=True, slots=True)
class OptionSpec:
    name: str
    default: Any
    parse: Callable[[str], Any]
    mutable: bool = True
    render: Callable[[Any], str] = _render_default
    aliases: tuple[str, ...] = ()


_MAX = 2**63 - 1

OPTIONS: list[OptionSpec] = [
    OptionSpec("port", 6379, _int_range(0, 65535), mutable=False),
    OptionSpec("bind", ["127.0.0.1"], lambda t: t.split(), mutable=False),
    OptionSpec("tcp-backlog", 511, _int_range(0, 2**31 - 1), mutable=False),
    # A Unix socket to listen on as well ("": none), and its file mode (0: as created).
    OptionSpec("unixsocket", "", _string, mutable=False),
    OptionSpec("unixsocketperm", 0, _octal_perm, mutable=False, render=_render_octal),
    OptionSpec("databases", 16, _int_range(1, 2**31 - 1), mutable=False),
    OptionSpec("requirepass", "", _string),
    OptionSpec("protected-mode", True, parse_bool),
    OptionSpec("loglevel", "notice", Choice("debug", "verbose", "notice", "warning", "nothing")),
    OptionSpec("logfile", "", _string, mutable=False),
    OptionSpec("dir", ".", _string),
    OptionSpec("maxclients", 10000, _int_range(1, 2**32 - 1)),
    OptionSpec("timeout", 0, _int_range(0, 2**31 - 1)),
    # Read by monitoring tools. One thread serves every client here, so 1 is the only value
    # (set at startup only, as in Redis).
    OptionSpec("io-threads", 1, _int_range(1, 1), mutable=False),
    OptionSpec("tcp-keepalive", 300, _int_range(0, 2**31 - 1)),
    OptionSpec("hz", 10, _hz),
    OptionSpec("daemonize", False, parse_bool, mutable=False),
    OptionSpec("pidfile", "", _string, mutable=False),
    OptionSpec("proto-max-bulk-len", 512 * 1024 * 1024, MemoryRange(1024 * 1024, _MAX)),
    OptionSpec("client-query-buffer-limit", 1024**3, MemoryRange(1024 * 1024, _MAX)),
    OptionSpec(
        "client-output-buffer-limit",
        {"normal": (0, 0, 0), "replica": (256 * 1024**2, 64 * 1024**2, 60),
         "pubsub": (32 * 1024**2, 8 * 1024**2, 60)},
        _client_output_buffer_limit,
        render=_render_obl,
    ),
    OptionSpec("maxmemory", 0, MemoryRange(0, _ULLONG_MAX)),
    OptionSpec(
        "maxmemory-policy", "noeviction",
        Choice("volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru",
              "allkeys-lfu", "allkeys-random", "noeviction"),
    ),
    OptionSpec("maxmemory-samples", 5, _int_range(1, 2**31 - 1)),
    OptionSpec("maxmemory-eviction-tenacity", 10, _int_range(0, 100)),
    OptionSpec("lfu-log-factor", 10, _int_range(0, 2**31 - 1)),
    OptionSpec("lfu-decay-time", 1, _int_range(0, 2**31 - 1)),
    OptionSpec("stream-node-max-bytes", 4096, MemoryRange(0, _MAX)),
    OptionSpec("stream-node-max-entries", 100, _int_range(0, _MAX)),
    # The bound of the cache of encoded stream nodes range reads are served from
    # (storage/stream_resp.py); 0 turns it off. Not a Redis option.
    OptionSpec("stream-reply-cache-max-bytes", 64 * 1024**2, MemoryRange(0, _MAX)),
    # Sealed stream nodes kept in memory at most; the oldest beyond it go to files under
    # dir (server/cold_tier.py, storage/cold). 0: all in memory, as Redis. Not a Redis option.
    OptionSpec("stream-hot-memory", 0, MemoryRange(0, _MAX)),
    # How often (in bytes of the AOF replayed) loading runs the work that cannot wait for it to
    # end (Redis processes events there; here the cold tier moves nodes out).
    OptionSpec("loading-process-events-interval-bytes", 2 * 1024**2, MemoryRange(1024, 2**31 - 1)),
    # Redis 8.6: the IDMP-DURATION (seconds) and IDMP-MAXSIZE a new stream starts with.
    OptionSpec("stream-idmp-duration", 100, _int_range(1, 86400)),
    OptionSpec("stream-idmp-maxsize", 100, _int_range(1, 10000)),
    OptionSpec("appendonly", True, parse_bool),
    OptionSpec("appendfilename", "appendonly.aof", _string, mutable=False),
    OptionSpec("appendfsync", "everysec", Choice("everysec", "always", "no")),
    OptionSpec("auto-aof-rewrite-percentage", 100, _int_range(0, 2**31 - 1)),
    OptionSpec("auto-aof-rewrite-min-size", 64 * 1024**2, MemoryRange(0, _MAX)),
    OptionSpec("aof-load-truncated", True, parse_bool),
    OptionSpec("appenddirname", "appendonlydir", _string, mutable=False),
    OptionSpec("aof-use-rdb-preamble", True, parse_bool),  # Redis's default since 5.0
    OptionSpec("rdb-key-save-delay", 0, _int_range(-(2**31), 2**31 - 1)),
    OptionSpec("save", [(3600, 1), (300, 100), (60, 10000)], _save_rules, render=_render_save),
    OptionSpec("dbfilename", "dump.rdb", _string),
    OptionSpec("stop-writes-on-bgsave-error", True, parse_bool),
    OptionSpec("slowlog-log-slower-than", 10000, _int_range(-1, _MAX)),
    OptionSpec("slowlog-max-len", 128, _int_range(0, 2**63 - 1)),
    OptionSpec("acllog-max-len", 128, _int_range(0, 2**63 - 1)),
    OptionSpec("aclfile", "", _string, mutable=False),
    # How long a script runs before the other clients are answered BUSY (0: never).
    OptionSpec("busy-reply-threshold", 5000, _int_range(0, 2**63 - 1),
               aliases=("lua-time-limit",)),
    OptionSpec("acl-pubsub-default", "resetchannels", Choice("allchannels", "resetchannels")),
    OptionSpec("latency-monitor-threshold", 0, _int_range(0, _MAX)),
    OptionSpec("latency-tracking", True, parse_bool),
    OptionSpec("latency-tracking-info-percentiles", [50.0, 99.0, 99.9], _percentiles,
               render=_render_percentiles),
    OptionSpec("tracking-table-max-keys", 1000000, _int_range(0, _MAX)),
    OptionSpec("notify-keyspace-events", 0, _notify_flags, render=_render_notify_flags),
    # Replication (server/replication). replicaof changes with REPLICAOF, not CONFIG SET.
    OptionSpec("replicaof", None, _replicaof, mutable=False, render=_render_replicaof,
               aliases=("slaveof",)),
    OptionSpec("masterauth", "", _string),
    OptionSpec("masteruser", "", _string),
    OptionSpec("repl-backlog-size", 1024 * 1024, MemoryRange(1, _MAX)),
    OptionSpec("repl-backlog-ttl", 3600, _int_range(0, 2**31 - 1)),
    OptionSpec("repl-diskless-sync", True, parse_bool),
    OptionSpec("repl-diskless-sync-delay", 5, _int_range(0, 2**31 - 1)),
    OptionSpec("repl-diskless-sync-max-replicas", 0, _int_range(0, 2**31 - 1)),
    OptionSpec("repl-diskless-load", "disabled", Choice("disabled", "on-empty-db", "swapdb")),
    OptionSpec("repl-ping-replica-period", 10, _int_range(1, 2**31 - 1),
               aliases=("repl-ping-slave-period",)),
    OptionSpec("repl-timeout", 60, _int_range(1, 2**31 - 1)),
    OptionSpec("repl-disable-tcp-nodelay", False, parse_bool),
    OptionSpec("min-replicas-to-write", 0, _int_range(0, 2**31 - 1),
               aliases=("min-slaves-to-write",)),
    OptionSpec("min-replicas-max-lag", 10, _int_range(0, 2**31 - 1),
               aliases=("min-slaves-max-lag",)),
    OptionSpec("replica-read-only", True, parse_bool, aliases=("slave-read-only",)),
    OptionSpec("replica-serve-stale-data", True, parse_bool,
               aliases=("slave-serve-stale-data",)),
    OptionSpec("replica-priority", 100, _int_range(0, 2**31 - 1), aliases=("slave-priority",)),
    OptionSpec("replica-announced", True, parse_bool),
    OptionSpec("replica-announce-ip", "", _string, aliases=("slave-announce-ip",)),
    OptionSpec("replica-announce-port", 0, _int_range(0, 65535),
               aliases=("slave-announce-port",)),
    OptionSpec("replica-lazy-flush", False, parse_bool, aliases=("slave-lazy-flush",)),
    OptionSpec("replica-ignore-maxmemory", True, parse_bool,
               aliases=("slave-ignore-maxmemory",)),
    OptionSpec("enable-debug-command", "no", Choice("no", "yes", "local"), mutable=False),
    # The SHUTDOWN flags a signal's shutdown takes (0: "default", as plain SHUTDOWN).
    OptionSpec("shutdown-on-sigint", 0, _shutdown_on_signal, render=shutdown_flags.render_option),
    OptionSpec("shutdown-on-sigterm", 0, _shutdown_on_signal, render=shutdown_flags.render_option),
]

_BY_NAME: dict[str, OptionSpec] = {}
for _spec in OPTIONS:
    _BY_NAME[_spec.name] = _spec
    for _alias in _spec.aliases:
        _BY_NAME[_alias] = _spec


class Config:
    """The live option values. Listeners registered per name run after a successful set."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {spec.name: spec.default for spec in OPTIONS}
        # The same dict, for hot paths that read an option per command (a plain dict lookup
        # instead of a method call); written only through set_from_text.
        self.values = self._values
        self._listeners: dict[str, list[Callable[[Any], None]]] = {}
        self.config_file = ""  # absolute path of the file read at start-up, if any
        # The `user` directives (ACL users), as (line number, line): loaded once the command
        # table exists (server/acl/access.py).
        self.user_lines: list[tuple[int, str]] = []

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def get(self, name: str) -> Any:
        return self._values[name]

    @staticmethod
    def spec(name: str) -> OptionSpec | None:
        return _BY_NAME.get(name.lower())

    def set_from_text(self, name: str, text: str, at_runtime: bool = False) -> None:
        spec = self.spec(name)
        if spec is None:
            raise ConfigError(f"Unknown option or number of arguments for CONFIG SET - '{name}'")
        if at_runtime and not spec.mutable:
            raise ConfigError("can't set immutable config")
        value = spec.parse(text)
        if spec.name == "client-output-buffer-limit":
            # Only the classes named change, as in Redis (CONFIG SET and file lines alike), so
            # a file's one line per class, as CONFIG REWRITE writes them, adds up.
            value = {**self._values[spec.name], **value}
        self._values[spec.name] = value
        for listener in self._listeners.get(spec.name, ()):
            listener(value)

    def set_internal(self, name: str, value: Any) -> None:
        """Set a value the server itself decides (REPLICAOF sets replicaof), listeners told."""
        spec = _BY_NAME[name]
        self._values[spec.name] = value
        for listener in self._listeners.get(spec.name, ()):
            listener(value)

    def on_change(self, name: str, listener: Callable[[Any], None]) -> None:
        self._listeners.setdefault(name, []).append(listener)

    def render(self, name: str) -> str:
        spec = _BY_NAME[name.lower()]
        return spec.render(self._values[spec.name])

    def matching(self, pattern: str) -> Iterable[str]:
        """Option names matching a CONFIG GET glob (Redis's glob rules), case-insensitively."""
        match = compile_glob(pattern.lower().encode())
        for spec in OPTIONS:
            for name in (spec.name, *spec.aliases):  # (an alias answers under its own name)
                if match(name.encode()):
                    yield name


class ConfigLine:
    """One directive: where it came from (for error messages), its name and its value."""

    __slots__ = ("lineno", "text", "name", "value")

    def __init__(self, lineno: int, text: str, name: str, value: str) -> None:
        self.lineno = lineno
        self.text = text
        self.name = name
        self.value = value


def split_config_line(line: str) -> list[str]:
    """A config line's words, quotes read as the loader reads them; ValueError when a quote is
    not closed."""
    return shlex.split(line, comments=False, posix=True)


def _split_line(line: str, lineno: int) -> list[str]:
    try:
        return split_config_line(line)
    except ValueError:
        raise _fatal(lineno, line, "Unbalanced quotes in configuration line") from None


def _fatal(lineno: int, text: str, reason: str) -> ConfigError:
    """Redis's start-up message for a bad directive (loadServerConfigFromString)."""
    return ConfigError(f"Reading the configuration file, at line {lineno}\n>>> '{text}'\n{reason}")


def parse_config_file(text: str, first_lineno: int = 1) -> list[ConfigLine]:
    """redis.conf lines: 'name value...' with quoting; comments and blank lines skipped."""
    lines: list[ConfigLine] = []
    for lineno, raw in enumerate(text.splitlines(), start=first_lineno):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = _split_line(line, lineno)
        if not words:
            continue
        lines.append(ConfigLine(lineno, line, words[0].lower(), " ".join(words[1:])))
    return lines


def parse_command_line(argv: list[str]) -> tuple[str | None, list[tuple[str, str]]]:
    """`[config-file] [--name value ...]` -> (file, pairs). A flag takes every word up to the next
    `--flag`, as redis-server does (`--save 60 1`)."""
    config_file = None
    rest = list(argv)
    if rest and not rest[0].startswith("--"):
        config_file = rest.pop(0)
    pairs: list[tuple[str, str]] = []
    i = 0
    while i < len(rest):
        word = rest[i]
        if not word.startswith("--") or len(word) == 2:
            raise ConfigError(f"Invalid option '{word}': options are --name value (see --help)")
        name = word[2:].lower()
        i += 1
        values: list[str] = []
        while i < len(rest) and not rest[i].startswith("--"):
            values.append(rest[i])
            i += 1
        pairs.append((name, " ".join(values)))
    return config_file, pairs


def _check_user_line(line: ConfigLine, seen: set[bytes]) -> None:
    """A `user` directive is checked as the file is read, as redis-server does."""
    words = [word.encode() for word in split_config_line(line.text)]
    if len(words) < 2:
        raise _fatal(line.lineno, line.text, "Bad directive or wrong number of arguments")
    problem = _user_line_check(words, seen) if _user_line_check is not None else None
    if problem is not None:
        index, reason = problem
        word = words[index].decode(errors="replace")
        raise _fatal(line.lineno, line.text, f"Error in user declaration '{word}': {reason}")


def load_config(argv: list[str]) -> Config:
    """Build a Config from the command line (and the file it names); raises ConfigError with
    Redis's "Reading the configuration file, at line N" message. Command-line options count
    as lines after the file's, as in redis-server."""
    config = Config()
    config_file, flag_pairs = parse_command_line(argv)
    lines: list[ConfigLine] = []
    if config_file is not None:
        try:
            with open(config_file, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise ConfigError(
                f"Fatal error, can't open config file '{config_file}': {exc.strerror}") from exc
        config.config_file = os.path.abspath(config_file)
        lines = parse_config_file(text)
    next_line = (lines[-1].lineno if lines else 0) + 1
    for offset, (name, value) in enumerate(flag_pairs):
        lines.append(ConfigLine(next_line + offset, f"{name} {value}".strip(), name, value))
    save_seen = False
    users_seen: set[bytes] = set()
    for line in lines:
        if line.name == "user":
            _check_user_line(line, users_seen)
            config.user_lines.append((line.lineno, line.text))
            continue
        spec = config.spec(line.name)
        if spec is None:
            raise _fatal(line.lineno, line.text, "Bad directive or wrong number of arguments")
        try:
            if spec.name == "save":
                # Multiple save directives accumulate; the first one replaces the defaults,
                # and `save ""` clears every rule so far (as in redis-server).
                rules = _save_rules(line.value)
                base = config["save"] if save_seen and rules else []
                config._values["save"] = base + rules
                save_seen = True
            else:
                config.set_from_text(spec.name, line.value)
        except ConfigError as exc:
            raise _fatal(line.lineno, line.text, str(exc)) from None
    return config
