"""Option parsing and connections.

Spark hands a data source its options as strings in a case-insensitive dict. They are
parsed once into small plain objects that pickle cheaply to executors. Connections are
never pickled: ``client()`` creates one per process on first use and caches it.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

import redis

from spark_connector import ids

DEFAULT_READ_COUNT = 2000
DEFAULT_WRITE_BATCH = 1000
DEFAULT_METADATA_COLUMNS = ("stream", "id", "ts", "fields")


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


def _list(raw: str | None) -> list[str]:
    if not raw:
        return []
    return [part.strip() for part in raw.split(",") if part.strip()]


@dataclass(frozen=True)
class ConnOptions:
    host: str = "localhost"
    port: int = 6379
    db: int = 0
    username: str | None = None
    password: str | None = None
    timeout: float = 30.0
    unix_path: str | None = None  # a Unix socket's path (option unixSocket), instead of host, port

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ConnOptions:
        opts = _lower(options)
        try:
            timeout = float(opts.get("timeout", "30"))
        except ValueError:
            raise OptionError(f"option timeout must be a number, got {opts['timeout']!r}") from None
        return cls(
            host=opts.get("host", "localhost"),
            port=_int(opts, "port", 6379) or 6379,
            db=_int(opts, "db", 0, minimum=0) or 0,
            username=opts.get("username") or None,
            password=opts.get("password") or None,
            timeout=timeout,
            unix_path=opts.get("unixsocket") or None,
        )


_clients: dict[tuple[int, ConnOptions], redis.Redis] = {}
_clients_lock = threading.Lock()


def client(conn: ConnOptions) -> redis.Redis:
    """A cached redis-py client for this process that returns raw RESP2 replies.

    RESP2 is pinned (newer redis-py defaults to RESP3) and response callbacks are
    cleared, so every command returns the server's reply as is (bytes, lists, None),
    which keeps parsing explicit and cheap.
    """
    key = (os.getpid(), conn)
    with _clients_lock:
        found = _clients.get(key)
        if found is None:
            found = redis.Redis(
                host=conn.host,
                port=conn.port,
                unix_socket_path=conn.unix_path,  # (when set, host and port go unused)
                db=conn.db,
                username=conn.username,
                password=conn.password,
                socket_timeout=conn.timeout,
                socket_connect_timeout=conn.timeout,
                decode_responses=False,
                protocol=2,
            )
            found.response_callbacks.clear()
            _clients[key] = found
        return found


def close_clients() -> None:
    """Close every client this process opened (used by stop() and tests)."""
    with _clients_lock:
        for found in _clients.values():
            try:
                found.close()
            except Exception:  # closing is best effort
                pass
        _clients.clear()


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
        return cls(
            conn=ConnOptions.parse(options),
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

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> WriteOptions:
        opts = _lower(options)
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
        )

    def trim_args(self) -> list[str | int]:
        """The MAXLEN/MINID arguments every XADD of this write carries."""
        approx = ["~"] if self.approximate else []
        if self.maxlen is not None:
            return ["MAXLEN", *approx, self.maxlen]
        if self.minid is not None:
            return ["MINID", *approx, self.minid]
        return []
