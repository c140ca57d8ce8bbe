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
connection then reaches the loop through `connect_accepted_socket` (a coroutine: the loop's only way
to wrap an accepted socket), driven here rather than in a task: its first step runs in the accept
itself (the transport made, its reads started, connection_made scheduled for the next turn, as
Redis's createClient registers the read handler in acceptTcpHandler), and its end (the waiter the
loop resolves once connection_made has run) in a done callback.  A task a connection cost a Task,
a context, the loop's task registry twice and a turn of the loop before the transport existed, all
inside the burst of set-ups redis-benchmark's first requests wait behind (issue #56:
docs/speed-log.md).

Invariants: the listening socket is non-blocking and belongs to its Acceptor, which closes it in
`close()` (as asyncio's Server.close() does); a connection handed to the loop (its protocol's
connection_made, called soon, is where a refused one is refused: maxclients, protected mode) is
the loop's; one the loop cannot take is closed here and logged.
"""

from __future__ import annotations

import _socket
import asyncio
import socket
from collections.abc import Callable, Coroutine
from functools import partial
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

    __slots__ = ("factory", "loop", "sock", "nodelay", "kind")

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket,
                 factory: Callable[[socket.socket, Any], asyncio.BaseProtocol]) -> None:
        self.loop = loop
        self.sock: socket.socket | None = sock
        self.factory = factory
        # Redis's connEnableTcpNoDelay (replies leave at once): uvloop's TCP transport sets it as
        # it opens the socket (libuv's uv__stream_open), asyncio's loop not for an accepted socket
        # (whose proto is 0), so it is set here only then: a system call a connection fewer
        self.nodelay = sock.family in (socket.AF_INET, socket.AF_INET6) and not _sets_nodelay(loop)
        self.kind = (int(sock.family), int(sock.type), sock.proto)  # what an accepted socket is made with
        sock.setblocking(False)
        loop.add_reader(sock.fileno(), self.accept_waiting)

    def accept_waiting(self) -> None:
        """Take every connection waiting (up to MAX_ACCEPTS): the loop calls it when the socket is
        readable."""
        sock = self.sock
        if sock is None:
            return
        for _ in range(MAX_ACCEPTS):  # nothing else runs meanwhile: protocols start at the next turn
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
            if self.nodelay:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:  # the protocol, given the socket before the loop takes it
                protocol = self.factory(conn, peer)
            except OSError as exc:  # the peer went away already
                LOG.verbose(f"Accepting client connection: {exc.strerror or exc}")
                conn.close()
                continue
            # the coroutine's first step calls the factory at once, before `protocol` is rebound
            _hand_over(conn, self.loop.connect_accepted_socket(lambda: protocol, conn), None)  # noqa: B023

    def close(self) -> None:
        """Stop accepting and close the listening socket (connections already taken go on)."""
        sock, self.sock = self.sock, None
        if sock is not None:
            self.loop.remove_reader(sock.fileno())
            sock.close()


def _sets_nodelay(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether `loop`'s transport for an accepted TCP socket makes it no-delay itself (uvloop's)."""
    return type(loop).__module__.startswith("uvloop")


def _hand_over(conn: socket.socket, coro: Coroutine[Any, Any, object], _waited: object) -> None:
    """The next step of the loop's `connect_accepted_socket(...)` for `conn`, as a task's step
    would take it: up to the future it waits on (the loop's waiter for connection_made; a done
    callback, holding the coroutine, takes the step after it), or to its end.  The waiter is held
    by the loop (the transport, or the handle that resolves it) until it is done, so the coroutine
    is not collected half-way (which would close the transport)."""
    try:
        waiting = coro.send(None)
    except StopIteration:  # connected: the connection is the loop's and its protocol's
        return
    except OSError as exc:  # the peer went away before the loop took it
        LOG.verbose(f"Accepting client connection: {exc.strerror or exc}")
        conn.close()
        return
    except asyncio.CancelledError:  # the loop closing with the waiter pending: its transport closed
        return
    waiting.add_done_callback(partial(_hand_over, conn, coro))
