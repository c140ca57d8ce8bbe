"""The front end against hostile and unusual input, compared with redis-server 7.0.

Everything here is differential: the same bytes go to raxdb and to redis-server, and the replies
(and whether the connection is closed) must be the same.  The point is the hand-over between the
hiredis fast path and the exact parser: frames split at every byte, malformed frames after valid
ones, headers that announce more than a limit allows.
"""

from __future__ import annotations

import socket

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.diff import RawConnection, encode_command
from tests.support.servers import start_raxdb, start_redis

pytestmark = pytest.mark.pure


def replies_until_close(port: int, chunks: list[bytes], expect: int | None = None) -> tuple[list[bytes], bool]:
    """Send chunks (separately, with TCP_NODELAY); read frames until `expect` replies or the close."""
    c = RawConnection(port, timeout=10)
    c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    frames: list[bytes] = []
    closed = False
    for ch in chunks:
        try:
            c.send(ch)
        except ConnectionError:  # closed while a chunk was still going out (over a limit, say):
            break  # what it answered before the close is read below
    try:
        while expect is None or len(frames) < expect:
            frames.append(c.read_frame())
    except ConnectionError:
        closed = True
    if expect is not None and not closed:
        # the server must not have closed it: a PING still answers
        c.send(b"*1\r\n$4\r\nPING\r\n")
        try:
            frames.append(c.read_frame())
        except ConnectionError:
            closed = True
    c.close()
    return frames, closed


def same(raxdb, oracle, chunks: list[bytes], expect: int | None = None) -> list[bytes]:
    ours = replies_until_close(raxdb.port, chunks, expect)
    theirs = replies_until_close(oracle.port, chunks, expect)
    assert ours == theirs, f"{chunks!r}\n  raxdb: {ours!r}\n  redis: {theirs!r}"
    return ours[0]


PIPELINE = (
    encode_command(["SET", "k", "v" * 40])
    + b"GET k\r\n"
    + encode_command(["ECHO", "a\r\n+b"])
    + b'ECHO "x y" \'z\'\r\n\r\n'
    + encode_command(["MSET", "a", "1", "b", "=2"])
    + b"*0\r\n"
    + encode_command(["MGET", "a", "b", "k"])
    + b"*-1\r\n"
    + encode_command(["INCR", "a"])
)
PIPELINE_REPLIES = 7


def test_pipeline_whole(raxdb, oracle):
    _flush(raxdb, oracle)
    replies = same(raxdb, oracle, [PIPELINE], PIPELINE_REPLIES)
    assert len(replies) == PIPELINE_REPLIES + 1


def test_pipeline_of_repeated_and_changing_command_names(raxdb, oracle):
    # the fast loop reuses the previous command's lookup for an equal name: runs of one name,
    # names that change, other spellings, unknown and empty names, and names that are a prefix
    # of one another, in one read
    _flush(raxdb, oracle)
    cmds = [["INCR", "n"], ["INCR", "n"], ["incr", "n"], ["InCr", "n"], ["INCRBY", "n", "5"], ["INCR", "n"],
            ["SET", "s", "1"], ["SET", "s", "2"], ["SETNX", "s", "3"], ["SET", "s"], ["GET", "s"], ["GET", "s"],
            ["NOPE", "x"], ["NOPE", "x"], [""], [""], ["GET", "n"], ["LPUSH", "l", "a"], ["LPUSH", "l", "b"],
            ["RPUSH", "l", "c"], ["LRANGE", "l", "0", "-1"], ["SADD", "t", "1"], ["SADD", "t", "1", "2"],
            ["SCARD", "t"]]
    replies = same(raxdb, oracle, [b"".join(encode_command(c) for c in cmds)], len(cmds))
    assert len(replies) == len(cmds) + 1

def test_pipelined_big_replies_arrive_whole_and_in_order(raxdb, oracle):
    """Big replies (written as separate pieces, unjoined) among small ones and empty ones, in one
    read event's pipeline and over several: the same frames in the same order as Redis's."""
    _flush(raxdb, oracle)
    sizes = [10240, 3, 200_000, 0, 4096, 1_048_576]
    setup = [encode_command(["SET", f"v{i}", chr(97 + i) * n]) for i, n in enumerate(sizes)]
    gets = b"".join(encode_command(["GET", f"v{i % len(sizes)}"]) for i in range(40))
    tail = encode_command(["PING"]) + encode_command(["GET", "missing"])
    replies = same(raxdb, oracle, [b"".join(setup) + gets + tail, gets[:len(gets) // 3], gets[len(gets) // 3:]],
                   len(sizes) + 40 + 2 + 40)
    assert replies[len(sizes) + 2] == b"$200000\r\n" + b"c" * 200_000 + b"\r\n"


@pytest.mark.parametrize("chunks", [
    [encode_command(["SET", "q", "1"]) + encode_command(["GET", "q"]) + encode_command(["QUIT"])
     + encode_command(["PING"])],
    [b"SET q 2\r\nGET q\r\nQUIT\r\nPING\r\n"],
    [encode_command(["GET", "q"]), encode_command(["QUIT"])],
])
def test_quit_replies_then_closes(raxdb, oracle, chunks):
    # Replies are queued and flushed once per loop iteration: QUIT's close must not drop them,
    # and nothing after QUIT runs.
    replies = same(raxdb, oracle, chunks)
    assert replies[-1] == b"+OK\r\n"


@pytest.mark.parametrize("cut", range(1, len(PIPELINE)))
def test_pipeline_split_at_every_byte(raxdb, oracle, cut):
    same(raxdb, oracle, [PIPELINE[:cut], PIPELINE[cut:]], PIPELINE_REPLIES)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(PIPELINE) - 1), min_size=2, max_size=12, unique=True))
def test_pipeline_split_many(raxdb, oracle, cuts):
    cuts = sorted(cuts)
    bounds = [0, *cuts, len(PIPELINE)]
    chunks = [PIPELINE[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    same(raxdb, oracle, chunks, PIPELINE_REPLIES)


def test_arguments_starting_with_plus_or_equals(diff2):
    """Valid arguments that begin with '+' or '=' (XRANGE - +, ZRANGEBYSCORE +inf, base64) parse as
    bulks; a '+'/'=' frame in the same place is still a protocol error (BAD_FRAMES)."""
    data = (encode_command(["ECHO", "+"]) + encode_command(["ECHO", "+inf"]) + encode_command(["ECHO", "=x"])
            + encode_command(["SET", "k", "a\n$2"]) + encode_command(["ECHO", "+OK\r\n"])
            + encode_command(["ECHO", "x\r\n+y"]) + encode_command(["ZCOUNT", "z", "-inf", "+inf"])
            + encode_command(["ECHO", "+"]) * 3 + encode_command(["ECHO", "\n$1\r\n+\r\n"]))
    diff2.ours.send(data)
    diff2.theirs.send(data)
    for _ in range(11):
        assert diff2.ours.read_frame() == diff2.theirs.read_frame()



def test_resp3_aggregates_between_requests_are_inline_commands(diff2):
    """A RESP3 set, push or attribute header ('~', '>', '|') where a request starts is an inline
    command for Redis (unknown, its lines each another); hiredis would read the frame as a list,
    and the fast path would run it as a command (found by the resp fuzz target)."""
    data = (encode_command(["PING"]) + b"~2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n" + b">2\r\n$4\r\nECHO\r\n$2\r\nyo\r\n"
            + b"|1\r\n$1\r\na\r\n$1\r\nb\r\n*1\r\n$4\r\nPING\r\n" + encode_command(["SET", "k", "x\n~2"])
            + encode_command(["ECHO", "end"]))
    diff2.ours.send(data)
    diff2.theirs.send(data)
    for _ in range(40):
        theirs = diff2.theirs.read_frame()
        assert diff2.ours.read_frame() == theirs
        if theirs == b"$3\r\nend\r\n":
            break
    else:
        raise AssertionError("no reply to the last command")


def test_resp3_map_with_an_aggregate_key_between_requests(diff2):
    """hiredis raises TypeError (not ProtocolError) for a map or set whose key is an array: the
    fast path let it out of the read event, and the connection closed without its replies (found by
    the resp fuzz target); the exact parser reads the lines as inline commands, as Redis does."""
    for frame in (b"%1\r\n*1\r\n$1\r\na\r\n$1\r\nb\r\n", b"~1\r\n*1\r\n$1\r\na\r\n"):
        data = encode_command(["PING"]) + frame + encode_command(["ECHO", "end"])
        diff2.ours.send(data)
        diff2.theirs.send(data)
        for _ in range(20):
            theirs = diff2.theirs.read_frame()
            assert diff2.ours.read_frame() == theirs
            if theirs == b"$3\r\nend\r\n":
                break
        else:
            raise AssertionError("no reply to the last command")



@pytest.mark.parametrize("frame", [
    b"*1\r\n$4\r\nPING\r*~1\r\n$4\r\nPING\r\n",  # a set after a bulk whose CRLF is "\r*"
    b"*2\r\n$4\r\nECHO\r*+hi\r\n",  # a status where a bulk goes, behind such a CRLF
    b"*1\r\n$4\r\nPINGxy>1\r\n$4\r\nPING\r\n",
    b"*1\r\n$4\r\nPINGxy|1\r\n$1\r\na\r\n$1\r\nb\r\n",
])
def test_frames_behind_a_bulk_whose_crlf_is_other_bytes(raxdb, oracle, frame):
    """Neither Redis nor hiredis checks the two bytes after a bulk, so a frame may start behind any
    two: the fast path's gate walks the frames when a '~', '>', '|', or a '+' or '=' not at a
    line's start, is in the read (found by the resp fuzz target)."""
    same(raxdb, oracle, [frame + encode_command(["QUIT"])])


BAD_FRAMES = [
    b"*abc\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n+PING\r\n",
    b"*1\r\n=8\r\ntxt:PING\r\n",
    b"*2\r\n$4\r\nECHO\r\n_\r\n",
    b"*1\r\n$-1\r\n",
    b"*1\r\n$abc\r\n",
    b"*1\r\n$-5\r\n",
    b"*1\r\n$999999999999\r\n",
    b"*1\r\n$2147483648\r\n",
    b"*1\r\n$536870913\r\n",
    b"*3000000000\r\n",
    b"*99999999999999999999\r\n",
    b"*2\r\n$4\r\nECHO\r\n*1\r\n$1\r\na\r\n",
    b'"unbalanced\r\n',
    b"ECHO 'a\r\n",
    b'ECHO "a"b\r\n',
    b"*1\r\n$4\r\nPING\r\n*1\r\n+PING\r\n",
    b"*1\r\n$4\r\nPING\r\nPING\r\n*1\r\n:1\r\n",
    b"PING\r\n*1\r\n%1\r\n",
    b"*2\r\n$4\r\nECHO\r\n+OK\r\n",
    b"*3\r\n$4\r\nECHO\r\n$3\r\nx$2\r\n+O\r\n",
    b"*2\r\n$4\r\nECHO\r\n$1\r\n+\r\n*1\r\n+PING\r\n",
    b"*3\r\n$4\r\nECHO\r\n$4\r\n+inf\r\n+1\r\n",
    b"*2\r\n$4\r\nECHO\r\n$4\r\n+inf\r\n*2\r\n$4\r\nECHO\r\n=5\r\ntxt:x\r\n",
    b"*1\r\n\r\n",  # "got ' '": the CR is printed as a space
    b"*1048576\r\n\r\n",
    b"*1\r\n\xc8\r\n",  # the byte goes out raw
    b"*1\r\n\nx\r\n",
    b"*1\r\n$04\r\nPING\r\n",  # a length with a leading zero: string2ll refuses it, hiredis does not
    b"*01\r\n$4\r\nPING\r\n",
    b"*2\r\n$4\r\nECHO\r\n$00\r\n\r\n",
    b"*1\r\n$0000000000000000004\r\nPING\r\n",
    b"*1000000000000000000\r\n",  # 19 digits: the fast path's gate refuses them as it reads the 19th
    b"*9999999999999999999\r\n",  # past LLONG_MAX
    b"*1\r\n$1000000000000000000\r\n",
    b"*1\r\n$9999999999999999999\r\n",
]


@pytest.mark.parametrize("frame", BAD_FRAMES)
def test_bad_frames(raxdb, oracle, frame):
    replies = same(raxdb, oracle, [frame])
    assert replies and replies[-1].startswith(b"-ERR Protocol error")


@pytest.mark.parametrize("frame", BAD_FRAMES)
def test_bad_frames_after_valid_partial(raxdb, oracle, frame):
    """The same errors when the frame arrives after a valid command split across reads."""
    first = encode_command(["ECHO", "hello"])
    same(raxdb, oracle, [first[:7], first[7:] + frame])


def test_payloads_holding_markers(raxdb, oracle):
    """Values with '+', '=', '~', '>' or '|' inside (base64 padding, time zones, JSON), in reads
    that start at a command and in reads that continue one: the fast path's gate walks the frames
    or checks the markers, and the commands run as Redis runs them."""
    values = [b"eyJib2R5IjogImFHVnNiRzg9In0=", b"2026-11-27T07:00:00+00:00", b"a=1&b=2", b"~>|",
              b"\r\n+OK\r\n", b"+inf", b"+", b"=5\r\ntxt:x"]
    data = b"".join(encode_command(["SET", "k%d" % i, v]) + encode_command(["GET", "k%d" % i])
                    for i, v in enumerate(values))
    for cut in (None, 7, 40, 41, 42):
        reads = [data] if cut is None else [data[:cut], data[cut:]]
        replies = same(raxdb, oracle, reads + [encode_command(["QUIT"])])
        assert replies.count(b"+OK\r\n") >= len(values)


@pytest.mark.parametrize("head", [b"*", b"*1\r\n$"])
@pytest.mark.parametrize("digits", [19, 70000])
def test_long_length_header_arriving_slowly(raxdb, oracle, head, digits):
    """A count or bulk length of 19 digits, or of 70,000, arriving in pieces after a valid command:
    Redis's error (invalid length, or too big count string past 64 KiB) and the close, the reply to
    the command before it first."""
    number = b"1" * digits
    step = 7 if digits < 20 else 10000
    pieces = [number[i : i + step] for i in range(0, digits, step)]
    # Past 64 KiB the error comes before any CRLF: Redis judges each read, and a CRLF arriving in
    # the same read as the 64 KiB crossing would make it the invalid-length error instead (a race
    # between the pieces and the server's reads that a slower server, the interpreted one, loses).
    end = [b"\r\n"] if digits < 65536 else []
    replies = same(raxdb, oracle, [encode_command(["PING"]) + head, *pieces, *end])
    assert replies[0] == b"+PONG\r\n" and replies[-1].startswith(b"-ERR Protocol error")


def test_too_big_inline(raxdb, oracle):
    replies = same(raxdb, oracle, [b"A" * 70000])
    assert replies == [b"-ERR Protocol error: too big inline request\r\n"]


def test_too_big_mbulk_count_string(raxdb, oracle):
    same(raxdb, oracle, [b"*" + b"1" * 70000])


def test_too_big_bulk_count_string(raxdb, oracle):
    same(raxdb, oracle, [b"*1\r\n$" + b"1" * 70000])


def test_inline_forms(diff2):
    for line in [b'ECHO "a\\x41\\n\\t\\"b"', b"ECHO 'it\\'s'", b"  ECHO    spaced   ", b'ECHO ""', b"ECHO ''",
                 b'ECHO "\\xZZ"', b"ECHO a\tb", b"PING\n", b"ECHO \"a b\" 'c d'", b"ECHO \x41"]:
        ours, theirs = diff2.raw(line + b"\r\n")
        assert ours == theirs, line


def test_inline_nul_before_newline_waits(raxdb, oracle):
    """Redis finds the line end with strchr, which stops at NUL: the request waits, and the
    connection is closed only when the 64 KiB inline limit is passed."""
    replies = same(raxdb, oracle, [b"echo a\0b\r\nPING\r\n", b"x" * 70000])
    assert replies == [b"-ERR Protocol error: too big inline request\r\n"]


def test_empty_lines_and_empty_commands_have_no_reply(diff2):
    ours, theirs = diff2.raw(b"\r\n\n   \r\n*0\r\n*-1\r\nPING\r\n")
    assert ours == theirs == b"+PONG\r\n"


def test_binary_safe_keys(diff):
    for key in [b"", b"\0", b"a\0b", b"\r\n", b"\xff\xfe", b" ", b"*1\r\n$1\r\n"]:
        diff("SET", key, key + b"v")
        diff("GET", key)
        diff("EXISTS", key)
    diff("MGET", b"", b"\0", b"missing")


def test_client_bytes_in_error_texts(diff):
    # Redis prints client arguments into error texts with C's "%s": raw bytes, each cut at a NUL
    # (found by a protocol fuzz); the subcommand as typed, not capitalised.
    for name in [b"\0", b"a\0b", b"\xff\xfe", b"x" * 200, b"a\r\nb"]:
        diff(name)
        diff(name, b"1\0x", b"\xff", b"", b"y" * 150)
        diff("OBJECT", name)
        diff("XINFO", name)
        diff("CLIENT", name, "x", "y", "z")
        diff("HELLO", "3", name)
        diff("XCLAIM", "s", "g", "c", "0", "1-1", name)
        diff("XREADGROUP", "GROUP", name, "c", "STREAMS", name, ">")
        diff("XGROUP", "SETID", name, name, "$")
    diff("XADD", "s", "1-1", "f", "v")
    for group in [b"g\0h", b"\xff"]:
        diff("XGROUP", "CREATECONSUMER", "s", group, "c")
        diff("XACK", "s", group, "1-1")
        diff("XPENDING", "s", group)
        diff("XCLAIM", "s", group, "c", "0", "1-1")
    diff("client", "unblock", "1", "2", "3")
    diff("client", "pause", "10", "all", "x")
    diff("slowlog", "get", "1", "2")
    diff("pubsub", "numpat", "x")
    diff("xinfo", "help", "x")


def test_huge_counts_in_arguments(diff):
    diff("SET", "k", "v")
    diff("GETRANGE", "k", "0", "99999999999999999999")
    diff("GETRANGE", "k", "-99999999999999999999", "1")
    diff("INCRBY", "n", "99999999999999999999")


def _flush(raxdb, oracle) -> None:
    for port in (raxdb.port, oracle.port):
        c = RawConnection(port)
        c.call("FLUSHALL")
        c.close()


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


@pytest.mark.parametrize("header", [b"*2147483647\r\n", b"*1\r\n$536870912\r\n", b"*2\r\n$3\r\nSET\r\n$500000000\r\n"])
def test_hostile_headers_cost_no_memory(raxdb, header):
    """A header announcing ~2^31 arguments or a 512 MB bulk allocates nothing up front, and the
    server keeps serving other clients while that connection waits."""
    pid = raxdb.proc.pid
    before = _rss_kb(pid)
    hostile = [RawConnection(raxdb.port) for _ in range(5)]
    for h in hostile:
        h.send(header)
    other = RawConnection(raxdb.port)
    assert other.call("PING") == b"+PONG\r\n"  # served after the hostile headers were read
    assert _rss_kb(pid) - before < 20_000  # under 20 MB for five such clients
    for h in hostile + [other]:
        h.close()


def _pair(*opts: str):
    ours, theirs = start_raxdb(*opts), start_redis(*opts)
    yield ours, theirs
    ours.stop()
    theirs.stop()


@pytest.fixture(scope="module")
def limits_pair():
    yield from _pair("--proto-max-bulk-len", "1mb", "--maxclients", "3")


@pytest.fixture(scope="module")
def qbuf_pair():
    yield from _pair("--proto-max-bulk-len", "4mb", "--client-query-buffer-limit", "1mb")


@pytest.fixture(scope="module")
def auth_pair():
    yield from _pair("--requirepass", "secret")


@pytest.fixture
def pair(request):
    return request.getfixturevalue(request.cls.PAIR)


@pytest.mark.oracle
class TestLimits:
    """Limits configured at start-up, on a dedicated pair of servers."""

    PAIR = "limits_pair"

    def test_bulk_over_proto_max_bulk_len(self, pair):
        same(*pair, [b"*2\r\n$4\r\nECHO\r\n$1048577\r\n"])

    def test_bulk_at_proto_max_bulk_len(self, pair):
        payload = b"x" * (1024 * 1024)
        replies = same(*pair, [encode_command([b"SET", b"big", payload]), encode_command([b"STRLEN", b"big"])], 2)
        assert replies[:2] == [b"+OK\r\n", b":1048576\r\n"]

    def test_maxclients(self, pair):
        for srv in pair:
            conns = [RawConnection(srv.port) for _ in range(3)]
            for c in conns:
                assert c.call("PING") == b"+PONG\r\n"
            extra = RawConnection(srv.port)
            frames = []
            try:
                while True:
                    frames.append(extra.read_frame())
            except ConnectionError:
                pass
            assert frames == [b"-ERR max number of clients reached\r\n"], srv.name
            for c in conns + [extra]:
                c.close()


@pytest.mark.oracle
def test_query_buffer_limit_closes_connection(qbuf_pair):
    """The unparsed query buffer (in practice, one pending bulk) over client-query-buffer-limit:
    the client is closed with no reply, whether the bulk arrives at once or in pieces; bulks
    under the limit are fine even when the whole command is larger."""
    big = encode_command([b"SET", b"k", b"x" * 1_500_000])
    assert same(*qbuf_pair, [big]) == []
    assert same(*qbuf_pair, [big[:500_000], big[500_000:]]) == []
    assert same(*qbuf_pair, [encode_command([b"ECHO", b"ok"]) + big]) == [b"$2\r\nok\r\n"]
    two = encode_command([b"MSET", b"a", b"x" * 900_000, b"b", b"y" * 900_000])
    assert same(*qbuf_pair, [two], 1)[0] == b"+OK\r\n"


@pytest.mark.oracle
class TestUnauthenticated:
    PAIR = "auth_pair"

    def test_noauth(self, pair):
        same(*pair, [encode_command(["GET", "k"])], 1)
        same(*pair, [b"GET k\r\n"], 1)

    def test_unauthenticated_multibulk_length(self, pair):
        same(*pair, [b"*11\r\n"])

    def test_unauthenticated_bulk_length(self, pair):
        same(*pair, [b"*2\r\n$4\r\nECHO\r\n$16385\r\n"])

    def test_auth_then_fast_path(self, pair):
        cmds = [encode_command(["AUTH", "wrong"]), encode_command(["AUTH", "secret"]),
                encode_command(["SET", "k", "v"]), encode_command(["GET", "k"]), b"*11\r\n" + b"$1\r\na\r\n" * 11]
        same(*pair, [b"".join(cmds)], 5)
        same(*pair, cmds, 5)


def test_large_pipeline_in_one_write(diff2):
    n = 20000
    data = b"".join(encode_command(["INCR", "counter"]) for _ in range(n))
    diff2.ours.send(data)
    diff2.theirs.send(data)
    for i in range(1, n + 1):
        ours, theirs = diff2.ours.read_frame(), diff2.theirs.read_frame()
        assert ours == theirs == b":%d\r\n" % i


def test_other_clients_unaffected_by_protocol_error(raxdb):
    good = RawConnection(raxdb.port)
    bad = RawConnection(raxdb.port)
    bad.send(b"*1\r\n:1\r\n")
    assert bad.read_frame().startswith(b"-ERR Protocol error")
    assert good.call("PING") == b"+PONG\r\n"
    good.close()
    bad.close()


@pytest.mark.parametrize("cut", [40_000, 150_000])
def test_big_argument_arriving_behind_small_commands(diff2, cut):
    """A read that starts a big argument (handed to the exact parser at once) with commands before
    and after it in the same reads, and a value whose bytes only look like big bulk headers."""
    big = b"v" * 300_000
    fake = b"x$123456789\r\n" * 4000  # 52 KB of what reads as headers of 123 MB arguments
    cmds = [["SET", "a", "1"], [b"SET", b"big", big], ["GET", "a"], [b"SET", b"fake", fake], ["STRLEN", "big"],
            ["GET", "fake"], ["GETRANGE", "big", "299990", "-1"]]
    data = b"".join(encode_command(cmd) for cmd in cmds)
    for conn in (diff2.ours, diff2.theirs):
        for i in range(0, len(data), cut):
            conn.send(data[i:i + cut])
    for _ in cmds:
        assert diff2.ours.read_frame() == diff2.theirs.read_frame()


def _big_argument_reads() -> list[list[bytes]]:
    """A stream of big bulks (read straight into their own buffers, server/net/bigread.py): two in
    one command, one of them holding what reads as headers, a value made of both, commands behind
    them; sent in pieces of several sizes, and cut at a value's last byte and inside its CRLF."""
    a, b = bytes(range(256)) * 400, b"\r\n$5\r\n" * 20_000  # 102,400 and 140,000 bytes
    cmds = [[b"MSET", b"a", a, b"b", b], [b"GET", b"a"], [b"STRLEN", b"b"], [b"SET", b"c", a + b],
            [b"GETRANGE", b"c", b"102390", b"102420"], [b"ECHO", b"tail"]]
    data = b"".join(encode_command(c) for c in cmds)
    end = data.index(a) + len(a)
    cuts = [[data[i:i + n] for i in range(0, len(data), n)] for n in (7_919, 65_536, 262_144)]
    return cuts + [[data[:end], data[end:end + 1], data[end + 1:]], [data[:end - 1], data[end - 1:]]]


@pytest.mark.parametrize("chunks", _big_argument_reads())
def test_big_arguments_cut_anywhere(raxdb, oracle, chunks):
    same(raxdb, oracle, chunks, 6)
