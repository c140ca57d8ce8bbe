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

import asyncio
import sys
import time
from pathlib import Path

import hiredis
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from storage.stream import U64, Stream, node_limits  # noqa: E402

MAX_BYTES, MAX_ENTRIES, TRIM_LIMIT = node_limits(4096, 100)
streams: dict[bytes, Stream] = {}
pending: list[tuple[asyncio.Transport, bytes]] = []


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


def flush() -> None:
    for transport, data in pending:
        transport.write(data)
    pending.clear()


class Floor(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.reader = hiredis.Reader()

    def data_received(self, data: bytes) -> None:
        reader = self.reader
        reader.feed(data)
        now_ms = time.time_ns() // 1_000_000
        out = []
        while (argv := reader.gets()) is not False:
            out.append(xadd(argv, now_ms) if argv[0] == b"XADD" else b"*0\r\n" if argv[0] == b"CONFIG" else b"+OK\r\n")
        pending.append((self.transport, b"".join(out)))  # type: ignore[arg-type]
        if len(pending) == 1:
            asyncio.get_running_loop().call_soon(flush)


async def main(port: int) -> None:
    server = await asyncio.get_running_loop().create_server(Floor, "127.0.0.1", port)
    await server.serve_forever()


if __name__ == "__main__":
    uvloop.install()
    asyncio.run(main(int(sys.argv[1])))
