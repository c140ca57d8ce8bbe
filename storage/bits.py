"""Bit-level primitives over Redis string values (bytes or bytearray), for the bitmap commands.

Bit numbering is Redis's: bit 0 is the most significant bit of byte 0, so a string reads as one
big-endian bit array.  The range functions work through `int.from_bytes` / `int.to_bytes`, which run at
C speed; ranges longer than `_CHUNK` bytes are processed in chunks so that a BITCOUNT or BITPOS over a
512 MB value never materialises a 512 MB integer.

Callers validate and clamp ranges first: these functions assume in-range, non-empty bit ranges,
except BITFIELD's, whose reads past the end of the string read zeros as Redis's BITFIELD GET does.

BITFIELD's operations (`apply_fields`) run on 64-bit integers as Redis's bitops.c does: a field is
read and written byte by byte as a uint64, signed fields are its two's complement int64, and the
overflow checks reproduce C's wrap-around (including Redis's results for SET values far outside a
field's range).  Compiled (bits.pxd), these are C integers and the string's bytes a C pointer;
interpreted, the same code runs on Python ints, with `_u64` / `_s64` doing the wrapping C does.
"""

from __future__ import annotations

from typing import Any

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

if not cython.compiled:  # compiled, bits.pxd cimports them inline from reply.pxd
    from raxdb.protocol.reply import digits, int_size, put_head, put_int

_CHUNK = 1 << 16

# Byte-wise NOT for BITOP NOT.
_INVERT = bytes(255 - i for i in range(256))


def count_bits(buf: bytes | bytearray, lo: int, hi: int) -> int:
    """Number of set bits at positions lo..hi (inclusive), 0 <= lo <= hi < 8 * len(buf)."""
    b0, b1 = lo >> 3, hi >> 3
    first_mask = 0xFF >> (lo & 7)
    last_mask = (0xFF << (7 - (hi & 7))) & 0xFF
    if b0 == b1:
        return (buf[b0] & first_mask & last_mask).bit_count()
    total = (buf[b0] & first_mask).bit_count() + (buf[b1] & last_mask).bit_count()
    mv = memoryview(buf)
    for start in range(b0 + 1, b1, _CHUNK):
        total += int.from_bytes(mv[start:min(start + _CHUNK, b1)], "little").bit_count()
    return total


def first_bit(buf: bytes | bytearray, bit: int, lo: int, hi: int) -> int:
    """Position of the first bit equal to `bit` (0 or 1) at positions lo..hi, or -1."""
    b0, b1 = lo >> 3, hi >> 3
    mv = memoryview(buf)
    for start in range(b0, b1 + 1, _CHUNK):
        end = min(start + _CHUNK, b1 + 1)
        nbits = (end - start) << 3
        x = int.from_bytes(mv[start:end], "big")
        if not bit:
            x ^= (1 << nbits) - 1
        if start == b0:
            x &= (1 << (nbits - (lo & 7))) - 1
        if end == b1 + 1:
            x &= ~((1 << (7 - (hi & 7))) - 1)
        if x:
            return (start << 3) + nbits - x.bit_length()
    return -1


def get_field(buf: bytes | bytearray | None, offset: int, bits: int) -> int:
    """The unsigned `bits`-wide field at bit `offset`; bits past the end of `buf` read as 0."""
    b0 = offset >> 3
    n = ((offset + bits - 1) >> 3) - b0 + 1
    if n == 1:  # within one byte (u8 at a multiple of 8, any narrower field): no slice, no int.from_bytes
        x = buf[b0] if buf is not None and b0 < len(buf) else 0
        return (x >> (8 - (offset & 7) - bits)) & ((1 << bits) - 1)
    chunk = buf[b0:b0 + n] if buf is not None else b""
    x = int.from_bytes(chunk, "big") << ((n - len(chunk)) << 3)
    return (x >> ((n << 3) - (offset & 7) - bits)) & ((1 << bits) - 1)


def set_field(buf: bytearray, offset: int, bits: int, value: int) -> None:
    """Store the low `bits` bits of `value` at bit `offset`; `buf` must already be long enough."""
    b0 = offset >> 3
    n = ((offset + bits - 1) >> 3) - b0 + 1
    shift = (n << 3) - (offset & 7) - bits
    ones = (1 << bits) - 1
    if n == 1:
        buf[b0] = (buf[b0] & ~(ones << shift)) | ((value & ones) << shift)
        return
    x = int.from_bytes(buf[b0:b0 + n], "big")
    x = (x & ~(ones << shift)) | ((value & ones) << shift)
    buf[b0:b0 + n] = x.to_bytes(n, "big")


def bitwise(op: bytes, sources: list[bytes | bytearray], length: int) -> bytearray:
    """BITOP: `op` is b"and", b"or", b"xor" or b"not"; shorter sources are zero-padded to `length`."""
    if op == b"not":
        return bytearray(sources[0].translate(_INVERT))
    acc = None
    for src in sources:
        x = int.from_bytes(src, "big") << ((length - len(src)) << 3)
        if acc is None:
            acc = x
        elif op == b"and":
            acc &= x
        elif op == b"or":
            acc |= x
        else:
            acc ^= x
    return bytearray((acc or 0).to_bytes(length, "big"))


# ---- BITFIELD ------------------------------------------------------------------------------------
GET, SET, INCRBY = 0, 1, 2  # operation codes
WRAP, SAT, FAIL = 0, 1, 2  # OVERFLOW modes

_U64 = (1 << 64) - 1
_TWO64 = 1 << 64
# The codes under private names bits.pxd declares C ints (the public names stay module attributes).
_GET, _INCRBY, _WRAP, _FAIL = GET, INCRBY, WRAP, FAIL
_FAILED = -1


def _u64(x: int) -> int:
    """An int64 as the uint64 of the same bits (a C cast)."""
    if not cython.compiled:
        x &= _U64
    return x


def _s64(x: int) -> int:
    """A uint64 (or any int, wrapped to 64 bits) as the int64 of the same bits (a C cast)."""
    if not cython.compiled:
        x &= _U64
        if x >> 63:
            return x - _TWO64
    return x


def _signed(x: int, bits: int) -> int:
    """The low `bits` bits of the uint64 `x` as a signed `bits`-wide integer, sign-extended."""
    mask = _U64 >> (64 - bits)
    x &= mask
    if (x >> (bits - 1)) & 1:
        x |= _U64 ^ mask
    return _s64(x)


def _read(p: Any, length: int, offset: int, bits: int) -> int:
    """The unsigned `bits`-wide field at bit `offset` of `p` (`length` bytes; compiled, a C pointer
    to them), as a uint64; bytes past `length` read as 0, as BITFIELD GET's zero-padded copy does."""
    i = offset >> 3
    have = 8 - (offset & 7)  # the field's bits in its first byte
    x = (p[i] if i < length else 0) & (0xFF >> (offset & 7))
    if have >= bits:
        return x >> (have - bits)
    while True:
        i += 1
        byte = p[i] if i < length else 0
        need = bits - have
        if need <= 8:
            return (x << need) | (byte >> (8 - need))
        x = (x << 8) | byte
        have += 8


def _write(p: Any, offset: int, bits: int, value: int) -> None:
    """Store the low `bits` bits of the uint64 `value` at bit `offset` of `p` (long enough)."""
    i = offset >> 3
    take = 8 - (offset & 7)  # the field's bits in its first byte
    if take >= bits:
        shift = take - bits
        mask = ((1 << bits) - 1) << shift
        p[i] = (p[i] & ~mask) | ((value << shift) & mask)
        return
    rest = bits - take
    mask = 0xFF >> (offset & 7)
    p[i] = (p[i] & ~mask) | ((value >> rest) & mask)
    while rest >= 8:
        rest -= 8
        i += 1
        p[i] = (value >> rest) & 0xFF
    if rest:
        i += 1
        shift = 8 - rest
        mask = (0xFF << shift) & 0xFF
        p[i] = (p[i] & ~mask) | ((value << shift) & mask)


def _signed_overflow(value: int, incr: int, bits: int, mode: int) -> tuple[int, int]:
    """checkSignedBitfieldOverflow, with its int64 wrap-around: (overflowed, the wrapped or
    saturated value), (0, 0) when `value + incr` fits."""
    hi = _s64(_U64 >> (64 - bits) >> 1)  # (one shift by 65 - bits would be by 64 for an i1: undefined in C)
    lo = -hi - 1
    max_incr = _s64(_u64(hi) - _u64(value))
    min_incr = _s64(_u64(lo) - _u64(value))
    if value > hi or (bits != 64 and incr > max_incr) or (value >= 0 and incr > 0 and incr > max_incr):
        limit = hi
    elif value < lo or (bits != 64 and incr < min_incr) or (value < 0 and incr < 0 and incr < min_incr):
        limit = lo
    else:
        return 0, 0
    if mode == _WRAP:
        limit = _signed(_u64(value) + _u64(incr), bits)
    return 1, limit


def _unsigned_overflow(value: int, incr: int, bits: int, mode: int) -> tuple[int, int]:
    """checkUnsignedBitfieldOverflow: `value` a uint64, `incr` an int64."""
    hi = _U64 >> (64 - bits)
    if value > hi or (incr > 0 and incr > _s64(hi - value)):
        limit = hi
    elif incr < 0 and incr < _s64(_U64 - value + 1):  # C's int64 of -value
        limit = 0
    else:
        return 0, 0
    if mode == _WRAP:
        limit = (value + _u64(incr)) & hi
    return 1, limit


# BITFIELD's operations as parsed: four int64 words each, in a bytearray (`field_ops`) that the
# parse fills (`put_field`) and `apply_fields` runs in one pass, with no Python object per
# operation: the code (op | overflow mode << 2; _FAILED once it failed under OVERFLOW FAIL), the
# width (negative for a signed field), the bit offset, and the SET / INCRBY value, which running
# the operation replaces by its reply value.  Compiled, the words are read and written through a
# C pointer; interpreted, through a memoryview cast to int64s.
_OP_WORDS = 4


def zeroed(n: int) -> bytearray:
    """A new bytearray of `n` zero bytes (SETBIT's and BITFIELD's new string): compiled, made
    unfilled and cleared in C, without a call of the bytearray type."""
    if cython.compiled:
        buf = PyByteArray_FromStringAndSize(cython.NULL, n)  # noqa: F821 (bits.pxd's cimport)
        memset(PyByteArray_AS_STRING(buf), 0, n)  # noqa: F821 (bits.pxd's cimport)
        return buf
    return bytearray(n)


# Compiled, the room BITFIELD's operations use when they fit and no one holds it: a request's parse,
# run and reply are done before its handler returns, so one buffer serves every request, made once,
# and a request needs no allocation of its own (~200 instructions).  Its reference count says
# whether it is free: a holder's reference (a nested or another thread's BITFIELD, a caller keeping
# the operations) makes the next call allocate, and is gone however the holder ends.
_SHARED_OPS = 16
_shared = bytearray(_SHARED_OPS * _OP_WORDS * 8)


def field_ops(count: int) -> bytearray:
    """Room for `count` operations (compiled, not zeroed: `put_field` writes what is read)."""
    if cython.compiled:
        # (its count read through a pointer: passing the object would take a reference first)
        if count <= _SHARED_OPS and _Py_REFCNT(cython.cast(cython.pointer(PyObject), _shared)) == 1:  # noqa: F821
            return _shared
        return PyByteArray_FromStringAndSize(cython.NULL, count * _OP_WORDS * 8)  # noqa: F821 (bits.pxd)
    return bytearray(count * _OP_WORDS * 8)


def _words(ops: bytearray) -> Any:
    """The operations' int64 words, indexable (compiled, a C pointer to them)."""
    if cython.compiled:
        return cython.cast(cython.p_longlong, PyByteArray_AS_STRING(ops))  # noqa: F821 (bits.pxd's cimport)
    return memoryview(ops).cast("q")


def put_field(ops: bytearray, i: int, op: int, mode: int, width: int, offset: int, value: int) -> None:
    """Operation `i`: `op` (GET, SET, INCRBY) under the overflow `mode` on the field of `width`
    (negative for a signed field) at bit `offset`; `value` SET's value or INCRBY's increment."""
    q = _words(ops)
    w = i * _OP_WORDS
    q[w] = op | mode << 2
    q[w + 1] = width
    q[w + 2] = offset
    q[w + 3] = value


def apply_fields(buf: bytes | bytearray | None, ops: bytearray, count: int, grown: bool) -> int:
    """Run BITFIELD's first `count` operations (`put_field`) in order on `buf` (None: a missing
    key, GETs only), which is a bytearray long enough for every SET and INCRBY.  Each operation's
    reply value replaces its value word, or its code becomes _FAILED (one that failed under
    OVERFLOW FAIL, which writes nothing); `field_reply` writes the reply from them.  Returns the
    number of changes: the writes that changed a field's value, or every write when `grown` (a
    string created or lengthened for them)."""
    length = 0 if buf is None else len(buf)
    if cython.compiled:
        if buf is None:
            p = cython.NULL
        elif isinstance(buf, bytearray):
            p = cython.cast(cython.p_uchar, PyByteArray_AS_STRING(buf))  # noqa: F821 (bits.pxd's cimport)
        else:
            p = cython.cast(cython.p_uchar, PyBytes_AS_STRING(buf))  # noqa: F821 (bits.pxd's cimport)
    else:
        p = buf
    q = _words(ops)
    changes = 0
    for i in range(count):
        w = i * _OP_WORDS
        op = q[w] & 3
        mode = q[w] >> 2
        width = q[w + 1]
        offset = q[w + 2]
        value = q[w + 3]
        bits = -width if width < 0 else width
        old = _read(p, length, offset, bits)
        if width < 0:
            s_old = _signed(old, bits)
            if op == _GET:
                q[w + 3] = s_old
                continue
            if op == _INCRBY:
                overflowed, s_new = _signed_overflow(s_old, value, bits, mode)
                if not overflowed:
                    s_new = s_old + value
                result = s_new
            else:
                overflowed, s_new = _signed_overflow(value, 0, bits, mode)
                if not overflowed:
                    s_new = value
                result = s_old
            changed = s_old != s_new
            new = _u64(s_new)
        else:
            if op == _GET:
                q[w + 3] = _s64(old)
                continue
            if op == _INCRBY:
                overflowed, new = _unsigned_overflow(old, value, bits, mode)
                if not overflowed:
                    new = _u64(old + value)
                result = _s64(new)
            else:
                overflowed, new = _unsigned_overflow(_u64(value), 0, bits, mode)
                if not overflowed:
                    new = _u64(value)
                result = _s64(old)
            changed = old != new
        if overflowed and mode == _FAIL:
            q[w] = _FAILED
            continue
        q[w + 3] = result
        _write(p, offset, bits, new)
        if grown or changed:
            changes += 1
    return changes


def field_reply(ops: bytearray, count: int, null: bytes) -> bytes:
    """BITFIELD's reply to the first `count` operations, run (`apply_fields`): an array of their
    values as integers, `null` (the protocol's null) for each that failed, written straight into
    one bytes object."""
    q = _words(ops)
    nlen = len(null)
    size = digits(count) + 3
    for i in range(count):
        w = i * _OP_WORDS
        if q[w] == _FAILED:
            size += nlen
        else:
            size += int_size(q[w + 3])
    if cython.compiled:
        out = PyBytes_FromStringAndSize(cython.NULL, size)  # noqa: F821 (bits.pxd's cimport)
        d = cython.cast(cython.p_uchar, PyBytes_AS_STRING(out))  # noqa: F821
    else:
        d = bytearray(size)
    k = put_head(d, 0, 42, count)
    for i in range(count):
        w = i * _OP_WORDS
        if q[w] == _FAILED:
            for j in range(nlen):
                d[k + j] = null[j]
            k += nlen
            continue
        k = put_int(d, k, q[w + 3])
    if cython.compiled:
        return out
    return bytes(d)
