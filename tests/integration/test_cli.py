"""redis-cli against raxdb, as a user would drive it, compared with redis-server where output is
deterministic: plain commands, RESP3 (-3), mass insertion (--pipe), --scan, and -x (last argument
from stdin)."""

from __future__ import annotations

import subprocess

import pytest


def cli(port: int, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["redis-cli", "-p", str(port), *args], input=stdin, capture_output=True, timeout=120)


@pytest.fixture
def ports(raxdb, oracle):
    for p in (raxdb.port, oracle.port):
        cli(p, "FLUSHALL")
    return raxdb.port, oracle.port


def both(ports, *args: str, stdin: bytes | None = None) -> bytes:
    ours, theirs = (cli(p, *args, stdin=stdin) for p in ports)
    assert (ours.stdout, ours.returncode) == (theirs.stdout, theirs.returncode), args
    return ours.stdout


@pytest.mark.parametrize("proto", [[], ["-3"]], ids=["resp2", "resp3"])
def test_plain_commands(ports, proto):
    both(ports, *proto, "SET", "k", "v")
    both(ports, *proto, "GET", "k")
    both(ports, *proto, "HSET", "h", "a", "1", "b", "2")
    both(ports, *proto, "HGETALL", "h")
    both(ports, *proto, "ZADD", "z", "1.5", "m")
    both(ports, *proto, "ZRANGE", "z", "0", "-1", "WITHSCORES")
    both(ports, *proto, "INCRBYFLOAT", "f", "0.1")
    both(ports, *proto, "NOSUCH")
    both(ports, *proto, "GET")
    both(ports, *proto, "XADD", "s", "1-1", "a", "b")
    both(ports, *proto, "XRANGE", "s", "-", "+")
    ours, theirs = (cli(p, *proto, "HELLO", "3").stdout.split(b"\n") for p in ports)
    assert [x for x in ours if not x.startswith(b"id ")] == [x for x in theirs if not x.startswith(b"id ")]


def test_pipe_mass_insertion(ports):
    n = 100_000
    payload = b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\nkey:%d\r\n$%d\r\nval:%d\r\n" % (len(b"key:%d" % i), i,
                                                                                   len(b"val:%d" % i), i)
                       for i in range(n))
    out = [cli(p, "--pipe", stdin=payload) for p in ports]
    for o in out:
        assert o.returncode == 0, o.stderr
        assert b"errors: 0, replies: %d" % n in o.stdout
    assert both(ports, "DBSIZE").strip() == str(n).encode()
    both(ports, "GET", "key:99999")


def test_scan(ports):
    for p in ports:
        cli(p, "MSET", *sum(([f"user:{i}", "x"] for i in range(500)), []))
        cli(p, "SET", "other", "y")
    ours, theirs = (sorted(cli(p, "--scan", "--pattern", "user:*").stdout.split()) for p in ports)
    assert ours == theirs and len(ours) == 500
    ours, theirs = (sorted(cli(p, "--scan").stdout.split()) for p in ports)
    assert ours == theirs and len(ours) == 501


def test_x_last_argument_from_stdin(ports):
    blob = b"line one\nline two\x00binary\xff"
    both(ports, "-x", "SET", "blob", stdin=blob)
    both(ports, "GET", "blob")
    both(ports, "STRLEN", "blob")


def test_eval_from_cli(ports):
    both(ports, "EVAL", "return {1, 'two', 3.5, {err='oops'}}", "0")
