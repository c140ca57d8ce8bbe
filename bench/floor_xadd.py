"""The floor for XADD at -P 16: the least a Python server can do for make bench's XADD request.

    .venv/bin/python bench/floor_xadd.py PORT
    redis-benchmark -p PORT -c 50 -n 1000000 -P 16 XADD bench:stream MAXLEN '~' 100000 '*' field value f2 v2

It feeds hiredis, looks the stream up in a plain dict, takes the next ID, appends with raxdb's own
listpack code (`storage.stream`, the same bytes raxdb and Redis store), checks the trim and queues
the reply for one write per event-loop iteration, as raxdb does.  Nothing else: no command table,
no arity or type errors, no stats, expiry, WATCH, notifications or blocking signals, and any other
command gets +OK (CONFIG, which redis-benchmark asks, an empty array).  Side by side with
redis-server and raxdb it shows how much of XADD's gap is the storage format in Python rather than
the server around it (README, "The -P 16 XADD floor").  An experiment, not a server: it accepts
only the request above.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.floor_common import protocol, serve  # noqa: E402
from raxdb.storage.stream import U64, Stream, node_limits  # noqa: E402

MAX_BYTES, MAX_ENTRIES, TRIM_LIMIT = node_limits(4096, 100)
streams: dict[bytes, Stream] = {}


def xadd(argv: list[bytes], now_ms: int) -> bytes:
    """`XADD key MAXLEN ~ <n> * field value ...`, nothing else."""
    s = streams.get(argv[1])
    if s is None:
        s = streams[argv[1]] = Stream()
    last = s.last_id
    if now_ms > last >> 64:
        ms, seq, new_id = now_ms, 0, now_ms << 64
    else:
        new_id = last + 1
        ms, seq = new_id >> 64, new_id & U64
    s.add(argv, 6, ms, seq, new_id, MAX_BYTES, MAX_ENTRIES)
    maxlen = int(argv[4])
    if s.length > maxlen:
        s.trim(maxlen, None, True, TRIM_LIMIT)
    sid = b"%d-%d" % (ms, seq)
    return b"$%d\r\n%s\r\n" % (len(sid), sid)


if __name__ == "__main__":
    serve(int(sys.argv[1]), protocol(b"XADD", lambda argv: xadd(argv, time.time_ns() // 1_000_000)))
