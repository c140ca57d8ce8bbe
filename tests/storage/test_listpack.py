"""The listpack: fixed encodings, a property test against a Python list, and byte equality with
what redis-server 7.0 stores (the listpack inside the DUMP payload of a listpack-encoded hash)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raxdb.storage.listpack import (
    INT64_MAX,
    INT64_MIN,
    NUMELE_UNKNOWN,
    Listpack,
    backlen_bytes,
    encode_entry,
    equal_indexes,
    from_encoded,
    string_to_int,
)
from raxdb.storage.listpack import values as lp_values
from tests.support.diff import RawConnection

pytestmark = pytest.mark.pure


def model_value(v: bytes | int) -> bytes | int:
    """What a listpack hands back for an appended value: canonical int strings become ints."""
    if isinstance(v, int):
        return v
    i = string_to_int(v)
    return v if i is None else i


# ---- fixed cases ---------------------------------------------------------------------------------
@pytest.mark.parametrize("v, body", [
    (0, b"\x00"), (127, b"\x7f"), (128, b"\xc0\x80"), (-1, b"\xdf\xff"), (4095, b"\xcf\xff"),
    (-4096, b"\xd0\x00"), (4096, b"\xf1\x00\x10"), (-4097, b"\xf1\xff\xef"), (32767, b"\xf1\xff\x7f"),
    (32768, b"\xf2\x00\x80\x00"), (-32769, b"\xf2\xff\x7f\xff"), (2**23 - 1, b"\xf2\xff\xff\x7f"),
    (2**23, b"\xf3\x00\x00\x80\x00"), (2**31 - 1, b"\xf3\xff\xff\xff\x7f"),
    (2**31, b"\xf4\x00\x00\x00\x80\x00\x00\x00\x00"), (INT64_MIN, b"\xf4" + b"\x00" * 7 + b"\x80"),
    (INT64_MAX, b"\xf4" + b"\xff" * 7 + b"\x7f"),
])
def test_integer_encodings(v, body):
    assert encode_entry(v) == body + bytes([len(body)])
    assert encode_entry(b"%d" % v) == body + bytes([len(body)])
    lp = Listpack.from_values([v])
    assert list(lp) == [v]


@pytest.mark.parametrize("s", [b"01", b"+1", b"-0", b" 1", b"1 ", b"", b"-", b"1.5", b"0x1",
                               b"9223372036854775808", b"-9223372036854775809", b"123456789012345678901"])
def test_non_canonical_numbers_stay_strings(s):
    assert string_to_int(s) is None
    assert list(Listpack.from_values([s])) == [s]


@pytest.mark.parametrize("n, header", [(0, b"\x80"), (63, b"\xbf"), (64, b"\xe0\x40"), (4095, b"\xef\xff"),
                                       (4096, b"\xf0\x00\x10\x00\x00")])
def test_string_encodings(n, header):
    s = b"x" * n
    e = encode_entry(s)
    assert e.startswith(header + s)
    assert e[len(header) + n:] == backlen_bytes(len(header) + n)
    lp = Listpack.from_values([s, b"y"])
    assert list(lp) == [s, b"y"]
    lp.validate()


def test_backlen_thresholds():
    assert backlen_bytes(127) == b"\x7f"
    assert backlen_bytes(128) == b"\x01\x80"
    assert len(backlen_bytes(16382)) == 2
    assert len(backlen_bytes(16383)) == 3
    assert len(backlen_bytes(2097150)) == 3
    assert len(backlen_bytes(2097151)) == 4
    assert len(backlen_bytes(268435454)) == 4
    assert len(backlen_bytes(268435455)) == 5


def test_empty_and_header():
    lp = Listpack()
    assert lp.bytes() == b"\x07\x00\x00\x00\x00\x00\xff"
    assert len(lp) == 0 and lp.first() is None and lp.last() is None and lp.seek(0) is None
    lp.append(b"a")
    assert lp.bytes() == b"\x0a\x00\x00\x00\x01\x00\x81a\x02\xff"


def test_count_saturates_and_len_rewrites_it():
    lp = Listpack.from_values([1] * (NUMELE_UNKNOWN + 1))
    assert lp.buf[4:6] == b"\xff\xff"
    assert len(lp) == NUMELE_UNKNOWN + 1
    lp.delete_range(0, 2)
    assert lp.buf[4:6] == b"\xff\xff"  # stays unknown after a delete, as in Redis
    assert len(lp) == NUMELE_UNKNOWN - 1
    assert lp.buf[4:6] == (NUMELE_UNKNOWN - 1).to_bytes(2, "little")  # lpLength wrote it back
    lp.validate()


def test_from_bytes_rejects_garbage():
    with pytest.raises(ValueError):
        Listpack.from_bytes(b"\x08\x00\x00\x00\x01\x00\x01\xff")  # backlen missing
    with pytest.raises(ValueError):
        Listpack.from_bytes(b"\x07\x00\x00\x00\x01\x00\xff")  # count says 1


# ---- property test against a list ------------------------------------------------------------
values = st.one_of(
    st.integers(min_value=INT64_MIN, max_value=INT64_MAX),
    st.integers(min_value=-5000, max_value=5000).map(lambda i: b"%d" % i),
    st.binary(max_size=70),
    st.sampled_from([b"x" * 4095, b"y" * 4096, b"z" * 200, b"01", b"-0"]),
)
ops = st.lists(st.one_of(
    st.tuples(st.just("append"), values),
    st.tuples(st.just("prepend"), values),
    st.tuples(st.just("insert"), st.integers(0, 50), st.booleans(), values),
    st.tuples(st.just("replace"), st.integers(0, 50), values),
    st.tuples(st.just("delete"), st.integers(0, 50)),
    st.tuples(st.just("delete_range"), st.integers(-60, 60), st.integers(0, 5)),
), max_size=40)


def check_against(lp: Listpack, model: list) -> None:
    lp.validate()
    assert len(lp) == len(model)
    assert list(lp) == model
    offsets = []
    p = lp.first()
    while p is not None:
        offsets.append(p)
        p = lp.next(p)
    assert len(offsets) == len(model)
    back = []
    p = lp.last()
    while p is not None:
        back.append(p)
        p = lp.prev(p)
    assert back == offsets[::-1]
    for i, off in enumerate(offsets):
        assert lp.seek(i) == off
        assert lp.seek(i - len(model)) == off
        assert lp.get(off) == model[i]
        v = model[i]
        assert lp.get_bytes(off) == (b"%d" % v if isinstance(v, int) else v)
    assert lp.seek(len(model)) is None and lp.seek(-len(model) - 1) is None


@settings(max_examples=300, deadline=None)
@given(ops)
def test_operations_match_list_model(oplist):
    lp = Listpack()
    model: list = []
    for op in oplist:
        kind = op[0]
        if kind == "append":
            lp.append(op[1])
            model.append(model_value(op[1]))
        elif kind == "prepend":
            lp.prepend(op[1])
            model.insert(0, model_value(op[1]))
        elif kind == "insert" and model:
            i = op[1] % len(model)
            p = lp.insert(lp.seek(i), op[3], after=op[2])
            j = i + 1 if op[2] else i
            model.insert(j, model_value(op[3]))
            assert lp.seek(j) == p
        elif kind == "replace" and model:
            i = op[1] % len(model)
            lp.replace(lp.seek(i), op[2])
            model[i] = model_value(op[2])
        elif kind == "delete" and model:
            i = op[1] % len(model)
            nxt = lp.delete(lp.seek(i))
            del model[i]
            assert nxt == lp.seek(i)
        elif kind == "delete_range":
            index, count = op[1], op[2]
            lp.delete_range(index, count)
            start = index + len(model) if index < 0 else index
            if 0 <= start < len(model):
                del model[start:start + count]
        check_against(lp, model)


def test_find_with_skip():
    lp = Listpack.from_values([b"f1", b"v1", b"10", b"f1", b"x", b"y"])
    assert lp.find(b"f1", skip=1) == lp.seek(0)
    assert lp.find(b"10", skip=1) == lp.seek(2)
    assert lp.find(b"v1", skip=1) is None  # values are skipped
    assert lp.find(b"y", lp.seek(1), skip=1) == lp.seek(5)
    assert lp.find(b"010") is None


# ---- byte equality with redis-server ---------------------------------------------------------
def _rdb_string(payload: bytes, pos: int) -> tuple[bytes, int]:
    b = payload[pos]
    kind = b >> 6
    if kind == 0:
        n, pos = b & 0x3F, pos + 1
    elif kind == 1:
        n, pos = ((b & 0x3F) << 8) | payload[pos + 1], pos + 2
    elif b == 0x80:
        n, pos = int.from_bytes(payload[pos + 1:pos + 5], "big"), pos + 5
    elif b == 0x81:
        n, pos = int.from_bytes(payload[pos + 1:pos + 9], "big"), pos + 9
    else:
        raise AssertionError("compressed or encoded RDB string: %r" % payload[pos:pos + 8])
    return payload[pos:pos + n], pos + n


def redis_hash_listpack(conn: RawConnection, key: str) -> bytes:
    frame = conn.call("DUMP", key)
    header, _, rest = frame.partition(b"\r\n")
    payload = rest[:int(header[1:])]
    assert payload[0] == 16, "not a listpack-encoded hash"  # RDB_TYPE_HASH_LISTPACK
    lp, _ = _rdb_string(payload, 1)
    return lp


@pytest.fixture(scope="module")
def redis_conn(oracle):
    c = RawConnection(oracle.port)
    for name, value in [("rdbcompression", "no"), ("hash-max-listpack-entries", "100000"),
                        ("hash-max-listpack-value", "100000")]:
        assert c.call("CONFIG", "SET", name, value) == b"+OK\r\n"
    yield c
    c.call("CONFIG", "SET", "rdbcompression", "yes")
    c.call("CONFIG", "SET", "hash-max-listpack-entries", "128")
    c.call("CONFIG", "SET", "hash-max-listpack-value", "64")
    c.call("DEL", "lp:h")
    c.close()


field_names = st.sampled_from([b"a", b"b", b"0", b"12", b"-7", b"long" * 20, b"f" * 4100, b"99999999999"])
hash_ops = st.lists(st.one_of(
    st.tuples(st.just("hset"), field_names, values.filter(lambda v: isinstance(v, bytes))),
    st.tuples(st.just("hdel"), field_names),
), min_size=1, max_size=25)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hash_ops)
def test_bytes_equal_redis_hash_listpack(redis_conn, oplist):
    redis_conn.call("DEL", "lp:h")
    lp = Listpack()
    for op in oplist:
        if op[0] == "hset":
            _, f, v = op
            redis_conn.call("HSET", "lp:h", f, v)
            p = lp.find(f, skip=1)
            if p is None:
                lp.append(f)
                lp.append(v)
            else:
                lp.replace(lp.next(p), v)
        else:
            _, f = op
            redis_conn.call("HDEL", "lp:h", f)
            p = lp.find(f, skip=1)
            if p is not None:
                lp.delete_range_at(p, 2)
        if len(lp):
            assert redis_hash_listpack(redis_conn, "lp:h") == lp.bytes(), op


def test_bytes_equal_redis_saturated_count(redis_conn):
    redis_conn.call("DEL", "lp:h")
    n = 33000  # 66000 elements: the header count saturates at 65535
    args = ["HSET", "lp:h"]
    lp = Listpack()
    for i in range(n):
        f, v = b"f%d" % i, b"%d" % (i * 7919 - 10**6)
        args += [f, v]
        lp.append(f)
        lp.append(v)
    redis_conn.sock.settimeout(300)  # 33,000 inserts into one listpack are quadratic in Redis too
    redis_conn.call(*args)
    assert lp.buf[4:6] == b"\xff\xff"
    assert redis_hash_listpack(redis_conn, "lp:h") == lp.bytes()


# ---- equal_indexes: LREM's scan, lpCompare without decoding ---------------------------------------
def _entry_as_string(s: bytes) -> bytes:
    """A string entry for s even when s spells an integer (as a listpack Redis did not write may
    hold it), at the smallest string encoding of its length."""
    n = len(s)
    if n < 64:
        return bytes((0x80 | n,)) + s + bytes((n + 1,))
    if n < 4096:
        body = bytes((0xE0 | (n >> 8), n & 0xFF)) + s
    else:
        body = b"\xf0" + n.to_bytes(4, "little") + s
    return body + backlen_bytes(len(body))


lp_items = st.one_of(
    st.integers(-(1 << 63), (1 << 63) - 1).map(lambda i: b"%d" % i),
    st.sampled_from([b"0", b"-1", b"1", b"127", b"128", b"4095", b"-4096", b"32767", b"-32769", b"8388608",
                     b"2147483648", b"-2147483649", b"01", b"+1", b"-0", b" 1", b"", b"a", b"1a"]),
    st.binary(max_size=8), st.sampled_from([b"x" * 63, b"y" * 64, b"z" * 4095, b"w" * 4096]),
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(lp_items, st.booleans()), max_size=30), st.one_of(lp_items, st.sampled_from([b"", b"5"])))
def test_equal_indexes_is_lpcompare(entries, v):
    # each element as the encoder stores it, or (the flag) forced into a string entry
    chunk = b"".join(_entry_as_string(s) if raw else encode_entry(s) for s, raw in entries)
    buf = from_encoded(chunk, len(entries))
    iv = string_to_int(v)
    want = [i for i, x in enumerate(lp_values(buf, 6, len(entries))) if x == v]
    assert equal_indexes(buf, 6, len(entries), v, iv or 0, iv is not None) == want
    assert equal_indexes(bytes(buf), 6, len(entries), v, iv or 0, iv is not None) == want


@pytest.mark.parametrize("top", [0x7F, 0x80, 0xFE, 0xFF])
def test_checked_count_refuses_a_32_bit_length_past_the_buffer(top):
    """A 32-bit string entry (0xF0) announcing 2 GiB or more: compiled, the length's top byte was
    shifted as a C int, wrapped negative, and the back-length check read before the buffer (a
    segfault in RESTORE, found by the restore fuzz target).  Refused, as any length past the end."""
    from raxdb.storage.listpack import checked_count

    body = bytes([0xF0, 0x90, 0xEE, 0x78, top]) + b"xxx"
    lp = (6 + len(body) + 1).to_bytes(4, "little") + (1).to_bytes(2, "little") + body + b"\xff"
    with pytest.raises(ValueError):
        checked_count(lp)
