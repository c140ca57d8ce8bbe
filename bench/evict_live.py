"""CPU per evicted key, live: each server (redis-server and raxdb, side by side) holds 200,000
small string keys (with a TTL under the volatile policies), then `maxmemory` is set to half its
used_memory with maxmemory-eviction-tenacity 100 (no time limit) and the server evicts down to it;
the server's CPU over that (its process's clock, bench/cpuclock.py) divided by the keys it
evicted.  The eviction path whole, as the server runs it, beside Redis's; `bench/evict_cost.py`
gives raxdb's alone in process.

    .venv/bin/python bench/evict_live.py [allkeys-lru,volatile-ttl,...] [--rounds N]

Environment: EVICT_KEYS (default 200000) keys to fill.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cpuclock import cpu_seconds  # noqa: E402
from tests.support.diff import RawConnection, encode_command, parse  # noqa: E402
from tests.support.servers import ServerProcess, start_raxdb, start_redis  # noqa: E402

POLICIES = ("allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-ttl")


def _info(c: RawConnection, field: str) -> int:
    for line in parse(c.call("INFO", "everything")).decode().split("\r\n"):
        if line.startswith(field + ":"):
            return int(line.split(":", 1)[1])
    raise KeyError(field)


def run(server: ServerProcess, policy: str, keys: int) -> tuple[float, int]:
    """(CPU us per evicted key, keys evicted) of one eviction down to half used_memory."""
    c = RawConnection(server.port)
    c.call("FLUSHALL")
    c.call("CONFIG", "SET", "maxmemory", "0", "maxmemory-policy", policy, "maxmemory-eviction-tenacity", "100")
    volatile = policy.startswith("volatile")
    for i in range(0, keys, 500):
        if volatile:
            c.send(b"".join(encode_command(("SET", f"key:{j:012d}", "xxx", "EX", str(3600 + j)))
                            for j in range(i, i + 500)))
            for _ in range(i, i + 500):
                c.read_frame()
        else:
            c.call("MSET", *[x for j in range(i, i + 500) for x in (f"key:{j:012d}", "xxx")])
    c.call("CONFIG", "SET", "maxmemory", "100gb")  # raxdb counts its figure from here
    half = _info(c, "used_memory") // 2
    before = _info(c, "evicted_keys")
    pid = server.proc.pid
    t = cpu_seconds(pid)
    c.call("CONFIG", "SET", "maxmemory", str(half))
    evicted = -1
    while (now := _info(c, "evicted_keys")) != evicted:  # the eviction's timer proc runs it over the next turns
        evicted = now
        time.sleep(0.2)
    dt = cpu_seconds(pid) - t
    n = _info(c, "evicted_keys") - before
    c.call("CONFIG", "SET", "maxmemory", "0")
    c.call("FLUSHALL")
    c.close()
    return dt / max(n, 1) * 1e6, n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("policies", nargs="?", default=",".join(POLICIES))
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    keys = int(os.environ.get("EVICT_KEYS", "200000"))
    servers = [start_redis(), start_raxdb()]
    try:
        for policy in args.policies.split(","):
            for r in range(args.rounds):
                figures = [run(s, policy, keys) for s in servers]
                print(f"{policy:16s} round {r + 1}: " + ", ".join(
                    f"{s.name} {us:6.2f} us/evicted key ({n:,})" for s, (us, n) in zip(servers, figures, strict=True)),
                    f"ratio {figures[1][0] / figures[0][0]:.1f}", flush=True)
    finally:
        for s in servers:
            s.stop()


if __name__ == "__main__":
    main()
