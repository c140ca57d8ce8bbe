"""What a forked child (BGSAVE, a replica's snapshot, an AOF rewrite) tells its parent while it
runs, as Redis's childinfo.c does: how many keys it has written and how much memory copy-on-write
has cost so far, so that INFO persistence shows current_cow_size, current_fork_perc and
current_save_keys_processed during the save and rdb_last_cow_size / aof_last_cow_size after it.

The channel is a pipe opened before each fork (`ChildInfo.open`); the child keeps the write end,
the parent the read end, non-blocking.  Each report is one fixed-size record (type, keys, cow
bytes, when the cow was measured in monotonic microseconds, progress), smaller than PIPE_BUF so
a write is atomic and a read never sees half of one unless the pipe was full.

Child side (module functions, state in `_child`): the key walk calls `counted` around each
database's keys (or, compiled, `reporter`'s function every 1024 keys), which reports once a
second has passed; `finished` sends the
final copy-on-write figure when the work succeeded.  Reading the copy-on-write size walks
/proc/self/smaps_rollup (the kernel sums Private_Dirty over every mapping), which costs time on
a large process, so as Redis does the next reading waits at least 100 times what the last one
took, and reports in between repeat the last figure.  The figure counts the child's own
allocations too (its output buffer, its LZF table) and every shared page the parent changed.

Parent side (`ChildInfo`): `receive` drains the pipe (the cron calls it once a second while a
child runs, and once more when a successful child is reaped); `reset` closes the pipe and clears
the current figures when the child is gone (resetChildState).
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

from raxdb.server.base.log import LOG

CURRENT, AOF_COW, RDB_COW = 0, 1, 2  # CHILD_INFO_TYPE_CURRENT_INFO, _AOF_COW_SIZE, _RDB_COW_SIZE
_RECORD = struct.Struct("<iQQQd")  # type, keys, cow bytes, cow measured (monotonic us), progress
_COW_DUTY_CYCLE = 100  # CHILD_COW_DUTY_CYCLE


def _now_us() -> int:
    return time.monotonic_ns() // 1000


def private_dirty() -> int:
    """zmalloc_get_private_dirty: the bytes of this process's pages that were copied or written."""
    try:
        with open("/proc/self/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Private_Dirty:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class ChildInfo:
    """The parent's end, and the figures INFO shows."""

    def __init__(self) -> None:
        self.fd = -1
        self._partial = b""
        self.cow_peak = 0
        self.cow_bytes = 0
        self.cow_updated = 0  # monotonic us of the last reading, 0: none yet
        self.keys_processed = 0
        self.keys_total = 0
        self.rdb_cow_bytes = 0  # rdb_last_cow_size: the last successful snapshot's peak
        self.aof_cow_bytes = 0  # aof_last_cow_size

    def open(self, keys_total: int) -> int:
        """Before a fork: a new pipe; the write end's fd for the child (-1 if no pipe could be
        made: the child then reports nothing, as Redis's does)."""
        self.reset()
        try:
            r, w = os.pipe()
        except OSError:
            return -1
        os.set_blocking(r, False)
        self.fd = r
        self.keys_total = keys_total
        return w

    def receive(self) -> None:
        """receiveChildInfo: apply every whole record waiting in the pipe."""
        if self.fd < 0:
            return
        data = self._partial
        while True:
            try:
                chunk = os.read(self.fd, 4096)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        size = _RECORD.size
        whole = len(data) - len(data) % size
        for at in range(0, whole, size):
            kind, keys, cow, cow_updated, _progress = _RECORD.unpack_from(data, at)
            self.cow_peak = max(self.cow_peak, cow)
            if kind == CURRENT:
                self.cow_bytes = cow
                self.cow_updated = cow_updated
                self.keys_processed = keys
            elif kind == AOF_COW:
                self.aof_cow_bytes = self.cow_peak
            elif kind == RDB_COW:
                self.rdb_cow_bytes = self.cow_peak
        self._partial = data[whole:]

    def reset(self) -> None:
        """resetChildState's part: the current figures go back to 0 and the pipe is closed."""
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = -1
        self._partial = b""
        self.cow_peak = self.cow_bytes = self.cow_updated = 0
        self.keys_processed = self.keys_total = 0

    def info_lines(self) -> list[str]:
        perc = self.keys_processed / self.keys_total * 100 if self.keys_total else 0.0
        age = (_now_us() - self.cow_updated) // 1_000_000 if self.cow_updated else 0
        return [
            f"current_cow_peak:{self.cow_peak}",
            f"current_cow_size:{self.cow_bytes}",
            f"current_cow_size_age:{age}",
            f"current_fork_perc:{perc:.2f}",
            f"current_save_keys_processed:{self.keys_processed}",
            f"current_save_keys_total:{self.keys_total}",
        ]


# ---- the child's end ---------------------------------------------------------------------------
class _Child:
    __slots__ = ("fd", "name", "keys", "sent_ms", "cow", "cow_updated", "cow_cost", "peak", "sum", "readings")

    def __init__(self, fd: int, name: str) -> None:
        self.fd = fd
        self.name = name  # "RDB" or "AOF rewrite", for the log
        self.keys = 0
        self.sent_ms = 0
        self.cow = self.cow_updated = self.cow_cost = 0
        self.peak = self.sum = self.readings = 0


_child: _Child | None = None


def start_child(fd: int, name: str) -> None:
    """In the child, right after the fork: report through `fd` (-1: report nothing)."""
    global _child
    _child = _Child(fd, name) if fd >= 0 else None


def counted(keys: Iterator[Any]) -> Iterator[Any]:
    """The key walk, reporting progress (rdbSaveRio's every-1024-keys, once-a-second check);
    the walk itself outside a reporting child (a foreground SAVE pays nothing per key)."""
    return keys if _child is None else _counting(_child, keys)


def _counting(c: _Child, keys: Iterator[Any]) -> Iterator[Any]:
    for item in keys:
        if not c.keys & 1023:
            now = time.monotonic_ns() // 1_000_000
            if now - c.sent_ms >= 1000:
                c.keys += 1
                _send(c, CURRENT, c.keys)
                c.sent_ms = now
                yield item
                continue
        c.keys += 1
        yield item


def reporter() -> Callable[[int], None] | None:
    """`counted` for a walk that counts its keys itself (storage/rdbwalk.pyx calls it every 1024
    keys with the number written so far); None outside a reporting child."""
    c = _child
    if c is None:
        return None

    def report(keys: int) -> None:
        c.keys = keys
        now = time.monotonic_ns() // 1_000_000
        if now - c.sent_ms >= 1000:
            _send(c, CURRENT, keys)
            c.sent_ms = now

    return report


def finished(kind: int) -> None:
    """sendChildCowInfo: the work succeeded; the final copy-on-write figure (logged at notice)."""
    if _child is not None:
        _send(_child, kind, 0)


def _send(c: _Child, kind: int, keys: int) -> None:
    """sendChildInfoGeneric."""
    now = _now_us()
    if kind != CURRENT or not c.cow_updated or now - c.cow_updated > c.cow_cost * _COW_DUTY_CYCLE:
        c.cow = private_dirty()
        c.cow_updated = _now_us()
        c.cow_cost = c.cow_updated - now
        c.peak = max(c.peak, c.cow)
        c.sum += c.cow
        c.readings += 1
        if c.cow or kind != CURRENT:
            line = (f"Fork CoW for {c.name}: current {c.cow >> 20} MB, peak {c.peak >> 20} MB, "
                    f"average {(c.sum // c.readings) >> 20} MB")
            (LOG.verbose if kind == CURRENT else LOG.notice)(line)
    try:
        os.write(c.fd, _RECORD.pack(kind, keys, c.cow, c.cow_updated, -1.0))
    except OSError as exc:  # the parent is gone (or stopped reading): nothing to save for
        LOG.warning(f"Child failed reporting info to parent, exiting. {exc.strerror}")
        os._exit(1)
