"""Expiry against redis-server 7.0: EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT with NX|XX|GT|LT,
TTL / PTTL / EXPIRETIME / PEXPIRETIME, PERSIST, and lazy and active expiry.

No test sleeps for a key to expire: absolute times far in the future or in the past give
deterministic replies, and "it expires by itself" is awaited by polling with a bound.
"""

from __future__ import annotations

import re
import time

import pytest

from tests.support.diff import RawConnection, parse

FAR = 99999999999  # seconds: year 5138
FAR_MS = FAR * 1000


def _poll(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.005)


# ---- the option matrix --------------------------------------------------------------------------
@pytest.mark.parametrize("cmd,unit", [("EXPIREAT", 1), ("PEXPIREAT", 1000)])
def test_nx_xx_gt_lt_absolute(diff, cmd, unit):
    far = FAR_MS // unit
    diff("SET", "k", "v")
    diff(cmd, "k", str(far), "XX")  # no TTL yet
    diff(cmd, "k", str(far), "GT")  # no TTL counts as infinite: never greater
    diff(cmd, "k", str(far), "LT")  # ...and always less
    diff("PEXPIRETIME", "k")
    diff(cmd, "k", str(far + 10), "NX")  # has one now
    diff(cmd, "k", str(far + 10), "nx")
    diff(cmd, "k", str(far + 10), "XX")
    diff("PEXPIRETIME", "k")
    diff(cmd, "k", str(far + 10), "GT")  # equal is not greater
    diff(cmd, "k", str(far + 5), "GT")
    diff(cmd, "k", str(far + 20), "GT")
    diff(cmd, "k", str(far + 20), "LT")  # equal is not less
    diff(cmd, "k", str(far + 30), "LT")
    diff(cmd, "k", str(far + 1), "LT", "XX")
    diff(cmd, "k", str(far + 2), "GT", "XX", "gt")
    diff("PEXPIRETIME", "k")
    diff("PERSIST", "k")
    diff(cmd, "k", str(far), "NX")
    diff("PEXPIRETIME", "k")
    diff(cmd, "missing", str(far))
    diff(cmd, "missing", str(far), "NX")


@pytest.mark.parametrize("cmd", ["EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"])
def test_option_errors(diff, cmd):
    diff("SET", "k", "v")
    for opts in [("NX", "XX"), ("XX", "NX"), ("NX", "GT"), ("NX", "LT"), ("GT", "LT"), ("LT", "GT"),
                 ("NX", "GT", "LT"), ("GT", "LT", "NX"), ("FOO",), ("NX", "FOO"), ("FOO", "NX", "XX"),
                 ("nx", "nx"), ("xx", "XX", "Xx"), ("", ), ("a\x00b",), ("a\r\nb",), ("NX", "XX", "BAR")]:
        diff(cmd, "k", "100", *opts)
    # Options are checked before the number.
    diff(cmd, "k", "abc", "FOO")
    diff(cmd, "k", "abc", "NX", "XX")
    diff(cmd, "k", "abc")
    diff(cmd, "missing", "abc")
    diff("TTL", "k")
    diff(cmd, "k")
    diff(cmd)


@pytest.mark.parametrize("value", ["abc", "1.5", " 1", "1 ", "", "+1", "0x10", "9223372036854775808",
                                   "-9223372036854775809", "01"])
def test_not_an_integer(diff, value):
    diff("SET", "k", "v")
    for cmd in ("EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"):
        diff(cmd, "k", value)
        diff(cmd, "missing", value)
    diff("TTL", "k")


def test_overflow_is_invalid_expire_time(diff):
    diff("SET", "k", "v")
    cases = {
        "EXPIRE": ["9223372036854775", "9223372036854776", "-9223372036854775", "-9223372036854776",
                   "9223372036854775807", "-9223372036854775808", "9223372036854774"],
        "PEXPIRE": ["9223372036854775807", "9223372036854770000", "-9223372036854775808"],
        "EXPIREAT": ["9223372036854775", "9223372036854776", "-9223372036854775", "-9223372036854776",
                     "9223372036854775807"],
        "PEXPIREAT": ["9223372036854775807", "-9223372036854775808"],
    }
    for cmd, values in cases.items():
        for v in values:
            # On a missing key the range check still comes first.
            diff(cmd, "missing", v)
            diff("SET", "k", "v")
            diff(cmd, "k", v)
            diff("EXISTS", "k")
            diff("PEXPIRETIME", "k")


def test_past_time_deletes(diff):
    for cmd, value in [("EXPIRE", "-1"), ("EXPIRE", "0"), ("PEXPIRE", "-100"), ("PEXPIRE", "0"),
                       ("EXPIREAT", "1"), ("EXPIREAT", "-5"), ("PEXPIREAT", "1"), ("PEXPIREAT", "0")]:
        diff("SET", "k", "v")
        diff(cmd, "k", value)
        diff("EXISTS", "k")
        diff("TTL", "k")
    # With a flag that rejects it, nothing is deleted.
    diff("SET", "k", "v")
    diff("PEXPIREAT", "k", str(FAR_MS))
    diff("PEXPIREAT", "k", "1", "GT")
    diff("EXISTS", "k")
    diff("PEXPIREAT", "k", "1", "LT")
    diff("EXISTS", "k")
    diff("SET", "k", "v")
    diff("EXPIRE", "k", "-1", "XX")
    diff("EXISTS", "k")
    diff("EXPIRE", "k", "-1", "LT")  # no TTL is infinite: a negative time is less
    diff("EXISTS", "k")


def test_relative_expire_sets_ttl(diff):
    diff("SET", "k", "v")
    diff("EXPIRE", "k", "1000")
    diff("TTL", "k")
    ours, theirs = diff.both("PTTL", "k")
    for r in (ours, theirs):
        assert 998_000 <= parse(r) <= 1_000_000
    diff("PEXPIRE", "k", "500000")
    diff("TTL", "k")
    ours, theirs = diff.both("PEXPIRETIME", "k")
    now_ms = time.time() * 1000
    for r in (ours, theirs):
        assert abs(parse(r) - (now_ms + 500000)) < 5000
    ours, theirs = diff.both("EXPIRETIME", "k")
    assert abs(parse(ours) - parse(theirs)) <= 2


# ---- reading TTLs -------------------------------------------------------------------------------
def test_ttl_family(diff):
    for cmd in ("TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"):
        diff(cmd, "missing")
        diff("SET", "k", "v")
        diff(cmd, "k")
        diff(cmd)
        diff(cmd, "a", "b")
    # EXPIRETIME rounds the millisecond deadline to the nearest second.
    for ms in ["99999999999499", "99999999999500", "99999999999999", "99999999999001"]:
        diff("PEXPIREAT", "k", ms)
        diff("EXPIRETIME", "k")
        diff("PEXPIRETIME", "k")
    diff("EXPIREAT", "k", str(FAR))
    diff("EXPIRETIME", "k")
    ours, theirs = diff.both("TTL", "k")
    assert abs(parse(ours) - parse(theirs)) <= 1


def test_ttl_rounds_to_nearest_second(r):
    """Each PEXPIRE and its TTL in one transaction, so no time passes between them: 10.7 s rounds
    to 11 exactly (a loaded host's 400 ms between two round trips would make 10.9 s read 10)."""
    r.set("k", "v")
    for ms, ttl in ((10_400, 10), (10_700, 11), (10_900, 11)):
        pipe = r.pipeline(transaction=True)
        pipe.pexpire("k", ms)
        pipe.ttl("k")
        assert pipe.execute() == [True, ttl], ms


def test_persist(diff):
    diff("PERSIST", "missing")
    diff("SET", "k", "v")
    diff("PERSIST", "k")
    diff("PEXPIREAT", "k", str(FAR_MS))
    diff("PERSIST", "k")
    diff("TTL", "k")
    diff("PERSIST", "k")
    diff("PERSIST")
    diff("PERSIST", "a", "b")


def test_set_clears_and_keepttl_keeps(diff):
    diff("SET", "k", "v")
    diff("PEXPIREAT", "k", str(FAR_MS))
    diff("SET", "k", "w", "KEEPTTL")
    diff("PEXPIRETIME", "k")
    diff("SET", "k", "x")
    diff("PEXPIRETIME", "k")
    diff("PEXPIREAT", "k", str(FAR_MS))
    diff("APPEND", "k", "y")  # modifying the value keeps the TTL
    diff("PEXPIRETIME", "k")
    diff("INCR", "n")
    diff("PEXPIREAT", "n", str(FAR_MS))
    diff("INCR", "n")
    diff("PEXPIRETIME", "n")


# ---- lazy and active expiry ---------------------------------------------------------------------
def test_lazy_expiry_on_access(r):
    r.set("k", "v")
    r.pexpire("k", 1)
    _poll(lambda: r.get("k") is None)
    assert r.exists("k") == 0
    assert r.ttl("k") == -2


def test_expired_keys_invisible_everywhere(r):
    """A key past its deadline but not yet reclaimed is invisible to every command."""
    expired = [f"x{i}" for i in range(10)]
    r.mset({"b": "2", "c": "3", **{k: "1" for k in expired}})
    deadline = int(time.time() * 1000) + 30
    for k in expired:
        r.pexpireat(k, deadline)
    while time.time() * 1000 <= deadline + 2:  # wait on the clock without touching the keys
        time.sleep(0.001)
    pipe = r.pipeline(transaction=False)
    pipe.keys("*")
    pipe.exists("x0", "b")
    pipe.type("x1")
    pipe.object("encoding", "x2")
    pipe.copy("x3", "z")
    pipe.ttl("x4")
    pipe.get("x5")
    pipe.persist("x6")
    pipe.expire("x7", 100)
    pipe.scan(0, count=100)
    pipe.randomkey()
    keys, exists, typ, enc, copied, ttl, got, persisted, expired_again, scan, rnd = pipe.execute()
    assert sorted(keys) == [b"b", b"c"]
    assert (exists, typ, enc, copied, ttl, got, persisted, expired_again) == (1, b"none", None, 0, -2, None, 0, 0)
    assert sorted(scan[1]) == [b"b", b"c"]
    assert rnd in (b"b", b"c")
    with pytest.raises(Exception, match="no such key"):
        r.rename("x8", "y")


def test_active_expiry_reclaims_untouched_keys(r):
    """Keys nobody touches disappear on their own: DBSIZE does not look keys up."""
    r.mset({f"k{i}": "v" for i in range(300)})
    r.set("keep", "v")
    pipe = r.pipeline(transaction=False)
    for i in range(300):
        pipe.pexpire(f"k{i}", 1)
    pipe.execute()
    _poll(lambda: r.dbsize() == 1)
    assert r.keys("*") == [b"keep"]


def test_active_expiry_in_every_db(raxdb):
    c = RawConnection(raxdb.port)
    try:
        c.call("FLUSHALL")
        for db in ("0", "5", "15"):
            c.call("SELECT", db)
            c.call("SET", "k", "v")
            c.call("PEXPIRE", "k", "1")
        for db in ("0", "5", "15"):
            c.call("SELECT", db)
            _poll(lambda: c.call("DBSIZE") == b":0\r\n")
    finally:
        c.close()


def test_ttl_changes_do_not_confuse_active_expiry(r):
    """Lengthened, persisted and re-set TTLs leave stale heap entries that must be ignored."""
    soon = int(time.time() * 1000) + 1000  # far enough that the changes below land first
    r.set("lengthened", "v")
    r.pexpireat("lengthened", soon)
    r.pexpireat("lengthened", FAR_MS)
    r.set("persisted", "v")
    r.pexpireat("persisted", soon)
    r.persist("persisted")
    r.set("reset", "v")
    r.pexpireat("reset", soon)
    r.set("reset", "w")
    r.set("marker", "v")
    r.pexpireat("marker", soon + 200)  # its deadline comes after the stale ones
    assert r.dbsize() == 4
    _poll(lambda: r.dbsize() == 3)  # DBSIZE touches no key: this is the active cycle
    assert sorted(r.keys("*")) == [b"lengthened", b"persisted", b"reset"]
    assert r.pttl("persisted") == -1
    assert r.pttl("reset") == -1
    assert r.pexpiretime("lengthened") == FAR_MS


def test_del_of_expired_key_counts_zero(r):
    r.mset({"a": "1", "b": "2"})
    r.pexpire("a", 1)
    _poll(lambda: r.pttl("a") == -2)
    assert r.delete("a", "b") == 1


# ---- the active expire cycle (server/events/expirecycle.py) ------------------------------------------
def test_keys_written_under_load_are_reclaimed_by_the_server(fresh):
    """SET ... PX 100 in pipelined batches to both servers, interleaved, for a write load: with no
    command looking any key up again, DBSIZE (which looks none up) reaches 0 on both, each key
    counted expired once; then INFO's expire cycle figures are sane, and CONFIG RESETSTAT zeroes
    the stale estimate and the time cap count on both."""
    import redis

    conns = [redis.Redis(port=s.port) for s in fresh]
    batches, per_batch = 40, 1000
    try:
        for b in range(batches):
            for c in conns:
                pipe = c.pipeline(transaction=False)
                for i in range(per_batch):
                    pipe.set(f"k{b}:{i}", "v", px=100)
                pipe.execute()
        for c in conns:
            _poll(lambda c=c: c.dbsize() == 0, timeout=120)
        for c in conns:
            stats = c.info("stats")
            assert stats["expired_keys"] == batches * per_batch
            assert 0 <= stats["expired_stale_perc"] <= 100
            assert stats["expired_time_cap_reached_count"] >= 0
            assert stats["expire_cycle_cpu_milliseconds"] >= 0
        for s in fresh:
            raw = RawConnection(s.port)
            try:
                text = parse(raw.call("INFO", "stats"))
                assert re.search(rb"\r\nexpired_stale_perc:\d+\.\d\d\r\n", text)
                assert re.search(rb"\r\nexpired_time_cap_reached_count:\d+\r\n", text)
                assert re.search(rb"\r\nexpire_cycle_cpu_milliseconds:\d+\r\n", text)
                assert raw.call("CONFIG", "RESETSTAT") == b"+OK\r\n"
                text = parse(raw.call("INFO", "stats"))  # no key has a deadline: no cycle samples any
                assert b"\r\nexpired_stale_perc:0.00\r\n" in text
                assert b"\r\nexpired_time_cap_reached_count:0\r\n" in text
            finally:
                raw.close()
    finally:
        for c in conns:
            c.close()


def test_active_expire_effort_bounds(diff):
    try:
        for value in ("0", "11", "-1", "abc", "1.5", "", "10", "1", "5", "010"):
            diff("CONFIG", "SET", "active-expire-effort", value)
            diff("CONFIG", "GET", "active-expire-effort")
        diff("CONFIG", "SET", "active-expire-effort")
    finally:
        diff("CONFIG", "SET", "active-expire-effort", "1")


@pytest.mark.parametrize("effort", ["1", "10"])
def test_active_expiry_at_each_effort(r, effort):
    """Keys nobody touches go at the lowest and the highest effort."""
    r.config_set("active-expire-effort", effort)
    try:
        pipe = r.pipeline(transaction=False)
        for i in range(2000):
            pipe.set(f"e{i}", "v", px=1)
        pipe.execute()
        _poll(lambda: r.dbsize() == 0)
    finally:
        r.config_set("active-expire-effort", "1")


def test_keyspace_avg_ttl_is_the_expire_cycles_running_average(fresh):
    """INFO keyspace's avg_ttl is what the active expire cycle measured (Redis's db->avg_ttl), not
    an estimate made by INFO: 0 while no cycle has sampled a key, then a running average of the
    remaining TTLs within them; 0 again after FLUSHALL; SWAPDB takes it along with the keys; a db
    whose deadlines are all gone reads 0 once a cycle visits it."""
    import redis

    def ks(c, db: int = 0) -> dict:
        return c.info("keyspace").get(f"db{db}", {})

    for s in fresh:
        c = redis.Redis(port=s.port)
        try:
            c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
            c.set("plain", "v")
            for i in range(30):
                c.set(f"t{i}", "v", ex=1000)
            assert ks(c) == {"keys": 31, "expires": 30, "avg_ttl": 0}  # no cycle has run
            c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
            _poll(lambda c=c: ks(c)["avg_ttl"] > 0)
            assert 0 < ks(c)["avg_ttl"] <= 1_000_000
            c.swapdb(0, 1)
            assert ks(c, 1)["avg_ttl"] > 0 and ks(c) == {}
            c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
            c.swapdb(0, 1)
            c.delete(*[f"t{i}" for i in range(30)])
            assert ks(c)["expires"] == 0 and ks(c)["avg_ttl"] > 0  # kept until a cycle looks
            c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
            _poll(lambda c=c: ks(c)["avg_ttl"] == 0)
            c.set("t", "v", ex=1000)
            _poll(lambda c=c: ks(c)["avg_ttl"] > 0)
            c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
            c.flushall()
            c.set("t", "v", ex=1000)
            assert ks(c) == {"keys": 1, "expires": 1, "avg_ttl": 0}
        finally:
            c.close()
