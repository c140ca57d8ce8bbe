"""server/base/heap.py: a server process fixes glibc malloc's thresholds (the page-fault figures
are in docs/speed-log.md; speed is for benchmarks, not tests)."""

from __future__ import annotations

import platform

import pytest

from raxdb.server.base import heap


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's thresholds are glibc's")
def test_glibc_takes_the_thresholds():
    assert heap.keep_big_blocks()
