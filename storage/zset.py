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
- skiplist: `_SkipOrder`, sorted sublists of at most 1000 pairs with their scores alongside
  (searches bisect in C; an insert or delete moves at most one sublist's pointers; a rank bisects
  prefix sums of the sublist lengths, rebuilt after a change of size).
Both expose the same small interface (add, remove, bisect_left/right, indexing and slices, del of
a slice, islice), so swapping a container is local to `_convert`.

Bytes.  The real listpack bytes are observable only through DEBUG LISTPACK / DUMP-style consumers
and MEMORY USAGE, never on the hot path, so they are produced on demand by `listpack_bytes()`
(`storage.listpack`, Redis's byte format; a listpack's bytes depend only on its element sequence,
member then score: an integer when it is one, else Redis's d2string text).  MEMORY USAGE needs only
their length: once asked for, it is kept (`lp_bytes`) by adding and subtracting the entry sizes
each change touches, so a write under maxmemory (which sizes what it wrote) costs no packing.  Keeping a Python-native hot form is what lets ZADD
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
from array import array
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator
from itertools import accumulate, chain, islice
from operator import itemgetter

from raxdb.storage.alloc import dict_table_bytes, sds_alloc_sum, size_class
from raxdb.storage.hashscan import ScanIndex
from raxdb.storage.listpack import Listpack
from raxdb.storage.lpcodec import LP_EMPTY, entry_size

_score = itemgetter(0)
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
    """The listpack encoding's order: a sorted list with _SkipOrder's method names."""

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


# Sublist sizes of the skiplist order: a sublist splits above 2 * _LOAD elements and is merged
# into a neighbour below _LOAD // 2.  An insert shifts half a sublist in two lists, a positional
# read after a change of size re-adds n / _LOAD lengths: 500 balances the two (the container's
# share of a ZADD costs 20% more at 1000 and 8% less at 250, where a rank read after a write on
# 1M elements would sum 2000 lengths instead of 1000).
_LOAD = 500
_HALF = _LOAD // 2


class _SkipOrder:
    """The skiplist encoding's order: sorted (score, member) pairs kept as sublists of about _LOAD
    scores (`_keys`) with their members alongside (`_members`); pairs are made when read.

    ZADD's searches bisect floats, a third of the cost of comparing (score, member) tuples,
    which dominated ZADD on a big set with sortedcontainers.SortedList (this replaced it), and
    fall back to bisecting members only inside a run of equal scores.  The scores are C doubles
    in `array("d")`s, not lists of float objects: a bisect probe into a list dereferences a float
    object somewhere on the heap, a cache miss per probe on a big set (measured: 12% of a live
    ZADD's CPU on 100k members), while an array's probes read one contiguous buffer.  No tuple
    per element and no float object per score save 80 bytes each.  `_maxes` holds each sublist's last pair, `_maxkeys` its score; positions
    come from prefix sums of the sublist lengths (`_offsets`), summed again on the first
    positional read after a change of size.
    Invariants: every sublist is non-empty and sorted by (score, member); `_maxes[k] ==
    (_keys[k][-1], _members[k][-1])`; `_maxkeys[k] == _keys[k][-1]`; `_len` is the total."""

    __slots__ = ("_keys", "_members", "_maxes", "_maxkeys", "_len", "_offsets")

    def __init__(self, pairs: Iterable[tuple[float, bytes]] = ()) -> None:
        items = sorted(pairs)
        chunks = [items[i:i + _LOAD] for i in range(0, len(items), _LOAD)]
        self._keys = [array("d", map(_score, c)) for c in chunks]
        self._members = [list(map(_member, c)) for c in chunks]
        self._maxes = [c[-1] for c in chunks]
        self._maxkeys = array("d", map(_score, self._maxes))
        self._len = len(items)
        self._offsets: list[int] | None = None

    def copy(self) -> _SkipOrder:
        new = _SkipOrder.__new__(_SkipOrder)
        new._keys = [keys[:] for keys in self._keys]
        new._members = [members.copy() for members in self._members]
        new._maxes = self._maxes.copy()
        new._maxkeys = self._maxkeys[:]
        new._len = self._len
        new._offsets = None
        return new

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[tuple[float, bytes]]:
        return chain.from_iterable(map(zip, self._keys, self._members))

    # ---- updates -------------------------------------------------------------------------------
    def _find(self, s: float, m: bytes) -> tuple[int, int]:
        """(sublist, index) of the first pair >= (s, m) (the sublist count if there is none)."""
        maxkeys = self._maxkeys
        k = bisect_left(maxkeys, s)
        if k < len(maxkeys) and maxkeys[k] == s:  # the run of equal scores may cross sublists
            k = bisect_left(self._maxes, (s, m), k)
        if k == len(maxkeys):
            return k, 0
        keys = self._keys[k]
        j = bisect_left(keys, s)
        if keys[j] == s:
            j = bisect_left(self._members[k], m, j, bisect_right(keys, s, j))
        return k, j

    def add(self, pair: tuple[float, bytes]) -> None:
        """Insert a pair whose member is not present."""
        s, m = pair
        maxkeys = self._maxkeys
        k = bisect_left(maxkeys, s)
        if k == len(maxkeys) or maxkeys[k] == s:  # at the end, or in a run of equal maxima
            self._add_at(s, m, *self._find(s, m))
            return
        # the common case: into a sublist whose maximum scores above s, searched here without
        # _find's handling of equal maxima
        keys = self._keys[k]
        j = bisect_left(keys, s)
        if keys[j] == s:
            j = bisect_left(self._members[k], m, j, bisect_right(keys, s, j))
        self._add_at(s, m, k, j)

    def _add_at(self, s: float, m: bytes, k: int, j: int) -> None:
        if k == len(self._keys):  # above every pair: the end of the last sublist
            if not k:
                self._keys.append(array("d", (s,)))
                self._members.append([m])
                self._maxes.append((s, m))
                self._maxkeys.append(s)
                self._len = 1
                self._offsets = None
                return
            k -= 1
            j = len(self._keys[k])
            self._maxes[k] = (s, m)
            self._maxkeys[k] = s
        keys = self._keys[k]
        keys.insert(j, s)
        self._members[k].insert(j, m)
        self._len += 1
        self._offsets = None
        if len(keys) > 2 * _LOAD:
            self._split(k)

    def remove(self, pair: tuple[float, bytes]) -> None:
        """Remove a pair that is present."""
        s, m = pair
        maxkeys = self._maxkeys
        k = bisect_left(maxkeys, s)
        if maxkeys[k] == s:  # possibly the maximum, or in a run of equal maxima
            k, j = self._find(s, m)
            keys = self._keys[k]
            members = self._members[k]
        else:  # the common case, inline: not its sublist's maximum
            keys = self._keys[k]
            members = self._members[k]
            j = bisect_left(keys, s)
            if members[j] != m:
                j = bisect_left(members, m, j, bisect_right(keys, s, j))
        del keys[j]
        del members[j]
        self._len -= 1
        self._offsets = None
        if len(keys) < _HALF or j == len(keys):
            self._fix(k)

    def _split(self, k: int) -> None:
        keys, members = self._keys[k], self._members[k]
        self._keys.insert(k + 1, keys[_LOAD:])
        self._members.insert(k + 1, members[_LOAD:])
        self._maxes.insert(k + 1, self._maxes[k])
        self._maxkeys.insert(k + 1, self._maxkeys[k])
        del keys[_LOAD:]
        del members[_LOAD:]
        self._maxes[k] = (keys[-1], members[-1])
        self._maxkeys[k] = keys[-1]

    def _fix(self, k: int) -> None:
        """Restore the invariants of sublist k after removals: drop it when empty, merge it into a
        neighbour when small, else refresh its maximum."""
        all_keys = self._keys
        keys = all_keys[k]
        if keys and (len(keys) >= _HALF or len(all_keys) == 1):
            self._maxes[k] = (keys[-1], self._members[k][-1])
            self._maxkeys[k] = keys[-1]
            return
        if keys:  # small: append it to the previous sublist (the first takes in the second)
            if k == 0:
                k = 1
            merged = all_keys[k - 1]
            merged.extend(all_keys[k])
            self._members[k - 1].extend(self._members[k])
            self._maxes[k - 1] = (merged[-1], self._members[k - 1][-1])
            self._maxkeys[k - 1] = merged[-1]
        del all_keys[k]
        del self._members[k]
        del self._maxes[k]
        del self._maxkeys[k]
        if keys and len(all_keys[k - 1]) > 2 * _LOAD:
            self._split(k - 1)

    # ---- positions -----------------------------------------------------------------------------
    def _locate(self, i: int) -> tuple[int, int]:
        """(sublist, index) of position i (0 <= i < len)."""
        o = self._offsets
        if o is None:
            o = self._offsets = list(accumulate(map(len, self._keys), initial=0))
        k = bisect_right(o, i) - 1
        return k, i - o[k]

    def _rank(self, k: int, j: int) -> int:
        if k == len(self._keys):
            return self._len
        o = self._offsets
        if o is None:
            o = self._offsets = list(accumulate(map(len, self._keys), initial=0))
        return o[k] + j

    def __getitem__(self, i):  # noqa: ANN001, ANN204 - an int or a slice, as a list
        if i.__class__ is slice:
            start, stop, step = i.indices(self._len)
            if step != 1:
                raise ValueError("slice step not supported")
            return self._slice(start, stop)
        n = self._len
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("index out of range")
        keys = self._keys[0]
        if i < len(keys):  # the lowest elements (ZRANGE 0 n, ZPOPMIN) need no prefix sums
            return keys[i], self._members[0][i]
        k, j = self._locate(i)
        return self._keys[k][j], self._members[k][j]

    def _slice(self, start: int, stop: int) -> list[tuple[float, bytes]]:
        if start >= stop:
            return []
        k, j = (0, start) if start < len(self._keys[0]) else self._locate(start)
        want = stop - start
        out = list(zip(self._keys[k][j:j + want], self._members[k][j:j + want], strict=True))
        while len(out) < want:
            k += 1
            rest = want - len(out)
            out.extend(zip(self._keys[k][:rest], self._members[k][:rest], strict=True))
        return out

    def __delitem__(self, i: slice) -> None:
        start, stop, step = i.indices(self._len)
        if step != 1:
            raise ValueError("slice step not supported")
        if start >= stop:
            return
        ka, ja = self._locate(start)
        kb, jb = self._locate(stop - 1)
        self._len -= stop - start
        self._offsets = None
        for parts in (self._keys, self._members):
            if ka == kb:
                del parts[ka][ja:jb + 1]
            else:
                del parts[kb][:jb + 1]
                del parts[ka][ja:]
                del parts[ka + 1:kb]
        if ka == kb:
            self._fix(ka)
            return
        del self._maxes[ka + 1:kb]
        del self._maxkeys[ka + 1:kb]
        self._fix(ka + 1)  # the later remainder first: fixing ka may shift it
        self._fix(ka)

    def bisect_left(self, pair: tuple) -> int:
        """Rank of the first pair >= `pair`; a 1-tuple (score,) comes before every pair of that
        score."""
        s = pair[0]
        if len(pair) == 1:
            k = bisect_left(self._maxkeys, s)
            return self._rank(k, 0 if k == len(self._keys) else bisect_left(self._keys[k], s))
        return self._rank(*self._find(s, pair[1]))

    def bisect_right(self, pair: tuple) -> int:
        """Rank of the first pair > `pair`."""
        if len(pair) == 1:
            return self.bisect_left(pair)
        s, m = pair
        k, j = self._find(s, m)
        if k < len(self._keys) and self._keys[k][j] == s and self._members[k][j] == m:
            return self._rank(k, j) + 1
        return self._rank(k, j)

    def islice(self, start: int | None = None, stop: int | None = None, reverse: bool = False) -> Iterator:
        """The pairs at positions [start, stop), lazily, ascending or descending."""
        start, stop, _ = slice(start, stop).indices(self._len)
        if start >= stop:
            return iter(())
        all_keys, all_members = self._keys, self._members
        if reverse:
            k, j = self._locate(stop - 1)
            head = zip(reversed(all_keys[k][:j + 1]), reversed(all_members[k][:j + 1]), strict=True)
            rest = map(zip, map(reversed, reversed(all_keys[:k])), map(reversed, reversed(all_members[:k])))
        else:
            k, j = self._locate(start)
            head = zip(all_keys[k][j:], all_members[k][j:], strict=True)
            rest = map(zip, all_keys[k + 1:], all_members[k + 1:])
        return islice(chain(head, chain.from_iterable(rest)), stop - start)


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


_SKIPLIST_HEADER = size_class(24 + 32 * 16)  # zslCreate's header node, of ZSKIPLIST_MAXLEVEL levels


def _pair_bytes(score: float, member: bytes) -> int:
    """Bytes a member and its score take in the listpack."""
    return entry_size(member) + entry_size(listpack_score_text(score))


class ZSet:
    type_name = "zset"
    __slots__ = ("scores", "order", "_scan", "lp_bytes")

    def __init__(self) -> None:
        self.scores: dict[bytes, float] = {}
        self.order: _PairList | _SkipOrder = _PairList()
        self._scan: ScanIndex | None = None
        # The listpack's entries' bytes, kept from the first MEMORY USAGE of a listpack value
        # on (accounting under maxmemory asks after every write; packing costs the whole set),
        # None while not asked for or once a skiplist.
        self.lp_bytes: int | None = None

    @classmethod
    def from_pairs(cls, pairs: list[tuple[float, bytes]], max_entries: int, max_value: int) -> ZSet:
        """A new value holding `pairs` (sorted, distinct members), encoded as ZUNIONSTORE & co
        leave it: built as a skiplist, then a listpack when it fits the limits."""
        z = cls()
        z.scores = {m: s for s, m in pairs}
        if len(pairs) > max_entries or any(len(m) > max_value for _, m in pairs):
            z.order = _SkipOrder(pairs)
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
        z.order = self.order.copy() if self.order.__class__ is _SkipOrder else _PairList(self.order)
        return z

    def mem_usage(self, samples: int = 5) -> int:
        """MEMORY USAGE's estimate: exact for a listpack (its allocation); for a skiplist the
        structures plus the average of the first `samples` elements (sds, dictEntry, a node of
        the average 1.33 levels) times the count."""
        if self.order.__class__ is _PairList:
            size = self.lp_bytes
            if size is None:
                size = self.lp_bytes = sum(_pair_bytes(s, m) for s, m in self.order)
            return 16 + size_class(LP_EMPTY + size)
        n = len(self.scores)
        # robj + zset + zskiplist + dict + table + the 32-level header node
        size = 16 + 16 + 32 + 56 + dict_table_bytes(n) + _SKIPLIST_HEADER
        if n:
            some = self.order[:max(1, samples)]
            k = len(some)
            size += int((sds_alloc_sum(map(len, map(_member, some))) + (24 + 48) * k) / k * n)
        return size

    def listpack_bytes(self) -> bytes:
        """The listpack Redis would hold for this zset (member, score, member, score, ...)."""
        values: list[bytes | int] = []
        for s, m in self.order:
            values.append(m)
            values.append(listpack_score(s))
        return Listpack.from_values(values).bytes()

    def _convert(self) -> None:
        self.order = _SkipOrder(self.order)
        self.lp_bytes = None

    def to_skiplist(self) -> None:
        """Convert a listpack value for good (SORT does, as Redis's zsetConvert)."""
        if self.order.__class__ is _PairList:
            self._convert()

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
                return OUT_UPDATED, self.move(member, cur, score)
            return 0, score
        if flags & IN_XX:
            return OUT_NOP, 0.0
        self.insert(member, score, max_entries, max_value)
        return OUT_ADDED, score

    def insert(self, member: bytes, score: float, max_entries: int, max_value: int) -> None:
        """zsetAdd's insertion of a member that is not in the set (converting to a skiplist
        first when the listpack limits would be exceeded)."""
        order = self.order
        if order.__class__ is _PairList:
            if len(order) + 1 > max_entries or len(member) > max_value:
                self._convert()
                order = self.order
            elif score == 0:
                score = 0.0  # a listpack keeps d2string text: "-0" reads back as 0
        order.add((score, member))
        self.scores[member] = score
        self._scan = None
        if self.lp_bytes is not None:
            self.lp_bytes += _pair_bytes(score, member)

    def move(self, member: bytes, cur: float, score: float) -> float:
        """zsetAdd's update: the member, now at score `cur`, gets `score` (!= cur); returns the
        score stored."""
        order = self.order
        if order.__class__ is _PairList and score == 0:
            score = 0.0  # see insert(): no negative zero in a listpack
        order.remove((cur, member))
        order.add((score, member))
        self.scores[member] = score
        if self.lp_bytes is not None:
            self.lp_bytes += _pair_bytes(score, member) - _pair_bytes(cur, member)
        return score

    def delete(self, member: bytes) -> bool:
        score = self.scores.pop(member, None)
        if score is None:
            return False
        self.order.remove((score, member))
        self._scan = None
        if self.lp_bytes is not None:
            self.lp_bytes -= _pair_bytes(score, member)
        return True

    def delete_slice(self, lo: int, hi: int) -> int:
        """Remove the elements at ranks [lo, hi); returns how many."""
        if hi <= lo:
            return 0
        order = self.order
        scores = self.scores
        gone = order[lo:hi]
        for _, m in gone:
            del scores[m]
        del order[lo:hi]
        self._scan = None
        self._forget(gone)
        return hi - lo

    def _forget(self, pairs: list[tuple[float, bytes]]) -> None:
        """Take removed pairs out of the kept listpack length."""
        if self.lp_bytes is not None:
            self.lp_bytes -= sum(_pair_bytes(s, m) for s, m in pairs)

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
        self._forget(taken)
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
