"""Glob matching: Redis's exact semantics, proven against redis-server through KEYS.

The oracle test loads the same random keys into both servers and compares KEYS <pattern> (sorted)
for random patterns over an alphabet dense in glob syntax (`* ? [ ] ^ - \\`), letters of both cases,
a NUL and high bytes (range ends compare as signed chars in Redis), and the empty key.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raxdb.storage.glob import compile_glob, glob_match
from tests.support.diff import RawConnection, parse

PATTERN_BYTES = b"ab*?[]^-\\Az\x00\x80\xff"
KEY_BYTES = b"abAz-]^[\\*?\x00\x80\xff"
# Whole constructs as well as single bytes, so classes and ranges (with high-byte ends) are common.
PATTERN_PIECES = [bytes([b]) for b in PATTERN_BYTES] + [
    b"[a-z]", b"[^a]", b"[\xff-a]", b"[a-\x80]", b"[^\x00-b]", b"[\\]]", b"\\*", b"[a-"]

patterns = st.lists(st.sampled_from(PATTERN_PIECES), max_size=6).map(b"".join)
keysets = st.lists(st.lists(st.sampled_from(KEY_BYTES), max_size=5).map(bytes), min_size=1, max_size=25,
                   unique=True)


@pytest.fixture(scope="module")
def pair(raxdb, oracle):
    conns = RawConnection(raxdb.port), RawConnection(oracle.port)
    yield conns
    for conn in conns:
        conn.close()


def _load(pair, keys: list[bytes]) -> None:
    args: list[bytes] = []
    for k in keys:
        args += [k, b"1"]
    for conn in pair:
        assert conn.call("FLUSHDB") == b"+OK\r\n"
        assert conn.call("MSET", *args) == b"+OK\r\n"


def _keys(pair, pattern: bytes) -> tuple[list[bytes], list[bytes]]:
    ours, theirs = (sorted(parse(conn.call("KEYS", pattern))) for conn in pair)
    return ours, theirs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=keysets, pats=st.lists(patterns, min_size=1, max_size=8))
def test_keys_matches_redis(pair, keys, pats):
    _load(pair, keys)
    for pattern in pats + [b"*"]:
        ours, theirs = _keys(pair, pattern)
        assert ours == theirs, f"KEYS {pattern!r} over {keys!r}"
        # The library entry point agrees with the server (KEYS special-cases a lone '*').
        if pattern != b"*":
            assert sorted(k for k in keys if glob_match(pattern, k)) == theirs


@pytest.mark.parametrize("pattern", [
    b"[a-\xff]", b"[\xff-a]", b"[\x80-\x7f]", b"[^\x00-\x7f]", b"[a-]", b"[a-]]", b"[]a]", b"[a", b"[^",
    b"[", b"[\\", b"[\\]]", b"\\", b"a\\", b"\\*", b"[!a]", b"[z-a]", b"[^-]", b"*[]", b"?*?", b"**a**",
])
def test_keys_corner_patterns(pair, pattern):
    keys = [bytes([b]) for b in range(256)] + [b"aa", b"a]", b"]a", b"a-", b"\\*", b"\\a", b"[a", b""]
    _load(pair, keys)
    ours, theirs = _keys(pair, pattern)
    assert ours == theirs


def test_star_nesting_limit_like_redis(pair):
    """Redis gives up on more than 1000 star groups followed by more pattern."""
    _load(pair, [b"a" * 1500])
    for pattern in [b"*a" * 1000, b"*a" * 1001, b"*a" * 1000 + b"*", b"*a" * 1001 + b"*",
                    b"*" + b"a*" * 1000 + b"a", b"*" + b"a*" * 999 + b"a", b"*?" * 1001]:
        ours, theirs = _keys(pair, pattern)
        assert ours == theirs, len(pattern)
    assert glob_match(b"*a" * 1000, b"a" * 1500)
    assert not glob_match(b"*a" * 1001, b"a" * 1500)


def test_empty_subject_matches_only_empty_pattern():
    assert glob_match(b"", b"")
    assert not glob_match(b"*", b"")
    assert not glob_match(b"**", b"")
    assert not glob_match(b"", b"a")
    assert glob_match(b"*", b"a")


def test_no_backtracking_blowup():
    # A backtracking regex would take ~len**k steps; the segment matcher is linear per segment.
    subject = b"a" * 5000
    assert not glob_match(b"*a*a*a*a*a*a*a*a*b", subject)
    assert glob_match(b"*a*a*a*a*a*a*a*a*", subject)
    assert glob_match(b"a*aa*a?a*a", subject)


def test_middle_segments_leftmost():
    m = compile_glob(b"x*ab*ab*y")
    assert m(b"xababy")
    assert m(b"xabzzaby")
    assert not m(b"xaby")
    assert not m(b"xabab")


def test_nocase():
    assert glob_match(b"HeLLo*", b"hello world", nocase=True)
    assert not glob_match(b"HeLLo*", b"hello world")
    assert glob_match(b"h?llo", b"HELLO", nocase=True)
    # Classes fold case for plain members and ranges...
    assert glob_match(b"[A-C]x", b"bX", nocase=True)
    assert glob_match(b"[abc]", b"B", nocase=True)
    # ...with both range ends lowered after ordering them: [A-z] becomes a..z, so '_' is out.
    assert glob_match(b"[A-z]", b"_")
    assert not glob_match(b"[A-z]", b"_", nocase=True)
    # An escaped class member stays case-sensitive.
    assert not glob_match(b"[\\A]", b"a", nocase=True)
    assert glob_match(b"[\\A]", b"A", nocase=True)
    # Non-letters are never folded.
    assert not glob_match(b"@", b"`", nocase=True)
