"""The sorted-set value type (TYPE "zset") with Redis 7.0's two encodings.

Order.  Elements are ordered by (score, member), members compared as bytes (memcmp, then length) -
exactly Redis's skiplist and listpack order - so every range, rank and pop is a slice of one sorted
sequence of `(score, member)` pairs, `order`, and `scores` maps member -> score for O(1) ZSCORE.

Encodings.  "listpack" while there are at most zset-max-listpack-entries elements and no member is
longer than zset-max-listpack-value bytes; "skiplist" beyond, and never back (Redis 7.0 converts
back only when a *new* value is built by a STORE command: `ZSet.from_pairs`).  The two encodings
share the code; what differs is the `order` container:
- listpack: `_PairList`, a plain sorted Python list (bisect + list insert: for <= 128 elements
  the fastest structure CPython has, and the same O(n) insert as a listpack);
- skiplist: `sortedcontainers.SortedList` (O(log n) insert, delete, rank and index).
Both expose the same small interface (add, remove, bisect_left/right, indexing and slices, del of
a slice, islice), so swapping a container is local to `_convert`.

Bytes.  The real listpack bytes are observable only through DEBUG LISTPACK / DUMP-style consumers
and MEMORY USAGE, never on the hot path, so they are produced on demand by `listpack_bytes()`
(`storage.listpack`, Redis's byte format; a listpack's bytes depend only on its element sequence,
member then score: an integer when it is one, else Redis's d2string text).  Keeping a Python-native hot form is what lets ZADD
keep up with redis-server; re-encoding a byte listpack per write would not.  What the listpack form
changes observably is kept: integral scores are stored as integers, so -0.0 reads back as 0 (the
listpack encoding stores 0.0 where the skiplist keeps -0.0: ZSCORE prints "0" or "-0" as Redis
does) and ZSCAN of a listpack prints 1e17 as 100000000000000000 (`listpack_score_text`).

Lex ranges.  Redis documents BYLEX only for elements of equal score.  With mixed scores its answer
depends on the encoding's walk: the listpack walk is linear (first element >= min, then while
<= max) and is reproduced exactly for the listpack encoding; the skiplist walk depends on random
node levels, so there a binary search over members stands in (identical when scores are equal).
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterator
from operator import itemgetter

from sortedcontainers import SortedList

from storage.hashscan import ScanIndex
from storage.hashtype import _sds_alloc
from storage.quicklist import jemalloc_size

_member = itemgetter(1)
_INF = math.inf
_TWO62 = float(2**62)

# zadd() input flags and results (Redis's ZADD_IN_* / ZADD_OUT_*).
IN_INCR, IN_NX, IN_XX, IN_GT, IN_LT = 1, 2, 4, 8, 16
OUT_NOP, OUT_NAN, OUT_ADDED, OUT_UPDATED = 1, 2, 4, 8


def format_score(d: float) -> bytes:
    """Redis's d2string / %.17g text of a score (inf, -inf, -0 included)."""
    if d == _INF:
        return b"inf"
    if d == -_INF:
        return b"-inf"
    return b"%.17g" % d


def listpack_score(d: float) -> int | bytes:
    """How a listpack holds a score (zzlInsertAt): integral values within +-2^62 (double2ll) as
    integers, others as d2string text."""
    if -_TWO62 <= d <= _TWO62 and d == int(d):
        return int(d)
    return format_score(d)


def listpack_score_text(d: float) -> bytes:
    """The text a listpack score reads back as (ZSCAN of a listpack)."""
    v = listpack_score(d)
    return b"%d" % v if v.__class__ is int else v  # type: ignore[return-value]


class _PairList(list):
    """The listpack encoding's order: a sorted list with SortedList's method names."""

    __slots__ = ()

    def add(self, pair: tuple[float, bytes]) -> None:
        insort(self, pair)

    def remove(self, pair: tuple[float, bytes]) -> None:  # type: ignore[override]
        del self[bisect_left(self, pair)]

    def bisect_left(self, pair: tuple) -> int:
        return bisect_left(self, pair)

    def bisect_right(self, pair: tuple) -> int:
        return bisect_right(self, pair)

    def islice(self, start: int | None = None, stop: int | None = None, reverse: bool = False) -> Iterator:
        part = self[start:stop]
        return reversed(part) if reverse else iter(part)


class ScoreRange:
    """A parsed score interval (zrangespec): min, max and their exclusivity."""

    __slots__ = ("min", "minex", "max", "maxex")

    def __init__(self, lo: float, loex: bool, hi: float, hiex: bool) -> None:
        self.min, self.minex, self.max, self.maxex = lo, loex, hi, hiex

    def empty(self) -> bool:
        return self.min > self.max or (self.min == self.max and (self.minex or self.maxex))


# Lex range bounds: (kind, value) with kind -1 = "-" (below everything), 1 = "+" (above everything),
# 0 = a real string.  "-" and "+" are exclusive by definition, as in Redis.
class LexRange:
    __slots__ = ("minkind", "min", "minex", "maxkind", "max", "maxex")

    def __init__(self, minkind: int, lo: bytes, minex: bool, maxkind: int, hi: bytes, maxex: bool) -> None:
        self.minkind, self.min, self.minex = minkind, lo, minex
        self.maxkind, self.max, self.maxex = maxkind, hi, maxex

    def gte_min(self, v: bytes) -> bool:
        k = self.minkind
        if k:
            return k < 0
        return v > self.min if self.minex else v >= self.min

    def lte_max(self, v: bytes) -> bool:
        k = self.maxkind
        if k:
            return k > 0
        return v < self.max if self.maxex else v <= self.max

    def empty(self) -> bool:
        a, b = self.minkind, self.maxkind
        if a and a == b:
            cmp = 0
        elif a < 0 or b > 0:
            cmp = -1
        elif a > 0 or b < 0:
            cmp = 1
        else:
            cmp = (self.min > self.max) - (self.min < self.max)
        return cmp > 0 or (cmp == 0 and (self.minex or self.maxex))


class ZSet:
    type_name = "zset"
    __slots__ = ("scores", "order", "_scan")

    def __init__(self) -> None:
        self.scores: dict[bytes, float] = {}
        self.order: _PairList | SortedList = _PairList()
        self._scan: ScanIndex | None = None

    @classmethod
    def from_pairs(cls, pairs: list[tuple[float, bytes]], max_entries: int, max_value: int) -> ZSet:
        """A new value holding `pairs` (sorted, distinct members), encoded as ZUNIONSTORE & co
        leave it: built as a skiplist, then a listpack when it fits the limits."""
        z = cls()
        z.scores = {m: s for s, m in pairs}
        if len(pairs) > max_entries or any(len(m) > max_value for _, m in pairs):
            z.order = SortedList(pairs)
        else:
            if any(s == 0 for s, _ in pairs):
                pairs = [(0.0 if s == 0 else s, m) for s, m in pairs]
                z.scores = {m: s for s, m in pairs}
            z.order = _PairList(pairs)
        return z

    @classmethod
    def built_by_adds(cls, pairs: list[tuple[float, bytes]], listpack: bool, max_entries: int,
                      max_value: int) -> ZSet:
        """A new value made by adding `pairs` (distinct members) one by one, in the given order,
        to an empty listpack (or skiplist) value - ZRANGESTORE's way.  The order matters: members
        added while it is still a listpack lose a negative zero."""
        z = cls()
        if not listpack:
            z._convert()
        add = z.add
        for s, m in pairs:
            add(m, s, 0, max_entries, max_value)
        return z

    # ---- contract ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.scores)

    def is_listpack(self) -> bool:
        return self.order.__class__ is _PairList

    def encoding(self) -> str:
        return "listpack" if self.order.__class__ is _PairList else "skiplist"

    def copy(self) -> ZSet:
        z = ZSet()
        z.scores = self.scores.copy()
        z.order = self.order.copy() if self.order.__class__ is SortedList else _PairList(self.order)
        return z

    def mem_usage(self, samples: int = 5) -> int:
        """MEMORY USAGE's estimate: exact for a listpack (its allocation); for a skiplist the
        structures plus the average of the first `samples` elements (sds, dictEntry, a node of
        the average 1.33 levels) times the count."""
        if self.order.__class__ is _PairList:
            return 16 + jemalloc_size(len(self.listpack_bytes()))
        n = len(self.scores)
        # robj + zset + zskiplist + dict + table + the 32-level header node
        size = 16 + 16 + 32 + 56 + 8 * max(4, 1 << (n - 1).bit_length()) + jemalloc_size(24 + 32 * 16)
        if n:
            some = self.order[:max(1, samples)]
            size += int(sum(_sds_alloc(len(m)) + 24 + 48 for _, m in some) / len(some) * n)
        return size

    def listpack_bytes(self) -> bytes:
        """The listpack Redis would hold for this zset (member, score, member, score, ...)."""
        from storage.listpack import Listpack

        values: list[bytes | int] = []
        for s, m in self.order:
            values.append(m)
            values.append(listpack_score(s))
        return Listpack.from_values(values).bytes()

    def _convert(self) -> None:
        self.order = SortedList(self.order)

    # ---- updates -------------------------------------------------------------------------------
    def add(self, member: bytes, score: float, flags: int, max_entries: int, max_value: int
            ) -> tuple[int, float]:
        """Redis's zsetAdd: returns (OUT_* flag, resulting score)."""
        scores = self.scores
        cur = scores.get(member)
        if cur is not None:
            if flags & IN_NX:
                return OUT_NOP, cur
            if flags & IN_INCR:
                score += cur
                if score != score:
                    return OUT_NAN, cur
            if (flags & IN_LT and score >= cur) or (flags & IN_GT and score <= cur):
                return OUT_NOP, cur
            if score != cur:
                order = self.order
                if order.__class__ is _PairList and score == 0:
                    score = 0.0  # a listpack keeps d2string text: "-0" reads back as 0
                order.remove((cur, member))
                order.add((score, member))
                scores[member] = score
                return OUT_UPDATED, score
            return 0, score
        if flags & IN_XX:
            return OUT_NOP, 0.0
        order = self.order
        stored = score
        if order.__class__ is _PairList:
            if len(order) + 1 > max_entries or len(member) > max_value:
                self._convert()
                order = self.order
            elif score == 0:
                stored = 0.0  # see above: no negative zero in a listpack
        order.add((stored, member))
        scores[member] = stored
        self._scan = None
        return OUT_ADDED, score

    def delete(self, member: bytes) -> bool:
        score = self.scores.pop(member, None)
        if score is None:
            return False
        self.order.remove((score, member))
        self._scan = None
        return True

    def delete_slice(self, lo: int, hi: int) -> int:
        """Remove the elements at ranks [lo, hi); returns how many."""
        if hi <= lo:
            return 0
        order = self.order
        scores = self.scores
        for _, m in order[lo:hi]:
            del scores[m]
        del order[lo:hi]
        self._scan = None
        return hi - lo

    def pop(self, count: int, from_max: bool) -> list[tuple[float, bytes]]:
        """Remove and return up to `count` lowest (or highest) elements, in pop order."""
        order = self.order
        n = len(order)
        count = min(count, n)
        if from_max:
            taken = order[n - count:]
            taken.reverse()
            lo, hi = n - count, n
        else:
            taken = order[:count]
            lo, hi = 0, count
        scores = self.scores
        for _, m in taken:
            del scores[m]
        del order[lo:hi]
        self._scan = None
        return taken

    # ---- reads ---------------------------------------------------------------------------------
    def score(self, member: bytes) -> float | None:
        return self.scores.get(member)

    def rank(self, member: bytes, reverse: bool = False) -> int | None:
        s = self.scores.get(member)
        if s is None:
            return None
        r = self.order.bisect_left((s, member))
        return len(self.scores) - 1 - r if reverse else r

    def __iter__(self) -> Iterator[tuple[float, bytes]]:
        return iter(self.order)

    def rank_slice(self, start: int, stop: int) -> list[tuple[float, bytes]]:
        return self.order[start:stop]

    # score ranges: ranks [lo, hi) of the elements inside `r`
    def score_bounds(self, r: ScoreRange) -> tuple[int, int]:
        order = self.order
        if r.empty() or not order:
            return 0, 0
        if r.minex:
            lo = len(order) if r.min == _INF else order.bisect_left((math.nextafter(r.min, _INF),))
        else:
            lo = order.bisect_left((r.min,))
        if r.maxex:
            hi = order.bisect_left((r.max,))
        else:
            hi = len(order) if r.max == _INF else order.bisect_left((math.nextafter(r.max, _INF),))
        return lo, max(lo, hi)

    # lex ranges: Redis's zzl/zsl First/LastInLexRange
    def _lex_possible(self, r: LexRange) -> bool:
        order = self.order
        return bool(order) and not r.empty() and r.gte_min(order[-1][1]) and r.lte_max(order[0][1])

    def lex_first(self, r: LexRange) -> int | None:
        """Rank of the first element in the range (the walk's starting point), or None."""
        if not self._lex_possible(r):
            return None
        order = self.order
        if order.__class__ is _PairList:
            gte = r.gte_min
            for i, (_, m) in enumerate(order):
                if gte(m):
                    return i if r.lte_max(m) else None
            return None
        if r.minkind < 0:
            i = 0
        elif r.minex:
            i = bisect_right(order, r.min, key=_member)
        else:
            i = bisect_left(order, r.min, key=_member)
        if i >= len(order) or not r.lte_max(order[i][1]):
            return None
        return i

    def lex_last(self, r: LexRange) -> int | None:
        """Rank of the last element in the range (the reverse walk's starting point), or None."""
        if not self._lex_possible(r):
            return None
        order = self.order
        if order.__class__ is _PairList:
            lte = r.lte_max
            for i in range(len(order) - 1, -1, -1):
                m = order[i][1]
                if lte(m):
                    return i if r.gte_min(m) else None
            return None
        if r.maxkind > 0:
            i = len(order) - 1
        elif r.maxex:
            i = bisect_left(order, r.max, key=_member) - 1
        else:
            i = bisect_right(order, r.max, key=_member) - 1
        if i < 0 or not r.gte_min(order[i][1]):
            return None
        return i

    def lex_walk(self, r: LexRange, reverse: bool) -> Iterator[tuple[float, bytes]]:
        """The elements a lex range walk visits: from the first (last) in range while <= max
        (>= min)."""
        order = self.order
        if reverse:
            i = self.lex_last(r)
            if i is None:
                return
            ok = r.gte_min
            it = order.islice(0, i + 1, reverse=True)
        else:
            i = self.lex_first(r)
            if i is None:
                return
            ok = r.lte_max
            it = order.islice(i, None)
        for pair in it:
            if not ok(pair[1]):
                return
            yield pair

    def lex_count(self, r: LexRange) -> int:
        if self.order.__class__ is _PairList:
            return sum(1 for _ in self.lex_walk(r, False))
        first = self.lex_first(r)
        if first is None:
            return 0
        last = self.lex_last(r)
        return 0 if last is None or last < first else last - first + 1

    # ---- randomness ----------------------------------------------------------------------------
    def random_pair(self) -> tuple[float, bytes]:
        order = self.order
        return order[random.randrange(len(order))]

    def sample(self, k: int) -> list[tuple[float, bytes]]:
        order = self.order
        return [order[i] for i in random.sample(range(len(order)), k)]

    def choices(self, k: int) -> list[tuple[float, bytes]]:
        order = self.order
        n = len(order)
        if order.__class__ is _PairList:
            return random.choices(order, k=k)
        return [order[random.randrange(n)] for _ in range(k)]

    # ---- ZSCAN ---------------------------------------------------------------------------------
    def scan(self, cursor: int, count: int) -> tuple[int, list[bytes]]:
        """(next cursor, members); a listpack returns everything at once, as Redis does (print
        its scores with `listpack_score_text`)."""
        if self.order.__class__ is _PairList:
            return 0, [m for _, m in self.order]
        idx = self._scan
        if idx is None:
            idx = self._scan = ScanIndex(self.scores, len(self.scores))
        return idx.scan(cursor, count)
