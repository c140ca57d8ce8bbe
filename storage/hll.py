"""HyperLogLog in Redis's exact byte format (the string value GET returns is what Redis keeps).

Layout: a 16-byte header - "HYLL", encoding (0 dense, 1 sparse), 3 zero bytes, the cached
cardinality as 8 little-endian bytes whose top bit set means "stale" - then the registers of
P = 14 bits of index (16384 registers of 6 bits):
- dense: 12288 bytes, register i at bit offset 6*i, least significant bits first;
- sparse: run-length opcodes, ZERO `00xxxxxx` (1-64 zero registers), XZERO `01xxxxxx yyyyyyyy`
  (1-16384 zero registers), VAL `1vvvvvxx` (1-4 registers of value 1-32).

An element goes to register `h & 16383` with value 1 + the trailing zeros of `h >> 14 | 1 << 50`,
h = MurmurHash64A(element, seed 0xadc83b19).  The estimator is Ertl's improved raw estimator as
Redis 7.0 computes it, operation for operation in IEEE doubles, so the cached cardinality bytes
match too.

The sparse representation is edited exactly as Redis edits it (split the covering opcode into at
most ZERO/XZERO-VAL-ZERO/XZERO, then merge adjacent equal VALs in a window of 5 opcodes starting
at the one before), because the resulting bytes are observable.  To make that affordable in Python
the opcodes are split into a list of encoded opcodes with their first register indexes (`_Sparse`):
the covering opcode is found by bisection, an edit is a list splice, and re-encoding is one
`b"".join`.  The split form of recently edited values is cached (keyed by the bytearray, used only
while its bytes are unchanged), so a stream of PFADDs to one key does not decode it every time.  Promotion to dense happens when a
value exceeds 32 or the sparse bytes would pass hll-sparse-max-bytes, as in Redis.

Dense registers are unpacked/packed with bytes.translate and big-int ORs over the four 6-bit lanes
of each 3-byte group instead of a per-register loop.
"""

from __future__ import annotations

import math
import struct
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable

MAGIC = b"HYLL"
DENSE, SPARSE = 0, 1
HDR = 16
P = 14
Q = 64 - P
REGISTERS = 1 << P
P_MASK = REGISTERS - 1
DENSE_BYTES = REGISTERS * 6 // 8
DENSE_SIZE = HDR + DENSE_BYTES
VAL_MAX_VALUE = 32
VAL_MAX_LEN = 4
ZERO_MAX_LEN = 64
XZERO_MAX_LEN = 16384
ALPHA_INF = 0.721347520444481703680

_M = 0xC6A4A7935BD1E995
_MASK64 = (1 << 64) - 1
_SEED = 0xADC83B19

INVALID_HLL = "INVALIDOBJ Corrupted HLL object detected"


class CorruptHLL(Exception):
    pass


# ---- hashing ---------------------------------------------------------------------------------------
def murmurhash64a(data: bytes, seed: int = _SEED) -> int:
    """Austin Appleby's MurmurHash64A, little-endian blocks, as Redis uses it."""
    n = len(data)
    h = (seed ^ (n * _M)) & _MASK64
    nblocks = n >> 3
    if nblocks:
        for k in struct.unpack_from("<%dQ" % nblocks, data):
            k = (k * _M) & _MASK64
            k ^= k >> 47
            h ^= (k * _M) & _MASK64
            h = (h * _M) & _MASK64
    rem = n & 7
    if rem:
        h ^= int.from_bytes(data[n - rem:], "little")
        h = (h * _M) & _MASK64
    h ^= h >> 47
    h = (h * _M) & _MASK64
    return h ^ (h >> 47)


def pattern(element: bytes) -> tuple[int, int]:
    """(register index, value) the element would set."""
    h = murmurhash64a(element)
    rest = (h >> P) | (1 << Q)
    return h & P_MASK, (rest & -rest).bit_length()


# ---- header --------------------------------------------------------------------------------------
def new_sparse() -> bytearray:
    """An empty HLL as Redis creates it: sparse, one XZERO covering every register."""
    return bytearray(MAGIC + b"\x01\x00\x00\x00" + b"\x00" * 8 + b"\x7f\xff")


def is_hll(v: bytes | bytearray) -> bool:
    """Redis's isHLLObjectOrReply test on a string value."""
    return (len(v) >= HDR and v[:4] == MAGIC and v[4] <= SPARSE
            and (v[4] == SPARSE or len(v) == DENSE_SIZE))


def invalidate_cache(buf: bytearray) -> None:
    buf[15] |= 0x80


def cached_card(buf: bytes | bytearray) -> int | None:
    if buf[15] & 0x80:
        return None
    return int.from_bytes(buf[8:16], "little")


def set_cached_card(buf: bytearray, card: int) -> None:
    buf[8:16] = (card & _MASK64).to_bytes(8, "little")


# ---- dense registers -------------------------------------------------------------------------------
def _table(f: Callable[[int], int]) -> bytes:
    return bytes(f(i) & 0xFF for i in range(256))


_LOW6 = _table(lambda b: b & 63)
_SHR6 = _table(lambda b: b >> 6)
_LOW4_SHL2 = _table(lambda b: (b & 15) << 2)
_SHR4 = _table(lambda b: b >> 4)
_LOW2_SHL4 = _table(lambda b: (b & 3) << 4)
_SHR2 = _table(lambda b: b >> 2)
_LOW2_SHL6 = _table(lambda b: (b & 3) << 6)
_LOW4_SHL4 = _table(lambda b: (b & 15) << 4)
_SHL2 = _table(lambda b: b << 2)
_GROUPS = REGISTERS // 4


def _or(a: bytes, b: bytes) -> bytes:
    """Bytewise OR of two equal-length strings whose set bits never collide."""
    n = len(a)
    return (int.from_bytes(a, "big") | int.from_bytes(b, "big")).to_bytes(n, "big")


def dense_registers(buf: bytes | bytearray) -> bytearray:
    """The 16384 register values of a dense HLL, one byte each."""
    raw = bytes(buf[HDR:DENSE_SIZE])
    b0, b1, b2 = raw[0::3], raw[1::3], raw[2::3]
    out = bytearray(REGISTERS)
    out[0::4] = b0.translate(_LOW6)
    out[1::4] = _or(b0.translate(_SHR6), b1.translate(_LOW4_SHL2))
    out[2::4] = _or(b1.translate(_SHR4), b2.translate(_LOW2_SHL4))
    out[3::4] = b2.translate(_SHR2)
    return out


def pack_dense(regs: bytes | bytearray) -> bytearray:
    """The 12288 dense bytes for 16384 register values (each < 64)."""
    r0, r1, r2, r3 = bytes(regs[0::4]), bytes(regs[1::4]), bytes(regs[2::4]), bytes(regs[3::4])
    out = bytearray(DENSE_BYTES)
    out[0::3] = _or(r0, r1.translate(_LOW2_SHL6))
    out[1::3] = _or(r1.translate(_SHR2), r2.translate(_LOW4_SHL4))
    out[2::3] = _or(r2.translate(_SHR4), r3.translate(_SHL2))
    return out


def dense_get(buf: bytes | bytearray, i: int) -> int:
    bit = i * 6
    byte = HDR + (bit >> 3)
    fb = bit & 7
    v = buf[byte] >> fb
    if fb > 2:
        v |= buf[byte + 1] << (8 - fb)
    return v & 63


def dense_set(buf: bytearray, i: int, v: int) -> None:
    bit = i * 6
    byte = HDR + (bit >> 3)
    fb = bit & 7
    buf[byte] = (buf[byte] & ~(63 << fb) & 0xFF) | ((v << fb) & 0xFF)
    if fb > 2:
        fb8 = 8 - fb
        buf[byte + 1] = (buf[byte + 1] & ~(63 >> fb8) & 0xFF) | (v >> fb8)


# ---- sparse ----------------------------------------------------------------------------------------
_ZERO, _XZERO, _VAL = 0, 1, 2
_BYTE = [bytes((b,)) for b in range(256)]
# (kind, value, run) of every one-byte opcode; XZERO's first bytes (0x40-0x7f) need the second.
_OP1: list[tuple[int, int, int] | None] = [
    (_VAL, ((b >> 2) & 31) + 1, (b & 3) + 1) if b & 0x80 else None if b & 0x40 else (_ZERO, 0, b + 1)
    for b in range(256)]


def _info(op: bytes) -> tuple[int, int, int]:
    """(kind, value, run) of one encoded opcode."""
    if len(op) == 1:
        info = _OP1[op[0]]
        if info is not None:
            return info
        # an XZERO cut short by the string's end (a corrupt value): Redis reads the terminating
        # NUL as its second byte, and leaves the byte alone when it rewrites what comes before
        return _XZERO, 0, ((op[0] & 63) << 8) + 1
    return _XZERO, 0, ((op[0] & 63) << 8 | op[1]) + 1


def _val_op(val: int, run: int) -> bytes:
    return _BYTE[0x80 | (val - 1) << 2 | (run - 1)]


def _zero_op(run: int) -> bytes:
    if run <= ZERO_MAX_LEN:
        return _BYTE[run - 1]
    return bytes((0x40 | (run - 1) >> 8, (run - 1) & 0xFF))


class _Sparse:
    """A sparse HLL split into its opcodes: ops[i] is the encoded opcode (1 or 2 bytes) whose
    run starts at register starts[i]; `nbytes` is the string's length once re-joined.  Editing
    splices these lists (bisect finds the covering opcode), and `b"".join(ops)` re-encodes."""

    __slots__ = ("ops", "starts", "nbytes", "covered")

    def __init__(self, buf: bytes | bytearray) -> None:
        ops: list[bytes] = []
        starts: list[int] = []
        byte, op1 = _BYTE, _OP1
        idx = 0
        p, end = HDR, len(buf)
        while p < end:
            b = buf[p]
            starts.append(idx)
            info = op1[b]
            if info is not None:
                ops.append(byte[b])
                idx += info[2]
                p += 1
            else:
                if p + 1 < end:
                    second = buf[p + 1]
                    ops.append(bytes((b, second)))
                else:
                    second = 0
                    ops.append(byte[b])  # cut short: kept as the one byte it is (see _info)
                idx += ((b & 63) << 8 | second) + 1
                p += 2
        self.ops, self.starts, self.covered = ops, starts, idx
        self.nbytes = end

    def decoded(self) -> list[tuple[int, int, int]]:
        return [_info(op) for op in self.ops]

    def write_to(self, buf: bytearray) -> None:
        buf[HDR:] = b"".join(self.ops)

    def set(self, index: int, count: int, max_bytes: int) -> int:
        """hllSparseSet: 0 unchanged, 1 updated, 2 must promote to dense first."""
        if count > VAL_MAX_VALUE:
            return 2
        ops, starts = self.ops, self.starts
        i = bisect_right(starts, index) - 1
        if i < 0 or index >= self.covered:
            raise CorruptHLL
        op = ops[i]
        kind, val, run = _info(op)
        if kind == _VAL:
            if val >= count:
                return 0
            if run == 1:
                ops[i] = _val_op(count, 1)
                self._merge(i)
                return 1
        elif kind == _ZERO and run == 1:
            ops[i] = _val_op(count, 1)
            self._merge(i)
            return 1
        first = starts[i]
        last = first + run - 1
        seq: list[bytes] = []
        new_starts: list[int] = []
        if index != first:
            seq.append(_val_op(val, index - first) if kind == _VAL else _zero_op(index - first))
            new_starts.append(first)
        seq.append(_val_op(count, 1))
        new_starts.append(index)
        if index != last:
            seq.append(_val_op(val, last - index) if kind == _VAL else _zero_op(last - index))
            new_starts.append(index + 1)
        delta = sum(map(len, seq)) - len(op)
        if delta > 0 and self.nbytes + delta > max_bytes:
            return 2
        ops[i:i + 1] = seq
        starts[i:i + 1] = new_starts
        self.nbytes += delta
        self._merge(i)
        return 1

    def _merge(self, i: int) -> None:
        """Merge adjacent VALs of equal value (combined run <= 4) in the 5-opcode window that
        starts at the opcode before the updated one."""
        ops, starts = self.ops, self.starts
        p = i - 1 if i > 0 else 0
        scan = 5
        while p < len(ops) and scan:
            scan -= 1
            op = ops[p]
            if not op[0] & 0x80:  # ZERO or XZERO
                p += 1
                continue
            if p + 1 < len(ops):
                nxt = ops[p + 1]
                # both VAL with the same value: bits 2-6 agree and the high bit is set
                if nxt[0] & 0xFC == op[0] & 0xFC:
                    run = (op[0] & 3) + (nxt[0] & 3) + 2
                    if run <= VAL_MAX_LEN:
                        ops[p:p + 2] = [_BYTE[(op[0] & 0xFC) | (run - 1)]]
                        del starts[p + 1]
                        self.nbytes -= 1
                        continue
            p += 1

    def registers(self) -> bytearray:
        """hllSparseToDense's register values; CorruptHLL unless exactly 16384 are covered."""
        regs = bytearray(REGISTERS)
        idx = 0
        for op, start in zip(self.ops, self.starts, strict=True):
            kind, val, run = _info(op)
            if kind == _VAL:
                if start + run > REGISTERS:
                    break
                regs[start:start + run] = _BYTE[val] * run
            idx = start + run
        else:
            if idx == REGISTERS:
                return regs
        raise CorruptHLL

    def histogram(self) -> list[int]:
        if self.covered != REGISTERS:
            raise CorruptHLL
        hist = [0] * 64
        for op, n in Counter(self.ops).items():
            _, val, run = _info(op)
            hist[val] += run * n
        return hist


# Decoded sparse values of recently edited HLLs: a PFADD stream on one key decodes it once.  An
# entry is used only while the string still holds exactly the opcodes it was taken from.
_CACHE: dict[int, tuple[bytearray, bytes, _Sparse]] = {}
_CACHE_SIZE = 16


def _sparse_of(buf: bytes | bytearray) -> _Sparse:
    ent = _CACHE.get(id(buf))
    if ent is not None and ent[0] is buf and buf[HDR:] == ent[1]:
        return ent[2]
    return _Sparse(buf)


def _remember(buf: bytearray, sp: _Sparse) -> None:
    key = id(buf)
    _CACHE.pop(key, None)
    if len(_CACHE) >= _CACHE_SIZE:
        del _CACHE[next(iter(_CACHE))]
    _CACHE[key] = (buf, bytes(buf[HDR:]), sp)


def _forget(buf: bytearray) -> None:
    _CACHE.pop(id(buf), None)


# ---- estimator -----------------------------------------------------------------------------------
def _sigma(x: float) -> float:
    if x == 1.0:
        return math.inf
    y = 1.0
    z = x
    while True:
        x *= x
        zp = z
        z += x * y
        y += y
        if zp == z:
            return z


def _tau(x: float) -> float:
    if x == 0.0 or x == 1.0:
        return 0.0
    y = 1.0
    z = 1 - x
    while True:
        x = math.sqrt(x)
        zp = z
        y *= 0.5
        d = 1 - x
        z -= d * d * y
        if zp == z:
            return z / 3


def estimate(hist: list[int]) -> int:
    m = float(REGISTERS)
    z = m * _tau((m - hist[Q + 1]) / m)
    for j in range(Q, 0, -1):
        z += hist[j]
        z *= 0.5
    z += m * _sigma(hist[0] / m)
    e = ALPHA_INF * m * m / z
    f = math.floor(e)
    return int(f + 1 if e - f >= 0.5 else f)  # llroundl: halves away from zero


def _hist_of(regs: bytes | bytearray) -> list[int]:
    """Register-value histogram; only values 0..Q+1 enter the estimate (others cannot be set
    by PFADD and Redis ignores them too)."""
    b = bytes(regs)
    return [b.count(_BYTE[v]) for v in range(Q + 2)] + [0] * (62 - Q)


def count_registers(regs: bytes | bytearray) -> int:
    return estimate(_hist_of(regs))


def count(buf: bytes | bytearray) -> int:
    """The estimate for a dense or sparse HLL (ignoring the cache); CorruptHLL if invalid."""
    if buf[4] == DENSE:
        return estimate(_hist_of(dense_registers(buf)))
    return estimate(_sparse_of(buf).histogram())


def registers(buf: bytes | bytearray) -> bytearray:
    """Register values of a dense or sparse HLL, for merging (hllMerge)."""
    if buf[4] == DENSE:
        return dense_registers(buf)
    return _sparse_of(buf).registers()


_LANE_HIGH = int.from_bytes(b"\x80" * REGISTERS, "little")


def max_into(acc: bytearray, regs: bytes | bytearray) -> None:
    """acc[i] = max(acc[i], regs[i]) for register values < 128, as one SWAR computation on
    big ints (one byte lane per register) instead of 16384 Python-level max calls."""
    a = int.from_bytes(acc, "little")
    b = int.from_bytes(regs, "little")
    ge = (((a | _LANE_HIGH) - b) & _LANE_HIGH) >> 7  # 1 in each lane where a >= b (no borrows)
    mask = ge * 255
    acc[:] = ((a & mask) | (b & ~mask)).to_bytes(REGISTERS, "little")


# ---- updates -------------------------------------------------------------------------------------
def to_dense(buf: bytearray) -> None:
    """hllSparseToDense in place (header, cache included, kept); no-op when already dense."""
    if buf[4] == DENSE:
        return
    regs = _sparse_of(buf).registers()
    _forget(buf)
    buf[HDR:] = pack_dense(regs)
    buf[4] = DENSE


def add(buf: bytearray, elements: list[bytes], sparse_max: int) -> int:
    """PFADD's register updates in place; returns how many registers changed.  May promote the
    value to dense.  Raises CorruptHLL (after applying the updates before the bad one)."""
    updated = 0
    i = 0
    n = len(elements)
    if buf[4] == SPARSE:
        sp = _sparse_of(buf)
        promote = False
        try:
            while i < n:
                index, cnt = pattern(elements[i])
                r = sp.set(index, cnt, sparse_max)
                if r == 2:
                    promote = True
                    break
                updated += r
                i += 1
        finally:
            if updated:
                sp.write_to(buf)
            _remember(buf, sp)
        if not promote:
            return updated
        to_dense(buf)
    while i < n:
        index, cnt = pattern(elements[i])
        if cnt > dense_get(buf, index):
            dense_set(buf, index, cnt)
            updated += 1
        i += 1
    return updated


def write_registers(buf: bytearray, regs: bytes | bytearray, sparse_max: int) -> None:
    """PFMERGE's final step: raise every register of `buf` to `regs` in index order, editing a
    sparse value opcode by opcode (possibly promoting it) exactly as Redis does."""
    j = 0
    if buf[4] == SPARSE:
        sp = _sparse_of(buf)
        promote = False
        try:
            while j < REGISTERS:
                v = regs[j]
                if v and sp.set(j, v, sparse_max) == 2:
                    promote = True
                    break
                j += 1
        finally:
            sp.write_to(buf)
            _remember(buf, sp)
        if not promote:
            return
        to_dense(buf)
    cur = dense_registers(buf)
    merged = bytearray(cur)
    max_into(merged, regs)  # registers before j are already in: max is idempotent
    if merged != cur:
        buf[HDR:] = pack_dense(merged)


# ---- introspection (PFDEBUG / PFSELFTEST) ----------------------------------------------------------
def describe_sparse(buf: bytes | bytearray) -> bytes:
    """PFDEBUG DECODE's text: z:<run> for ZERO, Z:<run> for XZERO, v:<value>,<run> for VAL."""
    names = []
    for kind, val, run in _Sparse(buf).decoded():
        if kind == _VAL:
            names.append(b"v:%d,%d" % (val, run))
        elif kind == _XZERO:
            names.append(b"Z:%d" % run)
        else:
            names.append(b"z:%d" % run)
    return b" ".join(names)


def selftest() -> str | None:
    """Register packing round trips and estimator accuracy; None when everything holds."""
    import random

    rnd = random.Random(0)
    buf = bytearray(MAGIC + b"\x00" * 12) + bytearray(DENSE_BYTES)
    regs = bytearray(rnd.randrange(64) for _ in range(REGISTERS))
    for i, v in enumerate(regs):
        dense_set(buf, i, v)
    for i, v in enumerate(regs):
        if dense_get(buf, i) != v:
            return "TESTFAILED Register error at %d" % i
    if dense_registers(buf) != regs or pack_dense(regs) != buf[HDR:]:
        return "TESTFAILED Register packing error"
    sparse = new_sparse()
    dense = new_sparse()
    to_dense(dense)
    relerr = 1.04 / math.sqrt(REGISTERS)
    checkpoint = 1
    for n in range(1, 10001):
        element = b"%d" % rnd.getrandbits(64)
        add(sparse, [element], 3000)
        add(dense, [element], 3000)
        if n == checkpoint:
            card = count(dense)
            if card != count(sparse):
                return "TESTFAILED Sparse and dense estimates differ at %d" % n
            if abs(card - n) > 5 * relerr * n + 1:
                return "TESTFAILED Too big error. card:%d abserr:%d" % (card, abs(card - n))
            checkpoint *= 10
    return None
