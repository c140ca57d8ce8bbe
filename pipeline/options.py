"""Parsing and validation of the data source options (`.option(name, value)`), all in one place.

Spark hands options over as strings in a case-insensitive mapping; everything here turns them into
frozen dataclasses of plain values once, on the driver, so a bad option fails the query before any
task runs and the objects pickled to executors carry no Spark types.  Option names and defaults are
documented in pipeline/README.md; `OptionError` messages name the option at fault.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from raxdb.spark import ids


class OptionError(ValueError):
    """An option is missing, unknown in this context or has a malformed value."""


class Options:
    """Case-insensitive read access to string options with typed getters."""

    def __init__(self, raw: Mapping[str, str]) -> None:
        self._raw = {str(k).lower(): v for k, v in raw.items()}

    def get(self, name: str, default: str | None = None) -> str | None:
        value = self._raw.get(name.lower())
        return default if value is None else str(value)

    def has(self, name: str) -> bool:
        return name.lower() in self._raw

    def int(self, name: str, default: int | None = None, minimum: int | None = None) -> int | None:
        value = self.get(name)
        if value is None:
            return default
        try:
            result = int(value.strip())
        except ValueError:
            raise OptionError(f"option {name!r} must be an integer, got {value!r}") from None
        if minimum is not None and result < minimum:
            raise OptionError(f"option {name!r} must be >= {minimum}, got {result}")
        return result

    def float(self, name: str, default: float | None = None) -> float | None:
        value = self.get(name)
        if value is None:
            return default
        try:
            return float(value)
        except ValueError:
            raise OptionError(f"option {name!r} must be a number, got {value!r}") from None

    def bool(self, name: str, default: bool) -> bool:
        value = self.get(name)
        if value is None:
            return default
        lowered = value.strip().lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise OptionError(f"option {name!r} must be true or false, got {value!r}")


# ---------------------------------------------------------------------------------------------
# Connection


@dataclass(frozen=True)
class ConnectionOptions:
    host: str = "localhost"
    port: int = 6379
    db: int = 0
    username: str | None = None
    password: str | None = None
    tls: bool = False
    tls_ca_cert: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_verify: bool = True
    connect_timeout: float = 10.0
    socket_timeout: float = 60.0
    retry_timeout: float = 60.0

    @classmethod
    def parse(cls, opts: Options) -> ConnectionOptions:
        return cls(
            host=opts.get("host", "localhost") or "localhost",
            port=opts.int("port", 6379, minimum=1) or 6379,
            db=opts.int("db", 0, minimum=0) or 0,
            username=opts.get("username"),
            password=opts.get("password"),
            tls=opts.bool("tls", False),
            tls_ca_cert=opts.get("tls.caCert"),
            tls_cert=opts.get("tls.cert"),
            tls_key=opts.get("tls.key"),
            tls_verify=opts.bool("tls.verify", True),
            connect_timeout=opts.float("connectTimeout", 10.0) or 10.0,
            socket_timeout=opts.float("socketTimeout", 60.0) or 60.0,
            retry_timeout=_non_negative("retryTimeout", opts.float("retryTimeout", 60.0)),
        )

    def __repr__(self) -> str:  # never print the password into Spark logs
        return f"ConnectionOptions(host={self.host!r}, port={self.port}, db={self.db}, tls={self.tls})"


def _non_negative(name: str, value: float | None) -> float:
    if value is None or value < 0:
        raise OptionError(f"option {name!r} must be a number of seconds >= 0, got {value!r}")
    return value


# ---------------------------------------------------------------------------------------------
# Reading

GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class StreamSelection:
    """Stream keys named literally plus glob patterns (matched with SCAN MATCH ... TYPE stream)."""

    keys: tuple[str, ...]
    patterns: tuple[str, ...]

    @classmethod
    def parse(cls, value: str | None) -> StreamSelection:
        if value is None or not value.strip():
            raise OptionError("option 'streams' is required: a stream key, a comma-separated list, "
                              "a JSON array or a glob pattern")
        text = value.strip()
        if text.startswith("["):
            try:
                names = json.loads(text)
            except json.JSONDecodeError as e:
                raise OptionError(f"option 'streams' is not a valid JSON array: {e}") from None
            if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
                raise OptionError("option 'streams' as JSON must be an array of non-empty strings")
        else:
            names = [n.strip() for n in text.split(",") if n.strip()]
        keys = tuple(dict.fromkeys(n for n in names if not GLOB_CHARS.search(n)))
        patterns = tuple(dict.fromkeys(n for n in names if GLOB_CHARS.search(n)))
        if not keys and not patterns:
            raise OptionError("option 'streams' names no stream")
        return cls(keys, patterns)


EARLIEST = "earliest"
LATEST = "latest"


@dataclass(frozen=True)
class Bound:
    """One key's starting or ending bound before it is resolved against the stream.

    kind is "earliest", "latest", "timestamp" (value = ms), "id" (value = 128-bit ID) or
    "offset" (value = ID, entries_read = the XINFO-style counter saved in a checkpointed offset).
    """

    kind: str
    value: int = 0
    entries_read: int | None = None


@dataclass(frozen=True)
class OffsetSpec:
    """startingOffsets / endingOffsets: a default bound plus per-key overrides from JSON."""

    default: Bound
    per_key: dict[str, Bound] = field(default_factory=dict)

    def for_key(self, key: str) -> Bound:
        return self.per_key.get(key, self.default)

    @classmethod
    def parse(cls, name: str, value: str | None, default: str) -> OffsetSpec:
        text = (value if value is not None else default).strip()
        if text.startswith("{"):
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as e:
                raise OptionError(f"option {name!r} is not valid JSON: {e}") from None
            if not isinstance(obj, dict):
                raise OptionError(f"option {name!r} as JSON must be an object {{stream: id}}")
            per_key = {str(k): _parse_bound(name, v) for k, v in obj.items()}
            return cls(_parse_bound(name, default), per_key)
        return cls(_parse_bound(name, text))


def _parse_bound(name: str, value: Any) -> Bound:
    if isinstance(value, bool):
        raise OptionError(f"option {name!r}: {value!r} is not an offset")
    if isinstance(value, int):
        return _timestamp(name, value)
    if isinstance(value, dict):  # an offset copied from a query's progress / checkpoint
        if "id" not in value:
            raise OptionError(f"option {name!r}: offset objects need an 'id'")
        bound = _parse_bound(name, value["id"])
        read = value.get("entriesRead")
        if read is not None and (not isinstance(read, int) or isinstance(read, bool) or read < 0):
            raise OptionError(f"option {name!r}: entriesRead must be a non-negative integer")
        return Bound("offset", bound.value, read)
    if not isinstance(value, str):
        raise OptionError(f"option {name!r}: {value!r} is not an offset")
    text = value.strip().lower()
    if text in (EARLIEST, LATEST):
        return Bound(text)
    if text.isdigit():
        return _timestamp(name, int(text))
    try:
        return Bound("id", ids.parse(text))
    except ValueError as e:
        raise OptionError(f"option {name!r}: {e}; use earliest, latest, a timestamp in ms, "
                          f"an ID <ms>-<seq> or JSON {{stream: ...}}") from None


def _timestamp(name: str, ms: int) -> Bound:
    if ms < 0 or ms > ids.U64:
        raise OptionError(f"option {name!r}: timestamp {ms} out of range")
    return Bound("timestamp", ms)


_DURATION = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$")
_UNITS_MS = {"": 1, "ms": 1, "millisecond": 1, "milliseconds": 1, "s": 1000, "sec": 1000,
             "second": 1000, "seconds": 1000, "m": 60_000, "min": 60_000, "minute": 60_000,
             "minutes": 60_000, "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000}


def parse_duration_ms(name: str, value: str | None) -> int | None:
    """`"500"` (ms), `"500ms"`, `"10 seconds"`, `"2m"`, `"1 hour"` -> milliseconds."""
    if value is None:
        return None
    match = _DURATION.match(value.lower())
    if not match or match.group(2) not in _UNITS_MS:
        raise OptionError(f"option {name!r} must be a duration like '500ms' or '10 seconds', got {value!r}")
    result = int(match.group(1)) * _UNITS_MS[match.group(2)]
    if result <= 0:
        raise OptionError(f"option {name!r} must be positive")
    return result


@dataclass(frozen=True)
class ReadOptions:
    connection: ConnectionOptions
    streams: StreamSelection
    starting: OffsetSpec
    ending: OffsetSpec | None
    min_partitions: int | None
    page_size: int
    fail_on_data_loss: bool
    max_records_per_trigger: int | None
    max_time_per_trigger_ms: int | None
    min_records_per_trigger: int | None
    max_trigger_delay_ms: int
    consumer_group: str | None

    @classmethod
    def parse(cls, raw: Mapping[str, str], streaming: bool) -> ReadOptions:
        opts = Options(raw)
        starting = OffsetSpec.parse("startingOffsets", opts.get("startingOffsets"),
                                    LATEST if streaming else EARLIEST)
        ending = None
        if streaming:
            if opts.has("endingOffsets"):
                raise OptionError("option 'endingOffsets' is for batch reads only")
        else:
            ending = OffsetSpec.parse("endingOffsets", opts.get("endingOffsets"), LATEST)
            for bound in [starting.default, *starting.per_key.values()]:
                if bound.kind == LATEST:
                    raise OptionError("startingOffsets 'latest' is not allowed in a batch read")
            for bound in [ending.default, *ending.per_key.values()]:
                if bound.kind == EARLIEST:
                    raise OptionError("endingOffsets 'earliest' is not allowed in a batch read")
            for name in ("maxRecordsPerTrigger", "maxTimePerTrigger", "minRecordsPerTrigger",
                         "maxTriggerDelay", "consumerGroup"):
                if opts.has(name):
                    raise OptionError(f"option {name!r} is for streaming reads only")
        max_records = opts.int("maxRecordsPerTrigger", None, minimum=1)
        min_records, max_delay = _min_batch(opts, max_records)
        return cls(
            connection=ConnectionOptions.parse(opts),
            streams=StreamSelection.parse(opts.get("streams")),
            starting=starting,
            ending=ending,
            min_partitions=opts.int("minPartitions", None, minimum=1),
            page_size=opts.int("pageSize", 1000, minimum=1) or 1000,
            fail_on_data_loss=opts.bool("failOnDataLoss", True),
            max_records_per_trigger=max_records,
            max_time_per_trigger_ms=parse_duration_ms("maxTimePerTrigger", opts.get("maxTimePerTrigger")),
            min_records_per_trigger=min_records,
            max_trigger_delay_ms=max_delay,
            consumer_group=opts.get("consumerGroup"),
        )


DEFAULT_MAX_TRIGGER_DELAY = "15m"  # Kafka's default for maxTriggerDelay


def _min_batch(opts: Options, max_records: int | None) -> tuple[int | None, int]:
    """minRecordsPerTrigger and maxTriggerDelay (Kafka's minOffsetsPerTrigger and maxTriggerDelay),
    checked as Kafka checks them: a positive minimum no higher than maxRecordsPerTrigger; the delay
    only means something together with a minimum, so alone it is refused rather than ignored."""
    min_records = opts.int("minRecordsPerTrigger", None, minimum=1)
    if min_records is None and opts.has("maxTriggerDelay"):
        raise OptionError("option 'maxTriggerDelay' applies only together with 'minRecordsPerTrigger'")
    if min_records is not None and max_records is not None and min_records > max_records:
        raise OptionError(f"option 'minRecordsPerTrigger' ({min_records}) is higher than "
                          f"'maxRecordsPerTrigger' ({max_records})")
    delay = parse_duration_ms("maxTriggerDelay", opts.get("maxTriggerDelay", DEFAULT_MAX_TRIGGER_DELAY))
    assert delay is not None
    return min_records, delay


# ---------------------------------------------------------------------------------------------
# Writing

COMMANDS = ("xadd", "hset", "set")


@dataclass(frozen=True)
class WriteOptions:
    connection: ConnectionOptions
    command: str
    stream: str | None
    stream_column: str | None
    id_column: str | None
    key: str | None
    key_column: str | None
    key_prefix: str
    value_column: str | None
    fields_column: str | None
    max_len: int | None
    min_id: str | None
    trim_approximate: bool
    ttl: int | None
    idempotent: bool
    idempotency_ttl: int
    idempotency_prefix: str
    write_id: str | None
    batch_size: int

    @classmethod
    def parse(cls, raw: Mapping[str, str]) -> WriteOptions:
        opts = Options(raw)
        command = (opts.get("command", "xadd") or "xadd").strip().lower()
        if command not in COMMANDS:
            raise OptionError(f"option 'command' must be one of {', '.join(COMMANDS)}, got {command!r}")
        stream, stream_column = opts.get("stream"), opts.get("stream.column")
        key, key_column = opts.get("key"), opts.get("key.column")
        max_len = opts.int("maxLen", None, minimum=0)
        min_id = opts.get("minId")
        if command == "xadd":
            if (stream is None) == (stream_column is None):
                raise OptionError("XADD sink: give exactly one of 'stream' (a key) or 'stream.column'")
            if key is not None or key_column is not None:
                raise OptionError("XADD sink: use 'stream' / 'stream.column', not 'key' / 'key.column'")
            if max_len is not None and min_id is not None:
                raise OptionError("options 'maxLen' and 'minId' are exclusive")
            if min_id is not None:
                try:
                    ids.parse(min_id)
                except ValueError as e:
                    raise OptionError(f"option 'minId': {e}") from None
        else:
            if (key is None) == (key_column is None):
                raise OptionError(f"{command.upper()} sink: give exactly one of 'key' or 'key.column'")
            for name in ("stream", "stream.column", "id.column", "maxLen", "minId"):
                if opts.has(name):
                    raise OptionError(f"option {name!r} is for the XADD sink only")
        if command != "set" and opts.has("value.column"):
            raise OptionError("option 'value.column' is for the SET sink only")
        if command == "set" and opts.has("fields.column"):
            raise OptionError("option 'fields.column' is not for the SET sink")
        return cls(
            connection=ConnectionOptions.parse(opts),
            command=command,
            stream=stream,
            stream_column=stream_column,
            id_column=opts.get("id.column"),
            key=key,
            key_column=key_column,
            key_prefix=opts.get("key.prefix", "") or "",
            value_column=opts.get("value.column"),
            fields_column=opts.get("fields.column"),
            max_len=max_len,
            min_id=min_id,
            trim_approximate=opts.bool("trimApproximate", True),
            ttl=opts.int("ttl", None, minimum=1),
            idempotent=opts.bool("idempotent", True),
            idempotency_ttl=opts.int("idempotency.ttl", 7 * 24 * 3600, minimum=1) or 7 * 24 * 3600,
            idempotency_prefix=opts.get("idempotency.prefix", "raxdb-sink:") or "raxdb-sink:",
            write_id=opts.get("writeId"),
            batch_size=opts.int("batchSize", 1000, minimum=1) or 1000,
        )
