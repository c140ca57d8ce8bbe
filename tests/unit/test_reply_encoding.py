"""protocol/reply.py's version-independent encoders (bulk, array, integer): compiled, bulk and
array write their frame into one new bytes object; interpreted, they join and format.  Both
builds must give the frames Redis sends (the file is marked `pure`, so it runs in both)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raxdb.protocol import reply as R

pytestmark = pytest.mark.pure

# lengths on both sides of every digit count of "$<len>" and of the cached headers (4096)
sizes = st.sampled_from([0, 1, 9, 10, 99, 100, 999, 1000, 4095, 4096, 9999, 10000, 10001])
blobs = st.one_of(st.binary(max_size=40), sizes.map(lambda n: bytes(range(256)) * (n // 256) + b"\r" * (n % 256)))


@settings(max_examples=200)
@given(blobs)
def test_bulk_is_its_frame(b):
    assert R.bulk(b) == b"$%d\r\n%s\r\n" % (len(b), b)
    assert R.bulk(bytearray(b)) == b"$%d\r\n%s\r\n" % (len(b), b)


@settings(max_examples=200)
@given(st.lists(st.binary(max_size=12), max_size=12) | sizes.map(lambda n: [b":1\r\n"] * n))
def test_array_is_its_header_and_elements(items):
    frame = b"*%d\r\n%s" % (len(items), b"".join(items))
    assert R.array(items) == frame
    assert R.array(tuple(items)) == frame
    if items:  # an element that is not bytes: the general path
        assert R.array([bytearray(items[0])] + items[1:]) == frame


@given(st.integers(-(2**63), 2**63 - 1))
def test_integer_is_its_line(n):
    assert R.integer(n) == b":%d\r\n" % n


@pytest.mark.parametrize("enc", [R.RESP2, R.RESP3, R.RESP2_72, R.RESP3_72], ids=["2", "3", "2-7.2", "3-7.2"])
@pytest.mark.parametrize("flat", [False, True])
def test_text_scores_reply_as_their_doubles(enc, flat):
    """A score given as a listpack's d2string text (bytes) replies exactly as the double it reads
    as: copied in 7.0's spelling, read back for 7.2's; in a WITHSCORES reply and alone."""
    values = [1.1, 0.1, 2.5, -0.0, 0.0, 1e17, -3.4, 1e-5, 1.2345678901234567e300, float("inf"), float("-inf"),
              2.0**53, 4.0, -7.0, 2.0**62]
    texts = [b"%.17g" % v if v not in (float("inf"), float("-inf")) else (b"inf" if v > 0 else b"-inf")
             for v in values]
    as_floats = [(v, b"m%d" % i) for i, v in enumerate(values)]
    as_texts = [(t, b"m%d" % i) for i, t in enumerate(texts)]
    mixed = [p if i % 2 else q for i, (p, q) in enumerate(zip(as_floats, as_texts, strict=True))]
    want = R.scored_members(enc, as_floats, flat)
    assert R.scored_members(enc, as_texts, flat) == want
    assert R.scored_members(enc, mixed, flat) == want
    for v, t in zip(values, texts, strict=True):
        assert enc.score(t) == enc.score(v) == enc.double(v)
        assert R.score_text(enc, t) == R.score_text(enc, v) == enc.double_text(v)
