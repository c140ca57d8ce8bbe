"""server/memory/bigarrays.py: big growing arrays in mappings of their own (the RSS figures are in
docs/speed-log.md; speed is for benchmarks, not tests).  The hook is process-wide, so each test
installs it in a process of its own: a probe run by `python -c`, or a spawned server."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys

import pytest

from raxdb.server.base import compiled
from tests.support.diff import RawConnection, encode_command
from tests.support.servers import ServerProcess, server_pair, start_raxdb, start_redis

COMPILED = "raxdb.server.memory.bigarrays" not in compiled.interpreted_hot_modules()
needs_compiled = pytest.mark.skipif(not COMPILED, reason="interpreted, the hook does nothing")
needs_glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallinfo2 is glibc's")


def _probe(code: str, *args: str, xoptions: tuple[str, ...] = (), pythonmalloc: str = "") -> list[str]:
    env = {**os.environ, "PYTHONMALLOC": pythonmalloc} if pythonmalloc else None
    out = subprocess.run([sys.executable, *xoptions, "-c", code, *args], capture_output=True, text=True, check=True,
                         env=env)
    return out.stdout.split()


@pytest.mark.skipif(COMPILED, reason="compiled, installing would wrap this test process's allocator")
def test_interpreted_it_does_nothing():
    from raxdb.server.memory import bigarrays

    assert not bigarrays.install()
    assert bigarrays.stats() == (0, 0, 0)


_ARRAYS = r"""
import array, tracemalloc
from raxdb.server.memory import bigarrays

assert bigarrays.install() and not bigarrays.install()
items = []
for i in range(1_000_000):  # past BIG: moved once, then grown by mremap
    items.append(i)
ints = array.array("I")
for i in range(300_000):
    ints.append(i)
count, mapped, moves = bigarrays.stats()
assert count == 2 and moves == 2 and mapped >= 8 * 1_000_000 + 4 * 300_000, bigarrays.stats()
del items[500:]  # shrunk under BIG / 2: back to the previous allocator
assert items == list(range(500)) and bigarrays.stats()[0] == 1
tracemalloc.start()  # wraps this allocator; its stop puts it back
grown = [str(i) for i in range(100_000)]
traced = tracemalloc.get_traced_memory()[0]
tracemalloc.stop()
assert traced > 8 * 100_000 and bigarrays.stats()[0] == 2
fresh = array.array("q")
fresh.frombytes(b"\x01" * (8 * 100_000))  # from nothing to past BIG at once: a mapping, nothing copied
assert bigarrays.stats()[0] == 3 and fresh[99_999] == 0x0101010101010101
fresh.append(7)
assert fresh[100_000] == 7 and fresh[0] == 0x0101010101010101
del fresh
assert bigarrays.stats()[0] == 2
ints.extend(range(1_000_000))
assert sum(ints) == sum(range(300_000)) + sum(range(1_000_000)) and grown[99_999] == "99999"
del ints, grown
print(*bigarrays.stats())
"""


@needs_compiled
@pytest.mark.parametrize("pythonmalloc", ["", "malloc", "debug"])
def test_lists_and_arrays_grow_shrink_and_free_through_their_mappings(pythonmalloc):
    """Items survive each move (into a mapping, mremap, back to the heap), and a block had at once
    by a realloc from nothing lives in a mapping; a free unmaps; tracemalloc
    started and stopped with the hook installed leaves it in place.  Over pymalloc, over malloc
    itself, and over CPython's debug hooks (which abort on a block freed by the wrong allocator)."""
    count, mapped, moves = map(int, _probe(_ARRAYS, pythonmalloc=pythonmalloc))
    assert (count, mapped) == (0, 0) and moves == 4


@needs_compiled
def test_not_installed_under_tracemalloc():
    """tracemalloc's stop would put back the allocator it found, dropping this one."""
    code = "from raxdb.server.memory import bigarrays; print(bigarrays.install())"
    assert _probe(code, xoptions=("-X", "tracemalloc")) == ["False"]


# A probe's start: the server's thresholds, and glibc's heap figures (mallinfo2)
_HEAP = r"""
import ctypes
from raxdb.server.base import heap
from raxdb.server.memory import bigarrays
from raxdb.storage.keyspace import Database


class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]


libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
heap.keep_big_blocks()
"""

_KEYSPACE = _HEAP + r"""
import sys, time
if sys.argv[1] == "on":
    assert bigarrays.install()
n = 100_000
db = Database(0)
later = int(time.time() * 1000) + 10**9
before = libc.mallinfo2()
for ttl in (False, True, False, True):
    for i in range(n):
        db.set(b"key:%010d" % i, b"v" * 10, when_ms=later + i if ttl else -1)
    full = libc.mallinfo2()
    for i in range(n):
        assert db.delete(b"key:%010d" % i)
print((full.uordblks - before.uordblks) / n, (full.arena - before.arena) / n)
"""


@needs_compiled
@needs_glibc
def test_the_keyspace_arrays_leave_the_heap():
    """100,000 keys filled and deleted twice, with and without deadlines, under the server's
    thresholds: the heap's bytes in use and its size grow per key by a fraction of what they do
    without the hook (the keyspace's lists and arrays, and the holes their growth leaves)."""
    off_used, off_heap = map(float, _probe(_KEYSPACE, "off"))
    on_used, on_heap = map(float, _probe(_KEYSPACE, "on"))
    assert on_used < off_used / 2 and on_heap < off_heap / 2, (off_used, off_heap, on_used, on_heap)


_INDEX = _HEAP + r"""
assert bigarrays.install()
n = 200_000
db = Database(0)
before = libc.mallinfo2()
for i in range(n):
    db.set(b"key:%010d" % i, b"v" * 10, when_ms=-1)
after = libc.mallinfo2()
print((after.uordblks - before.uordblks) / n, db.count)
"""


@needs_compiled
@needs_glibc
def test_the_keyspace_index_and_tags_leave_the_heap():
    """200,000 keys (an index of 524,288 slots and its tags, 2.5 MiB: 13 bytes a key, made anew
    at each doubling): with the hook, made from nothing by a realloc, they live in mappings, and
    the heap's bytes in use grow by almost nothing a key."""
    used, count = map(float, _probe(_INDEX))
    assert count == 200_000 and used < 2, used


_HANG = 850.0  # s: under pytest-timeout's 900 (pyproject.toml), so a hung read fails with its traceback


def _pipelined(conn: RawConnection, commands: list[tuple]) -> bytes:
    """The replies to `commands`, sent in batches of 1,000."""
    out = []
    for at in range(0, len(commands), 1000):
        batch = commands[at:at + 1000]
        conn.send(b"".join(encode_command(c) for c in batch))
        out.extend(conn.read_frame() for _ in batch)
    return b"".join(out)


def _scenario() -> list[list[tuple]]:
    """Steps of commands, each step's replies compared as one."""
    n = 120_000
    keys = [b"key:%d" % i for i in range(n)]
    steps: list[list[tuple]] = []
    for extra in ((), (b"PX", b"100000000"), (), (b"EX", b"100000")):
        steps.append([(b"SET", k, b"v" * 10, *extra) for k in keys])
        steps.append([(b"DBSIZE",), (b"GET", keys[-1]), (b"PERSIST", keys[7])])
        steps.append([(b"DEL", *keys[at:at + 100]) for at in range(0, n, 100)] + [(b"DBSIZE",)])
    steps.append([(b"MSET", *[x for k in keys[at:at + 100] for x in (k, k)]) for at in range(0, n, 100)])
    steps.append([(b"DEBUG", b"RELOAD"), (b"DBSIZE",), (b"GET", keys[n // 2]), (b"FLUSHALL",), (b"DBSIZE",)])
    steps.append([(b"LPUSH", b"list", *[b"%d" % j for j in range(i, i + 1000)]) for i in range(0, 1_000_000, 1000)])
    steps.append([(b"SADD", b"set", *[b"m%d" % j for j in range(i, i + 1000)]) for i in range(0, 300_000, 1000)])
    steps.append([(b"HSET", b"hash", *[x for j in range(i, i + 500) for x in (b"f%d" % j, b"%d" % j)])
                  for i in range(0, 200_000, 500)])
    steps.append([(b"ZADD", b"zset", *[x for j in range(i, i + 500) for x in (b"%d" % j, b"z%d" % j)])
                  for i in range(0, 200_000, 500)])
    steps.append([(b"LLEN", b"list"), (b"SCARD", b"set"), (b"HLEN", b"hash"), (b"ZCARD", b"zset"),
                  (b"LINDEX", b"list", b"777777"), (b"ZRANGE", b"zset", b"150000", b"150004"),
                  (b"SISMEMBER", b"set", b"m299999"), (b"HGET", b"hash", b"f199999")])
    steps.append([(b"SORT", b"list", b"LIMIT", b"0", b"20"), (b"SORT", b"list", b"DESC", b"LIMIT", b"500000", b"5"),
                  (b"LTRIM", b"list", b"0", b"99"), (b"LLEN", b"list"), (b"LRANGE", b"list", b"95", b"-1"),
                  (b"RPUSH", b"list", *[b"%d" % j for j in range(50_000)]), (b"SORT", b"list", b"LIMIT", b"49990", b"20"),
                  (b"DEBUG", b"RELOAD"), (b"LLEN", b"list"), (b"SCARD", b"set"), (b"ZSCORE", b"zset", b"z123456"),
                  (b"FLUSHALL",), (b"DBSIZE",)])
    return steps


@needs_compiled
def test_a_server_with_the_hook_answers_as_redis():
    """Keys filled and deleted, with and without deadlines; DEBUG RELOAD, FLUSHALL; big lists, sets,
    hashes and sorted sets, a list shrunk by LTRIM, SORT of a big list: the same replies as
    redis-server's, from a spawned (compiled) server that logs the hook installed."""
    with server_pair("--loglevel", "verbose") as (ours, theirs):
        _hooked_answers_as_redis(ours, theirs, _scenario())


def _hooked_answers_as_redis(ours: ServerProcess, theirs: ServerProcess, steps: list[list[tuple]]) -> None:
    """`ours` (at loglevel verbose) installs the hook once it serves; then each step's replies are
    redis-server's."""
    # A reply may take raxdb seconds of CPU (SORT of the 1M list, DEBUG RELOAD of it all): the
    # reads wait as long as pytest-timeout lets the test run, so only a hang fails them (at load
    # 16-21 the first SORT's reply took 36.6 s to come, over the 30 s default's deadline)
    ours_conn, theirs_conn = RawConnection(ours.port, timeout=_HANG), RawConnection(theirs.port, timeout=_HANG)
    try:
        assert ours_conn.call(b"PING") == b"+PONG\r\n"
        assert ours.wait_log("Big growing arrays in mappings of their own.")
        for step in steps:
            assert _pipelined(ours_conn, step) == _pipelined(theirs_conn, step), step[0][:2]
    finally:
        ours_conn.close()
        theirs_conn.close()


def _written_by_redis(where, aof: bool) -> None:
    """A dataset redis-server writes into `where`: its dump file, or its AOF directory (the SET and
    SADD commands after an empty base).  Enough keys that the keyspace's arrays pass BIG as they load."""
    where.mkdir(exist_ok=True)
    writer = start_redis("--dir", str(where), *(("--appendonly", "yes") if aof else ()))
    try:
        conn = RawConnection(writer.port)
        strings = [(b"SET", b"key:%d" % i, b"v%d" % i, *((b"PX", b"100000000") if i % 3 == 0 else ()))
                   for i in range(60_000)]
        sets = [(b"SADD", b"s:%d" % i, *[b"%d" % (i * 10 + j) for j in range(10)]) for i in range(20_000)]
        _pipelined(conn, strings + sets + [(b"RPUSH", b"list", *[b"%d" % j for j in range(i, i + 1000)])
                                           for i in range(0, 100_000, 1000)])
        if not aof:
            assert conn.call(b"SAVE") == b"+OK\r\n"
        conn.close()
    finally:
        writer.stop()  # SIGTERM: the AOF written and synced


def _after_the_load() -> list[list[tuple]]:
    """Reads of every loaded key's kind, then writes over them, a DEBUG RELOAD, and reads again."""
    keys = [b"key:%d" % i for i in range(60_000)]
    return [
        [(b"DBSIZE",), (b"LLEN", b"list"), (b"LINDEX", b"list", b"77777"), (b"PERSIST", b"key:3"),
         (b"PERSIST", b"key:4")] + [(b"GET", k) for k in keys[::97]] + [(b"SMEMBERS", b"s:%d" % i)
                                                                          for i in range(0, 20_000, 333)],
        [(b"DEL", *keys[at:at + 100]) for at in range(0, 30_000, 100)] + [(b"DBSIZE",)],
        [(b"SET", b"new:%d" % i, b"n", *((b"EX", b"100000") if i % 2 else ())) for i in range(50_000)],
        [(b"SADD", b"s:%d" % i, b"x") for i in range(0, 20_000, 7)] + [(b"RPUSH", b"list", b"end"), (b"DBSIZE",)],
        [(b"DEBUG", b"RELOAD"), (b"DBSIZE",), (b"GET", b"key:59999"), (b"GET", b"new:49999"), (b"LLEN", b"list"),
         (b"SCARD", b"s:7"), (b"FLUSHALL",), (b"DBSIZE",)],
    ]


@needs_compiled
@pytest.mark.parametrize("source", ["rdb", "aof"])
def test_a_dataset_loaded_at_start_up_then_hooked_answers_as_redis(tmp_path, source):
    """A spawned (compiled) server loads its dump file or its AOF before the hook is installed
    (after the first PONG: the loaded arrays are glibc's blocks, some of them its own mappings),
    then every loaded key reads and writes, the arrays growing on through the hook, as in a
    redis-server that loaded the same files."""
    aof = source == "aof"
    _written_by_redis(tmp_path / "written", aof)
    for name in ("ours", "theirs"):
        shutil.copytree(tmp_path / "written", tmp_path / name)
    options = ("--appendonly", "yes") if aof else ()
    ours = start_raxdb("--dir", str(tmp_path / "ours"), "--loglevel", "verbose", *options)
    theirs = start_redis("--dir", str(tmp_path / "theirs"), *options)
    try:
        _hooked_answers_as_redis(ours, theirs, _after_the_load())
    finally:
        ours.stop()
        theirs.stop()


_EMBEDDED = r"""
import sys
import raxdb
from raxdb.server.memory import bigarrays
from tests.support.diff import RawConnection

with raxdb.serve({"enable-debug-command": "yes"}, mode="thread", dir=sys.argv[1]) as srv:
    conn = RawConnection(srv.port)
    print(conn.call("DBSIZE").decode().strip(), conn.call("DEBUG", "RELOAD").decode().strip())
    conn.close()
print(*bigarrays.stats())
"""


@needs_compiled
def test_an_embedded_server_never_installs_it(tmp_path):
    """A server in its caller's process (raxdb.serve's thread mode, as the pytest plugin's can
    be) loads a dump file and reloads it with the caller's allocator: nothing moved."""
    _written_by_redis(tmp_path, aof=False)
    out = _probe(_EMBEDDED, str(tmp_path))
    assert out == [":80001", "+OK", "0", "0", "0"]
