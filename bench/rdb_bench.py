"""RDB persistence speed: raxdb against redis-server on the same dataset.

Builds the same mixed dataset in a fresh raxdb and a fresh redis-server (pipelined): strings
(JSON-like values of 60-160 bytes, integers), small hashes, lists, sorted sets and one stream,
then reports for each server the SAVE time (the server is blocked for it), the dump file's size,
the BGSAVE time (fork to "terminated with success"; the parent keeps serving) and the time to load
the file at start-up (the server's own "DB loaded from disk" figure).

    .venv/bin/python bench/rdb_bench.py [--keys 100000]

Not part of the test suite: it takes a while and the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.diff import RawConnection, encode_command  # noqa: E402
from tests.support.servers import start_raxdb, start_redis  # noqa: E402


def dataset(n: int) -> list[tuple]:
    cmds: list[tuple] = []
    for i in range(n):
        kind = i % 10
        if kind < 5:
            cmds.append(("SET", f"user:{i}", '{"id":%d,"name":"user %d","email":"u%d@example.com","score":%d}'
                         % (i, i, i, i * 37 % 1000)))
        elif kind == 5:
            cmds.append(("SET", f"counter:{i}", str(i * 13)))
        elif kind == 6:
            cmds.append(("HSET", f"h:{i}", "name", f"n{i}", "age", str(i % 90), "city", "somewhere", "id", str(i)))
        elif kind == 7:
            cmds.append(("RPUSH", f"l:{i}", *[f"item-{j}" for j in range(10)]))
        elif kind == 8:
            cmds.append(("ZADD", f"z:{i}", *[x for j in range(5) for x in (str(j * 1.5), f"m{j}")]))
        else:
            cmds.append(("XADD", "events", "*", "user", str(i), "action", "login"))
    return cmds


def load(conn: RawConnection, cmds: list[tuple], batch: int = 1000) -> None:
    for start in range(0, len(cmds), batch):
        chunk = cmds[start:start + batch]
        conn.send(b"".join(encode_command(c) for c in chunk))
        for _ in chunk:
            conn.read_frame()


def measure(start, cmds: list[tuple]) -> dict[str, float]:
    d = tempfile.mkdtemp(prefix="rdb-bench-")
    srv = start(cwd=d)
    out: dict[str, float] = {}
    try:
        conn = RawConnection(srv.port, timeout=600)
        load(conn, cmds)
        t = time.perf_counter()
        assert conn.call("SAVE") == b"+OK\r\n"
        out["save_s"] = time.perf_counter() - t
        out["file_mb"] = os.path.getsize(os.path.join(d, "dump.rdb")) / 1e6
        t = time.perf_counter()
        assert conn.call("BGSAVE").startswith(b"+Background saving started")
        assert srv.wait_log("Background saving terminated with success", 600)
        out["bgsave_s"] = time.perf_counter() - t
    finally:
        srv.stop()
    srv = start(cwd=d)
    try:
        assert srv.wait_log("DB loaded from disk", 600)
        line = next(x for x in srv.log if "DB loaded from disk" in x)
        out["load_s"] = float(re.search(r"([\d.]+) seconds", line).group(1))
    finally:
        srv.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=100000)
    args = ap.parse_args()
    cmds = dataset(args.keys)
    theirs = measure(start_redis, cmds)
    ours = measure(start_raxdb, cmds)
    print(f"{args.keys:,} commands' worth of keys")
    print(f"{'':10} {'redis':>10} {'raxdb':>10} {'ratio':>8}")
    for k in ("save_s", "bgsave_s", "load_s", "file_mb"):
        ratio = ours[k] / theirs[k] if theirs[k] else float("nan")
        print(f"{k:10} {theirs[k]:10.3f} {ours[k]:10.3f} {ratio:7.1f}x")


if __name__ == "__main__":
    main()
