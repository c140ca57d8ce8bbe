"""Stream: Redis's rax of listpacks, consumer groups and their pending entries lists.

Layout (Redis 7.0's, so the memory profile and a later RDB encoding are Redis's):

- `rax` maps the 16-byte big-endian master ID of each node to the node, a listpack (bytearray).  IDs are
  handled as one 128-bit int (ms << 64 | seq): comparisons are int comparisons, the successor of an ID
  is id + 1 (the sequence overflows into the ms part exactly as streamIncrID does) and the rax key
  is `id.to_bytes(16, "big")`.
- A node starts with the master entry `count deleted num-fields field... 0`: count of live entries,
  count of tombstones, and the fields of the node's first entry.  Each entry follows as
  `flags ms-delta seq-delta [num-fields field value ...| value ...] lp-count`; SAMEFIELDS (2) in
  flags means the fields are the master's and only values are stored; DELETED (1) marks a tombstone;
  deltas are relative to the master ID (wrapping as uint64 arithmetic does in C); lp-count is the
  number of elements before it in the entry, so a node can be walked backwards.
- A new node starts when the tail node would reach stream-node-max-bytes or holds
  stream-node-max-entries entries (live or deleted); both are passed in by the caller at write time.
  The closed node's buffer is copied to its exact size (lpShrinkToFit).
- XDEL marks a tombstone and updates the master counters; a node whose last live entry goes is removed.
  Trimming removes whole nodes from the head, and (exact trimming only) marks entries of the first
  remaining node deleted, as streamTrim does.  Nothing is ever compacted.

Metadata as Redis 7.0: length, last_id, first_id (the first live entry, 0 when empty),
max_deleted_id, entries_added, and `cgroups` (a rax name -> ConsumerGroup, created on first use).
A group has last_id, entries_read (-1 when unknown), a PEL (rax ID -> NACK) and consumers (rax name ->
Consumer); each consumer's own PEL holds the same NACK objects as the group's, so ownership moves by
relinking one object.

The tail node is described by a `Tail` record (its buffer, master ID, master fields, counters and
element count) so XADD neither walks the rax nor reads the node's header; the first node is kept in
`_head` so reads from either end start without a rax seek.  Anything else that changes a node (XDEL,
trimming, replacing a buffer) drops these caches and they are rebuilt lazily.

Reads that answer clients go through `encoded_range` / `encoded`, which serve each node from a
NodeView: its live entries decoded once and kept already encoded by the caller's function (the RESP
entry reply), checked against the node's header on every use and extended in place when the node
only grew.  The listpacks stay the single source of truth; views are a bounded cache of them.
A view of the replies' encoder (entry_resp, protocol/reply.py's stream_entry) holds its node's
replies as one buffer written from the listpack in C, with each entry's offset, so an XRANGE / XREAD
page is one slice per node it spans (`resp_range`); the same header check drops or extends it.
RESP is protocol/'s: this module walks the listpack and hands each piece (an ID's parts, an
element's bytes or integer) to protocol/reply.py's writers (inline C compiled, reply.pxd).
"""

from __future__ import annotations

import itertools
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from typing import Any

from raxdb.protocol.reply import stream_entry, stream_entry_flat
from raxdb.storage import listpack as L
from raxdb.storage.alloc import SIZERS, size_class
from raxdb.storage.listpack import encode_int_entry as _int_entry
from raxdb.storage.listpack import put_header
from raxdb.storage.listpack import skip as lp_skip
from raxdb.storage.listpack import values as lp_values
from raxdb.storage.rax import NOT_FOUND, Rax

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

if not cython.compiled:  # compiled, stream.pxd cimports them: C functions, and inline ones
    from raxdb.protocol.reply import put_bulk as _put_bulk
    from raxdb.protocol.reply import put_head as _put_head
    from raxdb.protocol.reply import put_id_bulk as _put_id_bulk
    from raxdb.protocol.reply import put_int_bulk as _put_int_bulk
    from raxdb.storage.listpack import encoded_size, grown, int_entry_size, put_entry, put_int
    from raxdb.storage.listpack import entry_span as lp_span
    from raxdb.storage.rax import untrack as _untrack

FLAG_DELETED = 1
FLAG_SAMEFIELDS = 2
U64 = (1 << 64) - 1
MAX_ID = (1 << 128) - 1
LISTPACK_MAX_SIZE = 1 << 30
INVALID_ENTRIES_READ = -1



def node_limits(max_bytes: int, max_entries: int) -> tuple[int, int, int]:
    """stream-node-max-bytes and -entries as appending reads them, and the default LIMIT of an
    approximate trim (streamAppendItem, streamParseAddOrTrimArgsOrReply): no byte limit, or one
    over a listpack's maximum, means that maximum; no entry limit means none; the trim LIMIT is 100
    nodes' worth of entries, within [10000 if unset, 1000000].  The config computes this once per
    change, so XADD tests a node's room with two plain comparisons."""
    if max_bytes <= 0 or max_bytes > LISTPACK_MAX_SIZE:
        max_bytes = LISTPACK_MAX_SIZE
    limit = 100 * max_entries
    return max_bytes, max_entries if max_entries > 0 else 1 << 62, 10000 if limit <= 0 else min(limit, 1000000)


def id_key(i: int) -> bytes:
    return i.to_bytes(16, "big")


def key_id(k: bytes) -> int:
    return int.from_bytes(k, "big")


def format_id(i: int) -> bytes:
    return b"%d-%d" % (i >> 64, i & U64)


def _append_entry(lp: bytearray, argv: list[bytes], pos: int, msd: int, seqd: int, same: int) -> int:
    """Append one entry's elements to node lp, over its terminator: flags, the ID's parts less the
    master's, [the field count and fields,] the values, the lp-count; their number.  Each element
    is written as encode_entry writes it (a canonical decimal as an integer entry: a job queue's
    job ids), after sizing them all, into the node lengthened once (listpack's `grown`; compiled,
    written through a pointer), as a list push writes its element: no piece built and joined.
    msd / seqd are the uint64 differences, stored as C stores them in int64 fields (_as_int64;
    compiled, the caller's C subtraction and the int64 parameters do it)."""
    nf = (len(argv) - pos) // 2
    if cython.compiled:  # msd / seqd arrive as C int64s, already as C stores them
        a = msd
        b = seqd
    else:
        a = _as_int64(msd)
        b = _as_int64(seqd)
    if same:
        start = pos + 1
        step = 2
        last = nf + 3  # the lp-count: the entry's elements but itself
    else:
        start = pos
        step = 1
        last = 2 * nf + 4
    size = 2 + int_entry_size(a) + int_entry_size(b) + int_entry_size(last) + _run_size(argv, start, step)
    if not same:
        size += int_entry_size(nf)
    k = len(lp) - 1
    d = grown(lp, size)
    d[k] = 2 if same else 0  # the flags, a 7-bit integer entry
    d[k + 1] = 1
    k = put_int(d, k + 2, a)
    k = put_int(d, k, b)
    if not same:
        k = put_int(d, k, nf)
    k = _put_run(d, k, argv, start, step)
    k = put_int(d, k, last)
    d[k] = 0xFF
    return last + 1


def _run_size(argv: list[bytes], i: int, step: int) -> int:
    """The bytes of the entries of argv[i::step] (fields, values or both), encoded canonically."""
    size = 0
    end = len(argv)
    while i < end:  # not range(i, end, step): a step that is a variable makes it a Python loop
        size += encoded_size(argv[i])
        i += step
    return size


def _put_run(d: bytearray, k: int, argv: list[bytes], i: int, step: int) -> int:
    """Write the entries of argv[i::step] at d[k:] (sized by _run_size); the offset after them."""
    end = len(argv)
    while i < end:
        k = put_entry(d, k, argv[i])
        i += step
    return k


def _new_node(argv: list[bytes], pos: int) -> bytearray:
    """A node holding one entry, whose ID is the node's master ID: the master entry (count 1,
    deleted 0, the field count, the fields of argv[pos:], 0), then the entry (SAMEFIELDS, ID
    deltas 0, the values, its lp-count), sized once and written in place: the bytes lpNew and
    streamAppendItem's appends leave (the element count saturates as lpInsert's does)."""
    nf = (len(argv) - pos) // 2
    size = (6 + 4 + int_entry_size(nf) + _run_size(argv, pos, 2) + 8 + _run_size(argv, pos + 1, 2)
            + int_entry_size(nf + 3) + 1)
    lp = bytearray()
    d = grown(lp, size)
    d[6] = 1  # the live count, 1
    d[7] = 1
    d[8] = 0  # the deleted count, 0
    d[9] = 1
    k = put_int(d, 10, nf)
    k = _put_run(d, k, argv, pos, 2)
    d[k] = 0  # the master entry's terminator, 0
    d[k + 1] = 1
    d[k + 2] = FLAG_SAMEFIELDS  # the entry: flags, ms and seq deltas 0
    d[k + 3] = 1
    d[k + 4] = 0
    d[k + 5] = 1
    d[k + 6] = 0
    d[k + 7] = 1
    k = _put_run(d, k + 8, argv, pos + 1, 2)
    k = put_int(d, k, nf + 3)
    d[k] = 0xFF
    n = 2 * nf + 8
    put_header(lp, n if n < 65535 else 65535)
    return lp


def _same_fields(argv: list[bytes], pos: int, fields: list[bytes]) -> bool:
    """Whether the entry's fields argv[pos::2] are `fields` (a node's master fields), compared in
    place: compiled, a C loop of bytes compares with no slice made (XADD asks on every entry)."""
    if not cython.compiled:
        return argv[pos::2] == fields
    n = len(fields)
    if len(argv) - pos != 2 * n:
        return False
    for j in range(n):
        a = argv[pos + 2 * j]
        b = fields[j]
        if a is not b and a != b:
            return False
    return True


def _args_size(argv: list[bytes], pos: int) -> int:
    """The bytes of argv[pos:] together (what an entry adds to a node, before encoding)."""
    size = 0
    for i in range(pos, len(argv)):
        v = argv[i]  # compiled, typed bytes (stream.pxd): its length is read from the object
        size += len(v)
    return size


def _as_int64(v: int) -> int:
    """A uint64 difference stored as C stores it in an int64 field."""
    if -2147483647 <= v <= 2147483647:  # the common case (no literal of 2^31: compiled, a Python int)
        return v
    v &= U64
    return v - (1 << 64) if v >> 63 else v


def _rd(buf: bytearray, p: int) -> tuple[Any, int]:
    """(element at p, offset of the next element)."""
    b = buf[p]
    if b < 0x80:
        return b, p + 2
    if b < 0xC0:
        n = b & 0x3F
        return bytes(buf[p + 1 : p + 1 + n]), p + n + 2
    return L.get_value(buf, p), p + L.entry_size(buf, p)


def _rd_bytes(buf: bytearray, p: int) -> tuple[bytes, int]:
    v, q = _rd(buf, p)
    return (b"%d" % v if type(v) is int else v), q


def _set_int(buf: bytearray, p: int, v: int) -> None:
    """Replace the integer element at p (lpReplaceInteger), in place when the size allows."""
    if 0 <= v < 128 and buf[p] < 128:
        buf[p] = v
    else:
        L.replace_at(buf, p, _int_entry(v))


# The replies' encoder: one entry as every stream reply shows it (protocol/reply.py's
# stream_entry); node views built with it are filled by _resp_node, straight from the listpack.
entry_resp = stream_entry


def _int_at(s: bytes | bytearray, p: int) -> int:
    """The integer element at p (the entries' flags, ID deltas and counts are always integers)."""
    b = s[p]
    if b < 0x80:
        return b
    if 0xC0 <= b < 0xE0:
        x = ((b & 0x1F) << 8) | s[p + 1]
        return x - 8192 if x >= 4096 else x
    if b == 0xF1:
        x = s[p + 1] | (s[p + 2] << 8)
        return x - 0x10000 if x >= 0x8000 else x
    if b == 0xF2:
        x = s[p + 1] | (s[p + 2] << 8) | (s[p + 3] << 16)
        return x - 0x1000000 if x >= 0x800000 else x
    if b == 0xF3:
        x = s[p + 1] | (s[p + 2] << 8) | (s[p + 3] << 16) | (s[p + 4] << 24)
        return x - 0x100000000 if x >= 0x80000000 else x
    if b == 0xF4:
        return int.from_bytes(bytes(s[p + 1 : p + 9]), "little", signed=True)
    raise ValueError("stream: bad integer encoding 0x%02x at %d" % (b, p))


def _int_size(b: int) -> int:
    """Bytes of an integer element (back-length included) from its first byte."""
    if b < 0x80:
        return 2
    if b < 0xE0:
        return 3
    if b == 0xF1:
        return 4
    if b == 0xF2:
        return 5
    return 6 if b == 0xF3 else 10


def _entry_head(lp: bytearray, s: bytes | bytearray, p: int, end: int, mms: int, mseq: int, nmf: int,
                h: list[int]) -> int:
    """The offset of the first value of the node's next live entry from offset p (deleted ones,
    their values and lp-count are skipped), or end (the node's terminator) when none is left;
    the entry's flags, ID (ms, seq) and number of fields go to h[0:4].  lp's buffer is `s`, a
    pointer compiled; the master entry's ID is mms-mseq and it has nmf fields.  The node walks'
    one reading of the entry layout (see Stream); `h` is the walk's C array compiled."""
    while p < end:
        flags = _int_at(s, p)
        p += _int_size(s[p])
        msd = _int_at(s, p)
        p += _int_size(s[p])
        seqd = _int_at(s, p)
        p += _int_size(s[p])
        nf = nmf
        if not flags & FLAG_SAMEFIELDS:
            nf = _int_at(s, p)
            p += _int_size(s[p])
        if not flags & FLAG_DELETED:
            h[0] = flags
            h[1] = (mms + msd) & U64
            h[2] = (mseq + seqd) & U64
            h[3] = nf
            return p
        p = lp_skip(lp, p, (nf if flags & FLAG_SAMEFIELDS else 2 * nf) + 1)  # values, lp-count
    return p


def _is_int_entry(b: int) -> bool:
    """Whether an element whose first byte is b is an integer (7-, 13-, 16-, 24-, 32-, 64-bit)."""
    return b < 0x80 or 0xC0 <= b < 0xE0 or 0xF1 <= b <= 0xF4


def _loaded_node(key: bytes, lp: bytearray, after: int) -> tuple[int, int, int] | None:
    """What Stream.validate checks of one node of a loaded stream, in one walk that decodes no
    field or value: (live entries, first live ID or -1, last ID) when the node passes all of it,
    its first entry's ID above `after` (the ID of the stream's entry before it, -1 at the first
    node); else None, and the caller leaves the verdict to validate.  Stricter than validate
    where that is simpler (flags a 7-bit integer, counts not negative, each lp-count exactly
    its entry's elements, as Redis writes it: then the backward walk meets the forward one's
    entries), never laxer."""
    try:
        L.checked_count(lp)  # the layout, deep (Listpack.validate's checks)
    except (ValueError, IndexError):
        return None
    s = lp  # compiled, a pointer to its buffer (stream.pxd)
    end = len(lp) - 1
    p = L.HEADER_SIZE
    # the master entry: live count, deleted count, number of fields, the fields, a 0
    if p >= end or not _is_int_entry(s[p]):
        return None
    count = _int_at(s, p)
    p += _int_size(s[p])
    if p >= end or not _is_int_entry(s[p]):
        return None
    deleted = _int_at(s, p)
    p += _int_size(s[p])
    if p >= end or not _is_int_entry(s[p]):
        return None
    nmf = _int_at(s, p)
    p += _int_size(s[p])
    if nmf < 0 or nmf > end:  # (more fields than bytes: no such node)
        return None
    for _i in range(nmf):
        if p >= end:
            return None
        p += lp_span(s, p)
    if p >= end or s[p] != 0 or s[p + 1] != 1:  # the master terminator: 7-bit 0, back-length 1
        return None
    p += 2
    mms = key_id(key[:8])
    mseq = key_id(key[8:])
    has_prev = after >= 0
    pms = after >> 64 if has_prev else 0
    pseq = after & U64 if has_prev else 0
    first = True
    live = dead = 0
    fms = fseq = 0
    has_live = False
    while p < end:
        if not s[p] < 0x80:  # flags: a 7-bit integer, whose byte is its value
            return None
        flags = s[p]
        p += 2
        if p >= end or not _is_int_entry(s[p]):
            return None
        msd = _int_at(s, p)
        p += _int_size(s[p])
        if p >= end or not _is_int_entry(s[p]):
            return None
        seqd = _int_at(s, p)
        p += _int_size(s[p])
        if cython.compiled:  # C's unsigned 64-bit sums wrap as `& U64` does
            ms = mms + msd
            seq = mseq + seqd
        else:
            ms = (mms + msd) & U64
            seq = (mseq + seqd) & U64
        if first and (ms != mms or seq != mseq):  # the first entry's ID is the master ID
            return None
        first = False
        if has_prev and (ms < pms or (ms == pms and seq <= pseq)):  # IDs increase
            return None
        has_prev = True
        pms = ms
        pseq = seq
        if flags & FLAG_SAMEFIELDS:
            n = nmf
            want = 3 + nmf
        else:
            if p >= end or not _is_int_entry(s[p]):
                return None
            nf = _int_at(s, p)
            p += _int_size(s[p])
            if nf < 0 or nf > end:
                return None
            n = 2 * nf
            want = 4 + n
        for _i in range(n):
            if p >= end:
                return None
            p += lp_span(s, p)
        if p >= end or not _is_int_entry(s[p]) or _int_at(s, p) != want:  # lp-count
            return None
        p += _int_size(s[p])
        if flags & FLAG_DELETED:
            dead += 1
        else:
            live += 1
            if not has_live:
                has_live = True
                fms = ms
                fseq = seq
    if p != end or count != live or deleted != dead or not (count > 0 or deleted > 0):
        return None
    return live, _stream_id(fms, fseq) if has_live else -1, _stream_id(pms, pseq)


def _stream_id(ms: int, seq: int) -> int:
    """An entry ID from its parts (Python integers: compiled, the parts come in as C ones)."""
    return ms << 64 | seq


def _resp_entries(master_id: int, lp: bytearray, p: int, mfields: list[bytes], ids: list[int],
                  items: list[bytes]) -> None:
    """Append the ID and entry_resp(...) of each live entry of the node from offset p to ids and
    items, straight from the listpack: what a view's fill costs interpreted (compiled, _resp_node
    writes the node's replies with _resp_write instead).  Each entry's values come from one
    listpack call and its reply from one protocol/reply.py call."""
    s = lp
    end = len(lp) - 1
    mms = master_id >> 64
    mseq = master_id & U64
    nmf = len(mfields)
    h = [0, 0, 0, 0]
    while True:
        p = _entry_head(lp, s, p, end, mms, mseq, nmf, h)
        if p >= end:
            break
        flags = h[0]
        ms = h[1]
        seq = h[2]
        nf = h[3]
        if flags & FLAG_SAMEFIELDS:
            vals = lp_values(lp, p, nmf)
            p = lp_skip(lp, p, nmf)
            flat = [b""] * (2 * nmf)
            flat[0::2] = mfields
            flat[1::2] = vals
        else:
            flat = lp_values(lp, p, 2 * nf)
            p = lp_skip(lp, p, 2 * nf)
        p += _int_size(s[p])  # lp-count
        ids.append((int(ms) << 64) | seq)  # int(): a 128-bit number, not a C one
        items.append(stream_entry_flat(ms, seq, flat))


_COMPILED = not __file__.endswith(".py")


def _put_elem(d: bytearray, k: int, s: bytes | bytearray, p: int) -> int:
    """Write the listpack element at p as a RESP bulk string at d[k:] (an integer in decimal) with
    protocol/reply.py's writers; the offset after it."""
    b = s[p]
    if b < 0x80 or 0xC0 <= b < 0xE0 or b > 0xF0:
        return _put_int_bulk(d, k, _int_at(s, p))
    if b < 0xC0:
        ln = b & 0x3F
        st = p + 1
    elif b < 0xF0:
        ln = ((b & 0x0F) << 8) | s[p + 1]
        st = p + 2
    else:
        ln = s[p + 1] | (s[p + 2] << 8) | (s[p + 3] << 16) | (s[p + 4] << 24)
        st = p + 5
    return _put_bulk(d, k, s, st, ln)


def _resp_write(master_id: int, lp: bytearray, p: int, mfields: list[bytes], ids: list[int] | None,
                offs: list[int] | None, base: int, lo: int, hi: int, count: int, res: list[int] | None,
                out: bytearray) -> bytearray:
    """Append the entry_resp(...) of the node's live entries from offset p with lo <= ID <= hi, at
    most `count` of them (-1: all), to `out`, written byte by byte from the listpack (compiled: C
    loops, no object per value), and return it.  With `ids` / `offs`, each entry's ID is appended
    to ids and its offset in `out` (plus base) to offs (a node view's fill); with `res`, res[0]
    gets the number of entries written and res[1] 1 when an ID past hi was met (a range's end).
    `out` is grown at an upper bound of what is written and cut to it at the end: an element of
    the listpack takes at least 2 bytes and becomes at most 27 (a 64-bit integer's bulk) or its
    length plus 15 (a string's), and an entry adds at most 80 bytes of headers (its ID, array
    headers) and its master fields' bulks."""
    s = lp
    end = len(lp) - 1
    mms = master_id >> 64
    mseq = master_id & U64
    lo_ms = lo >> 64
    lo_seq = lo & U64
    hi_ms = hi >> 64
    hi_seq = hi & U64
    nmf = len(mfields)
    nfb = 0
    for fld in mfields:
        nfb += len(fld) + 15
    rem = end - p
    k = len(out)
    if cython.compiled:
        PyByteArray_Resize(out, k + 15 * rem + (rem // 8 + 1) * (80 + nfb))  # noqa: F821 (stream.pxd)
        d = cython.cast(cython.p_uchar, PyByteArray_AS_STRING(out))  # noqa: F821
    else:
        out.extend(bytes(15 * rem + (rem // 8 + 1) * (80 + nfb)))
        d = out
    h = [0, 0, 0, 0]
    n = 0
    past = 0
    while n != count:
        p = _entry_head(lp, s, p, end, mms, mseq, nmf, h)
        if p >= end:
            break
        flags = h[0]
        ms = h[1]
        seq = h[2]
        nf = h[3]
        if ms > hi_ms or (ms == hi_ms and seq > hi_seq):
            past = 1
            break
        if ms < lo_ms or (ms == lo_ms and seq < lo_seq):
            p = lp_skip(lp, p, (nmf if flags & FLAG_SAMEFIELDS else 2 * nf) + 1)  # values, lp-count
            continue
        n += 1
        if ids is not None:
            ids.append((int(ms) << 64) | seq)  # int(): a 128-bit number, not a C one
            offs.append(base + k)  # type: ignore[union-attr]
        k = _put_head(d, k, 42, 2)  # [id, [field, value, ...]]
        k = _put_id_bulk(d, k, ms, seq)
        k = _put_head(d, k, 42, 2 * nf)
        if flags & FLAG_SAMEFIELDS:
            for i in range(nmf):
                fld = mfields[i]
                f = fld
                k = _put_bulk(d, k, f, 0, len(fld))
                k = _put_elem(d, k, s, p)
                p += lp_span(s, p)
        else:
            for _i in range(2 * nf):
                k = _put_elem(d, k, s, p)
                p += lp_span(s, p)
        p += _int_size(s[p])  # lp-count
    del out[k:]
    if res is not None:
        res[0] = n
        res[1] = past
    return out


def _resp_node(master_id: int, lp: bytearray, p: int, mfields: list[bytes], ids: list[int],
               offs: list[int], base: int) -> bytes | bytearray:
    """The replies of the node's live entries from offset p as one buffer (see _resp_write);
    interpreted, one entry_resp-like join per entry (a Python step per byte would cost more)."""
    if _COMPILED:
        return _resp_write(master_id, lp, p, mfields, ids, offs, base, 0, MAX_ID, -1, None, bytearray())
    items: list[bytes] = []
    _resp_entries(master_id, lp, p, mfields, ids, items)
    for it in items:
        offs.append(base)
        base += len(it)
    return b"".join(items)


def _fill_view(v: NodeView, master_id: int, lp: bytearray, start: int) -> None:
    """Decode the node's entries from offset start (0: the first) into the view.  A view of the
    replies' encoder keeps them in one buffer, `buf`, the entry k being buf[offs[k]:offs[k + 1]]
    (offs ends with len(buf)); its `items` are cut from it only when asked for."""
    if v.encode is entry_resp:
        offs = v.offs
        base = offs.pop()
        chunk = _resp_node(master_id, lp, start or Stream._master(lp)[3], v.mfields, v.ids, offs, base)
        if base:
            v.buf += chunk
        else:
            v.buf = chunk
        offs.append(len(v.buf))
        v.items = None
        return
    ids = v.ids
    items = v.items
    for eid, _, fields, values in Stream._node_forward(master_id, lp, False, start, v.mfields):
        ids.append(eid)
        items.append(v.encode(eid, fields, values))  # type: ignore[union-attr]  # None only in entry_resp's


class NodeView:
    """A node's live entries decoded once: their IDs (ascending) and encode(id, fields, values).

    Views are kept for the last VIEWS_MAX nodes read, keyed by the node buffer, and checked against
    the buffer on every use: its first 18 bytes hold the total size, the element count and the
    node's live and deleted counters, and every change to a node moves one of them (appends grow it,
    deletions move the counters, which never return to an earlier pair).  Appends alone (same
    deleted count, longer buffer) extend the view by decoding just the new entries, so readers
    following the tail of a stream pay for what is new only.
    """

    __slots__ = ("lp", "head", "size", "count_size", "deleted", "mfields", "encode", "ids", "items", "buf", "offs")
    # all set by _view, which makes it
    lp: bytearray  # the node
    head: bytes  # its first 18 bytes when last decoded
    size: int  # its length then
    count_size: int  # then the size of its live count's element
    deleted: int  # and its deleted count
    mfields: list[bytes]  # its master fields
    encode: Callable[[int, list[bytes], list[bytes]], Any]
    ids: list[int]
    items: list[Any] | None  # None in a view of entry_resp until node_view cuts them from buf
    buf: bytes | bytearray  # entry_resp's view: the replies, one after the other
    offs: list[int]  # entry_resp's view: where each reply starts in buf, then len(buf)


VIEWS_MAX = 256
_views: dict[int, NodeView] = {}


def _counters(lp: bytearray) -> tuple[int, int, int]:
    """(live count, size of its element, deleted count) of a node."""
    b = lp[6]
    if b < 128 and lp[8] < 128:
        return b, 2, lp[8]
    count, p = _rd(lp, 6)
    return count, p - 6, _rd(lp, p)[0]


def _view(master_id: int, lp: bytearray, encode: Callable[[int, list[bytes], list[bytes]], Any]) -> NodeView:
    """The node's current view for `encode`, made, extended or rebuilt as the node's header says."""
    v = _views.get(id(lp))
    if v is not None and v.lp is lp and v.encode is encode:
        if v.head == lp[:18]:
            return v
        _, csize, deleted = _counters(lp)
        if deleted == v.deleted and len(lp) > v.size:
            _fill_view(v, master_id, lp, v.size - 1 + csize - v.count_size)
            v.head = bytes(lp[:18])
            v.size = len(lp)
            v.count_size = csize
            return v
    else:
        if len(_views) >= VIEWS_MAX:
            del _views[next(iter(_views))]
        v = NodeView()
        v.lp = lp
        v.encode = encode
        _views[id(lp)] = v
    _, v.count_size, v.deleted = _counters(lp)
    v.mfields = Stream._master(lp)[2]
    v.ids = []
    v.items = []
    v.buf = b""
    v.offs = [0]
    _fill_view(v, master_id, lp, 0)
    v.head = bytes(lp[:18])
    v.size = len(lp)
    return v


def node_view(master_id: int, lp: bytearray, encode: Callable[[int, list[bytes], list[bytes]], Any]
              ) -> tuple[list[int], list[Any]]:
    """(IDs, encoded entries) of the node's live entries, from its view."""
    v = _view(master_id, lp, encode)
    items = v.items
    if items is None:
        buf = v.buf
        offs = v.offs
        v.items = items = [bytes(buf[offs[k]:offs[k + 1]]) for k in range(len(offs) - 1)]
    return v.ids, items


class Tail:
    """What XADD needs to know about the last node without reading it; valid only while nothing but
    append() changes the node (every other writer drops it)."""

    __slots__ = ("key", "mms", "mseq", "lp", "fields", "count", "deleted", "nelem")

    def __init__(self, key: bytes, master_id: int, lp: bytearray, fields: list[bytes]) -> None:
        self.key = key
        self.mms = master_id >> 64
        self.mseq = master_id & U64
        self.lp = lp
        self.fields = fields
        self.count = 1
        self.deleted = 0
        self.nelem = 0  # the header's element count (65535 once saturated)
        # bytes, a bytearray and a list of bytes: no cycle can pass through it (see Stream)
        _untrack(fields)
        _untrack(self)


class NACK:
    """A pending entry: delivered but not acknowledged.  Shared by the group PEL and its owner's PEL."""

    __slots__ = ("delivery_time", "delivery_count", "consumer")

    def __init__(self, consumer: Consumer | None, now_ms: int) -> None:
        self.delivery_time = now_ms
        self.delivery_count = 1
        self.consumer = consumer


class Consumer:
    __slots__ = ("name", "seen_time", "active_time", "pel")

    def __init__(self, name: bytes, now_ms: int) -> None:
        self.name = name
        self.seen_time = now_ms
        self.active_time = -1
        self.pel = Rax()


class ConsumerGroup:
    __slots__ = ("last_id", "entries_read", "pel", "consumers")

    def __init__(self, last_id: int, entries_read: int) -> None:
        self.last_id = last_id
        self.entries_read = entries_read
        self.pel = Rax()
        self.consumers = Rax()

    def consumer(self, name: bytes) -> Consumer | None:
        c = self.consumers.find(name)
        return None if c is NOT_FOUND else c

    def create_consumer(self, name: bytes, now_ms: int) -> Consumer | None:
        """A new consumer, or None if it exists (streamCreateConsumer)."""
        cons = Consumer(name, now_ms)
        return cons if self.consumers.try_insert(name, cons) else None

    def delete_consumer(self, cons: Consumer) -> int:
        """Drop the consumer and its pending entries; returns how many were pending."""
        pending = len(cons.pel)
        for k, _ in cons.pel.items():
            self.pel.remove(k)
        self.consumers.remove(cons.name)
        return pending

    def add_pending(self, key: bytes, cons: Consumer, now_ms: int) -> NACK:
        """Record a delivery of the entry `key` to cons, moving it from another owner if needed."""
        nack = NACK(cons, now_ms)
        if self.pel.try_insert(key, nack):
            cons.pel.insert(key, nack)
            return nack
        nack = self.pel.find(key)
        old = nack.consumer
        if old is not cons:
            if old is not None:
                old.pel.remove(key)
            cons.pel.insert(key, nack)
            nack.consumer = cons
        nack.delivery_time = now_ms
        nack.delivery_count = 1
        return nack

    def ack(self, key: bytes) -> bool:
        nack = self.pel.pop(key)
        if nack is NOT_FOUND:
            return False
        if nack.consumer is not None:
            nack.consumer.pel.remove(key)
        return True


STREAM_PREALLOC = 4096  # STREAM_LISTPACK_MAX_PRE_ALLOCATE: what lpNew reserves for a new node


def _rax_usage(rax: Rax) -> int:
    """streamRadixTreeMemoryUsage: 16 bytes per key, and per node its 4-byte header plus a fixed
    30 words for children and data pointers (Redis's own approximation)."""
    return rax.numele * 16 + rax.numnodes * (4 + 8 * 30)


def _node_alloc(key: bytes, lp: bytearray, prealloc: tuple[bytes, int] | None) -> int:
    """A node's listpack as allocated: the size class of its bytes, or of its preallocated room
    while it keeps it (the last node, until closed or shrunk)."""
    size = size_class(len(lp))
    if prealloc is not None and prealloc[0] == key:
        return max(size, size_class(prealloc[1]))
    return size


def stream_usage(st: Stream, samples: int = 5) -> int:
    """Stream.mem_usage, objectComputeSize's estimate: the object, the rax, the listpacks, the
    groups' PELs.  A module function on the typed stream (stream.pxd): a write under a memory limit
    sizes its stream again after every XADD (server/memory/usage.py), a C call.

    Listpacks count at their allocation, as Redis's zmalloc_size reports it: a new node is
    allocated with room for min(4096, stream-node-max-bytes) bytes (lpNew's preallocation),
    grows to the size class of its bytes when it outgrows that, gives the room back when it is
    closed for a new node (lpShrinkToFit) or when a counter rewrite shrinks it, and every other
    node sits in the size class of its bytes.  Like Redis, only the first `samples` nodes are
    measured when there are more: their average times all nodes but the last, plus the last."""
    rax = st.rax
    size = 16 + 80 + _rax_usage(rax)  # robj, stream
    pre = st._prealloc
    nodes = rax.numele
    sampled = st._sampled
    if sampled is not None and sampled[0] == samples and nodes > samples:
        total = sampled[1]
        taken = samples
    else:
        total = taken = 0
        for key, lp in rax.items():
            if taken >= samples:
                break
            total += _node_alloc(key, lp, pre)
            taken += 1
        if nodes > taken:
            st._sampled = (samples, total)
    if nodes <= taken:
        size += total
    else:
        t = st._tail
        last = (t.key, t.lp) if t is not None else rax.last()
        assert last is not None  # nodes > taken: there is a last node
        key, lp = last
        size += total // taken * (nodes - 1) + _node_alloc(key, lp, pre)
    if st.cgroups is not None:
        for _, cg in st.cgroups.items():
            size += 40 + _rax_usage(cg.pel) + 24 * len(cg.pel)  # streamCG, its PEL, the NACKs
            for name, cons in cg.consumers.items():
                size += 24 + len(name) + _rax_usage(cons.pel)  # NACKs are the group's, counted once
    return size


class Stream:
    type_name = "stream"
    __slots__ = ("rax", "length", "last_id", "first_id", "max_deleted_id", "entries_added", "cgroups",
                 "_tail", "_head", "_last_valid", "_prealloc", "_sampled", "split_id", "last_ms", "last_seq")

    def __init__(self) -> None:
        # Out of the cyclic collector, with its index and tail record: a stream's objects would
        # otherwise be most of what a full collection walks (streams are the keyspace's only
        # values made of many objects).  Nothing a stream holds refers back to it: the index
        # holds listpacks, the tail record bytes, the consumer groups their own objects, whose
        # cycles (a NACK and its consumer) stay tracked and collectable.
        _untrack(self)
        self.rax = Rax(True)
        self.length = 0
        self.last_id = 0
        self.first_id = 0
        self.max_deleted_id = 0
        self.entries_added = 0
        self.cgroups: Rax | None = None
        # (rax key, master ID, node buffer, master fields) of the last node, or None if not loaded.
        self._tail: Tail | None = None
        self._head: tuple[bytes, int, bytearray] | None = None  # (key, master ID, buffer) of the first node
        self._last_valid: int | None = 0  # the last live entry's ID (0: none), None when unknown
        # (rax key, bytes) of the last node while it keeps the room lpNew preallocated for it, for
        # MEMORY USAGE (see mem_usage); None once the node was closed, shrunk or removed.
        self._prealloc: tuple[bytes, int] | None = None
        # (samples, their allocations' sum) of the first nodes, as mem_usage measured them while
        # the last node was not among them; None once one of them may have changed (XDEL, exact
        # trimming, a node removed).  Appends change only the last node, and closing it for a
        # new one leaves the first ones as they were.  Memory accounting asks after every XADD.
        self._sampled: tuple[int, int] | None = None
        # The ID the last append stored in last_id, and its two parts (compiled: C integers).  While
        # last_id is that object, XADD's next automatic ID is C arithmetic on the parts rather than
        # 128-bit int arithmetic; any other writer of last_id (XSETID, loading, copy) leaves it
        # another object, and XADD computes from last_id as before.
        self.split_id: int | None = None
        self.last_ms = 0
        self.last_seq = 0

    # ---- value contract --------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.length

    def encoding(self) -> str:
        return "stream"

    def mem_usage(self, samples: int = 5) -> int:
        return stream_usage(self, samples)

    def copy(self) -> Stream:
        new = Stream()
        for k, lp in self.rax.items():
            new.rax.insert(k, bytearray(lp))
        new.length = self.length
        new.last_id = self.last_id
        new._last_valid = self._last_valid
        new.first_id = self.first_id
        new.max_deleted_id = self.max_deleted_id
        new.entries_added = self.entries_added
        if self.cgroups is not None:
            new.cgroups = Rax()
            for name, cg in self.cgroups.items():
                ncg = ConsumerGroup(cg.last_id, cg.entries_read)
                new.cgroups.insert(name, ncg)
                clones: dict[int, NACK] = {}
                for k, nack in cg.pel.items():
                    clone = NACK(None, nack.delivery_time)
                    clone.delivery_count = nack.delivery_count
                    clones[id(nack)] = clone
                    ncg.pel.insert(k, clone)
                for cname, cons in cg.consumers.items():
                    ncons = Consumer(cname, cons.seen_time)
                    ncons.active_time = cons.active_time
                    ncg.consumers.insert(cname, ncons)
                    for k, nack in cons.pel.items():
                        clone = clones[id(nack)]
                        clone.consumer = ncons
                        ncons.pel.insert(k, clone)
        return new

    # ---- nodes -----------------------------------------------------------------------------------
    @staticmethod
    def _master(lp: bytearray) -> tuple[int, int, list[bytes], int]:
        """(live count, deleted count, master fields, offset of the first entry)."""
        count, p = _rd(lp, L.HEADER_SIZE)
        deleted, p = _rd(lp, p)
        nf, p = _rd(lp, p)
        fields = []
        for _ in range(nf):
            f, p = _rd_bytes(lp, p)
            fields.append(f)
        return count, deleted, fields, p + 2  # skip the master terminator `0`

    def _load_tail(self) -> Tail | None:
        last = self.rax.last()
        if last is None:
            return None
        key, lp = last
        count, deleted, fields, _ = self._master(lp)
        self._tail = t = Tail(key, key_id(key), lp, fields)
        t.count = count
        t.deleted = deleted
        t.nelem = L.num_elements(lp)
        return t

    def _head_node(self) -> tuple[bytes, int, bytearray] | None:
        """(key, master ID, buffer) of the first node, None if there is none; kept in `_head`."""
        head = self._head
        if head is None:
            first = self.rax.first()
            if first is None:
                return None
            head = self._head = (first[0], key_id(first[0]), first[1])
        return head

    def _remove_node(self, key: bytes) -> None:
        self.rax.remove(key)
        self._release_prealloc(key)
        if self._tail is not None and self._tail.key == key:
            self._tail = None  # a trim removing head nodes leaves XADD's tail record standing
        self._head = None
        self._sampled = None

    # ---- adding ----------------------------------------------------------------------------------
    def append(self, argv: list[bytes], pos: int, new_id: int, max_bytes: int, max_entries: int) -> bool:
        """Add the entry `new_id` with the field/value pairs argv[pos:] (streamAppendItem) to a node
        of at most max_bytes / max_entries (stream-node-max-bytes / -entries as configured); False
        (nothing added) if they add up to more than a listpack may hold.  The caller has checked
        new_id > last_id."""
        max_bytes, max_entries, _ = node_limits(max_bytes, max_entries)
        return self.add(argv, pos, new_id >> 64, new_id & U64, new_id, max_bytes, max_entries)

    def add(self, argv: list[bytes], pos: int, ms: int, seq: int, new_id: int, max_bytes: int,
            max_entries: int) -> bool:
        """append() given the new ID also split in its two parts, and the node limits as
        node_limits() gives them.  This is XADD's whole cost: the entry is written into the tail
        node in place (_append_entry), or a new node is made with it (_new_node), each sized once;
        the node's counters are the tail record's, so nothing of the node is read."""
        t = self._tail
        if t is None and self.rax.numele:
            t = self._load_tail()
        size = _args_size(argv, pos)
        if size > LISTPACK_MAX_SIZE:
            return False
        if t is not None:
            lp = t.lp
            count = t.count
            if len(lp) + size >= max_bytes or count + t.deleted >= max_entries:
                self.rax.insert(t.key, bytearray(lp))  # close the node, shrunk to its size
                if self._head is not None and self._head[0] == t.key:
                    self._head = None  # it held the buffer just replaced
                self._prealloc = None
            else:
                count += 1
                # A live count that stays a 7-bit int is written with the header, after the entry.
                small = count < 128 and lp[6] < 128
                if not small:
                    _set_int(lp, 6, count)
                t.count = count
                nelems = _append_entry(lp, argv, pos, ms - t.mms, seq - t.mseq, _same_fields(argv, pos, t.fields))
                n = t.nelem
                if n != 65535:
                    n += nelems
                    t.nelem = n = n if n < 65535 else 65535
                put_header(lp, n)
                if small:
                    lp[6] = count  # the master entry's live count, a 7-bit int entry
                self._appended(new_id, ms, seq)
                return True
        # A new node: its master entry has the entry's fields.
        key = new_id.to_bytes(16, "big")
        lp = _new_node(argv, pos)
        self.rax.insert(key, lp)
        self._prealloc = (key, max(7, min(STREAM_PREALLOC, max_bytes)))  # lpNew(prealloc)
        self._tail = t = Tail(key, new_id, lp, argv[pos::2])
        t.nelem = lp[4] | (lp[5] << 8)
        self._appended(new_id, ms, seq)
        return True

    def _appended(self, new_id: int, ms: int, seq: int) -> None:
        """The metadata of an entry just appended (streamAppendItem's tail); ms and seq are new_id's
        parts."""
        self.length += 1
        self.entries_added += 1
        self.last_id = self._last_valid = self.split_id = new_id
        self.last_ms = ms
        self.last_seq = seq
        if self.length == 1:
            self.first_id = new_id

    # ---- reading ---------------------------------------------------------------------------------
    @staticmethod
    def _node_forward(master_id: int, lp: bytearray, tombstones: bool = False, start_at: int = 0,
                      mfields: list[bytes] | None = None) -> Iterator[tuple[int, int, list[bytes], list[bytes]]]:
        """(id, flags offset, fields, values) of the node's entries in order (from the entry at
        offset start_at, whose node has the master fields mfields, if given)."""
        if start_at:
            p = start_at
            assert mfields is not None  # given with start_at (once per call: not per entry)
        else:
            mfields, p = Stream._master(lp)[2:]
        nmf = len(mfields)
        mms = master_id >> 64
        mseq = master_id & U64
        end = len(lp) - 1
        while p < end:
            fp = p
            flags, p = _rd(lp, p)
            msd, p = _rd(lp, p)
            seqd, p = _rd(lp, p)
            if flags & FLAG_SAMEFIELDS:
                fields = mfields
                n = nmf
                values = []
                for _ in range(n):
                    v, p = _rd_bytes(lp, p)
                    values.append(v)
            else:
                n, p = _rd(lp, p)
                fields = []
                values = []
                for _ in range(n):
                    f, p = _rd_bytes(lp, p)
                    v, p = _rd_bytes(lp, p)
                    fields.append(f)
                    values.append(v)
            p += 2 if lp[p] < 128 else L.entry_size(lp, p)  # lp-count
            if flags & FLAG_DELETED and not tombstones:
                continue
            yield ((((mms + msd) & U64) << 64) | ((mseq + seqd) & U64)), fp, fields, values

    @staticmethod
    def _node_backward(master_id: int, lp: bytearray, tombstones: bool = False
                       ) -> Iterator[tuple[int, int, list[bytes], list[bytes]]]:
        """The node's entries from the last, found through each entry's lp-count."""
        mfields: list[bytes] | None = None
        prev = L.prev_offset
        q = prev(lp, len(lp) - 1)  # lp-count of the last entry (or the master terminator)
        while q is not None:
            lpc = _rd(lp, q)[0]
            if lpc == 0:
                return
            p = q
            for _ in range(lpc):
                p = prev(lp, p)  # type: ignore[assignment]  # lpc entries end at q: never the head
            fp = p
            q = prev(lp, p)
            flags, p = _rd(lp, p)
            if flags & FLAG_DELETED and not tombstones:
                continue
            msd, p = _rd(lp, p)
            seqd, p = _rd(lp, p)
            if flags & FLAG_SAMEFIELDS:
                if mfields is None:
                    mfields = Stream._master(lp)[2]
                fields = mfields
                values = []
                for _ in range(len(fields)):
                    v, p = _rd_bytes(lp, p)
                    values.append(v)
            else:
                n, p = _rd(lp, p)
                fields = []
                values = []
                for _ in range(n):
                    f, p = _rd_bytes(lp, p)
                    v, p = _rd_bytes(lp, p)
                    fields.append(f)
                    values.append(v)
            yield (((((master_id >> 64) + msd) & U64) << 64) | (((master_id & U64) + seqd) & U64)), fp, \
                fields, values

    def _nodes_from(self, start: int, reverse: bool) -> Iterator[tuple[bytes, int, bytearray]]:
        """Nodes that may hold IDs >= start (<= start if reverse), as streamIteratorStart seeks them:
        from the last node whose master ID is <= start (or the first/last node if none is)."""
        tail = self._tail
        if tail is None:
            if not self.rax.numele:
                return
            tail = self._load_tail()
        tail_id = key_id(tail.key)  # type: ignore[union-attr]
        if start >= tail_id:
            yield tail.key, tail_id, tail.lp  # type: ignore[union-attr]
            if not reverse:
                return
            it = self.rax.iterator()
            it.seek("<", tail.key)  # type: ignore[union-attr]
        elif not reverse:
            head = self._head_node()
            assert head is not None  # the stream has a tail node
            if start > head[1]:
                it = self.rax.iterator()
                it.seek("<=", start.to_bytes(16, "big"))
            else:
                yield head
                it = self.rax.iterator()
                it.seek(">", head[0])
        else:
            it = self.rax.iterator()
            it.seek("<=", start.to_bytes(16, "big"))
            if it.eof:
                return  # every node starts after `start`: nothing can be <= it
        step = it.prev if reverse else it.next
        while step():
            key = it.key
            yield key, key_id(key), it.value

    def encoded(self, start: int, end: int, reverse: bool, encode: Callable[[int, list[bytes], list[bytes]], Any]
                ) -> Iterator[tuple[int, Any]]:
        """Live entries with start <= id <= end as (id, encode(id, fields, values)), in order (or
        reversed), served from node views (see NodeView) so repeated reads decode nothing."""
        if start > end:
            return
        for _, master_id, lp in self._nodes_from(end if reverse else start, reverse):
            if not reverse and master_id > end:
                return
            ids, items = node_view(master_id, lp, encode)
            i = bisect_left(ids, start) if start > master_id else 0
            j = bisect_right(ids, end)
            if reverse:
                for k in range(j - 1, i - 1, -1):
                    yield ids[k], items[k]
                if i > 0:
                    return
            else:
                for k in range(i, j):
                    yield ids[k], items[k]
                if j < len(ids):
                    return

    def encoded_range(self, start: int, end: int, count: int, reverse: bool,
                      encode: Callable[[int, list[bytes], list[bytes]], Any]) -> list[Any]:
        """The encode(...) of at most count (0: all) live entries in [start, end], by list slices."""
        out: list[Any] = []
        if start > end:
            return out
        head = self._head
        if not reverse and count and head is not None and start <= head[1]:
            # From the first node (`XRANGE - + COUNT n`): one view, one slice when it holds enough.
            ids, items = node_view(head[1], head[2], encode)
            if len(ids) >= count and ids[count - 1] <= end:
                return items[:count]
        for _, master_id, lp in self._nodes_from(end if reverse else start, reverse):
            if not reverse and master_id > end:
                break
            ids, items = node_view(master_id, lp, encode)
            i = bisect_left(ids, start) if start > master_id else 0
            j = bisect_right(ids, end) if ids and ids[-1] > end else len(ids)
            if reverse:
                take = items[i:j][::-1]
            else:
                take = items[i:j]
            if count and len(out) + len(take) >= count:
                out += take[: count - len(out)]
                break
            out += take
            if (i > 0) if reverse else (j < len(ids)):
                break
        return out

    def resp_range(self, start: int, end: int, count: int, reverse: bool) -> tuple[int, bytes | bytearray]:
        """(n, the entry_resp(...) of those n entries back to back): what encoded_range(...,
        entry_resp) joins, written forwards into one buffer.  A node with a view (see NodeView),
        and the first and last nodes (which readers come back to: `XRANGE - + COUNT n`, XREAD
        following the tail), are served from their views' reply buffers; any other node is written
        straight from its listpack (compiled): a long scan (a Spark read, paging through a stream
        with `XRANGE key (<last id> + COUNT n`) reads each node once, so a view would be built,
        used once and evicted."""
        if reverse:
            items = self.encoded_range(start, end, count, True, entry_resp)
            return len(items), b"".join(items)
        out = bytearray()
        n = 0
        if start > end:
            return 0, out
        tail = self._tail
        head = self._head
        res = [0, 0]
        for _, master_id, lp in self._nodes_from(start, False):
            if master_id > end:
                break
            if (_COMPILED and (tail is None or lp is not tail.lp) and (head is None or lp is not head[2])
                    and id(lp) not in _views):
                _, _, mfields, first = Stream._master(lp)
                _resp_write(master_id, lp, first, mfields, None, None, 0, start, end, count - n if count else -1,
                            res, out)
                n += res[0]
                if res[1] or (count and n >= count):
                    break
                continue
            v = _view(master_id, lp, entry_resp)
            ids = v.ids
            i = bisect_left(ids, start) if start > master_id else 0
            j = bisect_right(ids, end) if ids and ids[-1] > end else len(ids)
            if count and n + j - i >= count:
                j = i + count - n
                count = -1
            if j > i:
                offs = v.offs
                out += memoryview(v.buf)[offs[i]:offs[j]]
                n += j - i
            if count < 0 or j < len(ids):
                break
        return n, out

    def encoded_entry(self, eid: int, encode: Callable[[int, list[bytes], list[bytes]], Any]) -> Any:
        """encode(...) of the live entry eid, or None."""
        for _, item in self.encoded(eid, eid, False, encode):
            return item
        return None

    def entries(self, start: int = 0, end: int = MAX_ID, reverse: bool = False, tombstones: bool = False
                ) -> Iterator[tuple[int, list[bytes], list[bytes]]]:
        """Live entries (id, fields, values) with start <= id <= end, in order (or reversed)."""
        for _, _, _, _, eid, fields, values in self._walk(start, end, reverse, tombstones):
            yield eid, fields, values

    def _walk(self, start: int, end: int, reverse: bool, tombstones: bool = False
              ) -> Iterator[tuple[bytes, int, bytearray, int, int, list[bytes], list[bytes]]]:
        if start > end:
            return
        if not reverse:
            for key, master_id, lp in self._nodes_from(start, False):
                if master_id > end:
                    return
                for eid, fp, fields, values in self._node_forward(master_id, lp, tombstones):
                    if eid < start:
                        continue
                    if eid > end:
                        return
                    yield key, master_id, lp, fp, eid, fields, values
        else:
            for key, master_id, lp in self._nodes_from(end, True):
                for eid, fp, fields, values in self._node_backward(master_id, lp, tombstones):
                    if eid > end:
                        continue
                    if eid < start:
                        return
                    yield key, master_id, lp, fp, eid, fields, values

    def first_entry_id(self, tombstones: bool = False) -> int | None:
        """The first entry's ID (live only, unless tombstones), None if there is none.  Our writers
        leave no node without a live entry, so this reads the first node's first entries only
        (trimming asks it after every node it removes)."""
        head = self._head_node()
        if head is None:
            return None
        lp = head[2]
        if lp[6] < 128 and lp[8] == 0:  # no tombstone in the node (a small live count, then deleted 0)
            p = self._master(lp)[3]  # so its first entry is live: read its deltas alone
            msd, p = _rd(lp, _rd(lp, p)[1])  # past the flags
            seqd = _rd(lp, p)[0]
            mid = head[1]
            return ((((mid >> 64) + msd) & U64) << 64) | (((mid & U64) + seqd) & U64)
        for eid, _, _, _ in self._node_forward(head[1], lp, tombstones):
            return eid
        for eid, _, _ in self.entries(tombstones=tombstones):  # a node of tombstones only (loaded)
            return eid
        return None

    def last_valid_id(self) -> int:
        """The ID of the last live entry, 0 if none (streamLastValidID); XREAD asks it on every call,
        so it is kept up to date by XADD and recomputed after deletions."""
        v = self._last_valid
        if v is None:
            v = 0
            for eid, _, _ in self.entries(reverse=True):
                v = eid
                break
            self._last_valid = v
        return v

    def get(self, eid: int) -> tuple[list[bytes], list[bytes]] | None:
        for _, fields, values in self.entries(eid, eid):
            return fields, values
        return None

    def exists(self, eid: int) -> bool:
        return self.get(eid) is not None

    # ---- deleting --------------------------------------------------------------------------------
    def _mark_deleted(self, key: bytes, lp: bytearray, fp: int) -> None:
        """Turn the entry whose flags are at fp into a tombstone (streamIteratorRemoveEntry)."""
        if self._tail is not None and self._tail.lp is lp:
            self._tail = None
        self._last_valid = None
        self._sampled = None
        lp[fp] |= FLAG_DELETED
        count, p = _rd(lp, 6)
        if count == 1:
            self._remove_node(key)
        else:
            before = len(lp)
            _set_int(lp, 6, count - 1)
            if len(lp) < before:
                self._release_prealloc(key)
            p = 6 + (2 if lp[6] < 128 else L.entry_size(lp, 6))
            _set_int(lp, p, _rd(lp, p)[0] + 1)
        self.length -= 1

    def _release_prealloc(self, key: bytes) -> None:
        """The node at `key` no longer holds lpNew's preallocated room, if it did: it was removed,
        or the live count's rewrite made it smaller (128 entries to 127: its encoding loses a
        byte), which lpInsert reallocates to its new size, even if the deleted count's rewrite
        then grows it again."""
        if self._prealloc is not None and self._prealloc[0] == key:
            self._prealloc = None

    def delete(self, eid: int) -> bool:
        """XDEL of one ID (streamDeleteItem); the caller maintains first_id / max_deleted_id."""
        for key, _, lp, fp, _, _, _ in self._walk(eid, eid, False):
            self._mark_deleted(key, lp, fp)
            return True
        return False

    def delete_ids(self, ids: list[int]) -> int:
        """XDEL: delete each ID, then fix first_id and max_deleted_id as xdelCommand does."""
        deleted = 0
        first_gone = False
        for eid in ids:
            if self.delete(eid):
                if eid == self.first_id:
                    first_gone = True
                if eid > self.max_deleted_id:
                    self.max_deleted_id = eid
                deleted += 1
        if deleted:
            if self.length == 0:
                self.first_id = 0
            elif first_gone:
                self.first_id = self.first_entry_id() or 0
        return deleted

    def trim(self, maxlen: int | None, minid: int | None, approx: bool, limit: int) -> int:
        """streamTrim: by MAXLEN (maxlen set) or MINID; returns the number of entries removed."""
        head = self._head
        if approx and maxlen is not None and head is not None:
            entries = head[2][6]  # the head node's live count, when it is a 7-bit int
            if entries < 128 and self.length - entries < maxlen:  # XADD's usual case: the head node stays
                return 0
        deleted = 0
        while True:
            if maxlen is not None and self.length <= maxlen:
                break
            head = self._head_node()
            if head is None:
                break
            key, master_id, lp = head
            entries = lp[6] if lp[6] < 128 else _rd(lp, 6)[0]
            if limit and deleted + entries > limit:
                break
            if maxlen is not None:
                remove = self.length - entries >= maxlen
            else:
                remove = self._node_last_id(master_id, lp) < minid  # type: ignore[operator]
            if remove:
                self._remove_node(key)
                self.length -= entries
                deleted += entries
                continue
            if approx:
                break
            if self._tail is not None and self._tail.lp is lp:
                self._tail = None
            self._sampled = None
            removed_here = 0
            for eid, fp, _, _ in self._node_forward(master_id, lp, tombstones=True):
                if maxlen is not None:
                    if self.length <= maxlen:
                        break
                elif eid >= minid:  # type: ignore[operator]
                    break
                if not lp[fp] & FLAG_DELETED:
                    lp[fp] |= FLAG_DELETED
                    removed_here += 1
                    self.length -= 1
            deleted += removed_here
            before = len(lp)
            _set_int(lp, 6, entries - removed_here)
            if len(lp) < before:
                self._release_prealloc(key)
            p = 6 + (2 if lp[6] < 128 else L.entry_size(lp, 6))
            _set_int(lp, p, _rd(lp, p)[0] + removed_here)
            break
        # Trimming removes a prefix of the live entries: the last one stays unless none does.
        if self.length == 0:
            self.first_id = self._last_valid = 0
        elif deleted:
            self.first_id = self.first_entry_id() or 0
        return deleted

    @staticmethod
    def _node_last_id(master_id: int, lp: bytearray) -> int:
        """The ID of the node's last entry, tombstone or not (lpGetEdgeStreamID, last)."""
        for eid, _, _, _ in Stream._node_backward(master_id, lp, tombstones=True):
            return eid
        return 0

    # ---- consumer groups -------------------------------------------------------------------------
    def group(self, name: bytes) -> ConsumerGroup | None:
        if self.cgroups is None:
            return None
        cg = self.cgroups.find(name)
        return None if cg is NOT_FOUND else cg

    def create_group(self, name: bytes, last_id: int, entries_read: int) -> ConsumerGroup | None:
        if self.cgroups is None:
            self.cgroups = Rax()
        cg = ConsumerGroup(last_id, entries_read)
        return cg if self.cgroups.try_insert(name, cg) else None

    def destroy_group(self, name: bytes) -> bool:
        return self.cgroups is not None and self.cgroups.remove(name)

    def range_has_tombstones(self, start: int, end: int = MAX_ID) -> bool:
        mx = self.max_deleted_id
        if not self.length or not mx:
            return False
        if self.first_id > mx:
            return False
        return start <= mx <= end

    def estimate_entries_read(self, eid: int) -> int:
        """The logical read counter of eid, or INVALID_ENTRIES_READ
        (streamEstimateDistanceFromFirstEverEntry)."""
        added = self.entries_added
        if not added:
            return 0
        if not self.length and eid <= self.last_id:
            return added
        if eid == self.last_id:
            return added
        if eid > self.last_id:
            return INVALID_ENTRIES_READ
        mx = self.max_deleted_id
        first = self.first_id
        if not mx or mx < first:
            if eid < first:
                return added - self.length
            if eid == first:
                return added - self.length + 1
        return INVALID_ENTRIES_READ

    def group_lag(self, cg: ConsumerGroup) -> int | None:
        """Entries not yet delivered to the group, None when it cannot be known."""
        if not self.entries_added:
            return 0
        if cg.entries_read != INVALID_ENTRIES_READ and not self.range_has_tombstones(cg.last_id):
            return self.entries_added - cg.entries_read
        er = self.estimate_entries_read(cg.last_id)
        if er != INVALID_ENTRIES_READ:
            return self.entries_added - er
        return None

    def group_delivered(self, cg: ConsumerGroup, eid: int) -> None:
        """Advance the group past eid when delivering it (the read-counter bookkeeping of Redis
        7.0's streamReplyWithRange, which looks for tombstones after eid, not after last_id)."""
        if eid > cg.last_id:
            if cg.entries_read != INVALID_ENTRIES_READ and not self.range_has_tombstones(eid):
                cg.entries_read += 1
            elif self.entries_added:
                cg.entries_read = self.estimate_entries_read(eid)
            cg.last_id = eid

    # ---- checking --------------------------------------------------------------------------------
    def checked_as_loaded(self) -> bool:
        """Whether `validate` would pass on a stream just loaded (RDB, RESTORE), found in one walk
        of each node that decodes no field or value: True only where validate passes; False
        leaves the verdict to validate (a node _loaded_node does not vouch for, or a cache set)."""
        if self._sampled is not None or self._last_valid is not None or self._head is not None \
                or self._tail is not None:
            return False
        try:
            self.rax.validate()
        except (AssertionError, ValueError, IndexError, TypeError, KeyError):
            return False
        live = 0
        last = -1
        first_live = -1
        for key, lp in self.rax.items():
            if len(key) != 16 or type(lp) is not bytearray:
                return False
            node = _loaded_node(key, lp, last)
            if node is None:
                return False
            live += node[0]
            if first_live < 0:
                first_live = node[1]
            last = node[2]
        return (live == self.length and (last == -1 or last <= self.last_id)
                and self.first_id == (first_live if self.length else 0))

    def validate(self) -> None:
        """Check every invariant of the layout and the metadata (for tests)."""
        self.rax.validate()
        if self._sampled is not None:  # the first nodes' sizes as mem_usage kept them
            samples, total = self._sampled
            pre = self._prealloc
            firsts = [_node_alloc(k, lp, pre) for k, lp in itertools.islice(self.rax.items(), samples)]
            assert self.rax.numele <= samples or sum(firsts) == total, "sampled node sizes"
        live = 0
        prev_id = -1
        first_live = None
        last_key = None
        for key, lp in self.rax.items():
            L.Listpack(lp).validate()
            master_id = key_id(key)
            count, deleted, mfields, p = self._master(lp)
            assert lp[p - 2 : p] == b"\x00\x01", "master terminator"
            n_live = n_dead = 0
            first = True
            for eid, fp, fields, values in self._node_forward(master_id, lp, tombstones=True):
                assert eid > prev_id, "entry IDs not increasing"
                if first:
                    assert eid == master_id, "first entry ID is not the master ID"
                    first = False
                prev_id = eid
                assert len(fields) == len(values)
                if lp[fp] & FLAG_DELETED:
                    n_dead += 1
                else:
                    n_live += 1
                    if first_live is None:
                        first_live = eid
            back = [e for e, _, _, _ in self._node_backward(master_id, lp, tombstones=True)]
            fwd = [e for e, _, _, _ in self._node_forward(master_id, lp, tombstones=True)]
            assert back == fwd[::-1], "backward walk disagrees"
            assert (count, deleted) == (n_live, n_dead), "master counters"
            assert count > 0 or deleted > 0
            live += count
            last_key = key
        assert live == self.length, "length %d, live entries %d" % (self.length, live)
        assert prev_id <= self.last_id or prev_id == -1, "entry beyond last_id"
        assert self.first_id == (first_live if self.length else 0), "first_id"
        if self._last_valid is not None:
            last_live = [e for e, _, _ in self.entries(reverse=True)][:1]
            assert self._last_valid == (last_live[0] if last_live else 0), "last valid ID"
        if self._head is not None:
            head = self.rax.first()
            assert head is not None and self._head == (head[0], key_id(head[0]), head[1]), "stale head cache"
        t = self._tail
        if t is not None:
            assert t.key == last_key and self.rax.find(last_key) is t.lp, "stale tail cache"
            count, deleted, fields, _ = self._master(t.lp)
            assert (t.count, t.deleted, t.fields, t.nelem) == (count, deleted, fields, L.num_elements(t.lp))
            assert (t.mms, t.mseq) == (key_id(t.key) >> 64, key_id(t.key) & U64)


SIZERS[Stream] = stream_usage  # MEMORY USAGE's estimate by exact class (alloc.py)
