"""Memory per hash field deadline (Redis 7.4's hash field expiration, #59), raxdb beside the newer
oracle (valkey-server 9.1, tests/support/servers.py start_newer): the RSS of one hash of N fields
(hashtable-encoded), then with a deadline on every field, then per field (each step's growth over
N).  Also many small hashes (listpack vs listpackex), where the deadline's cost is per hash.
Usage: python bench/hfe_memory.py [N]   (default 100000)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis  # noqa: E402

from tests.support.servers import start_newer, start_raxdb  # noqa: E402

BATCH = 1000
FAR_MS = 4102444800000


def rss(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def measure(name: str, srv, n: int) -> dict[str, float]:
    r = redis.Redis(port=srv.port)
    pid = srv.proc.pid
    base = rss(pid)
    for i in range(0, n, BATCH):
        r.hset("big", mapping={b"field:%08d" % j: b"v" for j in range(i, min(n, i + BATCH))})
    fields = rss(pid)
    for i in range(0, n, BATCH):
        r.hpexpireat("big", FAR_MS, *[b"field:%08d" % j for j in range(i, min(n, i + BATCH))])
    ttl = rss(pid)
    small = n // 10
    pipe = r.pipeline(transaction=False)
    for i in range(small):
        pipe.hset(b"s:%d" % i, mapping={b"a": b"1", b"b": b"2"})
    pipe.execute()
    s0 = rss(pid)
    for i in range(small):
        pipe.hpexpireat(b"s:%d" % i, FAR_MS, b"a")
    pipe.execute()
    s1 = rss(pid)
    enc = (r.object("encoding", "big").decode(), r.object("encoding", "s:0").decode())
    r.close()
    out = {"field": (fields - base) / n, "ttl": (ttl - fields) / n, "small_hash_ttl": (s1 - s0) / small}
    print(f"{name:8} encodings {enc}: {out['field']:.1f} B/field, +{out['ttl']:.1f} B per field deadline "
          f"(hashtable), +{out['small_hash_ttl']:.1f} B per small hash given one deadline")
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    ours = start_raxdb("--compat-version", "7.4")
    theirs = start_newer()
    try:
        a = measure("raxdb", ours, n)
        b = measure("valkey", theirs, n)
        print(f"ratio raxdb/valkey: field {a['field'] / b['field']:.2f}, deadline {a['ttl'] / b['ttl']:.2f}")
    finally:
        ours.stop()
        theirs.stop()


if __name__ == "__main__":
    main()
