"""Stream entry IDs as integers: parsing, printing, predecessor and range splitting.

A Redis stream ID `<ms>-<seq>` is two unsigned 64-bit numbers compared lexicographically, so it maps
one-to-one and order-preservingly onto the 128-bit integer `ms << 64 | seq`.  Every offset the data
source keeps is such an integer, which makes "the ID just before X" (`X - 1`) and "cut this range
into n equal pieces" plain arithmetic.  Ranges are always half-open `(lo, hi]`: `lo` is the last ID
already read (XRANGE `(lo`), `hi` the last ID to read (inclusive), so consecutive ranges share a
bound and never overlap, and replaying a range reads the same rows.
"""

from __future__ import annotations

U64 = (1 << 64) - 1
ZERO = 0
MAX = (U64 << 64) | U64


def parse(text: str | bytes) -> int:
    """`"<ms>-<seq>"` (or `"<ms>"`, meaning seq 0) -> 128-bit integer; ValueError if malformed."""
    if isinstance(text, bytes):
        text = text.decode("ascii")
    ms, sep, seq = text.partition("-")
    if not ms.isdigit() or (sep and not seq.isdigit()):
        raise ValueError(f"invalid stream ID {text!r}: expected <ms>-<seq>")
    ms_i, seq_i = int(ms), int(seq) if sep else 0
    if ms_i > U64 or seq_i > U64:
        raise ValueError(f"invalid stream ID {text!r}: parts must fit in 64 bits")
    return (ms_i << 64) | seq_i


def fmt(value: int) -> str:
    """128-bit integer -> `"<ms>-<seq>"`."""
    return f"{value >> 64}-{value & U64}"


def ms_of(value: int) -> int:
    return value >> 64


def pred(value: int) -> int:
    """The largest ID below `value` (0-0 has none: it stays 0-0, which no entry can have)."""
    return value - 1 if value > 0 else 0


def from_timestamp(ms: int) -> int:
    """The exclusive lower / inclusive upper bound that splits entries before `ms` from the rest:
    the ID just below `<ms>-0`, so `(bound, ...]` starts at the first entry at or after `ms`."""
    if ms < 0 or ms > U64:
        raise ValueError(f"timestamp {ms} out of range")
    return pred(ms << 64)


def split(lo: int, hi: int, parts: int) -> list[tuple[int, int]]:
    """Cut `(lo, hi]` into at most `parts` non-empty consecutive half-open ranges of equal width."""
    if hi <= lo:
        return []
    parts = max(1, min(parts, hi - lo))
    width = hi - lo
    bounds = [lo + width * i // parts for i in range(parts + 1)]
    return [(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]
