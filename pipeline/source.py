"""The `raxdb` data source: batch reader, Structured Streaming reader, and the hooks to the sink.

Reading a stream range is the same in both modes: a partition is one key's half-open ID range
(lo, hi], read by a task with paged `XRANGE key (lo hi COUNT n` and turned into Arrow batches
(convert.py).  What differs is who picks the ranges:

- batch: `partitions()` resolves startingOffsets / endingOffsets against XINFO STREAM once;
- streaming: Spark asks `latestOffset(start, limit)` for the end of the next micro-batch and keeps
  both ends in its offset log (the checkpoint); `partitions(start, end)` derives the ranges from
  those two offsets alone, so a batch replayed after a restart reads exactly the same rows.

Both then cut the ranges with planning.plan_splits: one partition per key, or ID sub-ranges of
a key's range when minPartitions asks for more (a big backlog of one stream read in parallel).

Offsets are JSON objects `{stream: {"id": "<ms>-<seq>", "entriesRead": n}}` (see planning.py for
the counter), built with sorted keys so an unchanged offset serialises identically and Spark sees
"no new data".
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass

import redis
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from raxdb.spark import cluster, ids
from raxdb.spark.cluster import Route, driver_client, key_slot
from raxdb.spark.connection import (
    RETRYABLE,
    Backoff,
    RawSession,
    encode_key,
    pipelined,
    retrying,
    xrange_pages,
)
from raxdb.spark.convert import DEFAULT_SCHEMA, PageConverter, validate_schema
from raxdb.spark.options import ReadOptions
from raxdb.spark.planning import (
    DataLossError,
    MinBatchGate,
    Position,
    StreamInfo,
    advance,
    backlog_range,
    batch_start,
    check_batch,
    check_loss,
    count_pending,
    discover,
    plan_splits,
    resolve_end,
    resolve_start,
    scan_admitted,
    share_budget,
    skip_lost,
    stream_infos,
)
from raxdb.spark.sink import BatchWriter, StreamWriter

log = logging.getLogger("raxdb.spark")

# getDefaultReadLimit can only return Spark's built-in limits; a time window alone is signalled
# with a row limit no stream reaches, so Spark still distinguishes it from "read everything".
UNBOUNDED_ROWS = 1 << 62


@dataclass
class RangePartition(InputPartition):
    key: str
    lo: int
    hi: int
    node: tuple[str, int] | None = None  # on a cluster: the key's master when it was planned

    def __post_init__(self) -> None:
        super().__init__((self.key, self.lo, self.hi))


def display_name(key: str) -> str:
    return encode_key(key).decode("utf-8", "replace")


def read_partition(options: ReadOptions, schema: StructType, part: RangePartition) -> Iterator:
    """The range's entries as Arrow batches.  A connection lost mid-range (server restart,
    failover) resumes after the last entry handed out, so the rows are the same as without it; on a
    cluster, so does a MOVED (the stream's slot changed owner) or an ASK (its slot is migrating)."""
    converter = PageConverter(schema)
    name = display_name(part.key)
    key = encode_key(part.key)
    lo = part.lo
    conn = options.connection
    replica = conn.is_cluster and conn.read_from == "replica"
    route = Route(conn, key_slot(key), None if replica else part.node, replica)
    backoff = Backoff(conn, f"reading {name!r}")
    hops = 0  # redirections followed since the last page: a map still settling after a failover
    while True:
        try:
            with RawSession(route.options()) as session:
                if route.replica and not _replica_has(session, key, part.hi):
                    route.replica = False  # it lags behind the planned range: read the master
                    route.relearn()
                    continue
                for page in xrange_pages(session, key, lo, part.hi, options.page_size, route.asking):
                    batch = converter.convert(name, page)
                    lo = ids.parse(page[-1][0])
                    backoff.reset()
                    hops = 0
                    yield batch
            return
        except (*RETRYABLE, *cluster.TRANSIENT) as e:
            backoff.wait(e)
            _relearn(route)
        except redis.ResponseError as e:
            if not route.follow(e):
                raise
            hops += 1
            if hops > 3:
                backoff.wait(e)
                _relearn(route)


def _relearn(route: Route) -> None:
    try:
        route.relearn()
    except (*RETRYABLE, *cluster.TRANSIENT):
        pass  # no map yet: the next attempt at the old node fails and waits again


def _replica_has(session: RawSession, key: bytes, hi: int) -> bool:
    """Whether the replica this session reads (READONLY) has replicated the stream up to `hi`:
    a replica lags its master, and reading a planned range from one that has not got there would
    lose its last entries in silence."""
    session.call("READONLY")
    try:
        reply = session.call("XINFO", "STREAM", key)
    except redis.ResponseError as e:
        if "no such key" in str(e).lower():
            return False
        raise
    fields = dict(zip(reply[0::2], reply[1::2], strict=False))
    return ids.parse(fields[b"last-generated-id"]) >= hi


class BatchReader(DataSourceReader):
    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        validate_schema(schema)
        self.options = cluster.resolve(options)  # after validation: a bad query fails without a server
        self.schema = schema

    def partitions(self) -> list[RangePartition]:
        opts = self.options

        def snapshot() -> tuple[list[str], dict[str, StreamInfo], dict[str, cluster.Node | None]]:
            r = driver_client(opts.connection)
            try:
                keys = discover(r, opts.streams)
                return keys, stream_infos(r, keys), cluster.owners(r, keys)
            finally:
                r.close()

        keys, infos, nodes = retrying(opts.connection, "planning the batch read", snapshot)
        assert opts.ending is not None
        ranges = [backlog_range(key, resolve_start(opts.starting.for_key(key), infos[key]),
                                resolve_end(opts.ending.for_key(key), infos[key]), infos[key])
                  for key in keys]
        planned = [RangePartition(*p, node=nodes[p[0]])
                   for p in plan_splits([r for r in ranges if r is not None], opts.min_partitions)]
        # Spark wants at least one partition; an empty range reads nothing.
        return cluster.spread(planned, lambda p: p.node) or [RangePartition("", 0, 0)]

    def read(self, partition: InputPartition) -> Iterator:
        assert isinstance(partition, RangePartition)  # what partitions() planned
        if partition.hi <= partition.lo:
            return iter(())
        return read_partition(self.options, self.schema, partition)


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reader.  Lives in one driver-side Python process for the life of a query run;
    everything it must remember across a restart is in the offsets Spark checkpoints."""

    def __init__(self, options: ReadOptions, schema: StructType) -> None:
        validate_schema(schema)
        self.options = cluster.resolve(options)
        self.schema = schema
        self._redis = None
        self._target: dict[str, StreamInfo] | None = None  # Trigger.AvailableNow snapshot
        self._latest: dict | None = None
        self._published: str | None = None
        self._skipped: set[tuple[str, str]] = set()  # (key, start) whose loss latestOffset reported
        self.gate = (MinBatchGate(options.min_records_per_trigger, options.max_trigger_delay_ms)
                      if options.min_records_per_trigger is not None else None)

    def _retrying(self, what: str, call):
        return retrying(self.options.connection, what, call)

    @property
    def redis(self):
        if self._redis is None:
            self._redis = driver_client(self.options.connection)
        return self._redis

    def _snapshot(self) -> dict[str, StreamInfo]:
        return stream_infos(self.redis, discover(self.redis, self.options.streams))

    def initialOffset(self) -> dict:
        infos = self._retrying("planning the first micro-batch", self._snapshot)
        return {k: resolve_start(self.options.starting.for_key(k), infos[k]).to_json() for k in infos}

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._retrying("planning Trigger.AvailableNow", self._snapshot)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_records_per_trigger is not None:
            return ReadMaxRows(self.options.max_records_per_trigger)
        if self.options.max_time_per_trigger_ms is not None or self.gate is not None:
            return ReadMaxRows(UNBOUNDED_ROWS)
        return ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        # Planning only reads (and moves the consumer group, idempotently): safe to run again.
        return self._retrying("planning a micro-batch", lambda: self._latest_offset(start, limit))

    def _latest_offset(self, start: dict, limit: ReadLimit) -> dict:
        opts = self.options
        if opts.consumer_group:
            self._publish(start)
        positions = {k: Position.from_json(v) for k, v in start.items()}
        if self._target is not None:
            keys = sorted(set(self._target) | set(positions))
        else:
            keys = sorted(set(discover(self.redis, opts.streams)) | set(positions))
        infos = stream_infos(self.redis, keys)

        end: dict[str, Position] = {}
        pending: dict[str, tuple[Position, int, int | None]] = {}  # key -> (from, up to, exact)
        for key in keys:
            info = infos[key]
            pos = positions.get(key)
            if pos is None:  # a stream that appeared after the query started: read it all
                pos = Position(ids.ZERO, info.removed)
            else:
                problem = check_loss(key, pos, info)
                if problem:
                    if opts.fail_on_data_loss:
                        raise DataLossError(problem + ". The query cannot read them; restart it with "
                                            "failOnDataLoss=false to skip the lost entries.")
                    log.warning("%s; skipped (failOnDataLoss=false)", problem)
                    self._skipped.add((key, json.dumps(start[key], sort_keys=True)))
                    pos = skip_lost(pos, info)
            exact: int | None
            hi, exact = info.last_id, info.entries_added
            if self._target is not None:
                target = self._target.get(key)
                hi, exact = (target.last_id, target.entries_added) if target else (pos.id, None)
            if hi > pos.id:
                pending[key] = (pos, hi, exact)
            elif key in positions:
                end[key] = pos

        limited = not isinstance(limit, ReadAllAvailable)
        if limited and self.gate is not None and not self.gate.admit(
                lambda n: count_pending(self.redis, pending, infos, n, opts.page_size),
                final=self._target is not None):
            # Fewer than minRecordsPerTrigger new entries, and maxTriggerDelay has not passed.
            for key, (pos, _hi, _exact) in pending.items():
                if key in positions:
                    end[key] = pos
            pending = {}
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) and limit.max_rows < UNBOUNDED_ROWS \
            else None
        window = opts.max_time_per_trigger_ms if limited else None
        if max_rows is None and window is None:
            for key, (_pos, hi, exact) in pending.items():
                end[key] = Position(hi, exact)
        else:
            self._admit(pending, infos, max_rows, window, end)

        result = {k: end[k].to_json() for k in sorted(end)}
        self._latest = {
            k: {"id": ids.fmt(infos[k].last_id), "entriesAdded": infos[k].entries_added,
                "lag": (infos[k].entries_added - read
                        if k in end and (read := end[k].entries_read) is not None else None)}
            for k in keys}
        return start if json.dumps(result) == json.dumps(start) else result

    def _admit(self, pending: dict, infos: dict[str, StreamInfo], max_rows: int | None,
               window: int | None, end: dict[str, Position]) -> None:
        """Admission control: a share of maxRecordsPerTrigger per key (by backlog) and/or only
        entries less than maxTimePerTrigger ms after the key's first unread entry."""
        backlogs = {}
        for key, (pos, _hi, exact) in pending.items():
            known = exact is not None and pos.entries_read is not None
            # A pending key has at least one entry to read, whatever the counters say.
            backlogs[key] = max(exact - pos.entries_read if known else infos[key].length, 1)
        shares = share_budget(max_rows, backlogs, at_least_one=True) if max_rows is not None else None
        for key, (pos, hi, _exact) in pending.items():
            share = shares.get(key, 0) if shares is not None else None
            if share == 0:
                end[key] = pos
                continue
            if window is not None:
                first = self.redis.execute_command("XRANGE", encode_key(key), "(" + ids.fmt(pos.id),
                                                   ids.fmt(hi), "COUNT", 1)
                if first:
                    window_end = ids.pred((ids.ms_of(ids.parse(first[0][0])) + window) << 64)
                    hi = min(hi, window_end)
            last, count = scan_admitted(self.redis, key, pos.id, hi, share, self.options.page_size)
            end[key] = advance(pos, last, count, infos[key]) if count else pos

    def reportLatestOffset(self) -> dict | None:
        return self._latest

    def partitions(self, start: dict, end: dict) -> list[RangePartition]:
        """The ranges (start, end] per key, from the two offsets alone (a replayed batch reads the
        same rows), cut like a batch read's (minPartitions), after checking the stream still holds
        them: a batch replayed from the offset log after retention trimmed part of its range must
        not read fewer rows in silence."""
        bounds = {}
        for key in sorted(end):
            e = Position.from_json(end[key])
            # A key new in this batch: its start counter was never checkpointed (unknown).
            s = batch_start(Position.from_json(start[key]) if key in start else Position(ids.ZERO, None), e)
            if e.id > s.id:
                bounds[key] = (s, e)
        if not bounds:
            return []
        infos = self._retrying("checking a micro-batch", lambda: stream_infos(self.redis, list(bounds)))
        ranges = [backlog_range(key, s, e, infos[key]) for key, (s, e) in bounds.items()]
        parts = [RangePartition(*p) for p in plan_splits([r for r in ranges if r is not None],
                                                         self.options.min_partitions)]
        for key, (s, e) in bounds.items():
            problem = check_batch(key, s, e, infos[key])
            if problem is None or (key, json.dumps(start.get(key), sort_keys=True)) in self._skipped:
                continue
            if self.options.fail_on_data_loss:
                raise DataLossError(problem + ". The query cannot read them; restart it with "
                                    "failOnDataLoss=false to read what is left.")
            log.warning("%s; reading what is left (failOnDataLoss=false)", problem)
        if self.options.connection.is_cluster and parts:
            nodes = self._retrying("placing a micro-batch", lambda: cluster.owners(self.redis, list(bounds)))
            parts = cluster.spread([RangePartition(p.key, p.lo, p.hi, nodes[p.key]) for p in parts],
                                   lambda p: p.node)
        return parts

    def read(self, partition: InputPartition) -> Iterator:
        assert isinstance(partition, RangePartition)  # what partitions() planned
        return read_partition(self.options, self.schema, partition)

    def _publish(self, processed: dict) -> None:
        """Move the consumer group to `processed` so XINFO GROUPS shows the query's lag.  Spark asks
        latestOffset(start) only once the batch ending at `start` has completed (and again when a
        Trigger.AvailableNow run checks for more data), so `start` is safe to publish; Spark's
        commit() arrives one batch later and never for a run's last batch."""
        text = json.dumps(processed)
        if text == self._published:
            return
        group = self.options.consumer_group
        positions = {k: Position.from_json(v) for k, v in processed.items()}

        def setid_args(verb: str, key: str, pos: Position) -> tuple:
            read = ("ENTRIESREAD", pos.entries_read) if pos.entries_read is not None else ()
            return ("XGROUP", verb, encode_key(key), group, ids.fmt(pos.id), *read)

        replies = pipelined(self.redis, [setid_args("SETID", k, p) for k, p in positions.items()])
        for (key, pos), reply in zip(positions.items(), replies, strict=True):
            if isinstance(reply, Exception) and "NOGROUP" in str(reply):
                try:
                    self.redis.execute_command(*setid_args("CREATE", key, pos))
                except RETRYABLE:
                    raise
                except Exception as e:  # the stream may have been deleted meanwhile
                    log.warning("consumer group %s on %s not created: %s", group, key, e)
        self._published = text

    def stop(self) -> None:
        if self._redis is not None:
            self._redis.close()
            self._redis = None


class RaxdbDataSource(DataSource):
    """`spark.read.format("raxdb")`, `spark.readStream.format("raxdb")`, `df.write.format("raxdb")`."""

    @classmethod
    def name(cls) -> str:
        return "raxdb"

    def schema(self) -> StructType:
        return DEFAULT_SCHEMA

    def reader(self, schema: StructType) -> BatchReader:
        return BatchReader(ReadOptions.parse(self.options, streaming=False), schema)

    def streamReader(self, schema: StructType) -> StreamReader:
        return StreamReader(ReadOptions.parse(self.options, streaming=True), schema)

    def writer(self, schema: StructType, overwrite: bool):
        return BatchWriter(self.options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool):
        return StreamWriter(self.options, schema, overwrite)
