"""Write the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/) from what a real redis-server
7.0.15 writes (DUMP payloads, RDB files, AOF files and manifests, nodes.conf) and from the test
suite's inputs.  Run by hand when a decoder learns a new form: `python -m tests.fuzz.targets.seeds`
(it starts redis-server on loopback ports of its own, and stops them).  Files are named by the
SHA-1 of their bytes, and replaced when it runs again; the regression inputs of findings
(regress-*) and the small inputs campaigns found (found-*, added by `--keep-found` after a
`make fuzz`) stay beside them.

Rule: small seeds: the corpus is committed, a few hundred KB in all; each seed shows one form.
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent.parent))

import redis  # noqa: E402

from tests.fuzz.targets.common import CORPUS, TARGETS  # noqa: E402
from tests.support.servers import start_redis  # noqa: E402


def put(target: str, data: bytes) -> None:
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


def populate(r: redis.Redis, big: bool = True) -> None:
    """One key of every type and encoding Redis 7.0 writes, small (`big`: with the collections of
    hundreds of elements a hashtable, skiplist or multi-node quicklist takes)."""
    r.set("s:int", 12345)
    r.set("s:neg", -7)
    r.set("s:raw", "hello world")
    r.set("s:lzf", "abcdefgh" * 40)
    r.set("s:bin", bytes(range(256)))
    r.rpush("l:lp", "a", "1", "-300", "70000", "b" * 70, "4294967296")
    r.rpush("l:num", *range(-5, 200, 7))
    if big:
        r.rpush("l:ql", *[f"e{i}" for i in range(300)])
        r.rpush("l:plain", "x" * 9000, "y")
        r.sadd("st:big", *range(600))
        r.zadd("z:sl", {f"m{i}": i / 3 for i in range(200)})
        r.hset("h:ht", mapping={f"f{i}": f"v{i}" for i in range(200)})
    r.sadd("st:i16", 1, 2, 3, -4)
    r.sadd("st:i32", 1, 70000, -70000)
    r.sadd("st:i64", 1, 2**40, -(2**40))
    r.sadd("st:ht", "a", "b", "c", "1")
    r.zadd("z:lp", {"a": 1, "b": 2.5, "c": -3, "d": 1e20})
    r.zadd("z:inf", {"lo": float("-inf"), "hi": float("inf")})
    r.hset("h:lp", mapping={"f1": "v1", "f2": "2", "f3": ""})
    r.hset("h:long", mapping={"f": "v" * 100})
    r.xadd("x:one", {"f": "v"}, id="1-1")
    for i in range(20):
        r.xadd("x:many", {"a": i, "b": "x" * (i % 5)} if i % 3 else {"a": i})
    r.xadd("x:many", {"c": "new", "d": "fields"})
    r.xdel("x:many", r.xrange("x:many", count=3)[1][0])
    r.xgroup_create("x:many", "g1", id="0")
    r.xgroup_create("x:many", "g2", id="$")
    r.xreadgroup("g1", "alice", {"x:many": ">"}, count=5)
    r.xreadgroup("g1", "bob", {"x:many": ">"}, count=2)
    r.xack("x:many", "g1", r.xrange("x:many", count=1)[0][0])
    r.xgroup_createconsumer("x:many", "g2", "idle")
    r.xadd("x:empty", {"f": "v"}, id="5-5")
    r.xdel("x:empty", "5-5")
    r.xgroup_create("x:empty", "g", id="0")
    r.xadd("x:trim", {"f": "v"}, maxlen=1)
    r.xadd("x:trim", {"f": "w"}, maxlen=1)


def restore_seeds(r: redis.Redis) -> list[tuple[bytes, bytes]]:
    """Each key's DUMP body as a restore seed; the payloads, for rdb_per_key."""
    dumps = []
    for key in sorted(r.keys()):
        payload = r.dump(key)
        put("restore", payload[:-10])  # the body: the target appends version and CRC (restore.py)
        dumps.append((key, payload))
    return dumps


def rdb_per_key(r: redis.Redis, d: str, dumps: list[tuple[bytes, bytes]]) -> None:
    """A small RDB file per key (the fuzzer's speed goes with its inputs' size: one file of every
    key costs a hundred times one of a single key)."""
    for key, payload in dumps:
        r.flushall()
        r.restore(key, 0, payload)
        r.save()
        put("rdbfile", Path(d, "dump.rdb").read_bytes())


def legacy_seeds() -> None:
    """The encodings Redis 7.0 reads and no longer writes: zipmap (9), ziplists (10, 12, 13),
    quicklist of ziplists (14), built with the reference encoders of tests/storage/test_ziplist.py."""
    from tests.storage.test_ziplist import zl_encode, zm_encode

    def rstr(b: bytes) -> bytes:
        assert len(b) < 64
        return bytes([len(b)]) + b

    def rlen(n: int) -> bytes:
        return bytes([n]) if n < 64 else bytes([0x40 | n >> 8, n & 0xFF])

    def big(b: bytes) -> bytes:
        return rlen(len(b)) + b

    put("restore", bytes([9]) + big(zm_encode([(b"f1", b"v1"), (b"f2", b"22")])))
    put("restore", bytes([10]) + big(zl_encode([b"a", b"12", b"-70000", b"x" * 30])))
    put("restore", bytes([12]) + big(zl_encode([b"m1", b"1.5", b"m2", b"3"])))
    put("restore", bytes([13]) + big(zl_encode([b"f", b"v", b"g", b"100"])))
    put("restore", bytes([14]) + rlen(2) + big(zl_encode([b"a", b"b"])) + big(zl_encode([b"3"])))
    # the old plain encodings: list (1), set (2), zset with text scores (3), hash (4)
    put("restore", bytes([1]) + rlen(2) + rstr(b"a") + rstr(b"b"))
    put("restore", bytes([2]) + rlen(2) + rstr(b"a") + rstr(b"b"))
    put("restore", bytes([3]) + rlen(2) + rstr(b"a") + rstr(b"1.5") + rstr(b"b") + bytes([253]))
    put("restore", bytes([4]) + rlen(1) + rstr(b"f") + rstr(b"v"))
    put("restore", bytes([7]) + b"\x00")  # a module value: refused


def file_seeds(workdir: str) -> None:
    """Files as redis-server writes them: RDB (compressed or not, with and without checksum,
    several databases, expiries, functions), AOF (plain and with an RDB preamble), manifests."""
    for extra in ((), ("--rdbcompression", "no", "--rdbchecksum", "no")):
        d = tempfile.mkdtemp(dir=workdir)
        srv = start_redis(*extra, cwd=d)
        try:
            r = redis.Redis(port=srv.port)
            # the big collections in their own files only: a file of every key was ~20 KB, and the
            # fuzzer spent on it and its mutations what a hundred one-key files cost, for 3 arcs of 1,586
            populate(r, big=not extra)
            if not extra:
                rdb_per_key(r, d, restore_seeds(r))
                populate(r)
            r.pexpire("s:raw", 10**9)
            r.expireat("s:int", 4102444800)
            r.select(3)
            r.set("db3", "v")
            r.select(0)
            r.function_load("#!lua name=lib\nredis.register_function('f', function() return 1 end)", replace=True)
            if extra:  # every small key in one file, once
                r.save()
                put("rdbfile", Path(d, "dump.rdb").read_bytes())
            r.flushall()
            r.set("s:raw", "v", px=10**9)
            r.select(3)
            r.set("db3", "v")
            r.function_load("#!lua name=lib\nredis.register_function('f', function() return 1 end)", replace=True)
            r.save()
            put("rdbfile", Path(d, "dump.rdb").read_bytes())
            r.flushall()
            r.set("k", "v")
            r.save()
            put("rdbfile", Path(d, "dump.rdb").read_bytes())
            r.flushall()
            r.save()
            put("rdbfile", Path(d, "dump.rdb").read_bytes())
        finally:
            srv.stop()
    for preamble in ("no", "yes"):
        d = tempfile.mkdtemp(dir=workdir)
        srv = start_redis("--appendonly", "yes", "--aof-use-rdb-preamble", preamble,
                          "--aof-timestamp-enabled", "yes", cwd=d)
        try:
            r = redis.Redis(port=srv.port)
            r.set("a", "1")
            r.hset("h", "f", "v")
            r.rpush("l", "x", "y")
            r.expire("a", 1000)
            r.bgrewriteaof()
            while r.info("persistence")["aof_rewrite_in_progress"]:
                time.sleep(0.05)
            time.sleep(0.3)
            pipe = r.pipeline(transaction=True)
            pipe.incr("n")
            pipe.zadd("z", {"m": 1})
            pipe.execute()
            r.xadd("x", {"f": "v"})
            r.select(2)
            r.set("b", "2")
            time.sleep(1.2)  # appendfsync everysec
            aofdir = Path(d, "appendonlydir")
            for f in sorted(aofdir.iterdir()):
                data = f.read_bytes()
                if f.name.endswith(".manifest"):
                    put("manifest", data)
                elif data:
                    put("aof", data)
        finally:
            srv.stop()


def nodes_conf_seeds(workdir: str) -> None:
    d = tempfile.mkdtemp(dir=workdir)
    srv = start_redis("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", cwd=d)
    try:
        r = redis.Redis(port=srv.port)
        r.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 5000, 5002, 5002, 9000, 16383)
        r.execute_command("CLUSTER", "SAVECONFIG")
        put("nodesconf", Path(d, "nodes.conf").read_bytes())
    finally:
        srv.stop()
    put("nodesconf", b"e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:7000@17000,host.example myself,master"
        b" - 0 0 1 connected 0-100 7000 [5001-<-19a6fe5a11e4c1f6bd4ee6e2a3d7a9c1aa6e2bb1]"
        b" [9000->-19a6fe5a11e4c1f6bd4ee6e2a3d7a9c1aa6e2bb1]\n19a6fe5a11e4c1f6bd4ee6e2a3d7a9c1aa6e2bb1 127.0.0.1:7001@17001 slave,fail?"
        b" e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 1 2 1 disconnected\n"
        b"vars currentEpoch 3 lastVoteEpoch 2\n")


def bus_seeds() -> None:
    from raxdb.server.cluster import wire

    a, b = "a" * 40, "b" * 40
    slots = bytes([0xFF] * 16) + bytes(2032)
    g = [wire.Gossip(b, 1, 2, "127.0.0.1", 7001, 17001, 1, 0), wire.Gossip("c" * 40, 0, 0, "::1", 1, 2, 8, 0)]
    msgs = [
        wire.Message(wire.PING, sender=a, port=7000, cport=17000, myslots=slots, myip="127.0.0.1", gossip=g),
        wire.Message(wire.PONG, sender=a, gossip=g[:1], hostname="node-a.example", current_epoch=5),
        wire.Message(wire.MEET, sender=a, slaveof=b, flags=2),
        wire.Message(wire.FAIL, sender=a, about=b),
        wire.Message(wire.PUBLISH, sender=a, channel=b"ch", message=b"hello"),
        wire.Message(wire.PUBLISHSHARD, sender=a, channel=b"", message=b"x" * 10),
        wire.Message(wire.UPDATE, sender=a, about=b, update_epoch=9, update_slots=slots),
        wire.Message(wire.AUTH_REQUEST, sender=a), wire.Message(wire.AUTH_ACK, sender=a),
        wire.Message(wire.MFSTART, sender=a),
    ]
    for m in msgs:
        put("bus", wire.encode(m))
    put("bus", wire.encode(msgs[0]) + wire.encode(msgs[3]))  # two messages in one read
    mod = bytearray(wire.encode(wire.Message(wire.MODULE, sender=a)) + bytes(8) + (3).to_bytes(4, "big") + b"\x01abc")
    mod[4:8] = len(mod).to_bytes(4, "big")
    put("bus", bytes(mod))


def text_seeds() -> None:
    from tests.fuzz import test_protocol_fuzz as tp

    for frame in tp.MALFORMED:
        put("resp", b"\x80" + frame)
    put("resp", b"\x40*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
    put("resp", b"\x10PING\r\nSET k \"a\\x41\\n\" 'q'\r\nGET k\n")
    put("resp", b"\x90*4\r\n$6\r\nXRANGE\r\n$1\r\nk\r\n$1\r\n-\r\n$1\r\n+\r\n*1\r\n$4\r\n+inf\r\n")
    rng = random.Random(58)
    for _ in range(8):
        put("resp", bytes([rng.randrange(256)]) + b"".join(tp._frame(rng) for _ in range(4)))
    conf = Path("/etc/redis/redis.conf")
    if conf.exists():
        lines = [ln for ln in conf.read_bytes().splitlines() if ln.strip() and not ln.startswith(b"#")]
        put("config", b"\n".join(lines) + b"\n")
    put("config", b'save 900 1\nsave ""\nmaxmemory 1gb\nrename-command FLUSHALL ""\n'
        b'user alice on >pw ~* +@all\nclient-output-buffer-limit replica 256mb 64mb 60\n'
        b'include /nonexistent.conf\nnotify-keyspace-events "KEA"\nbind 127.0.0.1 -::1\n'
        b'oom-score-adj-values 0 200 800\nunixsocketperm 700\nlatency-tracking-info-percentiles 50 99 99.9\n')
    put("config", b"maxmemory-policy allkeys-lru\nappendfsync always\nhz 500\nloadmodule /x.so\n")
    put("manifest", b"file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
        b"file appendonly.aof.2.incr.aof seq 2 type i\n")
    put("manifest", b'file "with space\\x00.aof" seq 3 type h\n# comment\nfile a seq 1 type b\n')
    put("aof", b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n#TS:1700000000\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
        b"*1\r\n$5\r\nMULTI\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n*1\r\n$4\r\nEXEC\r\n")
    put("aof", b"*1\n$4\nPING\n*2\r\n$3\r\nGET\r\n$1\r\nk")


def lua_seeds() -> None:
    rng = random.Random(58)
    for n in (8, 32, 64, 128, 256):
        for _ in range(4):
            put("lua", rng.randbytes(n))


FOUND_MAX = 512  # the found inputs kept are the small ones: the corpus stays a few hundred KB


def keep_found(work: Path) -> None:
    """Copy what campaigns found (build/fuzz/<target>/: each input added coverage when libFuzzer
    kept it) into the corpus as found-<sha1>, up to FOUND_MAX bytes each."""
    for name in TARGETS:
        found = work / name
        if not found.is_dir():
            continue
        for f in found.iterdir():
            data = f.read_bytes()
            if f.is_file() and len(data) <= FOUND_MAX:
                (CORPUS / name / f"found-{hashlib.sha1(data).hexdigest()}").write_bytes(data)


def main() -> None:
    if sys.argv[1:2] == ["--keep-found"]:
        keep_found(Path(sys.argv[2]) if len(sys.argv) > 2 else CORPUS.parent.parent.parent / "build" / "fuzz")
        return
    # the seeds are written again (a stream's IDs come from the clock: names change); the inputs the
    # fuzzer found (found-*) and the findings' (regress-*) stay
    for f in CORPUS.glob("*/*"):
        if len(f.name) == 40 and all(c in "0123456789abcdef" for c in f.name):
            f.unlink()
    with tempfile.TemporaryDirectory(prefix="raxdb-seeds-") as workdir:
        legacy_seeds()
        file_seeds(workdir)
        nodes_conf_seeds(workdir)
    bus_seeds()
    text_seeds()
    lua_seeds()
    os.system(f"du -sh {CORPUS}/*")


if __name__ == "__main__":
    main()
