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
from raxdb.storage.listpack import Listpack, backlen_bytes, encode_entry
from raxdb.storage.quicklist import Quicklist
from tests.storage.test_hash_table import check_picks
from tests.support.diff import RawConnection, encode_command, parse
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


def packed(model: dict[bytes, bytes]) -> bytes:
    """The listpack Redis builds for these pairs in this order, through the generic codec."""
    return Listpack.from_values([x for pair in model.items() for x in pair]).bytes()


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
            if h.encoding() == "listpack":
                assert seen == list(model)  # a listpack hash is returned whole, in order
        elif op[0] == "size" and listpack:
            assert h.mem_usage() == 16 + size_class(len(packed(model)))
        elif op[0] == "rand" and model:
            check_picks(h, model, op[1])
        assert h.encoding() == ("listpack" if listpack else "hashtable")
        assert len(h) == len(model)
        assert dict(h.items()) == model
        for f in list(model)[:3] + [b"absent", b"12", b""]:
            assert h.get(f) == model.get(f) and (f in h) == (f in model)
        if listpack:
            # the bytes held are the listpack Redis keeps: field order is insertion order, an
            # update keeps its place, a deletion closes the gap
            assert h.listpack() == packed(model)
            assert h.flat() == [x for pair in model.items() for x in pair]
        else:
            assert h.listpack() is None
            assert sorted(h.flat()[::2]) == sorted(model)
    copy = h.copy()
    assert dict(copy.items()) == model and copy.encoding() == h.encoding()
    h.set_pairs([b"after-copy", b"1"], 0, 512, 64)
    h.delete(next(iter(model), b"-"))
    assert dict(copy.items()) == model
    if model and copy.encoding() == "listpack":
        again = Hash.from_listpack(copy.listpack())
        assert again.listpack() == copy.listpack() and dict(again.items()) == model


@given(st.lists(st.tuples(fields, values), min_size=1, max_size=20, unique_by=lambda p: p[0]))
def test_non_canonical_listpack_is_re_encoded(pairs):
    """A listpack another writer encoded valid but not as lpAppend would (integers as strings,
    short strings with the 12-bit length) is re-encoded on load, so fields are still found."""
    chunks = []
    for f, v in pairs:
        for x in (f, v):
            chunks.append(b"%c%c%s%s" % (0xE0, len(x), x, backlen_bytes(len(x) + 2)) if len(x) % 2
                          else encode_entry(x))
    blob = Listpack.from_values([]).bytes()
    blob = (len(blob) + sum(map(len, chunks))).to_bytes(4, "little") + (2 * len(pairs)).to_bytes(2, "little") \
        + b"".join(chunks) + b"\xff"
    h = Hash.from_listpack(blob)
    model = dict(pairs)
    assert h.listpack() == packed(model)
    for f, v in pairs:
        assert h.get(f) == v
    if h.listpack() == blob:  # nothing was odd-length: kept as it came
        assert all(len(x) % 2 == 0 for p in pairs for x in p)


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


# ---- DUMP payloads against redis-server, after every command ------------------------------------
@pytest.fixture(scope="module")
def dump_servers():
    """raxdb and redis with 12-entry / 130-byte listpack limits, so that random programs cross
    both thresholds, and 64-byte (12-bit encoded) and 126-byte (2-byte back-length) strings
    still live in listpacks."""
    opts = ("--hash-max-listpack-entries", "12", "--hash-max-listpack-value", "130")
    ours, theirs = start_raxdb(*opts), start_redis(*opts)
    a, b = RawConnection(ours.port), RawConnection(theirs.port)
    yield a, b
    a.close()
    b.close()
    ours.stop()
    theirs.stop()


dump_fields = st.one_of(st.sampled_from([b"a", b"b", b"c", b"0", b"12", b"-7", b"007", b"f" * 64, b""]),
                        st.binary(min_size=1, max_size=6))
dump_values = st.one_of(
    st.sampled_from([b"", b"0", b"-0", b"01", b"+1", b"127", b"128", b"-4096", b"4095", b"32768",
                     b"9223372036854775807", b"-9223372036854775808", b"9223372036854775808",
                     b"x" * 63, b"x" * 64, b"y" * 125, b"y" * 126, b"z" * 131]),
    st.integers(-(2**40), 2**40).map(lambda i: b"%d" % i),
    st.binary(max_size=20),
)
dump_commands = st.one_of(
    st.lists(st.tuples(dump_fields, dump_values), min_size=1, max_size=4).map(
        lambda ps: ("HSET", "h", *[x for p in ps for x in p])),
    st.lists(dump_fields, min_size=1, max_size=3).map(lambda fs: ("HDEL", "h", *fs)),
    st.tuples(st.just("HSETNX"), st.just("h"), dump_fields, dump_values),
    st.tuples(st.just("HINCRBY"), st.just("h"), dump_fields, st.integers(-300, 300).map(str)),
    st.tuples(st.just("HINCRBYFLOAT"), st.just("h"), dump_fields, st.sampled_from(["0.5", "-1", "3"])),
    st.tuples(st.just("HGET"), st.just("h"), dump_fields),
    st.tuples(st.just("HMGET"), st.just("h"), dump_fields, dump_fields),
    st.tuples(st.just("HSTRLEN"), st.just("h"), dump_fields),
    st.tuples(st.just("HEXISTS"), st.just("h"), dump_fields),
    st.just(("HLEN", "h")),
    # RESTORE redis-server's DUMP into both: a listpack's bytes are kept as they came, and a
    # hashtable's fields small enough become a listpack in the payload's order on both
    st.just(("RESTORE-REDIS",)),
)


def hash_dict(conn) -> dict:
    flat = parse(conn.call("HGETALL", "h"))
    return dict(zip(flat[::2], flat[1::2], strict=True))


@pytest.mark.oracle
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(dump_commands, min_size=1, max_size=30))
def test_dump_payload_equals_redis_after_every_command(dump_servers, program):
    """The same random commands on both servers; after each, the same reply, the same encoding,
    and while a listpack the same DUMP payload byte for byte (RDB type, the listpack's bytes, the
    RDB version and the CRC).  A hashtable's order is its own, so it is compared as a dict."""
    conns = dump_servers
    both(conns, "DEL", "h")
    for cmd in program:
        if cmd[0] == "RESTORE-REDIS":
            payload = parse(conns[1].call("DUMP", "h"))
            if payload is not None:
                for conn in conns:
                    assert conn.call("RESTORE", "h", "0", payload, "REPLACE") == b"+OK\r\n"
        else:
            both(conns, *cmd)
        enc = both(conns, "OBJECT", "ENCODING", "h")
        if enc == b"$8\r\nlistpack\r\n":
            both(conns, "DUMP", "h")
            both(conns, "HGETALL", "h")
            both(conns, "MEMORY", "USAGE", "h")
        elif enc == b"$9\r\nhashtable\r\n":
            assert hash_dict(conns[0]) == hash_dict(conns[1])


@pytest.mark.oracle
def test_restore_keeps_redis_bytes_and_dump_gives_them_back(dump_servers):
    """A listpack hash DUMPed by redis-server and RESTOREd into raxdb is held as those bytes: its
    DUMP is redis-server's payload again, and reads and writes work on it."""
    ours, theirs = dump_servers
    both(dump_servers, "DEL", "h", "k")
    theirs.call("HSET", "h", "a", "1", "b", "x" * 64, "-5", "9223372036854775807", "", "")
    payload = parse(theirs.call("DUMP", "h"))
    assert ours.call("RESTORE", "k", "0", payload) == b"+OK\r\n"
    assert parse(ours.call("DUMP", "k")) == payload
    theirs.call("RESTORE", "k", "0", payload)
    for cmd in (("HGET", "k", "-5"), ("HGETALL", "k"), ("HSET", "k", "-5", "6", "c", "7"), ("HDEL", "k", "b"),
                ("DUMP", "k"), ("OBJECT", "ENCODING", "k")):
        both(dump_servers, *cmd)


@pytest.mark.oracle
def test_replaced_value_in_place_leaves_copies_and_dumps_alone(dump_servers):
    """HSET replacing one field's value with values whose entries are as long as the old one's
    (written into the listpack in place when nothing else holds it), shorter and longer, strings
    and integers of each entry width, in a listpack hash that a COPY shares and in one that
    nothing shares, then in a hashtable: after each, the same replies, encodings, HGETALL and
    DUMP payloads of the hash and of its copy taken before the write as redis-server's."""
    for conn in dump_servers:  # (what the tests before left differs)
        conn.call("DEL", "h", "k")
    both(dump_servers, "HSET", "h", "a", "abc", "b", "7", "c", "x" * 64)
    values = ("xyz", "abd", "a", "", "12", "99", "4000", "-4096", "32767", "-32768", "8388607", "1" * 10,
              "y" * 63, "z" * 63, "w" * 64, "v" * 64, "u" * 126, "abc")
    for shared in (True, False, True):
        for field in ("a", "b", "c"):
            for v in values:
                if shared:
                    both(dump_servers, "COPY", "h", "k", "REPLACE")
                both(dump_servers, "HSET", "h", field, v)
                both(dump_servers, "HGET", "h", field)
                both(dump_servers, "HGETALL", "h")
                both(dump_servers, "DUMP", "h")
                both(dump_servers, "OBJECT", "ENCODING", "h")
                if shared:
                    both(dump_servers, "HGETALL", "k")
                    both(dump_servers, "DUMP", "k")
    both(dump_servers, "HSET", "h", "d", "q" * 131)  # a hashtable from here on
    assert both(dump_servers, "OBJECT", "ENCODING", "h") == b"$9\r\nhashtable\r\n"
    for v in values:
        both(dump_servers, "HSET", "h", "a", v)
        both(dump_servers, "HGET", "h", "a")
        assert hash_dict(dump_servers[0]) == hash_dict(dump_servers[1])


@pytest.mark.oracle
def test_replies_pipelined_before_an_in_place_write_keep_their_bytes(dump_servers):
    """DUMP, HGETALL and MULTI/EXEC's replies of a listpack hash sent in one write with the HSETs
    after them, which replace a value with one of the same entry length: the replies waiting in
    the output buffer are of the hash as it was, as redis-server's."""
    both(dump_servers, "DEL", "h")
    both(dump_servers, "HSET", "h", "f", "aaa", "g", "5")
    cmds = [("DUMP", "h"), ("HGETALL", "h"), ("HSET", "h", "f", "bbb"), ("DUMP", "h"),
            ("MULTI",), ("HGETALL", "h"), ("HSET", "h", "f", "ccc"), ("HSET", "h", "g", "6"), ("DUMP", "h"),
            ("EXEC",), ("HSET", "h", "f", "ddd"), ("HGETALL", "h")]
    data = b"".join(encode_command(c) for c in cmds)
    replies = []
    for conn in dump_servers:
        conn.send(data)
        replies.append([conn.read_frame() for _ in cmds])
    assert replies[0] == replies[1]
