"""CPU per evicted key: a database of 200,000 small keys (strings; with a TTL for the volatile
policies) brought down to half its figure by one `perform_evictions` with no time limit, under
each policy.  The eviction path alone (the pool's fill, the sampling, the delete, the "evicted"
notification, the propagation), without a client or a command around it.

    .venv/bin/python bench/evict_cost.py [allkeys-lru,volatile-ttl,...]
    valgrind --tool=callgrind bench/evict_cost.py allkeys-lru    # instructions (see --keys)

Environment: EVICT_KEYS (default 200000) keys to fill.
"""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import raxdb.server.commands  # noqa: E402,F401
from raxdb.server.config.options import Config  # noqa: E402
from raxdb.server.core import Server  # noqa: E402
from raxdb.server.memory import evict  # noqa: E402

POLICIES = ("allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-ttl", "volatile-random")


def run(policy: str, keys: int) -> tuple[float, int]:
    """(CPU us per evicted key, keys evicted) of one eviction down to half the figure."""
    random.seed(0)
    srv = Server(Config())
    srv.config.set("maxmemory-policy", policy.encode())
    srv.config.set("maxmemory-eviction-tenacity", b"100")
    db = srv.dbs[0]
    volatile = policy.startswith("volatile")
    now = srv.now_ms
    for i in range(keys):
        key = b"key:%012d" % i
        db.add(key, b"xxx")
        if volatile:
            db.set_expire(key, now + 3_600_000 + i)
    srv.config.set("maxmemory", b"%d" % (1 << 40))  # counts the keyspace (recount), evicts nothing
    half = evict.used_memory(srv) // 2
    srv.maxmemory = half  # as _apply would, without its recount and its timer
    before = srv.stat_evicted_keys
    t = time.process_time()
    evict.perform_evictions(srv)
    dt = time.process_time() - t
    n = srv.stat_evicted_keys - before
    return dt / max(n, 1) * 1e6, n


def main() -> None:
    policies = sys.argv[1].split(",") if len(sys.argv) > 1 else POLICIES
    keys = int(os.environ.get("EVICT_KEYS", "200000"))
    for policy in policies:
        us, n = run(policy, keys)
        print(f"{policy:16s} {us:7.3f} us/evicted key ({n:,} evicted)", flush=True)


if __name__ == "__main__":
    main()
