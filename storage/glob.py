"""Redis's glob matching (KEYS, SCAN MATCH, PSUBSCRIBE, CONFIG GET, ...), exact to the byte.

Semantics, as redis-server 7.0 behaves (proven against it by tests/storage/test_glob.py):
- `*` matches any run of bytes, `?` one byte, `\\x` the byte x (a trailing lone `\\` is literal);
- `[...]` one byte from a class: `^` first negates, `\\x` inside is x (case-sensitive even when
  folding case), `a-b` is a range whose ends may come in either order; the range test compares C
  `char`s, which are signed on the platforms Redis runs on, so bytes >= 0x80 sort below 0x00;
  `a-` followed by anything takes that byte as the range end, even `]`;
  a class that reaches the end of the pattern unterminated ends there;
- `nocase` folds ASCII letters only (C locale tolower);
- an EMPTY subject matches only the empty pattern (Redis's matcher never enters its loop), so `*`
  does not match the empty string: KEYS/SCAN special-case a lone `*` themselves;
- more than 1000 `*` groups followed by something make a pattern match nothing (Redis's recursion
  limit, which rejects such patterns whatever the subject).

How: where Redis walks the pattern and the subject together, the walk over the pattern does not
depend on the subject, so each pattern is tokenised once into single-byte tests (each an exact set
of the 256 byte values it accepts) separated by stars, and compiled to regexes.  Matching a
pattern with stars then anchors its first and last star-free segments and finds the middle ones
leftmost-first: that is O(len(subject) * len(pattern)) whatever the pattern (a plain `.*` regex
backtracks polynomially on patterns like `*a*a*a*b`, a KEYS-based denial of service).
Compiled matchers are cached: KEYS, SCAN and PSUBSCRIBE reuse a few patterns many times.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

Matcher = Callable[[bytes], bool]

_STAR_LIMIT = 1000  # star groups followed by more pattern before Redis's matcher gives up


def _lower(c: int) -> int:
    return c + 32 if 65 <= c <= 90 else c


def _signed(c: int) -> int:
    return c - 256 if c >= 128 else c


def _byte_class(members: list[bool]) -> bytes:
    """A regex atom accepting exactly the bytes whose entry is True."""
    count = sum(members)
    if count == 256:
        return b"."
    if count == 0:
        return b"(?!)"
    if count == 1:
        return re.escape(bytes([members.index(True)]))
    parts = []
    i = 0
    while i < 256:
        if members[i]:
            j = i
            while j + 1 < 256 and members[j + 1]:
                j += 1
            parts.append(b"\\x%02x" % i if i == j else b"\\x%02x-\\x%02x" % (i, j))
            i = j + 1
        else:
            i += 1
    return b"[" + b"".join(parts) + b"]"


def _class_members(p: bytes, i: int, nocase: bool) -> tuple[list[bool], int]:
    """The byte set of the class whose body starts at p[i] (just past `[`) and the index of its
    last pattern byte (the closing `]`, or the pattern's last byte if unterminated)."""
    n = len(p)
    negate = i < n and p[i] == 94  # ^
    if negate:
        i += 1
    members = [False] * 256
    while True:
        if i < n and p[i] == 92 and n - i >= 2:  # \x: exact byte, never case-folded
            i += 1
            members[p[i]] = True
        elif i < n and p[i] == 93:  # ]
            break
        elif i >= n:
            i = n - 1
            break
        elif n - i >= 3 and p[i + 1] == 45:  # a-b
            lo, hi = _signed(p[i]), _signed(p[i + 2])
            if lo > hi:
                lo, hi = hi, lo
            if nocase:
                lo, hi = _lower(lo), _lower(hi)
                for x in range(256):
                    if lo <= _signed(_lower(x)) <= hi:
                        members[x] = True
            else:
                for x in range(256):
                    if lo <= _signed(x) <= hi:
                        members[x] = True
            i += 2
        elif nocase:
            low = _lower(p[i])
            for x in range(256):
                if _lower(x) == low:
                    members[x] = True
        else:
            members[p[i]] = True
        i += 1
    if negate:
        members = [not m for m in members]
    return members, i


def tokenize(pattern: bytes, nocase: bool = False) -> list[bytes | None]:
    """The pattern as Redis walks it: None for a star group, else a regex atom for one byte."""
    tokens: list[bytes | None] = []
    p = pattern
    i, n = 0, len(p)
    while i < n:
        c = p[i]
        if c == 42:  # *
            if not tokens or tokens[-1] is not None:
                tokens.append(None)
        elif c == 63:  # ?
            tokens.append(b".")
        elif c == 91:  # [
            members, i = _class_members(p, i + 1, nocase)
            tokens.append(_byte_class(members))
        else:
            if c == 92 and n - i >= 2:  # \x
                i += 1
                c = p[i]
            if nocase and (65 <= c <= 90 or 97 <= c <= 122):
                tokens.append(b"[" + re.escape(bytes([c | 32])) + re.escape(bytes([c & ~32])) + b"]")
            else:
                tokens.append(re.escape(bytes([c])))
        i += 1
    return tokens


def _never(s: bytes) -> bool:
    return False


@lru_cache(maxsize=1024)
def compile_glob(pattern: bytes, nocase: bool = False) -> Matcher:
    """A function telling whether a subject matches `pattern`, with Redis's exact semantics."""
    if not pattern:
        return lambda s: not s
    if not nocase:
        # The shapes KEYS and SCAN see most: "literal" and "prefix*" (string methods, no regex).
        body = pattern.rstrip(b"*")
        if not any(ch in body for ch in b"*?[\\"):
            if body == pattern:
                return pattern.__eq__
            if body:
                return lambda s: s.startswith(body)
    tokens = tokenize(pattern, nocase)
    segments: list[list[bytes]] = [[]]
    for t in tokens:
        if t is None:
            segments.append([])
        else:
            segments[-1].append(t)
    if len(segments) - (0 if segments[-1] else 1) > _STAR_LIMIT + 1:
        return _never
    flags = re.DOTALL
    if len(segments) == 1:
        full = re.compile(b"".join(segments[0]) + b"\\Z", flags).match
        return lambda s: full(s) is not None
    if len(segments) == 2:
        # One star group: a single regex is linear enough (one backtracking point).
        rx = re.compile(b"".join(segments[0]) + b".*" + b"".join(segments[1]) + b"\\Z", flags).match
        return lambda s: bool(s) and rx(s) is not None
    head, tail = segments[0], segments[-1]
    head_rx = re.compile(b"".join(head), flags).match
    tail_rx = re.compile(b"".join(tail) + b"\\Z", flags).match
    middle = [(re.compile(b"".join(seg), flags).search, len(seg)) for seg in segments[1:-1] if seg]
    head_len, tail_len = len(head), len(tail)
    need = head_len + tail_len + sum(length for _, length in middle)

    def match(s: bytes) -> bool:
        n = len(s)
        if not s or n < need or head_rx(s) is None:
            return False
        end = n - tail_len
        if tail_rx(s, end) is None:
            return False
        pos = head_len
        for search, _ in middle:
            m = search(s, pos, end)
            if m is None:
                return False
            pos = m.end()
        return True

    return match


def glob_match(pattern: bytes, s: bytes, nocase: bool = False) -> bool:
    """Redis's stringmatchlen(pattern, s, nocase)."""
    return compile_glob(pattern, nocase)(s)
