"""Argument parsing shared by every command family, with Redis's exact acceptance rules.

Integers follow string2ll (no '+', no spaces, no leading zeros, int64 range); doubles follow
string2d/strtod as Redis calls them (no leading space, no trailing junk, no NaN; inf accepted;
hex floats accepted as C does).  Each parser raises CommandError with the caller's error text.
"""

from __future__ import annotations

import math
import re

from protocol.request import _string2ll
from server.errors import NOT_FLOAT, NOT_INTEGER, CommandError

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

_FLOAT_RX = re.compile(
    rb"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?\d+)?)\Z",
    re.IGNORECASE,
)


def to_int(arg: bytes, err: str = NOT_INTEGER) -> int:
    v = _string2ll(arg)
    if v is None:
        raise CommandError(err)
    return v


def maybe_int(arg: bytes) -> int | None:
    return _string2ll(arg)


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


def to_float(arg: bytes, err: str = NOT_FLOAT) -> float:
    v = strtod(arg)
    if v is None or math.isnan(v):
        raise CommandError(err)
    return v


def to_nonneg_int(arg: bytes, err: str = NOT_INTEGER) -> int:
    v = to_int(arg, err)
    if v < 0:
        raise CommandError(err)
    return v
