"""Driver-side planning: stream discovery, XINFO STREAM snapshots, resolving offsets, detecting
data loss, admission control and cutting ranges into partitions.

A position in a stream is the pair (last ID read, entries read).  The ID is what reading needs
(XRANGE `(id`); the entries-read counter is the one Redis keeps for consumer groups: how many
entries ever added to the stream have an ID <= the position.  XINFO STREAM's `entries-added` minus
that counter is the exact lag, and it is what makes trimming detectable: once the stream's first
entry is past the position, every entry still in the stream is unread, so if `entries-added -
entries-read` exceeds `length`, the difference was removed before it was read.  The counter is
known exactly when a position is the stream's last ID (`entries-added`) or lies before its first
entry (`entries-added - length`), and it is carried forward by counting the entries admitted into
a batch; it is None when a position was given as an arbitrary ID or timestamp in the middle of a
stream, until a batch reaches the end of the stream.

A stream deleted and re-created is a reset (is_reset): its last ID went back, or its
entries-added fell below a position's counter.  A planned micro-batch (start, end] is checked
again when its partitions are made (check_batch), which is what catches a batch replayed from the
offset log after retention removed part of its range.

Every function here is deterministic in its inputs (the offsets and the snapshots passed in), so
Spark replaying a batch from its offset log plans exactly the same partitions.  The one piece of
state is MinBatchGate (minRecordsPerTrigger / maxTriggerDelay): it reads a clock, but it only
decides *when* latestOffset ends a batch, never what a planned batch holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import redis

from raxdb.spark import ids
from raxdb.spark.connection import encode_key, pipelined, scan_streams
from raxdb.spark.options import EARLIEST, LATEST, Bound, StreamSelection


class DataLossError(RuntimeError):
    """Entries after a query's checkpoint were removed from the stream before they were read."""


@dataclass(frozen=True)
class StreamInfo:
    """The XINFO STREAM fields planning needs (IDs as 128-bit integers)."""

    length: int
    last_id: int  # last-generated-id
    entries_added: int
    max_deleted: int
    first_entry: int | None  # None when the stream is empty
    last_entry: int | None

    @property
    def removed(self) -> int:
        return self.entries_added - self.length


EMPTY = StreamInfo(0, 0, 0, 0, None, None)


def parse_xinfo(reply: list) -> StreamInfo:
    fields = dict(zip(reply[0::2], reply[1::2], strict=False))

    def entry_id(name: bytes) -> int | None:
        entry = fields.get(name)
        return ids.parse(entry[0]) if entry else None

    length = int(fields[b"length"])
    # Redis < 7.0 has no entries-added: only what is still in the stream can be counted then.
    added = fields.get(b"entries-added")
    return StreamInfo(
        length=length,
        last_id=ids.parse(fields[b"last-generated-id"]),
        entries_added=int(added) if added is not None else length,
        max_deleted=ids.parse(fields.get(b"max-deleted-entry-id", b"0-0")),
        first_entry=entry_id(b"first-entry"),
        last_entry=entry_id(b"last-entry"),
    )


def stream_infos(r: redis.Redis | redis.RedisCluster, keys: Sequence[str]) -> dict[str, StreamInfo]:
    """One pipelined XINFO STREAM per key; a missing key reads as an empty, never-used stream."""
    replies = pipelined(r, [("XINFO", "STREAM", encode_key(k)) for k in keys])
    infos = {}
    for key, reply in zip(keys, replies, strict=True):
        if isinstance(reply, redis.ResponseError):
            if "no such key" in str(reply).lower():
                infos[key] = EMPTY
                continue
            raise redis.ResponseError(f"XINFO STREAM {key}: {reply}")
        infos[key] = parse_xinfo(reply)
    return infos


def discover(r: redis.Redis | redis.RedisCluster, selection: StreamSelection) -> list[str]:
    """Literal keys (present or not: a stream may appear later) plus streams matching the globs."""
    found = set(selection.keys)
    for pattern in selection.patterns:
        found.update(scan_streams(r, pattern))
    return sorted(found)


# ---------------------------------------------------------------------------------------------
# Positions


@dataclass(frozen=True)
class Position:
    id: int
    entries_read: int | None

    def to_json(self) -> dict:
        return {"id": ids.fmt(self.id), "entriesRead": self.entries_read}

    @classmethod
    def from_json(cls, value: dict | str) -> Position:
        if isinstance(value, str):  # tolerate the short form {key: "id"}
            return cls(ids.parse(value), None)
        return cls(ids.parse(value["id"]), value.get("entriesRead"))


def counter_at(position_id: int, info: StreamInfo) -> int | None:
    """entries-read for a position, when the snapshot determines it."""
    if position_id >= info.last_id:
        return info.entries_added if position_id == info.last_id else None
    if info.first_entry is None or position_id < info.first_entry:
        return info.removed
    return None


def resolve_start(bound: Bound, info: StreamInfo) -> Position:
    """Exclusive starting position for a bound."""
    if bound.kind == EARLIEST:
        if info.first_entry is None:
            return Position(info.last_id, info.entries_added)
        return Position(ids.pred(info.first_entry), info.removed)
    if bound.kind == LATEST:
        return Position(info.last_id, info.entries_added)
    position_id = ids.from_timestamp(bound.value) if bound.kind == "timestamp" else bound.value
    if bound.kind == "offset" and bound.entries_read is not None:
        return Position(position_id, bound.entries_read)
    return Position(position_id, counter_at(position_id, info))


def resolve_end(bound: Bound, info: StreamInfo) -> Position:
    """Inclusive ending position for a bound (batch reads)."""
    if bound.kind == LATEST:
        return Position(info.last_id, info.entries_added)
    position_id = ids.from_timestamp(bound.value) if bound.kind == "timestamp" else bound.value
    if bound.kind == "offset" and bound.entries_read is not None:
        return Position(position_id, bound.entries_read)
    return Position(position_id, counter_at(position_id, info))


def is_reset(pos: Position, info: StreamInfo) -> bool:
    """Whether the stream was deleted and re-created since `pos` was read from it: its last ID
    went back before the position, or fewer entries were ever added to it than the position had
    already read (a re-created stream with `*` IDs is later than the old one, but starts counting
    from zero).  A stream that is missing or was never written (entries-added 0) is not a reset:
    there is nothing to compare with yet."""
    if not info.entries_added:
        return False
    return info.last_id < pos.id or (pos.entries_read is not None and info.entries_added < pos.entries_read)


def reset_message(key: str, pos: Position, info: StreamInfo) -> str:
    if info.last_id < pos.id:
        why = f"its last ID {ids.fmt(info.last_id)} is before the checkpointed position {ids.fmt(pos.id)}"
    else:
        why = (f"it holds {info.entries_added} entries ever added, fewer than the {pos.entries_read} "
               f"the checkpoint has read")
    return f"stream {key!r} was reset: {why} (was the key deleted and re-created?)"


def check_loss(key: str, start: Position, info: StreamInfo) -> str | None:
    """A description of the entries after `start` that can no longer be read, or None.

    Two cases: the stream was deleted and re-created (is_reset), or trimming (or XDEL) removed
    unread entries from its head (see the module docstring).  With an unknown counter only XDEL
    is visible, through max-deleted-entry-id."""
    if is_reset(start, info):
        return reset_message(key, start, info)
    if info.first_entry is not None and info.first_entry <= start.id:
        return None  # the head has not passed the checkpoint
    if start.entries_read is not None:
        lost = info.entries_added - start.entries_read - info.length
        if lost > 0:
            return (f"{lost} entries of stream {key!r} after {ids.fmt(start.id)} were trimmed or "
                    f"deleted before they were read (first entry now "
                    f"{ids.fmt(info.first_entry) if info.first_entry is not None else 'none'})")
        return None
    if info.max_deleted > start.id:
        return (f"entries of stream {key!r} after {ids.fmt(start.id)} were deleted before they were "
                f"read (max-deleted-entry-id {ids.fmt(info.max_deleted)})")
    return None


def batch_start(start: Position, end: Position) -> Position:
    """Where a micro-batch (start, end] really starts: a batch planned after a reset (its end is
    before its start, by ID or by counter) reads the re-created stream from its beginning."""
    if end.id < start.id or (end.entries_read is not None and start.entries_read is not None
                             and end.entries_read < start.entries_read):
        return Position(ids.ZERO, 0)
    return start


def check_batch(key: str, start: Position, end: Position, info: StreamInfo) -> str | None:
    """A description of the entries of a planned micro-batch (start, end] the stream no longer
    holds, or None.  This is what catches a batch replayed from the offset log after retention
    removed part of its range while the query was down: both ends carry entriesRead, so the batch
    should read `end - start` entries, and since trimming removes the oldest entries first, those
    of them among the `entries-added - length` removed ones are lost.  Unknown counters: no check
    (the next batch's check_loss still sees XDEL through max-deleted-entry-id)."""
    start = batch_start(start, end)
    if start.entries_read is None or end.entries_read is None:
        return None
    planned = end.entries_read - start.entries_read
    if planned <= 0:
        return None
    where = f"micro-batch ({ids.fmt(start.id)}, {ids.fmt(end.id)}] of stream {key!r}"
    if not info.entries_added:
        return f"the {planned} entries of the {where} are gone: the stream no longer exists"
    if is_reset(end, info):
        return f"the {planned} entries of the {where} are gone: " + reset_message(key, end, info)
    if info.first_entry is not None and info.first_entry <= start.id:
        return None
    lost = min(info.removed, end.entries_read) - start.entries_read
    if lost <= 0:
        return None
    return (f"{lost} of the {planned} entries of the {where} were trimmed or deleted before they were "
            f"read (first entry now {ids.fmt(info.first_entry) if info.first_entry is not None else 'none'})")


def skip_lost(start: Position, info: StreamInfo) -> Position:
    """The position to continue from after data loss was reported and skipped."""
    if is_reset(start, info):  # a re-created stream: read it from its start
        return Position(ids.ZERO, 0)
    if info.first_entry is None or info.first_entry > start.id:
        return Position(start.id, info.removed)
    return start


def advance(start: Position, end_id: int, admitted: int, info: StreamInfo) -> Position:
    """The position after reading `admitted` entries from `start` up to `end_id` inclusive."""
    exact = counter_at(end_id, info)
    if exact is not None:
        return Position(end_id, exact)
    if start.entries_read is not None:
        return Position(end_id, start.entries_read + admitted)
    if info.first_entry is not None and info.first_entry > start.id:
        # Everything still in the stream is after start: the entries up to end_id are the
        # admitted ones, and all removed entries lie before the first one.
        return Position(end_id, info.removed + admitted)
    return Position(end_id, None)


# ---------------------------------------------------------------------------------------------
# Admission control


def share_budget(total: int, backlogs: dict[str, int], at_least_one: bool) -> dict[str, int]:
    """Split `total` over keys in proportion to their backlogs (largest remainder first).  With
    `at_least_one`, every key with a backlog gets one while the total allows, so none starves."""
    active = {k: b for k, b in backlogs.items() if b > 0}
    if not active or total <= 0:
        return {}
    weight = sum(active.values())
    shares = {k: total * b // weight for k, b in active.items()}
    order = sorted(active, key=lambda k: (-(total * active[k] % weight), k))
    for key in order[: total - sum(shares.values())]:
        shares[key] += 1
    if at_least_one:
        for key in [k for k in order if shares[k] == 0]:
            donor = max(shares, key=lambda k: (shares[k], k))
            if shares[donor] <= 1:
                break
            shares[donor] -= 1
            shares[key] = 1
    return {k: v for k, v in shares.items() if v > 0}


def scan_admitted(r: redis.Redis, key: str, lo: int, hi: int, max_records: int | None,
                  page: int) -> tuple[int, int]:
    """(last ID, count) of the entries admitted after `lo` up to `hi`, at most `max_records` of
    them.  Reads the admitted range once on the driver: stream IDs are sparse, so the N-th entry
    after a position can only be found by walking to it."""
    last, count, cursor = lo, 0, "(" + ids.fmt(lo)
    end = ids.fmt(hi)
    while max_records is None or count < max_records:
        want = page if max_records is None else min(page, max_records - count)
        entries = r.execute_command("XRANGE", encode_key(key), cursor, end, "COUNT", want)
        if not entries:
            break
        count += len(entries)
        last = ids.parse(entries[-1][0])
        cursor = "(" + ids.fmt(last)
        if len(entries) < want:
            break
    return last, count


def count_pending(r: redis.Redis, pending: dict[str, tuple[Position, int, int | None]],
                  infos: dict[str, StreamInfo], wanted: int, page: int) -> int:
    """How many entries the pending ranges {key: (from, up to ID, entries-added or None)} hold,
    counted exactly up to `wanted` (the caller only needs to know whether there are that many).
    Counters give the number for free; a key whose counter is unknown is walked with XRANGE, and
    only as far as the entries still missing."""
    total, unknown = 0, []
    for key, (pos, _hi, exact) in sorted(pending.items()):
        if exact is not None and pos.entries_read is not None:
            total += max(exact - pos.entries_read, 0)
        else:
            unknown.append(key)
    for key in unknown:
        if total >= wanted:
            break
        pos, hi, _exact = pending[key]
        total += scan_admitted(r, key, pos.id, hi, wanted - total, page)[1]
    return total


class MinBatchGate:
    """minRecordsPerTrigger with maxTriggerDelay (Kafka's minOffsetsPerTrigger / maxTriggerDelay):
    a micro-batch starts once at least `min_records` new entries are available over all streams,
    or once `max_delay_ms` has passed since the last trigger that was let through.  As with
    Kafka's, the first trigger of a query run is let through (there is no earlier one to count
    from), and the clock restarts at every trigger let through, with data or without.
    `clock` returns seconds (monotonic); tests pass their own."""

    def __init__(self, min_records: int, max_delay_ms: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.min_records = min_records
        self.max_delay_ms = max_delay_ms
        self.clock = clock
        self.last: float | None = None

    def admit(self, count: Callable[[int], int], final: bool) -> bool:
        """Whether a micro-batch may start now.  `count(n)` counts the available entries up to n;
        `final` says no entry beyond those can ever join this run (Trigger.AvailableNow's
        snapshot): waiting could never reach the minimum, only leave them unread, so it starts."""
        now = self.clock()
        due = (final or self.last is None or (now - self.last) * 1000 >= self.max_delay_ms
               or count(self.min_records) >= self.min_records)
        if due:
            self.last = now
        return due


# ---------------------------------------------------------------------------------------------
# Partitions


@dataclass(frozen=True)
class Range:
    """One key's (lo, hi] range with an estimate of how many entries it holds."""

    key: str
    lo: int
    hi: int
    estimate: int


def estimate(lo: int, hi: int, start: Position, end: Position, info: StreamInfo) -> int:
    """Entries in (lo, hi]: exact from the two counters, else the stream's length in proportion to
    the share of its ID span the range covers."""
    if start.entries_read is not None and end.entries_read is not None:
        return max(end.entries_read - start.entries_read, 0)
    if info.first_entry is None or info.last_entry is None or info.last_entry <= info.first_entry:
        return info.length
    span = info.last_entry - ids.pred(info.first_entry)
    return max(1, round(info.length * (hi - lo) / span))


def backlog_range(key: str, start: Position, end: Position, info: StreamInfo) -> Range | None:
    """The range of `key` a read from `start` (exclusive) to `end` (inclusive) covers, clamped to
    the entries the stream holds (the same rows; sub-ranges are cut where the data is, not in the
    empty ID space before the first entry), or None when it holds none of them."""
    if info.first_entry is None or info.last_entry is None:
        return None
    lo, hi = max(start.id, ids.pred(info.first_entry)), min(end.id, info.last_entry)
    return Range(key, lo, hi, estimate(lo, hi, start, end, info)) if hi > lo else None


def plan_splits(ranges: Iterable[Range], min_partitions: int | None) -> list[tuple[str, int, int]]:
    """Partitions (key, lo, hi] for ranges of one or more keys, batch or micro-batch alike: one per
    non-empty range, or more when minPartitions asks for more.  Each range gets a share of the
    partitions proportional to its estimated size (never more pieces than entries it is
    estimated to hold) and is cut into equal ID sub-ranges (Redis IDs are millisecond times, so
    equal ID widths are equal time slices).  The pieces of a range are consecutive half-open
    ranges from its lo to its hi, so every ID in it is in exactly one partition."""
    ranges = [r for r in ranges if r.hi > r.lo]
    if not ranges:
        return []
    wanted = max(min_partitions or 0, len(ranges))
    extra = share_budget(wanted - len(ranges), {r.key + "\0" + str(r.lo): max(r.estimate, 1)
                                                for r in ranges}, at_least_one=False)
    planned: list[tuple[str, int, int]] = []
    for r in ranges:
        parts = min(1 + extra.get(r.key + "\0" + str(r.lo), 0), max(r.estimate, 1))
        planned.extend((r.key, lo, hi) for lo, hi in ids.split(r.lo, r.hi, parts))
    return planned
