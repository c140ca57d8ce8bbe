"""What the snapshot tests share (tests/integration/test_snapshot_*.py, issue #53): a dataset of
every type and encoding, a seeded stream of writes to run while a snapshot is being written, and
a server's whole state to compare before, during and after.

Rule: every command here gives the same state on raxdb and on redis-server 7.0.15 whenever it
runs (explicit stream IDs, absolute deadlines, no random pops), so the same commands on both must
give the same DEBUG DIGEST.  The one exception is time itself: a PEL entry's delivery time and a
consumer's seen-time are the server's clock, so `state` keeps them and `without_times` drops them
where two servers' clocks are compared.
Invariant: the keys the writes expire (`ttl:*`, `px:*`) are touched by nothing else, so when they
expire (a millisecond later, by the clock) cannot change what another command finds.
"""

from __future__ import annotations

import os
import random
import reprlib
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

from tests.support.diff import RawConnection, encode_command, parse
from tests.support.servers import ServerProcess

Command = list[Any]
FAR = 4102444800000  # 2100-01-01 in ms: deadlines no test outlives, the same on both servers
LIB = "#!lua name=snaplib\nredis.register_function('snapf', function(keys, args) return 1 end)"
LIB2 = "#!lua name=snaplib\nredis.register_function('snapf', function(keys, args) return 2 end)"
LIB_NEW = "#!lua name=newlib\nredis.register_function('newf', function(keys, args) return 3 end)"
STREAMS = 3  # st:0 .. st:2 have groups; st:plain has none
STREAM_ENTRIES = 400
TTL_KEYS = 200  # ttl:0 .. : far-future deadlines at first, expired by the writes


def pipeline(conn: RawConnection, cmds: list[Command], chunk: int = 500) -> list[bytes]:
    """Each command's raw reply, sent `chunk` at a time in one write (one round trip a chunk)."""
    replies: list[bytes] = []
    for start in range(0, len(cmds), chunk):
        part = cmds[start:start + chunk]
        conn.send(b"".join(encode_command(c) for c in part))
        replies.extend(conn.read_frame() for _ in part)
    return replies


def dataset() -> list[Command]:
    """About 2,800 keys in six databases: strings as integers, short, long (incompressible) and
    LZF-compressible values; listpack and hashtable hashes; intset and hashtable sets; listpack
    and skiplist sorted sets; lists of one quicklist node and of many, also compressed
    (list-compress-depth 1); streams with consumer groups, consumers, PEL entries and deleted
    entries; keys with deadlines; a function library."""
    rnd = random.Random(53)
    cmds: list[Command] = [["FLUSHALL"], ["FUNCTION", "FLUSH"], ["CONFIG", "SET", "list-compress-depth", "0"]]
    for i in range(400):
        cmds.append(["SET", f"s:int:{i}", str(rnd.randrange(-10**12, 10**12))])
        cmds.append(["SET", f"s:short:{i}", f"v{i}"])
        cmds.append(["SET", f"s:raw:{i}", rnd.randbytes(rnd.randrange(30, 300))])
        cmds.append(["SET", f"s:lzf:{i}", "compress me please " * rnd.randrange(2, 20) + str(i)])
    cmds.append(["SET", "s:big", "big and compressible " * 5000])
    cmds.append(["SET", "s:bigraw", rnd.randbytes(100_000)])
    for i in range(TTL_KEYS):
        cmds.append(["SET", f"ttl:{i}", f"expires later {i}", "PXAT", FAR + i])
    for i in range(150):
        cmds.append(["HSET", f"h:lp:{i}", *[x for j in range(rnd.randrange(1, 10)) for x in (f"f{j}", f"{i * j}")]])
    for i in range(6):
        cmds.append(["HSET", f"h:ht:{i}", *[x for j in range(300) for x in (f"field{j}", f"value{j}-{i}")]])
    for i in range(20):
        cmds.append(["HSET", f"h:long:{i}", "f", "v" * (70 + i)])
    for i in range(100):
        cmds.append(["SADD", f"set:int:{i}", *[str(rnd.randrange(-10**6, 10**10)) for _ in range(rnd.randrange(1, 50))]])
    for i in range(50):
        cmds.append(["SADD", f"set:str:{i}", *[f"m{rnd.randrange(1000)}" for _ in range(rnd.randrange(1, 30))]])
    for i in range(3):
        cmds.append(["SADD", f"set:big:{i}", *[str(j * 7 + i) for j in range(600)]])
    for i in range(100):
        cmds.append(["ZADD", f"z:lp:{i}", *[x for j in range(rnd.randrange(1, 30))
                                             for x in (repr(rnd.uniform(-100, 100)), f"m{j}")]])
    for i in range(6):
        cmds.append(["ZADD", f"z:sl:{i}", *[x for j in range(200) for x in (str(j * 1.5 - i), f"member{j}")]])
    for i in range(100):
        cmds.append(["RPUSH", f"l:small:{i}", *[str(rnd.randrange(-1000, 10**6)) if j % 2 else f"e{j}"
                                                  for j in range(rnd.randrange(1, 20))]])
    for i in range(4):
        cmds.append(["RPUSH", f"l:big:{i}", *[f"element {j} of a long list {i}" for j in range(3000)]])
    cmds.append(["CONFIG", "SET", "list-compress-depth", "1"])
    for i in range(4):
        cmds.append(["RPUSH", f"l:packed:{i}", *[f"compressible compressible {j % 10}" for j in range(3000)]])
    cmds.append(["CONFIG", "SET", "list-compress-depth", "0"])
    for s in range(STREAMS):
        key = f"st:{s}"
        for n in range(1, STREAM_ENTRIES + 1):
            cmds.append(["XADD", key, f"{n}-{s}", "f", str(n), "g", "x" * (n % 9)])
        cmds += [["XDEL", key, f"5-{s}", f"77-{s}"],
                 ["XGROUP", "CREATE", key, "g1", "0"], ["XGROUP", "CREATE", key, "g2", "$"],
                 ["XGROUP", "CREATE", key, "g3", f"100-{s}", "ENTRIESREAD", "99"],
                 ["XREADGROUP", "GROUP", "g1", "alice", "COUNT", "60", "STREAMS", key, ">"],
                 ["XREADGROUP", "GROUP", "g1", "bob", "COUNT", "40", "STREAMS", key, ">"],
                 ["XREADGROUP", "GROUP", "g3", "carol", "COUNT", "10", "STREAMS", key, ">"],
                 ["XACK", key, "g1", *[f"{n}-{s}" for n in range(1, 30, 2)]],
                 ["XGROUP", "CREATECONSUMER", key, "g2", "dave"]]
    cmds += [["XADD", "st:plain", "1-1", "a", "1"], ["XADD", "st:plain", "2-1", "a", "2", "b", "3"]]
    for i in range(0, 400, 5):  # deadlines on values of several types (and on some `ttl:*` above)
        cmds.append(["PEXPIREAT", f"s:short:{i}", FAR + 1000 + i])
    for key in ("h:lp:3", "set:int:3", "z:lp:3", "l:small:3", "l:big:1", "st:1"):
        cmds.append(["PEXPIREAT", key, FAR + 7])
    for db, n in ((1, 300), (2, 100), (3, 50), (4, 60), (9, 200), (15, 20)):
        cmds.append(["SELECT", str(db)])
        for i in range(n):
            if i % 3 == 0:
                cmds.append(["HSET", f"d{db}:h:{i}", "a", str(i), "b", "bee"])
            else:
                cmds.append(["SET", f"d{db}:s:{i}", f"value {i} in db {db}"])
        cmds.append(["PEXPIREAT", f"d{db}:s:1", FAR + db])
    cmds += [["SELECT", "0"], ["FUNCTION", "LOAD", LIB]]
    return cmds


def build(conn: RawConnection) -> None:
    for cmd, reply in zip(dataset(), pipeline(conn, dataset()), strict=True):
        assert not reply.startswith(b"-"), (cmd, reply)


def writes(seed: int) -> Iterator[list[Command]]:
    """Endless batches of writes (a seeded, so reproducible, mix) against `dataset`'s keys: values
    changed in place (APPEND, SETRANGE, INCRBY, HSET of an existing field, LPUSH, LSET, ZINCRBY,
    SADD, XADD, XACK, XCLAIM, ...) or converted to another encoding by the change, keys deleted,
    renamed, moved, added in bulk (so the keyspace grows past its table), expired (a past
    deadline, or one a millisecond away), given or stripped of deadlines, another database
    flushed, two swapped, the library replaced, a script's and a transaction's writes."""
    rnd = random.Random(seed)
    n = 0
    stream_next = [STREAM_ENTRIES + 1] * STREAMS
    expiring = list(range(TTL_KEYS))
    rnd.shuffle(expiring)

    def one() -> list[Command]:
        nonlocal n
        n += 1
        i = rnd.randrange(400)
        s = rnd.randrange(STREAMS)
        kind = rnd.randrange(40)
        if kind == 0:
            return [["APPEND", f"s:raw:{i}", "appended"]]
        if kind == 1:
            return [["SETRANGE", f"s:lzf:{i}", str(rnd.randrange(60)), "SETRANGE"]]
        if kind == 2:
            return [["INCRBY", f"s:int:{i}", str(rnd.randrange(1, 1000))]]
        if kind == 3:
            return [["SET", f"s:short:{i}", f"overwritten {n}"]]
        if kind == 4:
            return [["MSET", *[x for j in range(60) for x in (f"new:{n}:{j}", f"added {j}")]]]
        if kind == 5:
            return [["DEL", f"s:{rnd.choice(['int', 'short', 'raw', 'lzf'])}:{i}", f"h:lp:{i % 150}"]]
        if kind == 6:
            return [["UNLINK", f"z:lp:{i % 100}", f"l:small:{i % 100}"]]
        if kind == 7:
            return [["HSET", f"h:lp:{i % 150}", "f0", f"changed {n}"]]
        if kind == 8:
            return [["HSET", f"h:lp:{i % 150}", "wide", "w" * 100]]  # listpack -> hashtable
        if kind == 9:
            return [["HSET", f"h:ht:{i % 6}", f"field{rnd.randrange(300)}", f"changed {n}"],
                    ["HDEL", f"h:ht:{i % 6}", f"field{rnd.randrange(300)}"]]
        if kind == 10:
            return [["HINCRBY", f"h:lp:{i % 150}", "f1", "5"]]
        if kind == 11:
            return [["LPUSH", f"l:big:{i % 4}", f"front {n}"], ["RPOP", f"l:big:{(i + 1) % 4}"]]
        if kind == 12:
            return [["LSET", f"l:packed:{i % 4}", str(rnd.randrange(-3000, 3000)), f"set {n}"]]
        if kind == 13:
            return [["LINSERT", f"l:small:{i % 100}", "BEFORE", "e0", f"inserted {n}"], ["LTRIM", f"l:big:{i % 4}", "1", "-2"]]
        if kind == 14:
            return [["SADD", f"set:int:{i % 100}", str(rnd.randrange(10**6))]]
        if kind == 15:
            return [["SADD", f"set:int:{i % 100}", f"word{n}"]]  # intset -> hashtable
        if kind == 16:
            return [["SREM", f"set:str:{i % 50}", f"m{rnd.randrange(1000)}"],
                    ["SMOVE", f"set:big:{i % 3}", f"set:int:{i % 100}", str((i % 600) * 7 + i % 3)]]
        if kind == 17:
            return [["ZINCRBY", f"z:lp:{i % 100}", "1.5", f"m{rnd.randrange(30)}"]]
        if kind == 18:
            return [["ZINCRBY", f"z:sl:{i % 6}", "-2.25", f"member{rnd.randrange(200)}"],
                    ["ZREM", f"z:sl:{i % 6}", f"member{rnd.randrange(200)}"]]
        if kind == 19:
            return [["ZADD", f"z:lp:{i % 100}", "3", "m" * 80]]  # listpack -> skiplist
        if kind == 20:
            stream_next[s] += 1
            return [["XADD", f"st:{s}", f"{stream_next[s]}-{s}", "f", f"added {n}"]]
        if kind == 21:
            return [["XACK", f"st:{s}", "g1", *[f"{m}-{s}" for m in range(rnd.randrange(1, 60), 101, 7)]]]
        if kind == 22:
            return [["XREADGROUP", "GROUP", "g2", f"c{n % 3}", "COUNT", "3", "STREAMS", f"st:{s}", ">"]]
        if kind == 23:
            return [["XCLAIM", f"st:{s}", "g1", "erin", "0", f"{rnd.randrange(30, 100)}-{s}"],
                    ["XDEL", f"st:{s}", f"{rnd.randrange(100, 400)}-{s}"]]
        if kind == 24:
            return [["XTRIM", f"st:{s}", "MINID", f"{rnd.randrange(1, 40)}"],
                    ["XGROUP", "SETID", f"st:{s}", "g3", f"{rnd.randrange(100, 200)}-{s}"]]
        if kind == 25:
            return [["RENAME", f"s:lzf:{i}", f"renamed:{n}"], ["RENAME", f"h:ht:{i % 6}", f"renamed:h:{n}"]]
        if kind == 26:
            return [["COPY", f"l:big:{i % 4}", f"copied:{n}"], ["MOVE", f"s:int:{i}", "1"]]
        if kind == 27:
            return [["PEXPIREAT", f"s:raw:{i}", str(FAR + n)], ["PERSIST", f"s:short:{i - i % 5}"]]
        if kind == 28 and expiring:  # a deadline in the past: deleted at once
            return [["PEXPIREAT", f"ttl:{expiring.pop()}", "1"]]
        if kind == 29 and expiring:  # a deadline a millisecond away: deleted when touched or swept
            return [["PEXPIRE", f"ttl:{expiring.pop()}", "1"], ["SET", f"px:{n}", "short-lived", "PX", "1"]]
        if kind == 30:
            return [["SELECT", "9"], ["FLUSHDB"], ["SELECT", "0"]]
        if kind == 31:
            return [["SWAPDB", "3", "4"]]
        if kind == 32:
            return [["FUNCTION", "LOAD", "REPLACE", rnd.choice([LIB, LIB2])], ["FUNCTION", "LOAD", "REPLACE", LIB_NEW]]
        if kind == 33:
            return [["FUNCTION", "DELETE", "newlib"]]
        if kind == 34:
            return [["EVAL", "redis.call('set', KEYS[1], ARGV[1]); return redis.call('incr', KEYS[2])", "2",
                     f"s:short:{i}", f"from lua {n}", "lua:counter"]]
        if kind == 35:
            return [["MULTI"], ["HSET", f"h:ht:{i % 6}", "multi", str(n)], ["SADD", f"set:str:{i % 50}", f"multi{n}"],
                    ["DEL", f"s:raw:{(i + 7) % 400}"], ["EXEC"]]
        if kind == 36:
            return [["SELECT", "1"], ["SET", f"d1:s:{i % 300}", f"changed {n}"], ["DEL", f"d1:h:{i % 100 * 3}"],
                    ["SELECT", "0"]]
        if kind == 37:
            return [["SET", "s:big", "big and changed " * 5000], ["SETRANGE", "s:bigraw", str(rnd.randrange(90_000)), "x" * 300]]
        if kind == 38:
            return [["RESTORE", f"restored:{n}", "0", _payload(rnd)]]
        return [["GETDEL", f"s:short:{i}"], ["SET", f"s:short:{i}", str(n), "KEEPTTL"]]

    while True:
        batch: list[Command] = []
        while len(batch) < 8:
            batch += one()
        yield batch


def _payload(rnd: random.Random) -> bytes:
    """A RESTORE payload both servers accept: a string in Redis 7.0's DUMP format (RDB version 10)."""
    from raxdb.storage.crc64 import crc64

    value = b"restored %d" % rnd.randrange(10**6)
    body = b"\x00" + bytes([len(value)]) + value + b"\x0a\x00"
    return body + crc64(body).to_bytes(8, "little")


def expire_touched(conns: list[RawConnection], batches: list[list[Command]], timeout: float = 10.0) -> None:
    """Until the keys `batches` gave a 1 ms deadline (`ttl:*`, `px:*`) are gone on every server,
    reclaimed by a lookup (EXISTS), as a client's read would: DEBUG DIGEST counts a key past its
    deadline that nobody touched yet, on raxdb as on Redis, and KEYS leaves it out."""
    names = sorted({c[1] for b in batches for c in b if c[0] in ("PEXPIRE", "SET") and c[1][:3] in ("ttl", "px:")})
    for conn in conns:
        deadline = time.monotonic() + timeout
        while names and any(r != b":0\r\n" for r in pipeline(conn, [["EXISTS", k] for k in names])):
            assert time.monotonic() < deadline, "keys with a 1 ms deadline still there"


def _strip(value: Any, masked: frozenset[bytes]) -> Any:
    """XINFO STREAM FULL with the fields named in `masked` and the PEL entries' delivery times
    replaced by None."""
    if isinstance(value, dict):
        return {k: _strip(v, masked) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_strip(v, masked) for v in value)
    if isinstance(value, list):
        if len(value) == 3 and isinstance(value[0], bytes) and all(isinstance(x, int) for x in value[1:]):
            return [value[0], None, value[2]]  # a consumer's PEL entry: [id, delivery time, count]
        if (len(value) == 4 and all(isinstance(x, bytes) for x in value[:2])
                and all(isinstance(x, int) for x in value[2:])):
            return [*value[:2], None, value[3]]  # a group's: [id, consumer, delivery time, count]
        return [None if i and isinstance(value[i - 1], bytes) and value[i - 1] in masked else _strip(x, masked)
                for i, x in enumerate(value)]
    return value


def state(conn: RawConnection, values: bool = False) -> dict[str, Any]:
    """The server's whole dataset, for equality: DEBUG DIGEST (key names, values, whether a key
    has a deadline); every key's absolute deadline, database by database; each stream's XINFO
    STREAM FULL (groups, consumers, PEL, which no digest covers); the libraries.  `encodings`:
    every key's OBJECT ENCODING, kept apart (a load may re-encode a value).  `values`: also
    every key's DEBUG DIGEST-VALUE, to name the keys whose values differ when digests do (raxdb
    computes digests in Python: a third of a second for this dataset)."""
    out: dict[str, Any] = {"digest": parse(conn.call("DEBUG", "DIGEST"))}
    encodings = {}
    digests = {}
    for db in range(16):
        conn.call("SELECT", str(db))
        keys = sorted(parse(conn.call("KEYS", "*")))
        if not keys:
            continue
        streams = set(parse(conn.call("SCAN", "0", "COUNT", "1000000", "TYPE", "stream"))[1])
        replies = pipeline(conn, [c for k in keys for c in (["PEXPIRETIME", k], ["OBJECT", "ENCODING", k])])
        deadlines = {}
        for n, k in enumerate(keys):
            deadlines[k] = (parse(replies[2 * n]),)
            encodings[(db, k)] = parse(replies[2 * n + 1])
            if k in streams:
                deadlines[k] += (parse(conn.call("XINFO", "STREAM", k, "FULL", "COUNT", "0")),)
        out[f"db{db}"] = deadlines
        if values:
            digests.update(zip(((db, k) for k in keys), parse(conn.call("DEBUG", "DIGEST-VALUE", *keys)), strict=True))
    conn.call("SELECT", "0")
    out["functions"] = sorted(parse(conn.call("FUNCTION", "LIST", "WITHCODE")))  # in dict order
    out["encodings"] = encodings
    if values:
        out["values"] = digests
    return out


def same(got: dict[str, Any], want: dict[str, Any], got_conn: RawConnection | None = None,
         want_conn: RawConnection | None = None) -> list[Any]:
    """[] if `got` (a `state`) holds the dataset `want` does (encodings and per-key digests
    aside); else what differs, naming the keys whose values differ: per-key digests are asked
    for where a side lacks them and its server (`got_conn`, `want_conn`) is still there."""
    a, b = without(got, "encodings", "values"), without(want, "encodings", "values")
    if a == b:
        return []
    if "values" not in got and got_conn is not None:
        got = {**got, "values": state(got_conn, values=True)["values"]}
    if "values" not in want and want_conn is not None:
        want = {**want, "values": state(want_conn, values=True)["values"]}
    return differences(without(got, "encodings"), without(want, "encodings")) or ["?"]


def without(st: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in st.items() if k not in names}


def without_times(st: dict[str, Any], replayed: bool = False) -> dict[str, Any]:
    """`state` without the streams' clock readings (a consumer's seen-time, a PEL entry's
    delivery time), for two servers' clocks.  `replayed`: the state was rebuilt from replayed
    commands (a replica's stream, an AOF), where Redis 7.0 loses a group's entries-read, and so
    its lag: XREADGROUP goes out as XCLAIM ... LASTID, which leaves them unknown (redis-server's
    own replicas show entries-read nil as well)."""
    names = {b"seen-time"} | ({b"entries-read", b"lag"} if replayed else set())
    return _strip(st, frozenset(names))


def _first_difference(x: Any, y: Any, path: tuple[Any, ...] = ()) -> tuple[Any, ...]:
    """Where two nested replies first differ: (path of indexes, the two parts there, shortened)."""
    if isinstance(x, list | tuple) and isinstance(y, list | tuple):
        for i, (u, v) in enumerate(zip(x, y, strict=False)):  # the shorter's end, at worst
            if u != v:
                return _first_difference(u, v, (*path, i))
        return path, f"{len(x)} items", f"{len(y)} items"
    return path, reprlib.repr(x), reprlib.repr(y)


def differences(a: dict[str, Any], b: dict[str, Any], limit: int = 8) -> list[Any]:
    """The first keys whose state differs between `a` and `b`, each with where its parts first
    differ: a failure message to act on."""
    out: list[Any] = []
    for part in sorted(set(a) | set(b)):
        x, y = a.get(part), b.get(part)
        if isinstance(x, dict) and isinstance(y, dict):
            for k in sorted(set(x) | set(y), key=repr):
                if x.get(k) != y.get(k):
                    out.append((part, k, *_first_difference(x.get(k), y.get(k))))
        elif x != y:
            out.append((part, *_first_difference(x, y)))
    return out[:limit]


def loaded_state(start: Callable[..., ServerProcess], files: dict[str, str], *args: str,
                 loaded_text: str = "DB loaded from", want: dict[str, Any] | None = None) -> dict[str, Any]:
    """A fresh server (`start`: start_raxdb or start_redis) started with `args` in a directory
    holding copies of `files` (name there: source path; a source directory is copied whole), its
    `state` once it has loaded them; with the per-key digests too when it is not `want`."""
    d = tempfile.mkdtemp(prefix="snap-load-")
    try:
        for name, source in files.items():
            if os.path.isdir(source):
                shutil.copytree(source, os.path.join(d, name))
            else:
                shutil.copy(source, os.path.join(d, name))
        srv = start(*args, cwd=d)
        try:
            assert srv.wait_log(loaded_text), "".join(srv.log)
            conn = RawConnection(srv.port)
            try:
                got = state(conn)
                if want is not None and "values" in want and got["digest"] != want["digest"]:
                    got["values"] = state(conn, values=True)["values"]
                return got
            finally:
                conn.close()
        finally:
            srv.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def info(conn: RawConnection, section: str = "persistence") -> dict[str, str]:
    text = parse(conn.call("INFO", section)).decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def count_log(srv: ServerProcess, text: str) -> int:
    with srv._logged:
        return sum(text in line for line in srv.log)


def wait_count(srv: ServerProcess, text: str, n: int, timeout: float = 60.0) -> None:
    """Until `srv` has logged `n` lines containing `text`."""
    with srv._logged:
        ok = srv._logged.wait_for(lambda: sum(text in line for line in srv.log) >= n, timeout)
    assert ok, f"{srv.name} never logged {text!r} {n} times:\n" + "".join(srv.log[-30:])


def children(srv: ServerProcess) -> list[int]:
    """The server's child processes (a BGSAVE's or a rewrite's), from /proc."""
    pid = srv.proc.pid
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except FileNotFoundError:
        return []


class During:
    """Writes applied while a snapshot runs: `start` (BGSAVE, BGREWRITEAOF, or nothing when the
    snapshot was started otherwise) goes in one write with the first batch and an INFO behind
    them, so the batch reaches the server right after the fork; then a batch and an INFO at a
    time while INFO's `busy` line (e.g. b"rdb_bgsave_in_progress:1") says the snapshot runs, at
    most `max_batches`, `pace` seconds apart: spread over the snapshot, they change keys it has
    written already as well as keys it has not reached (all at once, they would all land in its
    first tenth).  `applied`: the batches sent (to replay on another server); `inside`: how
    many the INFO after them found the snapshot still running; `start_reply`."""

    def __init__(self, conn: RawConnection, start: Command | None, batches: Iterator[list[Command]],
                 busy: bytes, max_batches: int = 150, pace: float = 0.002) -> None:
        self.applied: list[list[Command]] = []
        self.inside = 0
        first = next(batches)
        cmds = ([start] if start else []) + first + [["INFO", "persistence"]]
        replies = pipeline(conn, cmds)
        self.start_reply = replies[0] if start else b""
        self.applied.append(first)
        running = busy in replies[-1]
        while running:
            self.inside += 1
            if len(self.applied) >= max_batches:
                break
            time.sleep(pace)  # pacing, not a wait: INFO says when the snapshot has ended
            batch = next(batches)
            running = busy in pipeline(conn, [*batch, ["INFO", "persistence"]])[-1]
            self.applied.append(batch)


def replay(conn: RawConnection, batches: list[list[Command]]) -> None:
    pipeline(conn, [c for b in batches for c in b])
