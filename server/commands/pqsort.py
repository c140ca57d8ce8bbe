"""The partial quicksort SORT ... BY ... LIMIT uses in Redis, step for step.

Why a hand-written sort in Python: SORT ALPHA BY can compare two elements as equal (equal or
missing weights), and then the order of the reply is whatever the sort algorithm leaves.  For a
full sort Redis calls glibc's qsort, a stable merge sort, which Python's own sort matches.  With a
LIMIT range and a BY pattern it calls its own partial quicksort instead, and to give the same reply
raxdb must make the same moves.

The algorithm is Bentley and McIlroy's ("Engineering a Sort Function", 1993), as the BSD libcs
ship it: median-of-three pivot (ninther above 40 elements), a three-way partition that parks the
keys equal to the pivot at both ends and swaps them back into the middle, insertion sort below 7
elements.  Redis's one addition is the range: a part that lies wholly before `lo` or wholly after
`hi` is left unsorted.  (Later Redis versions also switch to insertion sort when a partition pass
swapped nothing; 7.0 does not, and ties come out differently with that switch, so it is left out.)

`cmp(x, y)` returns a negative, zero or positive int, like a C comparator; the list is sorted in
place and only positions lo..hi are guaranteed to hold what a full sort would put there.
"""

from __future__ import annotations

from collections.abc import Callable
from math import isnan
from typing import Any

Cmp = Callable[[Any, Any], int]


def partial_qsort(v: list[Any], cmp: Cmp, lo: int, hi: int) -> None:
    _sort(v, 0, len(v), cmp, lo, hi)


def first_by_key(v: list[Any], key: Callable[[Any], float], n: int, reverse: bool, cmp: Cmp) -> list[Any]:
    """v with its first n places as partial_qsort(v, cmp, 0, n - 1) leaves them, for a `cmp` that
    compares key(x) (a float) as C compares doubles, descending when `reverse`; the places after
    n in no particular order.  When each key in those n places is held by one element only, every
    correct sort puts the same elements there, so Python's sort (in C) stands in for the
    quicksort's interpreted moves; with a tie there (or a NaN anywhere, which no sort orders) the
    quicksort runs, since its moves decide which of the equal elements comes first."""
    if any(map(isnan, map(key, v))):
        partial_qsort(v, cmp, 0, n - 1)
        return v
    ordered = sorted(v, key=key, reverse=reverse)
    keys = list(map(key, ordered[:n + 1]))
    for i in range(min(n, len(keys) - 1)):
        if keys[i] == keys[i + 1]:
            partial_qsort(v, cmp, 0, n - 1)
            return v
    return ordered


def _insertion_sort(v: list[Any], a: int, n: int, cmp: Cmp) -> None:
    for m in range(a + 1, a + n):
        k = m
        while k > a and cmp(v[k - 1], v[k]) > 0:
            v[k - 1], v[k] = v[k], v[k - 1]
            k -= 1


def _median3(v: list[Any], i: int, j: int, k: int, cmp: Cmp) -> int:
    x, y, z = v[i], v[j], v[k]
    if cmp(x, y) < 0:
        return j if cmp(y, z) < 0 else (k if cmp(x, z) < 0 else i)
    return j if cmp(y, z) > 0 else (i if cmp(x, z) < 0 else k)


def _swap_blocks(v: list[Any], i: int, j: int, n: int) -> None:
    for t in range(n):
        v[i + t], v[j + t] = v[j + t], v[i + t]


def _outside(start: int, n: int, lo: int, hi: int) -> bool:
    """True when the range lo..hi lies wholly before or wholly after the part start..start+n-1."""
    return (lo < start and hi < start) or (lo >= start + n and hi >= start + n)


def _sort(v: list[Any], a: int, n: int, cmp: Cmp, lo: int, hi: int) -> None:
    while True:
        if n < 7:
            _insertion_sort(v, a, n, cmp)
            return
        pm = a + n // 2
        if n > 7:
            pl, pn = a, a + n - 1
            if n > 40:
                d = n // 8
                pl = _median3(v, pl, pl + d, pl + 2 * d, cmp)
                pm = _median3(v, pm - d, pm, pm + d, cmp)
                pn = _median3(v, pn - 2 * d, pn - d, pn, cmp)
            pm = _median3(v, pl, pm, pn, cmp)
        v[a], v[pm] = v[pm], v[a]
        pivot = v[a]
        # v[a+1:pa] and v[pd+1:a+n] hold keys equal to the pivot, v[pa:pb] smaller, v[pc+1:pd+1] larger.
        pa = pb = a + 1
        pc = pd = a + n - 1
        while True:
            while pb <= pc:
                r = cmp(v[pb], pivot)
                if r > 0:
                    break
                if r == 0:
                    v[pa], v[pb] = v[pb], v[pa]
                    pa += 1
                pb += 1
            while pb <= pc:
                r = cmp(v[pc], pivot)
                if r < 0:
                    break
                if r == 0:
                    v[pc], v[pd] = v[pd], v[pc]
                    pd -= 1
                pc -= 1
            if pb > pc:
                break
            v[pb], v[pc] = v[pc], v[pb]
            pb += 1
            pc -= 1
        end = a + n
        r = min(pa - a, pb - pa)
        _swap_blocks(v, a, pb - r, r)
        r = min(pd - pc, end - pd - 1)
        _swap_blocks(v, pb, end - r, r)
        r = pb - pa  # the smaller keys, now at the front
        if r > 1 and not _outside(a, r, lo, hi):
            _sort(v, a, r, cmp, lo, hi)
        r = pd - pc  # the larger keys, now at the back: loop instead of recursing
        if r <= 1:
            return
        a, n = end - r, r
        if _outside(a, n, lo, hi):
            return
