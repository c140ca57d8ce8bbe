"""The floor for MSET at -P 1: the least a Python server can do for make bench's MSET request.

    .venv/bin/python bench/floor_mset.py PORT [entries]
    redis-benchmark -p PORT -c 50 -n 200000 -r 100000 -t mset

redis-benchmark's MSET sets ten keys (`key:{tag}:__rand_int__ xxx`, ten times, each with its own
random number out of 100,000) per request.  This server feeds hiredis, and for MSET stores each
pair in a plain dict, then queues `+OK` for one write per event-loop iteration, as raxdb does.
Nothing else: no command table, arity check, stats, expiry, WATCH, notifications, idle times or
blocking signals, and any other command gets +OK (CONFIG, which redis-benchmark asks, an empty
array).  With `entries`, each value is wrapped in a two-slot record as raxdb's keyspace keeps it
(value and access time, storage/keyspace.py's Entry), to show what that layout costs.

Side by side with redis-server and raxdb it shows how much of MSET's -P 1 gap is the dict work
and the per-request event-loop cost every Python server pays, rather than raxdb's bookkeeping
(README, "The -P 1 MSET floor").  An experiment, not a server.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.floor_common import protocol, serve  # noqa: E402

keys: dict[bytes, object] = {}


class Entry:
    __slots__ = ("value", "atime")

    def __init__(self, value: bytes, atime: int) -> None:
        self.value = value
        self.atime = atime


def mset_plain(argv: list[bytes]) -> bytes:
    keys.update(zip(argv[1::2], argv[2::2], strict=False))  # the arity is redis-benchmark's
    return b"+OK\r\n"


def mset_entries(argv: list[bytes]) -> bytes:
    get = keys.get
    for i in range(1, len(argv), 2):
        e = get(argv[i])
        if e is None:
            keys[argv[i]] = Entry(argv[i + 1], 0)
        else:
            e.value = argv[i + 1]  # type: ignore[attr-defined]
    return b"+OK\r\n"


if __name__ == "__main__":
    serve(int(sys.argv[1]), protocol(b"MSET", mset_entries if sys.argv[2:3] == ["entries"] else mset_plain))
