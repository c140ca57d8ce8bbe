"""RDB load speed: the same dump file loaded by raxdb and by redis-server, at start-up and in a
replica's full resync (issue #53's target: within 1.5x of redis-server's time).

The dataset is made once by redis-server and saved (so both servers read the same bytes): DEBUG
POPULATE of `--keys` strings of `--size` bytes (LZF-compressed in the file, as rdbcompression
leaves them), a tenth as many small hashes of 4 fields (listpacks), and a few lists and sorted
sets; with `--ttl N`, one string in N has a deadline a day away.  Then, alternating the two
servers `--runs` times (so that a burst of load on the shared machine falls on both):

- start-up: the server started in a directory holding the file; the figure is its own log line
  "DB loaded from disk: X seconds";
- full resync (with `--resync`): a redis-server master started on the file, and a replica
  started with `--replicaof` it (the default repl-diskless-load: the payload goes to a file,
  then loads; `--diskless-load` sets repl-diskless-load on-empty-db, and the payload is parsed
  as it arrives); the figure is the time between the replica's log lines "Loading DB in memory"
  and "Finished with success" (both servers stamp their lines to the millisecond).

The report gives each run, the medians and their ratio (raxdb / redis-server), and the host's
1-minute load average before and after.  A benchmark, not a test: nothing here passes or fails.

    .venv/bin/python bench/load_bench.py [--keys 1000000] [--runs 3] [--ttl N] [--resync [--diskless-load]]
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.diff import RawConnection, encode_command  # noqa: E402
from tests.support.servers import ServerProcess, start_raxdb, start_redis  # noqa: E402

STAMP = re.compile(r"(\d+ \w+ \d+ \d+:\d+:\d+\.\d+)")


def make_dump(keys: int, size: int, into: str, ttl: int = 0) -> str:
    """The dataset in a redis-server, SAVEd: the path of the dump file."""
    srv = start_redis(cwd=into)
    try:
        conn = RawConnection(srv.port, timeout=600)
        assert conn.call("DEBUG", "POPULATE", str(keys), "key", str(size)) == b"+OK\r\n"
        batch: list[bytes] = []
        if ttl:
            batch += [encode_command(("EXPIRE", f"key:{i}", "86400")) for i in range(0, keys, ttl)]
        hashes = keys // 10
        for i in range(hashes):
            batch.append(encode_command(("HSET", f"h:{i}", "name", f"n{i}", "age", str(i % 90),
                                         "city", "somewhere", "id", str(i))))
        for i in range(100):
            batch.append(encode_command(("RPUSH", f"l:{i}", *[f"item-{j}" for j in range(200)])))
            batch.append(encode_command(("ZADD", f"z:{i}", *[x for j in range(200) for x in (str(j * 1.5), f"m{j}")])))
        for start in range(0, len(batch), 1000):
            chunk = batch[start:start + 1000]
            conn.send(b"".join(chunk))
            for _ in chunk:
                conn.read_frame()
        assert conn.call("SAVE") == b"+OK\r\n"
    finally:
        srv.stop()
    return os.path.join(into, "dump.rdb")


def _stamp(line: str) -> datetime.datetime:
    m = STAMP.search(line)
    assert m is not None, line
    return datetime.datetime.strptime(m.group(1), "%d %b %Y %H:%M:%S.%f")


def _line(srv: ServerProcess, text: str) -> str:
    assert srv.wait_log(text, 600), f"{srv.name}: no '{text}' in\n" + "".join(srv.log[-20:])
    return next(x for x in srv.log if text in x)


def startup_load(start, dump: str) -> float:
    d = tempfile.mkdtemp(prefix="load-bench-")
    try:
        shutil.copy(dump, os.path.join(d, "dump.rdb"))
        srv = start(cwd=d, ready_text=None)
        try:
            line = _line(srv, "DB loaded from disk")
            return float(re.search(r"([\d.]+) seconds", line).group(1))  # type: ignore[union-attr]
        finally:
            srv.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def resync_load(start, master: ServerProcess, diskless: bool) -> float:
    d = tempfile.mkdtemp(prefix="load-bench-replica-")
    try:
        extra = ("--repl-diskless-load", "on-empty-db") if diskless else ()
        srv = start("--replicaof", "127.0.0.1", str(master.port), *extra, cwd=d)
        try:
            began = _stamp(_line(srv, "Loading DB in memory"))
            ended = _stamp(_line(srv, "MASTER <-> REPLICA sync: Finished with success"))
            return (ended - began).total_seconds()
        finally:
            srv.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def loadavg() -> str:
    return "%.2f" % os.getloadavg()[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ttl", type=int, default=0, help="one string in N gets a deadline")
    ap.add_argument("--resync", action="store_true", help="also time a replica's full-resync load")
    ap.add_argument("--diskless-load", action="store_true", help="the replica parses the payload as it arrives")
    ap.add_argument("--dump", help="use this dump file instead of making one")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="load-bench-data-")
    try:
        dump = args.dump or make_dump(args.keys, args.size, work, args.ttl)
        print(f"dump: {os.path.getsize(dump) / 1e6:.1f} MB, load average {loadavg()}")
        kinds = [("start-up", None)]
        master = None
        if args.resync:
            mdir = tempfile.mkdtemp(prefix="load-bench-master-", dir=work)
            shutil.copy(dump, os.path.join(mdir, "dump.rdb"))
            master = start_redis(cwd=mdir)
            kinds.append(("full resync", master))
        try:
            for kind, m in kinds:
                times: dict[str, list[float]] = {"redis-server": [], "raxdb": []}
                for _ in range(args.runs):
                    for name, start in (("redis-server", start_redis), ("raxdb", start_raxdb)):
                        t = startup_load(start, dump) if m is None else resync_load(start, m, args.diskless_load)
                        times[name].append(t)
                        print(f"  {kind:12} {name:13} {t:.3f} s  (load average {loadavg()})", flush=True)
                r, x = statistics.median(times["redis-server"]), statistics.median(times["raxdb"])
                print(f"{kind}: redis-server {r:.3f} s, raxdb {x:.3f} s (medians), ratio {x / r:.2f}")
        finally:
            if master is not None:
                master.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
