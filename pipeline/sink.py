"""The `raxdb` sink: rows -> XADD (streams), HSET (hashes) or SET (strings), batch and streaming.

Delivery: each write task (one partition of one batch) commits all its commands in ONE MULTI/EXEC
transaction together with a marker key `<idempotency.prefix><scope>:<partition>`, guarded by
WATCH on that marker.  Scope is `<query id>:<batch id>` for streaming queries (both read from the
task's Spark local properties, stable across restarts from a checkpoint) and the `writeId` option
(which may contain `{queryId}` / `{batchId}` inside foreachBatch) or a per-write UUID for batch
writes.  So:

- a retried or speculative task attempt finds the marker and writes nothing (or loses the WATCH
  race and writes nothing);
- a micro-batch replayed after a crash skips the partitions that had committed;
- a task that dies before EXEC leaves nothing behind (the server drops an unfinished MULTI with
  the connection);
- a task whose connection drops (server restart, failover) reconnects within retryTimeout and
  redoes its transaction from the marker check: the EXEC that may have run before the loss set
  the marker, so the partition is written once either way (Replayable keeps the partition's
  commands for that).

MULTI/EXEC + WATCH was chosen over a Lua script because it needs no scripting support and every
Redis-compatible server has it.  Commands are streamed into the transaction in chunks (`batchSize`),
reading each chunk's +QUEUED replies before sending more, so neither side buffers a whole
partition's replies.  Markers expire after `idempotency.ttl`; a batch write deletes its own
markers when Spark commits the job, a streaming query deletes the markers of batch N-1 when batch N
commits (Spark never replays a batch once the next one has been planned).  With
`idempotent=false`, commands are pipelined without transaction or marker: at-least-once.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat

import pyarrow as pa
import redis
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import BinaryType, MapType, StructType

from raxdb.spark import cluster
from raxdb.spark.cluster import Route, driver_client, group_by_slot, slot_map, slot_tag
from raxdb.spark.connection import RETRYABLE, Backoff, RawSession, retrying
from raxdb.spark.options import OptionError, WriteOptions

QUERY_ID = "sql.streaming.queryId"
REDIRECTIONS = (redis.exceptions.AskError, *cluster.TRANSIENT)  # AskError includes MovedError
BATCH_ID = "streaming.sql.batchId"


class SinkError(RuntimeError):
    """A write was rejected by the server (for instance WRONGTYPE) or cannot be encoded."""


@dataclass
class SinkCommit(WriterCommitMessage):
    partition: int
    marker: str | None = None
    query_id: str | None = None
    commands: int = 0
    skipped: bool = False
    batch_id: int | None = None


# ---------------------------------------------------------------------------------------------
# Rows -> commands


def _strings(column: pa.Array) -> list:
    """Column values as the bytes/str the server stores (NULL -> None)."""
    if pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type):
        return column.to_pylist()
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        column = column.cast(pa.string())
    return column.to_pylist()


class CommandBuilder:
    """Turns Arrow batches of the DataFrame's schema into command argument tuples."""

    def __init__(self, opts: WriteOptions, schema: StructType) -> None:
        self.opts = opts
        names = schema.fieldNames()
        self.index = {n: i for i, n in enumerate(names)}

        def column(option: str, name: str | None) -> int | None:
            if name is None:
                return None
            if name not in self.index:
                raise OptionError(f"option {option!r}: no column {name!r} in {names}")
            return self.index[name]

        self.key_col = column("stream.column", opts.stream_column) if opts.command == "xadd" \
            else column("key.column", opts.key_column)
        self.fixed_key = opts.stream if opts.command == "xadd" else opts.key
        self.id_col = column("id.column", opts.id_column)
        used = {i for i in (self.key_col, self.id_col) if i is not None}
        self.map_col: int | None = None
        self.field_cols: list[int] = []
        self.value_col: int | None = None
        if opts.command == "set":
            if opts.value_column is not None:
                self.value_col = column("value.column", opts.value_column)
            else:
                rest = [i for i in range(len(names)) if i not in used]
                if len(rest) != 1:
                    raise OptionError("SET sink: name the value with 'value.column' (the DataFrame has "
                                      f"{len(rest)} columns besides the key)")
                self.value_col = rest[0]
            return
        if opts.fields_column is not None:
            self.map_col = column("fields.column", opts.fields_column)
        elif "fields" in self.index and isinstance(schema["fields"].dataType, MapType):
            self.map_col = self.index["fields"]  # what the reader produces: round-trips
        if self.map_col is not None:
            if not isinstance(schema[self.map_col].dataType, MapType):
                raise OptionError(f"column {names[self.map_col]!r} must be a map to hold fields")
        else:
            self.field_cols = [i for i in range(len(names)) if i not in used]
            if not self.field_cols:
                raise OptionError("no columns left to write as fields")
        self.field_names = [names[i] for i in self.field_cols]
        self.binary_key = self.key_col is not None and isinstance(schema[self.key_col].dataType, BinaryType)

        trim: list = []
        if opts.max_len is not None:
            trim = ["MAXLEN", "~" if opts.trim_approximate else "=", opts.max_len]
        elif opts.min_id is not None:
            trim = ["MINID", "~" if opts.trim_approximate else "=", opts.min_id]
        self.trim = trim

    def keys(self, batch: pa.RecordBatch) -> Iterable:
        prefix = self.opts.key_prefix
        if self.fixed_key is not None:  # the options give it or a key column, never both
            return repeat(prefix + self.fixed_key, batch.num_rows)
        keys = _strings(batch.column(self.key_col))
        if None in keys:
            raise SinkError(f"NULL in key column {batch.schema.names[self.key_col]!r}")
        if prefix:
            keys = [(prefix.encode() + k) if isinstance(k, bytes) else prefix + k for k in keys]
        return keys

    def field_pairs(self, batch: pa.RecordBatch) -> list[list]:
        """Per row, the flat [field, value, ...] list with NULL values left out."""
        if self.map_col is not None:
            maps = batch.column(self.map_col)
            offsets = maps.offsets.to_pylist()
            names, values = _strings(maps.keys), _strings(maps.items)
            valid = maps.is_valid().to_pylist()
            rows = []
            for i in range(batch.num_rows):
                pairs: list = []
                if valid[i]:
                    for j in range(offsets[i], offsets[i + 1]):
                        if values[j] is not None:
                            pairs += (names[j], values[j])
                rows.append(pairs)
            return rows
        columns = [_strings(batch.column(i)) for i in self.field_cols]
        rows = []
        for row in zip(*columns, strict=True):
            pairs = []
            for name, value in zip(self.field_names, row, strict=True):
                if value is not None:
                    pairs += (name, value)
            rows.append(pairs)
        return rows

    def commands(self, batch: pa.RecordBatch) -> list[tuple]:
        keys = self.keys(batch)
        opts = self.opts
        n = batch.num_rows
        if opts.command == "set":
            values = _strings(batch.column(self.value_col))
            if None in values:
                raise SinkError(f"NULL in value column {batch.schema.names[self.value_col]!r}")
            ttl = [repeat("EX", n), repeat(opts.ttl, n)] if opts.ttl else []
            return list(zip(repeat("SET", n), keys, values, *ttl, strict=True))
        if opts.command == "hset":
            head = [repeat("HSET", n), keys]
        else:
            entry_ids = _strings(batch.column(self.id_col)) if self.id_col is not None else None
            if entry_ids is not None and None in entry_ids:
                entry_ids = [i if i is not None else "*" for i in entry_ids]
            head = [repeat("XADD", n), keys, *(repeat(t, n) for t in self.trim),
                    entry_ids if entry_ids is not None else repeat("*", n)]
        if self.map_col is None and all(batch.column(i).null_count == 0 for i in self.field_cols):
            # Common case, no NULL to leave out: every command is one zip() of the columns.
            parts = head
            for name, i in zip(self.field_names, self.field_cols, strict=True):
                parts += [repeat(name, n), _strings(batch.column(i))]
            return list(zip(*parts, strict=True))
        prefixes = list(zip(*head, strict=True))
        rows = self.field_pairs(batch)
        for prefix, pairs in zip(prefixes, rows, strict=True):
            if not pairs:
                raise SinkError(f"a row for {prefix[1]!r} has no non-NULL field: "
                                f"{opts.command.upper()} needs at least one")
        return [(*prefix, *pairs) for prefix, pairs in zip(prefixes, rows, strict=True)]

    @property
    def expires(self) -> bool:
        """Whether written keys get an EXPIRE (SET carries its TTL in the command itself)."""
        return bool(self.opts.ttl) and self.opts.command != "set"

    def expiries(self, keys: set) -> list[tuple]:
        if not self.expires:
            return []
        return [("EXPIRE", key, self.opts.ttl) for key in sorted(keys, key=repr)]


# ---------------------------------------------------------------------------------------------
# One partition


def _task_context():
    from pyspark import TaskContext

    return TaskContext.get()


def _chunks(builder: CommandBuilder, batches: Iterator[pa.RecordBatch], size: int,
            touched: set | None) -> Iterator[list[tuple]]:
    """The partition's commands in lists of `size` (the last one shorter)."""
    pending: list[tuple] = []
    for batch in batches:
        if batch.num_rows == 0:
            continue
        commands = builder.commands(batch)
        if touched is not None:
            touched.update(command[1] for command in commands)
        pending += commands
        if len(pending) >= size:
            cut = len(pending) - len(pending) % size
            for start in range(0, cut, size):
                yield pending[start:start + size]
            pending = pending[cut:]
    if pending:
        yield pending


def _send_and_check(session: RawSession, chunk: Sequence[tuple], expect_queued: bool) -> list[str]:
    """Send a chunk, read one reply per command; error replies are collected, not raised, so the
    connection stays in step with the server.  A cluster's redirection (MOVED, ASK, TRYAGAIN,
    CLUSTERDOWN: the slot is not served here now) is raised once every reply is read."""
    session.send_many(chunk)
    replies = session.read_many(len(chunk))
    if expect_queued and replies.count(b"QUEUED") == len(replies):
        return []
    errors = []
    redirected: Exception | None = None
    for command, reply in zip(chunk, replies, strict=True):
        if isinstance(reply, REDIRECTIONS):  # read_many leaves error replies in place, as objects
            redirected = reply
        elif isinstance(reply, redis.ResponseError):
            errors.append(f"{command[0]} {command[1]!r}: {reply}")
        elif expect_queued and reply != b"QUEUED" and reply != "QUEUED":
            errors.append(f"{command[0]}: unexpected reply {reply!r} inside MULTI")
    if redirected is not None:
        raise redirected
    return errors


class Replayable:
    """The chunks of a partition, kept once produced, so that a transaction cut off by a lost
    connection can be queued again from its first command (Spark's rows are read only once)."""

    def __init__(self, chunks: Iterator[list[tuple]]) -> None:
        self._rest = chunks
        self._seen: list[list[tuple]] = []

    def __iter__(self) -> Iterator[list[tuple]]:
        yield from list(self._seen)
        for chunk in self._rest:
            self._seen.append(chunk)
            yield chunk


def write_partition(opts: WriteOptions, builder: CommandBuilder, batches: Iterator[pa.RecordBatch],
                    scope: str | None, query_id: str | None) -> SinkCommit:
    context = _task_context()
    partition = context.partitionId() if context is not None else 0
    touched: set = set()  # keys to EXPIRE (only collected when a ttl applies)
    chunks = _chunks(builder, batches, opts.batch_size, touched if builder.expires else None)
    first = next(chunks, None)
    if first is None:  # an empty partition writes nothing and needs no marker
        return SinkCommit(partition, query_id=query_id)
    backoff = Backoff(opts.connection, f"writing partition {partition}")
    if opts.connection.is_cluster:
        return _write_slots(opts, builder, _prepend(first, chunks), touched, scope, partition, query_id,
                            backoff)
    if not opts.idempotent or scope is None:
        return _at_least_once(opts, builder, _prepend(first, chunks), touched, partition, query_id, backoff)
    # A lost connection drops the unfinished MULTI with it, and the EXEC that may have run before
    # the loss also set the marker: so the whole transaction is tried again from its marker check.
    replay = Replayable(_prepend(first, chunks))
    marker = f"{opts.idempotency_prefix}{scope}:{partition}"
    while True:
        try:
            with RawSession(opts.connection) as session:
                return _transactional(opts, builder, session, iter(replay), touched, marker, partition,
                                      query_id)
        except RETRYABLE as e:
            backoff.wait(e)


def _write_slots(opts: WriteOptions, builder: CommandBuilder, chunks: Iterator[list[tuple]], touched: set,
                 scope: str | None, partition: int, query_id: str | None, backoff: Backoff) -> SinkCommit:
    """On a cluster: the partition's commands grouped by hash slot (each slot's in their order),
    every group written on its slot's master in its own MULTI/EXEC with its own marker
    `<prefix><scope>:<partition>:{tag}`, the tag one that hashes to that slot: marker and keys live
    and move together, a retried task skips the slots that had committed and writes the others."""
    groups = group_by_slot([*(c for chunk in chunks for c in chunk), *builder.expiries(touched)])
    owners = retrying(opts.connection, "loading the cluster's slot map", lambda: slot_map(opts.connection))
    markers, count, skipped = [], 0, True
    for slot in sorted(groups):
        marker = f"{opts.idempotency_prefix}{scope}:{partition}:{slot_tag(slot)}" \
            if opts.idempotent and scope is not None else None
        done = _write_slot(opts, builder, Route(opts.connection, slot, owners.get(slot)), groups[slot],
                           marker, partition, query_id, backoff)
        count += done.commands
        skipped = skipped and done.skipped
        if done.marker:
            markers.append(done.marker)
    return SinkCommit(partition, "\n".join(markers) or None, query_id, commands=count,
                      skipped=skipped and bool(markers))


def _write_slot(opts: WriteOptions, builder: CommandBuilder, route: Route, group: list[tuple],
                marker: str | None, partition: int, query_id: str | None, backoff: Backoff) -> SinkCommit:
    """One slot's commands on its master: a transaction with its marker (exactly once), or without
    a marker pipelined (at least once: a group cut off by a redirection is sent again whole).
    MOVED goes to the new owner at once; ASK / TRYAGAIN (the slot is migrating: the marker and the
    keys may be split between two nodes) and lost connections wait and re-read the slot map."""
    chunks = [group[i:i + opts.batch_size] for i in range(0, len(group), opts.batch_size)]
    hops = 0
    while True:
        try:
            with RawSession(route.options()) as session:
                if marker is None:
                    errors: list[str] = []
                    for chunk in chunks:
                        errors += _send_and_check(session, chunk, expect_queued=False)
                    if errors:
                        raise SinkError(_summary(errors))
                    return SinkCommit(partition, query_id=query_id, commands=len(group))
                return _transactional(opts, builder, session, iter(chunks), set(), marker, partition, query_id)
        except redis.exceptions.MovedError as e:
            hops += 1
            if hops > 3:  # nodes that still disagree after a failover: let the map settle
                backoff.wait(e)
                route.relearn()
            else:
                route.follow(e)
        except (*RETRYABLE, *REDIRECTIONS) as e:
            backoff.wait(e)
            try:
                route.relearn()
            except (*RETRYABLE, *cluster.TRANSIENT):
                pass  # no map yet: the next attempt fails and waits again


def _at_least_once(opts: WriteOptions, builder: CommandBuilder, chunks: Iterator[list[tuple]], touched: set,
                   partition: int, query_id: str | None, backoff: Backoff) -> SinkCommit:
    """idempotent=false: pipelined chunks; a chunk cut off by a lost connection is sent again."""
    errors: list[str] = []
    session: list[RawSession] = []  # the open session, if any

    def send(chunk: Sequence[tuple]) -> None:
        while True:
            try:
                if not session:
                    session.append(RawSession(opts.connection))
                errors.extend(_send_and_check(session[0], chunk, expect_queued=False))
                backoff.reset()
                return
            except RETRYABLE as e:
                if session:
                    session.pop().close()
                backoff.wait(e)

    count = 0
    try:
        for chunk in chunks:
            send(chunk)
            count += len(chunk)
        expiries = builder.expiries(touched)
        if expiries:
            send(expiries)
    finally:
        if session:
            session.pop().close()
    if errors:
        raise SinkError(_summary(errors))
    return SinkCommit(partition, query_id=query_id, commands=count)


def _prepend(first: list, rest: Iterator[list]) -> Iterator[list]:
    yield first
    yield from rest


def _summary(errors: list[str]) -> str:
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return "; ".join(errors[:3]) + more


def _transactional(opts: WriteOptions, builder: CommandBuilder, session: RawSession,
                   chunks: Iterator[list[tuple]], touched: set, marker: str, partition: int,
                   query_id: str | None) -> SinkCommit:
    session.call("WATCH", marker)
    state = session.call("GET", marker)
    if state is not None:
        session.call("UNWATCH")
        return _already_done(state, marker, partition, query_id)
    session.call("MULTI")
    count, errors = 0, []
    for chunk in chunks:
        errors += _send_and_check(session, chunk, expect_queued=True)
        count += len(chunk)
    if errors:  # rejected while queueing (arity, syntax): nothing has been applied
        session.call("DISCARD")
        raise SinkError(_summary(errors))
    tail = [*builder.expiries(touched), ("SET", marker, "ok", "EX", opts.idempotency_ttl)]
    errors = _send_and_check(session, tail, expect_queued=True)
    if errors:
        session.call("DISCARD")
        raise SinkError(_summary(errors))
    results = session.call("EXEC")
    if results is None:  # WATCH fired: another attempt committed this partition first
        state = session.call("GET", marker)
        if state is None:
            raise SinkError(f"transaction on {marker} aborted by a concurrent change; retrying the task")
        return _already_done(state, marker, partition, query_id)
    failed = [f"command {i}: {r}" for i, r in enumerate(results) if isinstance(r, Exception)]
    if failed:
        # Applied except the failures (Redis has no rollback): record that, so a retry fails the
        # same way instead of writing the successful part twice.
        message = _summary(failed)
        session.call("SET", marker, "error: " + message, "EX", opts.idempotency_ttl)
        raise SinkError(message)
    return SinkCommit(partition, marker, query_id, commands=count)


def _already_done(state: bytes, marker: str, partition: int, query_id: str | None) -> SinkCommit:
    text = state.decode("utf-8", "replace") if isinstance(state, bytes) else str(state)
    if text.startswith("error"):
        raise SinkError(f"partition already written with errors ({marker}): {text}")
    return SinkCommit(partition, marker, query_id, skipped=True)


# ---------------------------------------------------------------------------------------------
# Spark writers


def _micro_batch() -> tuple[str | None, str | None]:
    """(query id, batch id) when the task runs for a streaming micro-batch (the streaming sink,
    or a batch write inside foreachBatch): Spark passes both down as local properties."""
    context = _task_context()
    if context is None:
        return None, None
    return context.getLocalProperty(QUERY_ID), context.getLocalProperty(BATCH_ID)


class BatchWriter(DataSourceArrowWriter):
    """`df.write.format("raxdb")`: idempotent per task attempt within the write, and across re-runs
    when the `writeId` option names the write.  In foreachBatch, `writeId` may contain `{queryId}`
    and `{batchId}`: a micro-batch replayed after a restart then skips what it had written, and the
    markers of earlier batches are cleaned up as with the streaming sink."""

    def __init__(self, options, schema: StructType, overwrite: bool) -> None:
        self.opts = WriteOptions.parse(options)
        if overwrite and self.opts.command == "xadd":
            raise OptionError("the XADD sink appends: use mode('append')")
        self.schema = schema
        CommandBuilder(self.opts, schema)  # validate the column options on the driver
        self.opts = cluster.resolve(self.opts)  # after validation: a bad write fails without a server
        self.templated = self.opts.write_id is not None and "{" in self.opts.write_id
        self.scope = self.opts.write_id or uuid.uuid4().hex

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        builder = CommandBuilder(self.opts, self.schema)
        query_id = batch_id = None
        scope = self.scope
        if self.templated:
            query_id, batch_id = _micro_batch()
            if query_id is None or batch_id is None:
                raise OptionError("writeId uses {queryId} / {batchId}, but this write does not run "
                                  "inside a streaming micro-batch (foreachBatch)")
            try:
                scope = self.scope.format(queryId=query_id, batchId=batch_id)
            except (KeyError, IndexError, ValueError) as e:
                raise OptionError(f"writeId {self.scope!r}: only {{queryId}} and {{batchId}} "
                                  f"can be substituted ({e})") from None
        result = write_partition(self.opts, builder, iterator, scope, query_id)
        result.batch_id = int(batch_id) if batch_id is not None else None
        return result

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        done = [m for m in messages if isinstance(m, SinkCommit)]  # what write() returned, None where it failed
        if self.templated:
            batch_ids = {m.batch_id for m in done if m.batch_id is not None}
            if len(batch_ids) == 1:
                _forget_older_batches(self.opts, done, batch_ids.pop(), self.scope)
        elif not self.opts.write_id:  # a named write keeps its markers: re-running it is a no-op
            _delete(self.opts, [m.marker for m in done if m.marker])


class StreamWriter(DataSourceStreamArrowWriter):
    """`df.writeStream.format("raxdb")`: exactly-once per (query id, batch id, partition)."""

    def __init__(self, options, schema: StructType, overwrite: bool) -> None:
        self.opts = WriteOptions.parse(options)
        self.schema = schema
        CommandBuilder(self.opts, schema)
        self.opts = cluster.resolve(self.opts)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        query_id, batch_id = _micro_batch()
        scope = f"{query_id}:{batch_id}" if query_id and batch_id is not None else None
        builder = CommandBuilder(self.opts, self.schema)
        return write_partition(self.opts, builder, iterator, scope, query_id)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        _forget_older_batches(self.opts, [m for m in messages if isinstance(m, SinkCommit)], batchId, "")


def _forget_older_batches(opts: WriteOptions, done: list[SinkCommit], batch_id: int, name: str) -> None:
    """Record batch `batch_id`'s markers in the query's ledger (a hash: batch id -> markers) and
    delete the markers of older batches: Spark plans batch N only after batch N-1 is in its commit
    log, so a batch older than the one committing now is never replayed."""
    query_ids = {m.query_id for m in done if m.query_id}
    if not opts.idempotent or len(query_ids) != 1:
        return
    ledger = f"{opts.idempotency_prefix}{query_ids.pop()}:{name}:batches" if name \
        else f"{opts.idempotency_prefix}{query_ids.pop()}:batches"
    markers = "\n".join(m.marker for m in done if m.marker)
    retrying(opts.connection, "committing the sink's batch",
             lambda: _record_and_forget(opts, ledger, batch_id, markers))


def _record_and_forget(opts: WriteOptions, ledger: str, batch_id: int, markers: str) -> None:
    r = driver_client(opts.connection)
    try:
        r.hset(ledger, str(batch_id), markers)
        r.expire(ledger, opts.idempotency_ttl)
        older = [b for b in r.hkeys(ledger) if int(b) < batch_id]
        if older:
            lists = r.hmget(ledger, older)
            stale = [m for text in lists if isinstance(text, bytes) for m in text.decode().split("\n") if m]
            for i in range(0, len(stale), 1000):
                r.delete(*stale[i:i + 1000])
            r.hdel(ledger, *older)
    finally:
        r.close()


def _delete(opts: WriteOptions, markers: list[str]) -> None:
    markers = [m for text in markers for m in text.split("\n")]  # a cluster task's: one per slot
    if not markers:
        return

    def delete() -> None:
        r = driver_client(opts.connection)
        try:
            for i in range(0, len(markers), 1000):
                r.delete(*markers[i:i + 1000])
        finally:
            r.close()

    retrying(opts.connection, "deleting the sink's markers", delete)
