"""The sorted-set encodings against plain models (hypothesis), and against redis-server.

- `ZSet` vs a dict model under ZADD-flag updates, deletes, pops and slice deletes, with the limits
  drawn per write (CONFIG SET may change them between writes): order is always sorted (score,
  member); encoding is "listpack" until an add passes zset-max-listpack-entries or brings a member
  longer than zset-max-listpack-value, then "skiplist" for good; STORE results (`from_pairs`) are
  encoded afresh; a listpack never holds -0; the listpack held is always the one appending its
  pairs builds (Redis's bytes), and MEMORY USAGE is its allocation.
- The entry readers of the listpack walks against storage/listpack.py's decoder, over every entry
  encoding.
- Score, rank and lex lookups vs brute force over the model.
- The bytes against redis-server: the listpack held equals the one in Redis's DUMP payload, and
  random command sequences (conversions included) give byte-identical DUMP payloads after every
  step; RESTORE keeps the payload's bytes; an unsorted listpack payload is loaded sorted.
- Command sequences on servers started with tiny thresholds give Redis's encodings and replies.
"""

from __future__ import annotations

import bisect
import gc
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raxdb.storage import rdb
from raxdb.storage import zset as zset_module
from raxdb.storage.alloc import sds_alloc, size_class
from raxdb.storage.listpack import Listpack, checked_values, encode_int_entry, encode_str_entry
from raxdb.storage.zset import (
    IN_GT,
    IN_INCR,
    IN_LT,
    IN_NX,
    IN_XX,
    OUT_ADDED,
    OUT_NAN,
    OUT_NOP,
    OUT_UPDATED,
    LexRange,
    ScoreRange,
    ZSet,
    _SkipOrder,
    pack_pairs,
    zzl_find,
    zzl_insert,
    zzl_items,
    zzl_pairs,
)
from tests.support.diff import Diff, RawConnection, parse
from tests.support.servers import start_raxdb, start_redis

COMPILED = zset_module.__file__.endswith(".so")

KEY_OVERHEAD = sds_alloc(1) + 24  # a one-byte key's sds + its dictEntry, as MEMORY USAGE adds

scores = st.one_of(st.integers(-5, 5).map(float), st.sampled_from([0.5, -0.0, 0.0, math.inf, -math.inf, 1e300]),
                   st.floats(allow_nan=False, width=64))
members = st.one_of(st.sampled_from([b"a", b"b", b"c", b"", b"ab", b"\xff", b"12", b"-7", b"0"]),
                    st.binary(max_size=10))
flag_sets = st.sampled_from([0, IN_NX, IN_XX, IN_GT, IN_LT, IN_INCR, IN_INCR | IN_XX, IN_GT | IN_XX,
                             IN_LT | IN_INCR])


def _model_add(model, m, s, flags):
    """zsetAdd's contract on a dict: (out flag, score)."""
    cur = model.get(m)
    if cur is not None:
        if flags & IN_NX:
            return OUT_NOP
        if flags & IN_INCR:
            s = cur + s
            if math.isnan(s):
                return OUT_NAN
        if (flags & IN_LT and s >= cur) or (flags & IN_GT and s <= cur):
            return OUT_NOP
        if s != cur:
            model[m] = s
            return OUT_UPDATED
        return 0
    if flags & IN_XX:
        return OUT_NOP
    model[m] = s
    return OUT_ADDED


ops = st.lists(st.one_of(
    st.tuples(st.just("add"), members, scores, flag_sets, st.integers(0, 8) | st.just(128), st.integers(0, 6)),
    st.tuples(st.just("del"), members),
    st.tuples(st.just("pop"), st.integers(1, 4), st.booleans()),
    st.tuples(st.just("slice"), st.integers(0, 6), st.integers(0, 6)),
), max_size=60)


@settings(max_examples=300, deadline=None)
@given(ops)
def test_zset_model(seq):
    z = ZSet()
    model: dict[bytes, float] = {}
    skiplist = False
    for op in seq:
        if op[0] == "add":
            _, m, s, flags, max_entries, max_value = op
            before = dict(model)
            expect = _model_add(model, m, s, flags)
            out, _ = z.add(m, s, flags, max_entries, max_value)
            assert out == expect
            if expect == OUT_ADDED and (len(before) + 1 > max_entries or len(m) > max_value):
                skiplist = True
        elif op[0] == "del":
            assert z.delete(op[1]) == (op[1] in model)
            model.pop(op[1], None)
        elif op[0] == "pop":
            _, count, from_max = op
            expect = sorted((s, m) for m, s in model.items())
            expect = expect[::-1][:count] if from_max else expect[:count]
            got = z.pop(count, from_max)
            assert [m for _, m in got] == [m for _, m in expect]
            for _, m in got:
                del model[m]
        else:
            _, lo, hi = op
            expect = sorted((s, m) for m, s in model.items())[lo:hi]
            assert z.delete_slice(lo, min(hi, len(z))) == len(expect)
            for _, m in expect:
                del model[m]
        assert len(z) == len(model)
        pairs = list(z)
        assert pairs == sorted(pairs)
        assert {m for _, m in pairs} == model.keys()
        for m, s in model.items():
            got = z.score(m)
            assert got == s
            if z.is_listpack():
                assert math.copysign(1, got) == 1 or got != 0  # no -0 in a listpack
        assert z.score(b"never a member of the model") is None
        assert z.encoding() == ("skiplist" if skiplist else "listpack")
        if z.is_listpack():
            assert z.lp == pack_pairs(pairs)  # what appending the pairs builds: Redis's bytes
            assert z.mem_usage() == 16 + size_class(len(z.lp))
    for m in model:
        r = z.rank(m)
        assert list(z)[r][1] == m
        assert z.rank(m, True) == len(model) - 1 - r
    assert z.rank(b"never a member of the model") is None
    for max_entries, max_value in ((8, 6), (128, 64)):
        store = ZSet.from_pairs(list(z), max_entries, max_value)
        fits = len(model) <= max_entries and all(len(m) <= max_value for m in model)
        assert store.encoding() == ("listpack" if fits else "skiplist")
        assert list(store) == [(0.0 if s == 0 and fits else s, m) for s, m in z]
    copy = z.copy()
    copy.add(b"only in the copy", 1.0, 0, 128, 64)
    assert z.score(b"only in the copy") is None and len(copy) == len(z) + 1


# ---- the entry readers --------------------------------------------------------------------------
# Every entry encoding: 7-bit, 13-bit, 16/24/32/64-bit integers at their edges, strings of 6-bit,
# 12-bit and 32-bit lengths (back-lengths of 1 to 3 bytes), and text scores.
EDGE_INTS = [0, 127, 128, -1, -4096, 4095, 4096, -4097, 32767, -32768, 32768, 8388607, -8388608, 8388608,
             2**31 - 1, -(2**31), 2**31, 2**62, -(2**62), 2**63 - 1, -(2**63)]
EDGE_STRS = [b"", b"x", b"y" * 63, b"z" * 64, b"w" * 125, b"v" * 126, b"u" * 4095, b"t" * 4096, b"s" * 20000]


def test_entry_readers_agree_with_the_codec():
    values: list[bytes | int] = []
    for i, v in enumerate(EDGE_INTS + EDGE_STRS):
        values.append(v)  # as a member
        values.append(EDGE_INTS[i % len(EDGE_INTS)] if i % 2 else b"%.17g" % (i + 0.25))  # as a score
    lp = Listpack.from_values(values).bytes()
    items = checked_values(lp)
    assert zzl_items(lp) == items
    pairs = zzl_pairs(lp)
    assert [m for _, m in pairs] == items[0::2]
    assert [s for s, _ in pairs] == [float(x) for x in items[1::2]]
    for rank, m in enumerate(items[0::2]):
        assert zzl_find(lp, m, True) == rank
        p = zzl_find(lp, m)
        assert Listpack(bytearray(lp)).get_bytes(p) == m
        assert zzl_pairs(lp, rank, rank + 1) == [pairs[rank]]
    assert zzl_find(lp, b"absent") == -1
    assert zzl_find(lp, b"%d" % (2**63)) == -1  # past int64: compared as a string, found nowhere


@pytest.mark.pure
@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1) | st.sampled_from(EDGE_INTS), min_size=1, max_size=20))
def test_integer_score_entries_read_back(ints):
    """Scores stored as integer entries of every width (16-, 24-, 32-, 64-bit, negative ones
    included) read back as the codec decodes them: the compiled reader builds 32- and 64-bit
    values in C arithmetic, the interpreted one in Python's, and both must agree with it."""
    values: list[bytes | int] = []
    for i, v in enumerate(ints):
        values += [b"m%d" % i, v]
    lp = Listpack.from_values(values).bytes()
    assert [s for s, _ in zzl_pairs(lp)] == [float(v) for v in ints]
    assert zzl_items(lp) == checked_values(lp)


member_texts = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(lambda i: b"%d" % i),
    st.integers(-200, 200).map(lambda i: b"%d" % i),
    st.text("-0129a", max_size=5).map(str.encode),
)


@pytest.mark.pure
@settings(max_examples=200, deadline=None)
@given(st.lists(member_texts, unique=True, max_size=40))
def test_equal_scores_insert_in_member_order(members):
    """Members of one score, integers (stored as integer entries) and strings mixed, inserted one
    by one: the listpack holds them in memcmp order of their text, as Redis's zzlInsert does
    (the compiled walk compares an integer entry's digits without making its text)."""
    lp = pack_pairs([])
    for m in members:
        lp = zzl_insert(lp, m, 7.0)
    assert [m for _, m in zzl_pairs(lp)] == sorted(members)


@pytest.mark.pure
@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(EDGE_STRS) | member_texts | st.binary(max_size=70), scores, max_size=30))
def test_inserts_write_the_bytes_pack_pairs_writes(model):
    """zzl_insert one pair at a time (compiled, both entries are written into the new listpack in
    place) ends with the bytes pack_pairs encodes for the same pairs sorted: members of every
    string width and integer-like ones, scores integral (integer entries) or not (text)."""
    lp = pack_pairs([])
    for m, s in model.items():
        lp = zzl_insert(lp, m, s)
    assert lp == pack_pairs(sorted((s, m) for m, s in model.items()))


@pytest.mark.pure
def test_an_insert_leaves_a_saturated_count_unknown():
    """A listpack whose header count is 65535 ("unknown") keeps it through an insert, as lpInsert
    does; the entries are written all the same."""
    lp = pack_pairs([(1.0, b"a")])
    lp = lp[:4] + b"\xff\xff" + lp[6:]
    for score, text in ((2.5, b"2.5"), (7.0, b"7")):
        out = zzl_insert(lp, b"b", score)
        assert out[4:6] == b"\xff\xff"
        assert checked_values(out) == [b"a", b"1", b"b", text]


def _raw_listpack(*entries: bytes) -> bytes:
    """A listpack of entries encoded by hand (encoding, data, back-length each)."""
    body = b"".join(entries)
    return (len(body) + 7).to_bytes(4, "little") + len(entries).to_bytes(2, "little") + body + b"\xff"


def test_entries_redis_did_not_write_are_read_as_redis_reads_them():
    """A payload whose member "12" is a string entry and whose score is the text "1.0" (Redis would
    write an integer for both): found as lpCompare finds it, read as zzlGetScore reads it, and
    kept as it is; the same entries out of order are re-encoded sorted."""
    data = _raw_listpack(b"\x8212\x03", b"\x831.0\x04", b"\x81a\x02", b"\x01\x01")
    assert checked_values(data) == [b"12", b"1.0", b"a", b"1"]
    z = ZSet.from_listpack(data, [(1.0, b"12"), (1.0, b"a")])
    assert z.lp == data
    assert z.rank(b"12") == 0 and z.score(b"12") == 1.0 and z.score(b"a") == 1.0
    assert z.scan(0, 10) == (0, [b"12", b"1.0", b"a", b"1"])  # ZSCAN prints the entries' own text
    unsorted = _raw_listpack(b"\x81a\x02", b"\x01\x01", b"\x8212\x03", b"\x831.0\x04")
    z = ZSet.from_listpack(unsorted, [(1.0, b"a"), (1.0, b"12")])
    assert z.lp == pack_pairs([(1.0, b"12"), (1.0, b"a")])


order_ops = st.lists(st.one_of(
    st.tuples(st.just("set"), st.integers(0, 60), st.sampled_from([0.0, -0.0, 1.0, 2.0, math.inf, -math.inf]) | scores),
    st.tuples(st.just("del"), st.integers(0, 60)),
    # a present member's new score, through update (in place when the rank stays, as zslUpdateScore)
    st.tuples(st.just("move"), st.integers(0, 60), st.sampled_from([0.0, 1.0, 1.5, 2.0, -math.inf]) | scores),
    st.tuples(st.just("slice"), st.integers(-70, 70), st.integers(-70, 70)),
    st.tuples(st.just("read"), st.integers(-70, 70), st.integers(-70, 70)),
), max_size=150)


@given(order_ops)
def test_skip_order_vs_sorted_list(seq):
    """The skiplist encoding's container, with sublists of 2..8 pairs so that splits, merges and
    runs of equal scores across sublists all happen, against a plain sorted list."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(zset_module, "_LOAD", 4)
        mp.setattr(zset_module, "_HALF", 2)
        _check_skip_order(seq)


def _check_invariants(order: _SkipOrder) -> None:
    assert len(order._keys) == len(order._members) == len(order._maxes) == len(order._maxkeys)
    for k, keys in enumerate(order._keys):
        members = order._members[k]
        assert 0 < len(keys) == len(members) <= 8
        assert order._maxes[k] == (keys[-1], members[-1]) and order._maxkeys[k] == keys[-1]
    assert sum(map(len, order._keys)) == len(order)
    if COMPILED:  # the member sublists out of the cyclic collector, however they were made
        assert not [k for k, members in enumerate(order._members) if gc.is_tracked(members)]


def test_skip_order_update_at_every_position():
    """update() of each pair of several sublists, on a fresh copy each: to scores that keep its
    rank (the score changed in place, the sublist's maximum too when it is the last pair), to a
    neighbour's score (then the member order decides), and past either end."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(zset_module, "_LOAD", 4)
        mp.setattr(zset_module, "_HALF", 2)
        # members in the reverse order of their scores: a pair moved to a neighbour's score
        # belongs on that neighbour's other side
        model = [(float(i), b"m%02d" % (30 - i)) for i in range(30)]
        base = _SkipOrder(model)
        for i, (cur, m) in enumerate(model):
            for s in (cur + 0.5, cur - 0.5, cur + 1, cur - 1, math.inf, -math.inf, 100.0, -100.0):
                order = base.copy()
                order.update(cur, m, s)
                want = sorted([*model[:i], *model[i + 1:], (s, m)])
                assert list(order) == want
                assert order[want.index((s, m))] == (s, m)
                _check_invariants(order)


def test_skip_order_slice_deletes_at_every_boundary():
    """del order[a:b] for every a < b over several sublists, each on a fresh copy: whole
    sublists, prefixes and suffixes go, and the remainders are merged or dropped."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(zset_module, "_LOAD", 4)
        mp.setattr(zset_module, "_HALF", 2)
        model = [(float(i // 3), b"m%02d" % i) for i in range(30)]
        base = _SkipOrder(model)
        for a in range(31):
            for b in range(a, 31):
                order = base.copy()
                del order[a:b]
                assert list(order) == model[:a] + model[b:]
                _check_invariants(order)
                if b - a < 30:
                    assert order[0] == (model[:a] + model[b:])[0]


def _check_skip_order(seq) -> None:
    order = _SkipOrder()
    model: list[tuple[float, bytes]] = []
    score_of: dict[bytes, float] = {}
    for op in seq:
        if op[0] == "set":
            m, sc = b"m%d" % op[1], op[2]
            if m in score_of:
                order.remove((score_of[m], m))
                model.remove((score_of[m], m))
            order.add((sc, m))
            bisect.insort(model, (sc, m))
            score_of[m] = sc
        elif op[0] == "move":
            m, sc = b"m%d" % op[1], op[2]
            cur = score_of.get(m)
            if cur is not None and cur != sc:
                order.update(cur, m, sc)
                model.remove((cur, m))
                bisect.insort(model, (sc, m))
                score_of[m] = sc
        elif op[0] == "del":
            m = b"m%d" % op[1]
            if m in score_of:
                pair = (score_of.pop(m), m)
                order.remove(pair)
                model.remove(pair)
        elif op[0] == "slice":
            a, b = op[1], op[2]
            for _, m in model[a:b]:
                del score_of[m]
            del order[a:b]
            del model[a:b]
        else:
            a, b = op[1], op[2]
            assert order[a:b] == model[a:b]
            if model:
                assert order[a % len(model)] == model[a % len(model)]
                assert order[-1] == model[-1]
            lo, hi = max(a, 0), max(b, 0)
            assert list(order.islice(lo, hi)) == model[lo:hi]
            assert list(order.islice(lo, hi, reverse=True)) == model[lo:hi][::-1]
            for probe in ((float(a % 3),), (float(a % 3), b"m%d" % b), (math.inf,), (-math.inf, b"")):
                assert order.bisect_left(probe) == bisect.bisect_left(model, probe)
                assert order.bisect_right(probe) == bisect.bisect_right(model, probe)
        assert len(order) == len(model)
        assert list(order) == model
        _check_invariants(order)
    assert list(order.copy()) == model
    assert list(_SkipOrder(model)) == model


bounds = st.sampled_from([-math.inf, -2.0, -1.0, 0.0, 0.5, 1.0, 3.0, math.inf])


@given(st.dictionaries(members, st.integers(-3, 3).map(float), max_size=20), bounds, st.booleans(), bounds,
       st.booleans(), st.booleans())
def test_score_bounds_vs_brute_force(model, lo, loex, hi, hiex, big):
    z = ZSet()
    for m, s in model.items():
        z.add(m, s, 0, 0 if big else 1000, 1000)
    r = ScoreRange(lo, loex, hi, hiex)
    a, b = z.score_bounds(r)

    def inside(s):
        return (s > lo if loex else s >= lo) and (s < hi if hiex else s <= hi)

    assert [p for p in list(z)[a:b]] == [p for p in z if inside(p[0])]


lex_items = st.one_of(st.just(("-",)), st.just(("+",)), st.tuples(st.sampled_from(["(", "["]), members))


def _lex(item):
    if item == ("-",):
        return -1, b"", True
    if item == ("+",):
        return 1, b"", True
    return 0, item[1], item[0] == "("


@given(st.sets(members, max_size=20), lex_items, lex_items, st.booleans())
def test_lex_same_score_vs_brute_force(ms, lo, hi, big):
    z = ZSet()
    for m in ms:
        z.add(m, 1.0, 0, 0 if big else 1000, 1000)
    r = LexRange(*_lex(lo), *_lex(hi))
    expect = [m for m in sorted(ms) if r.gte_min(m) and r.lte_max(m)]
    if r.empty():
        expect = []
    assert [m for _, m in z.lex_walk(r, False)] == expect
    assert [m for _, m in z.lex_walk(r, True)] == expect[::-1]
    assert z.lex_count(r) == len(expect)


# ---- listpack bytes against redis-server's DUMP ---------------------------------------------------
@pytest.fixture(scope="module")
def plain_oracle():
    srv = start_redis("--rdbcompression", "no")
    conn = RawConnection(srv.port)
    yield conn
    conn.close()
    srv.stop()


def _dump_blob(payload: bytes) -> tuple[int, bytes]:
    """(RDB type, string) of a DUMP payload whose value is stored as one string."""
    return payload[0], rdb.Reader(payload, 1).string()


dump_scores = st.one_of(st.integers(-(2**53), 2**53).map(float), st.floats(allow_nan=False, allow_infinity=True),
                        st.sampled_from([0.0, -0.0, 1.5, 1e17, 2.0**60, 2.0**62, -(2.0**62), -(2.0**63)]))


@pytest.mark.oracle
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.binary(min_size=0, max_size=40) | st.integers(-(2**64), 2**64).map(b"%d".__mod__),
                       dump_scores, min_size=1, max_size=30))
def test_listpack_bytes_equal_redis(plain_oracle, model):
    plain_oracle.call("DEL", "z")
    z = ZSet()
    for m, s in model.items():
        plain_oracle.call("ZADD", "z", repr(s) if math.isfinite(s) else ("inf" if s > 0 else "-inf"), m)
        z.add(m, s, 0, 128, 64)
    payload = parse(plain_oracle.call("DUMP", "z"))
    rtype, blob = _dump_blob(payload)
    assert rtype == 17  # RDB_TYPE_ZSET_LISTPACK
    assert z.lp == blob
    assert parse(plain_oracle.call("MEMORY", "USAGE", "z")) == z.mem_usage() + KEY_OVERHEAD
    restored = rdb.restore(payload, rdb.Limits())
    assert restored.lp == blob and list(restored) == list(z)


# ---- random command sequences: the same DUMP payload as redis-server after every step --------------
@pytest.fixture(scope="module")
def small_zset_pair():
    extra = ("--zset-max-listpack-entries", "6", "--zset-max-listpack-value", "8")
    ours = start_raxdb(*extra)
    theirs = start_redis(*extra)
    d = Diff(ours.port, theirs.port)
    yield d
    d.close()
    ours.stop()
    theirs.stop()


KEYS = ["x", "y", "u", "w"]
dmembers = st.sampled_from(["a", "b", "c", "d", "e", "", "7", "-3", "100000", "12345678901", "9" * 20, "abcdefgh",
                            "abcdefghi", "ab" * 20])
dscores = st.sampled_from(["1", "2", "-0", "0", "2.5", "-1.5", "inf", "-inf", "1e17", "2.5e-5", "4611686018427387904",
                           "4611686018427387905", "9007199254740993", "1e300", "100", "-4097", "70000"])
dkeys = st.sampled_from(KEYS[:2])


def _pairs_args(pairs):
    return [v for pair in pairs for v in pair]


dsteps = st.lists(st.one_of(
    st.tuples(st.just("ZADD"), dkeys, st.tuples(st.sampled_from([[], ["NX"], ["XX"], ["GT"], ["LT"], ["CH"]]),
                                                 st.lists(st.tuples(dscores, dmembers), min_size=1, max_size=4))
              .map(lambda t: t[0] + _pairs_args(t[1]))),
    st.tuples(st.just("ZINCRBY"), dkeys, st.tuples(dscores, dmembers).map(list)),
    st.tuples(st.just("ZREM"), dkeys, st.lists(dmembers, min_size=1, max_size=3)),
    st.tuples(st.just("ZPOPMIN"), dkeys, st.sampled_from([[], ["2"]])),
    st.tuples(st.just("ZPOPMAX"), dkeys, st.sampled_from([[], ["3"]])),
    st.tuples(st.just("ZREMRANGEBYRANK"), dkeys, st.sampled_from([["0", "1"], ["-2", "-1"], ["1", "1"]])),
    st.tuples(st.just("ZREMRANGEBYSCORE"), dkeys, st.sampled_from([["-inf", "0"], ["(1", "2.5"], ["100", "+inf"]])),
    # lex ranges on "w", whose members all score 0: with mixed scores a skiplist's walk depends
    # on its random levels (see storage/zset.py)
    st.tuples(st.just("ZADD"), st.just("w"), st.lists(dmembers, min_size=1, max_size=4)
              .map(lambda ms: [v for m in ms for v in ("0", m)])),
    st.tuples(st.just("ZREMRANGEBYLEX"), st.just("w"), st.sampled_from([["-", "[b"], ["(a", "+"], ["[7", "(abcdefgh"]])),
    st.tuples(st.just("ZRANGESTORE"), st.just("u"), st.sampled_from([["x", "0", "2"], ["y", "0", "-1"],
                                                                     ["x", "(0", "+inf", "BYSCORE"]])),
    st.tuples(st.just("ZUNIONSTORE"), st.just("u"), st.just(["2", "x", "y"])),
    st.tuples(st.just("ZINTERSTORE"), st.just("u"), st.sampled_from([["2", "x", "y"], ["1", "x", "WEIGHTS", "0.5"]])),
    st.tuples(st.just("ZDIFFSTORE"), st.just("u"), st.just(["2", "x", "y"])),
    st.tuples(st.just("COPY"), dkeys, st.just(["u", "REPLACE"])),
    st.tuples(st.just("RESTORE"), dkeys, st.just([])),  # Redis's payload of the key, restored into u
    st.tuples(st.just("CONFIG"), st.just("SET"), st.tuples(st.sampled_from(["zset-max-listpack-entries",
                                                                             "zset-max-listpack-value"]),
                                                         st.sampled_from(["2", "6", "8", "128"])).map(list)),
), max_size=30)


@pytest.mark.oracle
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dsteps)
def test_dump_payloads_follow_redis_after_every_step(small_zset_pair, seq):
    d = small_zset_pair
    d("FLUSHALL")
    d("CONFIG", "SET", "zset-max-listpack-entries", "6")
    d("CONFIG", "SET", "zset-max-listpack-value", "8")
    for name, key, args in seq:
        if name == "RESTORE":
            payload = parse(d.theirs.call("DUMP", key))
            if payload is None:
                continue
            d("RESTORE", "u", "0", payload, "REPLACE")
        else:
            d(name, key, *args)
        for k in KEYS:
            d("DUMP", k)
            encoding = parse(d("OBJECT", "ENCODING", k))
            d("ZRANGE", k, "0", "-1", "WITHSCORES")
            if encoding == b"listpack":
                d("ZSCAN", k, "0")  # the listpack's order and its entries' text
    d("CONFIG", "SET", "zset-max-listpack-entries", "6")
    d("CONFIG", "SET", "zset-max-listpack-value", "8")


def _payload(lp: bytes) -> bytes:
    """A DUMP payload of a zset listpack (RDB_TYPE_ZSET_LISTPACK)."""
    w = rdb.Writer(False)
    w.buf.append(17)
    w.string(lp)
    return rdb.seal(w.buf)


@pytest.mark.oracle
def test_restore_keeps_the_payload_bytes(small_zset_pair):
    """A listpack that Redis would not write itself (text scores, a member as a string although it
    reads as an integer) comes back from DUMP as it was restored, and replies as Redis's."""
    d = small_zset_pair
    d("FLUSHALL")
    payload = _payload(_raw_listpack(b"\x8212\x03", b"\x831.0\x04", b"\x81a\x02", b"\x831e3\x04"))
    d("RESTORE", "z", "0", payload)
    assert parse(d("DUMP", "z")) == payload
    d("ZSCAN", "z", "0")  # the entries' own text: "1.0", "1e3"
    d("ZRANGE", "z", "0", "-1", "WITHSCORES")
    d("ZSCORE", "z", "12")
    d("ZRANK", "z", "a")
    d("ZADD", "z", "5", "b")
    d("DUMP", "z")


@pytest.mark.oracle
def test_unsorted_listpack_payload_loads_sorted(small_zset_pair):
    """Redis keeps an unsorted payload as it is (its walks then give answers that depend on the
    damage); raxdb keeps its listpacks sorted and re-encodes it, as it always has."""
    d = small_zset_pair
    d("FLUSHALL")
    ours = d.ours
    unsorted = _raw_listpack(b"\x81b\x02", b"\x02\x01", b"\x81a\x02", b"\x01\x01")
    assert ours.call("RESTORE", "z", "0", _payload(unsorted)) == b"+OK\r\n"
    assert parse(ours.call("ZRANGE", "z", "0", "-1", "WITHSCORES")) == [b"a", b"1", b"b", b"2"]
    sorted_lp = _raw_listpack(b"\x81a\x02", b"\x01\x01", b"\x81b\x02", b"\x02\x01")
    assert parse(ours.call("DUMP", "z")) == _payload(sorted_lp)


# ---- command sequences at tiny thresholds ----------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_zset_pair():
    extra = ("--zset-max-listpack-entries", "4", "--zset-max-listpack-value", "3")
    ours = start_raxdb(*extra)
    theirs = start_redis(*extra)
    d = Diff(ours.port, theirs.port)
    yield d
    d.close()
    ours.stop()
    theirs.stop()


zmembers = st.sampled_from(["a", "b", "c", "d", "e", "f", "long", "longer"])
zscores = st.sampled_from(["1", "2", "-0", "0", "2.5", "inf"])
zcommands = st.lists(st.one_of(
    st.tuples(st.just("ZADD"), st.sampled_from(["x", "y"]),
              st.tuples(st.sampled_from([[], ["NX"], ["XX"], ["GT"], ["CH"]]),
                        st.lists(st.tuples(zscores, zmembers).map(list), min_size=1, max_size=3))
              .map(lambda t: t[0] + [v for pair in t[1] for v in pair])),
    st.tuples(st.just("ZINCRBY"), st.sampled_from(["x", "y"]), st.tuples(zscores, zmembers).map(list)),
    st.tuples(st.just("ZREM"), st.sampled_from(["x", "y"]), st.lists(zmembers, min_size=1, max_size=3)),
    st.tuples(st.just("ZPOPMIN"), st.sampled_from(["x", "y"]), st.sampled_from([[], ["2"]])),
    st.tuples(st.just("ZREMRANGEBYRANK"), st.sampled_from(["x", "y"]), st.just(["0", "1"])),
    st.tuples(st.just("ZRANGESTORE"), st.just("u"), st.sampled_from([["x", "0", "2"], ["y", "0", "-1"]])),
    st.tuples(st.just("ZUNIONSTORE"), st.just("u"), st.just(["2", "x", "y"])),
    st.tuples(st.just("ZINTERSTORE"), st.just("u"), st.just(["2", "x", "y"])),
    st.tuples(st.just("ZDIFFSTORE"), st.just("u"), st.just(["2", "x", "y"])),
), max_size=25)


@pytest.mark.oracle
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(zcommands)
def test_encodings_follow_redis_at_thresholds(tiny_zset_pair, seq):
    d = tiny_zset_pair
    d("FLUSHALL")
    for name, key, args in seq:
        d(name, key, *args)
        for k in ("x", "y", "u"):
            d("OBJECT", "ENCODING", k)
            d("ZRANGE", k, "0", "-1", "WITHSCORES")


@pytest.mark.oracle
def test_config_set_applies_to_next_write(tiny_zset_pair):
    from tests.unit.type.test_set_encoding import _config_set_or_skip

    d = tiny_zset_pair
    d("FLUSHALL")
    _config_set_or_skip(d, "zset-max-listpack-entries", "4")
    d("ZADD", "z", "1", "a", "2", "b", "3", "c")
    _config_set_or_skip(d, "zset-max-listpack-entries", "2")
    d("OBJECT", "ENCODING", "z")  # nothing converts until the next write
    d("ZADD", "z", "5", "a")
    d("OBJECT", "ENCODING", "z")  # an update never converts
    d("ZADD", "z", "4", "d")
    d("OBJECT", "ENCODING", "z")
    _config_set_or_skip(d, "zset-max-ziplist-entries", "8")  # the old name is an alias
    d("ZRANGESTORE", "u", "z", "0", "-1")
    d("OBJECT", "ENCODING", "u")
    _config_set_or_skip(d, "zset-max-listpack-value", "1")
    d("ZADD", "v", "1", "ab")
    d("OBJECT", "ENCODING", "v")
    _config_set_or_skip(d, "zset-max-listpack-value", "3")
    _config_set_or_skip(d, "zset-max-listpack-entries", "4")
    d("ZADD", "w", "1", "ab")
    d("OBJECT", "ENCODING", "w")


def test_skiplist_scan_is_scan_pairs_with_score_texts():
    """A skiplist's `scan` is `scan_pairs`' step with each score printed %.17g: a whole walk by
    either visits every member once, with the same cursors."""
    z = ZSet.from_pairs([(i / 3 if i % 2 else float(i), b"m%d" % i) for i in range(300)], 0, 64)
    assert z.lp is None
    seen = []
    cursor = 0
    while True:
        nxt, items = z.scan(cursor, 10)
        step = z.scan_pairs(cursor, 10)
        assert step is not None and step[0] == nxt
        assert items[0::2] == [m for _, m in step[1]]
        assert [float(t) for t in items[1::2]] == [s for s, _ in step[1]]
        assert items[1::2] == [b"%.17g" % s for s, _ in step[1]]
        seen.extend(items[0::2])
        cursor = nxt
        if cursor == 0:
            break
    assert sorted(seen) == sorted(b"m%d" % i for i in range(300))


@pytest.mark.skipif(not COMPILED, reason="interpreted: nothing can be untracked")
def test_a_big_sorted_sets_members_stay_out_of_the_collector():
    """Compiled, the skiplist encoding's member sublists (made at a build, by ZADD's splits, at a
    first insert and by a copy) are untracked: they hold bytes, so no cycle passes through them,
    and a collection does not walk a big sorted set's members (the order itself stays tracked).
    What ZADD and GEOADD build, checked through the type, with its order and scores intact."""
    z = ZSet.from_pairs([(float(i % 7), b"m%05d" % i) for i in range(2500)], 0, 64)
    sk = z.sk
    for i in range(2500, 6000):
        sk.insert(b"m%05d" % i, float(i % 7))
    first = _SkipOrder()
    first.put(1.0, b"a")
    for order in (sk.order, sk.order.copy(), sk.copy().order, first):
        assert order._members and not [k for k, m in enumerate(order._members) if gc.is_tracked(m)]
        _check_invariants_loaded(order)
    assert len(sk.order._members) > 3  # splits happened
    assert list(sk.order) == sorted((float(i % 7), b"m%05d" % i) for i in range(6000))
    assert gc.is_tracked(sk.order)


def _check_invariants_loaded(order: _SkipOrder) -> None:
    """_check_invariants' checks but the sublists' size (here the real _LOAD's)."""
    assert len(order._keys) == len(order._members) == len(order._maxes) == len(order._maxkeys)
    for k, keys in enumerate(order._keys):
        assert len(keys) == len(order._members[k]) > 0
        assert order._maxes[k] == (keys[-1], order._members[k][-1])


# Score entries of every listpack encoding, as a payload another writer may hold them: integers of
# 7, 13, 16, 24, 32 and 64 bits (2^53 +- 1 and 1e17 among them: their replies are the double's
# %.17g, not the entry's digits), d2string's own text (copied into replies as it is), and text
# d2string never writes (6-, 12- and 32-bit strings: "1.50", "+3", " 1", "1e5", ...), which
# replies must print as addReplyDouble prints the value read back.
_INT_SCORES = [5, -100, 4000, 30000, -5_000_000, 2**31 - 1, -(2**40), 2**53 - 1, 2**53, 2**53 + 1, 10**17,
               -(10**17) - 1, 2**62]
_D2STRING_SCORES = [b"1.1000000000000001", b"0.10000000000000001", b"2.5", b"-0", b"inf", b"-inf", b"1e+17",
                    b"-3.3999999999999999", b"1.0000000000000001e-05", b"1.2345678901234567e+300"]
_OTHER_SCORES = [b"1.50", b"+3", b" 1", b"1e5", b"1.0", b"1E3", b".5", b"00.5", b"-0.0", b"+inf", b"Infinity",
                 b"1." + b"0" * 70, b"2.25" + b"0" * 4100, b"1.1", b"7"]


def _scored_payload(scores: list[int | bytes]) -> bytes:
    """A zset listpack payload of member m<i> for each score, in (score, member) order."""
    pairs = sorted((float(s) if type(s) is int else float(s.decode()), b"m%02d" % i, s) for i, s in enumerate(scores))
    entries = []
    for _, m, s in pairs:
        entries.append(encode_str_entry(m))
        entries.append(encode_int_entry(s) if type(s) is int else encode_str_entry(s))
    return _payload(_raw_listpack(*entries))


@pytest.mark.oracle
@pytest.mark.parametrize("scores", [_INT_SCORES + _D2STRING_SCORES, _INT_SCORES + _D2STRING_SCORES + _OTHER_SCORES],
                         ids=["d2string-text", "other-text"])
def test_listpack_score_entries_reply_as_redis(diff, scores):
    """Every command that replies a listpack's scores prints them as Redis does (RESP2 and RESP3),
    whether it copies the entry's text or formats the value read back."""
    diff("FLUSHALL")
    payload = _scored_payload(scores)
    n = len(scores)
    for key in ("z", "p"):
        diff("RESTORE", key, "0", payload)
    assert parse(diff("OBJECT", "ENCODING", "z")) == b"listpack"
    diff("DUMP", "z")
    diff("ZRANGE", "z", "0", "-1", "WITHSCORES")
    diff("ZREVRANGE", "z", "2", "-3", "WITHSCORES")
    diff("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "WITHSCORES")
    diff("ZRANGEBYSCORE", "z", "0", "(1e300", "WITHSCORES", "LIMIT", "1", "9")
    diff("ZREVRANGEBYSCORE", "z", "+inf", "-inf", "WITHSCORES")
    diff("ZRANGE", "z", "+inf", "1", "BYSCORE", "REV", "LIMIT", "0", "5", "WITHSCORES")
    for i in range(n):
        diff("ZSCORE", "z", b"m%02d" % i)
    diff("ZMSCORE", "z", *(b"m%02d" % i for i in range(n)), "nosuch")
    diff("ZRANDMEMBER", "z", str(n), "WITHSCORES")  # the whole zset, highest first: deterministic
    diff("ZRANDMEMBER", "z", str(n + 5), "WITHSCORES")
    diff("ZSCAN", "z", "0")  # the entries' own text, as Redis's listpack scan
    diff("ZSCAN", "z", "0", "MATCH", "m1*", "COUNT", "2")
    # the random picks: every (member, score) one of the zset's own, as Redis's reply spells it
    flat = parse(diff.theirs.call("ZRANGE", "z", "0", "-1", "WITHSCORES"))
    whole = dict(zip(flat[0::2], flat[1::2], strict=True)) if flat and type(flat[0]) is bytes else dict(flat)
    for count in ("-40", "7"):
        got = parse(diff.ours.call("ZRANDMEMBER", "z", count, "WITHSCORES"))
        items = list(zip(got[0::2], got[1::2], strict=True)) if type(got[0]) is bytes else got
        assert items and all(whole[m] == s for m, s in items)
    diff("ZPOPMIN", "p")
    diff("ZPOPMIN", "p", "3")
    diff("ZPOPMAX", "p", "2")
    diff("ZMPOP", "1", "p", "MIN", "COUNT", "2")
    diff("BZPOPMAX", "p", "0")
    diff("BZMPOP", "0", "1", "p", "MAX", "COUNT", "3")
    diff("ZADD", "p", "2.75", "new")  # an insert beside the loaded text keeps replying as Redis
    diff("ZRANGE", "p", "0", "-1", "WITHSCORES")
    diff("DUMP", "p")


def test_replies_copy_score_text_only_when_it_is_d2string_text():
    """A listpack's string scores reach replies as their bytes when every one is d2string's text of
    its value (all written here, checked once for a loaded payload); one other text anywhere and
    they are read back as floats, until a rebuild writes the text again."""
    ours = ZSet()
    for s, m in [(1.1, b"a"), (2.0, b"b"), (math.inf, b"c")]:
        ours.add(m, s, 0, 128, 64)
    assert ours.rank_slice(0, 3, True) == [(b"1.1000000000000001", b"a"), (2.0, b"b"), (b"inf", b"c")]
    assert ours.rank_slice(0, 3) == [(1.1, b"a"), (2.0, b"b"), (math.inf, b"c")]
    assert ours.score_text(b"a") == b"1.1000000000000001" and ours.score_text(b"b") == 2.0
    assert ours.sample(3) == [(b"1.1000000000000001", b"a"), (2.0, b"b"), (b"inf", b"c")]
    loaded = ZSet.from_listpack(ours.lp, ours.rank_slice(0, 3))
    assert loaded.rank_slice(0, 3, True) == ours.rank_slice(0, 3, True)
    other = _raw_listpack(encode_str_entry(b"a"), encode_str_entry(b"1.50"), encode_str_entry(b"b"),
                          encode_str_entry(b"2.5"))
    z = ZSet.from_listpack(other, [(1.5, b"a"), (2.5, b"b")])
    assert z.lp == other
    assert z.rank_slice(0, 2, True) == [(1.5, b"a"), (2.5, b"b")]
    assert z.score_text(b"a") == 1.5 and z.choices(1)[0][0] in (1.5, 2.5)
    assert z.copy().rank_slice(0, 2, True) == [(1.5, b"a"), (2.5, b"b")]
    assert z.scan(0, 10) == (0, [b"a", b"1.50", b"b", b"2.5"]) and z.scan_pairs(0, 10) is None
    z.add(b"c", 3.25, 0, 128, 64)  # the loaded text stays: still read back
    assert z.rank_slice(0, 3, True) == [(1.5, b"a"), (2.5, b"b"), (3.25, b"c")]
    z.to_skiplist()
    assert z.rank_slice(0, 3, True) == [(1.5, b"a"), (2.5, b"b"), (3.25, b"c")] and z.scan_pairs(0, 10) is not None
