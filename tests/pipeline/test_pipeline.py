"""The pipeline's parts without a Spark job: the readers and writers are plain Python objects, so
planning, reading, admission control, data-loss detection and the idempotent sink are exercised
here directly against redis-server and raxdb (fast, many cases).  tests/pipeline/test_pipeline_spark.py
proves the same paths inside real Spark jobs."""

# ruff: noqa: F811  (pytest fixtures imported from tests/support/pipeline_fixtures.py are parameters here)

from __future__ import annotations

import json

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows  # noqa: E402
from pyspark.sql.types import (  # noqa: E402
    BinaryType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from raxdb.spark import ids  # noqa: E402
from raxdb.spark.convert import DEFAULT_SCHEMA  # noqa: E402
from raxdb.spark.options import OptionError, ReadOptions, WriteOptions  # noqa: E402
from raxdb.spark.planning import (  # noqa: E402
    DataLossError,
    Position,
    StreamInfo,
    backlog_range,
    plan_splits,
    share_budget,
)
from raxdb.spark.sink import BatchWriter, SinkError, StreamWriter  # noqa: E402
from raxdb.spark.source import RaxdbDataSource  # noqa: E402
from tests.support.pipeline_fixtures import ns, options, rc, server  # noqa: E402,F401

# ---------------------------------------------------------------------------------------------
# IDs and options (no server)


@given(st.integers(0, ids.U64), st.integers(0, ids.U64))
def test_id_roundtrip_and_order(ms, seq):
    value = ids.parse(f"{ms}-{seq}")
    assert ids.fmt(value) == f"{ms}-{seq}"
    assert ids.ms_of(value) == ms
    if value:
        assert ids.pred(value) < value and ids.fmt(ids.pred(value)) != ids.fmt(value)


@given(st.integers(0, ids.MAX), st.integers(0, ids.MAX), st.integers(1, 50))
def test_split_covers_range_without_overlap(a, b, parts):
    lo, hi = min(a, b), max(a, b)
    pieces = ids.split(lo, hi, parts)
    if hi == lo:
        assert pieces == []
        return
    assert pieces[0][0] == lo and pieces[-1][1] == hi
    assert all(x < y for x, y in pieces)
    assert all(p[1] == q[0] for p, q in zip(pieces, pieces[1:], strict=False))
    assert len(pieces) <= parts


@given(st.integers(0, 1000), st.dictionaries(st.text(min_size=1, max_size=3), st.integers(0, 10**6)),
       st.booleans())
def test_share_budget(total, backlogs, at_least_one):
    shares = share_budget(total, backlogs, at_least_one)
    assert sum(shares.values()) == (total if any(backlogs.values()) else 0)
    assert all(backlogs[k] > 0 and v > 0 for k, v in shares.items())
    active = [k for k, b in backlogs.items() if b > 0]
    if at_least_one and total >= len(active):
        assert set(shares) == set(active)


@st.composite
def ranges_of_keys(draw):
    """Up to four keys' (lo, hi] ranges with an estimate, in ID space small or huge."""
    out = []
    for key in draw(st.lists(st.sampled_from("abcd"), min_size=1, max_size=4, unique=True)):
        lo = draw(st.integers(0, ids.MAX - 1))
        hi = draw(st.integers(lo, min(ids.MAX, lo + draw(st.sampled_from([3, 1000, 1 << 70, ids.MAX])))))
        out.append((key, lo, hi, draw(st.integers(0, 10_000))))
    return out


@given(ranges_of_keys(), st.one_of(st.none(), st.integers(1, 64)))
def test_plan_splits_covers_each_range_once(ranges, min_partitions):
    from raxdb.spark.planning import Range

    planned = plan_splits([Range(*r) for r in ranges], min_partitions)
    for key, lo, hi, estimate in ranges:
        pieces = [(a, b) for k, a, b in planned if k == key]
        if hi == lo:
            assert pieces == []
            continue
        # consecutive half-open pieces from lo to hi: every ID in (lo, hi] in exactly one
        assert pieces[0][0] == lo and pieces[-1][1] == hi
        assert all(a < b for a, b in pieces) and all(p[1] == q[0] for p, q in zip(pieces, pieces[1:], strict=False))
        assert len(pieces) <= max(estimate, 1)
    live = [r for r in ranges if r[2] > r[1]]
    if live and min_partitions and all(min(hi - lo, est) >= min_partitions for _, lo, hi, est in live):
        assert len(planned) == max(min_partitions, len(live))


@st.composite
def stream_and_cuts(draw):
    """A stream's IDs (runs of entries sharing a millisecond, so sequence parts matter) and where
    maxRecordsPerTrigger-like limits end the micro-batches that read it."""
    sizes = draw(st.lists(st.integers(1, 40), min_size=1, max_size=30))
    gaps = draw(st.lists(st.integers(1, 1 << 40), min_size=len(sizes), max_size=len(sizes)))
    entries, ms = [], draw(st.integers(1, 1 << 41))
    for size, gap in zip(sizes, gaps, strict=True):
        entries.extend((ms << 64) | seq for seq in range(size))
        ms += gap
    cuts = sorted(set(draw(st.lists(st.integers(1, len(entries)), max_size=8))) | {len(entries)})
    return entries, cuts


@given(stream_and_cuts(), st.integers(1, 16), st.booleans())
def test_micro_batch_splits_read_each_entry_once(stream, min_partitions, from_zero):
    """A backlog read in micro-batches (cut after any entry, as maxRecordsPerTrigger does), each
    planned as a streaming read plans it (backlog_range + plan_splits): every entry lands in
    exactly one partition of exactly one batch."""
    entries, cuts = stream
    info = StreamInfo(length=len(entries), last_id=entries[-1], entries_added=len(entries), max_deleted=0,
                      first_entry=entries[0], last_entry=entries[-1])
    # a stream new to the query starts at 0-0 with an unknown counter; from `earliest` it is known
    start = Position(ids.ZERO, None) if from_zero else Position(ids.pred(entries[0]), 0)
    seen = {e: 0 for e in entries}
    for cut in cuts:
        end = Position(entries[cut - 1], cut)
        r = backlog_range("k", start, end, info)
        for _key, lo, hi in plan_splits([r] if r else [], min_partitions):
            for e in entries:
                if lo < e <= hi:
                    seen[e] += 1
        start = end
    assert set(seen.values()) == {1}


def test_id_parse_rejects_garbage():
    for bad in ["", "-", "1-", "a-1", "1-2-3", f"{1 << 64}-0", "1--1"]:
        with pytest.raises(ValueError):
            ids.parse(bad)
    assert ids.parse("5") == 5 << 64
    assert ids.from_timestamp(5) == ids.parse("4-18446744073709551615")


@pytest.mark.parametrize("opts, message", [
    ({}, "'streams' is required"),
    ({"streams": " , "}, "names no stream"),
    ({"streams": "[1]"}, "array of non-empty strings"),
    ({"streams": "s", "startingOffsets": "latest"}, "not allowed in a batch read"),
    ({"streams": "s", "endingOffsets": '{"s": "earliest"}'}, "not allowed in a batch read"),
    ({"streams": "s", "startingOffsets": "12-x"}, "invalid stream ID"),
    ({"streams": "s", "startingOffsets": "{bad"}, "not valid JSON"),
    ({"streams": "s", "startingOffsets": '{"s": true}'}, "not an offset"),
    ({"streams": "s", "minPartitions": "0"}, "must be >= 1"),
    ({"streams": "s", "port": "x"}, "must be an integer"),
    ({"streams": "s", "failOnDataLoss": "maybe"}, "true or false"),
    ({"streams": "s", "maxRecordsPerTrigger": "5"}, "streaming reads only"),
])
def test_read_option_errors(opts, message):
    with pytest.raises(OptionError, match=message):
        ReadOptions.parse(opts, streaming=False)


def test_stream_option_errors():
    with pytest.raises(OptionError, match="batch reads only"):
        ReadOptions.parse({"streams": "s", "endingOffsets": "latest"}, streaming=True)
    with pytest.raises(OptionError, match="duration"):
        ReadOptions.parse({"streams": "s", "maxTimePerTrigger": "soon"}, streaming=True)
    for opts, message in [
        ({"minRecordsPerTrigger": "0"}, "'minRecordsPerTrigger' must be >= 1"),
        ({"minRecordsPerTrigger": "101", "maxRecordsPerTrigger": "100"},
         r"'minRecordsPerTrigger' \(101\) is higher than 'maxRecordsPerTrigger' \(100\)"),
        ({"maxTriggerDelay": "1m"}, "'maxTriggerDelay' applies only together with 'minRecordsPerTrigger'"),
        ({"minRecordsPerTrigger": "5", "maxTriggerDelay": "0"}, "'maxTriggerDelay' must be positive"),
        ({"minRecordsPerTrigger": "5", "maxTriggerDelay": "later"}, "'maxTriggerDelay' must be a duration"),
    ]:
        with pytest.raises(OptionError, match=message):
            ReadOptions.parse({"streams": "s", **opts}, streaming=True)
    for name in ("minRecordsPerTrigger", "maxTriggerDelay"):
        with pytest.raises(OptionError, match="streaming reads only"):
            ReadOptions.parse({"streams": "s", name: "5"}, streaming=False)
    kafka_like = ReadOptions.parse({"streams": "s", "minRecordsPerTrigger": "100", "maxRecordsPerTrigger": "100",
                                    "minPartitions": "4"}, streaming=True)
    assert (kafka_like.min_records_per_trigger, kafka_like.max_trigger_delay_ms) == (100, 15 * 60_000)
    assert kafka_like.min_partitions == 4  # streaming reads split big backlogs too
    assert ReadOptions.parse({"streams": "s", "minRecordsPerTrigger": "1", "maxTriggerDelay": "2 seconds"},
                             streaming=True).max_trigger_delay_ms == 2000
    parsed = ReadOptions.parse({"STREAMS": '["a,b", "c*"]', "maxTimePerTrigger": "2 seconds"}, True)
    assert parsed.streams.keys == ("a,b",) and parsed.streams.patterns == ("c*",)
    assert parsed.max_time_per_trigger_ms == 2000 and parsed.starting.default.kind == "latest"


@pytest.mark.parametrize("opts, message", [
    ({}, "exactly one of 'stream'"),
    ({"stream": "s", "stream.column": "c"}, "exactly one of 'stream'"),
    ({"stream": "s", "key": "k"}, "not 'key'"),
    ({"stream": "s", "maxLen": "5", "minId": "1-1"}, "exclusive"),
    ({"stream": "s", "minId": "x"}, "invalid stream ID"),
    ({"command": "hset"}, "exactly one of 'key'"),
    ({"command": "set", "key.column": "k", "stream": "s"}, "XADD sink only"),
    ({"command": "hset", "key": "k", "value.column": "v"}, "SET sink only"),
    ({"command": "del", "key": "k"}, "must be one of"),
    ({"stream": "s", "ttl": "0"}, ">= 1"),
])
def test_write_option_errors(opts, message):
    with pytest.raises(OptionError, match=message):
        WriteOptions.parse(opts)


def test_write_column_errors():
    schema = StructType([StructField("k", StringType()), StructField("a", StringType()),
                         StructField("b", LongType())])
    with pytest.raises(OptionError, match="no column 'nope'"):
        BatchWriter({"stream.column": "nope"}, schema, False)
    with pytest.raises(OptionError, match="value.column"):
        BatchWriter({"command": "set", "key.column": "k"}, schema, False)
    with pytest.raises(OptionError, match="must be a map"):
        BatchWriter({"stream": "s", "fields.column": "a"}, schema, False)
    with pytest.raises(OptionError, match="append"):
        BatchWriter({"stream": "s"}, schema, True)


def test_schema_validation():
    with pytest.raises(ValueError, match="column 'ms' must be of type"):
        RaxdbDataSource({"streams": "s"}).reader(StructType([StructField("ms", StringType())]))
    with pytest.raises(ValueError, match="only atomic types"):
        RaxdbDataSource({"streams": "s"}).reader(
            StructType([StructField("x", MapType(StringType(), LongType()))]))


# ---------------------------------------------------------------------------------------------
# Batch reads equal XRANGE


def batch_read(server, schema=DEFAULT_SCHEMA, **opts) -> list[dict]:
    reader = RaxdbDataSource(options(server, **opts)).reader(schema)
    rows = []
    partitions = reader.partitions()
    for part in partitions:
        for batch in reader.read(part):
            rows.extend(batch.to_pylist())
    return rows, partitions


def xrange_rows(rc, key: str, lo: str = "-", hi: str = "+") -> list[tuple]:
    return [(key, i.decode(), {f.decode(): v.decode("utf-8", "replace") for f, v in fields.items()})
            for i, fields in rc.xrange(key, lo, hi)]


def as_tuples(rows) -> list[tuple]:
    return sorted(((r["stream"], r["id"], dict(r["fields"])) for r in rows),
                  key=lambda t: (t[0], ids.parse(t[1])))


@pytest.fixture
def two_streams(rc, ns):
    """`a`: 500 entries, explicit IDs over 100 ms with several per ms; `b`: 40 entries, 1-1..40-1;
    one entry with repeated and binary fields; and a non-stream key matching the glob."""
    a, b = ns + "s:a", ns + "s:b"
    pipe = rc.pipeline(transaction=False)
    for i in range(500):
        pipe.xadd(a, {"n": i, "kind": "odd" if i % 2 else "even"}, id=f"{1000 + i // 5}-{i % 5}")
    for i in range(1, 41):
        pipe.xadd(b, {"n": i}, id=f"{i}-1")
    pipe.execute_command("XADD", b, "41-0", "dup", "1", "dup", "2", "bin", b"\xff\xfe")
    pipe.set(ns + "s:not-a-stream", "x")
    pipe.execute()
    return a, b


def test_batch_read_all_equals_xrange(server, rc, two_streams, ns):
    a, b = two_streams
    rows, parts = batch_read(server, streams=ns + "s:*")
    assert len(parts) == 2
    expected = xrange_rows(rc, a) + xrange_rows(rc, b)
    got = as_tuples(rows)
    # the entry with a repeated field: the map keeps every pair, dict() keeps the last
    assert [t for t in got if t[1] == "41-0"][0][2] == {"dup": "2", "bin": "\ufffd\ufffd"}
    assert [t for t in got if t[1] != "41-0"] == [t for t in expected if t[1] != "41-0"]
    first = next(r for r in rows if r["id"] == "1000-1")
    assert (first["ms"], first["seq"], first["stream"]) == (1000, 1, a)


@pytest.mark.parametrize("starting, ending, lo, hi", [
    ('{"%a": "1010-2"}', "latest", "(1010-2", "+"),
    ("1050", "1060", "1050-0", "(1060-0"),
    ('{"%a": "1003-4"}', '{"%a": "1004-1"}', "(1003-4", "1004-1"),
    ("earliest", '{"%a": "1000-0"}', "-", "1000-0"),
    ('{"%a": {"id": "1098-0", "entriesRead": 3}}', "latest", "(1098-0", "+"),
    ("2000", "latest", "(2000-0", "+"),
])
@pytest.mark.parametrize("min_partitions", [1, 3, 7])
def test_batch_ranges_and_partitions_equal_xrange(server, rc, two_streams, starting, ending, lo, hi,
                                                  min_partitions):
    a, _ = two_streams
    rows, parts = batch_read(server, streams=a, startingOffsets=starting.replace("%a", a),
                             endingOffsets=ending.replace("%a", a), minPartitions=min_partitions)
    expected = xrange_rows(rc, a, lo, hi)
    assert as_tuples(rows) == expected
    if len(expected) >= min_partitions:
        assert len(parts) == min_partitions
    # partitions are consecutive, non-overlapping ID ranges
    bounds = [(p.lo, p.hi) for p in parts if p.hi > p.lo]
    assert all(x[1] == y[0] for x, y in zip(bounds, bounds[1:], strict=False))


def test_batch_read_keys_list_and_missing(server, rc, two_streams, ns):
    a, b = two_streams
    rows, _ = batch_read(server, streams=f"{b}, {ns}missing", startingOffsets="20", endingOffsets="25")
    assert [r["id"] for r in rows] == ["20-1", "21-1", "22-1", "23-1", "24-1"]
    rows, parts = batch_read(server, streams=f"{ns}missing")
    assert rows == [] and len(parts) == 1  # Spark needs one (empty) partition


def test_batch_user_schema_projects_typed_columns(server, rc, ns):
    key = ns + "typed"
    rc.xadd(key, {"n": "7", "x": "2.5", "ok": "true", "at": "2024-05-01T10:00:00Z", "raw": b"\xff"},
            id="1714557600000-0")
    rc.xadd(key, {"n": "bad", "x": "1e3", "ok": "no", "at": "1714557600000"}, id="1714557600001-0")
    rc.xadd(key, {"other": "1"}, id="1714557600002-0")
    schema = StructType([
        StructField("id", StringType()), StructField("ms", TimestampType()), StructField("n", IntegerType()),
        StructField("x", DoubleType()), StructField("ok", BooleanType()), StructField("at", TimestampType()),
        StructField("raw", BinaryType())])
    rows, _ = batch_read(server, schema, streams=key)
    assert [(r["n"], r["x"], r["ok"], r["raw"]) for r in rows] == [
        (7, 2.5, True, b"\xff"), (None, 1000.0, False, None), (None, None, None, None)]
    assert rows[0]["at"] == rows[1]["at"] == rows[0]["ms"]
    assert rows[0]["at"].isoformat() == "2024-05-01T10:00:00+00:00"


def test_wrong_type_key_is_an_error(server, rc, ns):
    rc.set(ns + "str", "x")
    with pytest.raises(Exception, match="WRONGTYPE"):
        batch_read(server, streams=ns + "str")


# ---------------------------------------------------------------------------------------------
# Streaming reader, driven directly the way Spark drives it


class Driver:
    """Calls a StreamReader like MicroBatchExecution: latestOffset, partitions, read, commit."""

    def __init__(self, server, **opts) -> None:
        self.reader = RaxdbDataSource(options(server, **opts)).streamReader(DEFAULT_SCHEMA)
        self.offset = self.reader.initialOffset()
        self.limit = self.reader.getDefaultReadLimit()
        self.partitions: list[list] = []  # each micro-batch's partitions

    def batch(self, limit=None) -> list[dict] | None:
        """Run one micro-batch; None when latestOffset reports no new data."""
        end = self.reader.latestOffset(self.offset, limit or self.limit)
        if end == self.offset:
            return None
        rows = []
        self.partitions.append(self.reader.partitions(self.offset, end))
        for part in self.partitions[-1]:
            for batch in self.reader.read(part):
                rows.extend(batch.to_pylist())
        self.reader.commit(end)
        self.offset = json.loads(json.dumps(end))  # as Spark's checkpoint would hand it back
        return rows

    def drain(self) -> list[list[dict]]:
        batches = []
        while (rows := self.batch()) is not None:
            batches.append(rows)
        return batches


def fill(rc, key: str, count: int, start: int = 0) -> None:
    pipe = rc.pipeline(transaction=False)
    for i in range(start, start + count):
        pipe.xadd(key, {"n": i})
    pipe.execute()


def ns_of(rows) -> list[int]:
    return [int(dict(r["fields"])["n"]) for r in rows]


def test_stream_max_records_splits_batches_exactly_once(server, rc, ns):
    fill(rc, ns + "a", 250)
    fill(rc, ns + "b", 50, start=1000)
    driver = Driver(server, streams=ns + "*", startingOffsets="earliest", maxRecordsPerTrigger=60)
    assert driver.limit == ReadMaxRows(60)
    batches = driver.drain()
    assert all(0 < len(b) <= 60 for b in batches) and len(batches) == 5
    seen = sorted(n for b in batches for n in ns_of(b))
    assert seen == list(range(250)) + list(range(1000, 1050))
    # per key the batches are in ID order and the offsets carry the exact entries-read counter
    assert driver.offset == {ns + "a": {"id": rc.xrange(ns + "a", "-", "+")[-1][0].decode(), "entriesRead": 250},
                             ns + "b": {"id": rc.xrange(ns + "b", "-", "+")[-1][0].decode(), "entriesRead": 50}}
    report = driver.reader.reportLatestOffset()
    assert report[ns + "a"]["lag"] == 0 and report[ns + "a"]["entriesAdded"] == 250
    # a new entry and a new stream matching the glob are picked up by the next batch
    fill(rc, ns + "a", 1, start=250)
    fill(rc, ns + "c", 2, start=2000)
    assert sorted(ns_of(driver.batch())) == [250, 2000, 2001]
    assert driver.batch() is None


def test_stream_reports_lag_while_throttled(server, rc, ns):
    fill(rc, ns + "a", 30)
    driver = Driver(server, streams=ns + "a", startingOffsets="earliest", maxRecordsPerTrigger=10)
    driver.batch()
    assert driver.reader.reportLatestOffset()[ns + "a"] == {
        "id": rc.xinfo_stream(ns + "a")["last-generated-id"].decode(), "entriesAdded": 30, "lag": 20}


def test_stream_time_window_limit(server, rc, ns):
    key = ns + "w"
    for ms in (1000, 1001, 1500, 1999, 2000, 2600, 9000):
        rc.xadd(key, {"n": ms}, id=f"{ms}-0")
    driver = Driver(server, streams=key, startingOffsets="earliest", maxTimePerTrigger="1 second")
    batches = [ns_of(b) for b in driver.drain()]
    assert batches == [[1000, 1001, 1500, 1999], [2000, 2600], [9000]]
    # Trigger.Once-style ReadAllAvailable ignores the configured limits
    rc.xadd(key, {"n": 9001}, id="9001-0")
    rc.xadd(key, {"n": 99999}, id="99999-0")
    assert ns_of(driver.batch(ReadAllAvailable())) == [9001, 99999]


def test_stream_starting_offsets(server, rc, ns):
    key = ns + "s"
    for i in range(1, 6):
        rc.xadd(key, {"n": i}, id=f"{i * 10}-0")
    assert Driver(server, streams=key).batch() is None  # latest (the default) skips history
    assert ns_of(Driver(server, streams=key, startingOffsets="30").batch()) == [3, 4, 5]
    assert ns_of(Driver(server, streams=key, startingOffsets=json.dumps({key: "20-0"})).batch()) == [3, 4, 5]
    latest = Driver(server, streams=key)
    rc.xadd(key, {"n": 6}, id="60-0")
    assert ns_of(latest.batch()) == [6]


def test_stream_available_now_stops_at_the_snapshot(server, rc, ns):
    fill(rc, ns + "a", 25)
    driver = Driver(server, streams=ns + "*", startingOffsets="earliest", maxRecordsPerTrigger=10)
    driver.reader.prepareForTriggerAvailableNow()
    fill(rc, ns + "a", 5, start=100)  # arrives after the trigger started: not part of this run
    fill(rc, ns + "new", 5, start=200)
    batches = driver.drain()
    assert [len(b) for b in batches] == [10, 10, 5]
    assert sorted(n for b in batches for n in ns_of(b)) == list(range(25))


class Clock:
    """The clock MinBatchGate reads, moved by the test (seconds)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_stream_min_records_waits_for_enough_entries_or_the_delay(server, rc, ns):
    key = ns + "m"
    driver = Driver(server, streams=key, minRecordsPerTrigger=10, maxTriggerDelay="1 minute")
    assert driver.limit == ReadMaxRows(1 << 62)  # limited, without a row cap
    clock = driver.reader.gate.clock = Clock()
    assert driver.batch() is None  # the run's first trigger: nothing yet; the delay starts now
    fill(rc, key, 4)
    assert driver.batch() is None  # 4 < 10 and no delay passed: held back
    fill(rc, key, 6, start=4)
    assert ns_of(driver.batch()) == list(range(10))  # 10 new entries: the batch starts
    fill(rc, key, 3, start=10)
    clock.now += 59.9
    assert driver.batch() is None
    clock.now += 0.1  # maxTriggerDelay since the last batch: a smaller batch starts
    assert ns_of(driver.batch()) == [10, 11, 12]
    fill(rc, key, 2, start=13)
    assert driver.batch() is None
    assert ns_of(driver.batch(ReadAllAvailable())) == [13, 14]  # Trigger.Once ignores the limits


def test_stream_min_records_with_max_records_and_unknown_counters(server, rc, ns):
    """With maxRecordsPerTrigger a due batch is still capped; a start in the middle of a stream has
    no entries-read counter, so the backlog is counted by walking it."""
    key = ns + "u"
    for i in range(1, 31):
        rc.xadd(key, {"n": i}, id=f"{i}-0")
    driver = Driver(server, streams=key, startingOffsets="5-0", minRecordsPerTrigger=10,
                    maxRecordsPerTrigger=10, maxTriggerDelay="1 minute")
    clock = driver.reader.gate.clock = Clock()
    assert ns_of(driver.batch()) == list(range(6, 16))  # the first trigger of a run is let through
    assert driver.offset[key]["entriesRead"] is None
    assert ns_of(driver.batch()) == list(range(16, 26))  # 15 counted >= 10
    assert driver.batch() is None  # 5 counted < 10
    clock.now += 60
    assert ns_of(driver.batch()) == list(range(26, 31))


def test_stream_min_records_available_now_reads_the_whole_snapshot(server, rc, ns):
    """Trigger.AvailableNow: a rest below the minimum can never grow within the run, so it is read
    rather than left behind (the run must reach its snapshot)."""
    fill(rc, ns + "a", 25)
    driver = Driver(server, streams=ns + "a", startingOffsets="earliest", minRecordsPerTrigger=10,
                    maxRecordsPerTrigger=10)
    driver.reader.prepareForTriggerAvailableNow()
    driver.reader.gate.clock = Clock()
    assert [len(b) for b in driver.drain()] == [10, 10, 5]


def test_stream_min_partitions_splits_backlogs_exactly_once(server, rc, ns):
    """minPartitions in streaming: a big backlog of one stream is cut into ID ranges, with
    maxRecordsPerTrigger cuts falling inside runs of entries that share a millisecond."""
    big, small = ns + "s:big", ns + "s:small"
    pipe = rc.pipeline(transaction=False)
    for i in range(700):
        pipe.xadd(big, {"n": i}, id=f"{5000 + i // 7}-{i % 7}")
    for i in range(10):
        pipe.xadd(small, {"n": 1000 + i}, id=f"{6000 + i}-0")
    pipe.execute()
    driver = Driver(server, streams=ns + "s:*", startingOffsets="earliest", minPartitions=4,
                    maxRecordsPerTrigger=300)
    batches = driver.drain()
    assert [len(b) for b in batches] == [300, 300, 110]
    assert sorted(n for b in batches for n in ns_of(b)) == list(range(700)) + list(range(1000, 1010))
    for parts in driver.partitions:
        assert len(parts) >= 4
        for key in (big, small):
            bounds = [(p.lo, p.hi) for p in parts if p.key == key]
            assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:], strict=False))
    # one AvailableNow catch-up of one stream: exactly minPartitions tasks, each entry once
    driver = Driver(server, streams=big, startingOffsets="earliest", minPartitions=4)
    rows = driver.batch()
    assert len(driver.partitions[0]) == 4 and sorted(ns_of(rows)) == list(range(700))
    assert all(next(driver.reader.read(p)).num_rows > 0 for p in driver.partitions[0])


def test_stream_fail_on_data_loss(server, rc, ns):
    key = ns + "t"
    fill(rc, key, 10)
    strict = Driver(server, streams=key, startingOffsets="earliest")
    lenient = Driver(server, streams=key, startingOffsets="earliest", failOnDataLoss="false")
    assert len(strict.batch()) == 10 and len(lenient.batch()) == 10
    # trimming entries that were already read is not a loss
    rc.xtrim(key, maxlen=3, approximate=False)
    assert strict.batch() is None
    fill(rc, key, 10, start=10)
    rc.xtrim(key, maxlen=4, approximate=False)  # 6 of the 10 new entries go before being read
    with pytest.raises(DataLossError, match=r"6 entries .* were trimmed or deleted"):
        strict.batch()
    assert ns_of(lenient.batch()) == [16, 17, 18, 19]
    fill(rc, key, 1, start=20)
    assert ns_of(lenient.batch()) == [20]  # the skipped entries are not reported again


def test_stream_reset_is_data_loss(server, rc, ns):
    key = ns + "r"
    rc.xadd(key, {"n": 1}, id="500-0")
    strict = Driver(server, streams=key, startingOffsets="earliest")
    lenient = Driver(server, streams=key, startingOffsets="earliest", failOnDataLoss="false")
    strict.batch(), lenient.batch()
    rc.delete(key)
    assert strict.batch() is None  # a deleted stream has nothing to read; not (yet) a loss
    rc.xadd(key, {"n": 2}, id="100-0")
    with pytest.raises(DataLossError, match="was reset"):
        strict.batch()
    assert ns_of(lenient.batch()) == [2]


def test_replayed_batch_checks_its_range(server, rc, ns):
    """A micro-batch planned, then replayed (a fresh reader, as after a driver restart) once
    trimming removed part of its range: partitions() reports the shortfall, or reads what is left."""
    key = ns + "p"
    fill(rc, key, 20)
    first = Driver(server, streams=key, startingOffsets="earliest", maxRecordsPerTrigger=10)
    first.batch()
    start = first.offset
    end = first.reader.latestOffset(start, first.limit)  # batch 1 planned: entries 10..19
    rc.xtrim(key, maxlen=4, approximate=False)  # 10..15 go before the batch ran
    strict = RaxdbDataSource(options(server, streams=key)).streamReader(DEFAULT_SCHEMA)
    with pytest.raises(DataLossError, match=r"6 of the 10 entries of the micro-batch"):
        strict.partitions(start, end)
    lenient = RaxdbDataSource(options(server, streams=key, failOnDataLoss="false")).streamReader(DEFAULT_SCHEMA)
    rows = [r for part in lenient.partitions(start, end) for b in lenient.read(part) for r in b.to_pylist()]
    assert ns_of(rows) == [16, 17, 18, 19]


def test_recreated_stream_with_later_ids_is_a_reset(server, rc, ns):
    key = ns + "c"
    fill(rc, key, 10)
    strict = Driver(server, streams=key, startingOffsets="earliest", maxRecordsPerTrigger=2)
    lenient = Driver(server, streams=key, startingOffsets="earliest", maxRecordsPerTrigger=2,
                     failOnDataLoss="false")
    strict.drain(), lenient.drain()
    rc.delete(key)
    fill(rc, key, 3, start=100)  # `*` IDs: after the checkpoint, but entries-added 3 < 10 read
    with pytest.raises(DataLossError, match="was reset: it holds 3 entries ever added"):
        strict.batch()
    assert [ns_of(b) for b in lenient.drain()] == [[100, 101], [102]]


def test_read_resumes_after_a_lost_connection(server, rc, ns):
    """The read task's connection is killed after its first page: it reconnects and goes on
    after the last entry it handed out (same rows, none twice)."""
    key = ns + "k"
    fill(rc, key, 50)
    driver = Driver(server, streams=key, startingOffsets="earliest", pageSize=10)
    end = driver.reader.latestOffset(driver.offset, driver.limit)
    (part,) = driver.reader.partitions(driver.offset, end)
    rows = []
    for i, batch in enumerate(driver.reader.read(part)):
        rows.extend(batch.to_pylist())
        if i == 0:
            assert rc.client_kill_filter(_type="normal", skipme=True) >= 1
    assert ns_of(rows) == list(range(50))


def test_retry_timeout_option():
    assert ReadOptions.parse({"streams": "s"}, True).connection.retry_timeout == 60
    assert ReadOptions.parse({"streams": "s", "retryTimeout": "0"}, True).connection.retry_timeout == 0
    with pytest.raises(OptionError, match="retryTimeout"):
        ReadOptions.parse({"streams": "s", "retryTimeout": "-1"}, True)


def test_stream_consumer_group_progress(server, rc, ns):
    key = ns + "g"
    fill(rc, key, 20)
    driver = Driver(server, streams=key, startingOffsets="earliest", maxRecordsPerTrigger=15,
                    consumerGroup="spark")
    # Progress is published when Spark asks for the next batch, i.e. once a batch has completed.
    driver.batch()
    group = rc.xinfo_groups(key)[0]
    assert (group["name"], group["entries-read"], group["lag"]) == (b"spark", 0, 20)
    driver.batch()
    group = rc.xinfo_groups(key)[0]
    assert (group["entries-read"], group["lag"]) == (15, 5)
    assert driver.batch() is None
    group = rc.xinfo_groups(key)[0]
    assert (group["entries-read"], group["lag"]) == (20, 0)
    assert group["last-delivered-id"] == rc.xinfo_stream(key)["last-generated-id"]


# ---------------------------------------------------------------------------------------------
# The sink, one partition at a time (outside Spark a task is partition 0)

ROWS_SCHEMA = StructType([StructField("k", StringType()), StructField("n", LongType()),
                          StructField("note", StringType())])


def arrow_batches(rows, schema=ROWS_SCHEMA, size=3):
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    for i in range(0, len(rows), size):
        chunk = rows[i:i + size]
        yield pa.RecordBatch.from_arrays(
            [pa.array([r[j] for r in chunk], arrow_schema.field(j).type) for j in range(len(schema))],
            schema=arrow_schema)


def test_sink_xadd_is_idempotent_per_scope(server, rc, ns):
    rows = [(ns + "out", i, None if i % 2 else f"note {i}") for i in range(10)]
    writer = BatchWriter(options(server, **{"stream.column": "k", "batchSize": 4}), ROWS_SCHEMA, False)
    first = writer.write(arrow_batches(rows))
    again = writer.write(arrow_batches(rows))  # a retried attempt of the same task
    assert (first.commands, first.skipped, again.skipped) == (10, False, True)
    entries = rc.xrange(ns + "out")
    assert [{k.decode(): v.decode() for k, v in f.items()} for _, f in entries] == [
        {"n": str(i), **({} if i % 2 else {"note": f"note {i}"})} for i in range(10)]
    assert rc.get(first.marker) == b"ok" and 0 < rc.ttl(first.marker) <= 7 * 24 * 3600
    writer.commit([first, again])
    assert not rc.exists(first.marker)  # the job is committed: nothing can retry any more


def test_sink_templated_write_id_needs_a_micro_batch(server, ns):
    writer = BatchWriter(options(server, stream=ns + "x", writeId="{queryId}:{batchId}:w"), ROWS_SCHEMA, False)
    with pytest.raises(OptionError, match="inside a streaming micro-batch"):
        writer.write(arrow_batches([(ns + "x", 1, "a")]))


def test_sink_named_write_keeps_markers(server, rc, ns):
    rows = [(ns + "out", i, "x") for i in range(3)]
    opts = options(server, stream=ns + "named", writeId=ns + "job1")
    for _ in range(2):  # the same named write run twice
        writer = BatchWriter(opts, ROWS_SCHEMA, False)
        writer.commit([writer.write(arrow_batches(rows))])
    assert rc.xlen(ns + "named") == 3


def test_sink_trimming_and_explicit_ids(server, rc, ns):
    schema = StructType([StructField("id", StringType()), StructField("v", StringType())])
    rows = [(f"{i}-1", str(i)) for i in range(1, 21)]
    writer = BatchWriter(options(server, stream=ns + "trim", **{"id.column": "id", "maxLen": 5,
                                                                "trimApproximate": "false"}), schema, False)
    writer.write(arrow_batches(rows, schema))
    assert [i.decode() for i, _ in rc.xrange(ns + "trim")] == [f"{i}-1" for i in range(16, 21)]
    writer = BatchWriter(options(server, stream=ns + "minid", **{"minId": "15-0", "trimApproximate": "false"}),
                         schema, False)
    writer.write(arrow_batches(rows, schema))
    assert rc.xlen(ns + "minid") == 20  # '*' IDs are all after 15-0; the id column is a field here


def test_sink_hset_set_and_ttl(server, rc, ns):
    rows = [(f"{ns}h{i % 3}", i, f"v{i}") for i in range(7)]
    BatchWriter(options(server, command="hset", ttl=100, **{"key.column": "k"}), ROWS_SCHEMA,
                False).write(arrow_batches(rows))
    assert rc.hgetall(ns + "h0") == {b"n": b"6", b"note": b"v6"}  # rows applied in order
    assert 0 < rc.ttl(ns + "h1") <= 100
    BatchWriter(options(server, command="set", ttl=50, **{"key.column": "k", "value.column": "note",
                                                           "key.prefix": "p:"}), ROWS_SCHEMA,
                False).write(arrow_batches(rows))
    assert rc.get(f"p:{ns}h2") == b"v5" and 0 < rc.ttl(f"p:{ns}h2") <= 50


def test_sink_map_fields_roundtrip(server, rc, ns):
    schema = StructType([StructField("stream", StringType()), StructField("fields",
                                                                          MapType(StringType(), StringType()))])
    rows = [(ns + "x", [("a", "1"), ("b", None)]), (ns + "x", [("c", "3")])]
    BatchWriter(options(server, stream=ns + "copy"), schema, False).write(arrow_batches(rows, schema))
    assert [f for _, f in rc.xrange(ns + "copy")] == [{b"a": b"1"}, {b"c": b"3"}]


def test_sink_server_errors_are_not_retried_into_duplicates(server, rc, ns):
    rc.set(ns + "str", "x")  # XADD onto a string: WRONGTYPE at EXEC time
    rows = [(ns + "ok", 1, "a"), (ns + "str", 2, "b"), (ns + "ok", 3, "c")]
    writer = BatchWriter(options(server, **{"stream.column": "k"}), ROWS_SCHEMA, False)
    with pytest.raises(SinkError, match="WRONGTYPE"):
        writer.write(arrow_batches(rows))
    with pytest.raises(SinkError, match="already written with errors"):
        writer.write(arrow_batches(rows))
    assert rc.xlen(ns + "ok") == 2  # applied once (no rollback in Redis), not twice


@pytest.mark.parametrize("hiredis_reader", [True, False])
def test_sink_error_replies_keep_the_connection_in_step(server, rc, ns, monkeypatch, hiredis_reader):
    """An error reply in the middle of a chunk is collected in its place, whether the replies come
    from redis-py's hiredis reader directly (read_many) or one read_response at a time."""
    from raxdb.spark import connection

    if not hiredis_reader:
        monkeypatch.setattr(connection, "NOT_ENOUGH_DATA", None)
    schema = StructType([StructField("id", StringType()), StructField("v", StringType())])
    rows = [("1-1", "a"), ("bad", "b"), ("2-1", "c"), ("3-1", "d")]
    for idempotent in ("true", "false"):
        writer = BatchWriter(options(server, stream=ns + idempotent, idempotent=idempotent, batchSize=2,
                                     **{"id.column": "id"}), schema, False)
        with pytest.raises(SinkError, match="Invalid stream ID"):
            writer.write(arrow_batches(rows, schema))
    # MULTI: queued, failed in EXEC's reply (no rollback); pipelined: the error reply in its place
    for idempotent in ("true", "false"):
        assert [i for i, _ in rc.xrange(ns + idempotent)] == [b"1-1", b"2-1", b"3-1"]


def test_sink_rejects_rows_without_fields(server, rc, ns):
    writer = BatchWriter(options(server, stream=ns + "e"), StructType([StructField("v", StringType())]), False)
    with pytest.raises(SinkError, match="no non-NULL field"):
        writer.write(arrow_batches([("a",), (None,)], StructType([StructField("v", StringType())])))
    assert not rc.exists(ns + "e")  # the partition's transaction was discarded as a whole


def test_sink_non_idempotent_mode(server, rc, ns):
    rows = [(ns + "out", i, "x") for i in range(4)]
    writer = BatchWriter(options(server, stream=ns + "plain", idempotent="false"), ROWS_SCHEMA, False)
    writer.write(arrow_batches(rows))
    writer.write(arrow_batches(rows))
    assert rc.xlen(ns + "plain") == 8 and not rc.keys(f"raxdb-sink:{writer.scope}*")


def test_stream_writer_commit_cleans_older_markers(server, rc, ns):
    from raxdb.spark.sink import SinkCommit

    writer = StreamWriter(options(server, stream=ns + "s", **{"idempotency.prefix": ns}),
                          ROWS_SCHEMA, False)
    for batch in range(3):
        marker = f"{ns}q1:{batch}:0"
        rc.set(marker, "ok")
        writer.commit([SinkCommit(0, marker, "q1"), None], batch)
    assert [rc.exists(f"{ns}q1:{b}:0") for b in range(3)] == [0, 0, 1]
    assert rc.hkeys(f"{ns}q1:batches") == [b"2"]
