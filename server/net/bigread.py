"""A big argument read straight into its own buffer: the reader that stands in for a client on its
transport while the rest of a big bulk (32 KiB or more) arrives.

Why.  uvloop reads at most 256 KB into its own buffer and hands each read to `data_received` as a
new bytes object; a 1 MB argument came in five such reads, each copied out of uvloop's buffer, then
once more into the argument.  Redis, once it knows a bulk's length, reads the rest straight into
the argument's own sds.  The exact parser (protocol/request.py) makes that buffer when it meets a
big bulk not all in; this reader hands the unfilled part of it to the event loop as the place to
receive into (asyncio's BufferedProtocol, which uvloop and asyncio's own transports support), so
the kernel's copy is the only one.

How.  `receive(c, parser)` puts a BigRead on the client's transport (`set_protocol`), which the
transports allow between two reads and inside a read callback.  It gives each read the parser's
`big_window()` (the rest of the bulk, its "\r\n" and a few bytes more: Redis reads the remaining
bulk length plus 2, so the read that ends the bulk ends its line too) and counts the bytes as a read event does
(tot_net_in, the client's last interaction, client eviction's accounting); the read that fills it
runs the client's parser, whose command may be whole now.  A query buffer past
client-query-buffer-limit runs the client's parser, which closes it as Redis does.

Staying.  Once the bulk is all in, the BigRead stays for the next reads: each is read into
its own 16 KiB buffer (Redis's PROTO_IOBUF_LEN, the size Redis reads when no big bulk is awaited)
and given to the client's `data_received` as a bytes object, as the event loop would.  The next
commands (and the arguments after the big one) come that way; when they start another big bulk,
the parser's `receive` arms the BigRead again with it.  Why: a connection that sends one big value tends to
send more, and the read that starts each would otherwise be uvloop's, up to 256,000 bytes copied
out of its buffer into a bytes object and then into the argument's buffer (two user-space copies
of a quarter of a 1 MB SET, where Redis copies at most 16 KiB of it).  After `STAY` reads without
a big bulk the transport goes back to the client (uvloop's own read, one Python call a read
instead of two).
Only a transport that reports the client as its protocol is switched (uvloop's and asyncio's TCP
and Unix transports, the fault injector's delaying wrapper around one); TLS (server/net/tls.py's
Link feeds decrypted bytes) and test stubs keep feeding the parser, which copies into the same
buffer.

Rule: this is only the reading (a big bulk's data, and the reads between big bulks while it
stays); parsing, limits and the figures CLIENT LIST and INFO show stay the parser's and the
client's.  Invariant: while a BigRead is the transport's protocol, each read is either the awaited
big bulk's data (and its "\r\n"), written into its window, or the client's, handed to its
`data_received` whole.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from raxdb.server.base import clock as _clock
from raxdb.server.conn import clienteviction as _clienteviction

if TYPE_CHECKING:
    from raxdb.protocol.request import RequestParser
    from raxdb.server.net.client import Client

IOBUF = 16384  # PROTO_IOBUF_LEN: a read's size when no big bulk's data is awaited
STAY = 8  # reads without a big bulk after which the transport goes back to the client


def receive(c: Client, parser: RequestParser) -> None:
    """Read the rest of the big bulk `parser` awaits into its buffer, when the transport can."""
    t = c.transport
    get = getattr(t, "get_protocol", None)
    if t is None or get is None or t.is_closing():
        return
    proto = get()
    if proto is c:
        t.set_protocol(BigRead(c, parser))
    elif type(proto) is BigRead and proto.client is c:  # staying after the last one: armed again
        proto.parser = parser
        proto.idle = 0


class BigRead(asyncio.BufferedProtocol):
    """The transport's protocol while a big bulk's data arrives; everything but the reads goes on
    to the client."""

    __slots__ = ("client", "parser", "iobuf", "in_iobuf", "idle")

    def __init__(self, client: Client, parser: RequestParser) -> None:
        self.client = client
        self.parser = parser
        self.iobuf: memoryview | None = None  # a view of the IOBUF bytes reads go to between big bulks
        self.in_iobuf = False  # the last buffer given was iobuf
        self.idle = 0  # reads into iobuf since the last big bulk

    def get_buffer(self, sizehint: int) -> memoryview:
        window = self.parser.big_window() if self.client.exact is self.parser else None
        if window is not None:
            self.in_iobuf = False
            return window
        self.in_iobuf = True
        if self.iobuf is None:
            self.iobuf = memoryview(bytearray(IOBUF))
        return self.iobuf

    def buffer_updated(self, nbytes: int) -> None:
        c = self.client
        if self.in_iobuf:  # not bulk data: the client's, as any read
            self.in_iobuf = False
            assert self.iobuf is not None
            self.idle += 1
            if self.idle > STAY:
                self._hand_back()
            c.data_received(self.iobuf[:nbytes].tobytes())
            return
        p = self.parser
        p.big_received(nbytes)
        srv = c.server
        c.tot_net_in += nbytes
        if p.big_window() is None:  # the bulk and its "\r\n" are in: what is whole runs now
            self.idle = 0  # (what follows goes to the client: Staying)
            c.last_interaction = _clock.tick(srv)  # as a read event stamps it
            c.process()
        elif p.pending() > srv.config.client_query_buffer_limit:
            self._hand_back()
            c.process()  # the parser closes it (QueryBufferExceeded)
            return
        else:
            c.last_interaction = srv.now_ms
        if srv.client_evict_limit:
            _clienteviction.changed(c)
        elif srv.maxmemory:
            _clienteviction.note_if_noting(c)

    def _hand_back(self) -> None:
        t = self.client.transport
        if t is not None and not t.is_closing():
            t.set_protocol(self.client)

    # everything else is the client's
    def connection_lost(self, exc: Exception | None) -> None:
        self.client.connection_lost(exc)

    def eof_received(self) -> bool | None:
        return self.client.eof_received()

    def pause_writing(self) -> None:
        self.client.pause_writing()

    def resume_writing(self) -> None:
        self.client.resume_writing()
