"""The sorted-set value type (TYPE "zset") with Redis 7.0's two encodings.

Order.  Elements are ordered by (score, member), members compared as bytes (memcmp, then length) -
exactly Redis's skiplist and listpack order - so every range, rank and pop is a slice of one sorted
sequence of (score, member) pairs.

Encodings.  A `ZSet` holds one of two representations, and `lp is None` says which:
- listpack (`lp`, a `bytes`): Redis's listpack, byte for byte - member, score, member, score, ...
  in that order, each member as lpInsertString stores it (a canonical integer string as an
  integer) and each score as zzlInsertAt writes it: an integer when integral within +-2^62
  (double2ll), else d2string's %.17g text.  The bytes ARE the value: DUMP, RDB and MEMORY USAGE
  read them as they are, loading keeps the payload it was given, and every command works on them
  the way t_zset.c's zzl* functions do (`zzl_find`, `zzl_insert`, `zzl_delete_range`, ranges walking
  the entries), building a new `bytes` where Redis reallocs and moves the tail.  An integral score
  stored as an integer reads back without its sign of zero, so -0 becomes 0 in a listpack (ZSCORE
  prints "0") while the skiplist keeps -0, as Redis does.
- skiplist (`sk`, a `_Skiplist`): a dict member -> score (ZSCORE in O(1)) beside `_SkipOrder`, sorted
  sublists of at most 1000 pairs with their scores in C-double arrays (searches bisect in C; an
  insert or delete moves at most one sublist's pointers; a rank bisects prefix sums of the sublist
  lengths).

"listpack" while there are at most zset-max-listpack-entries elements and no member is longer than
zset-max-listpack-value bytes (and the listpack stays under lpSafeToAdd's 1 GiB); "skiplist" beyond,
and never back: Redis 7.0 converts back only when a *new* value is built by a STORE command
(`ZSet.from_pairs`).  The limits are the caller's, read from the config at write time.

Scores in replies.  A listpack's score entry is already its reply's text when zzlInsertAt wrote
it: a string entry holds d2string's %.17g text (inf/-inf included), which is exactly what
addReplyDouble prints of the value read back, and an integer entry's digits are what the reply
writer makes of an integral double (protocol/reply.py `scored_members`).  So the readers for
replies (`zzl_pairs` / `zzl_picked` with `texts`, `zzl_score_text`) hand a string score on as its
bytes, parsed and formatted by nobody, and the reply writers copy them (7.2's spelling parses
them).  A listpack loaded from a payload another writer made may hold other text for the same
value ("1.50", "+3", " 1", "1e5"): `from_listpack` checks every string score once and, when one
is not d2string's text of its value, marks the value (`sk` is `_OTHER_TEXT` instead of None while
`lp` holds it), and its replies read floats as before, until a conversion or a rebuild.

Invariants.  A listpack's pairs are sorted and its members distinct (a loaded payload that is not
sorted is re-encoded sorted, see `from_listpack`); its header counts its elements as Redis keeps the
count (65535 = unknown, counted again by `__len__`, which writes the count back as lpLength does).
Exactly one of `lp` and `sk` is set, but for the `_OTHER_TEXT` mark beside a listpack.

The byte walks.  The functions on listpack bytes (zzl_*, and the entry readers `_next`, `_int_at`,
`_score_at`, `_entry_bytes`) read Redis's listpack layout, which storage/listpack.py defines and
writes (`encode_entry`, `Listpack.from_values`, `checked_values` for validation).  They are here,
not calls into that module, because they run once per entry of every lookup: compiled (setup.py
HOT_MODULES, with the C types of zset.pxd) each is a few instructions on a `const unsigned char *`,
where a call into another module per entry would cost more than the whole walk.  Interpreted, the
same source indexes the `bytes` object.

Lex ranges.  Redis documents BYLEX only for elements of equal score.  With mixed scores its answer
depends on the encoding's walk: the listpack walk is linear (first element >= min, then while
<= max) and is reproduced exactly for the listpack encoding; the skiplist walk depends on random
node levels, so there a binary search over members stands in (identical when scores are equal).
"""

from __future__ import annotations

import math
import random
import struct
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from itertools import accumulate, chain, islice
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from raxdb.storage.alloc import SIZERS, dict_table_bytes, sds_alloc_first, size_class
from raxdb.storage.hashscan import ScanIndex
from raxdb.storage.listpack import (
    Listpack,
    distinct_indexes,
    encode_entry,
    encode_int_entry,
    encode_str_entry,
    group_offsets,
    grown_count,
    random_indexes,
    spliced,
    string_to_int,
)

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False, cclass=lambda cls: cls, no_gc=lambda cls: cls)

if not cython.compiled:  # compiled, zset.pxd cimports them: zzl_insert's in-place writers, and
    # CPython's untrack (a new sublist's)
    from raxdb.storage.listpack import encoded_size, int_entry_size, put_entry, put_int, put_str, with_gap
    from raxdb.storage.rax import untrack

_score = itemgetter(0)
_member = itemgetter(1)
_INF = math.inf
_TWO62 = float(2**62)

# zadd() input flags and results (Redis's ZADD_IN_* / ZADD_OUT_*).
IN_INCR, IN_NX, IN_XX, IN_GT, IN_LT = 1, 2, 4, 8, 16
OUT_NOP, OUT_NAN, OUT_ADDED, OUT_UPDATED = 1, 2, 4, 8

_HDR = 6  # a listpack's header: total bytes (u32), element count (u16)
_EOF = 0xFF
_UNKNOWN = 65535  # the header's count once saturated
_EMPTY_LP = b"\x07\x00\x00\x00\x00\x00\xff"
_SAFETY = 1 << 30  # LISTPACK_MAX_SAFETY_SIZE: lpSafeToAdd refuses to grow a listpack past it


def format_score(d: float) -> bytes:
    """Redis's d2string / %.17g text of a score (inf, -inf, -0 included)."""
    if d == _INF:
        return b"inf"
    if d == -_INF:
        return b"-inf"
    return b"%.17g" % d


def _integral(score: float) -> bool:
    """Whether zzlInsertAt stores the score as an integer entry (double2ll's test)."""
    return -_TWO62 <= score <= _TWO62 and score % 1.0 == 0.0


def listpack_score(d: float) -> int | bytes:
    """How a listpack holds a score (zzlInsertAt): integral values within +-2^62 (double2ll) as
    integers, others as d2string text."""
    if _integral(d):
        return int(d)
    return format_score(d)


# ---- reading listpack entries ------------------------------------------------------------------
# `s` is the listpack's bytes (compiled: a pointer into them), `p` the offset of an entry.
def _backlen_size(n: int) -> int:
    """Bytes of the back-length of an entry whose encoding and data take n bytes."""
    if n <= 127:
        return 1
    if n < 16383:
        return 2
    if n < 2097151:
        return 3
    if n < 268435455:
        return 4
    return 5


def _next(s: bytes, p: int) -> int:  # s: bytes, or a C pointer once compiled (zset.pxd)
    """The offset just past the entry at p (encoding, data and back-length)."""
    b = s[p]
    if b < 0x80:  # 7-bit integer
        return p + 2
    if b < 0xC0:  # string of up to 63 bytes
        return p + (b & 0x3F) + 2
    if b < 0xE0:  # 13-bit integer
        return p + 3
    if b < 0xF0:  # string of up to 4095 bytes: a body of at most 4097, a back-length of 1 or 2
        n = (((b & 0x0F) << 8) | s[p + 1]) + 2
        return p + n + (1 if n <= 127 else 2)
    if b == 0xF0:  # 32-bit string length
        n = (s[p + 1] | (s[p + 2] << 8) | (s[p + 3] << 16) | (s[p + 4] << 24)) + 5
        return p + n + _backlen_size(n)
    if b == 0xF1:  # 16, 24, 32 and 64-bit integers
        return p + 4
    if b == 0xF2:
        return p + 5
    if b == 0xF3:
        return p + 6
    return p + 10


def _is_str(b: int) -> bool:
    """Whether an entry whose first byte is b holds a string (else an integer)."""
    return 0x80 <= b < 0xC0 or 0xE0 <= b <= 0xF0


def _str_start(s: bytes, p: int) -> int:
    """Where the data of the string entry at p starts."""
    b = s[p]
    if b < 0xC0:
        return p + 1
    if b < 0xF0:
        return p + 2
    return p + 5


def _str_len(s: bytes, p: int) -> int:
    """The length of the string entry at p."""
    b = s[p]
    if b < 0xC0:
        return b & 0x3F
    if b < 0xF0:
        return ((b & 0x0F) << 8) | s[p + 1]
    return s[p + 1] | (s[p + 2] << 8) | (s[p + 3] << 16) | (s[p + 4] << 24)


def _int_at(s: bytes, p: int) -> int:
    """The value of the integer entry at p.  Built from signed high bytes and unsigned low ones,
    so that the same arithmetic is exact in Python and in C's 64-bit integers."""
    b = s[p]
    if b < 0x80:
        return b
    if b < 0xE0:
        v = ((b & 0x1F) << 8) | s[p + 1]
        return v - 8192 if v >= 4096 else v
    if b == 0xF1:
        hi = s[p + 2]
        if hi >= 128:
            hi -= 256
        return hi * 256 + s[p + 1]
    if b == 0xF2:
        hi = s[p + 3]
        if hi >= 128:
            hi -= 256
        return (hi * 256 + s[p + 2]) * 256 + s[p + 1]
    # The 32- and 64-bit entries built the same way, from the signed top byte down.  No literal
    # here is 2^31 or more: compiled, Cython makes such a literal a Python int, and the arithmetic
    # around it Python arithmetic (64-bit scores, such as millisecond timestamps, are common).
    if b == 0xF3:
        hi = s[p + 4]
        if hi >= 128:
            hi -= 256
        return ((hi * 256 + s[p + 3]) * 256 + s[p + 2]) * 256 + s[p + 1]
    hi = s[p + 8]
    if hi >= 128:
        hi -= 256
    hi = ((hi * 256 + s[p + 7]) * 256 + s[p + 6]) * 256 + s[p + 5]
    lo = s[p + 4]  # widened first: compiled, s[i] * 256 would be a C int
    lo = ((lo * 256 + s[p + 3]) * 256 + s[p + 2]) * 256 + s[p + 1]
    return hi * 65536 * 65536 + lo


def _score_at(s: bytes, p: int) -> float:
    """The score held by the entry at p (zzlGetScore): an integer, or text read as strtod reads
    it (the text was checked when the listpack was loaded)."""
    if _is_str(s[p]):
        q = _str_start(s, p)
        return float(s[q:q + _str_len(s, p)])
    return float(_int_at(s, p))


def _reply_score_at(s: bytes, p: int) -> float | bytes:
    """The score held by the entry at p as a reply reads it (zset's docstring, "Scores in
    replies"): a string entry's own bytes (d2string's text of the value), an integer's value as a
    float (whose digits the reply writer puts in C)."""
    if _is_str(s[p]):
        q = _str_start(s, p)
        return s[q:q + _str_len(s, p)]
    return float(_int_at(s, p))


def _entry_bytes(s: bytes, p: int) -> bytes:
    """The entry at p as Redis replies with it: a string as it is, an integer in decimal."""
    if _is_str(s[p]):
        q = _str_start(s, p)
        return s[q:q + _str_len(s, p)]
    return b"%d" % _int_at(s, p)


_pack_header = struct.Struct("<IH").pack  # total bytes, element count


# ---- the listpack encoding: t_zset.c's zzl* functions ----------------------------------------------
def zzl_length(lp: bytes) -> int:
    """Elements (members and scores) in the listpack, counted when the header does not know."""
    n = lp[4] | (lp[5] << 8)
    if n != _UNKNOWN:
        return n
    s = lp
    n = 0
    p = _HDR
    while s[p] != _EOF:
        p = _next(s, p)
        n += 1
    return n


def zzl_find(lp: bytes, member: bytes, want_rank: bool = False) -> int:
    """zzlFind: the offset of `member`'s entry (or, with want_rank, its rank), -1 when absent.
    Members compare as lpCompare does: a string entry by its bytes, an integer entry by value
    against the member read as an integer.  The common entries (a short string or a 7-bit
    integer member, a 7-bit or 13-bit integer or a short text score) are stepped over inline."""
    s = lp
    n = len(member)
    last = member[n - 1] if n else 0
    isint = False
    iv = 0
    if n and (member[0] == 45 or 48 <= member[0] <= 57):  # "-" or a digit: maybe an integer
        v = string_to_int(member)
        if v is not None:
            isint = True
            iv = v
    rank = 0
    p = _HDR
    while True:
        b = s[p]
        if 0x80 <= b < 0xC0:  # a string of up to 63 bytes
            ln = b & 0x3F
            if ln == n and (n == 0 or (s[p + n] == last and _same(s, p + 1, member, n))):
                return rank if want_rank else p
            p += ln + 2
        elif b < 0x80:  # a 7-bit integer
            if isint and b == iv:
                return rank if want_rank else p
            p += 2
        elif b == _EOF:
            return -1
        else:
            if _is_str(b):
                if _str_len(s, p) == n:
                    q = _str_start(s, p)
                    if s[q + n - 1] == last and _same(s, q, member, n):
                        return rank if want_rank else p
            elif isint and _int_at(s, p) == iv:
                return rank if want_rank else p
            p = _next(s, p)
        b = s[p]  # the score
        if b < 0x80:
            p += 2
        elif b < 0xE0:
            p += 3 if b >= 0xC0 else (b & 0x3F) + 2
        else:
            p = _next(s, p)
        rank += 1


def _same(s: bytes, q: int, member: bytes, n: int) -> bool:
    """Whether the n bytes at q are `member`'s."""
    for i in range(n):
        if s[q + i] != member[i]:
            return False
    return True


def zzl_score(lp: bytes, p: int) -> float:
    """The score of the member whose entry is at p."""
    s = lp
    return _score_at(s, _next(s, p))


def zzl_score_text(lp: bytes, p: int) -> float | bytes:
    """zzl_score for a reply: a string score as its bytes (`_reply_score_at`)."""
    s = lp
    return _reply_score_at(s, _next(s, p))


def zzl_texts_canonical(lp: bytes) -> bool:
    """Whether every string score entry holds d2string's text of its value (format_score of the
    value read back), so that replies may copy them: true of every listpack written here, checked
    once for a loaded one (from_listpack)."""
    s = lp
    p = _HDR
    while s[p] != _EOF:
        q = _next(s, p)
        if _is_str(s[q]):
            t = _entry_bytes(s, q)
            if format_score(float(t)) != t:
                return False
        p = _next(s, q)
    return True


def _insert_at(s: bytes, member: bytes, score: float, skip: int) -> int:
    """zzlInsert's walk: the offset of the first pair scoring higher than `score`, or as high
    with a greater member (the terminator's offset if none), passing over the pair at `skip`.
    A short string member and a small integer score are read inline."""
    p = _HDR
    while True:
        b = s[p]
        if b == _EOF:
            return p
        q = p + (b & 0x3F) + 2 if 0x80 <= b < 0xC0 else _next(s, p)
        if p != skip:
            b = s[q]
            if b < 0x80:
                sc: float = b  # a C double (zset.pxd)
            elif 0xC0 <= b < 0xE0:
                sc = _int_at(s, q)
            else:
                sc = _score_at(s, q)
            if sc > score or (sc == score and _entry_after(s, p, member)):
                return p
        b = s[q]
        if b < 0x80:
            p = q + 2
        elif b < 0xE0:
            p = q + (3 if b >= 0xC0 else (b & 0x3F) + 2)
        else:
            p = _next(s, q)


def _entry_after(s: bytes, p: int, member: bytes) -> bool:
    """Whether the entry at p, as text (an integer in decimal), sorts after `member` in memcmp
    order, the longer one after when one is the other's start: `_entry_bytes(s, p) > member`
    without making the bytes (members of equal score, such as jobs completed in the same
    millisecond, are compared at each step of an insert's walk)."""
    n = len(member)
    if _is_str(s[p]):
        q = _str_start(s, p)
        ln = _str_len(s, p)
        for i in range(ln if ln < n else n):
            if s[q + i] != member[i]:
                return s[q + i] > member[i]
        return ln > n
    v = _int_at(s, p)
    i = 0
    if v < 0:
        if n == 0:
            return True
        if member[0] != 45:  # "-"
            return 45 > member[0]
        i = 1
        u = -(v + 1)  # |v| - 1, which fits int64 even for its minimum
        u += 1
    else:
        u = v
    pw = 1
    while u // pw >= 10:
        pw *= 10
    while pw:
        if i >= n:
            return True  # member is a start of the entry's digits
        c = 48 + (u // pw) % 10
        if c != member[i]:
            return c > member[i]
        i += 1
        pw //= 10
    return False  # the entry's text is member itself or its start


def _score_entry(score: float) -> bytes:
    """The entry zzlInsertAt writes for a score: an integer when integral within +-2^62
    (double2ll), else d2string's text (which never reads as an integer)."""
    if _integral(score):
        return encode_int_entry(int(score))
    return encode_str_entry(format_score(score))


def zzl_insert(lp: bytes, member: bytes, score: float) -> bytes:
    """zzlInsert: the listpack with (member, score) added in order (`member` is not in it)."""
    p = _insert_at(lp, member, score, -1)
    if cython.compiled:  # the two entries written into the new listpack: no entry objects, no join
        size = encoded_size(member)
        if _integral(score):
            x = cython.cast(cython.longlong, score)
            out = with_gap(lp, p, p, size + int_entry_size(x), grown_count(lp, 2))
            d = cython.cast(cython.p_uchar, cython.cast(cython.p_char, out))
            put_int(d, put_entry(d, p, member), x)
        else:
            text = format_score(score)  # %.17g text: under 64 bytes, a 6-bit string entry
            out = with_gap(lp, p, p, size + len(text) + 2, grown_count(lp, 2))
            d = cython.cast(cython.p_uchar, cython.cast(cython.p_char, out))
            put_str(d, put_entry(d, p, member), text, len(text))
        return out
    return spliced(lp, p, p, encode_entry(member) + _score_entry(score), 2)


def zzl_update(lp: bytes, p: int, member: bytes, score: float) -> bytes:
    """zsetAdd's zzlDelete + zzlInsert of the member whose entry is at p, with a new score, in one
    walk and one new listpack.  The member's entry is re-encoded, as zzlInsert encodes it, unless
    it already is that encoding: a short string that does not read as an integer, or a 7-bit
    integer (a payload from elsewhere may hold a member in another)."""
    s = lp
    n = len(lp)
    q = _next(s, p)
    end = _next(s, q)
    at = _insert_at(s, member, score, p)
    b = s[p]
    if b < 0x80 or (b < 0xC0 and (not member or not (member[0] == 45 or 48 <= member[0] <= 57))):
        if at == p or at == end:  # the same place: only the score's entry changes
            return spliced(lp, q, end, _score_entry(score), 0)
        pair = s[p:q] + _score_entry(score)
    else:
        pair = encode_entry(member) + _score_entry(score)
        if at == p or at == end:
            return spliced(lp, p, end, pair, 0)
    head = _pack_header(n - (end - p) + len(pair), grown_count(lp, 0))
    if at < p:
        return b"".join((head, s[_HDR:at], pair, s[at:p], s[end:n]))
    return b"".join((head, s[_HDR:p], s[end:at], pair, s[at:n]))


def zzl_delete(lp: bytes, p: int) -> bytes:
    """zzlDelete: the listpack without the pair whose member entry is at p."""
    s = lp
    return spliced(lp, p, _next(s, _next(s, p)), b"", -2)


def _seek(s: bytes, rank: int) -> int:
    """The offset of the member entry of `rank` (or of the terminator past the last pair)."""
    p = _HDR
    while rank > 0:
        b = s[p]
        if b == _EOF:
            break
        p = p + (b & 0x3F) + 2 if 0x80 <= b < 0xC0 else _next(s, p)
        b = s[p]
        if b < 0x80:
            p += 2
        elif b < 0xE0:
            p += 3 if b >= 0xC0 else (b & 0x3F) + 2
        else:
            p = _next(s, p)
        rank -= 1
    return p


def zzl_delete_range(lp: bytes, start: int, stop: int) -> bytes:
    """zzlDeleteRangeByRank: the listpack without the pairs of ranks [start, stop)."""
    s = lp
    a = _seek(s, start)
    b = a
    n = 0
    while n < stop - start and s[b] != _EOF:
        b = _next(s, _next(s, b))
        n += 1
    return spliced(lp, a, b, b"", -2 * n)


def zzl_pairs(lp: bytes, start: int = 0, stop: int = -1, texts: bool = False) -> list[tuple[Any, bytes]]:
    """The (score, member) pairs of ranks [start, stop) (stop -1: to the end), in order; with
    `texts`, the scores as a reply reads them (`_reply_score_at`: a string score as its bytes)."""
    s = lp
    p = _seek(s, start)
    out = []
    n = stop - start if stop >= 0 else -1
    while n != 0 and s[p] != _EOF:
        q = _next(s, p)
        out.append((_reply_score_at(s, q) if texts else _score_at(s, q), _entry_bytes(s, p)))
        p = _next(s, q)
        n -= 1
    return out


def zzl_picked(lp: bytes, ranks: list[int], texts: bool = False) -> list[tuple[Any, bytes]]:
    """The (score, member) pairs at `ranks` (any order, repeats allowed), in that order: the
    listpack walked once (listpack.group_offsets) and only the pairs picked decoded; `texts` as
    zzl_pairs's."""
    s = lp
    out = []
    for p in group_offsets(lp, 2, ranks):
        q = _next(s, p)
        out.append((_reply_score_at(s, q) if texts else _score_at(s, q), _entry_bytes(s, p)))
    return out


def zzl_score_bounds(lp: bytes, lo: float, loex: bool, hi: float, hiex: bool) -> tuple[int, int]:
    """Ranks [first, last + 1) of the run zzlFirstInRange finds and ZCOUNT walks: from the first
    element scoring above the minimum, while it scores within the maximum."""
    s = lp
    rank = 0
    p = _HDR
    while s[p] != _EOF:
        q = _next(s, p)
        sc = _score_at(s, q)
        if sc > lo or (not loex and sc == lo):
            break
        p = _next(s, q)
        rank += 1
    first = rank
    while s[p] != _EOF:
        q = _next(s, p)
        sc = _score_at(s, q)
        if sc > hi or (hiex and sc == hi):
            break
        p = _next(s, q)
        rank += 1
    return first, rank


def zzl_items(lp: bytes) -> list[bytes]:
    """member, score, member, score... as the listpack holds them (ZSCAN of a listpack replies with
    the score entries' own text: 1e17 reads back as 100000000000000000)."""
    s = lp
    out = []
    p = _HDR
    while s[p] != _EOF:
        out.append(_entry_bytes(s, p))
        p = _next(s, p)
    return out


def pack_pairs(pairs: Iterable[tuple[float, bytes]]) -> bytes:
    """The listpack zzlInsertAt would build by appending `pairs` (sorted, distinct members)."""
    values: list[bytes | int] = []
    for s, m in pairs:
        values.append(m)
        values.append(listpack_score(s))
    return Listpack.from_values(values).bytes()


# Sublist sizes of the skiplist order: a sublist splits above 2 * _LOAD elements and is merged
# into a neighbour below _LOAD // 2.  An insert shifts half a sublist in two lists, a positional
# read after a change of size re-adds n / _LOAD lengths: 500 balances the two (the container's
# share of a ZADD costs 20% more at 1000 and 8% less at 250, where a rank read after a write on
# 1M elements would sum 2000 lengths instead of 1000).
_LOAD = 500
_HALF = _LOAD // 2


def _bisect_scores(a: array[float], s: float, lo: int, hi: int, right: bool) -> int:
    """bisect_left (or bisect_right) of score s in the scores a[lo:hi].  Compiled, a loop over the
    array's C doubles: bisect's own probes of an array make a float object each."""
    if cython.compiled:
        d = a.data.as_doubles
        while lo < hi:
            mid = (lo + hi) >> 1
            if (s < d[mid]) if right else (d[mid] < s):
                if right:
                    hi = mid
                else:
                    lo = mid + 1
            elif right:
                lo = mid + 1
            else:
                hi = mid
        return lo
    return bisect_right(a, s, lo, hi) if right else bisect_left(a, s, lo, hi)


def _score_item(a: array[float], i: int) -> float:
    if cython.compiled:
        return a.data.as_doubles[i]
    return a[i]


def _set_score(a: array[float], i: int, s: float) -> None:
    if cython.compiled:
        a.data.as_doubles[i] = s
    else:
        a[i] = s


# A sublist's insert and delete.  Compiled, one resize and one memmove of the tail each: array's
# insert and delete are method calls that box the index and the score, and list.insert moves the
# tail one pointer at a time (CPython's ins1), ~1,700 instructions of a ZADD into a big sorted set
# whose sublists hold 500-1000 pairs.
def _insert_score(a: array[float], j: int, s: float) -> None:
    if cython.compiled:
        n = len(a)
        resize_smart(a, n + 1)  # noqa: F821 (zset.pxd cimports it)
        d = a.data.as_doubles
        memmove(d + j + 1, d + j, (n - j) * 8)  # noqa: F821 (zset.pxd)
        d[j] = s
    else:
        a.insert(j, s)


def _delete_score(a: array[float], j: int) -> None:
    if cython.compiled:
        n = len(a) - 1
        d = a.data.as_doubles
        memmove(d + j, d + j + 1, (n - j) * 8)  # noqa: F821 (zset.pxd)
        resize_smart(a, n)  # noqa: F821
    else:
        del a[j]


def _insert_member(members: list[bytes], j: int, m: bytes) -> None:
    if cython.compiled:
        _list_insert(members, j, m)  # noqa: F821 (zset.pxd: the tail moved by one memmove)
    else:
        members.insert(j, m)


def _untracked(members: list[bytes]) -> list[bytes]:
    """A sublist of members, out of the cyclic collector (compiled: storage/rax.py's `untrack`):
    it holds bytes only, so no cycle passes through it, and tracked, every young collection walked
    all the members of the big sorted sets grown since the last one (the loop held for each:
    docs/speed-log.md, 2026-11-29, h-tail).  Nothing but members is ever put in these lists."""
    untrack(members)
    return members


def _delete_member(members: list[bytes], j: int) -> None:
    if cython.compiled:
        _list_delete(members, j)  # noqa: F821 (zset.pxd)
    else:
        del members[j]


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
        self._members = [_untracked(list(map(_member, c))) for c in chunks]
        self._maxes = [c[-1] for c in chunks]
        self._maxkeys = array("d", map(_score, self._maxes))
        self._len = len(items)
        self._offsets: list[int] | None = None

    def copy(self) -> _SkipOrder:
        new = _SkipOrder.__new__(_SkipOrder)
        new._keys = [keys[:] for keys in self._keys]
        new._members = [_untracked(members.copy()) for members in self._members]
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
        n = len(maxkeys)
        k = _bisect_scores(maxkeys, s, 0, n, False)
        if k < n and _score_item(maxkeys, k) == s:  # the run of equal scores may cross sublists
            k = bisect_left(self._maxes, (s, m), k)
        if k == n:
            return k, 0
        keys = self._keys[k]
        j = _bisect_scores(keys, s, 0, len(keys), False)
        if _score_item(keys, j) == s:
            j = bisect_left(self._members[k], m, j, _bisect_scores(keys, s, j, len(keys), True))
        return k, j

    def add(self, pair: tuple[float, bytes]) -> None:
        """Insert a pair whose member is not present."""
        self.put(pair[0], pair[1])

    def put(self, s: float, m: bytes) -> None:
        """add() of score s and member m, without the pair."""
        maxkeys = self._maxkeys
        n = len(maxkeys)
        k = _bisect_scores(maxkeys, s, 0, n, False)
        if k == n or _score_item(maxkeys, k) == s:  # at the end, or in a run of equal maxima
            k, j = self._find(s, m)
            self._add_at(s, m, k, j)
            return
        # the common case: into a sublist whose maximum scores above s, searched here without
        # _find's handling of equal maxima
        keys = self._keys[k]
        j = _bisect_scores(keys, s, 0, len(keys), False)
        if _score_item(keys, j) == s:
            j = bisect_left(self._members[k], m, j, _bisect_scores(keys, s, j, len(keys), True))
        self._add_at(s, m, k, j)

    def _add_at(self, s: float, m: bytes, k: int, j: int) -> None:
        if k == len(self._keys):  # above every pair: the end of the last sublist
            if not k:
                self._keys.append(array("d", (s,)))
                self._members.append(_untracked([m]))
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
        _insert_score(keys, j, s)
        _insert_member(self._members[k], j, m)
        self._len += 1
        self._offsets = None
        if len(keys) > 2 * _LOAD:
            self._split(k)

    def remove(self, pair: tuple[float, bytes]) -> None:
        """Remove a pair that is present."""
        self.drop(pair[0], pair[1])

    def drop(self, s: float, m: bytes) -> None:
        """remove() of score s and member m, without the pair."""
        k, j = self._where(s, m)
        self._delete_at(k, j)

    def update(self, cur: float, m: bytes, s: float) -> None:
        """Move member m, present with score cur, to score s (!= cur).  As Redis's zslUpdateScore,
        the score is changed in place when the pair keeps its rank: the new score lies strictly
        between its neighbours' scores (or it has no neighbour on that side); else the pair is
        removed and put again."""
        k, j = self._where(cur, m)
        keys = self._keys[k]
        last = len(keys) - 1
        if j:
            ok = _score_item(keys, j - 1) < s
        else:
            ok = not k or _score_item(self._maxkeys, k - 1) < s
        if ok:
            if j < last:
                ok = s < _score_item(keys, j + 1)
            elif k + 1 < len(self._keys):
                ok = s < _score_item(self._keys[k + 1], 0)
        if not ok:
            self._delete_at(k, j)
            self.put(s, m)
            return
        _set_score(keys, j, s)
        if j == last:
            self._maxes[k] = (s, m)
            _set_score(self._maxkeys, k, s)

    def _where(self, s: float, m: bytes) -> tuple[int, int]:
        """(sublist, index) of the pair (s, m), which is present."""
        maxkeys = self._maxkeys
        k = _bisect_scores(maxkeys, s, 0, len(maxkeys), False)
        if _score_item(maxkeys, k) == s:  # possibly the maximum, or in a run of equal maxima
            return self._find(s, m)
        # the common case, inline: not its sublist's maximum
        keys = self._keys[k]
        members = self._members[k]
        j = _bisect_scores(keys, s, 0, len(keys), False)
        if members[j] != m:
            j = bisect_left(members, m, j, _bisect_scores(keys, s, j, len(keys), True))
        return k, j

    def _delete_at(self, k: int, j: int) -> None:
        keys = self._keys[k]
        _delete_score(keys, j)
        _delete_member(self._members[k], j)
        self._len -= 1
        self._offsets = None
        if len(keys) < _HALF or j == len(keys):
            self._fix(k)

    def _split(self, k: int) -> None:
        keys, members = self._keys[k], self._members[k]
        self._keys.insert(k + 1, keys[_LOAD:])
        self._members.insert(k + 1, _untracked(members[_LOAD:]))
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

    def first_members(self, k: int) -> list[bytes]:
        """The members of the k lowest elements (k <= length): MEMORY USAGE's sample."""
        members = self._members[0]
        if len(members) >= k:
            return members[:k]
        return [m for _, m in self._slice(0, k)]

    def __getitem__(self, i: int | slice) -> Any:  # a pair for an int, a list of them for a slice
        if type(i) is slice:
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

    def runs(self, start: int, stop: int) -> list[tuple[array[float], list[bytes], int, int]]:
        """The pairs at positions [start, stop) as runs (scores, members, lo, hi): scores[lo:hi]
        beside members[lo:hi], the sublists themselves, not copied (for a walk that reads every
        score but few members: a geo search's filter)."""
        out: list[tuple[array[float], list[bytes], int, int]] = []
        if start >= stop:
            return out
        k, j = (0, start) if start < len(self._keys[0]) else self._locate(start)
        want = stop - start
        while want > 0:
            n = min(len(self._keys[k]) - j, want)
            out.append((self._keys[k], self._members[k], j, j + n))
            want -= n
            k += 1
            j = 0
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

    def bisect_left(self, pair: tuple[float, bytes] | tuple[float]) -> int:
        """Rank of the first pair >= `pair`; a 1-tuple (score,) comes before every pair of that
        score."""
        s = pair[0]
        if len(pair) == 1:
            k = bisect_left(self._maxkeys, s)
            return self._rank(k, 0 if k == len(self._keys) else bisect_left(self._keys[k], s))
        return self._rank(*self._find(s, pair[1]))

    def bisect_right(self, pair: tuple[float, bytes] | tuple[float]) -> int:
        """Rank of the first pair > `pair`."""
        if len(pair) == 1:
            return self.bisect_left(pair)
        s, m = pair
        k, j = self._find(s, m)
        if k < len(self._keys) and self._keys[k][j] == s and self._members[k][j] == m:
            return self._rank(k, j) + 1
        return self._rank(k, j)

    def islice(self, start: int | None = None, stop: int | None = None, reverse: bool = False) -> Iterator[tuple[float, bytes]]:
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


def _lex_possible(first: bytes, last: bytes, r: LexRange) -> bool:
    """zzlIsInLexRange / zslIsInLexRange, given the lowest and highest members."""
    return not r.empty() and r.gte_min(last) and r.lte_max(first)


def _lex_walk_pairs(pairs: list[tuple[float, bytes]], r: LexRange, reverse: bool) -> list[tuple[float, bytes]]:
    """The listpack's lex walk over its pairs: from the first element >= min (the last <= max),
    nothing unless it is also <= max (>= min), then on while the elements stay in range."""
    if not pairs or not _lex_possible(pairs[0][1], pairs[-1][1], r):
        return []
    enter, stay = (r.lte_max, r.gte_min) if reverse else (r.gte_min, r.lte_max)
    out: list[tuple[float, bytes]] = []
    started = False
    for pair in (reversed(pairs) if reverse else pairs):
        m = pair[1]
        if not started:
            if not enter(m):
                continue
            started = True
        if not stay(m):
            break
        out.append(pair)
    return out


class _Skiplist:
    """The skiplist encoding: `scores` maps member -> score, `order` holds the (score, member)
    pairs sorted, `scan` is ZSCAN's bucket index (dropped by every change)."""

    __slots__ = ("scores", "order", "scan")

    def __init__(self, pairs: list[tuple[float, bytes]]) -> None:
        """`pairs` sorted, members distinct."""
        self.scores: dict[bytes, float] = {m: s for s, m in pairs}
        self.order = _SkipOrder(pairs)
        self.scan: ScanIndex | None = None

    def copy(self) -> _Skiplist:
        new = _Skiplist.__new__(_Skiplist)
        new.scores = self.scores.copy()
        new.order = self.order.copy()
        new.scan = None
        return new

    def insert(self, member: bytes, score: float) -> None:
        self.order.put(score, member)
        self.scores[member] = score
        self.scan = None

    def move(self, member: bytes, cur: float, score: float) -> None:
        self.order.update(cur, member, score)
        self.scores[member] = score

    def delete(self, member: bytes) -> bool:
        score = self.scores.pop(member, None)
        if score is None:
            return False
        self.order.remove((score, member))
        self.scan = None
        return True

    def take(self, lo: int, hi: int) -> list[tuple[float, bytes]]:
        """Remove and return the pairs of ranks [lo, hi)."""
        order = self.order
        gone = order[lo:hi]
        scores = self.scores
        for _, m in gone:
            del scores[m]
        del order[lo:hi]
        self.scan = None
        return gone

    def rank(self, member: bytes) -> int:
        s = self.scores.get(member)
        return -1 if s is None else self.order.bisect_left((s, member))

    def score_bounds(self, r: ScoreRange) -> tuple[int, int]:
        order = self.order
        if r.minex:
            lo = len(order) if r.min == _INF else order.bisect_left((math.nextafter(r.min, _INF),))
        else:
            lo = order.bisect_left((r.min,))
        if r.maxex:
            hi = order.bisect_left((r.max,))
        else:
            hi = len(order) if r.max == _INF else order.bisect_left((math.nextafter(r.max, _INF),))
        return lo, max(lo, hi)

    def lex_first(self, r: LexRange) -> int | None:
        order = self.order
        if not _lex_possible(order[0][1], order[-1][1], r):
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
        order = self.order
        if not _lex_possible(order[0][1], order[-1][1], r):
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


# The mark a listpack value's `sk` holds when some string score is not d2string's text of its value
# (a loaded payload's, ZSet.from_listpack): an empty _Skiplist, of the type `sk` is declared with,
# never used as one (every use of `sk` as a skiplist is behind `lp is None`).
_OTHER_TEXT = _Skiplist([])


@cython.no_gc  # compiled: no GC header, untracked (it holds bytes and its own tables, never a cycle)
@cython.cclass
class ZSet:
    """A sorted set: `lp` (listpack bytes) or `sk` (a _Skiplist), the other None (or, beside a
    listpack, the `_OTHER_TEXT` mark)."""

    type_name = "zset"
    __slots__ = ("lp", "sk")
    if not cython.compiled and TYPE_CHECKING:  # mypy's view (compiled: folded away, zset.pxd types them)
        lp: bytes | None
        # None while `lp` holds the value, and read only where `lp is None`: a link between two
        # fields mypy cannot follow, so it sees the skiplist (its None writes say so).
        sk: _Skiplist

    def __init__(self) -> None:
        self.lp = _EMPTY_LP
        self.sk = None  # type: ignore[assignment]

    @classmethod
    def from_pairs(cls, pairs: list[tuple[float, bytes]], max_entries: int, max_value: int) -> ZSet:
        """A new value holding `pairs` (sorted, distinct members), encoded as ZUNIONSTORE & co
        leave it: built as a skiplist, then a listpack when it fits the limits
        (zsetConvertToListpackIfNeeded)."""
        z = ZSet.__new__(ZSet)
        lengths = [len(m) for _, m in pairs]
        if len(pairs) > max_entries or (lengths and max(lengths) > max_value) or sum(lengths) > _SAFETY:
            z.lp = None
            z.sk = _Skiplist(pairs)
        else:
            z.lp = pack_pairs(pairs)
            z.sk = None  # type: ignore[assignment]
        return z

    @classmethod
    def from_listpack(cls, lp: bytes, pairs: list[tuple[float, bytes]]) -> ZSet:
        """A loaded listpack value (RESTORE, RDB) keeping the bytes it came in, given their
        decoded pairs in listpack order (checked by the loader: distinct members, valid scores).
        Redis keeps an unsorted payload as it is and its walks then misbehave; this keeps the
        invariant instead and re-encodes such a payload sorted."""
        z = ZSet.__new__(ZSet)
        z.sk = None  # type: ignore[assignment]
        if all(pairs[i] < pairs[i + 1] for i in range(len(pairs) - 1)):
            z.lp = bytes(lp)
            if not zzl_texts_canonical(z.lp):
                z.sk = _OTHER_TEXT  # replies format its scores (module docstring, "Scores in replies")
        else:
            z.lp = pack_pairs(sorted(pairs))
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
        return zset_length(self)

    def is_listpack(self) -> bool:
        return self.lp is not None

    def encoding(self) -> str:
        return "skiplist" if self.lp is None else "listpack"

    def copy(self) -> ZSet:
        z = ZSet.__new__(ZSet)
        z.lp = self.lp  # bytes: shared until either side changes, which builds new bytes
        z.sk = self.sk if self.lp is not None else self.sk.copy()  # a listpack's: None or the mark
        return z

    def mem_usage(self, samples: int = 5) -> int:
        return zset_usage(self, samples)

    def listpack_bytes(self) -> bytes:
        """The listpack held (DUMP and RDB write it as it is)."""
        lp = self.lp
        return pack_pairs(self.sk.order) if lp is None else lp

    def _convert(self) -> None:
        """zsetConvert to a skiplist (of a listpack value)."""
        lp = self.lp
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert lp is not None
        self.sk = _Skiplist(zzl_pairs(lp))
        self.lp = None

    def to_skiplist(self) -> None:
        """Convert a listpack value for good (SORT does, as Redis's zsetConvert)."""
        if self.lp is not None:
            self._convert()

    # ---- updates -------------------------------------------------------------------------------
    def add(self, member: bytes, score: float, flags: int, max_entries: int, max_value: int
            ) -> tuple[int, float]:
        """Redis's zsetAdd: returns (OUT_* flag, resulting score)."""
        return zset_add(self, member, score, flags, max_entries, max_value)

    def delete(self, member: bytes) -> bool:
        lp = self.lp
        if lp is None:
            return self.sk.delete(member)
        p = zzl_find(lp, member)
        if p < 0:
            return False
        self.lp = zzl_delete(lp, p)
        return True

    def delete_slice(self, lo: int, hi: int) -> int:
        """Remove the elements at ranks [lo, hi); returns how many."""
        if hi <= lo:
            return 0
        lp = self.lp
        if lp is None:
            self.sk.take(lo, hi)
        else:
            self.lp = zzl_delete_range(lp, lo, hi)
        return hi - lo

    def pop(self, count: int, from_max: bool, texts: bool = False) -> list[tuple[Any, bytes]]:
        """Remove and return up to `count` lowest (or highest) elements, in pop order (`texts` as
        rank_slice's)."""
        n = len(self)
        count = min(count, n)
        lo, hi = (n - count, n) if from_max else (0, count)
        lp = self.lp
        if lp is None:
            taken = self.sk.take(lo, hi)
        else:
            taken = zzl_pairs(lp, lo, hi, texts and self.sk is None)
            self.lp = zzl_delete_range(lp, lo, hi)
        if from_max:
            taken.reverse()
        return taken

    # ---- reads ---------------------------------------------------------------------------------
    def score(self, member: bytes) -> float | None:
        lp = self.lp
        if lp is None:
            return self.sk.scores.get(member)
        p = zzl_find(lp, member)
        return None if p < 0 else zzl_score(lp, p)

    def score_text(self, member: bytes) -> float | bytes | None:
        """score() for a reply: a listpack's score as a reply reads it (rank_slice's `texts`)."""
        lp = self.lp
        if lp is None:
            return self.sk.scores.get(member)
        p = zzl_find(lp, member)
        if p < 0:
            return None
        return zzl_score_text(lp, p) if self.sk is None else zzl_score(lp, p)

    def rank(self, member: bytes, reverse: bool = False) -> int | None:
        lp = self.lp
        r = self.sk.rank(member) if lp is None else zzl_find(lp, member, True)
        if r < 0:
            return None
        return len(self) - 1 - r if reverse else r

    def __iter__(self) -> Iterator[tuple[float, bytes]]:
        lp = self.lp
        return iter(self.sk.order) if lp is None else iter(zzl_pairs(lp))

    def members(self) -> list[bytes]:
        """Every member: in order for a listpack, as the skiplist's dict holds them otherwise."""
        lp = self.lp
        return list(self.sk.scores) if lp is None else [m for _, m in zzl_pairs(lp)]

    def rank_slice(self, start: int, stop: int, texts: bool = False) -> list[tuple[Any, bytes]]:
        """The pairs of ranks [start, stop); `texts`: for a reply, a listpack's scores as a reply
        reads them (module docstring, "Scores in replies"), floats or bytes."""
        lp = self.lp
        if lp is None:
            return self.sk.order[start:stop]
        return zzl_pairs(lp, start, max(start, stop), texts and self.sk is None)

    def score_runs(self, start: int, stop: int) -> list[tuple[array[float], list[bytes], int, int]]:
        """rank_slice(start, stop) as runs (scores, members, lo, hi), scores a C-double array:
        the skiplist's sublists as they are (_SkipOrder.runs), a listpack's pairs read out."""
        lp = self.lp
        if lp is None:
            return self.sk.order.runs(start, stop)
        pairs = zzl_pairs(lp, start, max(start, stop))
        return [(array("d", map(_score, pairs)), list(map(_member, pairs)), 0, len(pairs))]

    def score_bounds(self, r: ScoreRange) -> tuple[int, int]:
        """Ranks [lo, hi) of the elements inside `r`."""
        if r.empty() or not len(self):
            return 0, 0
        lp = self.lp
        if lp is None:
            return self.sk.score_bounds(r)
        return zzl_score_bounds(lp, r.min, r.minex, r.max, r.maxex)

    # lex ranges: Redis's zzl/zsl First/LastInLexRange
    def lex_first(self, r: LexRange) -> int | None:
        """Rank of the first element in the range (the walk's starting point), or None."""
        lp = self.lp
        if lp is not None:
            pairs = zzl_pairs(lp)
            walk = _lex_walk_pairs(pairs, r, False)
            return pairs.index(walk[0]) if walk else None
        return self.sk.lex_first(r) if len(self) else None

    def lex_last(self, r: LexRange) -> int | None:
        """Rank of the last element in the range (the reverse walk's starting point), or None."""
        lp = self.lp
        if lp is not None:
            pairs = zzl_pairs(lp)
            walk = _lex_walk_pairs(pairs, r, True)
            return pairs.index(walk[0]) if walk else None
        return self.sk.lex_last(r) if len(self) else None

    def lex_walk(self, r: LexRange, reverse: bool) -> Iterator[tuple[float, bytes]]:
        """The elements a lex range walk visits: from the first (last) in range while <= max
        (>= min)."""
        lp = self.lp
        if lp is not None:
            return iter(_lex_walk_pairs(zzl_pairs(lp), r, reverse))
        if not len(self):
            return iter(())
        return self.sk.lex_walk(r, reverse)

    def lex_count(self, r: LexRange) -> int:
        lp = self.lp
        if lp is not None:
            return len(_lex_walk_pairs(zzl_pairs(lp), r, False))
        first = self.lex_first(r)
        if first is None:
            return 0
        last = self.lex_last(r)
        return 0 if last is None or last < first else last - first + 1

    # ---- randomness (ZRANDMEMBER's: the scores as rank_slice's `texts` gives them) ----------------
    def random_pair(self) -> tuple[Any, bytes]:
        lp = self.lp
        if lp is None:
            order = self.sk.order
            return order[random.randrange(len(order))]
        i = random.randrange(len(self))
        return zzl_pairs(lp, i, i + 1, self.sk is None)[0]

    def sample(self, k: int) -> list[tuple[Any, bytes]]:
        """`k` distinct random pairs (k <= len); a listpack's in its order, as Redis's."""
        lp = self.lp
        if lp is not None:
            return zzl_picked(lp, distinct_indexes(len(self), k), self.sk is None)
        order = self.sk.order
        return [order[i] for i in random.sample(range(len(order)), k)]

    def choices(self, k: int) -> list[tuple[Any, bytes]]:
        """`k` random pairs, with repetition."""
        lp = self.lp
        if lp is not None:
            return zzl_picked(lp, random_indexes(len(self), k), self.sk is None)
        order = self.sk.order
        n = len(order)
        return [order[random.randrange(n)] for _ in range(k)]

    # ---- ZSCAN ---------------------------------------------------------------------------------
    def scan(self, cursor: int, count: int) -> tuple[int, list[bytes]]:
        """(next cursor, member, score text, member, score text...): a listpack returns everything
        at once with the score entries' own text, as Redis does; a skiplist prints %.17g (the
        server writes a skiplist's scores itself, from `scan_pairs`)."""
        lp = self.lp
        if lp is not None:
            return 0, zzl_items(lp)
        step = self.scan_pairs(cursor, count)
        assert step is not None
        nxt, pairs = step
        out = []
        for score, m in pairs:
            out.append(m)
            out.append(format_score(score))
        return nxt, out

    def scan_pairs(self, cursor: int, count: int) -> tuple[int, list[tuple[float, bytes]]] | None:
        """A skiplist's ZSCAN step as (next cursor, (score, member) pairs), for a reply that
        writes the scores itself (protocol.reply.scored_members); None for a listpack, whose
        replies carry its entries' own text (`scan`)."""
        if self.lp is not None:
            return None
        sk = self.sk
        idx = sk.scan
        if idx is None:
            idx = sk.scan = ScanIndex(sk.scores, len(sk.scores))
        nxt, members = idx.scan(cursor, count)
        scores = sk.scores
        return nxt, [(scores[m], m) for m in members]


def zset_add(z: ZSet, member: bytes, score: float, flags: int, max_entries: int, max_value: int
             ) -> tuple[int, float]:
    """ZSet.add's body, a module function so that the compiled handlers call it in C (zset.pxd):
    ZSet's methods stay def methods, since a cpdef method would add a vtable pointer to every
    sorted set.  Compiled, its (OUT_* flag, resulting score) is a C tuple (a struct of a long and
    a double: no tuple or float object per add) for a compiled caller."""
    lp = z.lp
    p = -1
    sk = z.sk
    if lp is not None:
        p = zzl_find(lp, member)
        found = p >= 0
        cur = zzl_score(lp, p) if found else 0.0
    else:
        got = sk.scores.get(member)
        found = got is not None
        cur = got if got is not None else 0.0  # compiled, a C double (zset.pxd): the tests below are C compares
    if found:
        if flags & IN_NX:
            return OUT_NOP, cur
        if flags & IN_INCR:
            score += cur
            if score != score:
                return OUT_NAN, cur
        if (flags & IN_LT and score >= cur) or (flags & IN_GT and score <= cur):
            return OUT_NOP, cur
        if score != cur:
            if lp is not None:  # removed and inserted again, as zsetAdd does
                z.lp = zzl_update(lp, p, member, score)
            else:
                sk.move(member, cur, score)
            return OUT_UPDATED, score
        return 0, score
    if flags & IN_XX:
        return OUT_NOP, 0.0
    if lp is not None:
        n = lp[4] | (lp[5] << 8)
        if n == _UNKNOWN:
            n = 2 * len(z)
            lp = z.lp
            if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
                assert lp is not None  # len() rewrote the count: still a listpack
        # checked *before* inserting, as zsetAdd does: too many, too long, or too big
        if (n >> 1) + 1 <= max_entries and len(member) <= max_value and len(lp) + len(member) <= _SAFETY:
            z.lp = zzl_insert(lp, member, score)
            return OUT_ADDED, score
        z._convert()
        sk = z.sk
    sk.insert(member, score)
    return OUT_ADDED, score


def zset_usage(z: ZSet, samples: int = 5) -> int:
    """ZSet.mem_usage, MEMORY USAGE's estimate: exact for a listpack (robj + its allocation); for
    a skiplist the structures plus the average of the first `samples` elements (sds, dictEntry, a
    node of the average 1.33 levels) times the count.  A module function on the typed sorted set
    (zset.pxd, as zset_length): a write under a memory limit sizes its sorted set again after
    every ZADD or ZREM (server/memory/usage.py), a C call."""
    lp = z.lp
    if lp is not None:
        return 16 + size_class(len(lp))
    sk = z.sk
    n = len(sk.scores)
    # robj + zset + zskiplist + dict + table + the 32-level header node
    size = 16 + 16 + 32 + 56 + dict_table_bytes(n) + _SKIPLIST_HEADER
    if n:
        k = min(max(1, samples), n)
        size += int((sds_alloc_first(sk.order.first_members(k), k) + (24 + 48) * k) / k * n)
    return size


def zset_length(z: ZSet) -> int:
    """ZSet.__len__'s body (ZCARD's count), a function so that, compiled, its count is a C integer
    (zset.pxd)."""
    lp = z.lp
    if lp is None:
        return len(z.sk.scores)
    n = lp[4] | (lp[5] << 8)
    if n == _UNKNOWN:
        n = zzl_length(lp)
        if n < _UNKNOWN:  # lpLength writes a count that fits again back to the header
            z.lp = spliced(lp, _HDR, _HDR, b"", n - _UNKNOWN)
    return n >> 1


SIZERS[ZSet] = zset_usage  # MEMORY USAGE's estimate by exact class (alloc.py)
