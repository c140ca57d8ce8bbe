"""Compare the replies two tap.py logs recorded, one of a run against redis-server, one of the same
run against raxdb: a finder of differences the tests' own assertions let through.

    python replies.py REDIS.log RAXDB.log

Requests are grouped by their exact arguments, and each group's set of distinct replies compared
(the suite's threads and tasks interleave differently from run to run, and a test that fails
against one server stops early, but the same request in the same state gets the same reply).  A
request that appears in one run only (random keys, lock tokens) is not compared.  Replies that
differ by nature (server times, ids, addresses, memory figures, random picks) are left out by
command, and so is what a connection reads after a random pick (SPOP).  Stream entry ids
(milliseconds), 32-digit hex tokens (redis-py's Lock uuids) and HELLO's client id are masked.
Replies that list a set's members, the keyspace's keys or a dict's entries (CONFIG GET, COMMAND)
are compared sorted: Redis's hash-table order is not raxdb's insertion order (by design, README),
and Redis seeds its dicts per process.  Known differences (KNOWN) are listed apart; each other
differing request is printed with the replies only one server gave.  Exit status 1 if any differ.
"""

from __future__ import annotations

import json
import re
import sys

from tap import frame_end  # tests.support.diff's, put on the path by tap

# replies that carry clocks, ids, addresses, sizes or random choices, so differ between any two
# runs: by command, and by subcommand where only some do (an empty set: all of them)
VOLATILE: dict[str, set[str]] = {
    name: set() for name in (
        "info", "time", "lastsave", "debug", "memory", "latency", "slowlog", "randomkey", "srandmember",
        "spop", "zrandmember", "hrandfield", "xinfo", "xpending", "module", "lolwut", "role", "ttl",
        "pttl", "expiretime", "pexpiretime", "bgsave", "bgrewriteaof", "dump", "shutdown", "psync", "sync")}
VOLATILE.update({"client": {"list", "info", "id", "kill", "getredir", "trackinginfo"},
                 "object": {"freq", "idletime"}, "acl": {"log", "genpass"}, "function": {"dump", "stats"},
                 "script": {"kill"}})
# differences known and kept (request prefix, lowercased): listed apart, not counted
KNOWN = {("config", "get", "*"): "bind's default is loopback in raxdb ('* -::*' in Redis); dir and port are the run's",
         ("acl", "getuser"): "Redis lists single-command rules in its per-process seeded dict order",
         ("acl", "list"): "the same rule order"}
# random picks: what a connection reads after one depends on it
RANDOM = {"spop", "srandmember", "zrandmember", "hrandfield", "randomkey"}
# replies whose aggregates list a set's members, the keyspace's keys, or a dict's entries
UNORDERED = {"keys", "scan", "smembers", "sinter", "sunion", "sdiff", "sscan", "config", "command", "acl",
             "pubsub"}
STREAM_ID = re.compile(r"\d{13}-\d+")
TOKEN = re.compile(r"\b[0-9a-f]{32}\b")
CLIENT_ID = re.compile(r"\$2\r\nid\r\n:\d+\r\n")  # HELLO's


def sorted_frame(frame: str) -> str:
    """An aggregate reply with its elements (a map's entries) sorted, recursively; a scalar
    unchanged."""
    if frame[:1] not in ("*", "~", "%"):
        return frame
    head = frame.find("\r\n") + 2
    children, pos = [], head
    while pos < len(frame):
        end = frame_end(frame.encode("latin-1"), pos)
        assert end is not None, frame  # the tap logged whole frames only
        children.append(sorted_frame(frame[pos:end]))
        pos = end
    if frame[:1] == "%":
        children = ["".join(pair) for pair in zip(children[::2], children[1::2], strict=True)]
    return frame[:head] + "".join(sorted(children))


def known(req: tuple[str, ...]) -> str | None:
    lowered = tuple(a.lower() for a in req[:3])
    return KNOWN.get(lowered) or KNOWN.get(lowered[:2]) or KNOWN.get(lowered[:1])


def volatile(req: tuple[str, ...]) -> bool:
    subs = VOLATILE.get(req[0].lower())
    return subs is not None and (not subs or (len(req) > 1 and req[1].lower() in subs))


def load(path: str) -> dict[tuple[str, ...], set[str]]:
    grouped: dict[tuple[str, ...], set[str]] = {}
    after_random: set[int] = set()  # connections that made a random pick
    with open(path, encoding="utf-8") as log:
        for line in log:
            pair = json.loads(line)
            if pair["conn"] in after_random:
                continue
            if pair["req"][0].lower() in RANDOM:
                after_random.add(pair["conn"])
            reply = CLIENT_ID.sub("<client id>", TOKEN.sub("<token>", STREAM_ID.sub("<id>", pair["rep"])))
            req = tuple(pair["req"])
            name = req[0].lower()
            if volatile(req):
                continue
            grouped.setdefault(req, set()).add(sorted_frame(reply) if name in UNORDERED else reply)
    return grouped


def main(argv: list[str]) -> int:
    redis, raxdb = load(argv[1]), load(argv[2])
    common = [req for req in redis if req in raxdb]
    differing = [req for req in common if redis[req] != raxdb[req] and not known(req)]
    print(f"requests compared: {len(common)} distinct; replies differ for {len(differing)}")
    for req in common:
        if redis[req] != raxdb[req] and known(req):
            print(f"  known: {' '.join(req)[:100]!r}: {known(req)}")
    for req in differing:
        shown = " ".join(req)[:200]
        print(f"  {shown!r}")
        print(f"    redis-server: {sorted(redis[req] - raxdb[req])!r}"[:600])
        print(f"    raxdb:        {sorted(raxdb[req] - redis[req])!r}"[:600])
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
