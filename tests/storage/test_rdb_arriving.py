"""rdb.read_file over an RDB that arrives in pieces (rdb.Arriving: a replica's diskless load)
reads what it reads over the whole file: the same records, in order, the same end offset and
checksum verdict, however the bytes are cut; a file cut short fails as the whole short file does;
and a big record is read again only a few times, not once per piece.  With a KeySink, the keys it
may take go straight into their databases and every other event stays as it was.  The file is a
real redis-server 7.0.15 dump with every type, expiries, several databases and a big string."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from raxdb.storage import rdb
from raxdb.storage.keyspace import Database
from tests.support.servers import start_redis

pytestmark = pytest.mark.oracle

LIMITS = rdb.Limits()


@pytest.fixture(scope="module")
def dump_file() -> Iterator[bytes]:
    srv = start_redis()
    try:
        c = redis.Redis(port=srv.port)
        rnd = random.Random(7)
        c.set("big", rnd.randbytes(300_000))
        c.set("compressible", b"abc" * 10_000)
        c.set("n", 12345)
        c.set("ttl", "v", px=10_000_000)
        c.rpush("list", *range(300))
        c.sadd("ints", *range(50))
        c.sadd("set", *(f"m{i}" for i in range(200)))
        c.hset("hash", mapping={f"f{i}": f"v{i}" for i in range(10)})
        c.hset("bighash", mapping={f"f{i}": "x" * 100 for i in range(200)})
        c.zadd("zset", {f"z{i}": i / 3 for i in range(200)})
        for i in range(250):
            c.xadd("stream", {"a": i, "b": "x"})
        c.xgroup_create("stream", "g", id="0")
        c.xreadgroup("g", "alice", {"stream": ">"}, count=5)
        c.execute_command("SELECT", 3)
        c.execute_command("SET", "in3", "three")
        c.save()
        yield (Path(srv.cwd) / "dump.rdb").read_bytes()
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def whole(dump_file: bytes) -> list[tuple]:
    return events(rdb.read_file(dump_file, LIMITS, 4096))


def events(it: Iterator[tuple[str, object]]) -> list[tuple]:
    """The events that say what was read (ticks and needs depend on the cut, not the file)."""
    out: list[tuple] = []
    for kind, item in it:
        if kind == "key":
            assert isinstance(item, rdb.KeyRecord)
            out.append((kind, item.db, item.key, item.expire_ms, rdb.dump(item.value, compress=False)))
        elif kind not in ("tick", "need"):
            out.append((kind, item))
    return out


def arriving(data: bytes, cuts: list[int], stats: dict[str, int] | None = None,
             sink: rdb.KeySink | None = None) -> Iterator[tuple[str, object]]:
    """read_file over `data` given in pieces: each need gets the next cut's worth (at least
    what it asks for) until the end."""
    a = rdb.Arriving()
    pos = 0
    sizes = iter(cuts)
    for kind, item in rdb.read_file(b"", LIMITS, 4096, a, sink):
        if kind == "need":
            assert not a.ended
            assert isinstance(item, int) and item > 0
            n = max(item, next(sizes, 1 << 20))
            a.add(data[pos:pos + n])
            pos += n
            a.ended = pos >= len(data)
            if stats is not None:
                stats["needs"] = stats.get("needs", 0) + 1
        yield kind, item


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.integers(1, 70_000), max_size=40))
def test_any_cut_reads_as_the_whole(dump_file: bytes, whole: list[tuple], cuts: list[int]) -> None:
    assert events(arriving(dump_file, cuts)) == whole


def test_byte_by_byte_reads_as_the_whole(dump_file: bytes, whole: list[tuple]) -> None:
    cuts = [1] * 5000  # the header and first records a byte at a time (then the rest)
    assert events(arriving(dump_file, cuts)) == whole


def test_what_follows_the_rdb_is_left_over(dump_file: bytes) -> None:
    a = rdb.Arriving()
    a.add(dump_file + b"MARK")
    a.ended = True
    out = list(rdb.read_file(b"", LIMITS, 0, a))
    assert out[-1] == ("end", len(dump_file))
    assert a.rest == b"MARK"


@pytest.mark.parametrize("keep", [5, 100, 200_000])
def test_cut_short_fails_as_the_whole_short_file(dump_file: bytes, keep: int) -> None:
    short = dump_file[:keep]
    with pytest.raises(rdb.RDBError) as whole:
        events(rdb.read_file(short, LIMITS))
    with pytest.raises(rdb.RDBError) as pieces:
        events(arriving(short, [1000] * 1000))
    assert (type(pieces.value), str(pieces.value)) == (type(whole.value), str(whole.value))


def test_a_bad_checksum_is_found_across_pieces(dump_file: bytes) -> None:
    bad = dump_file[:-1] + bytes([dump_file[-1] ^ 1])
    with pytest.raises(rdb.ChecksumError) as whole:
        events(rdb.read_file(bad, LIMITS))
    with pytest.raises(rdb.ChecksumError) as pieces:
        events(arriving(bad, [4096] * 1000))
    assert (pieces.value.computed, pieces.value.stored) == (whole.value.computed, whole.value.stored)


def test_a_big_record_is_read_again_a_few_times_only(dump_file: bytes) -> None:
    """Each wait asks for as many bytes again as the record has so far: the 300 kB string fed
    1 kB at a time is parsed again about log2(300) times, not 300."""
    stats: dict[str, int] = {}
    events(arriving(dump_file, [1024] * 100_000, stats))
    pieces_of_1k = len(dump_file) // 1024
    assert stats["needs"] < pieces_of_1k // 3


def new_sink(ndbs: int = 16, now_ms: int = 0) -> rdb.KeySink:
    return rdb.KeySink([Database(i) for i in range(ndbs)], now_ms)


def contents(dbs: list[Database]) -> list[tuple]:
    """What the databases hold, as `events` gives a key: (db, key, deadline, value's payload)."""
    return sorted((db.id, k, db.ttl_ms(k), rdb.dump(db.stored(k), compress=False)) for db in dbs for k in db.key_list())


def test_a_sink_takes_the_common_keys(dump_file: bytes, whole: list[tuple]) -> None:
    """The keys go into their databases with their deadlines and are no events; every other
    event is as without the sink, and the ticks fall at the same offsets."""
    sink = new_sink()
    got = list(rdb.read_file(dump_file, LIMITS, 4096, None, sink))
    keys = [e for e in whole if e[0] == "key"]
    assert events(iter(got)) == [e for e in whole if e[0] != "key"]
    assert contents(sink.dbs) == sorted(e[1:] for e in keys)
    assert sink.added == len(keys) and sink.expiring == sum(1 for e in keys if e[3] is not None) == 1
    ticks = [item for kind, item in got if kind == "tick"]
    assert ticks and ticks == [item for kind, item in rdb.read_file(dump_file, LIMITS, 4096) if kind == "tick"]


def test_a_sink_leaves_the_rest_to_the_loader(dump_file: bytes) -> None:
    """A key its database has already, a database past the sink's and a deadline already past are
    events, for the loader's rules (a duplicate's error, the FATAL for the database, a master's
    drop); the key already there is left as it was."""
    sink = new_sink(3, now_ms=1 << 62)
    sink.dbs[0].add(b"n", b"before")
    got = events(rdb.read_file(dump_file, LIMITS, 0, None, sink))
    assert {(e[1], e[2]) for e in got if e[0] == "key"} == {(0, b"n"), (0, b"ttl"), (3, b"in3")}
    assert sink.dbs[0].stored(b"n") == b"before"


def test_a_sink_leaves_keys_with_lru_or_lfu_data_to_the_loader() -> None:
    """An idle time or an LFU counter (maxmemory-policy's, Redis writes them before the key) is
    the loader's to set: such keys are events, the others are taken."""
    w = rdb.Writer()
    keys = [(b"a", b"1", None), (b"b", b"2", None), (b"c", b"3", 1 << 50)]
    rdb.write_file(w, [], [], [(0, 3, 1, keys)], idle=lambda db, k: 7 if k == b"a" else None,
                   freq=lambda db, k: 9 if k == b"b" else None)
    sink = new_sink()
    got = [item for kind, item in rdb.read_file(bytes(w.buf), LIMITS, 0, None, sink) if kind == "key"]
    assert [(r.key, r.idle_s, r.freq) for r in got] == [(b"a", 7, None), (b"b", None, 9)]
    assert sink.dbs[0].key_list() == [b"c"] and sink.dbs[0].ttl_ms(b"c") == 1 << 50


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.integers(1, 70_000), max_size=40))
def test_a_sink_fills_the_same_from_any_cut(dump_file: bytes, whole: list[tuple], cuts: list[int]) -> None:
    sink = new_sink()
    assert events(arriving(dump_file, cuts, sink=sink)) == [e for e in whole if e[0] != "key"]
    assert contents(sink.dbs) == sorted(e[1:] for e in whole if e[0] == "key")
