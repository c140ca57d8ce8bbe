"""What the key, string and collection commands, expiry and eviction append to the AOF, against
redis-server 7.0 (tests/support/aofdiff.py).

Each case is a command sequence sent to both servers (after a FLUSHALL that is not compared); what
each appended must be the same operations, argument for argument, with the absolute deadlines a
relative TTL became masked (`mask_times`: the two servers read the clock milliseconds apart).
Arguments `@s+N` / `@ms+N` (and `-N`) are replaced at run time by the Unix time in seconds /
milliseconds plus (minus) N, the same value for both servers, for the absolute forms.
"""

from __future__ import annotations

import time

import pytest

from tests.support.aofdiff import mask
from tests.support.diff import parse
from tests.support.servers import start_redis


def _resolve(arg: str) -> str:
    if not arg.startswith("@"):
        return arg
    unit, sign, n = arg[1:].partition("+") if "+" in arg else arg[1:].partition("-")
    now = int(time.time() * 1000) if unit == "ms" else int(time.time())
    return str(now + int(n) if sign == "+" else now - int(n))


def _run(aofdiff, cmds: list[str]) -> list[list[bytes]]:
    for line in cmds:
        aofdiff.run(*(_resolve(a) for a in line.split()))
    return aofdiff.check(mask_times=True)


def _configure(aofdiff, *pairs: str):
    """CONFIG SET on both servers without comparing (CONFIG SET propagates nothing)."""
    for i in range(0, len(pairs), 2):
        for c in aofdiff.conns:
            assert c.call("CONFIG", "SET", pairs[i], pairs[i + 1]) == b"+OK\r\n"


STRINGS = {
    "set-plain-nx-xx": ["SET k v", "SET k w NX", "SET nokey v XX", "SET k w XX", "SETNX k x", "SETNX k2 x"],
    "set-ex-px": ["SET k v EX 100", "SET k v PX 100000", "SET k v ex 100 NX", "SET k v px 100000 XX"],
    "set-exat-pxat": ["SET k v EXAT @s+100", "SET k v PXAT @ms+100000"],
    "set-keepttl": ["SET k v EX 100", "SET k w KEEPTTL"],
    "set-get": ["SET k v GET", "SET k w GET", "SET k x get GET NX", "SET k y GET EX 100", "SET k z XX GET",
                "SET k z KEEPTTL gEt"],
    "setex-psetex": ["SETEX k 100 v", "PSETEX k 100000 v", "SETEX k 0 v", "PSETEX k -1 v"],
    "mset": ["MSET a 1 b 2", "MSETNX a 1 c 3", "MSETNX c 3 d 4"],
    "getset-getdel": ["GETSET k v", "GETSET k w", "GETDEL k", "GETDEL k", "SET n 1", "GETDEL n"],
    "getex": ["SET k v", "GETEX k", "GETEX k EX 100", "GETEX k PX 100000", "GETEX k EXAT @s+100",
              "GETEX k PXAT @ms+100000", "GETEX k PERSIST", "GETEX k PERSIST", "GETEX nokey EX 10"],
    "getex-past": ["SET k v", "GETEX k PXAT @ms-1000", "SET k v", "GETEX k EXAT 1", "SET k v", "GETEX k EX 0"],
    "incr-family": ["INCR n", "INCRBY n 5", "DECR n", "DECRBY n 2", "INCRBY n x"],
    "incrbyfloat": ["INCRBYFLOAT f 1.5", "SET g 10 EX 100", "INCRBYFLOAT g 0.1", "INCRBYFLOAT g 5.0e3",
                    "INCRBYFLOAT h x"],
    "append-setrange": ["APPEND a xy", "APPEND a z", "APPEND a ''", "SETRANGE s 5 ab", "SETRANGE s 0 ''",
                        "SETRANGE missing 3 ''", "SETRANGE s 1 cd"],
    "bitops": ["SETBIT b 7 1", "SETBIT b 7 1", "SETBIT b 100 0", "SETBIT c 3 0", "BITOP OR d b c",
               "BITOP AND e nokey1 nokey2", "BITOP NOT f b", "SET e x", "BITOP AND e nokey1 nokey2"],
    "bitfield": ["BITFIELD bf SET u8 0 255", "BITFIELD bf SET u8 0 255", "BITFIELD bf INCRBY u8 0 1",
                 "BITFIELD bf OVERFLOW FAIL INCRBY u8 0 255", "BITFIELD bf GET u8 0", "BITFIELD_RO bf GET u8 0",
                 "BITFIELD nobf GET u8 0", "BITFIELD nobf2 SET u8 0 0"],
    "lazy-user-del": ["CONFIG-lazyfree-lazy-user-del", "SET k v", "GETDEL k", "SET k v", "DEL k", "SET k v",
                      "UNLINK k"],
}

KEYS = {
    "del-unlink": ["SET a 1", "SET b 2", "DEL a nokey b", "DEL nokey", "SET a 1", "UNLINK a nokey", "UNLINK a"],
    "expire-relative": ["SET k v", "EXPIRE k 100", "PEXPIRE k 100000", "EXPIRE nokey 100", "TTL k"],
    "expire-absolute": ["SET k v", "EXPIREAT k @s+100", "PEXPIREAT k @ms+100000"],
    "expire-flags": ["SET k v", "EXPIRE k 100 NX", "EXPIRE k 200 NX", "EXPIRE k 300 XX", "EXPIRE k 50 GT",
                     "EXPIRE k 500 GT", "EXPIRE k 50 LT", "PERSIST k", "EXPIRE k 100 XX", "EXPIRE k 100 LT"],
    "expire-past": ["SET k v", "EXPIRE k -1", "SET k v", "PEXPIRE k 0", "SET k v", "EXPIREAT k 1",
                    "SET k v", "PEXPIREAT k @ms-5000", "EXPIRE nokey -1"],
    "expire-past-lazy": ["CONFIG-lazyfree-lazy-expire", "SET k v", "EXPIRE k -1", "SET k v",
                         "GETEX k PXAT 1"],
    "persist": ["SET k v", "PERSIST k", "EXPIRE k 100", "PERSIST k", "PERSIST nokey"],
    "rename": ["SET a 1", "RENAME a b", "RENAME b b", "SET c 1", "RENAMENX b c", "RENAMENX b d"],
    "copy": ["SET a 1", "COPY a b", "COPY a b", "COPY a b REPLACE", "COPY a a2 DB 2", "COPY nokey x"],
    "move": ["SET a 1", "MOVE a 3", "MOVE a 3", "SELECT 3", "MOVE a 0", "SELECT 0"],
    "swapdb-select": ["SET a 1", "SWAPDB 0 1", "SELECT 1", "SET b 2", "SELECT 0", "SET c 3", "SWAPDB 0 0"],
    "flush": ["FLUSHDB", "SET a 1", "FLUSHDB ASYNC", "FLUSHALL", "SET a 1", "FLUSHALL SYNC"],
    "touch-reads": ["SET a 1", "TOUCH a nokey", "EXISTS a", "TYPE a", "OBJECT ENCODING a", "RANDOMKEY"],
    "sort-store": ["RPUSH l 3 1 2", "SORT l STORE d", "SORT nokey STORE d", "SORT nokey STORE d",
                   "SORT l LIMIT 0 1 STORE e", "SORT l"],
}

COLLECTIONS = {
    "hash": ["HSET h a 1 b 2", "HSET h a 1", "HSETNX h a 2", "HSETNX h c 3", "HMSET h d 4", "HDEL h a nofield",
             "HDEL h nofield", "HINCRBY h n 5", "HINCRBYFLOAT h f 1.5", "HINCRBYFLOAT h f 2.0e2",
             "HINCRBYFLOAT h f x"],
    "set": ["SADD s a b c", "SADD s a", "SREM s a nomember", "SREM s zz", "SMOVE s t b", "SMOVE s t zz",
            "SMOVE s t c", "SADD s x", "SADD t x", "SMOVE s t x", "SMOVE t t x", "SMOVE t t zz"],
    "set-store": ["SADD a 1 2 3", "SADD b 2 3 4", "SINTERSTORE d a b", "SUNIONSTORE d a b", "SDIFFSTORE d a b",
                  "SINTERSTORE d a nokey", "SINTERSTORE d a nokey", "SINTERCARD 2 a b"],
    "spop-deterministic": ["SADD s only", "SPOP s", "SPOP s", "SADD s a b", "SPOP s 5", "SADD s a", "SPOP s 0",
                           "SPOP s 1", "SPOP nokey 3"],
    "spop-whole-set-lazy": ["CONFIG-lazyfree-lazy-user-del", "CONFIG-lazyfree-lazy-server-del", "SADD s a b",
                            "SPOP s 2", "SADD s a", "SPOP s"],
    "zset": ["ZADD z 1 a 2 b", "ZADD z 1 a", "ZADD z NX 5 a", "ZADD z XX CH 3 a", "ZADD z INCR 1 a",
             "ZINCRBY z 2 b", "ZREM z a nom", "ZREM z nom", "ZADD z GT 1 b", "ZADD z LT 1 b"],
    "zset-ranges": ["ZADD z 1 a 2 b 3 c 4 d 5 e", "ZREMRANGEBYSCORE z 1 1", "ZREMRANGEBYSCORE z 100 200",
                    "ZREMRANGEBYRANK z 0 0", "ZREMRANGEBYLEX z [x [y", "ZADD y 0 a 0 b", "ZREMRANGEBYLEX y [a [a"],
    "zpop-zmpop": ["ZADD z 1 a 2 b 3 c 4 d", "ZPOPMIN z", "ZPOPMAX z 1", "ZMPOP 2 nokey z MIN COUNT 1",
                   "ZMPOP 1 z MAX", "ZADD z 1 a 2 b", "ZMPOP 1 z MIN COUNT 10", "ZMPOP 1 z MIN", "ZPOPMIN z 0",
                   "ZPOPMIN nokey"],
    "zset-store": ["ZADD a 1 x 2 y", "ZADD b 3 y 4 z", "ZUNIONSTORE d 2 a b", "ZINTERSTORE d 2 a b WEIGHTS 1 2",
                   "ZDIFFSTORE d 2 a b", "ZINTERSTORE d 2 a nokey", "ZINTERSTORE d 2 a nokey",
                   "ZRANGESTORE r a 0 -1", "ZRANGESTORE r a 5 6", "ZRANGESTORE r2 a 5 6"],
    "list": ["LPUSH l a b", "RPUSH l c", "LPUSHX nol a", "RPUSHX l d", "LINSERT l BEFORE a x",
             "LINSERT l BEFORE zz x", "LSET l 0 y", "LREM l 0 zz", "LREM l 1 y", "LTRIM l 0 -1", "LTRIM l 1 1",
             "LPOP l", "RPOP l", "LPOP l 0", "LPOP nol"],
    "list-pops": ["RPUSH l a b c d e", "LPOP l 2", "RPOP l 10", "RPOP l 1", "RPUSH l a b c d",
                  "LMPOP 2 nol l LEFT", "LMPOP 1 l RIGHT COUNT 2", "LMPOP 1 l LEFT COUNT 5", "LMPOP 1 l LEFT"],
    "list-moves": ["RPUSH l a b c", "LMOVE l m LEFT RIGHT", "LMOVE l l RIGHT LEFT", "RPOPLPUSH l m",
                   "RPOPLPUSH l m", "RPOPLPUSH l m", "LMOVE nol m LEFT LEFT", "RPOPLPUSH nol m"],
    "geo": ["GEOADD g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
            "GEOADD g NX 13.361389 38.115556 Palermo", "GEOADD g XX CH 13.5 38.1 Palermo",
            "GEORADIUS g 15 37 200 km STORE d", "GEORADIUS g 15 37 200 km STOREDIST e",
            "GEORADIUSBYMEMBER g Palermo 500 km STORE f", "GEOSEARCHSTORE h g FROMLONLAT 15 37 BYRADIUS 200 km",
            "GEOSEARCHSTORE h g FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST",
            "GEOSEARCHSTORE h g FROMLONLAT 0 0 BYRADIUS 1 km", "GEOSEARCHSTORE h g FROMLONLAT 0 0 BYRADIUS 1 km",
            "GEORADIUS g 0 0 1 km STORE d"],
    "hll": ["PFADD p a b c", "PFADD p a", "PFADD p", "PFADD q", "PFCOUNT p", "PFCOUNT p", "PFADD p d",
            "PFCOUNT p q", "PFCOUNT p", "PFMERGE m p q", "PFMERGE m", "PFMERGE n2", "PFCOUNT m"],
    "hll-pfdebug": ["PFADD p a b", "PFDEBUG GETREG p", "PFDEBUG TODENSE p", "PFDEBUG TODENSE p", "PFADD q a",
                    "PFDEBUG DECODE q", "PFDEBUG ENCODING q", "PFDEBUG GETREG q", "PFDEBUG GETREG q"],
}


def _cases(family: dict[str, list[str]]):
    return pytest.mark.parametrize("cmds", list(family.values()), ids=list(family))


def _with_configs(aofdiff, cmds: list[str]) -> list[str]:
    """`CONFIG-<name>` steps turn a yes/no option on for the rest of the case (reset after)."""
    out = []
    for line in cmds:
        if line.startswith("CONFIG-"):
            _configure(aofdiff, line[len("CONFIG-"):], "yes")
        else:
            out.append(line)
    return out


@pytest.fixture
def lazy_off(aofdiff):
    yield aofdiff
    _configure(aofdiff, "lazyfree-lazy-user-del", "no", "lazyfree-lazy-expire", "no",
               "lazyfree-lazy-eviction", "no", "lazyfree-lazy-server-del", "no")


@_cases(STRINGS)
def test_strings(lazy_off, cmds):
    _run(lazy_off, _with_configs(lazy_off, cmds))


@_cases(KEYS)
def test_keys(lazy_off, cmds):
    _run(lazy_off, _with_configs(lazy_off, cmds))


@_cases(COLLECTIONS)
def test_collections(lazy_off, cmds):
    _run(lazy_off, _with_configs(lazy_off, cmds))


# ---- RESTORE and MIGRATE ------------------------------------------------------------------------
def _dump(aofdiff, key: str) -> bytes:
    """One payload for both servers (redis-server's), so their RESTOREs are the same bytes."""
    ours, theirs = aofdiff.run("DUMP", key)
    assert ours == theirs
    return parse(theirs)


RESTORES = {
    "no-ttl": [["0"], ["0", "REPLACE"]],
    "relative-ttl": [["100000"], ["100000", "REPLACE", "IDLETIME", "5"], ["100000", "REPLACE", "FREQ", "3"]],
    "absttl": [["@ms+100000", "ABSTTL"], ["@ms+100000", "ABSTTL", "REPLACE"]],
    "past-ttl": [["@ms-1000", "ABSTTL"], ["@ms-1000", "ABSTTL", "REPLACE"], ["0", "REPLACE"],
                 ["@ms-1000", "REPLACE", "ABSTTL"], ["@ms-1000", "REPLACE", "ABSTTL"]],
    "busy": [["0"], ["100000"]],
}


@pytest.mark.parametrize("variants", list(RESTORES.values()), ids=list(RESTORES))
def test_restore(aofdiff, variants):
    aofdiff.run("RPUSH", "src", "a", "b")
    payload = _dump(aofdiff, "src")
    for extra in variants:
        aofdiff.run("RESTORE", "dst", _resolve(extra[0]), payload, *extra[1:])
    aofdiff.check(mask_times=True)


@pytest.fixture(scope="module")
def migrate_target():
    srv = start_redis()
    yield srv
    srv.stop()


def test_migrate_propagates_del_of_moved_keys(aofdiff, migrate_target):
    """MIGRATE is replayed as DEL of the keys the target acknowledged (nothing with COPY, or
    when no key moved); both servers migrate to a third one, in turn."""
    port = str(migrate_target.port)
    aofdiff.run("MSET", "a", "1", "b", "2", "c", "3")
    for c in aofdiff.conns:
        c.call("MIGRATE", "127.0.0.1", port, "", "9", "5000", "REPLACE", "KEYS", "a", "nokey", "b")
        c.call("MIGRATE", "127.0.0.1", port, "c", "9", "5000", "COPY", "REPLACE")
        c.call("MIGRATE", "127.0.0.1", port, "nokey", "9", "5000")
        c.call("MIGRATE", "127.0.0.1", port, "c", "9", "5000", "REPLACE")
    aofdiff.check()


# ---- SPOP's random draws ------------------------------------------------------------------------
@pytest.mark.parametrize("count", [1, 2, 5, 9])
def test_spop_count_is_replayed_as_srem_of_each_member_drawn(aofdiff, count):
    """SPOP key count below the set's size: one SREM per member drawn, in the reply's order,
    wrapped in MULTI/EXEC when more than one (the members themselves are each server's draw)."""
    aofdiff.run("SADD", "s", *"abcdefghij")
    aofdiff.run("SADD", "i", *map(str, range(10)))  # an intset draws through another path
    replies = [aofdiff.run("SPOP", key, str(count)) for key in ("s", "i")]
    ours, theirs = aofdiff.ops()
    for ops, side in ((ours, 0), (theirs, 1)):
        drawn = [parse(r[side]) for r in replies]
        expected = [[b"SADD", b"s", *(bytes([ch]) for ch in b"abcdefghij")],
                    [b"SADD", b"i", *(b"%d" % i for i in range(10))]]
        for key, members in zip((b"s", b"i"), drawn, strict=True):
            srems = [[b"SREM", key, m] for m in members]
            expected += [[b"MULTI"], *srems, [b"EXEC"]] if count > 1 else srems
        assert ops == expected


# ---- expiry -------------------------------------------------------------------------------------
def _expired_keys(aofdiff, *keys: str) -> None:
    """`keys` (strings) set to expire a few ms from now on both servers (the same deadline), and
    returned once the clock has passed it: still in the keyspace until looked up or swept (active
    expiry must be off).  Their SETs are compared and consumed here."""
    deadline = int(time.time() * 1000) + 30
    for k in keys:
        aofdiff.run("SET", k, "v", "PXAT", str(deadline))
    aofdiff.check(mask_times=True)
    while time.time() * 1000 <= deadline + 1:  # the event awaited is the clock passing the deadline
        time.sleep(0.002)


@pytest.fixture
def passive(aofdiff):
    """Active expiry off on both servers: a key past its deadline goes when a command looks it up."""
    for c in aofdiff.conns:
        c.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    yield aofdiff
    for c in aofdiff.conns:
        c.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    _configure(aofdiff, "lazyfree-lazy-expire", "no")


LAZY = {
    "write-after-expiry": ["SET k w"],  # DEL k, then the SET: MULTI/EXEC around both
    "write-that-changes-nothing": ["DEL k"],  # the expiry's DEL alone
    "read": ["GET k"],
    "exists": ["EXISTS k"],
    "list-push": ["LPUSH k a"],
    "incr": ["INCR k"],
    "incrbyfloat": ["INCRBYFLOAT k 1.5"],
    "setnx-wins": ["SETNX k x"],
    "expire-on-expired": ["EXPIRE k 100"],
    "getex": ["GETEX k EX 100"],
    "rename": ["RENAME k k2"],
    "scan-touches-arbitrary-keys": ["SCAN 0"],
    "randomkey": ["RANDOMKEY"],
    "mset-over": ["MSET k 1 k2 2"],
    "lazyfree-lazy-expire": ["CONFIG-lazyfree-lazy-expire", "SET k w"],
    # a STORE's destination is looked up (setKey), so a stale one expires first
    "sinterstore-over": ["SADD s a", "SINTERSTORE k s"],
    "zunionstore-over": ["ZADD z 1 a", "ZUNIONSTORE k 1 z"],
    "sort-store-over": ["RPUSH l 1", "SORT l STORE k"],
    "bitop-over": ["SET b x", "BITOP NOT k b"],
    "georadius-store-over": ["GEOADD g 13.3 38.1 p", "GEORADIUS g 13.3 38.1 10 km STORE k"],
    "zrangestore-over": ["ZADD z 1 a", "ZRANGESTORE k z 0 -1"],
    "pfmerge-over": ["PFADD h a", "PFMERGE k h"],
    # destinations other commands look up for writing
    "rename-over": ["SET j x", "RENAME j k"],
    "renamenx-over": ["SET j x", "RENAMENX j k"],
    "copy-over": ["SET j x", "COPY j k"],
    "move-into": ["SELECT 3", "SET k x", "MOVE k 0", "SELECT 0"],
    "copy-db-into": ["SELECT 3", "SET j x", "COPY j k DB 0", "SELECT 0"],
    "smove-into": ["SADD s a", "SMOVE s k a"],
    "lmove-into": ["RPUSH l a", "LMOVE l k LEFT LEFT"],
}


@pytest.mark.parametrize("cmds", list(LAZY.values()), ids=list(LAZY))
def test_lazily_expired_key(passive, cmds):
    cmds = _with_configs(passive, cmds)
    _expired_keys(passive, "k")
    _run(passive, cmds)


def test_scan_expires_many_keys_without_multi(passive):
    _expired_keys(passive, *(f"k{i}" for i in range(5)))
    passive.run("SCAN", "0", "COUNT", "100")
    ours, theirs = passive.ops()
    assert sorted(ours) == sorted(theirs) == [[b"DEL", b"k%d" % i] for i in range(5)]


@pytest.mark.parametrize("lazy", ["no", "yes"])
def test_active_expiry_propagates_each_del_alone(passive, lazy):
    _configure(passive, "lazyfree-lazy-expire", lazy)
    _expired_keys(passive, *(f"k{i}" for i in range(5)))
    for c in passive.conns:  # now each server's cron sweeps them (DBSIZE expires nothing)
        c.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    for c in passive.conns:
        while c.call("DBSIZE") != b":0\r\n":
            time.sleep(0.01)
    ours, theirs = passive.ops()
    name = b"UNLINK" if lazy == "yes" else b"DEL"
    assert sorted(ours) == sorted(theirs) == [[name, b"k%d" % i] for i in range(5)]


# ---- eviction -----------------------------------------------------------------------------------
def _short(ops: list[list[bytes]]) -> list[list[bytes]]:
    """Long arguments as their length, for readable failures."""
    return [[a if len(a) < 100 else b"<%d bytes>" % len(a) for a in op] for op in mask(ops)]


def _used_memory(conn) -> int:
    info = parse(conn.call("INFO", "memory")).decode()
    return int(info.split("used_memory:")[1].split()[0])


@pytest.mark.parametrize("lazy", ["no", "yes"])
def test_eviction_propagates_its_dels_before_the_command(aofdiff, lazy):
    """The one volatile key is what volatile-lru can evict: its DEL (or UNLINK under
    lazyfree-lazy-eviction) goes out on its own (no MULTI), before the next command."""
    _configure(aofdiff, "lazyfree-lazy-eviction", lazy, "maxmemory-policy", "volatile-lru")
    try:
        aofdiff.run("SET", "vol", "x" * 200_000, "PX", "1000000")
        aofdiff.run("SET", "keep", "y")
        for c in aofdiff.conns:  # each server's own figure (their accounting differs), just over it
            c.call("CONFIG", "SET", "maxmemory", "1gb")  # raxdb accounts for keys while a limit is set
            assert c.call("CONFIG", "SET", "maxmemory", str(_used_memory(c) - 1000)) == b"+OK\r\n"
        # evicted by the timer CONFIG SET started, or before the next command: before it either way
        aofdiff.run("SET", "small", "1")
        ours, theirs = (_short(ops) for ops in aofdiff.ops())
        assert ours == theirs
        assert ours[-2:] == [[b"UNLINK" if lazy == "yes" else b"DEL", b"vol"], [b"SET", b"small", b"1"]]
    finally:
        _configure(aofdiff, "maxmemory", "0", "maxmemory-policy", "noeviction", "lazyfree-lazy-eviction", "no")


def test_eviction_before_a_fast_loop_command_goes_out_alone(aofdiff):
    """Eviction made room before a command the client's fast loop runs (not right after CONFIG
    SET): the DEL still goes out on its own, then the command, with no MULTI around the two."""
    _configure(aofdiff, "maxmemory-policy", "volatile-lru")
    try:
        aofdiff.run("SET", "keep", "y")
        aofdiff.run("SET", "vol", "x" * 400_000, "PX", "1000000")
        for c in aofdiff.conns:  # each server's own figure (their accounting differs)
            c.call("CONFIG", "SET", "maxmemory", "1gb")
            assert c.call("CONFIG", "SET", "maxmemory", str(_used_memory(c) + 150_000)) == b"+OK\r\n"
        aofdiff.ops()
        # within the limit before it runs, over it after (a short request: Redis counts the query
        # buffer in its figure)
        aofdiff.run("SETRANGE", "big", "200000", "z")
        aofdiff.run("SET", "small", "1")  # eviction first: vol goes, and that makes room
        ours, theirs = (_short(ops) for ops in aofdiff.ops())
        assert ours == theirs
        assert ours == [[b"SETRANGE", b"big", b"200000", b"z"], [b"DEL", b"vol"], [b"SET", b"small", b"1"]]
    finally:
        _configure(aofdiff, "maxmemory", "0", "maxmemory-policy", "noeviction")


def test_set_get_spelled_with_a_nul(aofdiff):
    """SET's GET is recognised as a C string ("GET\\0x" is GET), and dropped from the replay so."""
    aofdiff.run("SET", "k", "v", b"GET\x00x")
    aofdiff.run("SET", "k", "w", b"get\x00", "XX")
    aofdiff.check()
