"""`make bench`'s rows beyond redis-benchmark's default set: replies that walk a collection, large
values, PUBLISH fan-out, MULTI/EXEC blocks, SCAN cursors, GEO, BITFIELD and expiry-heavy writes.

What belongs here: each row's command (as redis-benchmark arguments, or a driver for what
redis-benchmark cannot send), the data it reads (`prepare`, the same in both servers) and what
must run beside it (`beside`: 100 subscribers for PUBLISH).  bench/bench.py runs them with its own
rows, the two servers alternating, CPU per request read from /proc.  Bounded: every loop here ends
by itself, and the subscribers' thread stops when its run ends.

Invariant: the data is built from fixed values (no randomness), so both servers hold the same keys.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterator

import hiredis

# The prepared collections: a 600-element list, a 100-field hash, a 1,000-member sorted set (scores 0..999), a
# 100-member one (a listpack, scores 0..99 with fractions), two 100-member sets overlapping by half, a 10,000-field hash and 10,000-member sorted set for the
# cursors, 10,000 points around Sicily for GEOSEARCH, values of 10 KB and 1 MB.
LIST_ELEMENTS = 600
HASH_FIELDS = 100
ZSET_MEMBERS = 1000
SMALL_ZSET_MEMBERS = 100
SET_MEMBERS = 100
BIG = 10_000
GEO_POINTS = 10_000
VALUE_10K = b"v" * 10_240
VALUE_1M = b"w" * 1_048_576

WORKLOADS: dict[str, list[str]] = {
    # replies that walk a collection
    "HGETALL_100": ["--", "HGETALL", "coll:hash"],
    "HMGET_10": ["--", "HMGET", "coll:hash", *(f"field:{i}" for i in range(0, 100, 10))],
    "ZRANGE_100_WS": ["--", "ZRANGE", "coll:zset", "0", "99", "WITHSCORES"],
    "ZRANGEBYSCORE_100": ["--", "ZRANGEBYSCORE", "coll:zset", "400", "(500", "WITHSCORES"],
    "SMEMBERS_100": ["--", "SMEMBERS", "coll:set"],
    "SINTER_100": ["--", "SINTER", "coll:set", "coll:set2"],
    "SUNION_100": ["--", "SUNION", "coll:set", "coll:set2"],
    "LRANGE_600": ["--", "LRANGE", "coll:list", "0", "599"],
    # random picks with repeats from a small (listpack) hash and sorted set
    "HRANDFIELD_100": ["--", "HRANDFIELD", "coll:hash", "-5", "WITHVALUES"],
    "ZRANDMEMBER_100": ["--", "ZRANDMEMBER", "coll:zset100", "-5", "WITHSCORES"],
    # large values: one key each (no -r), written by redis-benchmark (-d) or read as prepared
    "SET_10K": ["-t", "set", "-d", str(len(VALUE_10K))],
    "GET_10K": ["--", "GET", "big:10k"],
    "SET_1M": ["-t", "set", "-d", str(len(VALUE_1M))],
    "GET_1M": ["--", "GET", "big:1m"],
    # fan-out to 100 subscribers (held by `beside` for the run)
    "PUBLISH_100": ["--", "PUBLISH", "bench:chan", "hello-subscribers"],
    # cursors from random places (every cursor below the size is valid in both servers)
    "SCAN_100": ["--", "SCAN", "__rand_int__", "COUNT", "100"],
    "HSCAN_100": ["--", "HSCAN", "coll:bighash", "__rand_int__", "COUNT", "100"],
    "ZSCAN_100": ["--", "ZSCAN", "coll:bigzset", "__rand_int__", "COUNT", "100"],
    # GEO and BITFIELD
    "GEOADD": ["--", "GEOADD", "geo:add", "13.361389", "38.115556", "member:__rand_int__"],
    "GEOSEARCH_10": ["--", "GEOSEARCH", "geo:pts", "FROMLONLAT", "14", "37.5", "BYRADIUS", "20", "km", "ASC",
                     "COUNT", "10", "WITHDIST"],
    "BITFIELD": ["--", "BITFIELD", "bf:__rand_int__", "INCRBY", "u8", "100", "1", "GET", "u4", "0"],
    # keys living 100 ms: the active expire cycle removes about as many as are written
    "SET_PX": ["--", "SET", "exp:__rand_int__", "xxx", "PX", "100"],
}
NO_RANDOM = {"SET_10K", "SET_1M"}
PIPELINES = {"SET_1M": (1,), "GET_1M": (1,), "PUBLISH_100": (1,)}
# (the 10 KB rows: at 20,000 requests a -P 16 run was ~60 ms of server CPU, of it ~3.5 ms the 50
# connections' set-up, ~70 us each, redis-server's ~40: docs/speed-log.md's connection entries)
REQUESTS = {"LRANGE_600": 20_000, "SET_10K": 100_000, "GET_10K": 100_000, "SET_1M": 500, "GET_1M": 500,
            "PUBLISH_100": 20_000, "SCAN_100": 20_000, "HSCAN_100": 20_000, "ZSCAN_100": 20_000,
            "HGETALL_100": 50_000, "ZRANGE_100_WS": 50_000, "ZRANGEBYSCORE_100": 50_000,
            "SMEMBERS_100": 50_000, "SINTER_100": 50_000, "SUNION_100": 50_000, "GEOSEARCH_10": 2_000,
            "HRANDFIELD_100": 50_000, "ZRANDMEMBER_100": 50_000,
            "MULTI_EXEC": 100_000}  # 20,000 blocks were ~10 of /proc's 10 ms ticks (bench/cpuclock.py)


def setup_commands() -> Iterator[list[bytes]]:
    """The commands that build the prepared data (the same in both servers)."""
    yield [b"RPUSH", b"coll:list", *(b"element:%d" % i for i in range(LIST_ELEMENTS))]
    yield [b"HSET", b"coll:hash", *(x for i in range(HASH_FIELDS) for x in (b"field:%d" % i, b"value:%d" % i))]
    yield [b"ZADD", b"coll:zset", *(x for i in range(ZSET_MEMBERS) for x in (b"%d" % i, b"member:%d" % i))]
    yield [b"ZADD", b"coll:zset100", *(x for i in range(SMALL_ZSET_MEMBERS)
                                       for x in (b"%d.%d" % (i, i % 10) if i % 2 else b"%d" % i, b"member:%d" % i))]
    yield [b"SADD", b"coll:set", *(b"member:%d" % i for i in range(SET_MEMBERS))]
    yield [b"SADD", b"coll:set2", *(b"member:%d" % i for i in range(SET_MEMBERS // 2, SET_MEMBERS * 3 // 2))]
    for start in range(0, BIG, 1000):
        batch = range(start, start + 1000)
        yield [b"HSET", b"coll:bighash", *(x for i in batch for x in (b"field:%d" % i, b"value:%d" % i))]
        yield [b"ZADD", b"coll:bigzset", *(x for i in batch for x in (b"%d" % i, b"member:%d" % i))]
    for start in range(0, GEO_POINTS, 1000):
        # a 100 x 100 grid over 12..16 E, 36..39 N
        yield [b"GEOADD", b"geo:pts", *(x for i in range(start, start + 1000)
                                        for x in (b"%.4f" % (12 + (i % 100) * 0.04), b"%.4f" % (36 + (i // 100) * 0.03),
                                                  b"p:%d" % i))]
    yield [b"SET", b"big:10k", VALUE_10K]
    yield [b"SET", b"big:1m", VALUE_1M]


# The subscribers' thread sweeps its sockets, then lets output gather this long before the next
# sweep: reading each socket as soon as a server wrote to it made this thread's CPU (a recv per
# write) a third busy thread beside the server and redis-benchmark on the host's two cores, for
# both servers alike.  What 5 ms brings is a few KB a socket (at 20,000 PUBLISH/s), far below a
# socket's receive buffer (128 KB at least), so no server is made to hold output for a subscriber
# (docs/speed-log.md, 2026-11-27 PUBLISH).
DRAIN_PAUSE_S = 0.005


@contextlib.contextmanager
def _subscribers(port: int, n: int = 100, channel: bytes = b"bench:chan") -> Iterator[None]:
    """`n` connections subscribed to `channel`, drained by a thread until the block ends."""
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$%d\r\n%s\r\n" % (len(channel), channel))
        socks.append(s)
    for s in socks:  # each one's subscribe confirmation, so every subscriber counts from the start
        reader = hiredis.Reader()
        while True:
            reader.feed(s.recv(4096))
            if reader.gets() is not False:
                break
        s.setblocking(False)
    stop = threading.Event()

    def drain() -> None:
        sel = selectors.DefaultSelector()
        for s in socks:
            sel.register(s, selectors.EVENT_READ)
        while not stop.is_set():
            for key, _ in sel.select(0.1):
                with contextlib.suppress(BlockingIOError):
                    key.fileobj.recv(1 << 18)  # type: ignore[union-attr]
            stop.wait(DRAIN_PAUSE_S)
        sel.close()

    t = threading.Thread(target=drain, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join(10)
        for s in socks:
            s.close()


def beside(name: str, port: int) -> contextlib.AbstractContextManager[None]:
    """What must run during a row's measurement on the server at `port`."""
    if name == "PUBLISH_100":
        return _subscribers(port)
    return contextlib.nullcontext()


# MULTI/EXEC: redis-benchmark sends one command per request, so a driver here sends the blocks:
# 10 connections, `pipeline` blocks per round trip each, each connection sending its next as soon
# as its replies are in, whichever connection answers first (as redis-benchmark's clients run on
# its event loop).  A driver that read the connections in a fixed order would make each round wait
# for one server's write order: Redis writes the last client it queued first.  Client-bound in
# Python: read its CPU ratio, not its ops/s.
MULTI_BLOCK = b"".join(
    b"*%d\r\n" % len(cmd) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in cmd)
    for cmd in ([b"MULTI"], [b"SET", b"tx:key", b"xxx"], [b"INCR", b"tx:counter"],
                [b"HSET", b"tx:hash", b"field", b"xxx"], [b"EXEC"]))
MULTI_REPLIES = 5


def multi_exec(port: int, pipeline: int, requests: int, connections: int = 10) -> float:
    """ops/s (blocks per second) of `requests` MULTI/SET/INCR/HSET/EXEC blocks."""
    socks = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(connections)]
    readers = [hiredis.Reader() for _ in socks]
    payload = MULTI_BLOCK * pipeline
    total = max(1, requests // (pipeline * connections)) * connections  # round trips in all
    want = [0] * connections  # replies each connection still waits for
    sel = selectors.DefaultSelector()
    t0 = time.perf_counter()
    try:
        sent = done = 0
        for i, s in enumerate(socks):
            sel.register(s, selectors.EVENT_READ, i)
            s.sendall(payload)
            want[i] = MULTI_REPLIES * pipeline
            sent += 1
        while done < total:
            for key, _ in sel.select(30):
                i = key.data
                reader = readers[i]
                reader.feed(socks[i].recv(1 << 16))
                while want[i] and reader.gets() is not False:
                    want[i] -= 1
                if not want[i]:
                    done += 1
                    if sent < total:
                        socks[i].sendall(payload)
                        want[i] = MULTI_REPLIES * pipeline
                        sent += 1
    finally:
        sel.close()
        for s in socks:
            s.close()
    return total * pipeline / (time.perf_counter() - t0)


DRIVERS: dict[str, Callable[[int, int, int], float]] = {"MULTI_EXEC": multi_exec}
