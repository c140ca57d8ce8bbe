"""Reply encoding for RESP2 and RESP3.

Handlers build replies as bytes directly: the hot path appends them to the connection's output list
and writes once per read event, so there is no intermediate object model.  Version-independent
shapes (bulk, integer, status, error, array header) are module functions; the shapes whose wire form
differs between RESP2 and RESP3 (null, map, set, double, boolean, big number, verbatim, push) live on
the two `Encoder` instances, `RESP2` and `RESP3`, and a connection holds the one it speaks (or
`RESP2_72` / `RESP3_72`, the same with Redis 7.2's doubles, on a server answering as 7.2+).

Compiled (reply.pxd), `bulk` and `array` write their frame into one new bytes object, and the
frame writers (`digits`, `put_u`, `put_head`, `decimal`, `bulk_size`, `put_bulk`, `put_int_bulk`,
`int_size`, `put_int`, `put_id_bulk`) are inline C functions that storage's walks call with the pieces of what they hold
(a listpack's LRANGE reply, a stream node's entries): storage decodes its own layout, protocol/
spells every byte of RESP; the interpreted build has their twins at the end of this module.
`stream_entry` is a stream entry's reply, the encoder storage's node views are kept in.

A command's whole reply may also be a tuple of bytes, its pieces (`value`: a big stored value kept
by reference, not copied; `values` and `value_array`: aggregates of stored values, the big ones
so); `add_reply` puts a reply on a connection's list, `flat` gives any reply as one bytes object
for every other use.

Invariants: every function returns complete frames; `array()` and friends take already-encoded
elements (bytes, never pieces: only `value_array` takes replies in pieces); a reply in pieces
holds only immutable bytes, and only a command's whole reply is one (`values`, `value_array`
and `value` are never an element of another aggregate); doubles print like Redis (`%.17g`,
`inf`, `-inf`, `nan`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, cast

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

OK = b"+OK\r\n"
PONG = b"+PONG\r\n"
QUEUED = b"+QUEUED\r\n"
ZERO = b":0\r\n"
ONE = b":1\r\n"
EMPTY_ARRAY = b"*0\r\n"
EMPTY_BULK = b"$0\r\n\r\n"
NULL_BULK2 = b"$-1\r\n"
NULL_ARRAY2 = b"*-1\r\n"
NULL3 = b"_\r\n"



def decimals(head: bytes, tail: bytes, stop: int) -> list[bytes]:
    """`[head + b"%d" % i + tail for i in range(stop)]` (head and tail without NUL bytes), made
    without turning each number into text, which costs most of each entry's making: the reply
    tables below hold ~19,000 of them, built at every start (docs/speed.md).  The numbers of one
    width are written as fixed-size records, a NUL after each (bytearray's zeros), one column at a
    time by a strided slice assignment (the k-th digit from the right runs 0-9, each digit 10**k
    times; the first digit of a width starts at 1), then split into bytes at the NULs."""
    out: list[bytes] = []
    lo, width = 0, 1
    while lo < stop:
        n = min(10**width, stop) - lo  # the numbers lo .. lo + n - 1 have `width` digits
        rec = len(head) + width + len(tail) + 1
        buf = bytearray(n * rec)
        for j, byte in enumerate(head):
            buf[j::rec] = bytes((byte,)) * n
        for j, byte in enumerate(tail):
            buf[len(head) + width + j::rec] = bytes((byte,)) * n
        top = b"".join([bytes((48 + d,)) * 10 ** (width - 1) for d in range(1 if width > 1 else 0, 10)])
        buf[len(head)::rec] = top[:n]
        for k in range(width - 1):
            cycle = b"".join([bytes((48 + d,)) * 10**k for d in range(10)])
            buf[len(head) + width - 1 - k::rec] = (cycle * (n // len(cycle) + 1))[:n]
        out += bytes(buf[:-1]).split(b"\0")
        lo, width = lo + n, width + 1
    return out


# The reply tables (integer's -1..10000, the bulk and array headers, the bulk separators: ~19,000
# bytes objects, ~7 M instructions) are made by their first use, a table at a time, not at import:
# no reply is written before the first command, and a served server's idle imports of the
# families (t_string reads two of them at its import) make them before most first commands.  Each
# global is None until made; its readers test it (compiled, a pointer compare).
_SMALL_INTS: list[bytes] | None = None
_BULK_HEADERS: list[bytes] | None = None
_BULK_SEPS: list[bytes] | None = None
_ARRAY_HEADERS: list[bytes] | None = None


def small_ints() -> list[bytes]:
    """integer()'s replies of -1..10000, at index n + 1 (made by the first call): public for INCR's
    and the scripts' replies, which read it inline."""
    return _SMALL_INTS if _SMALL_INTS is not None else _make_table(0)


def bulk_headers() -> list[bytes]:
    """`$<n>\r\n` for n < 4096 (made by the first call): public for inlined hot paths (GET)."""
    return _BULK_HEADERS if _BULK_HEADERS is not None else _make_table(1)


def _bulk_seps() -> list[bytes]:
    """One bulk's closing CRLF plus the next bulk's header, `\r\n$<n>\r\n` for n < 4096: joining
    elements of one length with the same separator makes a whole array of bulks in one C-level join."""
    return _BULK_SEPS if _BULK_SEPS is not None else _make_table(2)


def _array_headers() -> list[bytes]:
    """`*<n>\r\n` for n < 1024."""
    return _ARRAY_HEADERS if _ARRAY_HEADERS is not None else _make_table(3)


def _make_table(which: int) -> list[bytes]:
    """Make and keep reply table `which`: 0 integer's (-1 first), 1 the bulk headers, 2 the bulk
    separators, 3 the array headers."""
    global _SMALL_INTS, _BULK_HEADERS, _BULK_SEPS, _ARRAY_HEADERS
    head, tail, stop = ((b":", b"\r\n", 10001), (b"$", b"\r\n", 4096), (b"\r\n$", b"\r\n", 4096),
                        (b"*", b"\r\n", 1024))[which]
    table = decimals(head, tail, stop)
    if which == 0:
        table = _SMALL_INTS = [b":-1\r\n", *table]
    elif which == 1:
        _BULK_HEADERS = table
    elif which == 2:
        _BULK_SEPS = table
    else:
        _ARRAY_HEADERS = table
    return table


def integer(n: int) -> bytes:
    if -1 <= n <= 10000:
        i = n  # compiled, a C integer (reply.pxd): n is in range
        t = _SMALL_INTS
        if t is None:
            t = small_ints()
        return t[i + 1]
    if cython.compiled and 0 < n <= 0x7FFFFFFFFFFFFFFF:  # written in C, not %-formatted (a list's length)
        return length(n)
    return b":%d\r\n" % n


def length(n: int) -> bytes:
    """integer() of a length or count, which callers hold as a C Py_ssize_t when compiled (LPUSH's
    list length): no boxing of it, and the range tests C compares."""
    if -1 <= n <= 10000:
        t = _SMALL_INTS
        if t is None:
            t = small_ints()
        return t[n + 1]
    if cython.compiled and n > 0:  # written in C, not %-formatted
        u = cython.declare(cython.ulonglong, n)
        out = PyBytes_FromStringAndSize(cython.NULL, digits(u) + 3)  # noqa: F821 (reply.pxd)
        put_head(cython.cast(cython.p_uchar, PyBytes_AS_STRING(out)), 0, 58, u)  # noqa: F821
        return out
    return b":%d\r\n" % n


# Cached "$<len>\r\n" headers (bulk_headers): bytes %-formatting costs ~0.7 us, a lookup and a
# join ~0.3 us.
_join = b"".join


def bulk(b: bytes | bytearray) -> bytes:
    n = len(b)
    if cython.compiled and type(b) is bytes:  # written into one new bytes object
        out = PyBytes_FromStringAndSize(cython.NULL, n + digits(n) + 5)  # noqa: F821 (reply.pxd)
        d = cython.cast(cython.p_uchar, PyBytes_AS_STRING(out))  # noqa: F821
        k = put_head(d, 0, 36, n)
        memcpy(d + k, PyBytes_AS_STRING(b), n)  # noqa: F821
        d[k + n] = 13
        d[k + n + 1] = 10
        return out
    if n < 4096:
        return _join((bulk_headers()[n], b, b"\r\n"))
    return b"$%d\r\n%s\r\n" % (n, b)


def bulk_str(s: str) -> bytes:
    b = s.encode()
    return b"$%d\r\n%s\r\n" % (len(b), b)


def status(s: bytes | str) -> bytes:
    if isinstance(s, str):
        s = s.encode()
    return b"+" + s + b"\r\n"


def error(msg: bytes | str) -> bytes:
    """`msg` starts with its error code (ERR, WRONGTYPE, ...); newlines would break framing."""
    if isinstance(msg, str):
        msg = msg.encode()
    if 13 in msg or 10 in msg:
        msg = msg.replace(b"\r", b" ").replace(b"\n", b" ")
    return b"-" + msg + b"\r\n"


def array(items: list[bytes] | tuple[bytes, ...]) -> bytes:
    if cython.compiled and type(items) is list:  # the header and the elements copied into one
        total = 0                                # new bytes object, when they are all bytes
        for it in items:
            if type(it) is not bytes:
                return b"*%d\r\n%s" % (len(items), b"".join(items))
            total += len(cython.cast(bytes, it))
        return _array_of(items, total)
    return b"*%d\r\n%s" % (len(items), b"".join(items))


def _array_of(items: list[bytes], total: int) -> bytes:
    """The array of `items`, all of them bytes whose lengths add up to `total`: compiled, written
    into one new bytes object (array's and value_array's, each having checked and measured its
    items in one walk)."""
    if cython.compiled:
        n = len(items)
        out = PyBytes_FromStringAndSize(cython.NULL, total + digits(n) + 3)  # noqa: F821 (reply.pxd)
        d = cython.cast(cython.p_uchar, PyBytes_AS_STRING(out))  # noqa: F821
        k = put_head(d, 0, 42, n)
        for it in items:
            m = len(it)
            memcpy(d + k, PyBytes_AS_STRING(it), m)  # noqa: F821
            k += m
        return out
    return b"*%d\r\n%s" % (len(items), b"".join(items))


def array_header(n: int) -> bytes:
    return b"*%d\r\n" % n


# ---- a reply in pieces ---------------------------------------------------------------------------
# A command's whole reply may be a tuple of bytes instead of bytes: its pieces, in order, whose join
# is the reply.  `value` makes one (a big stored value kept by reference, not copied into a reply
# of its own); the connection adds a reply to its list of replies with `add_reply`, which takes the
# pieces as they are, and writes the list as pieces (one writev) where some are big.  Whoever uses a
# reply otherwise (what redis.call gives a script, a reply logged) takes `flat(r)`.  Only immutable
# values are kept so: a bytes object cannot change while its reply waits to be written (a
# bytearray, which APPEND and SETRANGE may grow in place, is copied).  `values` and `value_array`
# are the aggregates whose elements are stored values (HGETALL, LPOP with a count, SMEMBERS, MGET,
# ...) or replies (EXEC's): one bytes object as before unless an element is in pieces.  A value
# decoded from a listpack is a fresh bytes object, kept so too (LPOP, LINDEX: one copy, not two);
# the replies that storage writes straight from its listpacks (LRANGE, XRANGE, a small hash's
# HGETALL) copy each element once already and are left as they are.
PIECE_MIN = 8192  # bytes: a value this big goes out by reference (below it, the copy is cheaper)


def value(v: bytes | bytearray) -> bytes | tuple[bytes, ...]:
    """A stored string as a command's whole reply: a bulk, in pieces (its header, the value
    itself, CRLF) when it is bytes of PIECE_MIN bytes or more."""
    n = len(v)
    if n < PIECE_MIN or type(v) is not bytes:
        return bulk(v)
    if cython.compiled:  # the header written in C, not %-formatted
        head = PyBytes_FromStringAndSize(cython.NULL, digits(n) + 3)  # noqa: F821 (reply.pxd)
        put_head(cython.cast(cython.p_uchar, PyBytes_AS_STRING(head)), 0, 36, n)  # noqa: F821
        return (head, v, b"\r\n")
    return (b"$%d\r\n" % n, v, b"\r\n")


def flat(r: bytes | tuple[bytes, ...]) -> bytes:
    """A command's reply as one bytes object (the pieces of `value` joined)."""
    # isinstance, not typing.cast: compiled, cast stays a call of an interpreted function (~380
    # instructions, paid per element of EXEC's array and per redis.call reply)
    if isinstance(r, tuple):
        return _join(r)
    return r


def values(items: Iterable[bytes], head: int = 42, count: int = -1) -> bytes | tuple[bytes, ...]:
    """Stored values (a list, tuple or set of them) as a command's whole reply: the aggregate
    `<head><count>` of their bulks (see bulk_aggregate), one bytes object, or in pieces when one
    is bytes of PIECE_MIN or more (its `value`, by reference).  Only a whole reply: an element of
    another aggregate takes bulk_strings."""
    if cython.compiled:
        out = bulk_aggregate(head, items, count, PIECE_MIN)
        if out is not None:
            return out
    seq = items if type(items) is list or type(items) is tuple else list(items)
    n = len(seq)
    header = b"%c%d\r\n" % (head, n if count < 0 else count)
    if not cython.compiled and (not n or max(map(len, seq)) < PIECE_MIN):
        return header + bulks_body(seq)
    return _pieces(header, [value(it) for it in seq])


def value_array(parts: Sequence[bytes | tuple[bytes, ...]]) -> bytes | tuple[bytes, ...]:
    """An array of encoded replies, some of them maybe values in pieces (`value`: MGET's, HMGET's),
    as a command's whole reply: one bytes object (`array`), or in pieces when a part is."""
    if cython.compiled:  # the parts checked for pieces and measured in one walk (EXEC's replies)
        total = 0
        plain = True
        for p in parts:
            if type(p) is bytes:
                total += len(cython.cast(bytes, p))
            elif type(p) is tuple:
                return _pieces(b"*%d\r\n" % len(parts), parts)
            else:
                plain = False
        if plain:
            return _array_of(parts, total)  # type: ignore[arg-type]
        return array(parts)  # type: ignore[arg-type]
    for p in parts:
        if type(p) is tuple:
            return _pieces(b"*%d\r\n" % len(parts), parts)
    # (compiled, a list: value_array's C signature; no typing.cast: see flat)
    return array(parts)  # type: ignore[arg-type]


def _pieces(header: bytes, parts: Sequence[bytes | tuple[bytes, ...]]) -> bytes | tuple[bytes, ...]:
    """`header` and `parts` after it as one reply: in pieces when a part is in pieces (the
    connection joins the runs of small pieces between the big ones), else one bytes object."""
    for p in parts:
        if type(p) is tuple:
            out = [header]
            for q in parts:
                add_reply(out, q)
            return tuple(out)
    return header + _join(parts)  # type: ignore[arg-type] # (no typing.cast: see flat)


if not cython.compiled:  # compiled, reply.pxd holds it inline
    def add_reply(out: list[bytes], r: bytes | tuple[bytes, ...]) -> None:
        """A command's reply added to `out`, a connection's list of replies: its pieces as they are."""
        if isinstance(r, tuple):
            out.extend(r)
        else:
            out.append(r)


if not cython.compiled:  # compiled, reply.pxd holds these inline (see there)
    def digits(u: int) -> int:
        """Decimal digits of u >= 0."""
        d = 1
        while u >= 10:
            u //= 10
            d += 1
        return d

    def put_u(d: bytearray, k: int, u: int) -> int:
        """u >= 0 in decimal at d[k:]; the offset after it."""
        end = k + digits(u)
        k = end
        while True:
            k -= 1
            d[k] = 48 + u % 10
            u //= 10
            if not u:
                break
        return end

    def put_head(d: bytearray, k: int, c: int, n: int) -> int:
        """`<c><n>\\r\\n` (a bulk's or an array's header) at d[k:]; the offset after it."""
        d[k] = c
        k = put_u(d, k + 1, n)
        d[k] = 13
        d[k + 1] = 10
        return k + 2

    def decimal(x: int) -> bytes:
        """x in decimal, as b"%d" % x spells it."""
        return b"%d" % x

    def bulk_size(n: int) -> int:
        """Bytes of a bulk string frame of n bytes: `$<n>\\r\\n`, the bytes, `\\r\\n`."""
        return n + digits(n) + 5

    def put_bulk(d: bytearray, k: int, src: bytes | bytearray, st: int, n: int) -> int:
        """src[st:st + n] as a bulk string at d[k:]; the offset after it."""
        k = put_head(d, k, 36, n)
        d[k:k + n] = src[st:st + n]
        d[k + n] = 13
        d[k + n + 1] = 10
        return k + n + 2

    def put_int_bulk(d: bytearray, k: int, x: int) -> int:
        """The 64-bit integer x in decimal as a bulk string at d[k:]; the offset after it."""
        if x < 0:
            u = -x
            k = put_head(d, k, 36, digits(u) + 1)
            d[k] = 45
            k = put_u(d, k + 1, u)
        else:
            k = put_head(d, k, 36, digits(x))
            k = put_u(d, k, x)
        d[k] = 13
        d[k + 1] = 10
        return k + 2

    def int_size(x: int) -> int:
        """Bytes of the integer frame of x: `:<x>\\r\\n`."""
        return digits(-x) + 4 if x < 0 else digits(x) + 3

    def put_int(d: bytearray, k: int, x: int) -> int:
        """The integer frame of x, `:<x>\\r\\n`, at d[k:]; the offset after it."""
        d[k] = 58
        if x < 0:
            d[k + 1] = 45
            k = put_u(d, k + 2, -x)
        else:
            k = put_u(d, k + 1, x)
        d[k] = 13
        d[k + 1] = 10
        return k + 2

    def put_id_bulk(d: bytearray, k: int, ms: int, seq: int) -> int:
        """A stream ID, `<ms>-<seq>`, as a bulk string at d[k:]; the offset after it."""
        k = put_head(d, k, 36, digits(ms) + 1 + digits(seq))
        k = put_u(d, k, ms)
        d[k] = 45
        k = put_u(d, k + 1, seq)
        d[k] = 13
        d[k + 1] = 10
        return k + 2


def stream_entry(eid: int, fields: list[bytes], values: list[bytes]) -> bytes:
    """A stream entry as every stream reply shows it, RESP2 and RESP3 alike: [id, [field, value,
    ...]], eid being the 128-bit ID (ms << 64 | seq)."""
    flat = []
    for f, v in zip(fields, values, strict=True):  # (fields and values may be tuples: compiled, a
        flat.append(f)  # slice assignment into a list takes only a list)
        flat.append(v)
    return stream_entry_flat(eid >> 64, eid & 0xFFFFFFFFFFFFFFFF, flat)


def stream_entry_flat(ms: int, seq: int, flat: list[bytes]) -> bytes:
    """stream_entry of the ID <ms>-<seq> with its fields and values interleaved in `flat`."""
    return b"*2\r\n%s*%d\r\n%s" % (bulk(b"%d-%d" % (ms, seq)), len(flat), bulks_body(flat))


def bulk_array(items: Iterable[bytes]) -> bytes:
    """An array of bulk strings from any iterable (bulk_strings, which needs a sequence)."""
    return bulk_strings(items if type(items) is list or type(items) is tuple else list(items))


def bulks_body(items: Sequence[bytes], same_len: int = -1) -> bytes:
    """The bulk strings of `items`, back to back, without an array header.

    Built with a constant number of C-level passes instead of a Python step per element: at 100
    elements 2-3x faster than `bulk` per item or hiredis's pack_command, about 5x when all the
    lengths are equal (one join with one separator).  A caller that knows every item has length
    `same_len` (>= 0) says so and skips the len() per item, most of the remaining cost."""
    n = len(items)
    if not n:
        return b""
    heads = _BULK_HEADERS if _BULK_HEADERS is not None else bulk_headers()
    seps = _BULK_SEPS if _BULK_SEPS is not None else _bulk_seps()
    if 0 <= same_len < 4096:
        return _join((heads[same_len], seps[same_len].join(items), b"\r\n"))
    lens = list(map(len, items))
    first = lens[0]
    if first < 4096:
        if lens.count(first) == n:
            return _join((heads[first], seps[first].join(items), b"\r\n"))
        try:
            between = list(map(seps.__getitem__, lens))
        except IndexError:  # an element of 4 KB or more: the generic path below
            pass
        else:
            # separator, element, separator, element, ..., CRLF: interleaved by slice assignment
            parts = [b"\r\n"] * (2 * n + 1)
            parts[0:2 * n:2] = between
            parts[1:2 * n:2] = items
            parts[0] = heads[first]
            return _join(parts)
    return _join([bulk(b) for b in items])


def bulk_strings(items: Sequence[bytes], same_len: int = -1) -> bytes:
    """An array of bulk strings (`same_len`: see bulks_body)."""
    if cython.compiled:
        out = bulk_aggregate(42, items)
        if out is not None:
            return out
    n = len(items)
    return _join((_array_headers()[n] if n < 1024 else b"*%d\r\n" % n, bulks_body(items, same_len)))


def bulk_set(enc: Encoder, items: Sequence[bytes] | set[bytes]) -> bytes:
    """A set of bulk strings (RESP3 `~`, an array in RESP2) from a list, tuple or set of bytes."""
    if cython.compiled:
        out = bulk_aggregate(126 if enc.version == 3 else 42, items)
        if out is not None:
            return out
    if type(items) is set:
        items = list(items)
    return enc.set_header(len(items)) + bulks_body(items)  # type: ignore[arg-type]  # a sequence now


def bulk_aggregate(head: int, items: Iterable[bytes], count: int = -1, big: int = 0) -> bytes | None:
    """Compiled: the aggregate `<head><count>\r\n` (head '*' 42, '~' 126 or '%' 37; count -1: the
    number of items) of the bulk strings of `items` (a list, tuple or set of bytes), sized in one
    pass and written into one new bytes object in a second: no separator list, no per-item object.
    None when an item is not bytes or (`big` > 0) is `big` bytes or more (or interpreted), for the
    caller's general path."""
    if cython.compiled:
        total = 0
        n = 0
        for it in items:
            if type(it) is not bytes:
                return None
            m = len(it)
            if big and m >= big:
                return None
            total += bulk_size(m)
            n += 1
        if count < 0:
            count = n
        out = PyBytes_FromStringAndSize(cython.NULL, total + digits(count) + 3)  # noqa: F821 (reply.pxd)
        d = cython.cast(cython.p_uchar, PyBytes_AS_STRING(out))  # noqa: F821
        k = put_head(d, 0, head, count)
        for it in items:
            k = put_bulk(d, k, cython.cast(cython.p_uchar, PyBytes_AS_STRING(it)), 0, len(it))  # noqa: F821
        return out
    return None


def score_text(enc: Encoder, x: float | bytes) -> bytes:
    """A score's text in a reply: a float's as `enc` spells doubles; a bytes score is a sorted
    set listpack's own d2string text of the value (storage/zset.py, "Scores in replies"), which
    is 7.0's %.17g already and is read back only for 7.2's spelling."""
    if type(x) is bytes:
        return enc.double_text(float(x.decode())) if enc.short_doubles else x
    return enc.double_text(x)  # type: ignore[arg-type]  # not bytes: a float


def scored_members(enc: Encoder, pairs: Sequence[tuple[float | bytes, bytes]], flat: bool = False) -> bytes:
    """A WITHSCORES reply of (score, member) pairs: member, score, member, score, ... in RESP2
    (scores as bulk strings), [member, score] pairs in RESP3 (scores as doubles), each score
    spelled as `enc` spells doubles (7.0's %.17g or 7.2's shortest form; a bytes score is the
    text already, `score_text`).  `flat`: the RESP2 layout in both protocols (ZSCAN's reply,
    whose scores are bulk strings in RESP3 too).

    Compiled, written into one new bytes object: a score that is a whole number below 1e17 in
    magnitude (not -0) is written as its digits in C, which is what both spellings make of it
    (%.17g keeps all its at most 17 digits, 7.2 writes integral values as integers); a bytes
    score is copied as it is (7.0); only the others are formatted by Python, once each."""
    resp3 = enc.version == 3 and not flat
    if cython.compiled:
        texts: list[bytes] | None = None
        raw = not enc.short_doubles
        total = 0
        for x, m in pairs:
            if type(m) is not bytes:
                texts = None
                break
            if type(x) is bytes:
                if raw:
                    tlen = len(x)
                else:
                    t = score_text(enc, x)
                    if texts is None:
                        texts = []
                    texts.append(t)
                    tlen = len(t)
            else:
                s = x
                v = cython.cast(cython.longlong, s) if -1e17 < s < 1e17 else 0
                if v == s and (v or not signbit(s)):  # noqa: F821 (reply.pxd: libc's)
                    u = -v if v < 0 else v
                    tlen = digits(u) + (v < 0)
                else:
                    t = enc.double_text(s)
                    if texts is None:
                        texts = []
                    texts.append(t)
                    tlen = len(t)
            total += bulk_size(len(m)) + (tlen + 7 if resp3 else bulk_size(tlen))
        else:
            n = len(pairs)
            out = PyBytes_FromStringAndSize(cython.NULL, total + digits(n * (1 if resp3 else 2)) + 3)  # noqa: F821
            d = cython.cast(cython.p_uchar, PyBytes_AS_STRING(out))  # noqa: F821
            k = put_head(d, 0, 42, n * (1 if resp3 else 2))
            j = 0
            for x, m in pairs:
                if resp3:
                    k = put_head(d, k, 42, 2)
                k = put_bulk(d, k, cython.cast(cython.p_uchar, PyBytes_AS_STRING(m)), 0, len(m))  # noqa: F821
                s = 0.0 if type(x) is bytes else x  # bytes: copied, or formatted above (7.2) in `texts`
                v = cython.cast(cython.longlong, s) if -1e17 < s < 1e17 else 0
                if type(x) is not bytes and v == s and (v or not signbit(s)):  # noqa: F821
                    u = -v if v < 0 else v
                    tlen = digits(u) + (v < 0)
                    if resp3:
                        d[k] = 44
                        k += 1
                    else:
                        k = put_head(d, k, 36, tlen)
                    if v < 0:
                        d[k] = 45
                        k += 1
                    k = put_u(d, k, u)
                else:
                    if type(x) is bytes and raw:
                        t = x
                    else:
                        t = texts[j]
                        j += 1
                    tlen = len(t)
                    if resp3:
                        d[k] = 44
                        k += 1
                    else:
                        k = put_head(d, k, 36, tlen)
                    memcpy(d + k, PyBytes_AS_STRING(t), tlen)  # noqa: F821
                    k += tlen
                d[k] = 13
                d[k + 1] = 10
                k += 2
            return out
    if resp3:
        return b"*%d\r\n" % len(pairs) + b"".join(
            [b"*2\r\n$%d\r\n%s\r\n,%s\r\n" % (len(m), m, score_text(enc, s)) for s, m in pairs])
    parts = []
    for s, m in pairs:
        f = score_text(enc, s)
        parts.append(b"$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(m), m, len(f), f))
    return b"*%d\r\n" % (2 * len(pairs)) + b"".join(parts)


def format_double(d: float) -> bytes:
    """Redis's human form of a double (addReplyDouble / %.17g), used in replies and stored values."""
    if math.isinf(d):
        return b"inf" if d > 0 else b"-inf"
    if math.isnan(d):
        return b"nan"
    return (b"%.17g" % d)


_HALF_LLONG = float((2**63 - 1) // 2)  # double2ll's range: +-LLONG_MAX/2


def format_double_short(d: float) -> bytes:
    """Redis 7.2's d2string (addReplyDouble from 7.2 on): an integral value as an integer, others
    in the fewest digits that read back as the same double (fpconv_dtoa's grisu2; Python's repr
    gives those digits), laid out as fpconv's emit_digits lays them out."""
    if d != d:
        return b"nan"
    if math.isinf(d):
        return b"inf" if d > 0 else b"-inf"
    if d == 0:
        return b"-0" if math.copysign(1.0, d) < 0 else b"0"
    if -_HALF_LLONG <= d <= _HALF_LLONG and d == int(d):
        return b"%d" % int(d)
    neg = d < 0
    mantissa, _, e = repr(abs(d)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    k = (int(e) if e else 0) - len(frac)
    stripped = digits.rstrip("0")
    k += len(digits) - len(stripped)
    digits = stripped
    n = len(digits)
    exp = abs(k + n - 1)
    if k >= 0 and exp < n + 7:  # a plain integer
        text = digits + "0" * k
    elif k < 0 and (k > -7 or exp < 4):  # a decimal without exponent
        offset = n + k
        text = "0." + "0" * -offset + digits if offset <= 0 else digits[:offset] + "." + digits[offset:]
    else:  # scientific: at most 18 digits (17 when negative), the exponent unpadded
        digits = digits[:18 - neg]
        text = digits[0] + ("." + digits[1:] if len(digits) > 1 else "") + ("e-" if k + n - 1 < 0 else "e+") + str(exp)
    return ("-" + text if neg else text).encode()


class Encoder:
    """The protocol-dependent reply shapes.  Use the module singletons RESP2 / RESP3 (and
    RESP2_72 / RESP3_72, whose doubles are Redis 7.2's: compat-version)."""

    __slots__ = ("version", "null", "null_array", "true", "false", "short_doubles")

    def __init__(self, version: int, short_doubles: bool = False) -> None:
        self.version = version
        self.short_doubles = short_doubles
        if version == 3:
            self.null = NULL3
            self.null_array = NULL3
            self.true = b"#t\r\n"
            self.false = b"#f\r\n"
        else:
            self.null = NULL_BULK2
            self.null_array = NULL_ARRAY2
            self.true = ONE
            self.false = ZERO

    def map(self, pairs: list[bytes]) -> bytes:
        """`pairs` is the flat, encoded k1, v1, k2, v2, ... list."""
        if self.version == 3:
            return b"%%%d\r\n%s" % (len(pairs) // 2, b"".join(pairs))
        return b"*%d\r\n%s" % (len(pairs), b"".join(pairs))

    def map_header(self, n: int) -> bytes:
        return b"%%%d\r\n" % n if self.version == 3 else b"*%d\r\n" % (n * 2)

    def set(self, items: list[bytes]) -> bytes:
        if self.version == 3:
            return b"~%d\r\n%s" % (len(items), b"".join(items))
        return b"*%d\r\n%s" % (len(items), b"".join(items))

    def set_header(self, n: int) -> bytes:
        return b"~%d\r\n" % n if self.version == 3 else b"*%d\r\n" % n

    def push_header(self, n: int) -> bytes:
        return b">%d\r\n" % n if self.version == 3 else b"*%d\r\n" % n

    def double(self, d: float) -> bytes:
        b = format_double_short(d) if self.short_doubles else format_double(d)
        if self.version == 3:
            return b",%s\r\n" % b
        return b"$%d\r\n%s\r\n" % (len(b), b)

    def score(self, x: float | bytes) -> bytes:
        """A score's reply: double()'s of a float; a bytes score (a listpack's own text,
        `score_text`) as it is in 7.0's spelling."""
        if type(x) is bytes:
            if self.short_doubles:
                return self.double(float(x.decode()))
            return b",%s\r\n" % x if self.version == 3 else b"$%d\r\n%s\r\n" % (len(x), x)
        return self.double(x)  # type: ignore[arg-type]  # not bytes: a float

    def double_text(self, d: float) -> bytes:
        """A double's text in a reply (addReplyDouble's): 7.0's %.17g, or 7.2's shortest form."""
        return format_double_short(d) if self.short_doubles else format_double(d)

    def boolean(self, v: bool) -> bytes:
        return self.true if v else self.false

    def big_number(self, digits: bytes) -> bytes:
        if self.version == 3:
            return b"(%s\r\n" % digits
        return b"$%d\r\n%s\r\n" % (len(digits), digits)

    def verbatim(self, text: bytes, fmt: bytes = b"txt") -> bytes:
        if self.version == 3:
            return b"=%d\r\n%s:%s\r\n" % (len(text) + 4, fmt, text)
        return b"$%d\r\n%s\r\n" % (len(text), text)


RESP2 = Encoder(2)
RESP3 = Encoder(3)
RESP2_72 = Encoder(2, True)
RESP3_72 = Encoder(3, True)


def encode_tree(node: object, enc: Encoder) -> bytes:
    """Encode a typed JSON tree (see tools/gen_commands.py) in the encoder's protocol."""
    if node is None:
        return enc.null
    if isinstance(node, bool):
        return enc.boolean(node)
    if isinstance(node, int):
        return integer(node)
    if isinstance(node, str):
        return bulk_str(node)
    if isinstance(node, bytes):
        return bulk(node)
    tag, val = cast("tuple[str, Any]", node)  # not a scalar: a (tag, children) pair
    if tag == "+":
        return status(val)
    if tag == "*":
        return array([encode_tree(x, enc) for x in val])
    if tag == "%":
        return enc.map([encode_tree(x, enc) for x in val])
    if tag == "~":
        return enc.set([encode_tree(x, enc) for x in val])
    raise ValueError(f"bad tree tag {tag!r}")
