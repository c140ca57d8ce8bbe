"""Memory per stream entry: raxdb against redis-server.

Adds N entries of two small fields (`XADD bench:stream * name v<i % 1000> seq <i>`, pipelined) to a
fresh raxdb and a fresh redis-server, and reports bytes per entry for both: raxdb as the growth of
the process's resident set (VmRSS in /proc/<pid>/status, what the machine really gives it), Redis as
the growth of INFO used_memory (what its allocator holds for data).  Both servers are started by
tests/support/servers.py with persistence off.  Target: raxdb within 2x of Redis.

    .venv/bin/python bench/stream_memory.py [--entries 1000000] [--batch 1000]

Not part of the test suite: it takes a while and the machine is shared.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.diff import RawConnection, encode_command  # noqa: E402
from tests.support.servers import start_raxdb, start_redis  # noqa: E402


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def used_memory(conn: RawConnection) -> int:
    info = conn.call("INFO", "memory").split(b"\r\n", 1)[1]
    for line in info.split(b"\r\n"):
        if line.startswith(b"used_memory:"):
            return int(line.split(b":")[1])
    raise RuntimeError("no used_memory")


def fill(conn: RawConnection, entries: int, batch: int) -> float:
    """XADD `entries` entries in pipelined batches; returns the seconds it took."""
    t = time.perf_counter()
    done = 0
    while done < entries:
        n = min(batch, entries - done)
        conn.send(b"".join(encode_command([b"XADD", b"bench:stream", b"*", b"name", b"v%d" % ((done + k) % 1000),
                                           b"seq", b"%d" % (done + k)]) for k in range(n)))
        for _ in range(n):
            reply = conn.read_frame()
            if not reply.startswith(b"$"):
                raise RuntimeError(f"XADD failed: {reply!r}")
        done += n
    return time.perf_counter() - t


def measure(kind: str, entries: int, batch: int) -> tuple[float, float]:
    srv = start_raxdb() if kind == "raxdb" else start_redis()
    try:
        conn = RawConnection(srv.port, timeout=600)
        conn.call("PING")
        sample = (lambda: rss_bytes(srv.proc.pid)) if kind == "raxdb" else (lambda: used_memory(conn))
        before = sample()
        seconds = fill(conn, entries, batch)
        assert conn.call("XLEN", "bench:stream") == b":%d\r\n" % entries
        after = sample()
        conn.close()
        return (after - before) / entries, seconds
    finally:
        srv.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=1000)
    args = ap.parse_args()
    ours, ours_s = measure("raxdb", args.entries, args.batch)
    theirs, theirs_s = measure("redis", args.entries, args.batch)
    print(f"{args.entries} entries of two small fields")
    print(f"  raxdb        {ours:7.1f} bytes/entry (RSS growth)         {ours_s:6.1f} s to add")
    print(f"  redis-server {theirs:7.1f} bytes/entry (used_memory growth) {theirs_s:6.1f} s to add")
    print(f"  ratio        {ours / theirs:7.2f}x  (target <= 2.00x)")


if __name__ == "__main__":
    main()
