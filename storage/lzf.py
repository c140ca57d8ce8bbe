"""LZF, byte for byte as Redis 7.0 uses it to compress strings in RDB files and DUMP payloads.

Redis vendors liblzf 3.6 built with HLOG 16, VERY_FAST 1, ULTRA_FAST 0, INIT_HTAB 0, hash slots
holding offsets (64-bit builds) and CHECK_INPUT 1.  `compress` reproduces `lzf_compress` exactly,
so an RDB file or DUMP payload written by raxdb can be byte-identical to Redis's; `decompress`
accepts anything `lzf_decompress` accepts and rejects malformed input with ValueError.

Format: a stream of
  000LLLLL + L+1 literal bytes                          (runs of 1..32 literals)
  LLLooooo oooooooo        copy L+2 bytes from offset o+1 back   (L 1..6: 3..8 bytes)
  111ooooo LLLLLLLL oooooooo  copy L+9 bytes from offset o+1 back (9..264 bytes)
Offsets reach at most 8192 bytes back; a copy may overlap its own output (runs).

Compressor invariants, each mirroring a detail of lzf_c.c that changes the output bytes:
* The hash of position p is IDX(b[p]<<16 | b[p+1]<<8 | b[p+2]) = ((h >> 8) - 5*h) & 0xffff; the
  table holds the last position hashed to each slot (collisions overwrite).
* A candidate is used when it is 1..8192 bytes back and its first 3 bytes equal the current ones;
  a candidate at input position 0 is never used (`ref > in_data`).
* The C table is uninitialised stack memory, yet the output depends on the input alone: a slot
  still holding a stale value when position p reads it means the 3 bytes at p occurred nowhere
  earlier (the first occurrence of every 3 bytes is hashed: positions skipped inside a match are
  copies of earlier ones), so a stale candidate always fails the 3-byte test.  A zeroed table is
  therefore exact, and so is this module's reused table (see `_Table`).
* Match length: at most 264 and at most (bytes left - 2), except that the C matcher, when more than
  16 bytes may match, compares 16 bytes unrolled before looking at the limit, so near the end of
  the input a match can be 19 bytes long although the limit is 17 or 18.  Reproduced here.
* After a match that does not end within the last 2 input bytes, only its last two positions are
  hashed (VERY_FAST), then scanning resumes after it; the last 2 input bytes are always literals.
* Output space is checked exactly where lzf_compress checks it; `compress` returns None wherever
  lzf_compress returns 0 (out of room, empty input), so callers apply Redis's rule unchanged:
  rdbSaveLzfStringObject compresses strings longer than 20 bytes into len-4 bytes and stores the
  string raw when that fails.

Why it is built this way: it runs on every string over 20 bytes written to an RDB file, so the
per-position work is kept to a few integer operations.  The hash table is a list reused across
calls (allocating 65536 slots would cost more than compressing a short string).  A candidate is
confirmed and measured in one step: a 16-byte window of both positions is compared as bytes and,
if it differs, the first differing byte comes from one xor of two big-endian integers (fewer than
3 equal bytes: no match); only when all 16 bytes agree is the rest (up to 264) compared.
Decompression works per token (slices and bytearray appends), never per byte; compiled, it is
liblzf's loop in C, writing into the result's own bytes (`_decompress_c`).

Measured with CPython 3.11 on a shared 2-vCPU Xeon VM, best of 15 runs; the VM's speed drifts
by up to 2x with load, so each figure is given as "loaded - idle":

    input                         ratio   compress                decompress
    20 KB of word text            0.44    1.6 - 2.8 MB/s          7 - 12 MB/s
    1 KB of word text             0.86    1.5 MB/s (0.65 ms)      12 MB/s
    20 KB random (-> None)        1.03    1.1 - 2.2 MB/s          60 - 105 MB/s (literal-only)
    100 KB of long byte runs      0.03    25 - 44 MB/s            90 - 150 MB/s
    180-byte JSON-like string     0.48    42 - 62 us              10 us

Alternatives measured on the way: a fresh 65536-slot table per call costs ~160 us (5x slower on
a 200-byte string); a dict table avoids that but is 10-20% slower on large inputs; comparing
whole 264-byte windows per match made text ~20% slower than the 16-byte first look; keeping the
3 bytes in the table to pre-check candidates was ~10% slower than checking the window.
"""

from __future__ import annotations

import threading

try:  # compiled, `cython.compiled` is true and the casts are C's; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython: only the interpreted branches run
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

__all__ = ["compress", "decompress", "decompress_at"]

_HSIZE = 1 << 16
_MAX_LIT = 1 << 5
_MAX_OFF = 1 << 13
_MAX_REF = (1 << 8) + (1 << 3)


class _Table(threading.local):
    """The hash table, reused by one thread's successive calls: allocating 65536 slots costs more
    than compressing a short string.  It is never cleared; slots hold ``position + base`` and each
    call takes a `base` above every position stored by earlier calls, whose entries therefore
    decode to positions <= 0 and are ignored -- exactly as if the table had been zeroed."""

    def __init__(self) -> None:
        self.slots = [0] * _HSIZE
        self.base = 1


_table = _Table()
_BASE_LIMIT = 1 << 36
_QUICK_REJECT_MAX = 1 << 16  # the 3-byte set of a longer string costs more memory than it saves  # past this, start a new table (keeps stored ints small)


def compress(data: bytes | bytearray | memoryview, out_limit: int) -> bytes | None:
    """lzf_compress(data, len(data), out, out_limit): the compressed bytes, or None where
    lzf_compress returns 0 (empty input, or the output would not fit in `out_limit` bytes)."""
    buf = data if type(data) is bytes else bytes(data)
    n = len(buf)
    if n == 0 or out_limit <= 0:
        return None
    if 2 < n <= _QUICK_REJECT_MAX:
        # A lower bound on the output, at C speed: with r positions whose 3 bytes occurred
        # before, the matches cover sum(L) <= 3r bytes and save sum(L - 2) <= r, so the output
        # is at least n - r plus a control byte per 32 of the >= n - 3r literals.  Most
        # incompressible strings fail here without the scan.
        repeats = n - 2 - len(set(zip(buf, buf[1:], buf[2:], strict=False)))
        if n - repeats + max(0, -(-(n - 3 * repeats) // _MAX_LIT)) > out_limit:
            return None
    state = _table
    base = state.base
    if base > _BASE_LIMIT:
        state.slots = [0] * _HSIZE
        base = 1
    state.base = base + n + 1
    htab = state.slots
    out = bytearray()
    from_bytes = int.from_bytes
    # The current literal run is buf[lit_start:ip].  A literal is refused once ip reaches
    # `lit_stop` (lzf_compress's `op >= out_end`), and the run is closed when ip reaches `flush_at`.
    lit_start = 0
    flush_at = _MAX_LIT
    lit_stop = out_limit - 1
    ip = 0
    last = n - 2  # positions < last are hashed; the final 2 bytes are always literals
    if n > 2:
        h = (buf[0] << 8) | buf[1]
        while ip < last:
            h = ((h << 8) | buf[ip + 2]) & 0xFFFFFF
            slot = ((h >> 8) - h * 5) & 0xFFFF
            ref = htab[slot] - base
            htab[slot] = ip + base
            if ref > 0 and ip - ref <= _MAX_OFF:
                # count = bytes matching at ref, capped as the C matcher caps it (see above);
                # fewer than 3 means no match.
                limit = n - ip - 2
                if limit > 16:
                    if limit > _MAX_REF:
                        limit = _MAX_REF
                    elif limit < 19:
                        limit = 19
                elif limit < 3:
                    limit = 3
                w = limit if limit < 16 else 16
                a = buf[ref:ref + w]
                b = buf[ip:ip + w]
                if a != b:
                    diff = from_bytes(a, "big") ^ from_bytes(b, "big")
                    count = w - 1 - ((diff.bit_length() - 1) >> 3)
                elif w == limit:
                    count = limit
                else:
                    a = buf[ref + 16:ref + limit]
                    b = buf[ip + 16:ip + limit]
                    if a == b:
                        count = limit
                    else:
                        diff = from_bytes(a, "big") ^ from_bytes(b, "big")
                        count = limit - 1 - ((diff.bit_length() - 1) >> 3)
                if count >= 3:
                    if ip > lit_start:
                        if len(out) + (ip - lit_start) + 5 >= out_limit:
                            return None
                        out.append(ip - lit_start - 1)
                        out += buf[lit_start:ip]
                    elif len(out) + 4 >= out_limit:
                        return None
                    off = ip - ref - 1
                    if count < 9:
                        out.append(((count - 2) << 5) | (off >> 8))
                    else:
                        out.append(0xE0 | (off >> 8))
                        out.append(count - 9)
                    out.append(off & 0xFF)
                    ip += count
                    lit_start = ip
                    flush_at = ip + _MAX_LIT
                    lit_stop = out_limit - 1 - len(out) + ip
                    if ip >= last:
                        break
                    # VERY_FAST: of the positions the match covered, hash only the last two.
                    p = ip - 2
                    h = (buf[p] << 16) | (buf[ip - 1] << 8) | buf[ip]
                    htab[((h >> 8) - h * 5) & 0xFFFF] = p + base
                    h = ((h << 8) | buf[ip + 1]) & 0xFFFFFF
                    htab[((h >> 8) - h * 5) & 0xFFFF] = p + 1 + base
                    continue
            # one more literal
            if ip >= lit_stop:
                return None
            ip += 1
            if ip == flush_at:
                out.append(_MAX_LIT - 1)
                out += buf[lit_start:ip]
                lit_start = ip
                flush_at = ip + _MAX_LIT
                lit_stop = out_limit - 1 - len(out) + ip
    if len(out) + 1 + (ip - lit_start) + 3 > out_limit:
        return None
    # The (at most 2) remaining bytes join the literal run, which may split at 32.
    while lit_start < n:
        end = min(n, lit_start + _MAX_LIT)
        out.append(end - lit_start - 1)
        out += buf[lit_start:end]
        lit_start = end
    return bytes(out)


def decompress(data: bytes | bytearray | memoryview, expected_len: int) -> bytes:
    """Inverse of `compress`: exactly `expected_len` bytes, or ValueError if `data` is not a valid
    LZF stream of that length (lzf_decompress would fail or return another length).

    Beware one Redis quirk this does not copy: redis-server 7.0.15 loads *any* blob, even an empty
    one, as the empty string when the declared length is 0, because lzf_decompress's failure
    value 0 equals the length it checks against.  A loader wanting that behaviour special-cases
    `expected_len == 0` before calling this."""
    buf = data if type(data) is bytes else bytes(data)
    return decompress_at(buf, 0, len(buf), expected_len)


def decompress_at(buf: bytes, start: int, n: int, expected_len: int) -> bytes:
    """`decompress(buf[start:start + n], expected_len)` without the slice (the RDB reader's
    strings are read in place); the caller keeps start and n within `buf`."""
    if cython.compiled:
        return _decompress_c(buf, start, n, expected_len)
    if n == 0:
        raise ValueError("LZF: empty input")
    buf = buf[start:start + n]
    out = bytearray()
    olen = 0
    ip = 0
    while ip < n:
        ctrl = buf[ip]
        ip += 1
        if ctrl < 32:
            ctrl += 1
            if olen + ctrl > expected_len:
                raise ValueError("LZF: output longer than expected")
            if ip + ctrl > n:
                raise ValueError("LZF: truncated literal run")
            out += buf[ip:ip + ctrl]
            ip += ctrl
            olen += ctrl
        else:
            length = ctrl >> 5
            if ip >= n:
                raise ValueError("LZF: truncated back reference")
            if length == 7:
                length += buf[ip]
                ip += 1
                if ip >= n:
                    raise ValueError("LZF: truncated back reference")
            ref = olen - ((ctrl & 0x1F) << 8) - 1 - buf[ip]
            ip += 1
            length += 2
            if olen + length > expected_len:
                raise ValueError("LZF: output longer than expected")
            if ref < 0:
                raise ValueError("LZF: back reference before the start of the output")
            if ref + length <= olen:
                out += out[ref:ref + length]
            else:  # overlapping copy: the bytes from ref on repeat with period olen - ref
                period = out[ref:]
                out += (period * (length // len(period) + 1))[:length]
            olen += length
    if olen != expected_len:
        raise ValueError(f"LZF: decompressed to {olen} bytes, expected {expected_len}")
    return bytes(out)


# A token of n input bytes makes at most 88 times as many output bytes (a 3-byte back reference
# copies 264): a declared length past that cannot be met, and is refused before it is allocated.
_MAX_EXPANSION = 88


def _decompress_c(buf: bytes, start: int, n: int, expected_len: int) -> bytes:
    """decompress_at, compiled (lzf.pxd): lzf_decompress's own loop, reading the input in place
    and writing straight into the result's bytes, allocated once at its declared length.  The
    same checks as the interpreted loop, so the same inputs fail (a declared length that no n
    bytes can reach fails before the allocation)."""
    if n == 0:
        raise ValueError("LZF: empty input")
    if expected_len < 0 or expected_len > n * _MAX_EXPANSION:
        raise ValueError(f"LZF: {n} bytes cannot decompress to {expected_len}")
    src = cython.cast(cython.p_uchar, buf) + start
    out = PyBytes_FromStringAndSize(cython.NULL, expected_len)  # noqa: F821 (lzf.pxd cimports it)
    dst = cython.cast(cython.p_uchar, out)
    olen = 0
    ip = 0
    while ip < n:
        ctrl = src[ip]
        ip += 1
        if ctrl < 32:
            ctrl += 1
            if olen + ctrl > expected_len:
                raise ValueError("LZF: output longer than expected")
            if ip + ctrl > n:
                raise ValueError("LZF: truncated literal run")
            memcpy(dst + olen, src + ip, ctrl)  # noqa: F821 (lzf.pxd cimports it)
            ip += ctrl
            olen += ctrl
        else:
            length = ctrl >> 5
            if ip >= n:
                raise ValueError("LZF: truncated back reference")
            if length == 7:
                length += src[ip]
                ip += 1
                if ip >= n:
                    raise ValueError("LZF: truncated back reference")
            ref = olen - ((ctrl & 0x1F) << 8) - 1 - src[ip]
            ip += 1
            length += 2
            if olen + length > expected_len:
                raise ValueError("LZF: output longer than expected")
            if ref < 0:
                raise ValueError("LZF: back reference before the start of the output")
            if ref + length <= olen:
                memcpy(dst + olen, dst + ref, length)  # noqa: F821
            elif ref + 1 == olen:  # a run of one byte (a string's padding, say)
                memset(dst + olen, dst[ref], length)  # noqa: F821 (lzf.pxd cimports it)
            else:  # overlapping: the bytes from ref on repeat with period olen - ref
                k = olen - ref  # one period, then the copy doubles what it has written
                memcpy(dst + olen, dst + ref, k)  # noqa: F821
                while k < length:
                    step = k if k < length - k else length - k
                    memcpy(dst + olen + k, dst + olen, step)  # noqa: F821
                    k += step
            olen += length
    if olen != expected_len:
        raise ValueError(f"LZF: decompressed to {olen} bytes, expected {expected_len}")
    return out
