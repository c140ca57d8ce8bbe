"""The stream layout: random XADD / XDEL / XTRIM sequences applied to `storage.stream.Stream` and to
redis-server, then every node (rax key and listpack bytes) and the metadata compared byte for byte
with the stream in Redis's DUMP payload; plus a model check of reads in both directions, and the
loader's one-walk check of a loaded stream (checked_as_loaded) against `validate`."""

from __future__ import annotations

import gc
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raxdb.storage import rax as rax_module
from raxdb.storage import rdb
from raxdb.storage.stream import MAX_ID, U64, Consumer, Stream, entry_resp, format_id
from tests.support.diff import RawConnection
from tests.support.servers import start_redis

pytestmark = pytest.mark.pure

NODE_ENTRIES = 5
NODE_BYTES = 300


def enc_id(i: int) -> str:
    return format_id(i).decode()


# ---- the RDB stream payload ----------------------------------------------------------------------
class Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def length(self) -> int:
        b = self.data[self.pos]
        kind = b >> 6
        if kind == 0:
            self.pos += 1
            return b & 0x3F
        if kind == 1:
            v = ((b & 0x3F) << 8) | self.data[self.pos + 1]
            self.pos += 2
            return v
        if b == 0x80:
            v = int.from_bytes(self.data[self.pos + 1:self.pos + 5], "big")
            self.pos += 5
            return v
        if b == 0x81:
            v = int.from_bytes(self.data[self.pos + 1:self.pos + 9], "big")
            self.pos += 9
            return v
        raise AssertionError("encoded/compressed RDB string at %d" % self.pos)

    def string(self) -> bytes:
        n = self.length()
        s = self.data[self.pos:self.pos + n]
        self.pos += n
        return s

    def stream_id(self) -> int:
        ms = self.length()
        return (ms << 64) | self.length()


def redis_stream(conn: RawConnection, key: str) -> dict:
    frame = conn.call("DUMP", key)
    header, _, rest = frame.partition(b"\r\n")
    r = Reader(rest[:int(header[1:])])
    assert r.data[0] == 19  # RDB_TYPE_STREAM_LISTPACKS_2
    r.pos = 1
    nodes = [(r.string(), r.string()) for _ in range(r.length())]
    meta = {"length": r.length(), "last_id": r.stream_id(), "first_id": r.stream_id(),
            "max_deleted_id": r.stream_id(), "entries_added": r.length()}
    return {"nodes": nodes, **meta}


def ours(s: Stream) -> dict:
    return {"nodes": [(k, bytes(lp)) for k, lp in s.rax.items()], "length": s.length, "last_id": s.last_id,
            "first_id": s.first_id, "max_deleted_id": s.max_deleted_id, "entries_added": s.entries_added}


@pytest.fixture(scope="module")
def redis_conn():
    srv = start_redis("--rdbcompression", "no", "--stream-node-max-entries", str(NODE_ENTRIES),
                      "--stream-node-max-bytes", str(NODE_BYTES))
    conn = RawConnection(srv.port)
    yield conn
    conn.close()
    srv.stop()


# ---- operations ---------------------------------------------------------------------------------
field_sets = st.sampled_from([[b"a", b"b"], [b"a"], [b"b", b"a"], [b"1", b"-2"], [b"name", b"", b"x" * 40]])
values = st.one_of(st.integers(-10**12, 10**12).map(lambda i: b"%d" % i), st.binary(max_size=12),
                   st.sampled_from([b"v" * 70, b"w" * 200, b"01", b"-0"]))
ops = st.lists(st.one_of(
    st.tuples(st.just("add"), st.integers(0, 3), st.integers(0, 20000), st.sampled_from([0, 1, 2, 5, 3000, 10**9]),
              field_sets, st.lists(values, min_size=3, max_size=3)),
    st.tuples(st.just("del"), st.lists(st.integers(0, 60), min_size=1, max_size=3)),
    st.tuples(st.just("trim"), st.sampled_from(["MAXLEN", "MINID"]), st.booleans(), st.integers(0, 40),
              st.sampled_from([None, 0, 3, 7])),
), min_size=1, max_size=45)


def apply(s: Stream, conn: RawConnection | None, op, ids: list[int]) -> None:
    kind = op[0]
    if kind == "add":
        _, ms_step, seq, big, fields, vals = op
        last = s.last_id
        ms = (last >> 64) + ms_step * big
        if ms > U64:
            ms = U64
        new_id = (ms << 64) | seq
        if new_id <= last:
            new_id = last + 1
        if new_id > MAX_ID:
            return
        argv = []
        for f, v in zip(fields, vals, strict=False):
            argv += [f, v]
        assert s.append(argv, 0, new_id, NODE_BYTES, NODE_ENTRIES)
        ids.append(new_id)
        if conn is not None:
            assert conn.call("XADD", "s", enc_id(new_id), *argv) == b"$%d\r\n%s\r\n" % (
                len(format_id(new_id)), format_id(new_id))
    elif kind == "del":
        victims = [ids[i % len(ids)] if ids else 1 for i in op[1]]
        n = s.delete_ids(victims)
        if conn is not None:
            assert conn.call("XDEL", "s", *[enc_id(v) for v in victims]) == b":%d\r\n" % n
    else:
        _, strategy, approx, arg, limit = op
        if limit is not None and not approx:
            limit = None
        if strategy == "MAXLEN":
            target: str = str(arg)
            maxlen, minid = arg, None
        else:
            minid = ids[arg % len(ids)] if ids else 0
            maxlen, target = None, enc_id(minid)
        eff_limit = (limit if limit is not None else 100 * NODE_ENTRIES) if approx else 0
        n = s.trim(maxlen, minid, approx, eff_limit)
        if conn is not None:
            args = ["XTRIM", "s", strategy] + (["~"] if approx else []) + [target]
            if limit is not None:
                args += ["LIMIT", str(limit)]
            assert conn.call(*args) == b":%d\r\n" % n, args


@pytest.mark.oracle
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops)
def test_nodes_are_byte_identical_to_redis(redis_conn, oplist):
    redis_conn.call("DEL", "s")
    s = Stream()
    ids: list[int] = []
    for op in oplist:
        apply(s, redis_conn, op, ids)
        s.validate()
        if redis_conn.call("EXISTS", "s") == b":1\r\n":
            assert redis_stream(redis_conn, "s") == ours(s), op
            info = redis_conn.call("XINFO", "STREAM", "s")
            assert b"$16\r\nradix-tree-nodes\r\n:%d\r\n" % s.rax.numnodes in info


@pytest.mark.oracle
@pytest.mark.parametrize("values", [[b"x", b"yy"], [b"x", b"7"], [b"a" * 63, b"b" * 64]])
def test_big_nodes_are_byte_identical_to_redis(values):
    """Nodes of up to 300 entries: the master entry's count passes 127 (where it stops fitting one
    byte), with appends of the inline shape (short non-numeric values) and of others."""
    srv = start_redis("--rdbcompression", "no", "--stream-node-max-entries", "300",
                      "--stream-node-max-bytes", "100000")
    conn = RawConnection(srv.port)
    try:
        s = Stream()
        for i in range(1, 700):
            argv = [b"f", values[i % 2], b"g", b"v%d" % (i % 3) if i % 5 else b"-"]
            new_id = ((1000 + i // 3) << 64) | i
            assert s.append(argv, 0, new_id, 100000, 300)
            conn.call("XADD", "s", enc_id(new_id), *argv)
            if i % 97 == 0:
                s.validate()
                assert redis_stream(conn, "s") == ours(s), i
        s.trim(250, None, True, 30000)
        conn.call("XTRIM", "s", "MAXLEN", "~", "250")
        s.validate()
        assert redis_stream(conn, "s") == ours(s)
    finally:
        conn.close()
        srv.stop()


@pytest.mark.oracle
def test_capped_appends_across_node_boundaries_as_redis(redis_conn):
    """XADD's capped form as producers run it: every append followed by an approximate MAXLEN
    trim, which drops the head node whenever a whole one lies past the cap.  The head node's
    removal leaves the tail node's record standing, and the new first entry is read off the new
    head node; the nodes and the metadata stay Redis's at every step, with and without tombstones
    in the head node."""
    redis_conn.call("DEL", "s")
    s = Stream()
    for i in range(1, 60):
        argv = [b"field", b"value", b"f2", b"v%d" % (i % 4)]
        new_id = ((1000 + i // 4) << 64) | i
        assert s.append(argv, 0, new_id, NODE_BYTES, NODE_ENTRIES)
        redis_conn.call("XADD", "s", enc_id(new_id), *argv)
        if i == 30:  # a tombstone first in what becomes the head node: its first live entry follows
            victim = ((1000 + 26 // 4) << 64) | 26  # the first entry of its node
            assert s.delete_ids([victim]) == 1
            redis_conn.call("XDEL", "s", enc_id(victim))
        n = s.trim(12, None, True, 100 * NODE_ENTRIES)
        assert redis_conn.call("XTRIM", "s", "MAXLEN", "~", "12") == b":%d\r\n" % n, i
        s.validate()
        assert redis_stream(redis_conn, "s") == ours(s), i


@pytest.mark.oracle
def test_unlimited_node_saturates_its_element_count_as_redis():
    """stream-node-max-bytes 0 and -entries 0 (no limits): one node takes 14,000 entries, and its
    header's element count stops at 65535 (unknown) as Redis's does, whichever append path wrote
    the entry that crossed it."""
    srv = start_redis("--rdbcompression", "no", "--stream-node-max-entries", "0", "--stream-node-max-bytes", "0")
    conn = RawConnection(srv.port)
    try:
        s = Stream()
        for i in range(1, 14001):
            argv = [b"f", b"x" if i % 1000 else b"7"]  # an integer value now and then: the general path
            new_id = (1000 << 64) | i
            assert s.append(argv, 0, new_id, 0, 0)
            conn.call("XADD", "s", enc_id(new_id), *argv)
        s.validate()
        assert s.rax.numele == 1
        assert redis_stream(conn, "s") == ours(s)
    finally:
        conn.close()
        srv.stop()


# ---- reads against a model ----------------------------------------------------------------------
def enc(eid: int, fields: list[bytes], values: list[bytes]) -> tuple:
    return eid, tuple(fields), tuple(values)


@settings(max_examples=200, deadline=None)
@given(ops, st.lists(st.tuples(st.integers(0, 70), st.integers(0, 70), st.integers(0, 4), st.booleans()),
                     min_size=1, max_size=4))
def test_node_views_follow_every_change(oplist, queries):
    """Encoded reads (served from cached node views) agree with a fresh decode after every step."""
    s = Stream()
    ids: list[int] = []
    for op in oplist:
        apply(s, None, op, ids)
        # MEMORY USAGE keeps the first nodes' sizes between calls: they must be what a fresh
        # walk measures after any change (few samples, so the stream often has more nodes)
        kept = s.mem_usage(2)
        s.validate()
        s._sampled = None
        assert s.mem_usage(2) == kept, op
        all_ids = sorted(set(ids) | {0, MAX_ID})
        for a, b, count, rev in queries:
            lo, hi = all_ids[a % len(all_ids)], all_ids[b % len(all_ids)]
            want = [enc(e, f, v) for e, f, v in s.entries(lo, hi, rev)]
            if count:
                want = want[:count]
            assert s.encoded_range(lo, hi, count, rev, enc) == want
            assert [x for _, x in s.encoded(lo, hi, rev, enc)][:count or None] == want
            # the replies' encoder has its own walk over the listpack (_resp_entries)
            assert s.encoded_range(lo, hi, count, rev, entry_resp) == [entry_resp(*w) for w in want]
            # XRANGE's and XREAD's pages: slices of the nodes' reply buffers
            n, body = s.resp_range(lo, hi, count, rev)
            assert (n, bytes(body)) == (len(want), b"".join(entry_resp(*w) for w in want))
        for eid in ids[-3:]:
            got = s.get(eid)
            assert s.encoded_entry(eid, enc) == (None if got is None else enc(eid, *got))

@settings(max_examples=200, deadline=None)
@given(ops, st.lists(st.tuples(st.integers(0, 70), st.integers(0, 70), st.integers(0, 4)), max_size=6))
def test_reads_match_a_sorted_model(oplist, queries):
    s = Stream()
    ids: list[int] = []
    for op in oplist:
        apply(s, None, op, ids)
    s.validate()
    live = [(eid, f, v) for eid, f, v in s.entries()]
    assert len(live) == s.length
    assert [e[0] for e in live] == sorted(e[0] for e in live)
    assert list(s.entries(reverse=True)) == live[::-1]
    all_ids = sorted(set(ids) | {0, MAX_ID})
    for a, b, count in queries:
        lo = all_ids[a % len(all_ids)]
        hi = all_ids[b % len(all_ids)]
        want = [e for e in live if lo <= e[0] <= hi]
        assert list(s.entries(lo, hi)) == want
        assert list(s.entries(lo, hi, reverse=True)) == want[::-1]
        assert list(s.entries(lo + 1 if lo < MAX_ID else lo, hi)) == [e for e in want if e[0] != lo]
        if count:
            got = []
            for e in s.entries(lo, hi):
                got.append(e)
                if len(got) == count:
                    break
            assert got == want[:count]
    assert s.last_valid_id() == (live[-1][0] if live else 0)
    for eid in ids[:10]:
        found = s.get(eid)
        match = [(f, v) for e, f, v in live if e == eid]
        assert (found is None) == (not match)
        if found is not None:
            assert found == match[0]


def test_copy_is_deep_and_equal():
    s = Stream()
    for i in range(1, 30):
        s.append([b"a", b"%d" % i], 0, (i << 64) | 1, 4096, 4)
    cg = s.create_group(b"g", 0, -1)
    cons = cg.create_consumer(b"c", 1)
    for eid, _, _ in s.entries(0, (5 << 64) | 1):
        cg.add_pending(eid.to_bytes(16, "big"), cons, 2)
    t = s.copy()
    t.validate()
    assert ours(t) == ours(s)
    tcg = t.group(b"g")
    assert len(tcg.pel) == 5 and len(tcg.consumer(b"c").pel) == 5
    for k, nack in tcg.pel.items():
        assert tcg.consumer(b"c").pel.find(k) is nack and nack.consumer is tcg.consumer(b"c")
    t.delete_ids([(1 << 64) | 1])
    t.append([b"a", b"x"], 0, (99 << 64), 4096, 4)
    assert s.length == 29 and t.length == 29 and s.last_id == (29 << 64) | 1
    s.validate()
    assert s.encoding() == "stream" and len(s) == 29 and s.mem_usage() > sum(len(lp) for _, lp in s.rax.items())


def test_view_extension_across_counter_encodings():
    # The live counter grows from a 1-byte to a 2-byte element at 128 entries, shifting every entry
    # of the node by one byte: an extended view must account for it.
    s = Stream()
    for i in range(1, 300):
        s.append([b"f", b"%d" % i], 0, (i << 64) | 1, 0, 0)
        if i % 3 == 0 or 120 < i < 140:
            got = s.encoded_range(0, MAX_ID, 0, False, enc)
            assert got == [enc(e, f, v) for e, f, v in s.entries()]
    s.validate()
    assert s.rax.numele == 1


def test_reply_walk_over_every_element_encoding():
    """entry_resp's node walk reads every listpack encoding a value can have (integers of 7, 13,
    16, 24, 32 and 64 bits, negative ones, strings of 6-, 12- and 32-bit lengths, bulks of 256
    bytes and more) and entries with their own fields, as the generic decode does."""
    samples = [b"0", b"127", b"128", b"-1", b"4095", b"-4096", b"32767", b"-32768", b"8388607", b"-8388608",
               b"2147483647", b"-2147483648", b"2147483648", b"9223372036854775807", b"-9223372036854775808",
               b"", b"x", b"y" * 63, b"z" * 64, b"w" * 255, b"v" * 256, b"u" * 4095, b"t" * 4096, b"01"]
    s = Stream()
    eid = 1 << 64
    for i, v in enumerate(samples):
        fields = [b"f", v] if i % 3 else [b"f", v, b"g", b"%d" % i]  # master fields, or others
        eid += (1 << 64) * (1 if i % 2 else 5000) + i
        assert s.append(fields, 0, eid, 1 << 20, 100)
    s.delete_ids([s.first_entry_id()])
    from raxdb.storage import stream as S
    S._views.clear()
    got = s.encoded_range(0, MAX_ID, 0, False, entry_resp)
    assert got == [entry_resp(e, f, v) for e, f, v in s.entries()]
    assert len(got) == len(samples) - 1
    S._views.clear()
    n, body = s.resp_range(0, MAX_ID, 0, False)
    assert (n, bytes(body)) == (len(got), b"".join(got))
    # the buffer writer itself, node by node (interpreted too, where _resp_node does not call it)
    it = s.rax.iterator()
    it.seek("^", b"")
    while it.next():
        lp = it.value
        mid = S.key_id(it.key)
        ids: list[int] = []
        offs: list[int] = []
        _, _, mfields, first = Stream._master(lp)
        out = S._resp_write(mid, lp, first, mfields, ids, offs, 7, 0, MAX_ID, -1, None, bytearray(b"ab"))
        want = [(e, entry_resp(e, f, v)) for e, f, v in s.entries(mid, Stream._node_last_id(mid, lp))]
        assert ids == [e for e, _ in want]
        assert bytes(out) == b"ab" + b"".join(r for _, r in want)
        assert offs == list(itertools.accumulate([9] + [len(r) for _, r in want[:-1]]))
        # bounded: from the second entry to the one before the last, at most `count` of them
        for count in (-1, 0, 1, 2):
            res = [9, 9]
            lo, hi = (want[1][0], want[-2][0]) if len(want) > 2 else (mid, mid)
            out = S._resp_write(mid, lp, first, mfields, None, None, 0, lo, hi, count, res, bytearray())
            inside = [r for e, r in want if lo <= e <= hi]
            taken = inside if count < 0 else inside[:count]
            assert bytes(out) == b"".join(taken)
            met_end = (count < 0 or len(inside) < count) and any(e > hi for e, _ in want)  # walked past hi
            assert res == [len(taken), int(met_end)]


def test_resp_range_over_many_nodes():
    """resp_range serves a range from node views (the first and last nodes, nodes already viewed)
    and writes the other nodes straight from their listpacks: every way in and out of a node
    (start inside one, end inside one, COUNT reached in one, tombstones) gives the replies
    encoded_range gives."""
    from raxdb.storage import stream as S
    s = Stream()
    for i in range(1, 120):
        fields = [b"n", b"%d" % i, b"kind", b"odd" if i % 2 else b"even"] if i % 7 else [b"other", b"x" * i]
        assert s.append(fields, 0, (i << 64) | (i % 3), 1 << 20, 10)
    s.delete_ids([(i << 64) | (i % 3) for i in (5, 11, 12, 13, 50, 51)])
    ids = [e for e, _, _ in s.entries()]
    bounds = [0, ids[0], ids[3], ids[9], ids[10] - 1, ids[40], ids[-2], ids[-1], MAX_ID]
    for with_views in (False, True):
        for start in bounds:
            for end in bounds:
                for count in (0, 1, 9, 10, 25, 1000):
                    if not with_views:
                        S._views.clear()
                    want = s.encoded_range(start, end, count, False, entry_resp)
                    if not with_views:
                        S._views.clear()
                    n, body = s.resp_range(start, end, count, False)
                    assert (n, bytes(body)) == (len(want), b"".join(want)), (start, end, count)


# ---- a loaded stream's check ----------------------------------------------------------------------
def loaded(s: Stream) -> Stream:
    """`s` as a load makes it (RESTORE of its DUMP payload): nodes and metadata, no caches."""
    return rdb.restore(rdb.dump(s, compress=False), rdb.Limits())


def built(oplist) -> Stream:
    s = Stream()
    ids: list[int] = []
    for op in oplist:
        apply(s, None, op, ids)
    return s


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_a_loaded_stream_passes_the_one_walk_check(oplist):
    """Whatever XADD, XDEL and XTRIM made, the stream loaded from its payload passes
    checked_as_loaded (the loader's one walk) as it passes validate."""
    z = loaded(built(oplist))
    assert z.checked_as_loaded()
    z.validate()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops, st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=3),
       st.integers(0, 4))
def test_the_one_walk_check_never_passes_what_validate_refuses(oplist, flips, meta):
    """A node's bytes changed, or the metadata: checked_as_loaded vouches only for a stream that
    validate passes (else the loader asks validate, whose verdict stands)."""
    z = loaded(built(oplist))
    nodes = [lp for _, lp in z.rax.items()]
    if nodes:
        lp = nodes[flips[0][0] % len(nodes)]
        for pos, val in flips:
            lp[pos % len(lp)] = val
    if meta == 1:
        z.length += 1
    elif meta == 2:
        z.first_id += 1
    elif meta == 3:
        z.last_id = max(0, z.last_id - 1)
    if z.checked_as_loaded():
        z.validate()


def test_the_one_walk_check_leaves_a_stream_with_caches_to_validate():
    z = loaded(built([("add", 0, 1, 0, [b"a"], [b"1", b"2", b"3"])]))
    assert z.checked_as_loaded()
    z.first_entry_id()  # a read that fills the head cache
    assert z._head is None or not z.checked_as_loaded()


def _rax_objects(rax) -> list:
    """The rax object, its nodes and their child lists."""
    out = [rax]
    todo = [rax.head]
    while todo:
        node = todo.pop()
        out += [node, node.children]
        todo += node.children
    return out


@pytest.mark.skipif(not rax_module.__file__.endswith(".so"), reason="interpreted: nothing can be untracked")
def test_a_streams_objects_stay_out_of_the_collector_and_its_groups_cycles_are_collected():
    """Compiled, a stream, its tail record and its index (after splits, node closes, deletes and
    trims) are untracked, so a full collection does not walk them; its consumer groups' objects
    stay tracked, and their cycles (a NACK and its consumer) are freed once the stream is dropped."""
    s = Stream()
    for i in range(1, 400):
        s.append([b"a", b"%d" % i] if i % 3 else [b"b", b"x", b"c", b"%d" % i], 0, (i << 64) | i % 7, 300, 5)
    s.delete_ids([(i << 64) | i % 7 for i in range(50, 90)])
    s.trim(300, None, False, 0)
    s.append([b"a", b"z"], 0, 1000 << 64, 300, 5)
    s.validate()
    assert not gc.is_tracked(s) and not gc.is_tracked(s._tail) and not gc.is_tracked(s._tail.fields)
    assert [o for o in _rax_objects(s.rax) if gc.is_tracked(o)] == []
    cons = s.create_group(b"g", 0, -1).create_consumer(b"gc-check", 1)
    nack = s.group(b"g").add_pending((300 << 64).to_bytes(16, "big"), cons, 2)
    assert gc.is_tracked(cons) and gc.is_tracked(nack)
    del s, cons, nack
    gc.collect()
    assert not [o for o in gc.get_objects() if type(o) is Consumer and o.name == b"gc-check"]
