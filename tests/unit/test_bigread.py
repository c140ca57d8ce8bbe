"""Big arguments read into their own buffers (server/net/bigread.py), in process on the server's
event loop over a real socket: the reader that stands in for the client stays after a big bulk
(the next big bulk's first read is Redis's 16 KiB, not uvloop's 256,000 bytes) and hands the
transport back after `STAY` reads without one.  No timing: each step waits for its reply.
"""

from __future__ import annotations

import asyncio
import socket

import pytest

import raxdb.server.commands  # noqa: F401  (the command table)
from raxdb.protocol.request import PAST, RequestParser
from raxdb.server.config.options import Config
from raxdb.server.core import Server
from raxdb.server.net import bigread
from raxdb.server.net.client import Client
from tests.support.diff import encode_command

uvloop = pytest.importorskip("uvloop")  # the server's loop (server/main.py's _runner)


class Sizes(bigread.BigRead):
    """A BigRead that records the size of each buffer it gives and how much was read into it."""

    given: list[tuple[str, int]] = []
    read: list[tuple[str, int]] = []

    def get_buffer(self, sizehint: int) -> memoryview:
        buf = super().get_buffer(sizehint)
        self.given.append(("iobuf" if self.in_iobuf else "window", len(buf)))
        return buf

    def buffer_updated(self, nbytes: int) -> None:
        self.read.append(("iobuf" if self.in_iobuf else "window", nbytes))
        super().buffer_updated(nbytes)


def test_the_reader_stays_between_big_arguments_and_hands_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bigread, "BigRead", Sizes)
    values = [bytes([65 + i]) * (1 << 20) + b"end%d" % i for i in range(3)]

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        srv = Server(Config())
        with socket.create_server(("127.0.0.1", 0)) as listening:
            theirs = socket.create_connection(listening.getsockname())
            ours, _ = listening.accept()
        transport, client = await loop.connect_accepted_socket(lambda: Client(srv), ours)
        theirs.setblocking(False)

        async def ask(cmd: list[bytes], reply: bytes) -> None:
            await loop.sock_sendall(theirs, encode_command(cmd))
            got = b""
            while len(got) < len(reply):
                got += await loop.sock_recv(theirs, 65536)
            assert got == reply

        await ask([b"SET", b"k0", values[0]], b"+OK\r\n")
        proto = transport.get_protocol()
        assert type(proto) is Sizes and proto.client is client  # it stays after the bulk
        Sizes.given.clear()
        Sizes.read.clear()
        request = encode_command([b"SET", b"k1", values[1]])
        await ask([b"SET", b"k1", values[1]], b"+OK\r\n")
        # the second SET's first read went to the 16 KiB buffer, the rest of its value to its own
        assert Sizes.given[0] == ("iobuf", bigread.IOBUF)
        assert Sizes.given[1][0] == "window"
        # ... with its "\r\n": the first window is the rest of the request to its end (and PAST
        # bytes more, so the read that ends it does not fill it), and every read after the first
        # was the value's, the last of them its line's end (Redis reads the remaining bulk length
        # + 2); the reply came without a read of the "\r\n" alone
        first = Sizes.read[0][1]
        assert Sizes.given[1][1] == len(request) - first + PAST
        assert [kind for kind, _ in Sizes.read[1:]] == ["window"] * (len(Sizes.read) - 1)
        assert sum(n for _, n in Sizes.read) == len(request)
        assert transport.get_protocol() is proto
        # each PING's read is one without a big bulk
        for _ in range(bigread.STAY):
            await ask([b"PING"], b"+PONG\r\n")
        assert transport.get_protocol() is proto  # STAY reads without a big bulk: still there
        await ask([b"PING"], b"+PONG\r\n")
        assert transport.get_protocol() is client  # one more: the client reads again
        await ask([b"SET", b"k2", values[2]], b"+OK\r\n")  # a new stand-in after the hand-back
        assert type(transport.get_protocol()) is Sizes
        for i, v in enumerate(values):
            await ask([b"STRLEN", b"k%d" % i], b":%d\r\n" % len(v))
            await ask([b"GETRANGE", b"k%d" % i, b"-4", b"-1"], b"$4\r\nend%d\r\n" % i)
        assert srv.dbs[0].get(b"k1", srv.now_ms) == values[1]
        transport.close()
        theirs.close()

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(scenario())


def test_a_short_read_announcing_a_big_argument_goes_to_the_exact_parser() -> None:
    """A read under 32 KiB that starts a big bulk (bigread's 16 KiB reads bring such starts) is
    the exact parser's at once, its value's buffer made from the header: hiredis is not fed it
    (it was, and the read kept in `_raw` besides, until the exact parser took over anyway)."""
    from tests.support.transport import SinkTransport

    srv = Server(Config())
    c = Client(srv)
    c.connection_made(SinkTransport())  # type: ignore[arg-type]
    value = b"x" * (1 << 20)
    data = encode_command([b"SET", b"k", value])
    c.data_received(data[:bigread.IOBUF])
    assert c.exact is not None and c.exact.big_window() is not None
    assert c._raw is None and not c.reader.has_data()
    c.data_received(data[bigread.IOBUF:])
    assert srv.dbs[0].get(b"k", srv.now_ms) == value


@pytest.mark.parametrize("after", [b"", b"*1\r\n$4\r\nPING\r\n"])
def test_the_window_ends_past_the_bulks_line_end(after: bytes) -> None:
    r"""The exact parser's window for a big bulk is the rest of its data and its "\r\n" (Redis reads
    the remaining bulk length + 2) and PAST bytes more, so the read that ends the bulk completes
    the command; the argument is the data alone, and what follows the "\r\n" (read with it) is
    parsed as before."""
    value = bytes(range(256)) * 200  # 51,200 bytes: a big bulk
    data = encode_command([b"SET", b"k", value]) + after
    head = 1000
    p = RequestParser()
    p.feed(data[:head])
    assert p.next_command() is None
    window = p.big_window()
    assert window is not None
    end = len(data) - len(after)  # the request's end: past the value's "\r\n"
    assert len(window) == end - head + PAST
    n = min(len(window), len(data) - head)  # the PING read with it, as a socket would
    window[:n] = data[head : head + n]
    p.big_received(n)
    assert p.big_window() is None and p.pending() == len(value) + 2 + len(after)
    assert p.next_command() == [b"SET", b"k", value]
    assert p.pending() == len(after)
    assert p.next_command() == ([b"PING"] if after else None)
    assert p.at_boundary() and p.pending() == 0


def test_an_argument_after_the_big_one_arrives_in_pieces() -> None:
    r"""The bulk's "\r\n" cut in two, and arguments after the big one: fed in pieces as a TLS link
    or a test stub does, the command is whole only when its last argument is."""
    value = b"v" * 40000
    data = encode_command([b"SET", b"k", value, b"EX", b"100"])
    cut = data.index(b"\r\n$2\r\nEX") + 1  # between the "\r" and "\n" after the value
    p = RequestParser()
    p.feed(data[:100])
    assert p.next_command() is None
    p.feed(data[100:cut])
    assert p.next_command() is None
    window = p.big_window()
    assert window is not None and len(window) == 1 + PAST  # its "\n" still to come
    assert p.bulk_room() == 1
    p.feed(data[cut : cut + 3])
    assert p.big_window() is None and p.next_command() is None
    p.feed(data[cut + 3 :])
    assert p.next_command() == [b"SET", b"k", value, b"EX", b"100"]
