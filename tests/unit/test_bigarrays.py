"""server/memory/bigarrays.py: big growing arrays in mappings of their own (the RSS figures are in
docs/speed-log.md; speed is for benchmarks, not tests).  The hook is process-wide, so each test
installs it in a process of its own: a probe run by `python -c`, or a spawned server."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from raxdb.server.base import compiled
from tests.support.diff import RawConnection, encode_command
from tests.support.servers import server_pair

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
ints.extend(range(1_000_000))
assert sum(ints) == sum(range(300_000)) + sum(range(1_000_000)) and grown[99_999] == "99999"
del ints, grown
print(*bigarrays.stats())
"""


@needs_compiled
@pytest.mark.parametrize("pythonmalloc", ["", "malloc", "debug"])
def test_lists_and_arrays_grow_shrink_and_free_through_their_mappings(pythonmalloc):
    """Items survive each move (into a mapping, mremap, back to the heap); a free unmaps; tracemalloc
    started and stopped with the hook installed leaves it in place.  Over pymalloc, over malloc
    itself, and over CPython's debug hooks (which abort on a block freed by the wrong allocator)."""
    count, mapped, moves = map(int, _probe(_ARRAYS, pythonmalloc=pythonmalloc))
    assert (count, mapped) == (0, 0) and moves == 3


@needs_compiled
def test_not_installed_under_tracemalloc():
    """tracemalloc's stop would put back the allocator it found, dropping this one."""
    code = "from raxdb.server.memory import bigarrays; print(bigarrays.install())"
    assert _probe(code, xoptions=("-X", "tracemalloc")) == ["False"]


_KEYSPACE = r"""
import ctypes, sys, time
from raxdb.server.base import heap
from raxdb.server.memory import bigarrays
from raxdb.storage.keyspace import Database


class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]


libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
heap.keep_big_blocks()
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
        ours_conn, theirs_conn = RawConnection(ours.port), RawConnection(theirs.port)
        try:
            assert ours_conn.call(b"PING") == b"+PONG\r\n"
            assert ours.wait_log("Big growing arrays in mappings of their own.")
            for step in _scenario():
                assert _pipelined(ours_conn, step) == _pipelined(theirs_conn, step), step[0][:2]
        finally:
            ours_conn.close()
            theirs_conn.close()
