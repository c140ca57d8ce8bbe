"""x86-64 `long double` arithmetic as INCRBYFLOAT / HINCRBYFLOAT use it, emulated exactly.

Redis parses both operands with strtold (80-bit extended precision: 64-bit significand, exponents
down to 2**-16445 for subnormals, overflow at 2**16384), adds them in long double, and stores the
sum printed with "%.17Lf" (17 digits after the point) with trailing zeros and a trailing '.'
removed, and "-0" turned into "0".  Emulating that with Python floats would give different digits
(0.1 + 0.2 is "0.3" in Redis, 0.30000000000000004 in doubles) and different overflow points
(1e308 + 1e308 is finite in long double), so this module does it with exact integer arithmetic:

- A finite value is a pair (n, k) meaning n * 2**k exactly (n signed), already rounded to the long
  double grid; infinities are the `INF` / `NEG_INF` markers.
- Parsing rounds the exact decimal or hexadecimal value of the text once, to nearest-even, as
  glibc's strtold does.  Results that round to zero from a non-zero input, or overflow, are
  rejected as Redis's string2ld rejects them (strtold's ERANGE).
- Adding aligns the exponents, adds exactly and rounds once; printing rounds the exact binary value
  to 17 decimals, ties to even, as glibc's printf does.

Big values (up to ~1.19e4932) are converted to and from decimal through `decimal.Decimal`, which is
not subject to Python's int/str digit limit.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from decimal import Decimal

# Significand bits, smallest exponent of the last significand bit (subnormal quantum), and the
# largest exponent of the last significand bit for a finite value.
_MANT_BITS = 64
_MIN_QUANTUM = -16445
_MAX_QUANTUM = 16383 - 63

# Redis's MAX_LONG_DOUBLE_CHARS: longer texts are rejected before parsing.
MAX_CHARS = 5 * 1024

INF = "inf"
NEG_INF = "-inf"

LongDouble = tuple[int, int] | str

_RX = re.compile(
    rb"([+-]?)(?:"
    rb"(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?"  # decimal (checked for at least one digit below)
    rb"|0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?\d+))?"  # hexadecimal
    rb"|(inf(?:inity)?)"
    rb"|nan(?:\([0-9A-Za-z_]*\))?"
    rb")\Z",
    re.IGNORECASE,
)


def _round(num: int, den: int) -> tuple[int, int] | None:
    """num/den (num >= 0, den > 0) rounded to nearest-even on the long double grid, or None on
    overflow.  A zero result is (0, 0)."""
    if num == 0:
        return (0, 0)
    # e = floor(log2(num / den))
    e = num.bit_length() - den.bit_length()
    if (num << -e if e < 0 else num) < (den << e if e > 0 else den):
        e -= 1
    q_exp = max(e - (_MANT_BITS - 1), _MIN_QUANTUM)
    if q_exp >= 0:
        div = den << q_exp
        q, r = divmod(num, div)
    else:
        div = den
        q, r = divmod(num << -q_exp, den)
    r2 = r << 1
    if r2 > div or (r2 == div and q & 1):
        q += 1
        if q >> _MANT_BITS:
            q >>= 1
            q_exp += 1
    if q_exp > _MAX_QUANTUM:
        return None
    return (q, q_exp)


def _signed(r: tuple[int, int] | None, neg: bool) -> tuple[int, int] | None:
    if r is None or not neg:
        return r
    return (-r[0], r[1])


def parse(text: bytes | bytearray) -> LongDouble | None:
    """strtold over the whole text as Redis's string2ld accepts it; None when not a valid float
    (syntax, NaN, overflow, underflow to zero, leading space, too long)."""
    if not text or len(text) >= MAX_CHARS:
        return None
    m = _RX.match(text)
    if m is None:
        return None
    sign, ip, fp, ex, hip, hfp, hex_exp, inf = m.groups()
    neg = sign == b"-"
    if inf is not None:
        return NEG_INF if neg else INF
    if hip is not None:
        digits = hip + (hfp or b"")
        if not digits:
            return None
        mant = int(digits, 16)
        if mant == 0:
            return (0, 0)
        exp = _clamped_exponent(hex_exp) - 4 * len(hfp or b"")
        approx = mant.bit_length() + exp  # value is in [2**(approx-1), 2**approx)
        if approx > 16385:
            return None
        if approx < _MIN_QUANTUM - 2:
            return None  # rounds to zero: ERANGE
        r = _round(mant << exp, 1) if exp >= 0 else _round(mant, 1 << -exp)
    else:
        if ip is None and fp is None:
            return None  # "nan" and friends
        digits = (ip or b"") + (fp or b"")
        if not digits:
            return None  # no digit at all ("", ".", "e5", sign only)
        digits = digits.lstrip(b"0")
        if not digits:
            return (0, 0)
        exp = _clamped_exponent(ex) - len(fp or b"")
        adjusted = len(digits) - 1 + exp  # value is in [10**adjusted, 10**(adjusted+1))
        if adjusted > 4933:
            return None
        if adjusted < -4953:
            return None  # below half the smallest subnormal: rounds to zero, ERANGE
        mant = int(digits) if len(digits) <= 4000 else int(_decimal(digits.decode()))
        r = _round(mant * 10**exp, 1) if exp >= 0 else _round(mant, 10**-exp)
    if r is None or r[0] == 0:
        return None
    return _signed(r, neg)


def _clamped_exponent(text: bytes | None) -> int:
    """An exponent field as an int, clamped far outside any finite long double range."""
    if not text:
        return 0
    digits = text.lstrip(b"+-").lstrip(b"0")
    if len(digits) > 7:
        return -10**7 if text[:1] == b"-" else 10**7
    return int(text)


def add(a: LongDouble, b: LongDouble) -> LongDouble | None:
    """a + b in long double; None when the result is NaN or infinite."""
    if isinstance(a, str) or isinstance(b, str):
        return None  # any infinity makes the sum inf or nan, both refused by the callers
    (n1, k1), (n2, k2) = a, b
    if k1 > k2:
        n1 <<= k1 - k2
        k1 = k2
    elif k2 > k1:
        n2 <<= k2 - k1
    n = n1 + n2
    if n == 0:
        return (0, 0)
    neg = n < 0
    if neg:
        n = -n
    bits = n.bit_length()
    if bits <= _MANT_BITS and k1 >= _MIN_QUANTUM:
        return ((-n if neg else n), k1)  # exactly representable: no rounding
    r = _round(n << k1, 1) if k1 >= 0 else _round(n, 1 << -k1)
    return _signed(r, neg)


_TEN17 = 10**17


def _decimal(v: str | int) -> Decimal:
    """decimal.Decimal(v), imported on the first huge number rather than at start-up."""
    from decimal import Decimal

    return Decimal(v)


def _int_text(n: int) -> bytes:
    if n.bit_length() < 10000:
        return b"%d" % n
    return str(_decimal(n)).encode()


def of_double(d: float) -> LongDouble:
    """A finite double, exactly, as a long double (n, k): n * 2**k."""
    num, den = d.as_integer_ratio()
    return num, -(den.bit_length() - 1)


def format_human(v: LongDouble) -> bytes:
    """Redis's ld2string(LD_STR_HUMAN): "%.17Lf", trailing zeros and '.' trimmed, "-0" -> "0"."""
    if isinstance(v, str):
        return v.encode()
    n, k = v
    neg = n < 0
    if neg:
        n = -n
    if k >= 0:
        text = _int_text(n << k)
    else:
        scaled = n * _TEN17
        shift = -k
        q = scaled >> shift
        r2 = (scaled - (q << shift)) << 1
        half = 1 << shift
        if r2 > half or (r2 == half and q & 1):
            q += 1
        ip, fp = divmod(q, _TEN17)
        text = _int_text(ip)
        if fp:
            text += b".%017d" % fp
            text = text.rstrip(b"0")
    if neg and text != b"0":
        text = b"-" + text
    return text
