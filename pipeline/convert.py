"""Raw XRANGE pages -> Arrow record batches in the DataFrame's schema (the read hot path).

Read tasks yield `pyarrow.RecordBatch`es, which PySpark passes to the JVM as they are, instead of
Python tuples it would convert row by row.  A page is turned into columns with list
comprehensions and C-level Arrow casts: IDs and field names/values arrive as bytes and are cast to
UTF-8 strings in one validation pass; the field pairs of all entries become one Arrow map array
(flat keys, flat values, offsets), and projected fields are looked up in it with `map_lookup`.
Only when a cast fails (invalid UTF-8, a value that does not parse as the column's type) does a
page take the per-value Python path: undecodable bytes become U+FFFD, unparsable values NULL, as
Spark's permissive readers do.

Default schema: stream, id, ms, seq, fields (MAP<STRING,STRING>).  A user schema may contain any
of those five names (filled from the entry; `ms` may be TIMESTAMP to get the ID's time as a
timestamp) and any other column of an atomic type, filled from the entry field of the same name.
"""

from __future__ import annotations

import datetime
import decimal
from itertools import accumulate, chain

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    AtomicType,
    BinaryType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

DEFAULT_SCHEMA = StructType([
    StructField("stream", StringType(), False),
    StructField("id", StringType(), False),
    StructField("ms", LongType(), False),
    StructField("seq", LongType(), False),
    StructField("fields", MapType(StringType(), StringType(), True), False),
])

META_TYPES = {
    "stream": (StringType,),
    "id": (StringType,),
    "ms": (LongType, TimestampType),
    "seq": (LongType,),
    "fields": (MapType,),
}


def validate_schema(schema: StructType) -> None:
    """Reject schemas the reader cannot fill, on the driver, with a message naming the column."""
    for f in schema.fields:
        allowed = META_TYPES.get(f.name)
        if allowed is not None:
            if not isinstance(f.dataType, allowed):
                raise ValueError(f"column {f.name!r} must be of type "
                                 f"{' or '.join(t.typeName() for t in allowed)}, got {f.dataType.simpleString()}")
            if isinstance(f.dataType, MapType) and f.dataType != DEFAULT_SCHEMA["fields"].dataType:
                raise ValueError("column 'fields' must be MAP<STRING,STRING>")
        elif not isinstance(f.dataType, AtomicType):
            raise ValueError(f"column {f.name!r}: only atomic types (string, numbers, boolean, date, "
                             f"timestamp, decimal, binary) can be read from entry fields, "
                             f"got {f.dataType.simpleString()}")


class PageConverter:
    """Builds record batches for one schema; one instance per read task."""

    def __init__(self, schema: StructType) -> None:
        self.schema = schema
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self.map_type = to_arrow_schema(DEFAULT_SCHEMA, timezone="UTC").field("fields").type
        self.need_map = any(f.name not in ("stream", "id", "ms", "seq") for f in schema.fields)
        self.need_ms_seq = any(f.name in ("ms", "seq") for f in schema.fields)
        self.raw_map_type = pa.map_(pa.string(), pa.binary())
        self.need_raw = any(isinstance(f.dataType, BinaryType) and f.name not in META_TYPES
                            for f in schema.fields)

    def convert(self, stream: str, page: list) -> pa.RecordBatch:
        n = len(page)
        raw_map = None
        ids_bin = pa.array([e[0] for e in page], pa.binary())
        id_str = ids_bin.cast(pa.string())  # IDs are ASCII digits: always valid
        fields_map = self._fields_map(page) if self.need_map else None
        ms = seq = None
        if self.need_ms_seq:
            ms, seq = _split_ids(id_str)
        columns = []
        for f, target in zip(self.schema.fields, self.arrow_schema.types, strict=True):
            name = f.name
            if name == "stream":
                columns.append(pa.repeat(pa.scalar(stream, pa.string()), n))
            elif name == "id":
                columns.append(id_str)
            elif name == "ms":
                columns.append(ms if not isinstance(f.dataType, TimestampType)
                               else pc.multiply(ms, 1000).cast(target))
            elif name == "seq":
                columns.append(seq)
            elif name == "fields":
                columns.append(fields_map)
            elif isinstance(f.dataType, BinaryType):  # the field's bytes as they are
                if raw_map is None:
                    raw_map = self._fields_map(page, raw=True)
                columns.append(pc.map_lookup(raw_map, pa.scalar(name, pa.string()), "last"))
            else:
                values = pc.map_lookup(fields_map, pa.scalar(name, pa.string()), "last")
                columns.append(_cast_permissive(values, target, f.dataType))
        return pa.RecordBatch.from_arrays(columns, schema=self.arrow_schema)

    def _fields_map(self, page: list, raw: bool = False) -> pa.MapArray:
        flat = list(chain.from_iterable(e[1] for e in page))
        offsets = pa.array(list(accumulate((len(e[1]) >> 1 for e in page), initial=0)), pa.int32())
        keys = _utf8(flat[0::2])
        if raw:
            return pa.MapArray.from_arrays(offsets, keys, pa.array(flat[1::2], pa.binary()),
                                           type=self.raw_map_type)
        return pa.MapArray.from_arrays(offsets, keys, _utf8(flat[1::2]), type=self.map_type)


def _utf8(items: list) -> pa.Array:
    try:
        return pa.array(items, pa.binary()).cast(pa.string())
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return pa.array([b.decode("utf-8", "replace") for b in items], pa.string())


def _split_ids(id_str: pa.Array) -> tuple[pa.Array, pa.Array]:
    parts = pc.split_pattern(id_str, "-")
    try:
        return (pc.list_element(parts, 0).cast(pa.int64()), pc.list_element(parts, 1).cast(pa.int64()))
    except pa.ArrowInvalid:  # a part above 2**63-1 (only possible with explicit IDs): NULL
        def part(i: int) -> pa.Array:
            values = [int(p) for p in pc.list_element(parts, i).to_pylist()]
            return pa.array([v if v < 1 << 63 else None for v in values], pa.int64())
        return part(0), part(1)


def _cast_permissive(values: pa.Array, target: pa.DataType, spark_type) -> pa.Array:
    if target == pa.string():
        return values
    try:
        return values.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([_coerce(v, spark_type) for v in values.to_pylist()], target)


def _coerce(value: str | None, spark_type) -> object:
    """One value the vectorised cast rejected: parse it leniently, NULL when it cannot be."""
    if value is None:
        return None
    text = value.strip()
    name = spark_type.typeName()
    try:
        if name in ("byte", "short", "integer", "long"):
            number = int(float(text)) if any(c in text for c in ".eE") else int(text)
            bits = {"byte": 8, "short": 16, "integer": 32, "long": 64}[name]
            return number if -(1 << (bits - 1)) <= number < 1 << (bits - 1) else None
        if name in ("float", "double"):
            return float(text)
        if name == "boolean":
            lowered = text.lower()
            return True if lowered in ("true", "t", "1", "yes", "y") else (
                False if lowered in ("false", "f", "0", "no", "n") else None)
        if name == "decimal":
            return decimal.Decimal(text)
        if name in ("timestamp", "timestamp_ntz"):
            if text.lstrip("-").replace(".", "", 1).isdigit():  # epoch milliseconds
                moment = datetime.datetime.fromtimestamp(float(text) / 1000, datetime.UTC)
            else:
                moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
                if moment.tzinfo is None:
                    moment = moment.replace(tzinfo=datetime.UTC)
            return moment if name == "timestamp" else moment.replace(tzinfo=None)
        if name == "date":
            return datetime.date.fromisoformat(text[:10])
    except (ValueError, ArithmeticError, OverflowError):
        return None
    return None

