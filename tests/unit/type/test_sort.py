"""SORT and SORT_RO, differentially against redis-server 7.0 (RESP2 and RESP3), and the partial
quicksort behind SORT ... BY ... LIMIT against Python's sort.

Replies over lists, intsets and sorted sets in "don't sort" mode are compared byte for byte; a
hashtable set has its own iteration order in each server, so unsorted replies over one are compared
as multisets.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raxdb.server.commands.pqsort import partial_qsort
from tests.unit.test_blocking import sc  # noqa: F401 - the two-server blocking scenario fixture
from tests.unit.test_notify import check, pair  # noqa: F401 - the notification servers fixture


def test_numeric_alpha_desc_and_limit(diff):
    diff("RPUSH", "l", "3", "10", "-1", "2.5", "1e1", "0x10", "-inf", "7")
    diff("SORT", "l")
    diff("SORT", "l", "DESC")
    diff("SORT", "l", "ALPHA")
    diff("SORT", "l", "alpha", "desc", "asc")
    for start, count in [(0, 3), (2, 2), (-5, 2), (6, 10), (8, 1), (100, 5), (0, -1), (3, -7), (0, 0), (-1, -1)]:
        diff("SORT", "l", "LIMIT", start, count)
        diff("SORT", "l", "LIMIT", start, count, "DESC", "ALPHA")
    diff("SORT", "missing")
    diff("SORT", "missing", "LIMIT", "0", "1", "STORE", "dst")
    diff("RPUSH", "words", "banana", "apple", "cherry", "apple")
    diff("SORT", "words")
    diff("SORT", "words", "ALPHA")


def test_numeric_weights_are_c_strtod(diff):
    # Leading blanks are skipped and an empty weight is 0; trailing junk, NaN, overflow and an
    # inexact underflow fail (glibc sets ERANGE for those).
    for good in [" 1", "\t2", "", "0x1A", "-0", "1e308", "inf", "-Infinity", "1.5e-300", "+3", ".5",
                 "0x1p-1074", "-0x1.8p-1073", "0x.8p-1070", "0e-400"]:  # exact subnormals are no underflow
        diff("DEL", "l")
        diff("RPUSH", "l", "2", good, "1")
        diff("SORT", "l")
    for bad in ["1 ", "abc", "nan", "1e400", "-1e400", " ", "1e-400", "1e-310", "0x", "1.2.3",
                "0x3p-1076", "0x1p-1075"]:
        diff("DEL", "l")
        diff("RPUSH", "l", "2", bad, "1")
        diff("SORT", "l")
        diff("SORT", "l", "ALPHA")


def test_by_patterns(diff):
    diff.script("""
        RPUSH l a b c d e
        MSET w_a 3 w_b 1 w_c 2 w_e 0
        HSET h_a f 30 g x
        HSET h_b f 10
        HSET h_c f 20
        SET h_d notahash
        SORT l BY w_*
        SORT l BY w_* DESC
        SORT l BY h_*->f
        SORT l BY h_*->f DESC LIMIT 1 2
        SORT l BY h_*->g ALPHA
        SORT l BY w_*-> ALPHA
        SORT l BY nosort
        SORT l BY nosort DESC
        SORT l BY nosort LIMIT 1 2
        SORT l BY nosort DESC LIMIT 1 3
        SORT l BY nosort LIMIT 10 3
        SORT l BY w_* GET #
        SORT l BY w_* GET # GET w_* GET h_*->f GET nosuch_* GET h_d
        SORT l BY w_* GET h_*->
        SORT l GET w_* ALPHA LIMIT 0 2
        SET w_d junk
        SORT l BY w_*
        SORT l BY w_* ALPHA
        RPUSH w_list_a 1
        SORT l BY w_list_* GET w_list_*
    """)


def test_alpha_by_ties_and_missing_weights(diff):
    # Equal or missing ALPHA weights leave the order to the sort algorithm: glibc's merge sort for
    # a full sort, Redis's own partial quicksort with LIMIT.  Sizes cover insertion sort (< 7),
    # median of three, and the ninther (> 40).
    rng = random.Random(7)
    for n in (6, 20, 41, 90):
        diff("DEL", "l")
        elems = [f"e{rng.randrange(3 * n)}" for _ in range(n)]
        diff("RPUSH", "l", *elems)
        for e in sorted(set(elems)):
            if rng.random() < 0.6:
                diff("SET", f"w_{e}", rng.choice(["x", "y", "", "x\0a", "x\0b"]))
        for _ in range(8):
            start, count = rng.randrange(-1, n), rng.randrange(-1, n)
            for order in ("ASC", "DESC"):
                diff("SORT", "l", "BY", "w_*", "ALPHA", order)
                diff("SORT", "l", "BY", "w_*", "ALPHA", order, "LIMIT", start, count)
                diff("SORT", "l", "BY", "w_*", "ALPHA", order, "LIMIT", start, count, "STORE", "dst")
                diff("LRANGE", "dst", "0", "-1")


def test_store(diff):
    diff.script("""
        RPUSH l 3 1 2
        SET dst old EX 100
        SORT l STORE dst
        TYPE dst
        TTL dst
        LRANGE dst 0 -1
        OBJECT ENCODING dst
        SORT l GET # GET nosuch_* STORE dst
        LRANGE dst 0 -1
        SORT l LIMIT 5 1 STORE dst
        EXISTS dst
        SORT l LIMIT 5 1 STORE dst
        SORT l STORE a STORE b
        EXISTS a b
        SORT l STORE l DESC
        LRANGE l 0 -1
        CONFIG SET list-max-listpack-size 2
        RPUSH big 5 4 3 2 1
        SORT big STORE dst
        OBJECT ENCODING dst
        MEMORY USAGE dst
        CONFIG SET list-max-listpack-size -2
        CONFIG SET list-compress-depth 1
        CONFIG SET list-max-listpack-size 4
        RPUSH many 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30
        SORT many STORE dst
        MEMORY USAGE dst
        MEMORY USAGE many
        CONFIG SET list-compress-depth 0
        CONFIG SET list-max-listpack-size -2
    """)


def test_sets_and_sorted_sets(diff):
    diff.script("""
        SADD ints 5 -2 9 0
        SORT ints
        SORT ints BY nosort
        SORT ints BY nosort DESC LIMIT 1 2
        SORT ints BY nosort STORE dst
        LRANGE dst 0 -1
        SADD words pear fig apple
        SORT words ALPHA
        SORT words ALPHA DESC LIMIT 0 2
        SORT words
        SORT words BY nosort STORE dst
        LRANGE dst 0 -1
        ZADD z 3 c 1 a 2 b 2 bb
        OBJECT ENCODING z
        SORT z BY nosort
        OBJECT ENCODING z
        SORT z BY nosort DESC
        SORT z BY nosort LIMIT 1 2
        SORT z BY nosort DESC LIMIT 1 2
        SORT z ALPHA
        SORT z ALPHA DESC LIMIT 0 3
        ZADD zn 1 10 2 9 3 8
        SORT_RO zn
        OBJECT ENCODING zn
    """)
    diff.unordered("SORT", "words", "BY", "nosort")


def test_set_without_sort_is_sorted_in_scripts(diff):
    # A set has no stable order, so a script gets the ALPHA order instead (as with STORE).
    diff("SADD", "s", "pear", "fig", "apple", "kiwi")
    diff("EVAL", "return redis.call('SORT', KEYS[1], 'BY', 'nosort')", "1", "s")
    diff("EVAL", "return redis.call('SORT_RO', KEYS[1], 'BY', 'nosort', 'DESC')", "1", "s")


def test_errors(diff):
    diff.script("""
        SET str x
        HSET h f v
        XADD st 1-1 f v
        RPUSH l 1 2
        SORT str
        SORT h
        SORT st
        SORT l LIMIT
        SORT l LIMIT 1
        SORT l LIMIT x 1
        SORT l LIMIT 1 x
        SORT l LIMIT 1 2 3
        SORT l BY
        SORT l GET
        SORT l STORE
        SORT l FOO
        SORT str FOO
        SORT str LIMIT x 1
        SORT_RO l STORE dst
        SORT_RO str
        SORT
        SORT_RO
        RPUSH bad 1 x
        SORT bad
        SORT bad STORE dst
        EXISTS dst
        SORT bad LIMIT 0 1
    """)


def test_getkeys_and_command_info(diff):
    diff("COMMAND", "GETKEYS", "SORT", "k")
    diff("COMMAND", "GETKEYS", "SORT", "k", "STORE", "d")
    diff("COMMAND", "GETKEYS", "SORT", "k", "STORE", "d", "LIMIT", "0", "1", "store", "e")
    diff("COMMAND", "GETKEYS", "SORT", "k", "GET", "store", "BY", "store")
    diff("COMMAND", "GETKEYS", "SORT_RO", "k", "BY", "x")
    diff("COMMAND", "INFO", "sort", "sort_ro")


def test_store_wakes_blocked_pop_and_invalidates_watch(sc):  # noqa: F811
    sc.call("w", "RPUSH", "src", "2", "1")
    sc.call("watcher", "WATCH", "dst")
    sc.block("b", "BLPOP", "dst", "0")
    sc.call("w", "SORT", "src", "STORE", "dst")
    sc.read("b")
    sc.call("w", "LRANGE", "dst", "0", "-1")
    sc.call("watcher", "MULTI")
    sc.call("watcher", "PING")
    sc.call("watcher", "EXEC")


@pytest.mark.oracle
def test_store_events(pair):  # noqa: F811
    check(pair, [
        ("RPUSH", "l", "2", "1"), ("SORT", "l", "STORE", "dst"), ("SORT", "l", "LIMIT", "9", "1", "STORE", "dst"),
        ("SORT", "l", "LIMIT", "9", "1", "STORE", "dst"), ("SORT", "l"),
    ])


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.integers(0, 6), max_size=120), data=st.data())
def test_partial_qsort_sorts_the_range(values, data):
    # With a total order, the range must hold what a full sort puts there, whatever the ties.
    n = len(values)
    lo = data.draw(st.integers(0, max(n - 1, 0)))
    hi = data.draw(st.integers(lo - 1, max(n - 1, 0)))
    items = list(enumerate(values))

    def cmp(x, y):
        return (x[1] > y[1]) - (x[1] < y[1]) or (x[0] > y[0]) - (x[0] < y[0])

    v = items[:]
    partial_qsort(v, cmp, lo, hi)
    assert sorted(v) == sorted(items)
    assert v[lo:hi + 1] == sorted(items, key=lambda p: (p[1], p[0]))[lo:hi + 1]
