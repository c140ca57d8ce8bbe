"""Compare the replies two tap.py logs recorded, one of a run against redis-server, one of the same
run against raxdb: a finder of differences the tests' own assertions let through.

    python replies.py REDIS.log RAXDB.log

Requests are grouped by their exact arguments, and each group's set of distinct replies compared
(the suite's threads and tasks interleave differently from run to run, and a test that fails
against one server stops early, but the same request in the same state gets the same reply).  A
request that appears in one run only (random keys, lock tokens) is not compared.  Replies that
differ by nature (server times, ids, addresses, memory figures, random picks) are left out by
command; stream entry ids (milliseconds) are masked; the members of a set and the keys of the
keyspace come in hash-table order in Redis and in insertion order in raxdb (by design, README), so
those replies are compared sorted.  Each differing request is printed with the replies only one
server gave.  Exit status 1 if any differ.
"""

from __future__ import annotations

import json
import re
import sys

from tap import frame_end

# replies that carry clocks, ids, addresses, sizes or random choices, so differ between any two runs
VOLATILE = {"info", "client", "time", "lastsave", "debug", "memory", "object", "latency", "slowlog",
            "randomkey", "srandmember", "spop", "zrandmember", "hrandfield", "xinfo", "hello", "command",
            "config", "module", "lolwut", "role", "wait", "ttl", "pttl", "acl", "bgsave", "bgrewriteaof",
            "save", "xadd", "xautoclaim", "xclaim", "xpending", "dump", "restore", "function", "script",
            "sort_ro", "pubsub", "shutdown", "failover", "replicaof", "slaveof", "cluster", "readonly",
            "readwrite", "asking", "quit", "psync", "sync", "echo", "ping", "auth", "select", "swapdb",
            "expiretime", "pexpiretime"}
# replies whose aggregates list a set's members or the keyspace's keys
UNORDERED = {"keys", "scan", "smembers", "sinter", "sunion", "sdiff", "sscan"}
STREAM_ID = re.compile(r"\d{13}-\d+")


def sorted_frame(frame: str) -> str:
    """An aggregate reply with its elements sorted, recursively (a scalar unchanged)."""
    if frame[:1] not in ("*", "~"):
        return frame
    head = frame.find("\r\n") + 2
    children, pos = [], head
    while pos < len(frame):
        end = frame_end(frame.encode("latin-1"), pos)
        children.append(sorted_frame(frame[pos:end]))
        pos = end
    return frame[:head] + "".join(sorted(children))


def load(path: str) -> dict[tuple[str, ...], set[str]]:
    grouped: dict[tuple[str, ...], set[str]] = {}
    with open(path, encoding="utf-8") as log:
        for line in log:
            pair = json.loads(line)
            req, reply = tuple(pair["req"]), STREAM_ID.sub("<id>", pair["rep"])
            name = req[0].lower()
            if name in VOLATILE:
                continue
            grouped.setdefault(req, set()).add(sorted_frame(reply) if name in UNORDERED else reply)
    return grouped


def main(argv: list[str]) -> int:
    redis, raxdb = load(argv[1]), load(argv[2])
    common = [req for req in redis if req in raxdb]
    differing = [req for req in common if redis[req] != raxdb[req]]
    print(f"requests compared: {len(common)} distinct; replies differ for {len(differing)}")
    for req in differing:
        shown = " ".join(req)[:200]
        print(f"  {shown!r}")
        print(f"    redis-server: {sorted(redis[req] - raxdb[req])!r}"[:600])
        print(f"    raxdb:        {sorted(raxdb[req] - redis[req])!r}"[:600])
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
