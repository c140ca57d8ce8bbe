"""Redis's glob matcher (stringmatchlen in util.c), byte for byte.

Patterns: `*` any run, `?` one byte, `[abc]` / `[^abc]` / `[a-z]` classes (a reversed range such as
`[z-a]` matches too), `\\x` a literal x.  `nocase` folds ASCII case like tolower().  Redis matches
bytes, not characters, so this works on bytes throughout; compiled patterns are cached because KEYS,
SCAN MATCH and PSUBSCRIBE reuse a few patterns many times.
"""

from __future__ import annotations

import re
from functools import lru_cache


def _lower(c: int) -> int:
    return c + 32 if 65 <= c <= 90 else c


@lru_cache(maxsize=1024)
def _compile(pattern: bytes, nocase: bool) -> re.Pattern[bytes] | None:
    """Translate to an anchored regex; None when the pattern has a construct we match by hand."""
    out = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == 42:  # *
            while i + 1 < n and pattern[i + 1] == 42:
                i += 1
            out.append(b".*")
        elif c == 63:  # ?
            out.append(b".")
        elif c == 91:  # [
            i += 1
            negate = i < n and pattern[i] == 94
            if negate:
                i += 1
            items = []
            while True:
                if i < n and pattern[i] == 92 and i + 1 < n:
                    i += 1
                    items.append(re.escape(bytes([pattern[i]])))
                elif i >= n or pattern[i] == 93:
                    # Redis: an unterminated class ends at the pattern's end (stays on last char)
                    break
                elif i + 2 < n and pattern[i + 1] == 45:  # a-b
                    a, b = pattern[i], pattern[i + 2]
                    if a > b:
                        a, b = b, a
                    items.append(re.escape(bytes([a])) + b"-" + re.escape(bytes([b])))
                    i += 2
                else:
                    items.append(re.escape(bytes([pattern[i]])))
                i += 1
            if i >= n:
                return None  # unterminated class: Redis's corner semantics, fall back
            body = b"".join(items)
            if not body:
                out.append(b"(?!)" if not negate else b".")
            else:
                out.append(b"[" + (b"^" if negate else b"") + body + b"]")
        elif c == 92 and i + 1 < n:  # backslash escape
            i += 1
            out.append(re.escape(bytes([pattern[i]])))
        else:
            out.append(re.escape(bytes([c])))
        i += 1
    flags = re.DOTALL | (re.IGNORECASE if nocase else 0)
    return re.compile(b"".join(out) + b"\\Z", flags)


def _match_slow(p: bytes, s: bytes, nocase: bool) -> bool:
    """Direct port of stringmatchlen's algorithm, used for unusual patterns."""
    pi = si = 0
    pl, sl = len(p), len(s)
    while pi < pl and sl - si >= 0:
        c = p[pi]
        if c == 42:
            while pi + 1 < pl and p[pi + 1] == 42:
                pi += 1
            if pi + 1 == pl:
                return True
            for k in range(si, sl + 1):
                if _match_slow(p[pi + 1 :], s[k:], nocase):
                    return True
            return False
        if si >= sl:
            return False
        if c == 63:
            si += 1
        elif c == 91:
            pi += 1
            negate = pi < pl and p[pi] == 94
            if negate:
                pi += 1
            match = False
            while True:
                if pi < pl and p[pi] == 92 and pi + 2 <= pl - 1 + 1 and pi + 1 < pl:
                    pi += 1
                    if p[pi] == s[si]:
                        match = True
                elif pi >= pl or p[pi] == 93:
                    break
                elif pi + 2 < pl and p[pi + 1] == 45:
                    a, b, x = p[pi], p[pi + 2], s[si]
                    if a > b:
                        a, b = b, a
                    if nocase:
                        a, b, x = _lower(a), _lower(b), _lower(x)
                    pi += 2
                    if a <= x <= b:
                        match = True
                elif nocase:
                    if _lower(p[pi]) == _lower(s[si]):
                        match = True
                elif p[pi] == s[si]:
                    match = True
                pi += 1
            if pi >= pl:
                pi -= 1  # Redis: the class ran off the end; stay on its last byte
            if negate:
                match = not match
            if not match:
                return False
            si += 1
        else:
            if c == 92 and pi + 1 < pl:
                pi += 1
                c = p[pi]
            if nocase:
                if _lower(c) != _lower(s[si]):
                    return False
            elif c != s[si]:
                return False
            si += 1
        pi += 1
        if si == sl:
            while pi < pl and p[pi] == 42:
                pi += 1
            break
    return pi == pl and si == sl


def glob_match(pattern: bytes, s: bytes, nocase: bool = False) -> bool:
    if pattern == b"*":
        return True
    rx = _compile(pattern, nocase)
    if rx is None:
        return _match_slow(pattern, s, nocase)
    return rx.match(s) is not None
