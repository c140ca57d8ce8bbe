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
