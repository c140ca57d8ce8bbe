"""Numbers as Redis's C code reads them, for every layer that parses client text (commands, config).

`strtod` is C strtod over the whole argument (hex floats, "inf"/"infinity", no leading space, no
trailing junk); `string2d` is Redis's string2d on top of it (also no NaN, and no overflow to
+-HUGE_VAL or underflow to zero); `strtod_blanks` is strtod where Redis calls it bare (leading
blanks skipped, "" is 0).  Python's float() differs from all three (it accepts spaces, "_" and
"nan", refuses hex), so no caller should use it on client text.  This module depends on nothing
in the server, so the config layer can use it as well as the command families.
"""

from __future__ import annotations

import math
import re

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

from raxdb.server.base.lazyre import LazyPattern

_FLOAT_RX = LazyPattern(  # compiled by its first use (server/base/lazyre.py)
    rb"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?\d+)?)\Z",
    re.IGNORECASE,
)
_INF = math.inf


def strtod(arg: bytes) -> float | None:
    """C strtod over the whole argument, as Redis's string2d / getDoubleFromObject use it."""
    if not arg or len(arg) > 5000 or arg[0] in b" \t\n\r\v\f" or _FLOAT_RX.match(arg) is None:
        return None
    s = arg.lower()
    try:
        if b"0x" in s:
            neg = s.startswith(b"-")
            v = float.fromhex(s.lstrip(b"+-").decode())
            return -v if neg else v
        return float(s)
    except (ValueError, OverflowError):
        return None


C_SPACE = b" \t\n\v\f\r"  # C's isspace()


def strtod_blanks(arg: bytes) -> float | None:
    """strtod over the whole argument where Redis calls it bare (zslParseRange's bounds, SORT's
    weights), not through string2d: leading blanks are skipped and an empty argument is 0 (strtod
    converts nothing, and the end pointer is already at the terminator).  No ERANGE test here:
    those callers differ on it."""
    if not arg:
        return 0.0
    t = arg.lstrip(C_SPACE)
    return strtod(t) if t else None


def _mantissa_nonzero(arg: bytes) -> bool:
    s = arg.lower().lstrip(b"+-")
    if s.startswith(b"0x"):
        return any(ch not in b"0." for ch in s[2:].split(b"p")[0])
    return any(ch in b"123456789" for ch in s.split(b"e")[0])


def digits_value(arg: bytes) -> int:
    """The value of `arg` when it is 1 to 15 ASCII digits, else -1: the commonest number argument,
    which a double holds exactly (so float() and strtod read it alike), read without either."""
    n = len(arg)
    if not cython.compiled:
        return int(arg) if 0 < n <= 15 and arg.isdigit() else -1
    if n == 0 or n > 15:
        return -1
    v = 0
    s = arg  # a pointer to the bytes (numparse.pxd): a load per digit, no indexing call
    for i in range(n):
        c = s[i]
        if c < 48 or c > 57:
            return -1
        v = v * 10 + (c - 48)
    return v


def canonical_digits_value(arg: bytes) -> int:
    """`digits_value` of a stored string as Redis's string2ll reads it: 1 to 15 ASCII digits and
    no leading zero ("0" itself apart), else -1 (the spelling INCR can add to in place)."""
    v = digits_value(arg)
    s = arg  # compiled, a pointer to the bytes (numparse.pxd)
    if v > 0 and s[0] == 48:
        return -1
    return v if v != 0 or len(arg) == 1 else -1


def plain_decimal(arg: bytes) -> bool:
    """[-]digits[.digits] (at least one digit, at most one dot, the sign first): text on which
    Python's float() and C's strtod agree exactly and cannot overflow or underflow (the common
    case, parsed without the general machinery).  Compiled, a C walk over the bytes."""
    n = len(arg)
    if n >= 300:
        return False
    if not cython.compiled or type(arg) is not bytes:
        t = (arg[1:] if arg[:1] == b"-" else arg).replace(b".", b"", 1)
        return t.isdigit()
    b = arg
    i = 1 if n and b[0] == 45 else 0
    digits = dots = 0
    while i < n:
        c = b[i]
        if 48 <= c <= 57:
            digits += 1
        elif c == 46 and not dots:
            dots = 1
        else:
            return False
        i += 1
    return digits > 0


def string2d(arg: bytes) -> float | None:
    """Redis's string2d: strtod over the whole string, no leading space, no NaN, and no
    overflow to +-HUGE_VAL or underflow to zero (ERANGE)."""
    if plain_decimal(arg):
        if cython.compiled and type(arg) is bytes:  # CPython's own strtod on the bytes, without float()'s copy
            return PyOS_string_to_double(PyBytes_AS_STRING(arg), cython.NULL, cython.NULL)  # noqa: F821
        return float(arg)
    v = strtod(arg)
    if v is None or v != v:
        return None
    if v == _INF or v == -_INF:
        if b"inf" not in arg.lower():
            return None
    elif v == 0.0 and _mantissa_nonzero(arg):
        return None
    return v


_INT_PREFIX_RX = LazyPattern(rb"[ \t\n\v\f\r]*([+-]?[0-9]+)")
_LLONG_MIN, _LLONG_MAX = -(1 << 63), (1 << 63) - 1


def strtoll(arg: bytes) -> int:
    """C's strtoll / atoll in base 10, where Redis reads a number from a file: leading blanks, a
    sign and the digits that follow; what comes after is ignored, no digits is 0, and overflow
    clamps to the 64-bit range."""
    if arg.isdigit():
        n = int(arg)
    else:
        m = _INT_PREFIX_RX.match(arg)
        if m is None:
            return 0
        n = int(m.group(1))
    return min(max(n, _LLONG_MIN), _LLONG_MAX)
