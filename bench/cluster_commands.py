"""The cluster's own commands, per call, raxdb beside redis-server: a 3-master cluster of each kind.

What it measures.  Each server kind gets its own 3-master cluster (`redis-cli --cluster create`,
tests/support/cluster.py), then one connection sends each command N times, one at a time, to the
first master: the median round trip (ms) and the server's CPU per call (us, from /proc, which
the host's load moves less).  The commands are those a cluster client and a resharding tool send
while slots move: CLUSTER SLOTS / SHARDS / NODES / INFO and CLUSTER SETSLOT <own slot> NODE
<myself> (a change of configuration that saves nodes.conf).  `--moving` also times 2,000 SETs of a
redis-py RedisCluster client while tests/support/cluster.py's SlotMover moves slots.

Usage: .venv/bin/python bench/cluster_commands.py [--calls 500] [--base-port 22100] [--moving]
Ports: base, base+1, base+2 for raxdb's nodes and base+10.. for redis-server's; each node's bus
is at its port + 10000.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from bench.cpuclock import cpu_seconds  # noqa: E402
from tests.support.cluster import ClusterNode, SlotMover, wait_agreed  # noqa: E402
from tests.support.servers import COMMON, ServerProcess, redis_binary  # noqa: E402

COMMANDS = {
    "CLUSTER SLOTS": ("CLUSTER", "SLOTS"),
    "CLUSTER SHARDS": ("CLUSTER", "SHARDS"),
    "CLUSTER NODES": ("CLUSTER", "NODES"),
    "CLUSTER INFO": ("CLUSTER", "INFO"),
}


def start(kind: str, port: int) -> ClusterNode:
    cwd = tempfile.mkdtemp(prefix=f"cluster-bench-{kind}-")
    args = ["--port", str(port), "--bind", "127.0.0.1", *COMMON, "--cluster-enabled", "yes",
            "--cluster-node-timeout", "5000"]
    if kind == "raxdb":
        argv = [sys.executable, "-m", "raxdb.server", *args]
        os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    else:
        binary = redis_binary()
        assert binary, "redis-server is required"
        argv = [binary, *args]
    srv = ServerProcess(argv, port, cwd, kind)
    return ClusterNode(srv, redis.Redis(port=port, decode_responses=True))


def make_cluster(kind: str, base: int) -> list[ClusterNode]:
    nodes = [start(kind, base + i) for i in range(3)]
    cli = shutil.which("redis-cli")
    assert cli, "redis-cli is required"
    out = subprocess.run([cli, "--cluster", "create", *(f"127.0.0.1:{n.port}" for n in nodes), "--cluster-yes"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    for n in nodes:
        n.id = n.conn.execute_command("CLUSTER", "MYID")
    wait_agreed(nodes)
    return nodes


def per_call(node: ClusterNode, argv: tuple, calls: int) -> tuple[float, float]:
    """(median round trip in ms, server CPU per call in us)."""
    conn = node.conn
    for _ in range(20):
        conn.execute_command(*argv)
    times = []
    cpu0 = cpu_seconds(node.srv.proc.pid)
    for _ in range(calls):
        t = time.perf_counter()
        conn.execute_command(*argv)
        times.append(time.perf_counter() - t)
    cpu = cpu_seconds(node.srv.proc.pid) - cpu0
    return statistics.median(times) * 1000, cpu / calls * 1e6


def moving_sets(nodes: list[ClusterNode], n: int = 2000) -> float:
    rc = redis.RedisCluster(host="127.0.0.1", port=nodes[0].port)
    mover = SlotMover(nodes)
    mover.start()
    try:
        t = time.perf_counter()
        for i in range(n):
            rc.set(f"key:{i}", i)
        return time.perf_counter() - t
    finally:
        mover.stop()
        rc.close()


def measure(kind: str, base: int, calls: int, moving: bool) -> dict[str, tuple[float, float]]:
    nodes = make_cluster(kind, base)
    try:
        first = nodes[0]
        own = next(s for s in range(16384) if first.conn.execute_command("CLUSTER", "COUNTKEYSINSLOT", s) == 0)
        rows = {name: per_call(first, argv, calls) for name, argv in COMMANDS.items()}
        rows["CLUSTER SETSLOT <own> NODE <myself>"] = per_call(first, ("CLUSTER", "SETSLOT", own, "NODE", first.id),
                                                                calls)
        if moving:
            rows["2,000 SETs while slots move (s)"] = (moving_sets(nodes), 0.0)
        return rows
    finally:
        for n in nodes:
            n.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--base-port", type=int, default=22100)
    ap.add_argument("--moving", action="store_true")
    a = ap.parse_args()
    theirs = measure("redis", a.base_port + 10, a.calls, a.moving)
    ours = measure("raxdb", a.base_port, a.calls, a.moving)
    print(f"{'command':40} {'redis ms':>9} {'raxdb ms':>9} {'redis us cpu':>13} {'raxdb us cpu':>13}")
    for name in ours:
        (rt, rc), (ot, oc) = theirs[name], ours[name]
        print(f"{name:40} {rt:9.3f} {ot:9.3f} {rc:13.1f} {oc:13.1f}")


if __name__ == "__main__":
    main()
