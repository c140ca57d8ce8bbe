"""The set encodings against plain models (hypothesis), and against redis-server at small thresholds.

- `storage.intset`'s functions and `RSet` vs a Python set: membership, size, ascending iteration
  while an intset, the width never narrowing, conversion to "hashtable" exactly when Redis converts
  (a non-integer member, or more than set-max-intset-entries members) and never back;
  `canonical_int` against string2ll's rule; malformed intsets refused.
- Intset bytes equal the intset inside redis-server's DUMP payload for the same members, and every
  set's DUMP payload equals Redis's after every step of random commands (hashtables, whose order
  is their own, compared as member sets); loading keeps the bytes it is given.
- Command sequences on servers started with a tiny set-max-intset-entries give the same encodings
  and the same (ordered, for intsets) replies as Redis.
- Random draws from a hashtable reach every member, and a drained table is rebuilt smaller.
"""

from __future__ import annotations

import gc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raxdb.storage import intset, rdb, set_type
from raxdb.storage.alloc import sds_alloc
from raxdb.storage.intset import canonical_int, width_of
from raxdb.storage.set_type import LIMITS_70, Intset, RSet, as_set
from tests.support.diff import Diff, RawConnection, parse
from tests.support.servers import start_raxdb, start_redis

pytestmark = pytest.mark.pure  # set_type.py and intset.py are compiled: run interpreted too
COMPILED = set_type.__file__.endswith(".so")

ints = st.one_of(st.integers(-40, 40), st.integers(-(2**63), 2**63 - 1),
                 st.sampled_from([32767, 32768, -32768, -32769, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1]))
int_members = ints.map(lambda v: b"%d" % v)
odd_members = st.sampled_from([b"01", b"+1", b" 1", b"-0", b"1.0", b"", b"a", b"b", b"9223372036854775808",
                               b"-9223372036854775809", b"x" * 30])
members = st.one_of(int_members, int_members, int_members, odd_members)


def test_canonical_int():
    for ok in [b"0", b"-1", b"9223372036854775807", b"-9223372036854775808", b"123"]:
        assert canonical_int(ok) == int(ok)
    for bad in [b"", b"-", b"01", b"+1", b" 1", b"1 ", b"-0", b"1.0", b"9223372036854775808", b"1_0", b"0x1"]:
        assert canonical_int(bad) is None


def _string2ll(m: bytes) -> int | None:
    """The reference: canonical decimal text of an int64 and nothing else."""
    try:
        v = int(m.decode("ascii"), 10)
    except (UnicodeDecodeError, ValueError):
        return None
    return v if -(2**63) <= v < 2**63 and str(v).encode() == m else None


digit_texts = st.text("-0123456789", max_size=21).map(str.encode)


@given(st.one_of(digit_texts, st.binary(max_size=22), ints.map(lambda v: b"%d" % v),
                 st.integers(2**63 - 3, 2**64 + 3).map(lambda v: b"%d" % v),
                 st.integers(-(2**64) - 3, -(2**63) + 3).map(lambda v: b"%d" % v)))
def test_canonical_int_is_string2ll(m):
    assert canonical_int(m) == _string2ll(m)


@given(st.lists(ints, max_size=60))
def test_intset_model(values):
    blob = intset.EMPTY
    model: set[int] = set()
    width = 2
    for v in values:
        new = intset.add(blob, v)
        assert (new is not None) == (v not in model)
        blob = new if new is not None else blob
        model.add(v)
        width = max(width, width_of(v))
        assert intset.width(blob) == width
        assert intset.contains(blob, v)
    assert intset.values(blob) == sorted(model)
    for v in values[::2]:
        new = intset.remove(blob, v)
        assert (new is not None) == (v in model)
        blob = new if new is not None else blob
        model.discard(v)
        assert not intset.contains(blob, v)
    assert intset.values(blob) == sorted(model)
    assert intset.width(blob) == width  # never narrows
    assert all(intset.contains(blob, v) for v in model)
    assert len(blob) == 8 + width * len(model) and intset.length(blob) == len(model)
    assert int.from_bytes(blob[4:8], "little") == len(model)  # the header's length field
    assert [intset.get(blob, i) for i in range(len(model))] == sorted(model)
    intset.validate(blob)


@given(st.lists(ints, min_size=1, max_size=30, unique=True), st.data())
def test_intset_remove_at_and_pack(values, data):
    blob = intset.from_values(sorted(values))
    assert intset.width(blob) == max(map(width_of, values))
    i = data.draw(st.integers(0, len(values) - 1))
    v, rest = intset.remove_at(blob, i)
    assert v == sorted(values)[i]
    assert intset.values(rest) == sorted(set(values) - {v}) and intset.width(rest) == intset.width(blob)
    assert intset.pack(intset.width(rest), intset.values(rest)) == rest
    intset.validate(rest)


@pytest.mark.parametrize("blob", [
    b"", b"\x02\x00\x00\x00", b"\x03\x00\x00\x00\x01\x00\x00\x00\x05\x00\x05",   # short, unknown width
    b"\x02\x00\x00\x00\x02\x00\x00\x00\x05\x00",                                # count past the end
    b"\x02\x00\x00\x00\x01\x00\x00\x00\x05\x00\x06\x00",                      # bytes past the count
    b"\x02\x00\x00\x00\x02\x00\x00\x00\x05\x00\x05\x00",                      # a repeat
    b"\x02\x00\x00\x00\x02\x00\x00\x00\x06\x00\x05\x00",                      # out of order
])
def test_intset_validate_refuses(blob):
    with pytest.raises(ValueError):
        intset.validate(blob)


ops = st.lists(st.tuples(st.sampled_from(["add", "add", "add", "rem", "pop", "spop"]), members,
                         st.integers(0, 30)), max_size=80)


@given(ops, st.integers(0, 12))
def test_rset_model(seq, max_ints):
    limits = (max_ints, 0, 0, False)  # 7.0 mode
    s = RSet()
    model: set[bytes] = set()
    converted = False
    for op, m, k in seq:
        if op == "add":
            added = s.add(m, limits)
            assert added == (m not in model)
            model.add(m)
            if canonical_int(m) is None or len(model) > max_ints:
                converted = True
        elif op == "rem":
            assert s.remove(m) == (m in model)
            model.discard(m)
        elif op == "pop" and model:
            p = s.pop_random()
            assert p in model
            model.remove(p)
        elif op == "spop" and len(model) > 1:
            count = min(k, len(model) - 1) or 1
            popped, replacement = s.spop_many(count, limits)
            assert len(popped) == count and len(set(popped)) == count and set(popped) <= model
            model -= set(popped)
            if replacement is not None:
                s = replacement
                converted = not (all(canonical_int(x) is not None for x in model) and len(model) <= max_ints)
        assert len(s) == len(model)
        assert set(s.members()) == model
        assert all(x in s for x in model)
        assert s.encoding() == ("hashtable" if converted else "intset")
        if COMPILED and converted:  # a hashtable's members out of the cyclic collector
            assert not gc.is_tracked(s.data)
        if s.is_intset():
            assert s.members() == sorted(model, key=int)
    if model:
        assert s.random_member() in model
        k = len(model) // 2 + 1
        sample = s.sample(k)
        assert len(set(sample)) == k and set(sample) <= model
        assert set(s.choices(5)) <= model
        cp = s.copy()
        cp.add(b"only-in-copy", limits)
        assert b"only-in-copy" not in s


@given(st.sets(st.binary(max_size=6), min_size=1, max_size=300), st.integers(1, 40),
       st.lists(st.binary(max_size=6), max_size=40))
def test_rset_scan_returns_stable_members(stable, count, churn):
    s = RSet()
    for m in stable:
        s.add(b"s" + m, (0, 0, 0, False))
    seen: set[bytes] = set()
    cursor = 0
    i = 0
    while True:
        cursor, batch = s.scan(cursor, count)
        seen.update(batch)
        if i < len(churn):  # add and remove other members between calls: the table resizes
            s.add(b"c" + churn[i], (0, 0, 0, False))
            if i % 3 == 0:
                s.remove(b"c" + churn[i // 2])
            i += 1
        if cursor == 0:
            break
    assert {b"s" + m for m in stable} <= seen


# ---- byte format against redis-server's DUMP ---------------------------------------------------
KEY_OVERHEAD = sds_alloc(1) + 24  # a one-byte key's sds + its dictEntry, as MEMORY USAGE adds


def _dump_blob(payload: bytes) -> tuple[int, bytes]:
    """(RDB type, string) of a DUMP payload whose value is stored as one string."""
    return payload[0], rdb.Reader(payload, 1).string()


@pytest.fixture(scope="module")
def plain_oracle():
    """A redis-server that does not LZF-compress strings in DUMP payloads."""
    srv = start_redis("--rdbcompression", "no")
    conn = RawConnection(srv.port)
    yield conn
    conn.close()
    srv.stop()


@pytest.mark.oracle
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(ints, min_size=1, max_size=40))
def test_intset_bytes_equal_redis(plain_oracle, values):
    plain_oracle.call("DEL", "s")
    plain_oracle.call("SADD", "s", *[str(v) for v in values])
    payload = parse(plain_oracle.call("DUMP", "s"))
    rtype, blob = _dump_blob(payload)
    assert rtype == 11  # RDB_TYPE_SET_INTSET
    b = intset.EMPTY
    for v in values:
        b = intset.add(b, v) or b
    assert b == blob
    assert RSet.of([b"%d" % v for v in values], LIMITS_70).data == blob  # built at once: the same bytes
    rs = RSet.of([b"%d" % v for v in values], LIMITS_70)
    assert parse(plain_oracle.call("MEMORY", "USAGE", "s")) == rs.mem_usage() + KEY_OVERHEAD


# ---- command sequences at a tiny threshold -------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_intset_pair():
    ours = start_raxdb("--set-max-intset-entries", "5")
    theirs = start_redis("--set-max-intset-entries", "5")
    d = Diff(ours.port, theirs.port)
    yield d
    d.close()
    ours.stop()
    theirs.stop()


small_members = st.one_of(st.integers(-3, 8).map(str), st.sampled_from(["a", "b", "07"]))
commands = st.lists(st.one_of(
    st.tuples(st.just("SADD"), st.sampled_from(["s", "t"]), st.lists(small_members, min_size=1, max_size=4)),
    st.tuples(st.just("SREM"), st.sampled_from(["s", "t"]), st.lists(small_members, min_size=1, max_size=3)),
    st.tuples(st.just("SINTERSTORE"), st.just("u"), st.just(["s", "t"])),
    st.tuples(st.just("SUNIONSTORE"), st.just("u"), st.just(["s", "t"])),
    st.tuples(st.just("SDIFFSTORE"), st.just("u"), st.just(["s", "t"])),
    st.tuples(st.just("SMOVE"), st.just("s"), st.tuples(st.just("t"), small_members).map(list)),
), max_size=25)


@pytest.mark.oracle
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commands)
def test_encodings_follow_redis_at_threshold(tiny_intset_pair, seq):
    d = tiny_intset_pair
    d("FLUSHALL")
    for name, key, args in seq:
        d(name, key, *args)
        for k in ("s", "t", "u"):
            enc = d("OBJECT", "ENCODING", k)
            if enc == b"$6\r\nintset\r\n":
                d("SMEMBERS", k)  # ascending: byte-exact
            else:
                d.unordered("SMEMBERS", k)


def _config_set_or_skip(d, name, value):
    ours, theirs = d.both("CONFIG", "SET", name, value)
    if ours.startswith(b"-ERR unknown command"):
        pytest.fail("CONFIG SET not available in raxdb")
    assert ours == theirs


@pytest.mark.oracle
def test_config_set_applies_to_next_write(tiny_intset_pair):
    d = tiny_intset_pair
    _config_set_or_skip(d, "set-max-intset-entries", "5")
    d("FLUSHALL")
    d("SADD", "s", "1", "2", "3", "4")
    _config_set_or_skip(d, "set-max-intset-entries", "2")
    d("OBJECT", "ENCODING", "s")  # nothing converts until the next write
    d("SADD", "s", "2")
    d("OBJECT", "ENCODING", "s")  # no element added: still an intset
    d("SADD", "s", "9")
    d("OBJECT", "ENCODING", "s")
    d("SADD", "t", "1", "2")
    d("OBJECT", "ENCODING", "t")
    _config_set_or_skip(d, "set-max-intset-entries", "5")
    d("SINTERSTORE", "u", "s")
    d("OBJECT", "ENCODING", "u")
    d("SMEMBERS", "u")


# ---- the bytes held, against Redis's DUMP after every step ---------------------------------------
wide_members = st.one_of(
    st.integers(-3, 6).map(str),
    st.sampled_from(["32767", "-32769", "2147483648", "-9223372036854775808", "9223372036854775807",
                     "70000", "-70000", "a", "07"]))
dump_steps = st.lists(st.one_of(
    st.tuples(st.just("SADD"), st.sampled_from(["s", "t"]), st.lists(wide_members, min_size=1, max_size=4)),
    st.tuples(st.just("SREM"), st.sampled_from(["s", "t"]), st.lists(wide_members, min_size=1, max_size=3)),
    st.tuples(st.just("SMOVE"), st.just("s"), st.tuples(st.just("t"), wide_members).map(list)),
    st.tuples(st.sampled_from(["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]), st.just("u"), st.just(["s", "t"])),
    st.tuples(st.just("SPOP"), st.sampled_from(["s", "t"]), st.just(["100"])),  # the whole set: not random
), max_size=25)


def _members_of(payload: bytes) -> set[bytes]:
    return set(as_set(rdb.restore(payload, rdb.Limits())).members())


@pytest.mark.oracle
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dump_steps)
def test_dump_payloads_equal_redis_after_every_step(tiny_intset_pair, seq):
    """An intset's DUMP payload is byte for byte Redis's after every command (widths, upgrades,
    removals that keep the width, conversions at 5 members, sets rebuilt by the store commands),
    and so is the payload after RESTOREing Redis's own bytes: the loaded bytes are kept."""
    d = tiny_intset_pair
    d("FLUSHALL")
    for name, key, args in seq:
        if name == "SPOP":  # the whole set in an order of its own: compared below as a DUMP
            d.both(name, key, *args)
        else:
            d(name, key, *args)
        for k in ("s", "t", "u"):
            ours, theirs = (parse(x) for x in d.both("DUMP", k))
            if theirs is None:
                assert ours is None
            elif theirs[0] == 11:  # RDB_TYPE_SET_INTSET
                assert ours == theirs
                d("RESTORE", "r", "0", theirs, "REPLACE")
                assert parse(d.both("DUMP", "r")[0]) == theirs
            else:
                assert ours[0] == theirs[0] == 2 and _members_of(ours) == _members_of(theirs)


def _intset_payload(blob: bytes) -> bytes:
    w = rdb.Writer(compress=False)
    w.buf.append(rdb.T_SET_INTSET)
    w.string(blob)
    return rdb.seal(w.buf)


def test_loading_keeps_the_intset_bytes():
    # int64 width although every member would fit in int16 (what removing a wide member leaves)
    blob = intset.pack(8, [-3, 1, 7])
    stored = rdb.restore(_intset_payload(blob), rdb.Limits())
    assert stored.__class__ is Intset and stored.encoding() == "intset" and stored == blob
    assert rdb.dump(stored) == _intset_payload(blob)
    s = as_set(stored)
    s.add(b"2", LIMITS_70)
    assert intset.values(s.data) == [-3, 1, 2, 7] and intset.width(s.data) == 8
    assert s.stored().__class__ is Intset and s.stored() == s.data
    # more members than set-max-intset-entries: converted on load, as Redis does
    big = rdb.restore(_intset_payload(intset.pack(2, list(range(10)))), rdb.Limits(set_max_intset=5))
    assert big.__class__ is RSet and big.encoding() == "hashtable" and sorted(big.members(), key=int) == [b"%d" % i for i in range(10)]


@pytest.mark.parametrize("blob", [b"\x02\x00\x00\x00\x02\x00\x00\x00\x05\x00\x05\x00",
                                  b"\x05\x00\x00\x00\x01\x00\x00\x00\x05\x00\x05\x00\x00\x00",
                                  b"\x02\x00\x00\x00\x03\x00\x00\x00\x05\x00"])
def test_loading_a_bad_intset_is_refused(blob):
    with pytest.raises(rdb.RDBError, match="Intset integrity check failed"):
        rdb.restore(_intset_payload(blob), rdb.Limits())


def test_random_draws_reach_every_member_and_a_drained_table_shrinks():
    from raxdb.storage.set_type import _slots

    s = RSet.of([b"m%d" % i for i in range(5)], LIMITS_70)
    assert {s.random_member() for _ in range(2000)} == set(s.members())  # (missed: p < 1e-190)
    big = RSet.of([b"m%d" % i for i in range(5000)], LIMITS_70)
    grown = _slots(big.data)
    popped = {big.pop_random() for _ in range(4900)}
    assert len(popped) == 4900 and len(big) == 100
    assert set(big.members()) == {b"m%d" % i for i in range(5000)} - popped
    assert _slots(big.data) * 8 <= grown  # rebuilt at its size on the way down
    assert _slots(big.data) <= 10 * len(big)
    taken, replacement = big.spop_many(60, LIMITS_70)
    assert replacement is None and len(taken) == 60 and len(big) == 40 and not set(taken) & set(big.members())


@pytest.mark.skipif(not COMPILED, reason="interpreted: nothing can be untracked")
def test_a_hashtables_members_stay_out_of_the_collector():
    """Compiled, every Python set an RSet holds (a hashtable) is untracked, whichever way it was
    made: it holds bytes, so no cycle passes through it, and a collection does not walk a big set's
    members.  Each made set keeps its members."""
    limits_72 = (4, 3, 8, True)  # 7.2 mode, tiny limits: every conversion is reached
    nums = [b"%d" % i for i in range(10)]
    made: list[tuple[RSet, set[bytes]]] = []

    def grown(start: RSet, adds: list[bytes], limits: tuple) -> None:
        for m in adds:
            start.add(m, limits)
        made.append((start, set(adds)))

    grown(RSet(), nums, (4, 0, 0, False))  # an intset past its limit (7.0)
    grown(RSet(), [b"1", b"a"], LIMITS_70)  # an intset meeting a string (7.0)
    grown(RSet(), [b"1", b"a", b"b", b"c", b"d"], limits_72)  # intset -> listpack -> past its count
    grown(RSet(), [b"1", b"a-long-member"], limits_72)  # intset -> past the listpack's value limit
    grown(RSet.create(b"a", 100, limits_72), [b"a", b"b"], limits_72)  # created as a hashtable
    hinted = RSet([b"a", b"b"])
    hinted.hint(10, limits_72)
    made.append((hinted, {b"a", b"b"}))
    ints = RSet()
    ints.add(b"1", limits_72)
    ints.hint(10, limits_72)
    made.append((ints, {b"1"}))
    made.append((RSet.of([b"x", b"y", *nums], LIMITS_70), {b"x", b"y", *nums}))
    made.append((RSet.of([b"1", *(b"m%d" % i for i in range(9))], limits_72), {b"1", *(b"m%d" % i for i in range(9))}))
    made.append((RSet.built([b"p", b"q", b"r", b"s"], limits_72, False), {b"p", b"q", b"r", b"s"}))
    big = RSet.of([b"m%d" % i for i in range(5000)], LIMITS_70)
    for _ in range(4900):
        big.pop_random()  # drained: rebuilt at its size on the way down
    made.append((big, set(big.members())))
    made.append((big.copy(), set(big.members())))
    # loaded (RDB, RESTORE): a plain set past the intset limit, an intset past it
    made.append((rdb.restore(rdb.dump(big), rdb.Limits()), set(big.members())))
    wide = rdb.restore(_intset_payload(intset.pack(2, list(range(10)))), rdb.Limits(set_max_intset=5))
    made.append((wide, {b"%d" % i for i in range(10)}))
    for s, members in made:
        assert s.encoding() == "hashtable" and set(s.members()) == members
        assert not gc.is_tracked(s.data)


def test_the_keyspace_keeps_an_intset_as_its_bytes():
    """An intset is stored bare (an `Intset`, the value contract's attributes, not a string) and
    a hashtable as its RSet; `as_set` and `stored()` go between the two."""
    from raxdb.storage.keyspace import is_string

    small = RSet.of([b"3", b"1", b"2"], LIMITS_70)
    kept = small.stored()
    assert kept.__class__ is Intset and kept == small.data and not is_string(kept)
    assert (kept.type_name, kept.encoding(), kept.mem_usage()) == ("set", "intset", small.mem_usage())
    assert kept.copy() is kept  # immutable: a copy shares it
    view = as_set(kept)
    assert view.__class__ is RSet and view.members() == [b"1", b"2", b"3"]
    assert view.add(b"x", LIMITS_70) and view.stored() is view  # converted: the RSet itself is kept
    assert as_set(kept).members() == [b"1", b"2", b"3"]  # the stored bytes did not change
    table = RSet.of([b"a"], LIMITS_70)
    assert table.stored() is table and as_set(table) is table
    assert as_set(b"1") is None and as_set(None) is None
