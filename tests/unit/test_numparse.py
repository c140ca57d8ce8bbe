"""numparse's plain-digit reader, in both builds: the fast path of ZADD's scores, score range
bounds and every integer argument maybe_int reads (numkeys, counts)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raxdb.server.base.numparse import digits_value
from raxdb.server.table.args import maybe_int

texts = (st.binary(max_size=20)
         | st.integers(0, 10**17).map(lambda i: b"%d" % i)
         | st.integers(0, 10**5).map(lambda i: b"00%d" % i)
         | st.sampled_from([b"", b"0", b"-1", b"+1", b" 1", b"1 ", b"1.0", b"\xd9\xa1", b"999999999999999",
                            b"1000000000000000"]))


@pytest.mark.pure
@given(texts)
def test_digits_value_reads_1_to_15_ascii_digits_only(arg):
    want = int(arg) if 0 < len(arg) <= 15 and all(48 <= c <= 57 for c in arg) else -1
    assert digits_value(arg) == want


@pytest.mark.pure
@given(texts)
def test_maybe_int_reads_as_string2ll(arg):
    """maybe_int's digits fast path agrees with string2ll's reading: no leading zero but "0", no
    sign or blank, int64's range."""
    s = arg.decode("latin-1")
    canonical = s == "0" or (s[:1] in "123456789" and s.isascii() and s.isdigit()) if s else False
    neg = s[:1] == "-" and s[1:2] in list("123456789") and s[1:].isascii() and s[1:].isdigit()
    want = int(s) if (canonical or neg) and -(2**63) <= int(s) < 2**63 else None
    assert maybe_int(arg) == want
