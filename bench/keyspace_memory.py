"""Memory per key, and SAVE / load time, for every key shape: raxdb against redis-server.

Each row fills a fresh raxdb and a fresh redis-server (both started by tests/support/servers.py with
persistence off) with the same keys through pipelined batches, and reports the growth of each
process's resident set (VmRSS in /proc/<pid>/status) divided by the number of keys (or of members,
for the rows of one large collection).  RSS is what the machine gives each process, allocator
slack and fragmentation included, so both servers are measured the same way.  The `save` row times
SAVE of 1M string keys of 100 bytes and the start-up load of the file that SAVE wrote (the
server's own "DB loaded from disk" figure).

`--loaded`: each row's keys written once by redis-server (SAVE), then that dump file loaded at
start-up by each server: its resident set once settled, less that of the same server started
empty (its first use of the row's commands, then FLUSHALL, as the served rows' baseline), a key;
then the same after a DEBUG RELOAD.  Beside them raxdb's served figure of the same row.

    .venv/bin/python bench/keyspace_memory.py [--only hash10,save] [--scale 0.2] [--loaded]

Targets (issue #33): every row at most 1.5x of redis-server (strings with a TTL 1.7x), SAVE and
load at most 2x.  Not part of the test suite: it takes a few minutes and the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.diff import RawConnection, encode_command  # noqa: E402
from tests.support.servers import ServerProcess, start_raxdb, start_redis  # noqa: E402

Commands = Callable[[int], Iterator[tuple]]


def _strings(size: int, ttl: bool = False) -> Commands:
    value = b"v" * size
    extra = (b"EX", b"100000") if ttl else ()
    return lambda n: ((b"SET", b"key:%010d" % i, value, *extra) for i in range(n))


def _small(cmd: bytes, prefix: bytes, members: Callable[[int], list[bytes]]) -> Commands:
    return lambda n: ((cmd, prefix + b"%010d" % i, *members(i)) for i in range(n))


def _one_big(cmd: bytes, key: bytes, args: Callable[[int], tuple], per: int = 100) -> Commands:
    """Members added `per` at a time to one key (so the 1M-member rows send 10,000 commands)."""
    return lambda n: ((cmd, key, *[a for j in range(i, min(n, i + per)) for a in args(j)])
                      for i in range(0, n, per))


_HASH10 = [x for j in range(10) for x in (b"field:%d" % j, b"value:%d" % j)]
_ZSET10 = [x for j in range(10) for x in (b"%d" % j, b"member:%d" % j)]
_LIST10 = [b"item:%d" % j for j in range(10)]

# name -> (description, keys at scale 1, commands, count per command: key or member)
ROWS: dict[str, tuple[str, int, Commands, bool]] = {
    "string10": ("string, 10-byte value", 200_000, _strings(10), False),
    "string10ttl": ("string, 10-byte value, with a TTL", 200_000, _strings(10, ttl=True), False),
    "string100": ("string, 100-byte value", 1_000_000, _strings(100), False),
    "hash10": ("hash of 10 fields (listpack)", 200_000, _small(b"HSET", b"h:", lambda i: _HASH10), False),
    "zset10": ("sorted set of 10 (listpack)", 200_000, _small(b"ZADD", b"z:", lambda i: _ZSET10), False),
    "intset10": ("set of 10 integers (intset)", 200_000,
                 _small(b"SADD", b"s:", lambda i: [b"%d" % (i * 10 + j) for j in range(10)]), False),
    "list10": ("list of 10 (quicklist of one listpack)", 200_000, _small(b"RPUSH", b"l:", lambda i: _LIST10), False),
    "bighash": ("one hash, 1M fields (hashtable)", 1_000_000,
                _one_big(b"HSET", b"bighash", lambda j: (b"field:%d" % j, b"value:%d" % j)), True),
    "bigzset": ("one sorted set, 1M members (skiplist)", 1_000_000,
                _one_big(b"ZADD", b"bigzset", lambda j: (b"%d" % j, b"member:%d" % j)), True),
    "bigset": ("one set, 1M strings (hashtable)", 1_000_000,
               _one_big(b"SADD", b"bigset", lambda j: (b"member:%d" % j,)), True),
}


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def settled_rss(pid: int, still: float = 0.5, limit: float = 10.0) -> int:
    """The resident set once it has stayed the same for `still` seconds (at most `limit`): raxdb
    imports the command families it has not used yet in its first turns of service, then fixes
    malloc's thresholds and walks its tree for stale modules (server/main.py's `_ready`); a
    baseline taken while that runs counted part of it, and the thresholds' change, as the keys'."""
    rss = rss_bytes(pid)
    since = time.monotonic()
    deadline = since + limit
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = rss_bytes(pid)
        if now != rss:
            rss, since = now, time.monotonic()
        elif time.monotonic() - since >= still:
            break
    return rss


def fill(conn: RawConnection, commands: Iterator[tuple], batch: int = 1000) -> None:
    while True:
        chunk = [encode_command(c) for _, c in zip(range(batch), commands, strict=False)]
        if not chunk:
            return
        conn.send(b"".join(chunk))
        for _ in chunk:
            reply = conn.read_frame()
            if reply.startswith(b"-"):
                raise RuntimeError(f"command failed: {reply!r}")


def empty_baseline(conn: RawConnection, pid: int, commands: Commands, n: int) -> int:
    """The settled RSS of an empty server after a first use of the row's commands, undone: what
    a server makes on first use (a command family's module imported, its tables built) is not
    per key."""
    fill(conn, commands(min(n, 1000)))
    assert conn.call("FLUSHALL") == b"+OK\r\n"
    return settled_rss(pid)


def bytes_per_key(start: Callable[..., ServerProcess], commands: Commands, n: int) -> float:
    srv = start()
    try:
        conn = RawConnection(srv.port, timeout=600)
        before = empty_baseline(conn, srv.proc.pid, commands, n)
        fill(conn, commands(n))
        after = rss_bytes(srv.proc.pid)
        conn.close()
        return (after - before) / n
    finally:
        srv.stop()


def make_dump(commands: Commands, n: int) -> str:
    """A directory holding the dump.rdb redis-server saves of the row's `n` keys."""
    d = tempfile.mkdtemp(prefix="keyspace-dump-")
    srv = start_redis(cwd=d)
    try:
        conn = RawConnection(srv.port, timeout=600)
        fill(conn, commands(n))
        assert conn.call("SAVE") == b"+OK\r\n"
        conn.close()
    finally:
        srv.stop()
    return d


def loaded_bytes_per_key(start: Callable[..., ServerProcess], commands: Commands, n: int,
                         dump: str) -> tuple[float, float]:
    """RSS a key of a server that loaded `dump`'s dump.rdb (`n` keys) at start-up, and after a
    DEBUG RELOAD: both against the same server started empty (`empty_baseline`)."""
    srv = start()
    try:
        conn = RawConnection(srv.port, timeout=600)
        empty = empty_baseline(conn, srv.proc.pid, commands, n)
        conn.close()
    finally:
        srv.stop()
    d = tempfile.mkdtemp(prefix="keyspace-load-")
    shutil.copy(os.path.join(dump, "dump.rdb"), d)  # DEBUG RELOAD saves over it
    srv = start(cwd=d)
    try:
        conn = RawConnection(srv.port, timeout=600)
        # The same first use: it writes the first keys again with what they hold, the count stays
        fill(conn, commands(min(n, 1000)))
        assert conn.call("DBSIZE") == b":%d\r\n" % n
        loaded = settled_rss(srv.proc.pid)
        assert conn.call("DEBUG", "RELOAD") == b"+OK\r\n"
        reloaded = settled_rss(srv.proc.pid)
        conn.close()
    finally:
        srv.stop()
        shutil.rmtree(d)
    return (loaded - empty) / n, (reloaded - empty) / n


def loaded_rows(only: set[str], scale: float) -> None:
    print(f"{'key shape (loaded at start-up)':42} {'redis':>9} {'raxdb':>9} {'ratio':>7} {'reload r/x':>13} "
          f"{'served x':>9}")
    for name, (label, n, commands, big) in ROWS.items():
        if (only and name not in only) or big:
            continue
        n = max(1000, int(n * scale))
        dump = make_dump(commands, n)
        try:
            theirs = loaded_bytes_per_key(start_redis, commands, n, dump)
            ours = loaded_bytes_per_key(start_raxdb, commands, n, dump)
        finally:
            shutil.rmtree(dump)
        served = bytes_per_key(start_raxdb, commands, n)
        print(f"{label:42} {theirs[0]:9.1f} {ours[0]:9.1f} {ours[0] / theirs[0]:6.2f}x {theirs[1]:6.1f}/{ours[1]:6.1f} "
              f"{served:9.1f}", flush=True)


def save_and_load(start: Callable[..., ServerProcess], n: int) -> tuple[float, float]:
    """Seconds for SAVE of `n` 100-byte string keys, and for loading the file at start-up."""
    d = tempfile.mkdtemp(prefix="keyspace-bench-")
    srv = start(cwd=d)
    try:
        conn = RawConnection(srv.port, timeout=600)
        fill(conn, _strings(100)(n))
        t = time.perf_counter()
        assert conn.call("SAVE") == b"+OK\r\n"
        save_s = time.perf_counter() - t
    finally:
        srv.stop()
    srv = start(cwd=d)
    try:
        assert srv.wait_log("DB loaded from disk", 600)
        line = next(x for x in srv.log if "DB loaded from disk" in x)
        load_s = float(re.search(r"([\d.]+) seconds", line).group(1))  # type: ignore[union-attr]
    finally:
        srv.stop()
        os.remove(os.path.join(d, "dump.rdb"))
        os.rmdir(d)
    return save_s, load_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="comma-separated rows (%s, save)" % ", ".join(ROWS))
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every row's key count")
    ap.add_argument("--loaded", action="store_true", help="the rows' dump file loaded at start-up (module docstring)")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    if args.loaded:
        loaded_rows(only, args.scale)
        return
    print(f"{'key shape':42} {'redis':>9} {'raxdb':>9} {'ratio':>7}   (RSS growth, bytes per key or member)")
    for name, (label, n, commands, _) in ROWS.items():
        if only and name not in only:
            continue
        n = max(1000, int(n * args.scale))
        theirs = bytes_per_key(start_redis, commands, n)
        ours = bytes_per_key(start_raxdb, commands, n)
        print(f"{label:42} {theirs:9.1f} {ours:9.1f} {ours / theirs:6.2f}x", flush=True)
    if not only or "save" in only:
        n = max(1000, int(1_000_000 * args.scale))
        theirs = save_and_load(start_redis, n)
        ours = save_and_load(start_raxdb, n)
        for i, what in enumerate(("SAVE", "load at start-up")):
            label = f"{what}, {n:,} strings of 100 bytes (s)"
            print(f"{label:42} {theirs[i]:9.2f} {ours[i]:9.2f} {ours[i] / theirs[i]:6.2f}x", flush=True)


if __name__ == "__main__":
    main()
