"""Option parsing.

Spark hands a data source its options as strings in a case-insensitive dict. They are
parsed once into small plain objects (tuples, strings, numbers) that pickle cheaply to
executors. Connections are never pickled: ``connect`` opens them where they are used.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from spark_connector import ids

DEFAULT_READ_COUNT = 2000
DEFAULT_WRITE_BATCH = 1000
DEFAULT_METADATA_COLUMNS = ("stream", "id", "ts", "fields")
DEFAULT_SENTINEL_PORT = 26379
DEFAULT_RETRY_TIMEOUT = 60.0  # seconds, with sentinels (without them: 0, no retries)
DEFAULT_REPLICA_WAIT_TIMEOUT = 5.0  # seconds
DEFAULT_WAIT_TIMEOUT_MS = 5000

# readFrom values
PRIMARY = "primary"
REPLICA = "replica"
PREFER_REPLICA = "preferReplica"
READ_FROM = (PRIMARY, REPLICA, PREFER_REPLICA)

Address = tuple[str, int]


class OptionError(ValueError):
    """An option is missing, unknown in this context or has a bad value."""


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items() if v is not None}


def _bool(opts: dict[str, str], name: str, default: bool) -> bool:
    raw = opts.get(name.lower())
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in ("true", "1", "yes", "on"):
        return True
    if value in ("false", "0", "no", "off"):
        return False
    raise OptionError(f"option {name} must be true or false, got {raw!r}")


def _int(opts: dict[str, str], name: str, default: int | None, minimum: int = 1) -> int | None:
    raw = opts.get(name.lower())
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise OptionError(f"option {name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise OptionError(f"option {name} must be >= {minimum}, got {value}")
    return value


def _seconds(opts: dict[str, str], name: str, default: float) -> float:
    raw = opts.get(name.lower())
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise OptionError(f"option {name} must be a number of seconds, got {raw!r}") from None
    if not value >= 0:  # (also refuses nan)
        raise OptionError(f"option {name} must be >= 0, got {raw!r}")
    return value


def _list(raw: str | None) -> list[str]:
    if not raw:
        return []
    return [part.strip() for part in raw.split(",") if part.strip()]


def parse_addresses(raw: str | None, name: str, default_port: int) -> tuple[Address, ...]:
    """``host:port,host:port`` (``[v6 address]:port``; a missing port is ``default_port``)."""
    out: list[Address] = []
    for part in _list(raw):
        host, port_text = part, ""
        if part.startswith("["):
            host, _, rest = part[1:].partition("]")
            if rest and not rest.startswith(":"):
                raise OptionError(f"option {name}: bad address {part!r}")
            port_text = rest[1:]
        elif part.count(":") == 1:
            host, _, port_text = part.partition(":")
        elif ":" in part:
            raise OptionError(f"option {name}: write an IPv6 address as [addr]:port, got {part!r}")
        try:
            port = int(port_text) if port_text else default_port
        except ValueError:
            raise OptionError(f"option {name}: bad port in {part!r}") from None
        if not host or not 0 < port < 65536:
            raise OptionError(f"option {name}: bad address {part!r} (want host:port)")
        out.append((host, port))
    if raw is not None and not out:
        raise OptionError(f"option {name} is empty (want host:port,host:port...)")
    return tuple(out)


@dataclass(frozen=True)
class ConnOptions:
    """How to reach the primary: ``host``/``port`` (or a Unix socket), or through Sentinel.

    With ``sentinels`` every connection asks Sentinel for the current primary of
    ``sentinel_master``; operations that fail with a connection error (or READONLY, when
    the primary was demoted) are retried against the newly resolved primary for up to
    ``retry_timeout`` seconds.
    """

    host: str = "localhost"
    port: int = 6379
    db: int = 0
    username: str | None = None
    password: str | None = None
    timeout: float = 30.0
    unix_path: str | None = None  # a Unix socket's path (option unixSocket), instead of host, port
    sentinels: tuple[Address, ...] = ()
    sentinel_master: str | None = None
    sentinel_username: str | None = None
    sentinel_password: str | None = None
    retry_timeout: float = 0.0

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ConnOptions:
        opts = _lower(options)
        try:
            timeout = float(opts.get("timeout", "30"))
        except ValueError:
            raise OptionError(f"option timeout must be a number, got {opts['timeout']!r}") from None
        sentinels = parse_addresses(opts.get("sentinels"), "sentinels", DEFAULT_SENTINEL_PORT)
        master = opts.get("sentinelmaster") or None
        sentinel_username = opts.get("sentinelusername") or None
        sentinel_password = opts.get("sentinelpassword") or None
        if sentinels:
            if master is None:
                raise OptionError(
                    "option sentinels needs option sentinelMaster: the name Sentinel monitors "
                    "the primary under (sentinel monitor <name> ...)"
                )
            direct = [name for name in ("host", "port", "unixSocket") if name.lower() in opts]
            if direct:
                raise OptionError(
                    f"with option sentinels the primary is found through Sentinel: "
                    f"do not set {', '.join(direct)}"
                )
        else:
            stray = [
                name
                for name, value in (
                    ("sentinelMaster", master),
                    ("sentinelUsername", sentinel_username),
                    ("sentinelPassword", sentinel_password),
                )
                if value is not None
            ]
            if stray:
                raise OptionError(
                    f"option {stray[0]} needs option sentinels (host:port,... of the Sentinels)"
                )
        default_retry = DEFAULT_RETRY_TIMEOUT if sentinels else 0.0
        return cls(
            host=opts.get("host", "localhost"),
            port=_int(opts, "port", 6379) or 6379,
            db=_int(opts, "db", 0, minimum=0) or 0,
            username=opts.get("username") or None,
            password=opts.get("password") or None,
            timeout=timeout,
            unix_path=opts.get("unixsocket") or None,
            sentinels=sentinels,
            sentinel_master=master,
            sentinel_username=sentinel_username,
            sentinel_password=sentinel_password,
            retry_timeout=_seconds(opts, "retryTimeout", default_retry),
        )

    def describe(self) -> str:
        """Where the primary is, for messages."""
        if self.sentinels:
            where = ",".join(f"{h}:{p}" for h, p in self.sentinels)
            return f"the primary {self.sentinel_master!r} of Sentinel {where}"
        if self.unix_path:
            return f"{self.unix_path} (unix socket)"
        return f"{self.host}:{self.port}"


def _read_from(opts: dict[str, str]) -> str:
    raw = opts.get("readfrom")
    if raw is None or not raw.strip():
        return PRIMARY
    for value in READ_FROM:
        if raw.strip().lower() == value.lower():
            return value
    raise OptionError(f"option readFrom must be primary, replica or preferReplica, got {raw!r}")


def _no_read_routing(opts: dict[str, str]) -> None:
    """Writes go to the primary: refuse the read-routing options there."""
    for name in ("readFrom", "replicas", "replicaWaitTimeout"):
        if name.lower() in opts and not (name == "readFrom" and _read_from(opts) == PRIMARY):
            raise OptionError(f"option {name} is for reads: writes always go to the primary")


@dataclass(frozen=True)
class ReadOptions:
    conn: ConnOptions
    streams: tuple[str, ...]
    starting_offsets: str
    ending_offsets: str
    max_records_per_batch: int | None
    partitions_per_stream: int
    fail_on_data_loss: bool
    read_count: int
    group: str | None
    consumer: str | None
    metadata_columns: frozenset[str] = field(default_factory=frozenset)
    read_from: str = PRIMARY  # where partitions read: PRIMARY, REPLICA or PREFER_REPLICA
    replicas: tuple[Address, ...] = ()  # explicit replicas (without sentinels)
    replica_wait_timeout: float = DEFAULT_REPLICA_WAIT_TIMEOUT

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
        opts = _lower(options)
        starting = opts.get("startingoffsets", "latest" if streaming else "earliest").strip()
        ending = opts.get("endingoffsets", "latest").strip()
        streams = _list(opts.get("streams")) or _list(opts.get("path"))
        if not streams and starting.startswith("{"):
            streams = list(parse_offsets_json(starting, "startingOffsets"))
        if not streams:
            raise OptionError("option streams (a comma-separated list of stream keys) is required")
        if len(set(streams)) != len(streams):
            raise OptionError(f"option streams lists a stream twice: {streams}")
        _check_offsets_spec(starting, "startingOffsets", streams)
        _check_offsets_spec(ending, "endingOffsets", streams)
        if streaming and "endingoffsets" in opts:
            raise OptionError("endingOffsets is only valid for batch reads")
        group = opts.get("group") or None
        consumer = opts.get("consumer") or None
        if consumer and not group:
            raise OptionError("option consumer needs option group")
        if group and not streaming:
            raise OptionError("consumer-group mode (option group) is only for streaming reads")
        if group and consumer is None:
            consumer = "spark"
        meta_raw = opts.get("metadatacolumns")
        meta = DEFAULT_METADATA_COLUMNS if meta_raw is None else tuple(_list(meta_raw))
        unknown = set(meta) - set(DEFAULT_METADATA_COLUMNS)
        if unknown:
            raise OptionError(f"metadataColumns may only name {DEFAULT_METADATA_COLUMNS}")
        for name in ("waitReplicas", "waitTimeout"):
            if name.lower() in opts:
                raise OptionError(f"option {name} is for writes")
        conn = ConnOptions.parse(options)
        read_from = _read_from(opts)
        replicas = parse_addresses(opts.get("replicas"), "replicas", 6379)
        if read_from != PRIMARY:
            if group:
                raise OptionError(
                    "consumer-group mode reads from the primary (XREADGROUP changes the "
                    "group): readFrom must be primary with option group"
                )
            if not conn.sentinels and not replicas:
                raise OptionError(
                    f"readFrom={read_from} needs replicas to read from: set option sentinels "
                    "(replicas are found through Sentinel) or option replicas (host:port,...)"
                )
        if replicas:
            if conn.sentinels:
                raise OptionError(
                    "options sentinels and replicas are exclusive: with sentinels the "
                    "replicas are found through Sentinel"
                )
            if read_from == PRIMARY:
                raise OptionError(
                    "option replicas is only used with readFrom=replica or preferReplica"
                )
        return cls(
            conn=conn,
            streams=tuple(streams),
            starting_offsets=starting,
            ending_offsets=ending,
            max_records_per_batch=_int(opts, "maxRecordsPerBatch", None),
            partitions_per_stream=_int(opts, "partitionsPerStream", 1) or 1,
            fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
            read_count=_int(opts, "readCount", DEFAULT_READ_COUNT) or DEFAULT_READ_COUNT,
            group=group,
            consumer=consumer,
            metadata_columns=frozenset(meta),
            read_from=read_from,
            replicas=replicas,
            replica_wait_timeout=_seconds(
                opts, "replicaWaitTimeout", DEFAULT_REPLICA_WAIT_TIMEOUT
            ),
        )


SPECIAL_OFFSETS = ("earliest", "latest")


def parse_offsets_json(text: str, name: str) -> dict[str, str]:
    """``{"stream": "id" | "earliest" | "latest"}`` with IDs normalized to ``ms-seq``."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OptionError(f"{name} is not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise OptionError(f"{name} JSON must be an object of stream -> ID")
    out: dict[str, str] = {}
    for key, value in raw.items():
        value = str(value).strip()
        if value.lower() in SPECIAL_OFFSETS:
            out[str(key)] = value.lower()
            continue
        if value == "$":
            out[str(key)] = "latest"
            continue
        if value == "-":
            out[str(key)] = "earliest"
            continue
        try:
            out[str(key)] = ids.normalize(value)
        except ValueError:
            raise OptionError(f"{name}: bad ID {value!r} for stream {key!r}") from None
    return out


def _check_offsets_spec(text: str, name: str, streams: list[str]) -> None:
    if text.lower() in SPECIAL_OFFSETS:
        return
    if not text.startswith("{"):
        raise OptionError(f"{name} must be earliest, latest or a JSON object, got {text!r}")
    extra = set(parse_offsets_json(text, name)) - set(streams)
    if extra:
        raise OptionError(f"{name} names streams not in option streams: {sorted(extra)}")


@dataclass(frozen=True)
class WriteOptions:
    conn: ConnOptions
    stream: str | None
    stream_column: str
    id_column: str | None
    drop_columns: tuple[str, ...]
    batch_size: int
    maxlen: int | None
    minid: str | None
    approximate: bool
    idempotent: bool
    wait_replicas: int = 0  # WAIT for this many replicas after each write (0: do not wait)
    wait_timeout_ms: int = DEFAULT_WAIT_TIMEOUT_MS

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> WriteOptions:
        opts = _lower(options)
        _no_read_routing(opts)
        maxlen = _int(opts, "maxlen", None, minimum=0)
        minid = opts.get("minid") or None
        if maxlen is not None and minid is not None:
            raise OptionError("options maxlen and minid are mutually exclusive")
        if minid is not None:
            try:
                minid = ids.normalize(minid)
            except ValueError:
                raise OptionError(f"option minid is not a stream ID: {minid!r}") from None
        return cls(
            conn=ConnOptions.parse(options),
            stream=opts.get("stream") or opts.get("path") or None,
            stream_column=opts.get("streamcolumn", "stream"),
            id_column=opts.get("idcolumn") or None,
            drop_columns=tuple(_list(opts.get("dropcolumns"))),
            batch_size=_int(opts, "batchSize", DEFAULT_WRITE_BATCH) or DEFAULT_WRITE_BATCH,
            maxlen=maxlen,
            minid=minid,
            approximate=_bool(opts, "approximate", True),
            idempotent=_bool(opts, "idempotent", streaming),
            wait_replicas=_int(opts, "waitReplicas", 0, minimum=0) or 0,
            wait_timeout_ms=(
                _int(opts, "waitTimeout", DEFAULT_WAIT_TIMEOUT_MS)
                or DEFAULT_WAIT_TIMEOUT_MS
            ),
        )

    def trim_args(self) -> list[str | int]:
        """The MAXLEN/MINID arguments every XADD of this write carries."""
        approx = ["~"] if self.approximate else []
        if self.maxlen is not None:
            return ["MAXLEN", *approx, self.maxlen]
        if self.minid is not None:
            return ["MINID", *approx, self.minid]
        return []
