"""Server CPU per command on the hot path (parse -> dispatch -> reply), without sockets.

Feeds pipelined batches into a real `Client` with a stub transport and reports CPU microseconds per
command (process time, so other load on the machine barely moves it).  The workloads are the
commands redis-benchmark sends in `make bench`, with the same random keys (`-r 100000`), so big
keyspaces and their cache misses are part of the figure.  redis-server spends about 1.0 us per
command; a minimal uvloop + hiredis server about 0.6-0.8 us here (it has no socket I/O either).

    .venv/bin/python bench/hotpath.py [--only SET,GET] [--profile WORKLOAD]
    bench/instr.sh WORKLOAD PIPELINE      # the same, as callgrind instructions per command

Environment: HOTPATH_AOF=1 runs with appendonly yes (the AOF written to /dev/null), so the
propagating loop is measured; HOTPATH_LIGHT=1 skips filling the 100k string keys and counters
(a quicker set-up for A/B runs of workloads that do not read them); HOTPATH_GC=a,b,c sets the
collector's thresholds (by default server/main.py's GC_THRESHOLDS, as the live server has them).
HOTPATH_REPLICA=1 attaches a replica (a client online, its output to a stub transport) with the
backlog, so every write is fed to the replication stream; the end-of-iteration flush is then
deferred as the live loop defers it (run after each read event), so the replica gets one write a
batch, as live.
HOTPATH_MAXMEMORY sets a memory limit after the set-up, with HOTPATH_POLICY's maxmemory-policy
(allkeys-lru by default): 1gb is a cache whose limit is not reached, so the memory accounting
of every write is measured; 8mb a cache at its limit: the set-up's keys overrun it
and are evicted before the run, whose commands then draw their keys afresh (as EXPIRING's), so a
write that creates a key evicts one (the run's evicted keys per command are printed, `EVICTED`).
"""

from __future__ import annotations

import collections
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import raxdb.server.commands  # noqa: E402,F401
from bench import collection_workloads, lua_workloads  # noqa: E402
from raxdb.server.config.options import Config  # noqa: E402
from raxdb.server.core import Server  # noqa: E402
from raxdb.server.events import propagate  # noqa: E402
from raxdb.server.main import GC_THRESHOLDS  # noqa: E402
from raxdb.server.memory import bigarrays  # noqa: E402
from raxdb.server.net.client import Client  # noqa: E402
from tests.support.diff import encode_command  # noqa: E402

RAND = b"__rand_int__"
# As redis-benchmark 7.0 formats them (-d 3, -r 100000 replaces __rand_int__ by 12 digits).
WORKLOADS: dict[str, list[bytes]] = {
    "SET": [b"SET", b"key:" + RAND, b"xxx"],
    # a value with base64's '=' padding (a Celery body, a token): the read check walks the frames
    "SET_B64": [b"SET", b"key:" + RAND, b"eyJib2R5IjogImFHVnNiRzg9In0="],
    "GET": [b"GET", b"key:" + RAND],
    # keys living 100 ms (bench/collection_workloads.py's SET_PX), on a simulated clock: see EXPIRING
    "SET_PX": [b"SET", b"exp:" + RAND, b"xxx", b"PX", b"100"],
    "INCR": [b"INCR", b"counter:" + RAND],
    "MSET": [b"MSET"] + [b"key:" + RAND, b"xxx"] * 10,
    "LPUSH": [b"LPUSH", b"mylist", b"xxx"],
    "RPUSH": [b"RPUSH", b"mylist", b"xxx"],
    "LPOP": [b"LPOP", b"mylist"],
    "RPOP": [b"RPOP", b"mylist"],
    "SADD": [b"SADD", b"myset", b"element:" + RAND],
    "HSET": [b"HSET", b"myhash", b"element:" + RAND, b"xxx"],
    "HGET": [b"HGET", b"myhash", b"element:" + RAND],  # the hash HSET's set-up filled
    # random picks with a negative count from the hash and the sorted set the set-up filled
    "HRANDFIELD": [b"HRANDFIELD", b"myhash", b"-5", b"WITHVALUES"],
    "ZRANDMEMBER": [b"ZRANDMEMBER", b"myzset", b"-5", b"WITHSCORES"],
    "SPOP": [b"SPOP", b"myset"],
    "ZADD": [b"ZADD", b"myzset", RAND, b"element:" + RAND],
    # bench.py's ZADD_SMALL: a one-member sorted set (a listpack) per key
    "ZADD_SMALL": [b"ZADD", b"z:" + RAND, b"5", b"member:5"],
    "LRANGE_100": [b"LRANGE", b"mylist", b"0", b"99"],
    "LRANGE_600": [b"LRANGE", b"mylist", b"0", b"599"],
    "XADD": [b"XADD", b"bench:stream", b"MAXLEN", b"~", b"100000", b"*", b"field", b"value", b"f2", b"v2"],
    # what the Spark pipeline's fill and sink send (bench/stream_workloads.py): an integer value
    "XADD_SPARK": [b"XADD", b"bench:events", b"*", b"n", b"123456", b"kind", b"even", b"payload", b"x" * 32],
    # the sink's XADD with the IDs of an id column (`ms-seq`, growing: see SEQUENTIAL)
    "XADD_ID": [b"XADD", b"bench:ids", b"<id>", b"n", b"123456", b"kind", b"even", b"payload", b"x" * 32],
    "XADD_ID_CAPPED": [b"XADD", b"bench:idcap", b"MAXLEN", b"~", b"100000", b"<id>", b"n", b"123456", b"kind",
                       b"even", b"payload", b"x" * 32],
    # bench.py's XADD_NEW, every command to a stream not seen before (`<n>`: see SEQUENTIAL): what
    # creating a stream costs (its rax, first node, tail record and keyspace entry)
    "XADD_NEW": [b"XADD", b"new:<n>", b"*", b"field", b"value"],
    "XRANGE_10": [b"XRANGE", b"bench:stream", b"-", b"+", b"COUNT", b"10"],
    "XRANGE_100_INT": [b"XRANGE", b"bench:xint", RAND, b"+", b"COUNT", b"100"],
    "XRANGE_1000_INT": [b"XRANGE", b"bench:xint", RAND, b"+", b"COUNT", b"1000"],
    **lua_workloads.WORKLOADS,  # EVALSHA_INCR, EVALSHA_MIX, FCALL_INCR
    # bench/collection_workloads.py's GEO and BITFIELD rows (GEOSEARCH_10 over its 10,000 points)
    "GEOADD": [b"GEOADD", b"geo:add", b"13.361389", b"38.115556", b"member:" + RAND],
    "GEOSEARCH_10": [b"GEOSEARCH", b"geo:pts", b"FROMLONLAT", b"14", b"37.5", b"BYRADIUS", b"20", b"km", b"ASC",
                     b"COUNT", b"10", b"WITHDIST"],
    "BITFIELD": [b"BITFIELD", b"bf:" + RAND, b"INCRBY", b"u8", b"100", b"1", b"GET", b"u4", b"0"],
    # scans of small encodings, whole in one call: the 100-field listpack hash (HGETALL_100's), the
    # 100-member listpack sorted set (ZRANDMEMBER_100's, half its scores fractions)
    "HSCAN_LP_100": [b"HSCAN", b"coll:hash", b"0"],
    "ZSCAN_LP_100": [b"ZSCAN", b"coll:zset100", b"0"],
    "ZRANGE_LP_100_WS": [b"ZRANGE", b"coll:zset100", b"0", b"-1", b"WITHSCORES"],
    # bench/collection_workloads.py's rows that walk a collection into a reply, on its prepared
    # collections (`fill_collections`), and its 1 MB SET (one key, as redis-benchmark without -r)
    **{name: [a.encode() for a in collection_workloads.WORKLOADS[name][1:]]
       for name in ("HGETALL_100", "ZRANGE_100_WS", "ZRANGEBYSCORE_100", "SMEMBERS_100", "SINTER_100",
                    "SUNION_100", "LRANGE_600", "ZSCAN_100", "HSCAN_100", "HRANDFIELD_100", "ZRANDMEMBER_100")},
    "SET_1M": [b"SET", b"key:big", collection_workloads.VALUE_1M],
    # large values (as redis-benchmark -d 10000 and GET of the prepared 10 KB and 1 MB keys)
    "SET_10K": [b"SET", b"key:10k", collection_workloads.VALUE_10K],
    "GET_10K": [b"GET", b"big:10k"],
    "GET_1M": [b"GET", b"big:1m"],
    # SET_10K's batches in 64 KiB reads (CUT_READS), as they arrive on loopback: most reads
    # continue a command the last one left partly received (the continued read)
    "SET_10K_CUT": [b"SET", b"key:10k", collection_workloads.VALUE_10K],
    "GET_4K": [b"GET", b"big:4k"],  # values either side of the size a reply goes out by reference from
    "GET_16K": [b"GET", b"big:16k"],
    # whole 10 KB values of other types (their keys made by BIG_SETUP): a hash's value, ten of them
    # (a hashtable's HGETALL), a list's element (decoded from its listpack)
    "HGET_10K": [b"HGET", b"big:hash", b"f"],
    "HGETALL_10K": [b"HGETALL", b"big:hash10"],
    "LINDEX_10K": [b"LINDEX", b"big:list", b"5"],
    # PUBLISH to SUBSCRIBERS subscriber clients (their transports count writes: `fan_out_run`)
    "PUBLISH_100": [a.encode() for a in collection_workloads.WORKLOADS["PUBLISH_100"][1:]],
}
# Workloads of several commands sent as one block, counted per unit: (the block's commands, units
# in a block).  MULTI_EXEC is bench/collection_workloads.py's block, counted per block; SINK_TX is
# what the Spark pipeline's idempotent sink sends for a partition (bench/stream_workloads.py's
# sink_tx: WATCH and GET its marker, MULTI, the XADDs, SET the marker, EXEC), counted per entry.
# -P is blocks per batch.
SINK_ENTRIES = 1000
BLOCKS: dict[str, tuple[list[list[bytes]], int]] = {
    "MULTI_EXEC": ([[b"MULTI"], [b"SET", b"tx:key", b"xxx"], [b"INCR", b"tx:counter"],
                    [b"HSET", b"tx:hash", b"field", b"xxx"], [b"EXEC"]], 1),
    "SINK_TX": ([[b"WATCH", b"raxdb:written:bench:0"], [b"GET", b"raxdb:written:bench:0"], [b"MULTI"],
                 *[[b"XADD", b"bench:out:tx", b"*", b"n", b"%d" % i, b"kind", (b"odd", b"even")[i % 2 == 0],
                    b"payload", b"x" * 32] for i in range(SINK_ENTRIES)],
                 [b"SET", b"raxdb:written:bench:0", b"ok", b"EX", b"86400"], [b"EXEC"]], SINK_ENTRIES),
}

# Workloads whose <id> must grow from command to command (an XADD's explicit ID), or whose <n> (in
# a key) must differ from every earlier command's (XADD_NEW): their batches
# are made for the run, never replayed, for at least SEQUENTIAL_MIN commands whatever the run's
# count, so that bench/instr.sh's two runs build the same batches and the building cancels out.
SEQUENTIAL = {"XADD_ID", "XADD_ID_CAPPED", "XADD_NEW"}
SEQUENTIAL_MIN = 20_000
# Workloads whose keys expire while they run: the server's clock is frozen and moved on by
# EXPIRING_US per command after each batch (200,000 commands a second, about the live -P 16 rate), and the
# cron's active expire cycle runs at each tick of it (every 1/hz s of that time), so a key written
# lives 100 ms of it and the lookups, overwrites and the cycle's deletions happen as in the live
# server, the same in every run (whatever the host's load or callgrind's slowdown).  Counted, the
# cycle's time cap is lifted (a tick is 50x slower under callgrind); bench/instr.sh runs them with
# N1/N2 that span several ticks (see its usage).
EXPIRING = {"SET_PX"}
EXPIRING_US = 5
EXPIRING_COMMANDS = 400_000  # distinct commands made for a run (more are replayed)
# Commands per timed run where the default 100,000 would take minutes (a GEOSEARCH walks ~1,700 points).
COMMANDS = {"GEOSEARCH_10": 5_000}
BIG_SETUP: dict[str, list[bytes]] = {
    "GET_4K": [b"SET", b"big:4k", b"v" * 4096],
    "GET_16K": [b"SET", b"big:16k", b"v" * 16384],
    "HGET_10K": [b"HSET", b"big:hash", b"f", collection_workloads.VALUE_10K],
    "HGETALL_10K": [b"HSET", b"big:hash10",
                    *[x for i in range(10) for x in (b"f%d" % i, collection_workloads.VALUE_10K)]],
    "LINDEX_10K": [b"RPUSH", b"big:list", *[collection_workloads.VALUE_10K] * 10],
}
OWN_DATA = {"SET_10K", "SET_10K_CUT", "GET_10K", "GET_1M", "PUBLISH_100"}  # collection_workloads rows that read none of its collections
COLLECTIONS = {b"coll:list", b"coll:hash", b"coll:zset", b"coll:zset100", b"coll:set", b"coll:set2"}
# What one read event brings at most (uvloop reads into a buffer of this size): a 1 MB request
# arrives in several reads, as it does from a socket.
READ_SIZE = 256_000
# Workloads whose reads are smaller: a -P 16 batch of 10 KB SETs (164 KB) comes in 64 KiB reads on
# loopback, so two reads of three start inside a command.
CUT_READS = {"SET_10K_CUT": 65_536}
# Data the read and pop workloads find, as `make bench` leaves it before them.
SETUP = ["SET", "INCR", "LPUSH", "SADD", "HSET", "ZADD", "XADD"]
VARIANTS = 512  # distinct pre-built batches per workload (fresh keys without per-run formatting)


class StubTransport:
    def __init__(self) -> None:
        # A C-level sink, so the harness adds no Python frames per write (uvloop's write is C too).
        self.sink: collections.deque[bytes] = collections.deque(maxlen=1)
        self.write = self.sink.append
        self.writelines = self.sink.append  # big replies go out in pieces (client.flush_output)
        self.get_write_buffer_size = int  # the kernel takes everything: nothing held (C-level, 0)

    def get_extra_info(self, name: str, default=None):  # noqa: ANN001
        return ("127.0.0.1", 1) if name in ("peername", "sockname") else default

    def close(self) -> None:
        pass

    # A protocol that stands in for the client while a big argument arrives (server/net/bigread.py)
    def get_protocol(self):  # noqa: ANN201
        return self.protocol

    def set_protocol(self, protocol) -> None:  # noqa: ANN001
        self.protocol = protocol

    def is_closing(self) -> bool:
        return False


def deliver(c: Client, data: bytes) -> None:
    """One read as the event loop hands it over: to the client's data_received, or, while a
    BufferedProtocol stands in for it, written into the buffers it gives (the copy the kernel
    makes in the live server, counted here), switching back when it hands the transport back."""
    t = c.transport
    if t.protocol is c:
        c.data_received(data)
        return
    with memoryview(data) as view:
        pos = 0
        while pos < len(data):
            proto = t.protocol
            if proto is c:
                c.data_received(view[pos:].tobytes())
                return
            buf = proto.get_buffer(-1)
            n = min(len(buf), len(data) - pos)
            buf[:n] = view[pos:pos + n]
            proto.buffer_updated(n)
            pos += n


class CountingTransport(StubTransport):
    """A subscriber's transport: keeps every write (a list, C-level appends) so a run can say how
    many writes a PUBLISH cost, and never holds output (get_write_buffer_size is `int`: 0)."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.write = self.writes.append
        self.get_write_buffer_size = int


SUBSCRIBERS = 100
EVICTED: dict[str, float] = {}  # keys evicted per command of the last run (HOTPATH_MAXMEMORY)
WRITES: dict[str, float] = {}  # PUBLISH_100: subscriber writes per command of the last run


def fan_out_run(c: Client, pipeline: int, chunks: list[bytes], n: int) -> float:
    """PUBLISH_100: SUBSCRIBERS clients subscribed to the channel, and the end-of-iteration flush
    deferred as the live server's loop defers it (call_soon), run after each read event: a batch
    of `pipeline` PUBLISHes, then one flush of every subscriber's output."""
    srv = c.server
    subs = []
    for _ in range(SUBSCRIBERS):
        s = Client(srv)
        s.connection_made(CountingTransport())  # type: ignore[arg-type]
        s.data_received(encode_command([b"SUBSCRIBE", WORKLOADS["PUBLISH_100"][1]]))
        s.transport.writes.clear()
        subs.append(s)
    calls: list = []
    srv.call_soon = lambda fn, *args: calls.append((fn, args))  # the loop's call_soon(callback, *args)
    t = time.process_time()
    for i in range(n):
        c.data_received(chunks[i % len(chunks)])
        while calls:
            fn, args = calls.pop()
            fn(*args)
    dt = time.process_time() - t
    WRITES["PUBLISH_100"] = sum(len(s.transport.writes) for s in subs) / (n * pipeline)
    return dt / (n * pipeline) * 1e6


def expiring_run(c: Client, pipeline: int, chunks: list[bytes], n: int, counting: bool) -> float:
    """An EXPIRING workload's `n` batches on the simulated clock, the cron's expire cycle at its
    ticks included in the time."""
    from raxdb.server.base import clock

    srv = c.server
    if counting:  # the cycle's durations on the simulated clock too: under callgrind a time limit
        srv.expire_cycle.timer = lambda: clock.us(srv)  # would cut it short, so it runs to its stale share
    clock.freeze(srv)
    step = EXPIRING_US * pipeline
    period = 1_000_000 // srv.config.hz
    since = 0
    t = time.process_time()
    for i in range(n):
        c.data_received(chunks[i % len(chunks)])
        clock.advance(srv, step)
        since += step
        if since >= period:
            since -= period
            srv.active_expire_cycle(srv.now_ms)
    dt = time.process_time() - t
    return dt / (n * pipeline) * 1e6


def batches(name: str, pipeline: int, rnd: random.Random) -> list[bytes]:
    if name in BLOCKS:  # the same block every time: one batch
        return [b"".join(encode_command(cmd) for cmd in BLOCKS[name][0]) * pipeline]

    def one() -> bytes:
        return encode_command([a.replace(RAND, b"%012d" % rnd.randrange(100_000)) for a in WORKLOADS[name]])
    variants = VARIANTS if any(RAND in a for a in WORKLOADS[name]) else 1  # (SET_1M: not 512 MB of copies)
    if name in EXPIRING or (os.environ.get("HOTPATH_MAXMEMORY") and variants > 1):
        # keys drawn afresh for every command of a run: a replayed key would be rewritten before
        # its deadline, and at a memory limit 512 batches' keys would all be there after the first
        # pass, so nothing would be created and nothing evicted
        variants = -(-EXPIRING_COMMANDS // pipeline)
    return [b"".join(one() for _ in range(pipeline)) for _ in range(variants)]


def sequential_batches(name: str, pipeline: int, commands: int) -> list[bytes]:
    """A SEQUENTIAL workload's batches for `commands` commands: <id> the i-th is 1700000000000+i-0,
    <n> i."""
    cmds = [encode_command([b"%d-0" % (1_700_000_000_000 + i) if a == b"<id>" else a.replace(b"<n>", b"%d" % i)
                            for a in WORKLOADS[name]])
            for i in range(commands)]
    return [b"".join(cmds[i:i + pipeline]) for i in range(0, commands - pipeline + 1, pipeline)]


def make_client(setup_commands: int = 200_000, counting: bool = False, setup: bool = True) -> Client:
    import gc

    srv = Server(Config())
    c = Client(srv)
    c.connection_made(StubTransport())  # type: ignore[arg-type]
    c.transport.protocol = c  # type: ignore[attr-defined]
    if counting:  # before the set-up, whose commands are slow under callgrind too
        quiet(c)
    rnd = random.Random(7)
    for name in SETUP if setup else ():  # (the block workloads read none of it: quicker under callgrind)
        for chunk in batches(name, 100, rnd)[: max(1, setup_commands // 100 // len(SETUP))]:
            c.data_received(chunk)
    # Every string key and counter exists, as after `make bench`'s SET and INCR runs (millions of
    # requests over -r 100000 keys): GET and INCR measure hits, not the missing-key path.  Filled
    # through the keyspace API, which is cheap enough to run under callgrind too.
    # The server's allocator hook (server/main.py installs it once serving; compiled only): the
    # keyspace's arrays grow in mappings of their own, and every PyMem free and realloc passes its
    # test.  HOTPATH_NOHOOK=1 leaves it out: its cost is the same tree's count with and without.
    if not os.environ.get("HOTPATH_NOHOOK"):
        bigarrays.install()
    db = c.db
    for i in range(0 if os.environ.get("HOTPATH_LIGHT") else 100_000):
        for key, value in ((b"key:%012d" % i, b"xxx"), (b"counter:%012d" % i, b"%d" % (i % 97))):
            if key not in db:
                db.add(key, value)
    # the scripting workloads' scripts and functions library
    c.data_received(b"".join(encode_command(cmd) for cmd in lua_workloads.setup_commands()))
    # The list holds more than the pop workloads take, as after `make bench`'s pushes (the 200 the
    # set-up pushed ran out in the first batches: LPOP and RPOP measured a missing key)
    if setup:
        ql = db.get(b"mylist", srv.now_ms)
        ql.extend_tail([b"xxx"] * (20_000 - ql.count))
    if os.environ.get("HOTPATH_AOF"):
        # appendonly yes, writing to /dev/null: every write is propagated and encoded, and the
        # AOF buffer written once per batch (Server.flush_writes), as the live server does
        srv.aof.fd = os.open(os.devnull, os.O_WRONLY)
        srv.propagation_targets.append(srv.aof)
        propagate.sync(srv)
    if os.environ.get("HOTPATH_REPLICA"):
        attach_replica(srv)
    if os.environ.get("HOTPATH_MAXMEMORY"):
        # the set-up's excess evicted before the run, in one go (no time limit), then the default tenacity
        c.data_received(encode_command([b"CONFIG", b"SET", b"maxmemory-policy",
                                        os.environ.get("HOTPATH_POLICY", "allkeys-lru").encode(),
                                        b"maxmemory-eviction-tenacity", b"100",
                                        b"maxmemory", os.environ["HOTPATH_MAXMEMORY"].encode()]))
        c.data_received(encode_command([b"PING"]))
        c.data_received(encode_command([b"CONFIG", b"SET", b"maxmemory-eviction-tenacity", b"10"]))
    gc.collect()
    gc.freeze()
    # the live server's bounds: a young collection's walk is part of what a command costs
    gc.set_threshold(*(map(int, os.environ["HOTPATH_GC"].split(",")) if os.environ.get("HOTPATH_GC")
                       else GC_THRESHOLDS))
    return c


def attach_replica(srv: Server) -> None:
    """HOTPATH_REPLICA: a replica online (as after its sync), fed by the backlog's stream."""
    from raxdb.server.replication import master

    r = Client(srv)
    r.connection_made(StubTransport())  # type: ignore[arg-type]
    rep = master.replica_of(r)  # type: ignore[arg-type]
    srv.repl.create_backlog()
    srv.repl.master._flag(rep)
    rep.state = master.ONLINE


def deferred_run(c: Client, chunks: list[bytes], n: int) -> None:
    """`n` batches, the end-of-iteration flush deferred as the loop's call_soon defers it: run
    after each read event, as a live loop iteration ends."""
    srv = c.server
    calls: list = []
    srv.call_soon = lambda fn, *args: calls.append((fn, args))  # the loop's call_soon(callback, *args)
    for i in range(n):
        c.data_received(chunks[i % len(chunks)])
        while calls:
            fn, args = calls.pop()
            fn(*args)


def fill_stream(c: Client) -> None:
    """XADD's stream at its `MAXLEN ~ 100000` cap, as make bench's million XADDs leave it, so every
    measured XADD also checks (and now and then runs) the trim."""
    chunks = batches("XADD", 100, random.Random(3))
    i = 0
    while len(c.db.get(b"bench:stream", c.server.now_ms)) < 100_000:
        c.data_received(chunks[i % len(chunks)])
        i += 1


def fill_small(c: Client) -> None:
    """EVALSHA_MIX's and ZADD_SMALL's 100,000 small hashes and sorted sets of 10, as bench.py's
    prepare makes them."""
    fields = [x for j in range(10) for x in (b"field:%d" % j, b"value:%d" % j)]
    members = [x for j in range(10) for x in (b"%d" % j, b"member:%d" % j)]
    for start in range(0, 100_000, 1000):
        c.data_received(b"".join(encode_command([b"HSET", b"h:%012d" % i, *fields])
                                 + encode_command([b"ZADD", b"z:%012d" % i, *members])
                                 for i in range(start, start + 1000)))


def fill_collections(c: Client, keys: set[bytes] = COLLECTIONS) -> None:
    """The `keys` bench/collection_workloads.py prepares for its rows (the same commands): the
    collections its replies walk, or GEOSEARCH_10's 10,000 points (b"geo:pts")."""
    c.data_received(b"".join(encode_command(cmd) for cmd in collection_workloads.setup_commands()
                             if cmd[1] in keys))


def quiet(c: Client) -> None:
    """The slow log and the latency monitor off, for counting under callgrind: a command runs ~50x
    slower there, and on a loaded host some cross the slow log's 10 ms (or the monitor's threshold),
    so their interpreted code would run a load-dependent number of times (see docs/speed-log.md)."""
    c.data_received(encode_command([b"CONFIG", b"SET", b"slowlog-log-slower-than", b"-1",
                                    b"latency-monitor-threshold", b"0"]))
    assert c.server.config.slowlog_log_slower_than == -1 and c.server.config.latency_monitor_threshold == 0


def fill_xint(c: Client) -> None:
    """XRANGE_1000_INT's stream as bench.py's prepare makes it: one entry per ms 1..100,000 (so
    __rand_int__ is a place in it), three fields holding integers of 1 to 10 digits."""
    for start in range(1, 100_001, 1000):
        c.data_received(b"".join(encode_command([b"XADD", b"bench:xint", b"%d-0" % i, b"n", b"%d" % i, b"kind",
                                                 b"%d" % (i % 7), b"ts", b"%d" % (1_700_000_000 + i)])
                                 for i in range(start, min(start + 1000, 100_001))))


def run(name: str, pipeline: int, commands: int, setup_commands: int = 200_000, counting: bool = False) -> float:
    c = make_client(setup_commands, counting, setup=name not in BLOCKS)
    if name == "XADD":
        fill_stream(c)
    elif name in ("EVALSHA_MIX", "ZADD_SMALL"):
        fill_small(c)
    elif name in ("XRANGE_100_INT", "XRANGE_1000_INT"):
        fill_xint(c)
    elif name == "GEOSEARCH_10":
        fill_collections(c, {b"geo:pts"})
    elif name == "ZSCAN_100":  # random cursors over the 10,000-member sorted set
        fill_collections(c, {b"coll:bigzset"})
    elif name == "HSCAN_100":  # random cursors over the 10,000-field hash
        fill_collections(c, {b"coll:bighash"})
    elif name in ("HSCAN_LP_100", "ZSCAN_LP_100", "ZRANGE_LP_100_WS"):
        fill_collections(c, {b"coll:hash", b"coll:zset100"})
    elif name in collection_workloads.WORKLOADS and name not in OWN_DATA:
        fill_collections(c)
    if name == "GET_10K":
        c.db.add(b"big:10k", collection_workloads.VALUE_10K)
    elif name == "GET_1M":
        c.db.add(b"big:1m", collection_workloads.VALUE_1M)
    elif name in BIG_SETUP:
        c.data_received(encode_command(BIG_SETUP[name]))
    # The server's random picks (SPOP's, HRANDFIELD's, ZRANDMEMBER's) the same in every run, so that
    # bench/instr.sh's two runs, and two trees, pick alike: a listpack's lookups cost by position.
    random.seed(0)
    chunks = (sequential_batches(name, pipeline, max(commands, SEQUENTIAL_MIN)) if name in SEQUENTIAL
              else batches(name, pipeline, random.Random(1)))
    units = pipeline * (BLOCKS[name][1] if name in BLOCKS else 1)  # per batch
    size = CUT_READS.get(name, READ_SIZE)
    if len(chunks[0]) > size:  # one read event per `size` bytes
        reads = [[chunk[i:i + size] for i in range(0, len(chunk), size)] for chunk in chunks]
        n = max(1, commands // units)
        t = time.process_time()
        for i in range(n):
            for part in reads[i % len(reads)]:
                deliver(c, part)
        return (time.process_time() - t) / (n * units) * 1e6
    n = max(1, commands // units)
    if name == "PUBLISH_100":
        return fan_out_run(c, pipeline, chunks, n)
    if name in EXPIRING:
        return expiring_run(c, pipeline, chunks, n, counting)
    evicted = c.server.stat_evicted_keys
    t = time.process_time()
    if os.environ.get("HOTPATH_REPLICA"):
        deferred_run(c, chunks, n)
    else:
        for i in range(n):
            c.data_received(chunks[i % len(chunks)])
    dt = time.process_time() - t
    EVICTED[name] = (c.server.stat_evicted_keys - evicted) / (n * units)
    return dt / (n * units) * 1e6


def main() -> None:
    if "--once" in sys.argv:  # one run, for bench/instr.sh under callgrind (slow log and latency monitor off)
        i = sys.argv.index("--once")
        run(sys.argv[i + 1], int(sys.argv[i + 2]), int(sys.argv[i + 3]), setup_commands=int(sys.argv[i + 4]),
            counting=True)
        return
    if "--profile" in sys.argv:
        import cProfile
        import pstats

        name = sys.argv[sys.argv.index("--profile") + 1]
        cProfile.run(f"run({name!r}, 16, {COMMANDS.get(name, 100_000)})", "/tmp/hotpath.prof")
        pstats.Stats("/tmp/hotpath.prof").sort_stats("tottime").print_stats(20)
        return
    only = (sys.argv[sys.argv.index("--only") + 1].upper().split(",") if "--only" in sys.argv
            else [*WORKLOADS, *BLOCKS])
    for name in only:
        for p in (1, 16):
            us = min(run(name, p, COMMANDS.get(name, 100_000)) for _ in range(3))
            unit = "entry" if name == "SINK_TX" else "block" if name in BLOCKS else "command"
            writes = f" ({WRITES[name]:.1f} subscriber writes/command)" if name in WRITES else ""
            if EVICTED.get(name):
                writes += f" ({EVICTED[name]:.3f} evicted keys/command)"
            print(f"{name:10s} -P {p:2d}: {us:.3f} us/{unit}{writes}", flush=True)


if __name__ == "__main__":
    main()
