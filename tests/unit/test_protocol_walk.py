"""The request path's own walk over whole multibulk commands (protocol/multibulk.py), and the
fast loop's hand-over from it to hiredis and the exact parser.

The walk alone: what it takes (argv, position) and what it leaves to the other parsers.  Then
differential: random pipelines of commands (arguments holding CRLF and frame-like bytes, empty
ones, ones over FEED_SLICE and over the big-argument threshold, inline commands and empty
commands between them) run by a `Client` in process, the bytes cut in two at every boundary
(around a big argument's payload, at a sample of them) and one byte per read, must answer
byte for byte what redis-server answers to the whole pipeline.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raxdb.protocol.hiredis_limits import MAX_ELEMENTS
from raxdb.protocol.multibulk import HeldCommand, MultibulkWalk, frames_biggest
from raxdb.protocol.request import BIG_ARG, RequestParser
from tests.support.diff import RawConnection, encode_command
from tests.support.transport import SinkTransport


def _walk_all(buf: bytes) -> tuple[list[list[bytes]], int]:
    w = MultibulkWalk(buf)
    out = []
    while (argv := w.next()) is not None:
        out.append(argv)
    return out, w.pos


def test_walk_takes_whole_commands_and_stops_at_a_boundary():
    a = encode_command(["SET", "k", "a\r\nb"]) + encode_command(["ECHO", ""]) + encode_command(["PING"])
    tail = b"*2\r\n$3\r\nGET\r\n$1\r\n"
    assert _walk_all(a + tail) == ([[b"SET", b"k", b"a\r\nb"], [b"ECHO", b""], [b"PING"]], len(a))
    w = MultibulkWalk(a, 5)  # a position that is not a boundary: '$' where '*' must be
    assert w.next() is None and w.pos == 5


REFUSED = [
    b"*0\r\n", b"*-1\r\n", b"*01\r\n$4\r\nPING\r\n", b"*1\r\n$04\r\nPING\r\n", b"*+1\r\n$4\r\nPING\r\n",
    b"*1\r\n$+4\r\nPING\r\n", b"*1 \r\n$4\r\nPING\r\n", b"*1\n$4\r\nPING\r\n", b"*1\r\n$4\nPING\r\n",
    b"*1\r\n$-1\r\n", b"*1\r\n+PING\r\n", b"*1\r\n:1\r\n", b"*\r\n", b"*1\r\n$\r\n", b"PING\r\n", b"\r\n",
    b"*1\r\n*1\r\n$4\r\nPING\r\n", b"~1\r\n$4\r\nPING\r\n", b"*1\r\n$%d\r\n" % BIG_ARG + b"x" * BIG_ARG + b"\r\n",
    b"*%d\r\n" % (MAX_ELEMENTS + 1) + b"$0\r\n\r\n" * (MAX_ELEMENTS + 1), b"*1\r\n$1234567890123456789\r\n", b"*1234567890123456789\r\n",
    # partial: every proper prefix of a command
    *(encode_command(["SET", "key", "value"])[:i] for i in range(1, 33)),
]


@pytest.mark.parametrize("frame", REFUSED, ids=[str(i) for i in range(len(REFUSED))])
def test_walk_leaves_everything_else_to_the_other_parsers(frame):
    ok = encode_command(["PING"])
    assert _walk_all(ok + frame) == ([[b"PING"]], len(ok))


@pytest.mark.parametrize("count", [1, 2, 3, 9, 21, 67, 300])
def test_walk_slices_each_argument_where_its_header_says(count):
    # each slot of the new argv filled once, in order (compiled, a PyList_New's NULL slots each
    # given its bytes): lengths of 0 to 4 digits, data holding CRLF and '$'
    args = [(b"%d\r\n$" % i) * (i % 7) + b"x" * (i * 37 % 1200) for i in range(count)]
    cmd = encode_command(args)
    assert _walk_all(cmd + cmd) == ([args, args], 2 * len(cmd))
    # and a held command's, made once its end has come (HeldCommand.argv)
    w = MultibulkWalk(cmd[: len(cmd) // 2])
    assert w.next() is None and w.short
    held = HeldCommand(w)
    rest = cmd[len(cmd) // 2 :]
    end = held.take(rest)
    assert end == len(rest) and held.argv(rest, end) == args


def test_walk_limits_are_inclusive_below():
    big = b"y" * (BIG_ARG - 1)
    assert _walk_all(encode_command([big]))[0] == [[big]]
    most = b"*%d\r\n" % MAX_ELEMENTS + b"$0\r\n\r\n" * MAX_ELEMENTS
    assert _walk_all(most) == ([[b""] * MAX_ELEMENTS], len(most))
    # the CRLF after a bulk's data is skipped unread, as Redis and hiredis skip it
    assert _walk_all(b"*1\r\n$1\r\naXY*1\r\n$1\r\nb\r\n")[0] == [[b"a"], [b"b"]]


REST = [
    (b"", 0),
    (encode_command(["SET", "k", "v" * 40]) + encode_command(["PING"]), 40),
    (b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\nxx", 100000),  # a big bulk arriving
    (b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10000", 3),  # a header line not ended: as far as it goes
    (b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10000\r", 3),
    (b"*1\r\n$1\r\naXY*1\r\n$2\r\nbb\r\n", 2),  # the CRLF after a bulk's data skipped unread
    (b"*0\r\n*1\r\n$%d\r\n" % BIG_ARG + b"x" * BIG_ARG + b"\r\n", BIG_ARG),  # *0, and a bulk over the walk's limit
    (b"*" + b"9" * 18 + b"\r\n$1\r\n", 1),
    (b"*1\r\n$4\r\nPING\r\n~1\r\n", -1), (b"*1\r\n+PING\r\n", -1), (b"*1\r\n$04\r\n", -1),
    (b"PING\r\n", -1), (b"*1\r\n$" + b"1" * 19, -1), (b"*1\r\n$-1\r\n", -1), (b"*1\n", -1), (b"*1\r\r", -1),
]


@pytest.mark.parametrize(("buf", "biggest"), REST, ids=[str(i) for i in range(len(REST))])
def test_rest_reads_the_headers_as_far_as_they_go(buf, biggest):
    assert frames_biggest(buf) == biggest
    ok = encode_command(["ECHO", "x" * 50])
    w = MultibulkWalk(ok + buf, len(ok))
    assert w.rest() == biggest and w.pos == len(ok)


def test_rest_reads_on_from_where_the_walk_stopped():
    ok = encode_command(["SET", "k", "v" * 40])
    w = MultibulkWalk(ok + b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\nxx")
    assert w.next() == [b"SET", b"k", b"v" * 40] and w.next() is None and w.pos == len(ok)
    assert w.rest() == 100000 and w.pos == len(ok)


def test_exact_parser_takes_a_read_from_a_boundary():
    cmd = encode_command(["SET", "k", "v"])
    p = RequestParser()
    p.feed(b"*1\r\n$4\r\nPING\r\n" + cmd, 14)
    assert p.next_command() == [b"SET", b"k", b"v"] and p.at_boundary()
    p.feed(cmd[:5])  # held: the next read's rest appended after it
    p.feed(b"junk" + cmd[5:], 4)
    assert p.next_command() == [b"SET", b"k", b"v"] and p.at_boundary()


def test_a_fresh_read_of_commands_then_a_big_argument_arriving(in_process):
    big = b"x" * 100_000
    data = (encode_command(["PING"]) + encode_command(["SET", "a", "1"]) + encode_command(["SET", "big", big])
            + encode_command(["STRLEN", "big"]) + encode_command(["GET", "a"]))
    want = b"+PONG\r\n+OK\r\n+OK\r\n:100000\r\n$1\r\n1\r\n"
    for cut in (40_000, 60, 80_000, len(data) - 3):
        assert in_process([data[:cut], data[cut:]]) == want, cut


# ---- differential: split pipelines against redis-server ---------------------------------------

_VALUES = st.one_of(
    st.sampled_from([b"", b"\r\n", b"v", b"*1\r\n$4\r\nPING\r\n", b"+OK", b"=x", b"$3\r\n", b"0", b"-1"]),
    st.binary(max_size=12),
    st.builds(lambda n, c: c * n, st.sampled_from([5000, BIG_ARG + 100]), st.sampled_from([b"a", b"\n"])),
)
_KEYS = st.sampled_from([b"k", b"k2", b"key:\r\n", b""])


def _command():
    v, k = _VALUES, _KEYS
    return st.one_of(
        st.tuples(st.just(b"SET"), k, v), st.tuples(st.just(b"GET"), k), st.tuples(st.just(b"APPEND"), k, v),
        st.tuples(st.just(b"STRLEN"), k), st.tuples(st.just(b"ECHO"), v), st.tuples(st.just(b"PING")),
        st.tuples(st.just(b"rpush"), st.just(b"l"), v, v), st.tuples(st.just(b"LRANGE"), st.just(b"l"),
                                                                   st.just(b"0"), st.just(b"-1")),
        st.tuples(st.just(b"MSET"), k, v, k, v), st.tuples(st.just(b"MGET"), k, k), st.tuples(st.just(b"DEL"), k),
        st.tuples(st.just(b"SET"), k), st.tuples(st.just(b"NOPE"), st.just(b"x")),
        # not multibulk: no reply, or one (a RESP3 set or a status line: read inline, as Redis does)
        st.sampled_from([b"PING\r\n", b"ECHO inline\r\n", b"*0\r\n", b"\r\n", b"~1\r\n", b"+x\r\n"]),
    )


def _stream(cmds: list) -> tuple[bytes, int, list[tuple[int, int]]]:
    """The pipeline's bytes, how many replies it gets, and the spans of its big payloads."""
    out = bytearray()
    replies = 0
    big = []
    for cmd in cmds:
        if isinstance(cmd, bytes):
            out += cmd
            replies += cmd not in (b"*0\r\n", b"\r\n")
            continue
        out += b"*%d\r\n" % len(cmd)
        for a in cmd:
            out += b"$%d\r\n" % len(a)
            if len(a) > 64:
                big.append((len(out) + 8, len(out) + len(a) - 8))
            out += a + b"\r\n"
        replies += 1
    return bytes(out), replies, big


def _cuts(n: int, big: list[tuple[int, int]]) -> list[int]:
    """Every boundary but those deep inside a big payload, of which every 997th."""
    inside = set()
    for a, b in big:
        inside.update(i for i in range(a, b) if i % 997)
    return [i for i in range(1, n) if i not in inside]


@pytest.fixture(scope="module")
def redis_conn(oracle):
    c = RawConnection(oracle.port, timeout=20)
    yield c
    c.close()


def _server():
    import raxdb.server.commands  # noqa: F401
    from raxdb.server.config.options import Config
    from raxdb.server.core import Server

    return Server(Config())


def _client(srv):  # noqa: ANN001
    """A client of `srv` in process, and the list of what it sends."""
    from raxdb.server.net.client import Client

    sent: list[bytes] = []
    t = SinkTransport()
    t.write = sent.append  # type: ignore[method-assign]
    t.writelines = sent.extend  # type: ignore[method-assign]
    c = Client(srv)
    c.connection_made(t)  # type: ignore[arg-type]
    return c, sent


@pytest.fixture(scope="module")
def in_process():
    srv = _server()

    def run(pieces: list[bytes]) -> bytes:
        c, sent = _client(srv)
        for p in pieces:
            c.data_received(p)
            srv.flush_writes()
        c.connection_lost(None)
        for db in srv.dbs:
            db.flush()
        return b"".join(sent)

    return run


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(_command(), min_size=1, max_size=8))
def test_pipelines_cut_anywhere_answer_as_redis(redis_conn, in_process, cmds):
    data, replies, big = _stream(cmds)
    redis_conn.send(b"*1\r\n$8\r\nFLUSHALL\r\n")
    assert redis_conn.read_frame() == b"+OK\r\n"
    redis_conn.send(data)
    theirs = b"".join(redis_conn.read_frame() for _ in range(replies))
    assert in_process([data]) == theirs
    for i in _cuts(len(data), big):
        assert in_process([data[:i], data[i:]]) == theirs, (data, i)
    if not big:
        assert in_process([data[i:i + 1] for i in range(len(data))]) == theirs


# ---- a read that ends inside a command: the tail ------------------------------------------------

def _counted_client(srv=None):  # noqa: ANN001
    """A client in process (of `srv`, or of a new server) whose hiredis feeds are counted, and
    what it sent."""
    srv = srv or _server()
    c, sent = _client(srv)
    feeds = []
    feed = c._feed

    def counted(*args):
        feeds.append(args)
        return feed(*args)

    c._feed = counted
    return srv, c, sent, feeds


def test_a_read_ending_inside_a_command_is_walked_again_with_the_next():
    """A -P 16 batch of 10 KB SETs in 64 KiB reads (as loopback brings it): every command is
    walked, the one each read ends inside held as the client's tail, and hiredis is fed nothing."""
    srv, c, sent, feeds = _counted_client()
    batch = b"".join(encode_command([b"SET", b"k%d" % i, b"v" * 10_240]) for i in range(16))
    for _ in range(3):
        for i in range(0, len(batch), 65_536):
            c.data_received(batch[i:i + 65_536])
            srv.flush_writes()
            assert feeds == []
            assert (c._tail is not None) == (i + 65_536 < len(batch)) == c.has_pending_input()
    assert b"".join(sent) == b"+OK\r\n" * 48
    assert c.db.get(b"k15", srv.now_ms) == b"v" * 10_240


def test_a_tail_past_its_bound_goes_to_hiredis():
    """A command of 2,000 small arguments arriving in 1 KiB reads: walked again at each read, it
    would cost the square of its length; past _TAIL_MAX (64 KiB) it is hiredis's, as before."""
    srv, c, sent, feeds = _counted_client()
    cmd = encode_command([b"RPUSH", b"l", *(b"%040d" % i for i in range(2_000))])
    assert len(cmd) > 64 * 1024
    for i in range(0, len(cmd), 1024):
        c.data_received(cmd[i:i + 1024])
    srv.flush_writes()
    assert b"".join(sent) == b":2000\r\n" and feeds


def test_a_blocked_client_takes_its_tail_through_hiredis():
    """A tail held and the client blocked before its next read (the state a paused client's
    postponed command leaves): that read reads on from hiredis, the tail given to it first."""
    srv, c, sent, feeds = _counted_client()
    cmd = encode_command([b"SET", b"k", b"v" * 5_000])
    c.data_received(cmd[:3_000])
    assert c._tail is not None
    c.blocked = True
    c.data_received(cmd[3_000:])
    assert c._tail is None and feeds and sent == []
    c.blocked = False
    c.process()
    srv.flush_writes()
    assert b"".join(sent) == b"+OK\r\n" and c.db.get(b"k", srv.now_ms) == b"v" * 5_000


def test_many_small_arguments_trickled_are_walked_once():
    """A command of 6,000 3-byte arguments (54 KB, under _TAIL_MAX) arriving 7 bytes a read: each
    read continues the held command's walk where it stood (HeldCommand), so every read walks its
    own bytes and at most one header line again, and the command is answered without hiredis.
    Walked again from its start at every read, it cost the square of its length (~7,700 reads of
    up to 54 KB).  Counted in header lines read (interpreted: the walk's `_line`), and in both
    builds by where the walk stands after each read."""
    from raxdb.protocol import multibulk

    srv, c, sent, feeds = _counted_client()
    cmd = encode_command([b"RPUSH", b"l", *(b"%03d" % (i % 1000) for i in range(6_000))])
    assert len(cmd) < 64 * 1024
    lines = [0]
    compiled = not hasattr(multibulk.MultibulkWalk, "__dict__") or "_line" not in vars(multibulk.MultibulkWalk)
    if not compiled:
        line = multibulk.MultibulkWalk._line

        def counted(self, *args):  # noqa: ANN001, ANN002
            lines[0] += 1
            return line(self, *args)

        multibulk.MultibulkWalk._line = counted  # type: ignore[method-assign]
    try:
        reads = 0
        for i in range(0, len(cmd), 7):
            c.data_received(cmd[i:i + 7])
            reads += 1
            held = c._tail
            if held is not None:  # its walk stands at its end: in a header line, or a bulk's data
                assert held.buf == cmd[:i + 7]
                assert len(held.buf) - held.mark <= 21 if held.blen < 0 else held.blen >= 0
    finally:
        if not compiled:
            multibulk.MultibulkWalk._line = line  # type: ignore[method-assign]
    srv.flush_writes()
    assert b"".join(sent) == b":6000\r\n" and feeds == [] and c._tail is None
    if not compiled:  # each header once as the reads bring it, once more to make argv, and at
        # most two lines a read (a header line begun in the last read, the one it stops in)
        assert 6_002 < lines[0] <= 2 * 6_002 + 2 * reads, (lines[0], reads)


def test_a_held_command_continued_byte_by_byte_keeps_hiredis_figures():
    """A command arriving one byte a read, its held bytes walked on from where the last read
    left them: after every read the tail is the command's bytes so far, and CLIENT LIST's figures
    for it are those of the same bytes held by hiredis (as the test below, where one read brings
    them all)."""
    from raxdb.server.conn import clientbufs

    cmd = encode_command([b"SET", b"key", b"v" * 300, b"EX", b"100"])
    srv, c, sent, _ = _counted_client()
    for i in range(1, len(cmd)):
        c.data_received(cmd[i - 1:i])
        assert c._tail is not None and c._tail.buf == cmd[:i]
        figures = (clientbufs.pending(c), c.partial_args(), c.bulk_room(), c.has_pending_input())
        _, other, _, _ = _counted_client(srv)
        other.data_received(cmd[:i])
        other.process()  # hiredis holds them
        assert other._tail is None and other._raw == cmd[:i]
        assert (clientbufs.pending(other), other.partial_args(), other.bulk_room(),
                other.has_pending_input()) == figures, i
    c.data_received(cmd[-1:])
    srv.flush_writes()
    assert b"".join(sent) == b"+OK\r\n" and c._tail is None


def test_a_held_command_refused_later_is_judged_as_one_read():
    """A held command whose next read brings a frame the walk does not take (a malformed bulk
    header, an argument past BIG_ARG) or that passes _TAIL_MAX: tail and read go on as one fresh
    read, as they did, and answer as redis-server does."""
    srv, c, sent, feeds = _counted_client()
    c.data_received(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$")
    assert c._tail is not None
    c.data_received(b"-1\r\n")
    srv.flush_writes()
    assert b"".join(sent) == b"-ERR Protocol error: invalid bulk length\r\n" and c._tail is None
    srv, c, sent, feeds = _counted_client()
    big = b"x" * BIG_ARG
    c.data_received(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d" % BIG_ARG)
    assert c._tail is not None
    c.data_received(b"\r\n" + big + b"\r\n")
    srv.flush_writes()
    assert b"".join(sent) == b"+OK\r\n" and c.db.get(b"k", srv.now_ms) == big


def test_a_tails_figures_are_hiredis_held_ones():
    """CLIENT LIST's figures for a tail (the query buffer's length, the arguments Redis has made
    argv objects, a bulk header's bytes) are those of the same bytes held by hiredis, at every
    cut of a command (process() gives hiredis the tail: it reads on from there)."""
    from raxdb.server.conn import clientbufs

    cmd = encode_command([b"SET", b"key", b"v" * 300, b"EX", b"100"])
    srv = _counted_client()[0]
    for i in range(1, len(cmd)):
        _, c, _, _ = _counted_client(srv)
        c.data_received(cmd[:i])
        assert c._tail is not None and c._tail.buf == cmd[:i]
        tail = (clientbufs.pending(c), c.partial_args(), c.bulk_room(), c.has_pending_input())
        c.process()
        assert c._tail is None and c._raw == cmd[:i]
        assert (clientbufs.pending(c), c.partial_args(), c.bulk_room(), c.has_pending_input()) == tail, i
