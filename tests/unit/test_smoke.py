"""First contact: the server answers like redis-server for the basics, in both protocols."""

import pytest

pytestmark = pytest.mark.pure


def test_ping_echo(diff):
    diff("PING")
    diff("PING", "hello")
    diff("ECHO", "a\r\nb")
    diff("ping")


def test_set_get(diff):
    diff("SET", "k", "v")
    diff("GET", "k")
    diff("GET", "missing")
    diff("SET", "k", "v", "NX")
    diff("SET", "k", "w", "XX", "GET")
    diff("SET", "k", "v", "EX", "0")
    diff("SET", "k", "v", "EX", "abc")
    diff("SET", "k", "v", "PX", "100", "EX", "100")
    diff("SET", "k", "v", "KEEPTTL", "EX", "100")
    diff("SET", "k")


def test_unknown_and_arity(diff):
    diff("NOSUCHCOMMAND", "a", "b")
    diff("GET")
    diff("GET", "a", "b")
    diff("x" * 300, "y" * 300)


def test_incr(diff):
    diff("INCR", "n")
    diff("INCRBY", "n", "10")
    diff("DECRBY", "n", "-9223372036854775808")
    diff("SET", "n", "9223372036854775807")
    diff("INCR", "n")
    diff("SET", "s", "abc")
    diff("INCR", "s")
    diff("INCRBY", "n", "01")


def test_pipeline_mixed_inline(diff):
    ours, theirs = diff.raw(b"PING\r\n")
    assert ours == theirs
    data = b"*1\r\n$4\r\nPING\r\nECHO \"a\\x41\"\r\n"
    diff.ours.send(data)
    diff.theirs.send(data)
    for _ in range(2):
        assert diff.ours.read_frame() == diff.theirs.read_frame()


def test_protocol_errors_close_connection(raxdb, oracle):
    from tests.support.diff import RawConnection

    for bad in [b"*abc\r\n", b"*1\r\n:1\r\n", b"*1\r\n$-1\r\n", b"*1\r\n$999999999999\r\n",
                b'"unbalanced\r\n', b"*3000000000\r\n", b"*1\r\n$4\r\nPING\r\n*1\r\n+PING\r\n"]:
        replies = []
        for port in (raxdb.port, oracle.port):
            c = RawConnection(port)
            c.send(bad)
            frames = []
            try:
                while True:
                    frames.append(c.read_frame())
            except ConnectionError:
                pass
            c.close()
            replies.append(frames)
        assert replies[0] == replies[1], bad


def test_unknown_subcommand(diff):
    diff("OBJECT", "NOSUCH", "a")
    diff("CONFIG", "nosuch")
    diff("CONFIG")
    diff("object", "x" * 200)


def test_unknown_subcommand_of_stream_containers(diff):
    diff("XGROUP", "FOO")
    diff("XINFO", "FOO", "bar")
    diff("XGROUP")
