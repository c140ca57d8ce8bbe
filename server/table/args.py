"""Argument parsing shared by every command family, with Redis's exact acceptance rules.

Integers follow string2ll (no '+', no spaces, no leading zeros, int64 range); doubles follow
strtod as Redis calls it (server.numparse: no leading space, no trailing junk; inf accepted; hex
floats accepted as C does).  Each parser raises CommandError with the caller's error text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from raxdb.protocol.request import string2ll
from raxdb.server.base.errors import NOT_FLOAT, NOT_INTEGER, NOT_POSITIVE, CommandError, c_str
from raxdb.server.base.numparse import digits_value, strtod

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

def to_int(arg: bytes, err: str = NOT_INTEGER) -> int:
    v = string2ll(arg)
    if v is None:
        raise CommandError(err)
    return v


def maybe_int(arg: bytes) -> int | None:
    if type(arg) is bytes:  # counts (numkeys, ...) are mostly plain digits: read without string2ll
        n = len(arg)
        if n == 1 or n > 1 and arg[0] != 48:  # no leading zero: string2ll's canonical form
            v = digits_value(arg)
            if v >= 0:
                return v
    return string2ll(arg)


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


REPLY_CHUNK = 1024  # elements made and encoded at a time by a reply that may stop at the limit


def reply_in_chunks(c, chunks: Iterable[tuple[int, bytes]]) -> bytes:
    """An array reply made of `chunks` ((elements, their encoding without an array header)),
    each made only once the ones before it fit: once the client's output limit is reached
    (server/conn/obuf.py, checked per chunk for a client whose limit is checked per command) no
    more are made, as Redis's loops stop adding replies to a client that is to be closed, and
    the client is dropped (so nothing of the reply is sent)."""
    parts = [b""]
    count = size = 0
    for n, body in chunks:
        parts.append(body)
        count += n
        size += len(body)
        if c.obuf_reached(c.running, size):
            return b""
    parts[0] = b"*%d\r\n" % count
    return b"".join(parts)


def random_picks_reply(c, count: int, per: int, pick: Callable[[int], list], encode: Callable[..., bytes],
                       *extra: Any) -> bytes:
    """The reply to a negative count: `encode(pick(n), *extra)`, an array of n * per elements; for
    a client whose output limit is checked per command, made a chunk at a time and stopped at the
    limit (reply_in_chunks): a count of a billion then costs what the limit holds.  (`extra`, the
    encoder's other arguments: a handler passes a module-level encoder its values, not a closure,
    which a cpdef handler cannot hold, nor a partial, which costs more to make and call.)"""
    n = random_picks(count)
    if not c.obuf_watch or n <= REPLY_CHUNK:
        return encode(pick(n), *extra)

    def chunks() -> Iterator[tuple[int, bytes]]:
        left = n
        while left:
            k = min(left, REPLY_CHUNK)
            left -= k
            yield k * per, encode(pick(k), *extra)[len(b"*%d\r\n" % (k * per)):]  # without its header

    return reply_in_chunks(c, chunks())


# The option words the command families made known (`known_words`), each as clients spell it, all
# capitals or all small letters, to its lower-case form: one object per word, so that option_word
# returns it without making a copy (and a later lookup of it in the family's own dict finds it by
# identity, its hash already cached).  Any other spelling (Px, a NUL within) is copied as before.
_WORDS: dict[bytes, bytes] = {}


def known_words(*words: bytes) -> None:
    """Make `words` (lower case, as the caller compares them) known to option_word."""
    for word in words:
        _WORDS[word] = _WORDS[word.upper()] = word


def option_word(arg: bytes) -> bytes:
    """An option keyword as Redis's strcasecmp sees it: lower-cased and ended by its first NUL byte
    (Redis compares keywords as C strings, so "REPLACE\\0x" is REPLACE).  A known word
    (`known_words`) spelt all in capitals or all in small letters: its lower-case form, no copy."""
    if type(arg) is bytes:  # (a memoryview or bytearray argument: not hashable, or not an exact key)
        word = _WORDS.get(arg)
        if word is not None:
            return word
    return c_str(arg).lower()
