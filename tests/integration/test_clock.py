"""The clock a test can move (issue #55): DEBUG CLOCK and the handle's advance_time / freeze_time /
unfreeze_time / reset_time, through the public API of a server raxdb.serve() started.

Each test starts from the wall clock (the fixture resets it after the test) and asserts what
moving the clock does at once, before the control returns: keys expire (by the active cycle, with
their notifications), blocked clients time out with Redis's replies, idle times grow, TIME moves,
a CLIENT PAUSE ends, and `*` stream IDs never go back.  Nothing here waits for time to pass, but
the two tests that show a frozen clock holds (they let 150 ms of real time go by).
"""

from __future__ import annotations

import time

import pytest
import redis

import raxdb
from raxdb.embed.control import ControlError
from tests.support.diff import RawConnection, encode_command, parse


@pytest.fixture(scope="module")
def server():
    with raxdb.serve() as srv:
        yield srv


@pytest.fixture
def srv(server):
    redis.Redis.from_url(server.url).flushall()
    yield server
    server.reset_time()


@pytest.fixture
def r(srv):
    client = redis.Redis.from_url(srv.url)
    yield client
    client.close()


def await_blocked(r: redis.Redis, n: int) -> None:
    for _ in range(2000):
        if r.info("clients")["blocked_clients"] == n:
            return
        time.sleep(0.002)
    raise AssertionError(f"blocked_clients never reached {n}")


def raxdb_serve_debug():
    return raxdb.serve(config={"enable-debug-command": "yes"})


def clock(srv) -> dict[bytes, int]:
    reply = srv.control("CLOCK", "GET")
    return dict(zip(reply[::2], reply[1::2], strict=True))


def test_a_key_with_ex_10_is_gone_after_advancing_11_seconds(srv, r):
    r.config_set("notify-keyspace-events", "Ex")
    sub = r.pubsub()
    sub.subscribe("__keyevent@0__:expired")
    assert sub.get_message(timeout=5)["type"] == "subscribe"
    r.set("k", "v", ex=10)
    r.set("stays", "v", ex=12)
    srv.advance_time(11)
    assert r.dbsize() == 1  # deleted by the expire cycle (DBSIZE counts without looking keys up)
    assert r.get("k") is None and r.ttl("stays") == 1
    assert sub.get_message(timeout=5)["data"] == b"k"
    sub.close()
    r.config_set("notify-keyspace-events", "")


def test_ttl_7_after_advancing_3_seconds(srv, r):
    srv.freeze_time()
    r.set("k", "v", ex=10)
    srv.advance_time(3)
    assert r.ttl("k") == 7
    assert r.pttl("k") == 7000  # frozen: not a millisecond passes between the two
    srv.advance_time(6.999)
    assert r.pttl("k") == 1
    srv.advance_time(0.001)
    assert r.exists("k") == 0


def test_a_frozen_clock_expires_nothing_and_still_serves(srv, r):
    srv.freeze_time()
    r.set("k", "v", px=50)
    time.sleep(0.15)  # real time passes; the server's does not
    assert r.get("k") == b"v" and r.pttl("k") == 50
    srv.unfreeze_time()  # the time it stood still is caught up: the key is past its deadline
    assert r.dbsize() == 0


def test_blpop_30_answered_nil_right_after_advancing_31(srv, r):
    for resp, nil in ((2, b"*-1\r\n"), (3, b"_\r\n")):
        conn = RawConnection(srv.port)
        if resp == 3:
            conn.call("HELLO", "3")
        conn.send(encode_command(["BLPOP", "nokey", "30"]))
        await_blocked(r, 1)
        srv.advance_time(31)
        assert conn.read_frame() == nil  # answered before advance_time returned: no wait
        assert r.info("clients")["blocked_clients"] == 0
        conn.close()


def test_a_frozen_clock_times_no_blocked_client_out(srv, r):
    srv.freeze_time()
    conns = [RawConnection(srv.port) for _ in range(3)]
    conns[0].send(encode_command(["BRPOP", "nokey", "0.05"]))
    conns[1].send(encode_command(["XREAD", "BLOCK", "50", "STREAMS", "s", "$"]))
    conns[2].send(encode_command(["BZPOPMIN", "z", "0.2"]))
    await_blocked(r, 3)
    time.sleep(0.15)  # past two of the deadlines in real time
    assert r.info("clients")["blocked_clients"] == 3
    srv.advance_time(0.05)  # the clock reads the deadline: not past it yet (Redis's `timeout < now`)
    assert r.info("clients")["blocked_clients"] == 3
    srv.advance_time(0.001)
    assert conns[0].read_frame() == b"*-1\r\n" and conns[1].read_frame() == b"*-1\r\n"
    assert r.info("clients")["blocked_clients"] == 1
    srv.advance_time(0.2)
    assert conns[2].read_frame() == b"*-1\r\n"
    for c in conns:
        c.close()


def test_wait_and_client_pause_end_when_the_clock_passes_them(srv, r):
    conn = RawConnection(srv.port)
    conn.send(encode_command(["WAIT", "1", "60000"]))
    await_blocked(r, 1)
    srv.advance_time(61)
    assert conn.read_frame() == b":0\r\n"
    r.client_pause(100_000, all=False)  # WRITE: writes wait, reads go on
    conn.send(encode_command(["SET", "k", "v"]))
    assert r.get("k") is None
    srv.advance_time(100)
    assert conn.read_frame() == b"+OK\r\n"
    conn.close()


def test_idle_times_grow_and_idle_clients_are_closed(srv, r):
    r.set("k", "v")
    srv.freeze_time()
    idle = RawConnection(srv.port)
    idle.call("CLIENT", "SETNAME", "idler")
    srv.advance_time(100)
    assert r.object("idletime", "k") == 100
    (line,) = [c for c in r.client_list() if c["name"] == "idler"]
    assert int(line["idle"]) == 100
    r.config_set("timeout", 150)
    try:
        srv.advance_time(51)  # idle 151 s > timeout: closed now, not at the next cron's visit
        with pytest.raises(ConnectionError):
            idle.call("PING")
        assert [c for c in r.client_list() if c["name"] == "idler"] == []
    finally:
        r.config_set("timeout", 0)


def test_time_moves_with_the_clock(srv, r):
    srv.freeze_time()
    before = r.time()
    assert r.time() == before  # frozen: not a microsecond passes
    srv.advance_time(5.25)
    after = r.time()
    assert (after[0] * 10**6 + after[1]) - (before[0] * 10**6 + before[1]) == 5_250_000
    assert clock(srv)[b"frozen"] == 1


def test_stream_ids_never_go_back_when_the_clock_does(srv, r):
    ids = [r.xadd("s", {"f": "v"})]
    srv.freeze_time()
    srv.advance_time(3600)
    ids.append(r.xadd("s", {"f": "v"}))
    assert int(ids[1].split(b"-")[0]) >= int(ids[0].split(b"-")[0]) + 3_600_000
    srv.unfreeze_time()
    ids.append(r.xadd("s", {"f": "v"}))
    srv.reset_time()  # back on the wall clock: an hour back
    assert clock(srv)[b"ahead-us"] < 3_600_000_000
    ids.append(r.xadd("s", {"f": "v"}))
    ids.append(r.xadd("s", {"f": "v"}))
    as_pairs = [tuple(int(p) for p in i.split(b"-")) for i in ids]
    assert as_pairs == sorted(as_pairs) and len(set(as_pairs)) == len(as_pairs)
    assert as_pairs[-1][0] == as_pairs[-2][0] == as_pairs[2][0]  # the last ms, its sequence counting on


def await_info(r: redis.Redis, field: str, value: int) -> None:
    for _ in range(2500):
        if r.info("persistence")[field] == value:
            return
        time.sleep(0.002)
    raise AssertionError(f"{field} never reached {value}")


def test_a_bgsave_s_seconds_are_seconds_of_the_clock(srv, r):
    """INFO's rdb_current_bgsave_time_sec and rdb_last_bgsave_time_sec are whole seconds of the
    server's clock since the fork's second (Redis's time(NULL) differences): moving the clock
    moves them, and a frozen clock holds them."""
    for i in range(5):
        r.set(f"k{i}", "v")
    srv.freeze_time()
    srv.advance_time((10**6 - clock(srv)[b"now-us"] % 10**6 + 250_000) / 1e6)  # a quarter past a second
    r.config_set("rdb-key-save-delay", 100000)  # 100 ms a key: the child outlasts the INFOs
    try:
        assert r.bgsave()
        info = r.info("persistence")
        assert info["rdb_bgsave_in_progress"] == 1 and info["rdb_current_bgsave_time_sec"] == 0
        srv.advance_time(2.5)  # .75 past the fork's second + 2
        assert r.info("persistence")["rdb_current_bgsave_time_sec"] == 2
        srv.advance_time(0.5)
        assert r.info("persistence")["rdb_current_bgsave_time_sec"] == 3
        await_info(r, "rdb_bgsave_in_progress", 0)
        info = r.info("persistence")
        assert info["rdb_last_bgsave_time_sec"] == 3 and info["rdb_current_bgsave_time_sec"] == -1
    finally:
        r.config_set("rdb-key-save-delay", 0)


def test_unfreeze_keeps_what_was_advanced(srv):
    srv.freeze_time()
    srv.advance_time(1000)
    srv.unfreeze_time()
    state = clock(srv)
    assert state[b"frozen"] == 0 and state[b"ahead-us"] >= 1000 * 10**6 - 1000
    srv.reset_time()
    assert abs(clock(srv)[b"ahead-us"]) < 10**6


def test_bad_arguments_are_refused(srv):
    for args, text in ((("ADVANCE", "-1"), "only moves forward"), (("ADVANCE", "soon"), "takes seconds"),
                       (("ADVANCE", "inf"), "takes seconds"), (("ADVANCE",), "syntax error"),
                       (("STOP",), "syntax error"), ((), "syntax error")):
        with pytest.raises(ControlError, match=text):
            srv.control("CLOCK", *args)


def test_listed_in_debug_help_and_refused_without_the_controls(raxdb):
    with raxdb_serve_debug() as on:  # DEBUG HELP is DEBUG's: it needs enable-debug-command, the controls do not
        lines = redis.Redis.from_url(on.url, decode_responses=True).execute_command("DEBUG", "HELP")
    assert "CLOCK ADVANCE <seconds>" in lines
    conn = RawConnection(raxdb.port)  # the suite's server: started without the test controls
    try:
        reply = str(parse(conn.call("DEBUG", "CLOCK", "ADVANCE", "1")))
        assert "raxdb test control" in reply and "raxdb-test-controls yes" in reply
        assert not any(b"CLOCK" in line for line in parse(conn.call("DEBUG", "HELP")))
    finally:
        conn.close()
