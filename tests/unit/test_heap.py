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
