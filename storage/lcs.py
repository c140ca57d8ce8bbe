"""Longest common subsequence of two byte strings, for the LCS command.

Redis fills the classic (len(a)+1) x (len(b)+1) dynamic-programming table and walks it back from the
bottom-right corner; the walk's tie-breaking decides WHICH common subsequence and which match ranges
it reports, so raxdb must reproduce the same walk.  A Python table of that size would be far too
slow, so the table is computed bit-parallel (Allison-Dix / Hyyro): row i is a bit vector over j
whose bit j-1 is set when LCS(i, j) - LCS(i, j-1) == 1, computed with a few big-int operations per
character of `a`.  Those difference bits are exactly what the walk needs:

- at a[i-1] == b[j-1] Redis steps diagonally;
- otherwise it compares LCS(i-1, j) with LCS(i, j-1) and moves up only if the former is larger.
  Since LCS(i, j) is the max of the two, that happens exactly when LCS(i, j-1) < LCS(i, j), i.e.
  when the row-i difference bit j-1 is set.

Rows are kept as little-endian bytes.  Runs of "left" steps are skipped in one jump: the walk stops
at the nearest earlier byte equal to a[i-1] (bytes.rfind) or the nearest earlier set bit of the row,
whichever comes first, so a long `b` costs no per-byte Python work.
"""

from __future__ import annotations

from collections.abc import Iterator

# _MATCH_TABLES[c] maps byte c to b"1" and every other byte to b"0" (for building match masks).
_MATCH_TABLES: dict[int, bytes] = {}


def _match_table(c: int) -> bytes:
    t = _MATCH_TABLES.get(c)
    if t is None:
        t = _MATCH_TABLES[c] = bytes(49 if i == c else 48 for i in range(256))
    return t


def _rows(a: bytes | bytearray, b: bytes | bytearray, keep: bool) -> tuple[int, list[bytes]]:
    """(LCS length, difference rows 0..len(a) as little-endian bytes if `keep`)."""
    n = len(b)
    full = (1 << n) - 1
    nbytes = (n + 7) >> 3
    masks = {c: int(b.translate(_match_table(c))[::-1], 2) if n else 0 for c in set(a)}
    v = full
    rows = [bytes(nbytes)] if keep else []
    for c in a:
        u = v & masks[c]
        v = ((v + u) | (v - u)) & full
        if keep:
            rows.append((~v & full).to_bytes(nbytes, "little"))
    return (~v & full).bit_count(), rows


def lcs_length(a: bytes | bytearray, b: bytes | bytearray) -> int:
    return _rows(a, b, False)[0]


def lcs_walk(a: bytes | bytearray, b: bytes | bytearray) -> tuple[int, Iterator[tuple[int, int]]]:
    """(LCS length, the matched (i, j) index pairs in the order Redis's walk visits them: from the
    end of both strings backwards)."""
    length, rows = _rows(a, b, True)

    def walk() -> Iterator[tuple[int, int]]:
        i, j = len(a), len(b)
        while i > 0 and j > 0:
            c = a[i - 1]
            if b[j - 1] == c:
                i -= 1
                j -= 1
                yield i, j
                continue
            # Redis steps left until b[j-1] == c (then diagonal) or row i's bit j-1 is set (then
            # up); jump straight to the nearer of the two.
            j = max(b.rfind(c, 0, j), _last_bit_below(rows[i], j)) + 1
            if j and b[j - 1] != c:
                i -= 1

    return length, walk()


def _last_bit_below(row: bytes, j: int) -> int:
    """Index of the highest set bit below position j in a little-endian bit row, or -1."""
    k = (j - 1) >> 3
    byte = row[k] & ((2 << ((j - 1) & 7)) - 1)
    if byte:
        return (k << 3) + byte.bit_length() - 1
    prefix = row[:k].rstrip(b"\0")
    return ((len(prefix) - 1) << 3) + prefix[-1].bit_length() - 1 if prefix else -1
