"""The sorted-set encodings against plain models (hypothesis), and against redis-server.

- `ZSet` vs a dict model under ZADD-flag updates, deletes, pops and slice deletes: order is always
  sorted (score, member); encoding is "listpack" until an add passes zset-max-listpack-entries or
  brings a member longer than zset-max-listpack-value, then "skiplist" for good; STORE results
  (`from_pairs`) are encoded afresh; a listpack never holds -0.
- Score, rank and lex lookups vs brute force over the model.
- `listpack_bytes()` equals the listpack inside redis-server's DUMP payload.
- Command sequences on servers started with tiny thresholds give Redis's encodings and replies.
"""

from __future__ import annotations

import bisect
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raxdb.storage import zset as zset_module
from raxdb.storage.alloc import size_class
from raxdb.storage.lpcodec import LP_EMPTY
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
)
from tests.support.diff import Diff, RawConnection, parse
from tests.support.servers import start_raxdb, start_redis
from tests.unit.type.test_set_encoding import KEY_OVERHEAD, _dump_blob

scores = st.one_of(st.integers(-5, 5).map(float), st.sampled_from([0.5, -0.0, 0.0, math.inf, -math.inf, 1e300]),
                   st.floats(allow_nan=False, width=64))
members = st.one_of(st.sampled_from([b"a", b"b", b"c", b"", b"ab", b"\xff"]), st.binary(max_size=10))
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
    st.tuples(st.just("add"), members, scores, flag_sets),
    st.tuples(st.just("del"), members),
    st.tuples(st.just("pop"), st.integers(1, 4), st.booleans()),
    st.tuples(st.just("slice"), st.integers(0, 6), st.integers(0, 6)),
), max_size=60)


@given(ops, st.integers(0, 8), st.integers(0, 6))
def test_zset_model(seq, max_entries, max_value):
    z = ZSet()
    model: dict[bytes, float] = {}
    skiplist = False
    for op in seq:
        if op[0] == "add":
            _, m, s, flags = op
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
        assert {m: s for s, m in pairs} == z.scores
        assert z.scores.keys() == model.keys()
        for m, s in model.items():
            got = z.scores[m]
            assert got == s
            if z.is_listpack():
                assert math.copysign(1, got) == 1 or got != 0  # no -0 in a listpack
        assert z.encoding() == ("skiplist" if skiplist else "listpack")
    for m in model:
        r = z.rank(m)
        assert list(z)[r][1] == m
        assert z.rank(m, True) == len(model) - 1 - r
    store = ZSet.from_pairs(list(z), max_entries, max_value)
    fits = len(model) <= max_entries and all(len(m) <= max_value for m in model)
    assert store.encoding() == ("listpack" if fits else "skiplist")
    assert [m for _, m in store] == [m for _, m in z]


@given(ops)
def test_listpack_length_is_kept(seq):
    """MEMORY USAGE keeps a listpack's length from its first call on (maxmemory asks after every
    write): after any change it is what packing the listpack gives."""
    z = ZSet()
    assert z.mem_usage() == 16 + size_class(LP_EMPTY)
    for op in seq:
        if op[0] == "add":
            z.add(op[1], op[2], op[3], 128, 64)
        elif op[0] == "del":
            z.delete(op[1])
        elif op[0] == "pop":
            z.pop(op[1], op[2])
        else:
            z.delete_slice(op[1], min(op[2], len(z)))
        assert z.lp_bytes == len(z.listpack_bytes()) - LP_EMPTY, op
        assert z.mem_usage() == 16 + size_class(len(z.listpack_bytes()))
    z.to_skiplist()
    assert z.lp_bytes is None


order_ops = st.lists(st.one_of(
    st.tuples(st.just("set"), st.integers(0, 60), st.sampled_from([0.0, -0.0, 1.0, 2.0, math.inf, -math.inf]) | scores),
    st.tuples(st.just("del"), st.integers(0, 60)),
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


dump_scores = st.one_of(st.integers(-(2**53), 2**53).map(float), st.floats(allow_nan=False, allow_infinity=True),
                        st.sampled_from([0.0, -0.0, 1.5, 1e17, 2.0**60, -(2.0**63)]))


@pytest.mark.oracle
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.binary(min_size=0, max_size=40), dump_scores, min_size=1, max_size=30))
def test_listpack_bytes_equal_redis(plain_oracle, model):
    plain_oracle.call("DEL", "z")
    z = ZSet()
    for m, s in model.items():
        plain_oracle.call("ZADD", "z", repr(s) if math.isfinite(s) else ("inf" if s > 0 else "-inf"), m)
        z.add(m, s, 0, 128, 64)
    payload = parse(plain_oracle.call("DUMP", "z"))
    rtype, blob = _dump_blob(payload)
    assert rtype == 17  # RDB_TYPE_ZSET_LISTPACK
    assert z.listpack_bytes() == blob
    assert parse(plain_oracle.call("MEMORY", "USAGE", "z")) == z.mem_usage() + KEY_OVERHEAD


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
