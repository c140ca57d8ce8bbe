"""Keywords end at a NUL byte, as in Redis: it compares option words with strcasecmp and tests
"*", "$", ">", "~", "+", "-" as C strings, so "REPLACE\\0x" is REPLACE and "~\\0" is "~".  Keys,
members and values stay binary-safe.  Found by sending the command fuzz's arguments with a NUL
and junk appended; subcommand names are left out (Redis finds "STREAM\\0x" or not depending on
its dict's hash seed)."""

from __future__ import annotations

import pytest

SETUP = [("SET", "a", "1"), ("RPUSH", "l", "b", "a", "c"), ("ZADD", "z", "1", "a", "2", "b"),
         ("ZADD", "lex", "0", "a", "0", "b"), ("XADD", "s", "1-1", "f", "v"), ("XGROUP", "CREATE", "s", "g", "0")]

CASES = [
    ("COPY", "a", "b", b"REPLACE\x00x"), ("LINSERT", "l", b"BEFORE\x001", "a", "z"),
    ("EXPIRE", "a", "100", b"NX\x00"), ("ZDIFF", "1", "z", b"WITHSCORES\x00"),
    ("ZUNIONSTORE", "d", "1", "z", b"AGGREGATE\x00", b"MAX\x00 "), ("ZADD", "z", b"LT\x001", "-3", "b"),
    ("ZADD", "z", "NX", b"INCR\x00 ", "4", "e"), ("ZINTERCARD", "1", "z", b"LIMIT\x00", "1"),
    ("ZRANGEBYLEX", "lex", b"+\x00", b"-\x00x"), ("ZLEXCOUNT", "lex", b"-\x00", b"+\x00x"),
    ("ZRANGEBYSCORE", "z", b"1\x00x", b"(3\x00"), ("MEMORY", "USAGE", "l", b"SAMPLES\x00", "1"),
    ("XTRIM", "s", "MAXLEN", b"~\x00 ", "5"), ("XADD", "s", "MAXLEN", b"=\x00", "5", "2-1", "f", "v"),
    ("XREAD", "STREAMS", "s", b"$\x00"), ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", b">\x00"),
    ("XGROUP", "SETID", "s", "g", b"$\x00"), ("SORT", "l", b"ALPHA\x00", b"DESC\x00x"),
    ("LPOS", "l", "a", b"RANK\x00", "1"), ("HRANDFIELD", "nohash", "1", b"WITHVALUES\x00"),
    ("CLIENT", "KILL", b"SKIPME\x00", "yes", b"ID\x00", "999999"), ("CLIENT", "NO-EVICT", b"ON\x00"),
    ("FLUSHDB", b"SYNC\x00"),
]


@pytest.mark.parametrize("cmd", CASES, ids=lambda c: " ".join(x if isinstance(x, str) else x.decode(errors="replace")
                                                            for x in c[:2]))
def test_keywords_end_at_nul(diff, cmd):
    for setup in SETUP:
        diff(*setup)
    diff(*cmd)
    diff("XINFO", "STREAM", "s")
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff("DBSIZE")
