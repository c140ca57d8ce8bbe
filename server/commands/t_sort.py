"""SORT and SORT_RO (Redis's sort.c): sort a list, set or sorted set, numerically or ALPHA, by the
elements or by other keys (BY pattern), and return or STORE the elements or other keys (GET).

Order of work, as Redis does it, because it decides which error a client sees and which side
effects happen: options are parsed first (a syntax or LIMIT error comes before WRONGTYPE); then
the key is read; a sorted set is converted to a skiplist (SORT does that destructively in Redis, and
OBJECT ENCODING shows it); then the elements are loaded, their weights looked up, sorted, and the
reply or the stored list built.  A weight that is not a number is only reported after every weight
was looked up ("One or more scores can't be converted into double").

Patterns (`lookup_by_pattern`): "#" is the element itself; otherwise the first `*` is replaced by
the element and the key read as a string, or, with `->field` after the `*`, as a hash field.  The
pattern is searched as a C string (up to a NUL byte), as strchr/strstr do in Redis.  A BY pattern
without `*` means "don't sort": lists and sorted sets then keep their own order (reversed by DESC)
and LIMIT is taken as a range of it.  A set has no stable order, so with STORE or inside a script a
"don't sort" set is sorted ALPHA instead, as Redis does for replication.

Comparisons: numeric weights are C strtod over the whole value (leading blanks allowed, an empty
value is 0, overflow, underflow and NaN are errors); equal weights fall back to comparing the
elements' bytes, so the result is deterministic.  ALPHA compares bytes: Redis uses strcoll without
STORE, which is byte order under the C and C.UTF-8 locales it runs with here, stopping at a NUL;
with BY, missing weights sort first.  Ties left after that (ALPHA BY with equal or missing weights)
keep the load order, as glibc's merge-sort qsort does; Redis's partial sort for BY + LIMIT may order
such ties differently.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from raxdb.protocol import reply as R
from raxdb.server.base.errors import SYNTAX, WRONGTYPE, CommandError, c_str
from raxdb.server.base.numparse import C_SPACE, strtod_blanks
from raxdb.server.commands.pqsort import partial_qsort
from raxdb.server.events.keyaccess import (
    NOTIFY_GENERIC,
    NOTIFY_LIST,
    is_string,
    lookup_read,
    modified,
    notify,
    set_key,
)
from raxdb.server.table.args import option_word, to_int
from raxdb.server.table.registry import command
from raxdb.storage.hashfe import HashEx
from raxdb.storage.hashtype import Hash
from raxdb.storage.quicklist import Quicklist
from raxdb.storage.set_type import Intset, RSet, as_set
from raxdb.storage.zset import ZSet

if TYPE_CHECKING:
    from fractions import Fraction

_NOT_DOUBLE = "ERR One or more scores can't be converted into double"
_DBL_MIN = 2.2250738585072014e-308


def lookup_by_pattern(c, pattern: bytes, elem: bytes) -> bytes | bytearray | None:
    """lookupKeyByPattern: the value the pattern names for `elem`, or None."""
    cpat = c_str(pattern)
    if cpat == b"#":
        return elem
    star = cpat.find(b"*")
    if star < 0:
        return None
    arrow = cpat.find(b"->", star + 1)
    field = None
    end = len(pattern)
    if arrow >= 0 and arrow + 2 < len(cpat):
        field = pattern[arrow + 2:]
        end = arrow
    key = pattern[:star] + elem + pattern[star + 1:end]
    v = lookup_read(c, key)
    if v is None:
        return None
    if field is not None:
        return v.get(field) if v.__class__ is Hash or v.__class__ is HashEx else None
    return v if is_string(v) else None


def _weight(v: bytes | bytearray) -> float | None:
    """C strtod over the whole value (as far as a NUL), None where SORT reports an error."""
    s = c_str(bytes(v))
    d = strtod_blanks(s)
    if d is None or math.isnan(d):
        return None
    s = s.lstrip(C_SPACE)
    if not s:
        return d  # empty: 0, nothing converted and nothing to overflow
    if math.isinf(d) and b"inf" not in s.lower():
        return None  # overflow: ERANGE
    if abs(d) < _DBL_MIN and _exact_value(d) != _exact_value(s):
        return None  # glibc's ERANGE: the result underflowed and is not exact
    return d


def _exact_value(s: bytes | float) -> Fraction:
    """The number a strtod-syntax decimal or hex literal (or a float) spells, exactly.  fractions is
    imported here: only an underflowing score needs it, and start-up would pay for it."""
    from fractions import Fraction

    if isinstance(s, float):
        return Fraction(s)
    text = s.decode().lower()
    neg = text.startswith("-")
    text = text.lstrip("+-")
    if not text.startswith("0x"):
        return Fraction(-1 if neg else 1) * Fraction(text)
    mantissa, _, exp = text[2:].partition("p")
    whole, _, frac = mantissa.partition(".")
    value = Fraction(int(whole + frac or "0", 16)) * Fraction(2) ** (int(exp or "0") - 4 * len(frac))
    return -value if neg else value


def _reads_every_key(c, argv: list[bytes]) -> bool:
    """BY and GET patterns name keys no key spec declares: only a user who may read every key
    may use them (sortCommandGeneric's user_has_full_key_access)."""
    return c.user.free or c.user.reads_every_key(c.server.table.lookup(argv), argv)


def _sort(c, argv: list[bytes], readonly: bool) -> bytes | tuple[bytes, ...]:
    desc = alpha = dontsort = False
    limit_start, limit_count = 0, -1
    sortby: bytes | None = None
    store: bytes | None = None
    gets: list[bytes] = []
    j, argc = 2, len(argv)
    while j < argc:
        left = argc - j - 1
        word = option_word(argv[j])
        if word == b"asc":
            desc = False
        elif word == b"desc":
            desc = True
        elif word == b"alpha":
            alpha = True
        elif word == b"limit" and left >= 2:
            limit_start = to_int(argv[j + 1])
            limit_count = to_int(argv[j + 2])
            j += 2
        elif not readonly and word == b"store" and left >= 1:
            store = argv[j + 1]
            j += 1
        elif word == b"by" and left >= 1:
            sortby = argv[j + 1]
            dontsort = b"*" not in c_str(sortby)
            if not dontsort and not _reads_every_key(c, argv):
                raise CommandError(b"ERR BY option of SORT denied due to insufficient ACL permissions.")
            j += 1
        elif word == b"get" and left >= 1:
            if not _reads_every_key(c, argv):
                raise CommandError(b"ERR GET option of SORT denied due to insufficient ACL permissions.")
            gets.append(argv[j + 1])
            j += 1
        else:
            raise CommandError(SYNTAX)
        j += 1

    value = lookup_read(c, argv[1])
    if value.__class__ is Intset:
        value = as_set(value)
    cls = value.__class__
    if value is not None and cls is not Quicklist and cls is not RSet and cls is not ZSet:
        raise CommandError(WRONGTYPE)
    if dontsort and cls is RSet and (store is not None or c.is_script):
        dontsort, alpha, sortby = False, True, None
    if cls is ZSet and value.is_listpack():
        value.to_skiplist()

    n = 0 if value is None else len(value)
    start = min(max(limit_start, 0), n)
    count = min(max(limit_count, -1), n)
    end = n - 1 if count < 0 else start + count - 1
    if start >= n:
        start, end = n - 1, n - 2
    end = min(end, n - 1)

    if value is None:
        elems: list[bytes] = []
    elif dontsort and cls is not RSet:
        # Lists and sorted sets keep their own order: load just the LIMIT range of it.
        if cls is Quicklist:
            ordered = list(value.iter_reversed() if desc else value)
        else:
            ordered = [m for _, m in value]
            if desc:
                ordered.reverse()
        elems = ordered[start:end + 1] if end >= start else []
        start, end = 0, len(elems) - 1
    elif cls is Quicklist:
        elems = list(value)
    elif cls is RSet:
        elems = value.members()
    else:
        elems = value.members()

    if not dontsort:
        elems = _sorted(c, elems, sortby, alpha, desc, store is not None, start, end)

    picked = elems[start:end + 1] if end >= start else []
    found = [lookup_by_pattern(c, pattern, e) for e in picked for pattern in gets]
    if store is None:
        if not gets:
            return R.values(picked)
        null = c.enc.null
        return R.value_array([null if v is None else R.value(v) for v in found])

    out = [b"" if v is None else bytes(v) for v in found] if gets else picked
    db = c.db
    if out:
        ql = Quicklist()  # 7.0 builds it with quicklist's defaults, not list-max-listpack-size
        ql.extend_tail(out)
        set_key(c, store, ql)
        notify(c, NOTIFY_LIST, "sortstore", store)
        modified(c, store)
        c.server.dirty += len(out) - 1  # modified() counted one
    elif db.delete(store):
        notify(c, NOTIFY_GENERIC, "del", store)
        modified(c, store)
    return R.integer(len(out))


def _sorted(c, elems: list[bytes], sortby: bytes | None, alpha: bool, desc: bool, storing: bool,
            start: int, end: int) -> list[bytes]:
    if not alpha:
        bad = False
        keyed = []
        for e in elems:
            w = e if sortby is None else lookup_by_pattern(c, sortby, e)
            score = 0.0
            if w is not None:
                d = _weight(w)
                if d is None:
                    bad = True
                else:
                    score = d
            keyed.append((score, e))
        if bad:
            raise CommandError(_NOT_DOUBLE)
        keyed.sort(reverse=desc)  # equal weights: by the elements' bytes, a total order
        return [e for _, e in keyed]
    if sortby is None:
        # strcoll (no STORE) stops at a NUL; memcmp (STORE) does not.
        return sorted(elems, key=None if storing else c_str, reverse=desc)
    weights: list[bytes | None] = []
    for e in elems:
        w = lookup_by_pattern(c, sortby, e)
        weights.append(None if w is None else bytes(w) if storing else c_str(bytes(w)))
    if start != 0 or end != len(elems) - 1:
        # Redis sorts just enough for the LIMIT range here, and ties land where its quicksort puts them.
        sign = -1 if desc else 1

        def cmp(i: int, j: int) -> int:
            a, b = weights[i], weights[j]
            if a is None or b is None:
                r = (b is None) - (a is None)
            else:
                r = (a > b) - (a < b)
            return sign * r

        order = list(range(len(elems)))
        partial_qsort(order, cmp, start, end)
    else:
        # A full sort is glibc's qsort, a merge sort: ties keep the load order, as here.
        order = sorted(range(len(elems)), key=lambda i: (0, b"") if weights[i] is None else (1, weights[i]),
                       reverse=desc)
    return [elems[i] for i in order]


@command("sort")
def sort(c, argv):
    return _sort(c, argv, False)


@command("sort_ro")
def sort_ro(c, argv):
    return _sort(c, argv, True)
