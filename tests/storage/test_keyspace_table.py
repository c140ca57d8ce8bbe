"""The keyspace's own table (storage/keyspace.py) against a dict model (hypothesis).

- Random sequences of SET (with and without KEEPTTL), add, delete, deadlines given and removed,
  lookups at a moving clock (lazy expiry), active expiry, FLUSH and SWAPDB leave the table holding
  exactly the model's keys, values and deadlines: length, `stored`, `ttl_ms`, `nexpires`,
  `expires`, `key_list`, `items` and `deadlines` agree after every step, and every key is found
  through the index whatever deletions moved (back-shift deletion, index growth and shrinking).
- A SCAN from cursor 0 to 0, with keys added and deleted between its calls, returns every key
  present for the whole iteration (Redis's guarantee), and only keys that existed at some point.
- Random picks (random_key, sample_keys, volatile ones) return live keys, and reach every key.
- Access stamps: idle_ms follows the clock and is reset by a touching lookup, not by `peek`.
- `reserve(n)` (a load's RESIZEDB) sizes the index so that n keys go in without a rebuild.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raxdb.storage.keyspace import Database

pytestmark = pytest.mark.pure  # keyspace.py is compiled: run interpreted too


class Clock:
    def __init__(self) -> None:
        self.now_ms = 1_000_000


def _db() -> tuple[Database, Clock]:
    db = Database(0)
    clock = Clock()
    db.clock = clock
    return db, clock


keys = st.one_of(st.sampled_from([b"k%d" % i for i in range(40)]), st.binary(max_size=5))
ops = st.lists(
    st.one_of(
        st.tuples(st.just("set"), keys, st.binary(max_size=3), st.booleans()),
        st.tuples(st.just("add"), keys, st.binary(max_size=3)),
        st.tuples(st.just("add_new"), keys, st.binary(max_size=3)),
        st.tuples(st.just("del"), keys),
        st.tuples(st.just("expire"), keys, st.integers(-50, 500)),
        st.tuples(st.just("persist"), keys),
        st.tuples(st.just("get"), keys),
        st.tuples(st.just("tick"), st.integers(0, 300)),
        st.tuples(st.just("active"), st.integers(1, 30), st.integers(0, 100)),
        st.tuples(st.just("all_due")),
        st.tuples(st.just("bulk_add"), st.integers(0, 120)),
        st.tuples(st.just("reserve"), st.integers(0, 400)),
        st.tuples(st.just("bulk_del"), st.integers(0, 200)),
        st.tuples(st.just("flush")),
        st.tuples(st.just("swap")),
    ),
    max_size=60,
)


def _check(db: Database, model: dict[bytes, bytes], ttl: dict[bytes, int]) -> None:
    assert len(db) == len(model)
    assert bool(db) == bool(model)
    assert sorted(db.key_list()) == sorted(model)
    assert dict(db.items()) == model
    for k, v in model.items():
        assert k in db
        assert db.stored(k) == v
        assert db.ttl_ms(k) == ttl.get(k)
    assert db.nexpires == len(ttl) == len(db.expires)
    assert dict(db.deadlines()) == ttl
    assert dict(db.expires.items()) == ttl
    assert b"absent-key" not in db or b"absent-key" in model
    # each index slot's tag: 0 where the slot is empty, else 0x80 and its key's hash's top bits
    keys_at = db._keys
    for i in range(len(db._index)):
        p = db._index[i]
        want = 0 if p < 0 else 0x80 | ((hash(keys_at[p]) & 0xFFFFFFFF) >> 25)
        assert db._tags[i] == want, (i, p)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_table_follows_a_dict_model(seq):
    db, clock = _db()
    other, _ = _db()
    other.clock = clock
    model: dict[bytes, bytes] = {}
    ttl: dict[bytes, int] = {}
    other_model: dict[bytes, bytes] = {}
    other_ttl: dict[bytes, int] = {}
    serial = 0
    for op in seq:
        kind = op[0]
        if kind == "set":
            _, k, v, keep = op
            if k in model and not keep:
                ttl.pop(k, None)
            db.set(k, v, keep_ttl=keep)
            model[k] = v
        elif kind == "add":
            _, k, v = op
            if k not in model:
                db.add(k, v)
                model[k] = v
        elif kind == "add_new":  # a load's add: stored keys, expired or not, are left alone
            _, k, v = op
            assert db.add_new(k, v) == (k not in model)
            model.setdefault(k, v)
        elif kind == "del":
            assert db.delete(op[1]) == (op[1] in model)
            model.pop(op[1], None)
            ttl.pop(op[1], None)
        elif kind == "expire":
            _, k, delta = op
            if k in model:
                db.set_expire(k, clock.now_ms + delta)
                ttl[k] = clock.now_ms + delta
        elif kind == "persist":
            assert db.persist(op[1]) == (op[1] in ttl)
            ttl.pop(op[1], None)
        elif kind == "get":
            k = op[1]
            live = k in model and (k not in ttl or ttl[k] > clock.now_ms)
            assert db.get(k, clock.now_ms) == (model[k] if live else None)
            if k in model and not live:  # expired lazily
                del model[k]
                ttl.pop(k, None)
        elif kind == "tick":
            clock.now_ms += op[1]
        elif kind == "active":
            due = {k for k, when in ttl.items() if when <= clock.now_ms}
            sampled, done = db.active_expire(clock.now_ms, op[1], op[2])
            assert done <= sampled <= min(op[1], op[2], len(ttl))
            assert done <= len(due)
            for k in due:
                if k not in db:
                    del model[k]
                    del ttl[k]
            assert len(due) - done == sum(1 for k in due if k in model)
        elif kind == "all_due":  # every key past its deadline goes, the others stay
            due = {k for k, when in ttl.items() if when <= clock.now_ms}
            assert db.expire_all_due(clock.now_ms) == len(due)
            for k in due:
                assert k not in db
                del model[k]
                del ttl[k]
        elif kind == "bulk_add":
            for _ in range(op[1]):
                serial += 1
                k = b"bulk:%d" % serial
                db.add(k, b"v")
                model[k] = b"v"
                if serial % 3 == 0:
                    db.set_expire(k, clock.now_ms + serial % 400)
                    ttl[k] = clock.now_ms + serial % 400
        elif kind == "bulk_del":
            for k in [k for k in model if k.startswith(b"bulk:")][: op[1]]:
                assert db.delete(k)
                del model[k]
                ttl.pop(k, None)
        elif kind == "reserve":  # a loaded file's RESIZEDB: the index grows, the keys stay
            db.reserve(op[1])
            assert (db._mask + 1) * 2 >= op[1] * 3
        elif kind == "flush":
            assert db.flush() == len(model)
            model.clear()
            ttl.clear()
        elif kind == "swap":
            db.swap_contents(other)
            model, other_model = other_model, model
            ttl, other_ttl = other_ttl, ttl
        _check(db, model, ttl)
    _check(other, other_model, other_ttl)


@settings(max_examples=150, deadline=None)
@given(n=st.integers(0, 300), count=st.sampled_from([1, 2, 7, 40]),
       churn=st.lists(st.tuples(st.integers(0, 25), st.integers(0, 25)), max_size=40), seed=st.integers(0, 2**16))
def test_scan_returns_every_key_present_throughout(n, count, churn, seed):
    db, _ = _db()
    for i in range(n):
        db.add(b"s:%d" % i, b"v")
    stable = {b"s:%d" % i for i in range(n) if (i * 7 + seed) % 3}
    ever = set(db.key_list())
    serial = 0
    seen: set[bytes] = set()
    cursor = 0
    steps = iter(churn)
    while True:
        cursor, found = db.scan(cursor, count)
        seen.update(found)
        adds, dels = next(steps, (0, 0))
        for _ in range(adds):
            serial += 1
            k = b"new:%d" % serial
            db.add(k, b"v")
            ever.add(k)
        for k in [k for k in db.key_list() if k not in stable][:dels]:
            db.delete(k)
        if cursor == 0:
            break
    assert stable <= seen
    assert seen <= ever


def test_random_picks_are_live_and_reach_every_key():
    db, clock = _db()
    for i in range(200):
        db.add(b"r:%d" % i, b"v")
        if i % 2:
            db.set_expire(b"r:%d" % i, clock.now_ms + 10_000)
    for i in range(0, 200, 4):  # holes among the positions
        db.delete(b"r:%d" % i)
    live = set(db.key_list())
    volatile = {k for k, _ in db.deadlines()}
    drawn = {db.random_key() for _ in range(5000)}
    assert drawn == live
    sampled = {k for _ in range(500) for k in db.sample_keys(5, True)}
    assert sampled == volatile
    assert {k for _ in range(500) for k in db.sample_keys(5, False)} <= live
    for k in list(live):
        db.delete(k)
    assert db.random_key() is None and db.sample_keys(3, True) == [] and db.sample_keys(3, False) == []


def test_random_picks_reach_the_few_keys_left_among_many_holes():
    """With nearly every position a hole (a cache evicted down to its last keys), the draws fall
    back to a walk from a random position: still live keys only, and every one of them."""
    db, clock = _db()
    for i in range(5000):
        db.add(b"h:%d" % i, b"v")
        db.set_expire(b"h:%d" % i, clock.now_ms + 10_000)
    kept = {b"h:17", b"h:2500", b"h:4999"}
    for i in range(5000):
        if b"h:%d" % i not in kept:
            db.delete(b"h:%d" % i)
    assert {db.random_key() for _ in range(300)} == kept
    assert {k for _ in range(300) for k in db.sample_keys(5, False)} == kept
    assert {k for _ in range(300) for k in db.sample_keys(5, True)} == kept


def test_scored_samples_carry_each_key_s_idle_time_and_deadline():
    """Eviction's draws (sample_idle, sample_deadlines) give each drawn key's idle time and
    deadline as the key's own lookups give them, live keys only, volatile ones only where asked,
    and still find the few keys left with a deadline after most of them went."""
    db, clock = _db()
    for i in range(300):
        db.add(b"s:%d" % i, b"v")
        clock.now_ms += 10
        if i % 3 == 0:
            db.set_expire(b"s:%d" % i, clock.now_ms + 60_000 + i)
    clock.now_ms += 1_000
    for i in range(0, 300, 5):
        db.delete(b"s:%d" % i)
    volatile = {k for k, _ in db.deadlines()}
    for volatile_only in (False, True):
        pairs = [p for _ in range(200) for p in db.sample_idle(5, volatile_only, clock.now_ms)]
        assert pairs and all(idle == db.idle_ms(k, clock.now_ms) for idle, k in pairs)
        assert {k for _, k in pairs} <= (volatile if volatile_only else set(db.key_list()))
    deadlines = [p for _ in range(200) for p in db.sample_deadlines(5)]
    assert {k for _, k in deadlines} == volatile
    assert all(when == db.ttl_ms(k) for when, k in deadlines)
    for k in sorted(volatile)[1:]:  # one key with a deadline left among ~100 holes in its table
        db.delete(k)
    left = {k for k in volatile if k in db}
    assert len(left) == 1
    assert {k for _ in range(20) for _, k in db.sample_deadlines(5)} == left


def test_lfu_samples_carry_each_key_s_decayed_counter():
    """The LFU policies' draw (sample_freq) scores each drawn key 255 less its counter as
    lfu_counter decays it (a key never counted: 255), and leaves out the scores at or below the
    floor; volatile draws only keys with a deadline."""
    db, clock = _db()
    db.set_lfu(True)
    for i in range(100):
        db.add(b"f:%d" % i, b"v")
        if i % 2:
            db.set_expire(b"f:%d" % i, clock.now_ms + 60_000)
        if i % 3:
            db.set_lfu_counter(b"f:%d" % i, i, clock.now_ms - (i % 5) * 60_000)
    clock.now_ms += 1
    volatile = {k for k, _ in db.deadlines()}
    for volatile_only in (False, True):
        pairs = [p for _ in range(200) for p in db.sample_freq(5, volatile_only, clock.now_ms)]
        assert pairs and all(score == 255 - db.lfu_counter(k, clock.now_ms) for score, k in pairs)
        assert {k for _, k in pairs} == (volatile if volatile_only else set(db.key_list()))
        assert any(score < 255 - 60 for score, _ in pairs)  # counted keys among them, decayed or not
    floor = 200
    above = [p for _ in range(200) for p in db.sample_freq(5, False, clock.now_ms, floor)]
    assert above and all(score > floor for score, _ in above)


def test_an_eviction_s_delete_gives_the_key_s_figure_or_a_ghost():
    """evict_key deletes the key in one probe and gives its counted figure (0 when figures are
    not kept); a key not there, or one without a deadline under a volatile policy, is a ghost
    (-1) and stays."""
    db, clock = _db()
    db.add(b"a", b"v")
    db.add(b"b", b"v")
    db.set_expire(b"b", clock.now_ms + 60_000)
    assert db.evict_key(b"a", False) == 0 and b"a" not in db
    db.count_sizes(True)
    db.add(b"c", b"v")
    db.recounted(db.find(b"b"), 70)
    db.recounted(db.find(b"c"), 55)
    assert db.mem == 125
    assert db.evict_key(b"c", True) == -1 and b"c" in db  # no deadline: not a volatile candidate
    assert db.evict_key(b"zz", False) == -1
    assert db.evict_key(b"b", True) == 70 and b"b" not in db
    assert db.mem == 55 and db.nexpires == 0 and len(db) == 1
    assert db.evict_key(b"c", False) == 55 and db.mem == 0 and not db


def test_idle_time_follows_touching_lookups_only():
    db, clock = _db()
    db.set(b"k", b"v")
    clock.now_ms += 5_000
    assert db.idle_ms(b"k", clock.now_ms) == 5_000
    db.peek(b"k", clock.now_ms)
    assert db.idle_ms(b"k", clock.now_ms) == 5_000
    db.get(b"k", clock.now_ms)
    assert db.idle_ms(b"k", clock.now_ms) == 0
    clock.now_ms += 1_230
    assert db.idle_ms(b"k", clock.now_ms) == 1_230
    db.set_access_ms(b"k", clock.now_ms - 60_000)
    assert db.idle_ms(b"k", clock.now_ms) == 60_000


def test_reserve_spares_the_rebuilds_of_a_load():
    """After reserve(n), adding n keys keeps the index it made (no rebuild as it fills), and
    every key is found; a reserve below what the index holds changes nothing."""
    db, _ = _db()
    db.reserve(1000)
    index = db._index
    for i in range(1000):
        assert db.add_new(b"k%d" % i, b"v")
    assert db._index is index
    assert all(db.stored(b"k%d" % i) == b"v" for i in range(1000))
    db.reserve(10)
    assert db._index is index


def test_a_big_index_grows_in_steps():
    """A big index that gets half full builds its successor beside it, a few positions per
    insert, and hands over before it is two thirds full: the index in use stays the same object
    while the successor is built, and deletions, reused positions and SWAPDB mid-way leave every
    key found, in either index, and no deleted key."""
    import random

    db, _ = _db()
    model: dict[bytes, bytes] = {}
    rng = random.Random(56)
    n = 0

    def add() -> None:
        nonlocal n
        key = b"key:%d" % n
        n += 1
        db.add(key, key)
        model[key] = key

    while not db._next_mask:  # up to half of 65536 slots, rebuilt at once below that
        add()
    assert db._mask + 1 == 1 << 16
    index = db._index
    while db._index is index:  # the growth: inserts, with deletions that free positions
        add()
        if rng.random() < 0.3:
            key = b"key:%d" % rng.randrange(n)
            assert db.delete(key) == (model.pop(key, None) is not None)
        if db._next_mask:
            assert db._index is index
    assert db._mask + 1 == 1 << 17 and not db._next_mask and db.count * 3 <= (1 << 16) * 2
    assert len(db) == len(model)
    assert all(db.stored(k) == v for k, v in model.items())
    assert db.stored(b"key:%d" % n) is None
    while not db._next_mask:  # the next growth, interrupted by a SWAPDB
        add()
    other, _ = _db()
    db.swap_contents(other)
    assert not db._next_mask and not other._next_mask and len(other) == len(model)
    for k in list(model)[::3]:
        assert other.delete(k)
        del model[k]
    assert all(other.stored(k) == v for k, v in model.items())
    assert len(other) == len(model)
