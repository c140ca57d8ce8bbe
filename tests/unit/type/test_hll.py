"""HyperLogLog: the string bytes, cached cardinalities and estimates must equal redis-server's after
the same commands (sparse editing, promotion to dense, merges), in RESP2 and RESP3."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raxdb.storage import hll
from tests.support.diff import Diff, RawConnection
from tests.support.servers import start_raxdb, start_redis


def _elements(seed: int, n: int) -> list[str]:
    rnd = random.Random(seed)
    return [f"e{rnd.getrandbits(40)}" for _ in range(n)]


def test_empty_and_small(diff):
    diff("PFADD", "h")
    diff("GET", "h")
    diff("PFADD", "h")
    diff("PFCOUNT", "h")
    diff("GET", "h")
    diff("PFADD", "h", "a", "b", "c")
    diff("GET", "h")
    diff("PFADD", "h", "a")
    diff("PFCOUNT", "h")
    diff("GET", "h")
    diff("PFADD", "h", "a", "b", "d")
    diff("GET", "h")
    diff("OBJECT", "ENCODING", "h")
    diff("STRLEN", "h")
    diff("TYPE", "h")


@pytest.mark.parametrize("batch", [1, 7, 100])
def test_sparse_edits_byte_exact(diff2, batch):
    elements = _elements(batch, 1200)
    for i in range(0, len(elements), batch):
        diff2("PFADD", "h", *elements[i:i + batch])
        if (i // batch) % 10 == 0:
            diff2("GET", "h")
            diff2("PFCOUNT", "h")
    diff2("GET", "h")
    diff2("PFDEBUG", "ENCODING", "h")


def test_promotion_to_dense_and_dense_updates(diff2):
    elements = _elements(42, 6000)
    for i in range(0, len(elements), 500):
        diff2("PFADD", "h", *elements[i:i + 500])
        diff2("PFDEBUG", "ENCODING", "h")
        diff2("GET", "h")
        diff2("PFCOUNT", "h")
        diff2("GET", "h")
    diff2("PFADD", "h", *elements[:100])  # nothing new
    diff2("GET", "h")


def test_estimates_match_over_range(diff2):
    elements = _elements(7, 30000)
    done = 0
    for n in (1, 2, 10, 50, 200, 1000, 5000, 20000, 30000):
        diff2("PFADD", "h", *elements[done:n])
        done = n
        diff2("PFCOUNT", "h")
    diff2("GET", "h")


def test_pfcount_multi(diff):
    diff("PFADD", "a", *_elements(1, 50))
    diff("PFADD", "b", *_elements(2, 3000))
    diff("PFADD", "c", *_elements(1, 20))
    diff("PFCOUNT", "a", "b")
    diff("PFCOUNT", "a", "c")
    diff("PFCOUNT", "a", "nokey")
    diff("PFCOUNT", "nokey", "nokey2")
    diff("PFCOUNT", "nokey")
    diff("PFCOUNT", "a", "b", "c")
    diff("GET", "a")  # multi-key counts do not touch the caches
    diff("GET", "b")


def test_pfmerge(diff2):
    diff2("PFADD", "a", *_elements(1, 50))
    diff2("PFADD", "b", *_elements(2, 80))
    diff2("PFMERGE", "d", "a", "b")
    diff2("GET", "d")
    diff2("PFCOUNT", "d")
    diff2("PFMERGE", "a", "b")
    diff2("GET", "a")
    diff2("PFMERGE", "only")
    diff2("GET", "only")
    diff2("PFMERGE", "e", "nokey")
    diff2("GET", "e")
    diff2("PFADD", "big", *_elements(3, 4000))
    diff2("PFDEBUG", "ENCODING", "big")
    diff2("PFMERGE", "f", "a", "big")
    diff2("GET", "f")
    diff2("PFMERGE", "a", "a", "b")
    diff2("GET", "a")
    diff2("PFMERGE", "big", "a")
    diff2("GET", "big")
    # a sparse merge result large enough to be promoted while being written
    diff2("PFADD", "m1", *_elements(4, 1500))
    diff2("PFADD", "m2", *_elements(5, 1500))
    diff2("PFMERGE", "m3", "m1", "m2")
    diff2("PFDEBUG", "ENCODING", "m3")
    diff2("GET", "m3")


def test_wrong_types_and_invalid_strings(diff):
    diff("SADD", "set", "a")
    diff("SET", "str", "hello")
    diff("SET", "int", "12345678901234567")
    diff("SET", "magic", "HYLL")
    diff("SET", "badenc", b"HYLL\x02" + b"\x00" * 11)
    diff("SET", "shortdense", b"HYLL\x00" + b"\x00" * 20)
    for key in ("set", "str", "int", "magic", "badenc", "shortdense"):
        diff("PFADD", key, "x")
        diff("PFCOUNT", key)
        diff("PFCOUNT", key, "nokey")
        diff("PFCOUNT", "nokey", key)
        diff("PFMERGE", "dst", key)
        diff("PFMERGE", key, "nokey")
        diff("PFDEBUG", "ENCODING", key)
    diff("EXISTS", "dst")


def test_corrupted_sparse(diff):
    header = b"HYLL\x01\x00\x00\x00" + b"\x00" * 8
    diff("SET", "short", header + b"\x7f\xfe")  # covers 16383 registers
    diff("SET", "long", header + b"\x7f\xff\x00")  # covers 16385
    diff("SET", "valover", header + b"\x7f\xfe\x83\x83")  # VAL run crosses the end
    for key in ("short", "long", "valover"):
        diff("PFCOUNT", key)
        diff("PFCOUNT", key, key)
        diff("PFMERGE", "d", key)
        diff("PFDEBUG", "GETREG", key)
        diff("PFDEBUG", "DECODE", key)
    diff("EXISTS", "d")


@pytest.mark.parametrize("tail", [b"h", b"nan", b"\x7f"])
def test_sparse_with_a_truncated_opcode_after_its_registers(diff, tail):
    """Bytes past the 16384 registers, ending in an XZERO cut short: PFADD rewrites the opcodes
    before them and leaves the tail as it is (no NUL added for the missing byte).  Found by
    tests/fuzz/test_fuzz_aof.py."""
    diff("PFMERGE", "k")
    diff("APPEND", "k", tail)
    diff("PFADD", "k", "d", "a")
    diff("GET", "k")
    diff("PFCOUNT", "k")
    diff("PFDEBUG", "DECODE", "k")


def test_cached_cardinality_is_trusted(diff):
    diff("PFADD", "h", "a", "b")
    diff("PFCOUNT", "h")
    # a valid cache says 7: PFCOUNT believes it, as Redis does
    diff("SETRANGE", "h", "8", b"\x07")
    diff("PFCOUNT", "h")
    diff("SETRANGE", "h", "15", b"\x80")  # stale: recomputed and rewritten
    diff("PFCOUNT", "h")
    diff("GET", "h")


def test_set_bytes_then_pfadd(diff2):
    """An HLL written with SET (an immutable string) is edited like any other."""
    diff2("PFADD", "src", *_elements(9, 40))
    raw = diff2("GET", "src")
    value = raw.split(b"\r\n", 1)[1][:-2]
    diff2("SET", "copy", value)
    diff2("PFADD", "copy", *_elements(10, 40))
    diff2("GET", "copy")
    diff2("SET", "copy2", value)
    diff2("PFCOUNT", "copy2")
    diff2("GET", "copy2")
    diff2("OBJECT", "ENCODING", "copy2")


def test_dense_register_above_32_via_merge(diff2):
    dense = bytearray(hll.new_sparse())
    hll.to_dense(dense)
    hll.dense_set(dense, 5, 40)
    hll.dense_set(dense, 16383, 51)
    diff2("SET", "d", bytes(dense))
    diff2("PFCOUNT", "d")
    diff2("PFADD", "s", "a", "b")
    diff2("PFMERGE", "s", "d")
    diff2("GET", "s")
    diff2("PFCOUNT", "s")
    diff2("PFDEBUG", "GETREG", "d")


def test_pfdebug(diff):
    diff("PFADD", "h", "a", "b", "c", "d")
    diff("PFDEBUG", "ENCODING", "h")
    diff("PFDEBUG", "DECODE", "h")
    diff("PFDEBUG", "decode", "h")
    diff("PFDEBUG", "FOO", "h")
    diff("PFDEBUG", "GETREG", "nokey")
    diff("PFDEBUG", "TODENSE", "h")
    diff("PFDEBUG", "TODENSE", "h")
    diff("PFDEBUG", "ENCODING", "h")
    diff("GET", "h")
    diff("PFDEBUG", "DECODE", "h")
    diff("PFADD", "g", "x")
    diff("PFDEBUG", "GETREG", "g")
    diff("GET", "g")
    diff("PFDEBUG", "GETREG", "g", "extra")
    diff("PFDEBUG", "GETREG")


def test_arity(diff):
    diff("PFADD")
    diff("PFCOUNT")
    diff("PFMERGE")
    diff("PFSELFTEST", "x")


def test_pfselftest(raw):
    assert raw.call("PFSELFTEST") == b"+OK\r\n"


@pytest.fixture(scope="module")
def small_sparse_pair():
    """Servers whose hll-sparse-max-bytes is tiny, so promotion happens after a few elements."""
    ours = start_raxdb("--hll-sparse-max-bytes", "40")
    theirs = start_redis("--hll-sparse-max-bytes", "40")
    yield ours, theirs
    ours.stop()
    theirs.stop()


@pytest.mark.oracle
def test_promotion_at_configured_sparse_limit(small_sparse_pair):
    ours, theirs = small_sparse_pair
    for port in (ours.port, theirs.port):
        c = RawConnection(port)
        c.call("FLUSHALL")
        c.close()
    d = Diff(ours.port, theirs.port)
    try:
        for e in _elements(11, 30):
            d("PFADD", "h", e)
            d("PFDEBUG", "ENCODING", "h")
            d("GET", "h")
        d("PFADD", "a", "x", "y")
        d("PFADD", "b", *_elements(12, 8))
        d("PFMERGE", "a", "b")
        d("PFDEBUG", "ENCODING", "a")
        d("GET", "a")
    finally:
        d.close()


@pytest.fixture(scope="module")
def notify_pair():
    ours = start_raxdb("--notify-keyspace-events", "KEA")
    theirs = start_redis("--notify-keyspace-events", "KEA")
    yield ours, theirs
    ours.stop()
    theirs.stop()


@pytest.mark.oracle
def test_keyspace_events(notify_pair):
    from tests.unit.test_notify import check

    check(notify_pair, [
        ("PFADD", "h", "a"), ("PFADD", "h", "a"), ("PFADD", "h"), ("PFADD", "g"), ("PFCOUNT", "h"),
        ("PFCOUNT", "h"), ("PFCOUNT", "h", "g"), ("PFMERGE", "m", "h", "g"), ("PFMERGE", "m"),
        ("PFCOUNT", "nokey"),
    ])


# ---- the encodings against a plain register model (hypothesis) ----------------------------------
@given(st.lists(st.tuples(st.integers(0, hll.REGISTERS - 1), st.integers(1, 51)), max_size=300),
       st.integers(18, 3000))
def test_sparse_edits_vs_register_model(updates, sparse_max):
    """Any sequence of register raises, sparse (promoting at the limit or a value > 32) or dense,
    holds exactly the model's registers, and a sparse value stays well formed."""
    model = bytearray(hll.REGISTERS)
    buf = hll.new_sparse()
    for index, count in updates:
        changed = count > model[index]
        model[index] = max(model[index], count)
        regs = bytearray(hll.REGISTERS)
        regs[index] = count
        before = bytes(buf)
        hll.write_registers(buf, regs, sparse_max)
        assert (bytes(buf) != before) == changed or buf[4] == hll.DENSE
        if buf[4] == hll.SPARSE:
            sp = hll._Sparse(buf)
            assert sp.covered == hll.REGISTERS and len(buf) <= max(sparse_max, 18)
            assert all(1 <= run <= (4 if kind == hll._VAL else 16384) for kind, _, run in sp.decoded())
            assert all(val <= 32 for _, val, _ in sp.decoded())
    assert hll.registers(buf) == model
    assert hll.count(buf) == hll.count_registers(model)


@given(st.integers(0, 2**32), st.integers(1, 63))
def test_dense_pack_roundtrip(seed, top):
    rnd = random.Random(seed)
    regs = bytearray(rnd.randrange(top + 1) for _ in range(hll.REGISTERS))
    buf = bytearray(hll.MAGIC + bytes(12)) + hll.pack_dense(regs)
    assert hll.dense_registers(buf) == regs
    assert all(hll.dense_get(buf, i) == regs[i] for i in range(0, hll.REGISTERS, 97))


@given(st.integers(0, 2**32), st.integers(0, 127), st.integers(0, 127))
def test_max_into_is_elementwise_max(seed, top_a, top_b):
    rnd = random.Random(seed)
    a = bytearray(rnd.randrange(top_a + 1) for _ in range(hll.REGISTERS))
    b = bytes(rnd.randrange(top_b + 1) for _ in range(hll.REGISTERS))
    expect = bytes(map(max, a, b))
    hll.max_into(a, b)
    assert a == expect


@given(st.lists(st.binary(max_size=20), max_size=200), st.integers(18, 400))
def test_pfadd_vs_model(elements, sparse_max):
    model = bytearray(hll.REGISTERS)
    for e in elements:
        i, cnt = hll.pattern(e)
        model[i] = max(model[i], cnt)
    sparse = hll.new_sparse()
    hll.add(sparse, elements, sparse_max)
    dense = hll.new_sparse()
    hll.to_dense(dense)
    hll.add(dense, elements, sparse_max)
    assert hll.registers(sparse) == model == hll.registers(dense)
    assert len(dense) == hll.DENSE_SIZE


@pytest.mark.oracle
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.binary(min_size=1, max_size=12), min_size=1, max_size=15), max_size=8))
def test_pfadd_batches_byte_exact_at_small_limit(small_sparse_pair, batches):
    ours, theirs = small_sparse_pair
    d = Diff(ours.port, theirs.port)
    try:
        d("DEL", "hb")
        for batch in batches:
            d("PFADD", "hb", *batch)
            d("GET", "hb")
        d("PFCOUNT", "hb")
    finally:
        d.close()


@pytest.mark.oracle
def test_config_set_sparse_limit(small_sparse_pair):
    from tests.unit.type.test_set_encoding import _config_set_or_skip

    ours, theirs = small_sparse_pair
    d = Diff(ours.port, theirs.port)
    try:
        d("DEL", "hc")
        _config_set_or_skip(d, "hll-sparse-max-bytes", "3000")
        d("PFADD", "hc", *_elements(21, 20))
        d("PFDEBUG", "ENCODING", "hc")
        _config_set_or_skip(d, "hll-sparse-max-bytes", "20")
        d("PFADD", "hc", *_elements(22, 3))
        d("PFDEBUG", "ENCODING", "hc")
        d("GET", "hc")
    finally:
        d.both("CONFIG", "SET", "hll-sparse-max-bytes", "40")
        d.close()
