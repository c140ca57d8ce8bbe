"""The listening sockets' accept: every connection waiting is taken at each readable event.

Rule: this module owns taking connections off a listening socket and handing each to the event
loop with its protocol (a Client, a TLS Link); what a connection does afterwards is the protocol's.
It knows nothing of the server but the factory it is given, which gets the accepted socket and the
peer's address accept() returned: what a protocol would otherwise ask its transport, which on
uvloop answers each question (peername, sockname, a setsockopt) through a new socket object.
The accepted socket is an `Accepted`, whose family and type read as plain integers (a new
connection's cost, issue #56: docs/speed-log.md).

Why not the loop's `create_server`: libuv's listener (uv__server_io, under uvloop's) accepts one
connection per turn of the loop, so when 50 clients connect together while the loop serves the
first ones, the last waits behind ~50 iterations, each serving everyone already connected: the
max latency of a busy -P 1 workload (docs/speed-log.md, issue #56).  Redis's acceptTcpHandler
takes up to MAX_ACCEPTS_PER_CALL (1000) connections per readable event; so does `Acceptor`.  Each
connection then reaches the loop through `connect_accepted_socket` (a coroutine, so a task each:
the loop's only way to wrap an accepted socket), its protocol's connection_made called soon after.

Invariants: the listening socket is non-blocking and belongs to its Acceptor, which closes it in
`close()` (as asyncio's Server.close() does); a connection handed to the loop (its protocol's
connection_made, called soon, is where a refused one is refused: maxclients, protected mode) is
the loop's; one the loop cannot take is closed here and logged.
"""

from __future__ import annotations

import _socket
import asyncio
import socket
from collections.abc import Callable
from typing import Any

from raxdb.server.base.log import LOG

MAX_ACCEPTS = 1000  # Redis's MAX_ACCEPTS_PER_CALL


class Accepted(socket.socket):
    """An accepted connection's socket object, its family and type plain integers: socket.socket's
    properties make an enum of each at every read, which socket.accept and uvloop's
    connect_accepted_socket do five times a connection."""

    __slots__ = ()
    family = _socket.socket.family  # type: ignore[assignment]
    type = _socket.socket.type  # type: ignore[assignment]


class Acceptor:
    """One listening socket's accepts, each connection given to the protocol `factory` makes of
    it (the accepted socket, the peer's address)."""

    __slots__ = ("factory", "loop", "sock", "tcp", "tasks", "kind")

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket,
                 factory: Callable[[socket.socket, Any], asyncio.BaseProtocol]) -> None:
        self.loop = loop
        self.sock: socket.socket | None = sock
        self.factory = factory
        self.tcp = sock.family in (socket.AF_INET, socket.AF_INET6)
        self.kind = (int(sock.family), int(sock.type), sock.proto)  # what an accepted socket is made with
        self.tasks: set[asyncio.Task[object]] = set()  # hand-overs under way (kept from the collector)
        sock.setblocking(False)
        loop.add_reader(sock.fileno(), self.accept_waiting)

    def accept_waiting(self) -> None:
        """Take every connection waiting (up to MAX_ACCEPTS): the loop calls it when the socket is
        readable."""
        sock = self.sock
        if sock is None:
            return
        for _ in range(MAX_ACCEPTS):  # nothing else runs meanwhile: protocols start later, in tasks
            try:
                # socket.accept's own first step; its socket object is made below, an Accepted
                fd, peer = sock._accept()  # type: ignore[attr-defined]
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue
            except OSError as exc:  # EMFILE and the like: Redis logs and goes on at the next event
                LOG.warning(f"Accepting client connection: {exc.strerror or exc}")
                return
            conn = Accepted(*self.kind, fileno=fd)
            # non-blocking: the loop makes it so as it takes it (uvloop's uv_tcp_open, asyncio's
            # transport), so not here
            if self.tcp:  # Redis's connEnableTcpNoDelay: replies leave at once (uvloop sets it
                # too, asyncio's loop not for an accepted socket, whose proto is 0)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:  # the protocol, given the socket before the loop takes it
                protocol = self.factory(conn, peer)
            except OSError as exc:  # the peer went away already
                LOG.verbose(f"Accepting client connection: {exc.strerror or exc}")
                conn.close()
                continue
            task = self.loop.create_task(self._hand_over(conn, protocol))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _hand_over(self, conn: socket.socket, protocol: asyncio.BaseProtocol) -> None:
        try:
            await self.loop.connect_accepted_socket(lambda: protocol, conn)
        except OSError as exc:  # the peer went away before the loop took it
            LOG.verbose(f"Accepting client connection: {exc.strerror or exc}")
            conn.close()

    def close(self) -> None:
        """Stop accepting and close the listening socket (connections already taken go on)."""
        sock, self.sock = self.sock, None
        if sock is not None:
            self.loop.remove_reader(sock.fileno())
            sock.close()
