"""server/base/heap.py: a server process fixes glibc malloc's thresholds (the page-fault figures
are in docs/speed-log.md; speed is for benchmarks, not tests)."""

from __future__ import annotations

import platform

import pytest

from raxdb.server.base import heap


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's thresholds are glibc's")
def test_glibc_takes_the_thresholds():
    assert heap.keep_big_blocks()


_PROBE = r"""
import ctypes
from raxdb.server.base import heap

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = (ctypes.c_void_p,)


def rss():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:")) * 1024


def kept_after_free(size):
    block = libc.malloc(size)
    ctypes.memset(block, 1, size)  # every page faulted in
    before = rss()
    libc.free(block)
    return before - rss() < size // 2


assert heap.keep_big_blocks()
print(kept_after_free(1 << 20), kept_after_free(12 << 20))
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's thresholds are glibc's")
def test_a_freed_big_value_stays_and_a_freed_table_goes():
    """A 1 MB block (a big value's argument or reply) keeps its pages for the next one; a block
    of 12 MiB (a big table's array: 1.5M keys' list) gives them back at its free."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False"]


_PURGE_PROBE = _PROBE.split("assert heap.keep_big_blocks()")[0] + r"""
assert heap.keep_big_blocks()
blocks = [libc.malloc(64 << 10) for _ in range(512)]  # 32 MiB of heap, each block under the thresholds
for b in blocks:
    ctypes.memset(b, 1, 64 << 10)
for b in blocks[:-1]:  # the last one held: the freed space is a hole under it, not a trimmable top
    libc.free(b)
held = rss()
heap.purge()
print(held - rss() > (16 << 20))
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_memory_purge_gives_the_heaps_free_pages_back():
    """MEMORY PURGE's work (heap.purge): the free pages inside the heap go back to the system,
    where the trim threshold only ever gives back the heap's top."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _PURGE_PROBE], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True"]
