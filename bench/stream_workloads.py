"""Server CPU per stream entry for the traffic the Spark pipeline sends, raxdb beside redis-server.

    .venv/bin/python bench/stream_workloads.py [--entries 200000] [--rounds 3] [--only fill,read,...]
                                               [--servers raxdb,redis] [--profile WORKLOAD]

pipeline_bench.py times the whole Spark job, whose wall time mixes the JVM, Python workers and the
server on a shared 2-core box.  This replays what each of its rows sends to the server (read from
pipeline/source.py, planning.py, connection.py and sink.py) over raw sockets (hiredis packs and
parses, so the client is cheap and stays out of the server's way) and reports the server's CPU time
(from /proc/<pid>/task/*/schedstat: every thread's time on a CPU, user and system) per entry, and the ratio redis CPU / raxdb CPU
(1.0: as cheap as Redis).  The workloads:

- fill: `XADD key * n <i> kind even|odd payload <32 x>` in pipelined batches of 5,000 (the bench's
  fill through a redis-py pipeline);
- read: the batch read, minPartitions 4: XINFO STREAM, then per partition (equal ID slices) paged
  `XRANGE key (lo hi COUNT 1000` with the next page requested as each arrives (xrange_pages);
- catchup: an AvailableNow query with maxRecordsPerTrigger 100,000 (--trigger): per micro-batch
  XINFO STREAM, the driver's scan_admitted (XRANGE pages up to the budget), XINFO STREAM again
  (partitions' check), then the task's XRANGE pages over the same range: every entry is read twice;
- sink_tx: the idempotent sink, 4 partitions: WATCH marker, GET marker, MULTI, the XADDs in chunks
  of 1,000 (each chunk's +QUEUED read before the next), SET marker ok EX 86400, EXEC (one reply of
  all the partition's IDs);
- sink_plain: idempotent=false: the XADDs in pipelined chunks of 1,000.

The rounds alternate the servers, and the ratio reported is the median of the rounds' own ratios.
A benchmark, not a test: nothing passes or fails.  `--profile W` runs W against raxdb under py-spy
(if installed) and writes a flame graph's raw lines to /tmp/stream_workloads-W.txt.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import hiredis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.servers import ServerProcess, start_raxdb, start_redis  # noqa: E402

KEY = b"bench:events"
PARTITIONS = 4
PAGE = 1000
CHUNK = 1000
FILL_BATCH = 5000


def cpu_seconds(pid: int) -> float:
    """CPU time of a process so far, its live threads' together, in nanoseconds' resolution
    (/proc's schedstat: the same time as utime + stime, which count in 10 ms ticks, too coarse
    for a read of a few hundred ms)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except FileNotFoundError:  # a thread that just ended
            pass
    return total / 1e9


class Conn:
    """One raw connection: packed commands out, hiredis-parsed replies in (errors raise)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = hiredis.Reader()

    def send(self, *commands: tuple) -> None:
        self.sock.sendall(b"".join(hiredis.pack_command(c) for c in commands))

    def read(self):
        while True:
            reply = self.reader.gets()
            if reply is not False:
                if isinstance(reply, hiredis.ReplyError):
                    raise reply
                return reply
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("server closed the connection")
            self.reader.feed(data)

    def call(self, *args):
        self.send(args)
        return self.read()

    def close(self) -> None:
        self.sock.close()


def xadd(i: int, key: bytes = KEY) -> tuple:
    return (b"XADD", key, b"*", b"n", b"%d" % i, b"kind", b"even" if i % 2 == 0 else b"odd", b"payload", b"x" * 32)


def fill(c: Conn, entries: int, key: bytes = KEY) -> None:
    for lo in range(0, entries, FILL_BATCH):
        hi = min(lo + FILL_BATCH, entries)
        c.send(*(xadd(i, key) for i in range(lo, hi)))
        for _ in range(lo, hi):
            c.read()


def xinfo(c: Conn, key: bytes = KEY) -> dict:
    reply = c.call(b"XINFO", b"STREAM", key)
    return dict(zip(reply[0::2], reply[1::2], strict=False))


def parse_id(raw: bytes) -> int:
    ms, _, seq = raw.partition(b"-")
    return int(ms) << 64 | int(seq or 0)


def fmt_id(i: int) -> bytes:
    return b"%d-%d" % (i >> 64, i & ((1 << 64) - 1))


def pages(c: Conn, key: bytes, lo: int, hi: int, count: int, limit: int | None = None) -> tuple[int, int]:
    """Read (lo, hi] as xrange_pages does (one request always in flight), at most `limit`
    entries; (entries read, last ID)."""
    end = fmt_id(hi)
    n, last = 0, lo
    want = count if limit is None else min(count, limit)
    c.send((b"XRANGE", key, b"(" + fmt_id(lo), end, b"COUNT", want))
    while True:
        page = c.read()
        n += len(page)
        if page:
            last = parse_id(page[-1][0])
        if len(page) < want or (limit is not None and n >= limit):
            return n, last
        if limit is not None:
            want = min(count, limit - n)
        c.send((b"XRANGE", key, b"(" + page[-1][0], end, b"COUNT", want))


def read(port: int, entries: int) -> None:
    c = Conn(port)
    info = xinfo(c)
    first, last = parse_id(info[b"first-entry"][0]), parse_id(info[b"last-entry"][0])
    lo = first - 1
    step = (last - lo) // PARTITIONS
    bounds = [lo + k * step for k in range(PARTITIONS)] + [last]
    total = 0
    for a, b in zip(bounds, bounds[1:], strict=False):
        total += pages(c, KEY, a, b, PAGE)[0]
    assert total == entries, (total, entries)
    c.close()


def catchup(port: int, entries: int, per_trigger: int) -> None:
    c = Conn(port)
    info = xinfo(c)
    pos = parse_id(info[b"first-entry"][0]) - 1
    last = parse_id(info[b"last-entry"][0])
    total = 0
    while pos < last:
        xinfo(c)  # latestOffset's snapshot
        n, end = pages(c, KEY, pos, last, PAGE, per_trigger)  # scan_admitted on the driver
        xinfo(c)  # partitions(): the batch's check
        got = pages(c, KEY, pos, end, PAGE)[0]  # the task
        assert got == n, (got, n)
        total += n
        pos = end
    assert total == entries, (total, entries)
    c.close()


def _partitions(entries: int) -> list[range]:
    step = -(-entries // PARTITIONS)
    return [range(lo, min(lo + step, entries)) for lo in range(0, entries, step)]


def sink_tx(port: int, entries: int) -> None:
    c = Conn(port)
    out = b"bench:out:tx"
    for p, rows in enumerate(_partitions(entries)):
        marker = b"raxdb:written:bench:%d" % p
        c.call(b"WATCH", marker)
        assert c.call(b"GET", marker) is None
        c.call(b"MULTI")
        for lo in range(rows.start, rows.stop, CHUNK):
            chunk = [xadd(i, out) for i in range(lo, min(lo + CHUNK, rows.stop))]
            c.send(*chunk)
            for _ in chunk:
                c.read()
        c.call(b"SET", marker, b"ok", b"EX", 86400)
        results = c.call(b"EXEC")
        assert len(results) == len(rows) + 1, len(results)
    assert c.call(b"XLEN", out) == entries
    c.call(b"DEL", out, *(b"raxdb:written:bench:%d" % p for p in range(PARTITIONS)))
    c.close()


def sink_plain(port: int, entries: int) -> None:
    c = Conn(port)
    out = b"bench:out:plain"
    for rows in _partitions(entries):
        for lo in range(rows.start, rows.stop, CHUNK):
            chunk = [xadd(i, out) for i in range(lo, min(lo + CHUNK, rows.stop))]
            c.send(*chunk)
            for _ in chunk:
                c.read()
    assert c.call(b"XLEN", out) == entries
    c.call(b"DEL", out)
    c.close()


def run_fill(port: int, entries: int) -> None:
    c = Conn(port)
    c.call(b"DEL", KEY)
    fill(c, entries)
    c.close()


def workloads(args: argparse.Namespace) -> dict[str, Callable[[int], None]]:
    n = args.entries
    return {
        "fill": lambda port: run_fill(port, n),
        "read": lambda port: read(port, n),
        "catchup": lambda port: catchup(port, n, args.trigger),
        "sink_tx": lambda port: sink_tx(port, n),
        "sink_plain": lambda port: sink_plain(port, n),
    }


def measure(server: ServerProcess, action: Callable[[int], None]) -> float:
    pid = server.proc.pid
    before = cpu_seconds(pid)
    action(server.port)
    return cpu_seconds(pid) - before


def profile(args: argparse.Namespace, name: str) -> None:
    pyspy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    server = start_raxdb()
    try:
        run_fill(server.port, args.entries)
        out = f"/tmp/stream_workloads-{name}.txt"
        spy = subprocess.Popen([pyspy, "record", "--native", "-r", "400", "-f", "raw", "-o", out,
                                "-p", str(server.proc.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # py-spy attaches
        for _ in range(args.rounds):
            workloads(args)[name](server.port)
        spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT (SIGTERM loses it)
        spy.wait()
        print(f"profile written to {out}")
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trigger", type=int, default=100_000, help="catchup's maxRecordsPerTrigger")
    parser.add_argument("--only", default="fill,read,catchup,sink_tx,sink_plain")
    parser.add_argument("--servers", default="raxdb,redis")
    parser.add_argument("--profile", metavar="WORKLOAD")
    args = parser.parse_args()
    if args.profile:
        profile(args, args.profile)
        return
    names = args.only.split(",")
    starters = {"raxdb": start_raxdb, "redis": start_redis}
    servers = {name: starters[name]() for name in args.servers.split(",")}
    work = workloads(args)
    per_entry: dict[str, dict[str, list[float]]] = {w: {s: [] for s in servers} for w in names}
    try:
        for _ in range(args.rounds):
            for name, server in servers.items():
                # fill is always run first (the reads need the stream); measured when asked for
                cpu = measure(server, work["fill"])
                if "fill" in names:
                    per_entry["fill"][name].append(cpu / args.entries)
            for w in names:
                if w == "fill":
                    continue
                for name, server in servers.items():
                    per_entry[w][name].append(measure(server, work[w]) / args.entries)
    finally:
        for server in servers.values():
            server.stop()
    load = os.getloadavg()
    print(f"{args.entries:,} entries, {args.rounds} rounds; server CPU us per entry (best round); "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    header = f"{'workload':12}" + "".join(f"{s:>10}" for s in servers)
    if len(servers) == 2:
        header += f"{'cpu ratio':>11}"
    print(header)
    for w in names:
        line = f"{w:12}" + "".join(f"{min(per_entry[w][s]) * 1e6:>10.2f}" for s in servers)
        if len(servers) == 2:
            a, b = servers
            ratios = [r / x for x, r in zip(per_entry[w][a], per_entry[w][b], strict=True) if x]
            line += f"{statistics.median(ratios):>11.2f}"
        print(line)


if __name__ == "__main__":
    main()
