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
from raxdb.server.config.options import Config
from raxdb.server.core import Server
from raxdb.server.net import bigread
from raxdb.server.net.client import Client
from tests.support.diff import encode_command

uvloop = pytest.importorskip("uvloop")  # the server's loop (server/main.py's _runner)


class Sizes(bigread.BigRead):
    """A BigRead that records the size of each buffer it gives and what was read into it."""

    given: list[tuple[str, int]] = []

    def get_buffer(self, sizehint: int) -> memoryview:
        buf = super().get_buffer(sizehint)
        self.given.append(("iobuf" if self.in_iobuf else "window", len(buf)))
        return buf


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
        await ask([b"SET", b"k1", values[1]], b"+OK\r\n")
        # the second SET's first read went to the 16 KiB buffer, the rest of its value to its own
        assert Sizes.given[0] == ("iobuf", bigread.IOBUF)
        assert Sizes.given[1][0] == "window"
        assert transport.get_protocol() is proto
        # the read of the CRLF after the value was the first without a big bulk, each PING's another
        for _ in range(bigread.STAY - 1):
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
