"""Raw stream entries -> Arrow record batches in the read schema.

Default schema: ``stream string, id string, ts timestamp, fields map<string,string>``.
With a user schema, the metadata columns (``stream``, ``id``, ``ts``, ``fields`` unless
``metadataColumns`` says otherwise) keep that meaning and every other column is the
entry field of the same name, cast to the column's type; a missing field, or a value
that does not parse as the type, is null.

Batches are built column by column with pyarrow, which is much cheaper than handing
Spark one Python tuple per row.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable, Sequence
from itertools import accumulate, chain
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from spark_connector.streams import RawEntry

DEFAULT_SCHEMA = StructType(
    [
        StructField("stream", StringType(), True),
        StructField("id", StringType(), True),
        StructField("ts", TimestampType(), True),
        StructField("fields", MapType(StringType(), StringType(), True), True),
    ]
)

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_TRUE = frozenset((b"1", b"true", b"t", b"yes", b"y", b"on"))
_FALSE = frozenset((b"0", b"false", b"f", b"no", b"n", b"off"))
_INT_BOUNDS = {
    ByteType: 1 << 7,
    ShortType: 1 << 15,
    IntegerType: 1 << 31,
    LongType: 1 << 63,
}


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _int_caster(bound: int) -> Callable[[bytes], int | None]:
    def cast(raw: bytes) -> int | None:
        try:
            value = int(raw)
        except ValueError:
            try:
                value = int(float(raw))  # "3.0" -> 3, as Spark's cast does
            except (ValueError, OverflowError):
                return None
        return value if -bound <= value < bound else None

    return cast


def _float(raw: bytes) -> float | None:
    try:
        return float(raw)
    except ValueError:
        return None


def _bool(raw: bytes) -> bool | None:
    lowered = raw.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    return None


def _decimal_caster(dtype: DecimalType) -> Callable[[bytes], decimal.Decimal | None]:
    quantum = decimal.Decimal(1).scaleb(-dtype.scale)
    limit = decimal.Decimal(10) ** (dtype.precision - dtype.scale)

    def cast(raw: bytes) -> decimal.Decimal | None:
        try:
            value = decimal.Decimal(_text(raw)).quantize(quantum, decimal.ROUND_HALF_UP)
        except (decimal.InvalidOperation, ValueError):
            return None
        return value if value.is_finite() and abs(value) < limit else None

    return cast


def _date(raw: bytes) -> dt.date | None:
    try:
        return dt.date.fromisoformat(_text(raw).strip()[:10])
    except ValueError:
        return None


def _timestamp_micros(raw: bytes) -> int | None:
    """ISO-8601 text (UTC when it names no zone) or epoch seconds, as Spark casts."""
    text = _text(raw).strip()
    try:
        return round(float(text) * 1_000_000)
    except ValueError:
        pass
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    delta = parsed - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def field_caster(dtype: DataType) -> Callable[[bytes], Any]:
    """The function that turns a raw field value into a value of ``dtype``."""
    if isinstance(dtype, StringType):
        return _text
    if isinstance(dtype, BinaryType):
        return bytes
    if isinstance(dtype, BooleanType):
        return _bool
    for kind, bound in _INT_BOUNDS.items():
        if isinstance(dtype, kind):
            return _int_caster(bound)
    if isinstance(dtype, (FloatType, DoubleType)):
        return _float
    if isinstance(dtype, DecimalType):
        return _decimal_caster(dtype)
    if isinstance(dtype, DateType):
        return _date
    if isinstance(dtype, (TimestampType, TimestampNTZType)):
        return _timestamp_micros
    raise TypeError(f"xstream cannot read a field as {dtype.simpleString()}")


def _strings(values: Sequence[bytes | str]) -> pa.Array:
    try:
        return pa.array(values, pa.string())
    except pa.ArrowInvalid:  # invalid UTF-8 somewhere: replace it, value by value
        return pa.array(
            [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in values],
            pa.string(),
        )


def _id_ms(id_array: pa.Array, raw_ids: Sequence[bytes]) -> pa.Array:
    """The millisecond part of each ID (null where it does not fit a signed long)."""
    try:
        return pc.cast(pc.list_element(pc.split_pattern(id_array, "-"), 0), pa.int64())
    except (pa.ArrowInvalid, OverflowError):
        values = (int(raw.split(b"-", 1)[0]) for raw in raw_ids)
        return pa.array([v if v < (1 << 63) else None for v in values], pa.int64())


def _id_timestamps(ms: pa.Array, arrow_type: pa.DataType) -> pa.Array:
    try:
        return pc.multiply_checked(ms, 1000).cast(arrow_type)
    except (pa.ArrowInvalid, OverflowError):  # an ID past what a timestamp can hold
        values = ms.to_pylist()
        micros = [v * 1000 if v is not None and v * 1000 < (1 << 63) else None for v in values]
        return pa.array(micros, pa.int64()).cast(arrow_type)


def _fields_map(entries: Sequence[RawEntry], map_type: pa.DataType) -> pa.Array:
    flats = [entry[1] for entry in entries]
    pairs = list(chain.from_iterable(flats))  # field, value, field, value, ...
    # offsets into the pair list, halved: entry i owns map items offsets[i]..offsets[i+1]
    ends = pa.array(list(accumulate(map(len, flats), initial=0)), pa.int32())
    return pa.MapArray.from_arrays(
        pc.shift_right(ends, 1), _strings(pairs[0::2]), _strings(pairs[1::2]), type=map_type
    )


class BatchBuilder:
    """Builds Arrow record batches for one read schema (picklable; create anywhere)."""

    def __init__(self, schema: StructType, metadata_columns: frozenset[str]) -> None:
        self.schema = schema
        self.metadata = metadata_columns
        self._arrow: pa.Schema | None = None
        for fld in schema.fields:
            self._check(fld)

    def _check(self, fld: StructField) -> None:
        kind = self._meta_kind(fld.name)
        if kind in ("stream", "id") and not isinstance(fld.dataType, StringType):
            raise TypeError(f"metadata column {fld.name} must be a string")
        ts_types = (TimestampType, TimestampNTZType, LongType)
        if kind == "ts" and not isinstance(fld.dataType, ts_types):
            raise TypeError("metadata column ts must be a timestamp or a long (milliseconds)")
        if kind == "fields" and not (
            isinstance(fld.dataType, MapType)
            and isinstance(fld.dataType.keyType, StringType)
            and isinstance(fld.dataType.valueType, StringType)
        ):
            raise TypeError("metadata column fields must be a map<string,string>")
        if kind is None:
            field_caster(fld.dataType)  # raises for unsupported types

    def _meta_kind(self, name: str) -> str | None:
        return name if name in self.metadata else None

    @property
    def arrow_schema(self) -> pa.Schema:
        if self._arrow is None:
            self._arrow = to_arrow_schema(self.schema, timezone="UTC")
        return self._arrow

    def __getstate__(self) -> dict[str, Any]:
        return {"schema": self.schema, "metadata": self.metadata, "_arrow": None}

    def build(self, stream: str, entries: Sequence[RawEntry]) -> pa.RecordBatch:
        schema = self.arrow_schema
        raw_ids = [entry[0] for entry in entries]
        id_array = _strings(raw_ids)
        columns: list[pa.Array] = []
        records: list[dict[bytes, bytes]] | None = None
        for fld, arrow_field in zip(self.schema.fields, schema, strict=True):
            kind = self._meta_kind(fld.name)
            if kind == "stream":
                columns.append(pa.array([stream] * len(entries), pa.string()))
            elif kind == "id":
                columns.append(id_array)
            elif kind == "ts":
                ms = _id_ms(id_array, raw_ids)
                if isinstance(fld.dataType, LongType):
                    columns.append(ms)
                else:
                    columns.append(_id_timestamps(ms, arrow_field.type))
            elif kind == "fields":
                columns.append(_fields_map(entries, arrow_field.type))
            else:
                if records is None:
                    records = [dict(zip(e[1][0::2], e[1][1::2], strict=True)) for e in entries]
                name = fld.name.encode()
                cast = field_caster(fld.dataType)
                values = []
                for record in records:
                    raw = record.get(name)
                    values.append(None if raw is None else cast(raw))
                columns.append(pa.array(values, arrow_field.type))
        return pa.RecordBatch.from_arrays(columns, schema=schema)
