"""A command's latency histogram (server/table/registry.py): what note_latency counts is what
latency_histogram() reports, whichever store holds a value (compiled: a C array for the short
calls, the dict for the rest; interpreted: the dict), and reset_stats empties both.  Run in both
builds (`make test-pure`)."""

from __future__ import annotations

import random

import pytest

from raxdb.server.table import metadata
from raxdb.server.table.registry import Command

pytestmark = pytest.mark.pure


def _command() -> Command:
    meta = metadata.new("latencyprobe", arity=1, flags=("fast",), first_key=0, last_key=0, key_step=0,
                        acl_categories=("@fast",), summary="", since="7.0.0", group="generic", complexity="O(1)")
    return Command("latencyprobe", meta)


def test_every_duration_is_counted_by_whole_microseconds():
    cmd = _command()
    rnd = random.Random(7)
    # zero, both sides of the C array's bound (registry.LATENCY_SMALL, 16 us: a C-level name the
    # compiled module does not export), a clock that went back, long calls, and a spread across
    durations = ([0, 999, 1000, 15_999, 16_000, 16_999, -1, -2500, 10**9]
                 + [rnd.randrange(0, 40_000) for _ in range(2000)])
    expected: dict[int, int] = {}
    for ns in durations:
        cmd.note_latency(ns)
        us = ns // 1000
        expected[us] = expected.get(us, 0) + 1
    assert cmd.latency_histogram() == expected
    assert cmd.latency_histogram() == expected  # reading it changes nothing


def test_reset_empties_the_histogram():
    cmd = _command()
    for ns in (0, 3000, 16_005, 250_000):
        cmd.note_latency(ns)
    assert sum(cmd.latency_histogram().values()) == 4
    cmd.reset_stats()
    assert cmd.latency_histogram() == {}
    cmd.note_latency(2000)
    assert cmd.latency_histogram() == {2: 1}
