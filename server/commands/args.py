"""Argument parsing shared by every command family, with Redis's exact acceptance rules.

Integers follow string2ll (no '+', no spaces, no leading zeros, int64 range); doubles follow
strtod as Redis calls it (server.numparse: no leading space, no trailing junk; inf accepted; hex
floats accepted as C does).  Each parser raises CommandError with the caller's error text.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from protocol.request import _string2ll
from server.errors import NOT_FLOAT, NOT_INTEGER, NOT_POSITIVE, CommandError, c_str
from server.numparse import strtod

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

def to_int(arg: bytes, err: str = NOT_INTEGER) -> int:
    v = _string2ll(arg)
    if v is None:
        raise CommandError(err)
    return v


def maybe_int(arg: bytes) -> int | None:
    return _string2ll(arg)


def to_float(arg: bytes, err: str = NOT_FLOAT) -> float:
    v = strtod(arg)
    if v is None or math.isnan(v):
        raise CommandError(err)
    return v


def positive_long(arg: bytes, msg: str = NOT_POSITIVE) -> int:
    """getPositiveLongFromObjectOrReply: an int64 >= 0, else `msg` (for non-numbers too)."""
    v = maybe_int(arg)
    if v is None or v < 0:
        raise CommandError(msg)
    return v


def to_nonneg_int(arg: bytes, err: str = NOT_INTEGER) -> int:
    v = to_int(arg, err)
    if v < 0:
        raise CommandError(err)
    return v


# A negative count asks SRANDMEMBER / ZRANDMEMBER / HRANDFIELD for that many picks with repeats.
# Redis 7.0 accepts up to LONG_MAX of them and then builds the reply until memory runs out; raxdb
# refuses a count no reply could carry, with the error Redis gives just past its own bound.
RANDOM_PICKS_LIMIT = 1 << 32


def random_picks(count: int) -> int:
    """The number of picks a negative count asks for, or "value is out of range" past the limit."""
    if -count >= RANDOM_PICKS_LIMIT:
        raise CommandError("ERR value is out of range")
    return -count


PICKS_CHUNK = 1024


def random_picks_reply(c, count: int, per: int, pick: Callable[[int], list], encode: Callable[[list], bytes]
                       ) -> bytes:
    """The reply to a negative count: `encode(pick(n))`, an array of n * per elements.  For a client
    whose output limit is checked per command (server/obuf.py) the picks are made and encoded a
    chunk at a time and stop once the limit is reached, as Redis stops adding them once the client
    is to be closed: a count of a billion then costs what the limit holds, not the whole reply
    (the client is dropped, so nothing of it is sent)."""
    n = random_picks(count)
    if not c.obuf_watch or n <= PICKS_CHUNK:
        return encode(pick(n))
    parts = [b"*%d\r\n" % (n * per)]
    size = len(parts[0])
    while n:
        k = min(n, PICKS_CHUNK)
        n -= k
        body = encode(pick(k))[len(b"*%d\r\n" % (k * per)):]  # without its own array header
        parts.append(body)
        size += len(body)
        if c.obuf_reached(c.running, size):
            return b""
    return b"".join(parts)


def option_word(arg: bytes) -> bytes:
    """An option keyword as Redis's strcasecmp sees it: lower-cased and ended by its first NUL byte
    (Redis compares keywords as C strings, so "REPLACE\\0x" is REPLACE)."""
    return c_str(arg).lower()
