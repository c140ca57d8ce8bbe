"""The hash encodings: property tests of `storage.hashtype.Hash` against a dict model (including the
listpack -> hashtable conversion at both thresholds, one way only), OBJECT ENCODING and field order
compared with redis-server at the thresholds, and the listpack bytes / MEMORY USAGE estimate
compared with what redis-server reports for the same hash."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raxdb.storage import rdb
from raxdb.storage.alloc import sds_alloc, size_class
from raxdb.storage.hashtype import Hash
from raxdb.storage.lpcodec import LP_EMPTY
from raxdb.storage.quicklist import Quicklist
from tests.support.diff import RawConnection, parse
from tests.support.servers import start_raxdb, start_redis
from tests.unit.type.test_list_encoding import dump_nodes

fields = st.one_of(st.sampled_from([b"a", b"b", b"c", b"d", b"e", b"12", b"-3"]), st.binary(max_size=12))
values = st.one_of(st.sampled_from([b"", b"1", b"007", b"x" * 8, b"y" * 9]), st.binary(max_size=12),
                   st.integers(-(2**63), 2**63 - 1).map(lambda i: b"%d" % i))

hash_ops = st.one_of(
    # limits drawn per write: CONFIG SET may change them between writes
    # (or the defaults, so that some hashes stay listpacks for long)
    st.tuples(st.just("set"), st.lists(st.tuples(fields, values), min_size=1, max_size=4),
              st.integers(0, 6) | st.just(128), st.integers(0, 10) | st.just(64)),
    st.tuples(st.just("del"), st.lists(fields, min_size=1, max_size=3)),
    st.tuples(st.just("scan"), st.integers(1, 5)),
    st.tuples(st.just("rand"), st.integers(1, 6)),
    st.tuples(st.just("size")),  # MEMORY USAGE: from then on the listpack's length is kept
)


@settings(max_examples=400, deadline=None)
@given(st.lists(hash_ops, max_size=40))
def test_hash_matches_dict_model(program):
    h = Hash()
    model: dict[bytes, bytes] = {}
    listpack = True
    for op in program:
        if op[0] == "set":
            max_entries, max_value = op[2], op[3]
            args = [x for pair in op[1] for x in pair]
            if any(len(x) > max_value for x in args):
                listpack = False
            new = len({f for f, _ in op[1]} - set(model))
            assert h.set_pairs(args, 0, max_entries, max_value) == new
            for f, v in op[1]:
                model[f] = v
            if len(model) > max_entries:
                listpack = False
        elif op[0] == "del":
            for f in op[1]:
                assert h.delete(f) == (f in model)
                model.pop(f, None)
        elif op[0] == "scan":
            seen: list[bytes] = []
            cursor = 0
            while True:
                cursor, got = h.scan(cursor, op[1])
                seen.extend(got)
                if cursor == 0:
                    break
            assert sorted(seen) == sorted(model)
            if h.lp:
                assert seen == list(model)  # a listpack hash is returned whole, in order
        elif op[0] == "size" and h.lp:
            assert h.mem_usage() == 16 + size_class(len(h.listpack()))
        elif op[0] == "rand" and model:
            assert h.random_field() in model
            assert set(h.random_fields(op[1])) <= set(model)
            k = min(op[1], len(model) - 1)
            if k > 0:
                picked = h.sample_fields(k)
                assert len(picked) == len(set(picked)) == k and set(picked) <= set(model)
        assert h.d == model
        assert list(h.d) == list(model)  # insertion order kept, as the listpack keeps it
        if h.lp_bytes is not None:  # kept through every change since
            assert h.lp_bytes == len(h.listpack()) - LP_EMPTY
        assert h.encoding() == ("listpack" if listpack else "hashtable")
        assert len(h) == len(model)
    copy = h.copy()
    assert copy.d == model and copy.encoding() == h.encoding()
    h.set_pairs([b"after-copy", b"1"], 0, 512, 64)
    assert copy.d == model
    if model and copy.lp:
        assert Hash.from_listpack(copy.listpack()).d == model


# ---- thresholds against redis-server ----------------------------------------------------------
@pytest.fixture(scope="module")
def small_limit_servers():
    """raxdb and redis with 4-entry / 8-byte listpack limits (set on the command line)."""
    opts = ("--hash-max-listpack-entries", "4", "--hash-max-listpack-value", "8")
    ours, theirs = start_raxdb(*opts), start_redis(*opts)
    a, b = RawConnection(ours.port), RawConnection(theirs.port)
    yield a, b
    a.close()
    b.close()
    ours.stop()
    theirs.stop()


def both(conns, *cmd):
    a, b = conns
    ra, rb = a.call(*cmd), b.call(*cmd)
    assert ra == rb, (cmd, ra, rb)
    return ra


def same_encoding_and_content(conns, key="h"):
    enc = both(conns, "OBJECT", "ENCODING", key)
    if enc == b"$8\r\nlistpack\r\n":
        both(conns, "HGETALL", key)  # listpack order is deterministic: compare bytes
    else:
        a, b = (parse(c.call("HGETALL", key)) for c in conns)
        assert dict(zip(a[::2], a[1::2], strict=True)) == dict(zip(b[::2], b[1::2], strict=True))
    return enc


@pytest.mark.oracle
@pytest.mark.parametrize("script,final", [
    ([("HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4")], "listpack"),
    ([("HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5")], "hashtable"),
    ([("HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4"), ("HSET", "h", "e", "5")], "hashtable"),
    ([("HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5"), ("HDEL", "h", "a", "b", "c")], "hashtable"),
    ([("HSET", "h", "12345678", "12345678")], "listpack"),
    ([("HSET", "h", "123456789", "1")], "hashtable"),
    ([("HSET", "h", "a", "123456789")], "hashtable"),
    ([("HSET", "h", "a", "1"), ("HSET", "h", "a", "123456789"), ("HSET", "h", "a", "1")], "hashtable"),
    ([("HMSET", "h", "a", "1", "b", "123456789")], "hashtable"),
    ([("HSETNX", "h", "a", "123456789")], "hashtable"),
    ([("HSET", "h", "a", "1"), ("HSETNX", "h", "a", "123456789")], "listpack"),
    ([("HSET", "h", "a", "1"), ("HSETNX", "h", "longfield1", "1")], "hashtable"),
    ([("HINCRBY", "h", "longfield1", "1")], "hashtable"),
    ([("HINCRBY", "h", "f", "123456789")], "hashtable"),
    ([("HINCRBY", "h", "f", "12345678")], "listpack"),
    ([("HINCRBYFLOAT", "h", "longfield1", "1")], "hashtable"),
    ([("HINCRBYFLOAT", "h", "f", "1.2345678")], "hashtable"),
    ([("HINCRBYFLOAT", "h", "f", "1.234567")], "listpack"),
    ([("HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4"), ("HINCRBY", "h", "e", "1")], "hashtable"),
    ([("HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4"), ("HSETNX", "h", "e", "1")], "hashtable"),
    ([("HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4"), ("HSETNX", "h", "d", "1")], "listpack"),
])
def test_object_encoding_at_thresholds(small_limit_servers, script, final):
    conns = small_limit_servers
    both(conns, "FLUSHALL")
    for cmd in script:
        both(conns, *cmd)
        same_encoding_and_content(conns)
    assert same_encoding_and_content(conns) == b"$%d\r\n%s\r\n" % (len(final), final.encode())


sizes = st.sampled_from([b"v", b"12345678", b"123456789", b"7", b"-1", b"x" * 20])


@st.composite
def hash_scripts(draw):
    out = []
    for _ in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["HSET", "HSET", "HDEL", "HSETNX", "HINCRBY", "HINCRBYFLOAT", "HMSET"]))
        f = draw(st.sampled_from(["a", "b", "c", "d", "e", "f", "longfield1"]))
        if kind in ("HSET", "HMSET"):
            pairs = draw(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d", "e", "f", "g"]), sizes),
                                  min_size=1, max_size=3))
            out.append((kind, "h", *[x for p in pairs for x in p]))
        elif kind == "HDEL":
            out.append(("HDEL", "h", f, draw(st.sampled_from(["a", "b", "zz"]))))
        elif kind == "HSETNX":
            out.append(("HSETNX", "h", f, draw(sizes)))
        elif kind == "HINCRBY":
            out.append(("HINCRBY", "h", f, str(draw(st.integers(-10**9, 10**9)))))
        else:
            out.append(("HINCRBYFLOAT", "h", f, draw(st.sampled_from(["0.5", "1", "-2.25", "1e3"]))))
    return out


@pytest.mark.oracle
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hash_scripts())
def test_random_writes_same_encoding_and_order(small_limit_servers, script):
    conns = small_limit_servers
    both(conns, "DEL", "h")
    for cmd in script:
        both(conns, *cmd)
        same_encoding_and_content(conns)


@pytest.mark.oracle
def test_config_set_applies_to_next_write(small_limit_servers):
    conns = small_limit_servers
    probe = conns[0].call("CONFIG", "SET", "hash-max-listpack-entries", "4")
    if probe.startswith(b"-ERR unknown command"):
        pytest.fail("CONFIG SET not available in raxdb")
    both(conns, "FLUSHALL")
    both(conns, "HSET", "h", "a", "1", "b", "2", "c", "3")
    both(conns, "CONFIG", "SET", "hash-max-listpack-entries", "2")
    same_encoding_and_content(conns)  # nothing converts until the next write
    both(conns, "HSET", "h", "a", "9")
    same_encoding_and_content(conns)
    both(conns, "CONFIG", "SET", "hash-max-listpack-entries", "4")
    both(conns, "CONFIG", "SET", "hash-max-listpack-value", "2")
    both(conns, "HSET", "g", "a", "123")
    same_encoding_and_content(conns, "g")
    both(conns, "CONFIG", "SET", "hash-max-listpack-value", "8")


# ---- bytes and memory against redis-server ----------------------------------------------------
@pytest.fixture(scope="module")
def oracle_conn(oracle):
    conn = RawConnection(oracle.port)
    yield conn
    conn.close()


def dump_hash_listpack(payload: bytes) -> bytes:
    assert payload[0] == rdb.T_HASH_LISTPACK
    return rdb.Reader(payload, 1).string()


KEY_OVERHEAD = sds_alloc(1) + 24  # a one-byte key's sds + its dictEntry, as MEMORY USAGE adds


@given(st.lists(st.tuples(fields, values), min_size=1, max_size=30))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_listpack_bytes_and_memory_match_redis(oracle_conn, pairs):
    conn = oracle_conn
    conn.call("DEL", "h")
    args = [x for p in pairs for x in p]
    conn.call("HSET", "h", *args)
    h = Hash()
    h.set_pairs(args, 0, 512, 64)
    assert parse(conn.call("OBJECT", "ENCODING", "h")) == h.encoding().encode()
    assert dump_hash_listpack(parse(conn.call("DUMP", "h"))) == h.listpack()
    assert parse(conn.call("MEMORY", "USAGE", "h")) == h.mem_usage() + KEY_OVERHEAD


@pytest.mark.parametrize("n,size", [(1, 1), (2, 44), (100, 10), (3000, 10), (5000, 3)])
def test_list_memory_matches_redis(oracle_conn, n, size):
    conn = oracle_conn
    conn.call("DEL", "l")
    items = [b"%0*d" % (size, i) if i % 3 else b"x" * size for i in range(n)]
    for i in range(0, n, 500):
        conn.call("RPUSH", "l", *items[i:i + 500])
    ql = Quicklist.from_items(items)
    assert [len(b) for b in dump_nodes(parse(conn.call("DUMP", "l")))] == [sz for _, sz in ql.node_shape()]
    assert parse(conn.call("MEMORY", "USAGE", "l")) == ql.mem_usage() + KEY_OVERHEAD


def test_memory_usage_differential(diff):
    diff("HSET", "h", "a", "1")
    diff("MEMORY", "USAGE", "h")
    diff("HSET", "h", *[b"f%d" % i for i in range(200)])
    diff("MEMORY", "USAGE", "h")
    # A hashtable whose entries all have the same sizes, so the sample average is exact.
    diff("HSET", "t", *[x for i in range(100, 300) for x in (b"f%d" % i, b"v" * 70)])
    diff("OBJECT", "ENCODING", "t")
    diff("MEMORY", "USAGE", "t")
    diff("MEMORY", "USAGE", "t", "SAMPLES", "0")
