"""maxmemory: OOM refusals and eviction compared with redis-server 7.0, and raxdb's memory figure.

Which keys an eviction picks depends on sampling, and the two servers' byte counts differ, so
the differential tests use what is deterministic in both: with `maxmemory 1` nothing fits, so
every evictable key goes (all of them, or those with a TTL), and then every command that may
grow memory is refused.  What only raxdb can show (its running figure agrees with a recount
after any command, LRU keeps the key just used) is tested in process or on raxdb alone.
"""

from __future__ import annotations

import random
import time

import pytest

from tests.support.diff import Diff, RawConnection, parse
from tests.support.fuzzgen import Gen
from tests.support.servers import start_raxdb, start_redis
from tests.support.transport import SinkTransport

OOM = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
LIB = """#!lua name=memlib
redis.register_function('w', function(keys, args) return redis.call('set', keys[1], args[1]) end)
redis.register_function{function_name='r', callback=function(keys) return redis.call('get', keys[1]) end,
                        flags={'no-writes'}}
redis.register_function{function_name='w_oom', callback=function(keys, args)
                        return redis.call('set', keys[1], args[1]) end, flags={'allow-oom'}}
"""
# An eviction pass stops at maxmemory-eviction-tenacity's time limit (500 us by default, 20 times
# that in raxdb) and goes on over later loop turns, letting commands through meanwhile (Redis's
# eviction timer proc): how far one pass gets is the host's clock.  Tests that assert what one
# command evicted (more than 16 keys: the clock is read every 16) set it to 100, no limit, on both
# servers; test_eviction_past_its_time_limit_goes_on_over_later_turns tests the limit itself.
WHOLE_PASSES = ("maxmemory-eviction-tenacity", "100")
POLICIES = ["allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-lfu", "volatile-random",
            "volatile-ttl"]


@pytest.fixture(scope="module")
def servers():
    ours, theirs = start_raxdb(), start_redis()
    yield ours, theirs
    ours.stop()
    theirs.stop()


def _reset(port: int) -> None:
    c = RawConnection(port)
    c.call("CONFIG", "SET", "maxmemory", "0", "maxmemory-policy", "noeviction", "notify-keyspace-events", "",
           "maxmemory-eviction-tenacity", "10")
    c.call("FLUSHALL")
    c.call("FUNCTION", "FLUSH")
    c.call("SCRIPT", "FLUSH")
    c.call("CONFIG", "RESETSTAT")
    c.close()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def mdiff(request, servers):
    for s in servers:
        _reset(s.port)
    d = Diff(servers[0].port, servers[1].port, request.param)
    yield d
    d.close()
    for s in servers:
        _reset(s.port)


@pytest.fixture
def mdiff2(servers):
    for s in servers:
        _reset(s.port)
    d = Diff(servers[0].port, servers[1].port, 2)
    yield d
    d.close()
    for s in servers:
        _reset(s.port)


def _info(conn: RawConnection, field: str) -> str:
    text = parse(conn.call("INFO", "everything")).decode()
    for line in text.split("\r\n"):
        if line.startswith(field + ":"):
            return line.split(":", 1)[1]
    raise KeyError(field)


@pytest.mark.oracle
def test_commands_that_may_grow_memory_are_refused(mdiff):
    d = mdiff
    d("SET", "a", "1")
    d("RPUSH", "l", "x", "y")
    d("FUNCTION", "LOAD", LIB)
    sha = parse(d("SCRIPT", "LOAD", "#!lua\nreturn 1"))
    d("CONFIG", "SET", "maxmemory", "1")
    for cmd in (["SET", "b", "2"], ["SET", "a", "1", "XX"], ["INCR", "n"], ["APPEND", "a", "x"],
                ["LPUSH", "l", "z"], ["HSET", "h", "f", "v"], ["SADD", "s", "m"], ["ZADD", "z", "1", "m"],
                ["XADD", "x", "*", "f", "v"], ["PFADD", "p", "e"], ["MSET", "c", "1"], ["COPY", "a", "a2"],
                ["SORT", "l", "ALPHA"], ["SETRANGE", "a", "0", "z"], ["FUNCTION", "LOAD", "REPLACE", LIB]):
        assert d(*cmd) == OOM, cmd
    # reads, deletes and commands that do not grow memory still run
    for cmd in (["GET", "a"], ["EXPIRE", "a", "100"], ["PERSIST", "a"], ["LRANGE", "l", "0", "-1"],
                ["SORT_RO", "l", "ALPHA"], ["RPOP", "l"], ["PUBLISH", "ch", "m"], ["DBSIZE"], ["GETDEL", "a"],
                ["SET", "a", "1"]):
        d(*cmd)
    # a transaction queues nothing while out of memory, and EXEC is then aborted
    d("MULTI")
    d("GET", "a")
    d("PING")
    d("EXEC")
    d("MULTI")
    d("DISCARD")
    # scripts: a script without flags fails at its first write that may grow memory, unless it has
    # written already; declared flags are judged before the script runs
    d("EVAL", "return redis.call('set', 'x', 1)", "0")
    d("EVAL", "return redis.pcall('set', 'x', 1)", "0")
    d("EVAL", "redis.call('del', 'nothing') return redis.call('set', 'x', 1)", "0")
    d("EVAL", "return redis.call('get', 'l')", "0")
    d("EVAL", "#!lua\nreturn 1", "0")
    d("EVALSHA", sha, "0")
    d("EVAL", "#!lua flags=no-writes\nreturn redis.call('get', 'l')", "0")
    d("EVAL", "#!lua flags=allow-oom\nreturn redis.call('set', 'y', 1)", "0")
    d("EVAL_RO", "return redis.call('get', 'y')", "0")
    d("FCALL", "w", "1", "k", "v")
    d("FCALL", "r", "1", "y")
    d("FCALL_RO", "r", "1", "y")
    d("FCALL", "w_oom", "1", "k", "v")
    d("CONFIG", "SET", "maxmemory", "0")
    d("SET", "b", "2")
    d("MGET", "a", "b", "k", "x", "y")


@pytest.mark.oracle
def test_exec_is_refused_when_memory_ran_out_after_queueing(servers):
    for s in servers:
        _reset(s.port)
    replies = []
    for s in servers:
        tx, admin = RawConnection(s.port), RawConnection(s.port)
        got = [tx.call("MULTI"), tx.call("SET", "a", "1"), tx.call("GET", "a")]
        admin.call("CONFIG", "SET", "maxmemory", "1")
        got += [tx.call("EXEC"), tx.call("MULTI"), tx.call("GET", "a"), tx.call("EXEC")]
        admin.call("CONFIG", "SET", "maxmemory", "0")
        got += [tx.call("MULTI"), tx.call("GET", "a"), tx.call("EXEC")]
        tx.close()
        admin.close()
        replies.append(got)
        _reset(s.port)
    assert replies[0] == replies[1]


def _fill(d: Diff) -> None:
    """Keys of every type in three databases; the odd-numbered strings and the hash have TTLs."""
    for db in ("0", "1", "5"):
        d("SELECT", db)
        for i in range(20):
            d("SET", f"k{i}", "v" * i)
            if i % 2:
                d("EXPIRE", f"k{i}", str(1000 + i))
        d("RPUSH", "list", "a", "b", "c")
        d("HSET", "hash", "f", "v")
        d("EXPIRE", "hash", "500")
        d("XADD", "stream", "1-1", "f", "v")
        d("ZADD", "zset", "1", "m")
    d("SELECT", "0")


@pytest.mark.oracle
@pytest.mark.parametrize("policy", POLICIES)
def test_every_evictable_key_goes_before_a_refusal(mdiff2, servers, policy):
    d = mdiff2
    _fill(d)
    d("CONFIG", "SET", "maxmemory-policy", policy, *WHOLE_PASSES)  # 72 keys go in one pass
    d("CONFIG", "SET", "maxmemory", "1")
    assert d("SET", "new", "x") == OOM
    for db in ("0", "1", "5"):
        d("SELECT", db)
        keys = d.unordered("KEYS", "*")
        assert (keys == []) == policy.startswith("allkeys")
        d("DBSIZE")
    assert _info(d.ours, "evicted_keys") == _info(d.theirs, "evicted_keys") != "0"
    d("CONFIG", "SET", "maxmemory", "0")
    d("SET", "new", "x")


@pytest.mark.oracle
def test_evictions_send_events_and_touch_watches(servers):
    got = []
    for s in servers:
        _reset(s.port)
        d = RawConnection(s.port)
        sub, watcher = RawConnection(s.port), RawConnection(s.port)
        d.call("CONFIG", "SET", "notify-keyspace-events", "KEe")
        sub.call("PSUBSCRIBE", "__key*__:*")
        for i in range(10):
            d.call("SET", f"k{i}", "v", "EX", "100")
        d.call("SET", "keep", "v")
        watcher.call("WATCH", "k3")
        d.call("CONFIG", "SET", "maxmemory-policy", "volatile-random")
        d.call("CONFIG", "SET", "maxmemory", "1")
        refused = d.call("SET", "x", "y")
        events = sorted(parse(sub.read_frame()) for _ in range(20))
        d.call("CONFIG", "SET", "maxmemory", "0")
        tx = [watcher.call("MULTI"), watcher.call("GET", "keep"), watcher.call("EXEC")]
        got.append((refused, events, tx, d.call("KEYS", "*")))
        for c in (d, sub, watcher):
            c.close()
        _reset(s.port)
    assert got[0] == got[1]
    assert got[0][2][2] in (b"*-1\r\n", b"_\r\n")  # the evicted WATCHed key aborted EXEC


@pytest.mark.oracle
def test_resetstat_clears_evicted_keys(mdiff2):
    d = mdiff2
    d("SET", "a", "1")
    d("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
    d("CONFIG", "SET", "maxmemory", "1")
    d("DBSIZE")
    assert _info(d.ours, "evicted_keys") == _info(d.theirs, "evicted_keys") == "1"
    d("CONFIG", "SET", "maxmemory", "0")
    d("CONFIG", "RESETSTAT")
    assert _info(d.ours, "evicted_keys") == _info(d.theirs, "evicted_keys") == "0"


@pytest.mark.oracle
def test_a_budget_keeps_about_as_many_keys_as_redis(servers):
    """The same budget above each server's own used_memory keeps about the same number of keys:
    raxdb's figure is Redis's formula, not its allocator's count, so within 25%."""
    kept = []
    for s in servers:
        _reset(s.port)
        c = RawConnection(s.port)
        c.call("CONFIG", "SET", "maxmemory", "100gb")  # raxdb counts (and reports) used_memory from here
        budget = int(_info(c, "used_memory")) + 400_000
        # each MSET's evictions done before its reply (WHOLE_PASSES): the figures below are read at once
        c.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru", "maxmemory", str(budget), *WHOLE_PASSES)
        for i in range(0, 8000, 100):
            c.call("MSET", *[x for j in range(i, i + 100) for x in (f"key:{j:06d}", "v" * 100)])
        kept.append(int(parse(c.call("DBSIZE"))))
        assert int(_info(c, "used_memory")) <= budget + 50_000
        assert int(_info(c, "evicted_keys")) >= 8000 - kept[-1]
        c.close()
        _reset(s.port)
    ours, theirs = kept
    assert 0 < ours < 8000
    assert abs(ours - theirs) <= theirs // 4, kept


def test_lru_keeps_the_key_in_use(raxdb):
    c = RawConnection(raxdb.port)
    try:
        _reset(raxdb.port)
        c.call("SET", "hot", "v")
        c.call("CONFIG", "SET", "maxmemory", "100gb")
        budget = int(_info(c, "used_memory")) + 200_000
        c.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru", "maxmemory", str(budget))
        for i in range(5000):
            c.call("SET", f"cold:{i}", "v" * 50)
            c.call("GET", "hot")
        assert int(_info(c, "evicted_keys")) > 1000
        assert parse(c.call("GET", "hot")) == b"v"
    finally:
        c.close()
        _reset(raxdb.port)


@pytest.mark.parametrize("limit", ["100mb", "0"])
def test_used_memory_is_the_counted_figure_with_a_limit_or_without(raxdb, limit):
    """Kept per command under a limit, worked out when asked without one: the same figure."""
    _reset(raxdb.port)
    # The figure counts this connection's buffers too, as the cron last noted them under a limit.
    # So its reply buffer stays at 16 KiB (resizing off before it connects): a cron tick between
    # two INFOs would resize it (+1024, -10240 seen under load), and a buffer the cron had shrunk
    # to 1 KiB before resizing went off makes each INFO reply overflow into the reply list, whose
    # block (+20504) the figure may hold until the next visit (under load 20: 3 runs in 160 with
    # a 1 KiB buffer, 2 failures in 30 runs of this file).
    _replybuffer_resizing(raxdb.port, "0")
    c = RawConnection(raxdb.port)
    try:
        c.call("CONFIG", "SET", "maxmemory", limit)
        base = int(_info(c, "used_memory"))
        c.call("SET", "k", "v" * 100)
        usage = int(parse(c.call("MEMORY", "USAGE", "k")))
        # the key, and the 4 buckets its dict allocates for a first key (8 bytes each)
        assert int(_info(c, "used_memory")) - base == usage + 32
        c.call("EXPIRE", "k", "100")  # an entry in the expires dict, and its first 4 buckets
        assert int(_info(c, "used_memory")) - base == usage + 32 + 24 + 32
        c.call("DEL", "k")  # both dicts keep their 4 buckets (never shrunk below 4; a flush frees them)
        assert int(_info(c, "used_memory")) == base + 32 + 32
        c.call("FLUSHALL")
        assert int(_info(c, "used_memory")) == base
    finally:
        c.close()
        _replybuffer_resizing(raxdb.port, "1")
        _reset(raxdb.port)


def _replybuffer_resizing(port: int, on: str) -> None:
    c = RawConnection(port)
    assert c.call("DEBUG", "REPLYBUFFER", "RESIZING", on) == b"+OK\r\n"
    c.close()


@pytest.mark.oracle
def test_a_limit_given_at_start_up():
    got = []
    for start in (start_raxdb, start_redis):
        s = start("--maxmemory", "1", "--maxmemory-policy", "allkeys-lru")
        try:
            c = RawConnection(s.port)
            got.append((c.call("SET", "a", "1"), c.call("GET", "a"), _info(c, "maxmemory"),
                        _info(c, "maxmemory_policy")))
            c.close()
            assert any("maxmemory value that is less than 1MB" in line for line in s.log)
        finally:
            s.stop()
    assert got[0] == got[1]
    assert got[0][0] == OOM


def test_eviction_past_its_time_limit_goes_on_over_later_turns(raxdb):
    """maxmemory-eviction-tenacity 0 stops each eviction pass after 16 keys; the rest go on the
    event loop's next turns, with no command to start them, until nothing evictable is left."""
    c, sub = RawConnection(raxdb.port), RawConnection(raxdb.port)
    try:
        _reset(raxdb.port)
        for i in range(0, 400, 100):
            c.call("MSET", *[x for j in range(i, i + 100) for x in (f"k{j}", "v")])
        c.call("CONFIG", "SET", "maxmemory-eviction-tenacity", "0", "maxmemory-policy", "allkeys-random",
               "notify-keyspace-events", "Ee")
        sub.call("SUBSCRIBE", "__keyevent@0__:evicted")
        c.call("CONFIG", "SET", "maxmemory", "1")
        evicted = {parse(sub.read_frame())[2] for _ in range(400)}
        assert len(evicted) == 400
        assert parse(c.call("DBSIZE")) == 0
        assert _info(c, "evicted_keys") == "400"
        assert c.call("SET", "a", "1") == OOM
    finally:
        c.close()
        sub.close()
        _reset(raxdb.port)


# ---- the running figure, in process ---------------------------------------------------------------
def _in_process(n: int = 1):
    import raxdb.server.commands  # noqa: F401
    from raxdb.server.config.options import Config
    from raxdb.server.core import Server
    from raxdb.server.net.client import Client

    srv = Server(Config())
    clients = []
    for _ in range(n):
        c = Client(srv)
        c.connection_made(SinkTransport())  # type: ignore[arg-type]
        clients.append(c)
    return srv, clients


def _send(c, *args: str) -> None:
    from tests.support.diff import encode_command

    c.data_received(encode_command(list(args)))


def _assert_counted(srv) -> None:
    from raxdb.server.memory.usage import key_usage

    for db in srv.dbs:
        want = {key: key_usage(key, db.stored(key)) for key in db.key_list()}
        assert db.size_map() == want, f"db {db.id}"
        assert db.mem == sum(want.values())
        assert sum(db.sizes) == db.mem, f"db {db.id}: a hole kept a figure"  # (a reused position starts at 0)
        assert db in srv.mem_dbs or not db, f"db {db.id} left out of the figure"


def test_a_new_connection_can_start_evictions():
    """A connection adds to used_memory: the next command evicts, even a read (which otherwise
    skips measuring while nothing grew since the figure was last within the limit)."""
    from raxdb.server.memory.evict import used_memory
    from raxdb.server.net.client import Client

    srv, (c,) = _in_process(1)
    # all 50 in the one GET (no loop here runs a pass's rest: a loaded host stopped one at 48)
    _send(c, "CONFIG", "SET", "maxmemory-policy", "allkeys-random", *WHOLE_PASSES)
    for i in range(50):
        _send(c, "SET", f"k{i}", "v")
    _send(c, "CONFIG", "SET", "maxmemory", "1gb")  # the count starts
    _send(c, "CONFIG", "SET", "maxmemory", str(used_memory(srv) + 1000))
    _send(c, "GET", "k1")
    assert srv.mem_ok and srv.stat_evicted_keys == 0
    Client(srv).connection_made(SinkTransport())  # type: ignore[arg-type]
    _send(c, "GET", "k1")
    assert srv.stat_evicted_keys == 50 and not srv.dbs[0]


@pytest.mark.parametrize("seed", range(12))
def test_running_figure_matches_a_recount(seed):
    """Random commands of every family (plus MOVE, COPY DB, SWAPDB, MULTI, scripts and blocked
    clients served by later writes) with a limit no command reaches: after each one, every key's
    counted figure is what counting it afresh gives."""
    srv, (c, waiter, admin) = _in_process(3)
    _send(admin, "CONFIG", "SET", "maxmemory", "1gb")
    rng = random.Random(seed)
    gen = Gen(rng)
    families = [gen.strings, gen.keys, gen.lists, gen.hashes, gen.sets, gen.zsets, gen.streams]
    for _ in range(300):
        roll = rng.random()
        if roll < 0.05:
            cmd = rng.choice([["MOVE", gen.key(), "1"], ["COPY", gen.key(), gen.key(), "DB", "1"],
                              ["SWAPDB", "0", "1"], ["SELECT", rng.choice("01")], ["FLUSHDB"]])
        elif roll < 0.08:
            cmd = ["EVAL", "redis.call('rpush', KEYS[1], 'a') return redis.call('append', KEYS[2], 'bc')", "2",
                   gen.key(), gen.key()]
        elif roll < 0.1 and not waiter.blocked:
            _send(waiter, *gen.blocking())
            continue
        else:
            cmd = rng.choice(families)()
        _send(c, *cmd)
        _assert_counted(srv)
    _send(admin, "CONFIG", "SET", "maxmemory", "0")  # (c may be left inside MULTI)
    assert all(db.sizes is None for db in srv.dbs)


def test_a_write_that_does_not_grow_memory_skips_the_next_measure():
    """A write whose keys did not grow (an overwrite of the same size, a pop) leaves the measure
    before the next command skipped; one that grows past the room left, or sets a TTL, or
    creates a key, does not."""
    from raxdb.server.memory.evict import used_memory

    srv, (c,) = _in_process(1)
    _send(c, "RPUSH", "l", "a", "b", "c")
    _send(c, "SET", "k", "v1")
    _send(c, "CONFIG", "SET", "maxmemory", "1gb")
    _send(c, "PING")  # measured: within the limit
    assert srv.mem_ok and srv.mem_room == srv.maxmemory - used_memory(srv)
    _send(c, "SET", "k", "v2")  # the same figure
    _send(c, "LPOP", "l")  # a smaller one
    assert srv.mem_ok
    _send(c, "EXPIRE", "k", "100")  # a TTL: the expires terms grow
    assert not srv.mem_ok
    _send(c, "PING")
    assert srv.mem_ok
    _send(c, "SET", "k2", "v")  # a created key
    assert not srv.mem_ok
    _send(c, "PING")
    _send(c, "CONFIG", "SET", "maxmemory", str(used_memory(srv) + 100))
    _send(c, "PING")
    assert srv.mem_ok and srv.mem_room == 100
    _send(c, "APPEND", "k", "x" * 40)  # grows by less than the room: skipped still
    assert srv.mem_ok and 0 <= srv.mem_room < 100
    _send(c, "APPEND", "k", "x" * 200)  # past it: the next command measures (and evicts)
    assert not srv.mem_ok


@pytest.mark.parametrize("seed", range(6))
def test_a_skipped_measure_is_one_that_finds_the_figure_within_the_limit(seed):
    """Random commands of every family (plus TTLs, MOVE, COPY DB, SWAPDB and scripts) under a limit
    just above the figure, raised as it grows: whenever the next command's measure is to be
    skipped, the figure is within the limit by at least the room the skip relies on."""
    from raxdb.server.memory.evict import used_memory

    srv, (c, admin) = _in_process(2)
    _send(admin, "CONFIG", "SET", "maxmemory", "1gb")
    rng = random.Random(seed)
    gen = Gen(rng)
    families = [gen.strings, gen.keys, gen.lists, gen.hashes, gen.sets, gen.zsets, gen.streams]
    skipped = 0
    for i in range(400):
        if i % 25 == 0:  # a limit a little above the figure: some writes run out of room
            _send(admin, "CONFIG", "SET", "maxmemory", str(used_memory(srv) + rng.choice((64, 512, 4096))))
        roll = rng.random()
        if roll < 0.05:
            cmd = rng.choice([["MOVE", gen.key(), "1"], ["COPY", gen.key(), gen.key(), "DB", "1", "REPLACE"],
                              ["SWAPDB", "0", "1"], ["SELECT", rng.choice("01")]])
        elif roll < 0.1:
            cmd = rng.choice([["EXPIRE", gen.key(), "100"], ["PERSIST", gen.key()], ["SET", gen.key(), "v", "EX", "50"]])
        elif roll < 0.12:
            cmd = ["EVAL", "redis.call('rpush', KEYS[1], 'a') return redis.call('append', KEYS[2], 'bc')", "2",
                   gen.key(), gen.key()]
        else:
            cmd = rng.choice(families)()
        _send(c, *cmd)
        if srv.mem_ok:
            skipped += 1
            assert used_memory(srv) + srv.mem_room <= srv.maxmemory, cmd
    assert skipped


def test_used_memory_without_a_limit_is_sampled_steadily_and_close_to_the_count(raxdb):
    """Past ESTIMATE_KEYS keys the figure without a limit is a sample scaled to the key count: the
    same from one INFO to the next while nothing is written, and within 2% of the exact count a
    limit makes (here 20,000 keys whose values run from 1 to 400 bytes)."""
    c = RawConnection(raxdb.port)
    try:
        _reset(raxdb.port)
        rnd = random.Random(7)
        for i in range(0, 20_000, 500):
            c.call("MSET", *[x for j in range(i, i + 500) for x in (f"k:{j}", "v" * rnd.randint(1, 400))])
        # The figure counts the clients' buffers too, which the cron resizes as clientsCron does:
        # the loading connection's large query buffer shrinks, and a reply buffer drops towards
        # its peak (16 KiB to 1 KiB) whenever a tick falls between two INFOs, as a loaded host
        # made it do.  So the INFOs come from a fresh connection (a small query buffer is never
        # resized) with reply-buffer resizing off: what is left to change is the key sample.
        c.close()
        c = RawConnection(raxdb.port)
        assert c.call("DEBUG", "REPLYBUFFER", "RESIZING", "0") == b"+OK\r\n"
        estimated = int(_info(c, "used_memory"))
        assert int(_info(c, "used_memory")) == estimated
        c.call("CONFIG", "SET", "maxmemory", "100gb")  # counts every key
        exact = int(_info(c, "used_memory"))
        c.call("CONFIG", "SET", "maxmemory", "0")
        assert abs(estimated - exact) <= exact // 50, (estimated, exact)
        c.call("SET", "k:0", "v" * 100_000)  # a write: estimated anew
        assert int(_info(c, "used_memory")) > estimated
    finally:
        c.call("DEBUG", "REPLYBUFFER", "RESIZING", "1")
        c.call("FLUSHALL")
        c.close()
        _reset(raxdb.port)


def test_used_memory_without_a_limit_follows_writes_after_a_save(raxdb):
    """A SAVE sets the dirty count back: the same number of writes after it, to the same number of
    keys, still changes the figure (a figure kept by dirty count and key count did not)."""
    c = RawConnection(raxdb.port)
    try:
        _reset(raxdb.port)
        # The figure counts the connection's reply buffer, which a cron tick between the two
        # INFOs would shrink from 16 KiB towards 1 KiB (a loaded host saw it take the growth
        # under 50,000): resizing off, what changes is the values
        assert c.call("DEBUG", "REPLYBUFFER", "RESIZING", "0") == b"+OK\r\n"
        assert c.call("SAVE") == b"+OK\r\n"  # the dirty count from 0: the same count below
        c.call("MSET", *[x for i in range(5) for x in (f"k{i}", "v")])
        before = int(_info(c, "used_memory"))
        assert c.call("SAVE") == b"+OK\r\n"
        c.call("MSET", *[x for i in range(5) for x in (f"k{i}", "v" * 10_000)])
        assert int(_info(c, "used_memory")) > before + 5 * 10_000
    finally:
        c.call("DEBUG", "REPLYBUFFER", "RESIZING", "1")
        c.call("FLUSHALL")
        c.close()
        _reset(raxdb.port)


@pytest.mark.oracle
@pytest.mark.parametrize("cmd", [("UNLINK", "big"), ("FLUSHDB", "ASYNC"), ("FLUSHALL",)])
def test_used_memory_falls_when_a_big_key_goes_as_in_redis(servers, cmd):
    """Redis's lazyfree test, without a limit: 100,000 members raise used_memory by megabytes, and
    freeing them gives back nearly all of that (the process's resident size, which used_memory
    was before, keeps much of it)."""
    for s in servers:
        c = RawConnection(s.port)
        try:
            _reset(s.port)
            before = int(_info(c, "used_memory"))
            c.call("SADD", "big", *range(100_000))
            peak = int(_info(c, "used_memory"))
            assert peak > before + 1_000_000, s
            c.call(*cmd)
            # redis-server frees in a background thread, which counts the objects pending until
            # it has freed them: awaited (a fixed number of looks without a pause ran out on a
            # loaded host while the thread was still freeing, and used_memory was half way down)
            deadline = time.monotonic() + 20
            while _info(c, "lazyfree_pending_objects") != "0":
                assert time.monotonic() < deadline, (s, "the background free never ended")
                time.sleep(0.01)
            after = int(_info(c, "used_memory"))
            # Redis's test asks for less than twice the start; both servers give back nearly all
            # of the growth (the process's resident size kept 25-99% of it)
            assert after < before + (peak - before) // 10, (s, before, peak, after)
        finally:
            c.call("FLUSHALL")
            c.close()


@pytest.mark.oracle
def test_a_limit_set_from_used_memory_without_one_evicts_as_in_redis(servers):
    """Redis's tracking test sets maxmemory to 100 kB over what INFO reported without a limit
    (used_memory less mem_not_counted_for_evict); a 200 kB bitmap must then evict the one key with
    a TTL in both servers: the figure without a limit is the one the limit goes by."""
    for s in servers:
        _reset(s.port)
    d = Diff(servers[0].port, servers[1].port, 2)
    d("SETEX", "volatile-key", "10000", "x")
    for s in servers:
        c = RawConnection(s.port)
        used = int(_info(c, "used_memory")) - int(_info(c, "mem_not_counted_for_evict"))
        c.call("CONFIG", "SET", "maxmemory-policy", "volatile-random", "maxmemory", str(used + 100 * 1024))
        c.close()
    d("SETBIT", "big-key", "1600000", "0")
    d("GET", "volatile-key")
    d("EXISTS", "volatile-key", "big-key")
    assert _info(d.ours, "evicted_keys") == _info(d.theirs, "evicted_keys") == "1"
    d.close()
    for s in servers:
        _reset(s.port)


def _rehash_done(c: RawConnection) -> None:
    """Await the end of redis-server's incremental rehash of db 0's main dict (its cron's 1 ms
    steps finish it): until then both tables are in its used_memory."""
    deadline = time.monotonic() + 20
    while b"rehashing target" in parse(c.call("DEBUG", "HTSTATS", "0")):
        assert time.monotonic() < deadline, "redis-server's rehash never ended"
        time.sleep(0.01)


@pytest.mark.oracle
def test_the_dict_table_term_keeps_its_size_as_keys_go_as_in_redis(servers):
    """Redis's main dict grows to the power of two above its key count and shrinks only in the
    cron, below a tenth full: deleting keys until the count falls under a power of two frees the
    keys' bytes and not half the table (raxdb's figure used to drop by 8 KiB at 1,024 keys, so a
    cache at its limit evicted fewer keys than Redis); deleting down to 2% of the table shrinks it
    to 32 buckets at a cron tick on both."""
    for s in servers:
        _reset(s.port)
        c = RawConnection(s.port)
        try:
            # the clients' reply buffers stand still (their cron resize would move the figure), and
            # DEL and INFO have run once (redis-server allocates a command's latency histogram,
            # 24 kB, after it first runs)
            assert c.call("DEBUG", "REPLYBUFFER", "RESIZING", "0") == b"+OK\r\n"
            c.call("DEL", "nokey")
            _info(c, "used_memory")
            c.call("CONFIG", "SET", "maxmemory", "100gb")  # raxdb counts from here
            for i in range(0, 1025, 25):
                c.call("MSET", *[x for j in range(i, min(i + 25, 1025)) for x in (f"k:{j:05d}", "v")])
            if s is servers[1]:
                _rehash_done(c)
            full = int(_info(c, "used_memory"))
            c.call("DEL", "k:00000", "k:00001", "k:00002")  # 1,022 keys: under 1,024
            fewer = int(_info(c, "used_memory"))
            per_key, rest = divmod(full - fewer, 3)
            assert rest == 0 and 0 < per_key < 200, (s.name, full, fewer)  # three keys' bytes, no table
            for i in range(3, 1003, 50):
                c.call("DEL", *[f"k:{j:05d}" for j in range(i, i + 50)])
            # 22 keys in 2,048 buckets: the cron shrinks the table to 32
            shrunk = fewer - 1000 * per_key - 8 * (2048 - 32)
            deadline = time.monotonic() + 20
            while (used := int(_info(c, "used_memory"))) != shrunk:
                assert used > shrunk and time.monotonic() < deadline, (s.name, fewer, shrunk, used)
                time.sleep(0.01)
        finally:
            c.call("DEBUG", "REPLYBUFFER", "RESIZING", "1")
            c.close()
            _reset(s.port)


@pytest.mark.parametrize("seed", range(4))
def test_a_value_is_sized_by_its_own_types_estimate(seed):
    """The recount after a write sizes a list, set, hash, sorted set or stream through a C call on
    its exact class (memory/usage.py): after random commands of every type, growing each to its
    big encoding, every value's figure at any SAMPLES is its type's own estimate, and a subclass
    (a hash with field deadlines) and an intset keep theirs (a hash's would drop its deadlines)."""
    from raxdb.server.memory.usage import value_usage
    from raxdb.storage.hashfe import HashEx
    from raxdb.storage.hashtype import Hash

    srv, (c,) = _in_process(1)
    rng = random.Random(seed)
    gen = Gen(rng)
    families = [gen.lists, gen.hashes, gen.sets, gen.zsets, gen.streams]
    kinds: set[str] = set()

    def check() -> None:
        for db in srv.dbs:
            for key in db.key_list():
                v = db.stored(key)
                values = [v, HashEx.of(v.copy())] if type(v) is Hash else [v]  # (HEXPIRE is 7.4's)
                for w in values:
                    if not hasattr(w, "mem_usage"):
                        continue
                    kinds.add(type(w).__name__)
                    for samples in (1, 5, 2**63 - 1):
                        assert value_usage(w, samples) == int(w.mem_usage(samples)), (key, type(w), samples)

    for step in range(400):
        _send(c, *rng.choice(families)())
        if step % 50 == 0:  # a few of each grown past its listpack (and past 5 nodes, the sample)
            n = rng.randrange(200, 3000)
            _send(c, "RPUSH", "big:l", *[f"{rng.random()}" * rng.randrange(1, 6) for _ in range(n)])
            _send(c, "SADD", "big:s", *[f"m{rng.randrange(10**6)}" for _ in range(n // 4)])
            _send(c, "SADD", "big:i", *[str(rng.randrange(10**6)) for _ in range(20)])
            _send(c, "HSET", "big:h", *[f"f{rng.randrange(10**5)}" if j % 2 == 0 else "v" * rng.randrange(1, 90)
                                        for j in range(2 * (n // 10))])
            _send(c, "ZADD", "big:z", *[x for j in range(n // 10) for x in (str(rng.random()), f"z{j}")])
            for _ in range(rng.randrange(50, 400)):
                _send(c, "XADD", "big:x", "*", "f", "v" * rng.randrange(1, 100))
            check()
    check()
    assert kinds >= {"Quicklist", "RSet", "Hash", "HashEx", "ZSet", "Stream"}
