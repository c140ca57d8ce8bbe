"""Generic keyspace commands against redis-server 7.0: DEL, UNLINK, EXISTS, TYPE, TOUCH, RENAME,
RENAMENX, COPY, MOVE, KEYS, SCAN, RANDOMKEY and OBJECT, in RESP2 and RESP3.

Replies whose exact value depends on hashing (SCAN cursors and page contents, RANDOMKEY) are
checked by properties; everything else byte for byte.  Tests that need another family's commands
(lists, hashes, CONFIG SET, pub/sub, WATCH, BLPOP) skip until raxdb has them.
"""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.diff import RawConnection, parse


def mkeys(diff, *pairs):
    diff("MSET", *pairs)


# ---- DEL / UNLINK / EXISTS / TYPE / TOUCH -------------------------------------------------------
def test_del_unlink(diff):
    mkeys(diff, "a", "1", "b", "2", "c", "3")
    diff("DEL", "a", "a", "missing")
    diff("DEL", "a")
    diff("UNLINK", "b", "c", "b")
    diff("EXISTS", "a", "b", "c")
    diff("DEL", "")
    diff("SET", "", "empty key")
    diff("DEL", "", "")
    diff("DEL")
    diff("UNLINK")


def test_exists_counts_repeats(diff):
    diff("SET", "a", "1")
    diff("EXISTS", "a", "a", "a", "b")
    diff("EXISTS", "b")
    diff("EXISTS", "a\x00b")
    diff("SET", "a\x00b", "nul")
    diff("EXISTS", "a\x00b", "a")
    diff("EXISTS")


def test_type(diff):
    diff("SET", "s", "v")
    diff("TYPE", "s")
    diff("TYPE", "missing")
    diff("APPEND", "s", "x")
    diff("TYPE", "s")
    diff("TYPE")
    diff("TYPE", "a", "b")


@pytest.mark.parametrize("setup,kind", [
    (("RPUSH", "k", "a"), "list"), (("HSET", "k", "f", "v"), "hash"), (("SADD", "k", "m"), "set"),
    (("ZADD", "k", "1", "m"), "zset"), (("XADD", "k", "1-1", "f", "v"), "stream"),
])
def test_type_of_every_family(diff, setup, kind):
    diff(*setup)
    assert diff("TYPE", "k") == b"+%s\r\n" % kind.encode()
    diff("SCAN", "0", "TYPE", kind)
    diff("SCAN", "0", "TYPE", kind.upper())
    diff("OBJECT", "ENCODING", "k")
    diff("COPY", "k", "k2")
    diff("TYPE", "k2")
    diff("OBJECT", "ENCODING", "k2")
    diff("RENAME", "k2", "k3")
    diff("TYPE", "k3")
    diff("MOVE", "k3", "2")
    diff("EXISTS", "k", "k2", "k3")


def test_touch(diff):
    mkeys(diff, "a", "1", "b", "2")
    diff("TOUCH", "a", "b", "c", "a")
    diff("TOUCH", "zzz")
    diff("TOUCH")


# ---- RENAME / RENAMENX --------------------------------------------------------------------------
def test_rename(diff):
    diff("RENAME", "nosuch", "x")
    diff("RENAME", "nosuch", "nosuch")
    diff("SET", "a", "1")
    diff("RENAME", "a", "a")
    diff("GET", "a")
    diff("RENAME", "a", "b")
    diff("EXISTS", "a", "b")
    diff("GET", "b")
    diff("SET", "c", "3")
    diff("RENAME", "b", "c")
    diff("GET", "c")
    diff("EXISTS", "b")
    diff("RENAME", "c")
    diff("RENAME", "c", "d", "e")


def test_renamenx(diff):
    diff("RENAMENX", "nosuch", "x")
    diff("RENAMENX", "nosuch", "nosuch")
    mkeys(diff, "a", "1", "b", "2")
    diff("RENAMENX", "a", "a")
    diff("RENAMENX", "a", "b")
    diff("MGET", "a", "b")
    diff("RENAMENX", "a", "c")
    diff("MGET", "a", "c")
    diff("RENAMENX", "c")


def test_rename_carries_ttl(diff):
    mkeys(diff, "a", "1", "b", "2")
    diff("PEXPIREAT", "a", "99999999999123")
    diff("RENAME", "a", "x")
    diff("PEXPIRETIME", "x")
    # The destination's own TTL goes away with its old value.
    diff("PEXPIREAT", "b", "88888888888000")
    diff("RENAME", "x", "b")
    diff("PEXPIRETIME", "b")
    diff("SET", "c", "3")
    diff("PEXPIREAT", "c", "77777777777000")
    diff("RENAME", "b", "c")
    diff("PEXPIRETIME", "c")
    diff("SET", "p", "no ttl")
    diff("RENAME", "p", "c")
    diff("PEXPIRETIME", "c")
    diff("RENAMENX", "c", "d")
    diff("PEXPIRETIME", "d")
    diff("PEXPIREAT", "d", "66666666666000")
    diff("RENAMENX", "d", "e")
    diff("PEXPIRETIME", "e")


def test_rename_expired_source_is_missing(diff):
    diff("SET", "a", "1")
    diff("PEXPIREAT", "a", "1")  # in the past: deleted at once
    diff("RENAME", "a", "b")
    diff("EXISTS", "a", "b")


# ---- COPY ---------------------------------------------------------------------------------------
def test_copy_options_and_errors(diff):
    diff("COPY", "a", "b")
    diff("SET", "a", "1")
    diff("COPY", "a", "a")
    diff("COPY", "a", "a", "REPLACE")
    diff("COPY", "a", "a", "DB", "0")
    diff("COPY", "a", "a", "DB", "1")
    diff("COPY", "a", "b")
    diff("COPY", "a", "b")
    diff("SET", "a", "2")
    diff("COPY", "a", "b", "replace")
    diff("GET", "b")
    diff("COPY", "a", "b", "REPLACE", "REPLACE")
    for bad in [("DB",), ("DB", "x"), ("DB", "16"), ("DB", "-1"), ("DB", "99999999999"),
                ("DB", "2147483648"), ("DB", "-2147483649"), ("DB", " 1"), ("DB", "1.0"), ("FOO",),
                ("REPLACE", "FOO"), ("FOO", "DB", "99"), ("DB", "99", "FOO"), ("DB", "1", "DB"),
                ("DB", "1", "DB", "x")]:
        diff("COPY", "a", "c", *bad)
    diff("EXISTS", "c")
    diff("COPY", "a")
    diff("COPY")


def test_copy_to_other_db_with_ttl(diff):
    diff("SET", "a", "v")
    diff("PEXPIREAT", "a", "99999999999999")
    diff("COPY", "a", "a", "DB", "3")
    diff("COPY", "a", "z", "db", "3")
    diff("COPY", "a", "z", "DB", "3")
    diff("SELECT", "3")
    diff("MGET", "a", "z")
    diff("PEXPIRETIME", "a")
    diff("PEXPIRETIME", "z")
    diff("SET", "a", "other")
    diff("SELECT", "0")
    diff("COPY", "a", "a", "DB", "3", "REPLACE")
    diff("SELECT", "3")
    diff("GET", "a")
    diff("SELECT", "0")


def test_copy_is_independent(diff):
    diff("SET", "a", "abc")
    diff("APPEND", "a", "def")  # an in-place (raw) string
    diff("COPY", "a", "b")
    diff("APPEND", "a", "ghi")
    diff("SETRANGE", "b", "0", "X")
    diff("MGET", "a", "b")
    diff("OBJECT", "ENCODING", "b")


def test_copy_container_is_independent(diff):
    diff("RPUSH", "l", "a", "b")
    diff("COPY", "l", "m")
    diff("RPUSH", "l", "c")
    diff("LPOP", "m")
    diff("LRANGE", "l", "0", "-1")
    diff("LRANGE", "m", "0", "-1")


# ---- MOVE ---------------------------------------------------------------------------------------
def test_move(diff):
    diff("MOVE", "a", "1")
    diff("SET", "a", "1")
    for bad in ["0", "16", "-1", "x", "99999999999", "2147483648", "1 ", ""]:
        diff("MOVE", "a", bad)
    diff("PEXPIREAT", "a", "99999999999999")
    diff("MOVE", "a", "1")
    diff("EXISTS", "a")
    diff("SET", "a", "2")
    diff("MOVE", "a", "1")  # exists there: not moved
    diff("GET", "a")
    diff("SELECT", "1")
    diff("GET", "a")
    diff("PEXPIRETIME", "a")
    diff("MOVE", "a", "0")
    diff("SELECT", "0")
    diff("MOVE", "a")
    diff("MOVE", "a", "1", "2")


# ---- KEYS ---------------------------------------------------------------------------------------
def test_keys(diff):
    diff.unordered("KEYS", "*")
    mkeys(diff, "user:1", "a", "user:2", "b", "User:3", "c", "other", "d", "", "e", "a\x00b", "f")
    for pattern in ["*", "user:*", "user:?", "[uU]ser:*", "*[^0-9]", "*\x00*", "", "a\\*", "\\u*",
                    "*:[1-2]", "[", "**", "?"]:
        diff.unordered("KEYS", pattern)
    diff("KEYS")
    diff("KEYS", "a", "b")


def test_keys_skips_expired(diff):
    mkeys(diff, "a", "1", "b", "2")
    diff("PEXPIREAT", "a", "1")
    diff.unordered("KEYS", "*")


# ---- SCAN ---------------------------------------------------------------------------------------
def _scan_all(conn, *opts):
    cursor = b"0"
    seen = []
    calls = 0
    while True:
        reply = parse(conn.call("SCAN", cursor, *opts))
        cursor, page = reply
        assert isinstance(cursor, bytes) and cursor.isdigit()
        seen += page
        calls += 1
        assert calls < 100000
        if cursor == b"0":
            return seen


def test_scan_errors(diff):
    diff("SET", "a", "1")
    for args in [("x",), (" 1",), ("1 ",), ("0x1",), ("18446744073709551616",), ("-18446744073709551616",),
                 ("1.5",), ("",), ("0", "COUNT"), ("0", "COUNT", "0"), ("0", "COUNT", "-1"),
                 ("0", "COUNT", "x"), ("0", "COUNT", "9223372036854775808"), ("0", "MATCH"), ("0", "TYPE"),
                 ("0", "FOO"), ("0", "MATCH", "*", "FOO"), ("x", "COUNT", "0"), ("0", "COUNT", "0", "MATCH"),
                 ("0", "count", "1", "count")]:
        diff("SCAN", *args)
    diff("SCAN")


def test_scan_small_db_matches_redis(diff):
    """A handful of keys come back in one call on both servers (order aside)."""
    mkeys(diff, "a", "1", "b", "2", "c", "3")
    ours, theirs = diff.both("SCAN", "0")
    o, t = parse(ours), parse(theirs)
    assert o[0] == t[0] == b"0"
    assert sorted(o[1]) == sorted(t[1])
    diff("SCAN", "0", "MATCH", "nothing*")
    diff("SCAN", "0", "TYPE", "nosuchtype")
    diff("SCAN", "0", "MATCH", "a", "TYPE", "string")
    diff("SCAN", "0", "TYPE", "STRING", "MATCH", "b")
    ours, theirs = diff.both("SCAN", "0", "COUNT", "9223372036854775807", "MATCH", "[ab]")
    o, t = parse(ours), parse(theirs)  # key order follows Redis's per-process random hash seed
    assert o[0] == t[0] == b"0" and sorted(o[1]) == sorted(t[1]) == [b"a", b"b"]
    diff("SCAN", "18446744073709551615", "MATCH", "zzz")


def test_scan_match_agrees_with_keys(r, raw):
    keys = [b"user:%d" % i for i in range(300)] + [b"item:%d:x" % i for i in range(300)] + [b"", b"u", b"[x]"]
    r.mset({k: b"v" for k in keys})
    for pattern in ["user:1*", "*:x", "?", "*", "item:[0-4]?:*", "\\[x\\]", "[x]", "", "u*", "*1*1*"]:
        assert sorted(_scan_all(raw, "MATCH", pattern, "COUNT", "37")) == sorted(r.keys(pattern)), pattern


def test_scan_full_iteration(r, raw):
    keys = {b"k:%d" % i for i in range(1500)} | {b"", b"x\x00y", b"other:1"}
    r.mset({k: b"v" for k in keys})
    for count in ("1", "7", "100", "10000"):
        seen = _scan_all(raw, "COUNT", count)
        assert set(seen) == keys
        assert len(seen) == len(keys)  # no add/delete during the scan: no duplicates either
    assert set(_scan_all(raw, "MATCH", "k:1*")) == {k for k in keys if k.startswith(b"k:1")}
    assert set(_scan_all(raw, "MATCH", "*")) == keys
    assert set(_scan_all(raw, "TYPE", "string", "COUNT", "50")) == keys
    assert _scan_all(raw, "TYPE", "list") == []
    assert set(_scan_all(raw, "MATCH", "other:?", "TYPE", "String")) == {b"other:1"}


def test_scan_type_filter_mixed(r, raw):
    if b"unknown command" in raw.call("RPUSH"):
        pytest.fail("raxdb lacks RPUSH")
    r.mset({b"s%d" % i: b"v" for i in range(50)})
    for i in range(50):
        r.rpush(b"l%d" % i, b"x")
    assert set(_scan_all(raw, "TYPE", "list")) == {b"l%d" % i for i in range(50)}
    assert set(_scan_all(raw, "TYPE", "string", "MATCH", "s1*")) == {b"s1"} | {b"s1%d" % i for i in range(10)}


class _ScanModel:
    """Runs a SCAN iteration with adds and deletes between the calls."""

    def __init__(self, conn: RawConnection) -> None:
        self.conn = conn

    def run(self, initial: list[bytes], steps: list[tuple[str, int]], count: int) -> None:
        c = self.conn
        assert c.call("FLUSHALL") == b"+OK\r\n"
        present = set(initial)
        ever = set(initial)
        if initial:
            args = []
            for k in initial:
                args += [k, b"v"]
            c.call("MSET", *args)
        stable = set(initial)  # present for the whole iteration so far
        seen: set[bytes] = set()
        cursor = b"0"
        step = 0
        fresh = 0
        while True:
            cursor, page = parse(c.call("SCAN", cursor, "COUNT", str(count)))
            seen.update(page)
            assert set(page) <= ever, "SCAN returned a key that never existed"
            if cursor == b"0":
                break
            # Between calls: the next mutations of the plan.
            while step < len(steps):
                op, n = steps[step]
                step += 1
                if op == "add":
                    for _ in range(n):
                        k = b"new:%d" % fresh
                        fresh += 1
                        c.call("SET", k, "v")
                        present.add(k)
                        ever.add(k)
                elif op == "del" and present:
                    for k in random.sample(sorted(present), min(n, len(present))):
                        c.call("DEL", k)
                        present.discard(k)
                        stable.discard(k)
                else:
                    break
            assert len(seen) < 100000
        missing = stable - seen
        assert not missing, f"SCAN missed {len(missing)} keys present throughout, e.g. {sorted(missing)[:5]}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 400),
       steps=st.lists(st.tuples(st.sampled_from(["add", "del", "pause"]), st.integers(1, 60)), max_size=30),
       count=st.sampled_from([1, 3, 10, 50]), seed=st.integers(0, 2**32))
def test_scan_guarantee_with_adds_and_deletes(raw, n, steps, count, seed):
    random.seed(seed)
    _ScanModel(raw).run([b"key:%d" % i for i in range(n)], steps, count)


def test_scan_after_emptying_and_refilling(r, raw):
    r.mset({b"a%d" % i: b"v" for i in range(100)})
    cursor, _ = parse(raw.call("SCAN", "0", "COUNT", "10"))
    assert cursor != b"0"
    r.flushdb()
    r.mset({b"b%d" % i: b"v" for i in range(5)})
    # An old cursor past the new keys simply finishes; a new iteration sees everything.
    cursor, _ = parse(raw.call("SCAN", cursor))
    assert set(_scan_all(raw)) == {b"b%d" % i for i in range(5)}
    for i in range(5):
        r.delete(b"b%d" % i)
    assert _scan_all(raw) == []


# ---- RANDOMKEY ----------------------------------------------------------------------------------
def test_randomkey(diff):
    diff("RANDOMKEY")
    diff("SET", "only", "1")
    diff("RANDOMKEY")
    diff("RANDOMKEY", "x")
    mkeys(diff, "a", "1", "b", "2", "c", "3")
    for _ in range(20):
        ours, theirs = diff.both("RANDOMKEY")
        assert parse(ours) in (b"only", b"a", b"b", b"c")
    diff("PEXPIREAT", "only", "1")
    diff("DEL", "a", "b", "c")
    diff("RANDOMKEY")


def test_randomkey_covers_keys(r):
    keys = {b"k%d" % i for i in range(8)}
    r.mset({k: b"v" for k in keys})
    seen = set()
    for _ in range(400):
        seen.add(r.randomkey())
        if seen == keys:
            break
    assert seen == keys


def test_randomkey_sparse_after_deletes(r):
    r.mset({b"k%d" % i: b"v" for i in range(1000)})
    r.delete(*[b"k%d" % i for i in range(1, 1000)])
    assert r.randomkey() == b"k0"


# ---- OBJECT -------------------------------------------------------------------------------------
def test_object_encoding_strings(diff):
    values = ["0", "1", "-1", "123", "-0", "01", "+1", " 1", "9223372036854775807", "-9223372036854775808",
              "9223372036854775808", "12345678901234567890", "123456789012345678901", "1.5", "abc",
              "x" * 44, "x" * 45, "", "1" * 44, "1" * 45]
    for i, v in enumerate(values):
        diff("SET", f"k{i}", v)
        diff("OBJECT", "ENCODING", f"k{i}")
        diff("OBJECT", "REFCOUNT", f"k{i}")
    for v in ["9999", "10000", "5000"]:
        diff("SET", "n", v)
        diff("OBJECT", "REFCOUNT", "n")
    diff("INCR", "n")
    diff("OBJECT", "ENCODING", "n")
    diff("SET", "s", "ab")
    diff("APPEND", "s", "c")
    diff("OBJECT", "ENCODING", "s")
    diff("OBJECT", "REFCOUNT", "s")
    diff("SET", "r", "12")
    diff("APPEND", "r", "3")
    diff("OBJECT", "ENCODING", "r")
    diff("OBJECT", "ENCODING", "missing")
    diff("OBJECT", "REFCOUNT", "missing")
    diff("OBJECT", "IDLETIME", "missing")
    diff("OBJECT", "FREQ", "missing")


def test_object_help_and_errors(diff):
    diff("OBJECT", "HELP")
    diff("object", "help")
    diff("OBJECT", "HELP", "x")
    diff("OBJECT")
    diff("OBJECT", "ENCODING")
    diff("OBJECT", "ENCODING", "a", "b")


def test_object_unknown_subcommand(diff):
    diff("OBJECT", "NOSUCH", "a")
    diff("OBJECT", "NOSUCH")


def test_object_idletime_and_freq(diff):
    diff("SET", "a", "1")
    # Whole-second clocks: a second boundary may fall between SET and OBJECT on either server.
    # redis-server's is the LRU clock its cron caches (10 times a second): on a loaded host its
    # cron runs late and the reply can read 2 or more, so the oracle is held only to its type.
    ours, theirs = diff.both("OBJECT", "IDLETIME", "a")
    assert parse(ours) in (0, 1) and parse(theirs) >= 0
    diff("OBJECT", "FREQ", "a")


def test_object_idletime_grows_and_resets(r):
    r.set("a", "1")
    assert r.object("idletime", "a") == 0
    deadline = time.monotonic() + 10
    while r.object("idletime", "a") < 1:  # awaiting the clock, not asserting a duration
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # OBJECT, TYPE, TTL and EXISTS do not touch the key; GET does.
    r.type("a")
    r.ttl("a")
    r.exists("a")
    assert r.object("idletime", "a") >= 1
    r.get("a")
    assert r.object("idletime", "a") == 0


@pytest.mark.parametrize("write", [("SET", "a", "2"), ("INCR", "a"), ("MSET", "a", "3", "b", "4"),
                                   ("SET", "a", "5", "XX"), ("APPEND", "a", "6")])
def test_object_idletime_reset_by_overwrite(r, write):
    # Redis stores a new object with a fresh LRU clock on every overwrite (INCR too).
    r.mset({"a": "1", "b": "1"})
    deadline = time.monotonic() + 10
    while r.object("idletime", "a") < 1:  # awaiting the clock, not asserting a duration
        assert time.monotonic() < deadline
        time.sleep(0.05)
    r.execute_command(*write)
    assert r.object("idletime", "a") == 0


def test_object_freq_under_lfu(diff):
    try:
        diff("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
        # not a small integer: with maxmemory 0 Redis would store "1" as a shared integer object,
        # whose FREQ reads bits of an unrelated clock
        diff("SET", "a", "v1")
        diff("OBJECT", "FREQ", "a")  # new keys start at LFU_INIT_VAL
        diff("GET", "a")
        diff("OBJECT", "FREQ", "a")  # the first access always counts
        diff("OBJECT", "IDLETIME", "a")
        diff("SET", "n", "100")
        diff("OBJECT", "REFCOUNT", "n")
        for _ in range(200):
            diff.both("GET", "a")
        ours, theirs = diff.both("OBJECT", "FREQ", "a")
        assert 6 < parse(ours) < 40 and 6 < parse(theirs) < 40
        diff("RENAME", "a", "b")
        ours, theirs = diff.both("OBJECT", "FREQ", "b")
        assert parse(ours) > 6
    finally:
        diff.both("CONFIG", "SET", "maxmemory-policy", "noeviction")
    diff("OBJECT", "FREQ", "b")


def test_lfu_counts_keys_made_before_the_switch(diff):
    """Keys that exist when maxmemory-policy turns to LFU start at counter 0 and count from their
    next access, by every command: each access below 5 adds one, so three give 3 on both servers.
    raxdb's inlined fast paths (GET, SET, INCR, MSET, the pushes and pops, HSET) used to skip the
    counter until some other access had filled the LFU table, and the list and hash ones always."""
    accesses = {
        "s": ("GET", "s"), "w": ("SET", "w", "v2"), "n": ("INCR", "n"), "m": ("MSET", "m", "v3", "m2", "v4"),
        "lp": ("LPUSH", "lp", "x"), "rp": ("RPUSH", "rp", "x"), "lo": ("LPOP", "lo"), "ro": ("RPOP", "ro"),
        "h": ("HSET", "h", "f", "v"),
        "gs": ("GETSET", "gs", "v2"), "se": ("SETEX", "se", "100", "v2"), "sx": ("SET", "sx", "v2", "XX"),
        "ap": ("APPEND", "ap", "x"), "fl": ("INCRBYFLOAT", "fl", "1.5"), "sr": ("SETRANGE", "sr", "1", "x"),
        "ge": ("GETEX", "ge"), "hi": ("HINCRBY", "h2", "n", "1"), "lr": ("LRANGE", "lr", "0", "-1"),
        "sa": ("SADD", "sa", "x"), "za": ("ZADD", "za", "1", "x"), "xa": ("XADD", "xa", "1-*", "f", "v"),
    }
    diff("MSET", "s", "v1", "w", "v1", "n", "20000", "m", "v1", "gs", "v1", "se", "v1", "sx", "v1",
         "ap", "v1", "fl", "20000.5", "sr", "v1", "ge", "v1")  # n and fl past the shared integers
    for key in ("lp", "rp", "lo", "ro", "lr"):
        diff("RPUSH", key, "a", "b", "c", "d")
    diff("HSET", "h", "f", "v0")
    diff("HSET", "h2", "n", "1")
    diff("SADD", "sa", "a")
    diff("ZADD", "za", "1", "a")
    diff("XADD", "xa", "1-1", "f", "v")
    try:
        diff("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
        for key, command in accesses.items():
            diff("OBJECT", "FREQ", key)
            for _ in range(3):
                diff(*command)
            diff("OBJECT", "FREQ", key)
    finally:
        diff.both("CONFIG", "SET", "maxmemory-policy", "noeviction")


# ---- side effects: WATCH, notifications, blocked clients -----------------------------------------
def test_writes_invalidate_watch(diff):
    for cmd in [("DEL", "k"), ("UNLINK", "k"), ("RENAME", "k", "k2"), ("RENAME", "x", "k"), ("COPY", "x", "k"),
                ("MOVE", "k", "1"), ("EXPIRE", "k", "100"), ("PERSIST", "k"), ("PEXPIREAT", "k", "1")]:
        diff("FLUSHALL")
        mkeys(diff, "k", "1", "x", "2")
        diff("PEXPIREAT", "k", "99999999999999")
        diff("WATCH", "k")
        diff(*cmd)
        diff("MULTI")
        diff("SET", "k", "new")
        diff("EXEC")
    # Commands that change nothing do not invalidate.
    for cmd in [("DEL", "nope"), ("EXPIRE", "nope", "10"), ("PERSIST", "k"), ("EXISTS", "k"), ("TYPE", "k"),
                ("TTL", "k"), ("OBJECT", "ENCODING", "k"), ("TOUCH", "k"), ("COPY", "x", "k")]:
        diff("FLUSHALL")
        mkeys(diff, "k", "1", "x", "2")
        diff("WATCH", "k")
        diff(*cmd)
        diff("MULTI")
        diff("GET", "k")
        diff("EXEC")


def _events(conn: RawConnection) -> list:
    """Drain pushed messages until the PING marker's reply arrives."""
    conn.send(b"*1\r\n$4\r\nPING\r\n")
    out = []
    while True:
        msg = parse(conn.read_frame())
        if msg in (b"PONG", [b"pong", b""]):
            return out
        out.append(msg)


def test_keyspace_notifications(raxdb, oracle):
    results = []
    for port in (raxdb.port, oracle.port):
        c = RawConnection(port)
        sub = RawConnection(port)
        try:
            if not c.call("CONFIG", "SET", "notify-keyspace-events", "KEA").startswith(b"+OK"):
                pytest.fail("raxdb lacks CONFIG SET notify-keyspace-events")
            c.call("FLUSHALL")
            r = sub.call("PSUBSCRIBE", "__key*__:*")
            if not r.startswith(b"*3"):
                pytest.fail("raxdb lacks PSUBSCRIBE")
            script = [("MSET", "a", "1", "b", "2", "c", "3"), ("DEL", "a", "zz"), ("UNLINK", "b"),
                      ("SET", "a", "1"), ("RENAME", "a", "b"), ("RENAMENX", "b", "c"), ("RENAMENX", "b", "d"),
                      ("COPY", "d", "e"), ("COPY", "d", "e", "DB", "1"), ("MOVE", "e", "2"),
                      ("EXPIRE", "d", "100"), ("PEXPIRE", "d", "100", "GT"), ("EXPIREAT", "d", "1"),
                      ("SET", "f", "1"), ("PEXPIREAT", "f", "99999999999999"), ("PERSIST", "f"), ("PERSIST", "f"),
                      ("EXISTS", "nope"), ("TYPE", "nope"), ("COPY", "nope", "x"), ("TOUCH", "nope")]
            for cmd in script:
                c.call(*cmd)
            results.append(_events(sub))
        finally:
            c.call("CONFIG", "SET", "notify-keyspace-events", "")
            c.close()
            sub.close()
    assert results[0] == results[1]


def test_rename_into_key_wakes_blocked_client(raxdb):
    c = RawConnection(raxdb.port)
    blocked = RawConnection(raxdb.port)
    try:
        if b"unknown command" in c.call("BLPOP") or b"unknown command" in c.call("RPUSH"):
            pytest.fail("raxdb lacks BLPOP/RPUSH")
        c.call("FLUSHALL")
        c.call("RPUSH", "src", "x")
        blocked.send(b"*3\r\n$5\r\nBLPOP\r\n$4\r\ndest\r\n$2\r\n10\r\n")
        # The wake-up is only proven if BLPOP blocked before the RENAME: await it in INFO.
        deadline = time.monotonic() + 10
        while b"blocked_clients:1" not in c.call("INFO", "clients"):
            if b"blocked_clients" not in c.call("INFO", "clients"):
                pytest.fail("raxdb lacks INFO clients")
            assert time.monotonic() < deadline
            time.sleep(0.01)
        c.call("RENAME", "src", "dest")
        assert parse(blocked.read_frame()) == [b"dest", b"x"]
    finally:
        c.close()
        blocked.close()


# ---- the keyspace's own bookkeeping (no server) ---------------------------------------------------
class _Clock:
    def __init__(self, now_ms: int) -> None:
        self.now_ms = now_ms


def test_access_tracking_touch_and_peek():
    from raxdb.storage.keyspace import Database

    db = Database(0)
    db.clock = _Clock(1_000_000)
    db.set(b"a", b"1")
    db.add(b"b", b"2")
    assert db.access_ms(b"a") == db.access_ms(b"b") == 1_000_000
    assert db.peek(b"a", 1_005_000) == b"1"
    assert db.idle_ms(b"a", 1_005_000) == 5000  # peek is not an access
    assert db.get(b"a", 1_005_000) == b"1"
    assert db.idle_ms(b"a", 1_005_000) == 0
    assert db.get(b"nope", 1_006_000) is None and db.access_ms(b"nope") is None
    db.replace(b"a", b"3")  # a new value object, the same key: the stamp stays
    assert db.idle_ms(b"a", 1_007_000) == 2000
    db.clock.now_ms = 1_007_000
    db.set(b"a", b"4")  # an overwrite is a write access
    assert db.idle_ms(b"a", 1_007_000) == 0
    db.delete(b"a")
    assert db.access_ms(b"a") is None


def test_lfu_counter_model():
    from raxdb.storage.keyspace import LFU_INIT_VAL, Database

    db = Database(0)
    db.clock = _Clock(60_000 * 100)
    db.set(b"old", b"v")
    db.set_lfu(True)
    assert db.lfu
    assert db.lfu_counter(b"old", db.clock.now_ms) == 0  # existed before LFU was on
    db.set(b"k", b"v")
    now = db.clock.now_ms
    assert db.lfu_counter(b"k", now) == LFU_INIT_VAL
    db.get(b"k", now)
    assert db.lfu_counter(b"k", now) == LFU_INIT_VAL + 1  # p = 1 at the initial value
    for _ in range(2000):
        db.get(b"k", now)
    hot = db.lfu_counter(b"k", now)
    assert LFU_INIT_VAL + 1 < hot < 60  # logarithmic: thousands of hits, a few dozen steps
    # One step of decay per lfu-decay-time minute without access.
    assert db.lfu_counter(b"k", now + 3 * 60_000) == hot - 3
    assert db.lfu_counter(b"k", now + 1000 * 60_000) == 0
    db.delete(b"k")
    assert b"k" not in db.freq
    db.set_lfu(False)
    assert not db.lfu and not db.freq


def test_attach_follows_lfu_config():
    from raxdb.server.config.options import Config
    from raxdb.server.memory import lru
    from raxdb.storage.keyspace import Database

    class FakeServer:
        def __init__(self) -> None:
            self.config = Config()
            self.dbs = [Database(i) for i in range(3)]
            self.now_ms = 12345

    srv = FakeServer()
    lru.attach(srv)
    lru.attach(srv)  # idempotent
    assert all(db.clock is srv for db in srv.dbs)
    srv.dbs[0].set(b"k", b"v")
    assert srv.dbs[0].access_ms(b"k") == 12345
    srv.config.set("maxmemory-policy", b"volatile-lfu")
    assert all(db.lfu for db in srv.dbs)
    srv.config.set("lfu-decay-time", b"7")
    from raxdb.storage.keyspace import LFU_PARAMS

    assert LFU_PARAMS["decay_time"] == 7
    srv.config.set("lfu-decay-time", b"1")
    srv.config.set("maxmemory-policy", b"allkeys-lru")
    assert not any(db.lfu for db in srv.dbs)


def _hits_misses(conn: RawConnection) -> tuple[int, int]:
    info = parse(conn.call("INFO", "stats"))
    fields = dict(line.split(b":", 1) for line in info.split(b"\r\n") if b":" in line)
    return int(fields[b"keyspace_hits"]), int(fields[b"keyspace_misses"])


@pytest.mark.parametrize("cmd", [
    ("EXISTS", "a", "b", "a"), ("TYPE", "a"), ("TYPE", "b"), ("TTL", "a"), ("PTTL", "b"), ("EXPIRETIME", "a"),
    ("OBJECT", "ENCODING", "a"), ("OBJECT", "REFCOUNT", "b"), ("TOUCH", "a", "b"), ("COPY", "a", "c"),
    ("COPY", "b", "c"), ("RENAME", "a", "d"), ("MOVE", "a", "1"), ("EXPIRE", "a", "100"), ("PERSIST", "a"),
    ("DEL", "a", "b"), ("KEYS", "*"), ("RANDOMKEY",), ("SCAN", "0"), ("SCAN", "0", "TYPE", "string"),
    ("SCAN", "0", "MATCH", "z*", "TYPE", "string"),
])
def test_keyspace_hit_miss_accounting(diff2, cmd):
    """Which lookups count as keyspace hits/misses (INFO stats) follows Redis's lookup flags."""
    if not diff2.ours.call("INFO", "stats").startswith(b"$"):
        pytest.fail("raxdb lacks INFO")
    diff2("SET", "a", "1")
    before = [_hits_misses(conn) for conn in (diff2.ours, diff2.theirs)]
    diff2.both(*cmd)
    after = [_hits_misses(conn) for conn in (diff2.ours, diff2.theirs)]
    deltas = [(a[0] - b[0], a[1] - b[1]) for a, b in zip(after, before, strict=True)]
    assert deltas[0] == deltas[1], f"{cmd}: raxdb {deltas[0]} redis {deltas[1]}"
