"""storage/rdbwalk.pyx, the compiled snapshot writer: its bytes are storage/rdb.py's.

Each test builds databases in process (values as a load makes them, and as commands leave them:
holes, raw and embstr strings, hashtables with deleted fields, compressed list nodes, streams),
writes them with both writers and compares the files byte for byte; the LZF compressor is
compared with storage/lzf.py's on generated input.  Compiled build
only (the interpreted build has no rdbwalk: it writes with storage/rdb.py itself)."""

from __future__ import annotations

import io
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raxdb.storage import rdb
from raxdb.storage.hashtype import Hash
from raxdb.storage.keyspace import Database, EmbStr, RawStr
from raxdb.storage.lzf import compress as lzf_compress
from raxdb.storage.quicklist import Quicklist
from raxdb.storage.set_type import LIMITS_70, RSet
from raxdb.storage.stream import Stream
from raxdb.storage.zset import ZSet

rdbwalk = pytest.importorskip("raxdb.storage.rdbwalk", reason="the compiled build's writer")

AUX = [(b"redis-ver", b"7.0.15"), (b"ctime", b"1700000000"), (b"aof-base", b"0")]
NOW = 1_700_000_000_000


def python_file(dbs: list[Database], compress: bool, checksum: bool = True, lru: bool = False,
                lfu=None) -> bytes:
    out = io.BytesIO()
    w = rdb.Writer(compress, out.write)

    def idle(dbid: int, key: bytes) -> int:
        return dbs_by_id[dbid].idle_ms(key, NOW) // 1000

    dbs_by_id = {db.id: db for db in dbs}
    snapshot = ((db.id, len(db), db.nexpires, db.records()) for db in dbs if db)
    rdb.write_file(w, AUX, [b"#!lua name=l\nredis.register_function('f', function() return 1 end)"], snapshot,
                   idle if lru else None, lfu, checksum=checksum)
    return out.getvalue()


def compiled_file(dbs: list[Database], compress: bool, checksum: bool = True, lru: bool = False,
                  lfu=None, progress=None) -> bytes:
    out = io.BytesIO()
    w = rdb.Writer(compress)
    rdb.write_prologue(w, AUX, [b"#!lua name=l\nredis.register_function('f', function() return 1 end)"])
    rdbwalk.write_file(out.write, compress, checksum, bytes(w.buf), [(db.id, db) for db in dbs if db], NOW,
                       lru=lru, lfu=lfu, progress=progress)
    return out.getvalue()


def loaded(payload_dbs: list[Database], limits: rdb.Limits) -> list[Database]:
    """The databases a file written from `payload_dbs` loads into: values as a load makes them."""
    data = python_file(payload_dbs, True)
    dbs: dict[int, Database] = {}
    for kind, item in rdb.read_file(data, limits):
        if kind == "key":
            db = dbs.setdefault(item.db, Database(item.db))
            db.add(item.key, item.value, NOW)
            if item.expire_ms is not None:
                db.set_expire(item.key, item.expire_ms)
    return [dbs[i] for i in sorted(dbs)]


def mixed(seed: int) -> list[Database]:
    """Two databases of every kind of value, with holes left by deleted keys and fields."""
    rnd = random.Random(seed)
    db0, db5 = Database(0), Database(5)
    for i in range(400):
        kind = i % 8
        key = b"k:%d" % i
        if kind == 0:
            db0.add(key, b"%d" % rnd.randrange(-(1 << 40), 1 << 40), NOW)
        elif kind == 1:
            db0.add(key, b"value:%d" % i + b"\0" * rnd.randrange(0, 120), NOW)
        elif kind == 2:
            db0.add(key, rnd.randbytes(rnd.randrange(0, 200)), NOW)
        elif kind == 3:
            db0.add(key, RawStr.of(b"raw-%d-" % i * rnd.randrange(1, 9)), NOW)
        elif kind == 4:
            db0.add(key, EmbStr(b"%d" % i), NOW)
        elif kind == 5:
            db0.add(key, bytearray(b"ba" * rnd.randrange(0, 30)), NOW)
        elif kind == 6:
            h = Hash()
            h.set_pairs([x for j in range(rnd.randrange(1, 200)) for x in (b"f%d" % j, b"v" * rnd.randrange(0, 90))],
                        0, 128, 64)
            if rnd.random() < 0.5:
                h.delete(b"f0")
            db5.add(key, h, NOW)
        else:
            db5.add(key, RSet.of([b"%d" % rnd.randrange(0, 10 ** rnd.randrange(1, 12)) for _ in range(30)]
                                 + ([b"m%d" % j for j in range(rnd.randrange(0, 700))] if i % 16 == 7 else []),
                                 (512, 128, 64, True) if i % 2 else LIMITS_70), NOW)  # 7.2's listpacks too
        if rnd.random() < 0.2:
            (db0 if kind < 6 else db5).set_expire(key, NOW + rnd.randrange(-10_000, 10_000_000))
    for i in range(0, 400, 9):
        db0.delete(b"k:%d" % i)
        db5.delete(b"k:%d" % i)
    return [db0, db5]


def test_mixed_values_as_commands_leave_them():
    dbs = mixed(1)
    assert any(type(db0v) is RawStr for db0v in dbs[0]._values)
    for compress in (True, False):
        for checksum in (True, False):
            assert compiled_file(dbs, compress, checksum) == python_file(dbs, compress, checksum)


def test_values_as_a_load_makes_them():
    """Hashtables with holes, skiplist sorted sets, multi-node and compressed lists, a stream with
    a group and a PEL: written, loaded under several thresholds, then written by both writers."""
    source = Database(0)
    h = Hash()
    h.set_pairs([x for j in range(300) for x in (b"field:%d" % j, b"value:%d" % j)], 0, 128, 64)
    for j in range(0, 300, 7):
        h.delete(b"field:%d" % j)
    source.add(b"bighash", h, NOW)
    for depth in (0, 1):
        source.add(b"list:%d" % depth, Quicklist.from_items([b"item-%d" % j * 5 for j in range(3000)], -2, depth), NOW)
    source.add(b"zsmall", ZSet.from_pairs([(j * 1.5, b"m%d" % j) for j in range(10)], 128, 64), NOW)
    source.add(b"zbig", ZSet.from_pairs([(j * 0.25, b"m%d" % j) for j in range(300)], 128, 64), NOW)
    s = Stream()
    for j in range(1, 400):
        s.append([b"a", b"%d" % j, b"b", b"x" * (j % 50)], 0, (NOW + j) << 64, 4096, 100)
    s.create_group(b"g", (NOW + 10) << 64, 10)
    source.add(b"stream", s, NOW)
    for limits in (rdb.Limits(), rdb.Limits(list_depth=1), rdb.Limits(zset_max_entries=2, hash_max_entries=2)):
        dbs = loaded([source], limits)
        for compress in (True, False):
            assert compiled_file(dbs, compress) == python_file(dbs, compress)
    for compress in (True, False):
        assert compiled_file([source], compress) == python_file([source], compress)


def test_lru_idle_and_lfu_counters():
    dbs = mixed(2)
    assert compiled_file(dbs, True, lru=True) == python_file(dbs, True, lru=True)

    def lfu(dbid: int, key: bytes) -> int | None:
        return None if key.endswith(b"3") else len(key) * 7 % 256

    assert compiled_file(dbs, True, lfu=lfu) == python_file(dbs, True, lfu=lfu)


def test_progress_every_1024_keys():
    db = Database(0)
    for i in range(5000):
        db.add(b"%d" % i, b"v", NOW)
    seen: list[int] = []
    compiled_file([db], True, progress=seen.append)
    assert seen == [1024, 2048, 3072, 4096]


def test_sink_errors_end_the_write():
    db = Database(0)
    for i in range(50_000):
        db.add(b"key:%d" % i, b"x" * 50, NOW)

    def full(_data) -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        rdbwalk.write_file(full, True, True, b"REDIS0010", [(0, db)], NOW)


@given(st.one_of(st.binary(max_size=400),
                 st.lists(st.sampled_from([b"ab", b"abc", b"\0" * 9, b"xyz" * 7, b"q"]), max_size=200).map(b"".join)),
       st.integers(-2, 40))
def test_lzf_is_storage_lzf(data: bytes, slack: int):
    limit = len(data) - slack
    assert rdbwalk.lzf(data, limit) == lzf_compress(data, limit)


@given(st.lists(st.one_of(st.binary(max_size=40), st.integers(-(1 << 63), (1 << 63) - 1).map(lambda v: b"%d" % v),
                          st.sampled_from([b"0", b"-0", b"00", b"+1", b"-", b"2147483647", b"2147483648",
                                           b"-2147483648", b"-2147483649", b" 1", b"127", b"-128", b"32768"])),
                min_size=1, max_size=60))
def test_strings_are_encoded_as_storage_rdb_encodes_them(values: list[bytes]):
    db = Database(0)
    for i, v in enumerate(values):
        db.add(v + b"#%d" % i if i % 2 else b"%d" % i, v, NOW)
    assert compiled_file([db], True) == python_file([db], True)
