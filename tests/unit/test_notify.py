"""Keyspace notifications against redis-server 7.0: each server pair is started with a given
notify-keyspace-events; a subscriber collects every __keyspace@N__ / __keyevent@N__ message a
command produces (up to a sync message published right after it) and both servers must agree."""

from __future__ import annotations

import pytest

from raxdb.server.events.notify import format_flags, parse_flags
from tests.support.diff import RawConnection, encode_command
from tests.support.servers import start_raxdb, start_redis

SYNC = b"*3\r\n$7\r\nmessage\r\n$4\r\nsync\r\n$1\r\n.\r\n"


@pytest.mark.parametrize("given, shown", [
    ("KEA", "AKE"), ("AKE", "AKE"), ("Kg", "gK"), ("Eg", "gE"), ("g$lshzxetd", "A"), ("KEx", "xKE"),
    ("m", "m"), ("n", "n"), ("Km", "Km"), ("KEAmn", "AKEm"), ("", ""), ("K", "K"), ("Ed", "dE"),
    ("Et$", "$tE"), ("gn", "gn"), ("Kn", "nK"), ("dtezhxsl$g", "A"), ("Edn", "dnE"), ("mnKE", "nKEm"),
])
def test_flags_normal_form(given, shown):
    assert format_flags(parse_flags(given)) == shown


def test_invalid_flag_character():
    assert parse_flags("KEAq") is None


@pytest.fixture(scope="module", params=["KEA", "Kl", "E$x", "KEgm", "KEAn", "En"])
def pair(request):
    flags = request.param
    ours = start_raxdb("--notify-keyspace-events", flags)
    try:
        theirs = start_redis("--notify-keyspace-events", flags)
    except Exception:
        ours.stop()
        raise
    yield ours, theirs
    ours.stop()
    theirs.stop()


def _session(port: int, commands) -> list:
    sub, pub = RawConnection(port), RawConnection(port)
    try:
        pub.call("FLUSHALL")
        sub.call("PSUBSCRIBE", "__key*__:*")
        sub.call("SUBSCRIBE", "sync")
        out = []
        for cmd in commands:
            if cmd[0] == "AWAIT":  # wait for one message (expiry happens on its own)
                out.append(sub.read_frame())
                continue
            out.append(pub.call(*cmd))
            pub.send(encode_command(("PUBLISH", "sync", ".")))
            pub.read_frame()
            while True:
                frame = sub.read_frame()
                if frame == SYNC:
                    break
                out.append(frame)
        return out
    finally:
        sub.close()
        pub.close()


def check(pair, commands) -> None:
    ours, theirs = pair
    a, b = _session(ours.port, commands), _session(theirs.port, commands)
    assert a == b, f"\n  raxdb: {a!r}\n  redis: {b!r}"


@pytest.mark.oracle
def test_string_and_generic_events(pair):
    check(pair, [
        ("SET", "k", "v"), ("SET", "k", "v", "EX", "100"), ("APPEND", "k", "x"), ("INCR", "n"),
        ("INCRBYFLOAT", "n", "1.5"), ("DECRBY", "n", "2"), ("SETRANGE", "k", "1", "zz"), ("GETDEL", "k"),
        ("MSET", "a", "1", "b", "2"), ("DEL", "a", "b", "nokey"), ("GET", "missing"), ("SET", "k", "v"),
        ("EXPIRE", "k", "100"), ("PERSIST", "k"), ("RENAME", "k", "k2"), ("COPY", "k2", "k3"),
        ("MOVE", "k3", "2"), ("GETEX", "k2", "PX", "5000"), ("EXPIRE", "k2", "0"),
    ])


@pytest.mark.oracle
def test_other_databases(pair):
    check(pair, [("SELECT", "3"), ("SET", "k", "v"), ("DEL", "k"), ("SELECT", "0")])


@pytest.mark.oracle
def test_list_and_set_events(pair):
    check(pair, [
        ("RPUSH", "l", "a", "b", "c"), ("LPOP", "l"), ("LSET", "l", "0", "x"), ("LTRIM", "l", "0", "0"),
        ("RPOP", "l"), ("SADD", "s", "a", "b"), ("SREM", "s", "a"), ("SPOP", "s"),
    ])


@pytest.mark.oracle
def test_expired_event(pair):
    ours, theirs = pair
    results = []
    for srv in (ours, theirs):
        sub, pub = RawConnection(srv.port), RawConnection(srv.port)
        try:
            pub.call("FLUSHALL")
            sub.call("PSUBSCRIBE", "__key*__:*")
            pub.call("SET", "gone", "v", "PX", "20")
            pub.call("SET", "stays", "v")
            # Wait for the cron (or a lookup) to reclaim it; then one sync message ends the list.
            while pub.call("EXISTS", "gone") != b":0\r\n":
                pass
            pub.call("PUBLISH", "__keyevent@0__:sync", ".")
            out = []
            while True:
                frame = sub.read_frame()
                out.append(frame)
                if b"sync" in frame:
                    break
            results.append(out)
        finally:
            sub.close()
            pub.close()
    assert results[0] == results[1]


@pytest.mark.oracle
def test_hash_zset_stream_events(pair):
    check(pair, [
        ("HSET", "h", "a", "1", "b", "2"), ("HINCRBY", "h", "a", "2"), ("HINCRBYFLOAT", "h", "a", "0.5"),
        ("HDEL", "h", "a"), ("HDEL", "h", "b"), ("HSETNX", "h", "c", "1"),
        ("ZADD", "z", "1", "a", "2", "b"), ("ZINCRBY", "z", "2", "a"), ("ZREM", "z", "a"),
        ("ZPOPMIN", "z"), ("ZADD", "z", "1", "x"), ("ZREMRANGEBYSCORE", "z", "0", "5"),
        ("XADD", "s", "1-1", "f", "v"), ("XTRIM", "s", "MAXLEN", "0"), ("XGROUP", "CREATE", "s", "g", "$"),
        ("XGROUP", "CREATECONSUMER", "s", "g", "c"), ("XGROUP", "DELCONSUMER", "s", "g", "c"),
        ("XGROUP", "DESTROY", "s", "g"), ("XDEL", "s", "1-1"), ("XSETID", "s", "5-5"),
    ])


@pytest.mark.oracle
def test_new_key_events_follow_config_set():
    """'n' is kept in the flags even where CONFIG GET cannot show it ("KEAn" reads back "AKE"), and
    switching between two values that print alike still turns "new" events on and off."""
    def flags(f):
        return ("CONFIG", "SET", "notify-keyspace-events", f)
    commands = [
        ("SET", "a", "1"), flags("KEAn"), ("CONFIG", "GET", "notify-keyspace-events"), ("SET", "b", "1"),
        ("SET", "b", "2"), ("RENAME", "b", "a"), ("COPY", "a", "c"), ("MOVE", "c", "1"), ("RPUSH", "l", "x"),
        ("MSET", "m1", "1", "a", "2", "m2", "3"), ("SORT", "l", "ALPHA", "STORE", "s"),
        flags("KEA"), ("CONFIG", "GET", "notify-keyspace-events"), ("SET", "d", "1"),
        flags("KEAn"), ("SET", "e", "1"), flags("n"), ("SET", "f", "1"), flags("nK"), ("SET", "g", "1"),
    ]
    ours, theirs = start_raxdb(), start_redis()
    try:
        check((ours, theirs), commands)
    finally:
        ours.stop()
        theirs.stop()
