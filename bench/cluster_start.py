"""How fast a test session gets its cluster: raxdb.serve_cluster()'s start() to its return (every node
`cluster_state:ok`, all agreeing on slots and roles, replicas' links up), against redis-server 7.0
nodes formed the same way.

raxdb: `--runs` clusters started and stopped in this one process (process mode), after one uncounted
start that spawns serve()'s template (an interpreter and the server's imports, once a process);
the shapes 1 master (the one-node cluster), 3 masters, 3 masters with a replica each.  redis-server:
the same number of nodes spawned (cluster-enabled, a free bus port each), then joined by
raxdb.embed.cluster.form(), the code serve_cluster() runs; its masters keep Redis's
CLUSTER_WRITABLE_DELAY (2 s from their start before `ok`), which serve_cluster() lifts on raxdb's
with DEBUG CLUSTER-WRITABLE-NOW.  Times from the first spawn to the cluster settled; the median,
the fastest, the slowest.  A benchmark, not a test: nothing here passes or fails.

    .venv/bin/python bench/cluster_start.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import raxdb  # noqa: E402
from raxdb.embed.cluster import Address, form  # noqa: E402
from tests.support.servers import ServerProcess, free_port, start_redis  # noqa: E402

SHAPES = [(1, 0), (3, 0), (3, 1)]


def raxdb_times(runs: int, masters: int, replicas: int) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        cluster = raxdb.serve_cluster(masters, replicas).start()
        times.append(time.perf_counter() - t0)
        cluster.stop()
    return times


def redis_node() -> ServerProcess:
    for attempt in range(3):  # the bus port, free when chosen, may be the one start_redis picks next
        try:
            return start_redis("--cluster-enabled", "yes", "--cluster-port", str(free_port()), "--cluster-node-timeout",
                               "5000", "--cluster-announce-ip", "127.0.0.1", "--repl-diskless-sync-delay", "0")
        except RuntimeError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def redis_times(runs: int, masters: int, replicas: int) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        nodes = [redis_node() for _ in range(masters * (1 + replicas))]
        try:
            addresses = [Address("127.0.0.1", n.port) for n in nodes]
            form(addresses[:masters], [(a, addresses[i % masters]) for i, a in enumerate(addresses[masters:])])
            times.append(time.perf_counter() - t0)
        finally:
            for n in nodes:
                n.stop()
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    opts = ap.parse_args()
    raxdb.serve().start().stop()  # the template, once a process
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'cluster':24s} {'runs':>4s} {'redis s':>20s} {'raxdb s':>20s}")
    for masters, replicas in SHAPES:
        row = []
        for measure in (redis_times, raxdb_times):
            ts = measure(opts.runs, masters, replicas)
            row.append(f"{statistics.median(ts):6.2f} ({min(ts):.2f}-{max(ts):.2f})")
        shape = f"{masters} master{'s' if masters > 1 else ''}" + (f", {replicas} replica each" if replicas else "")
        print(f"{shape:24s} {opts.runs:4d} {row[0]:>20s} {row[1]:>20s}")


if __name__ == "__main__":
    main()
