"""The listening sockets' accept (server/net/accept.py), in process on the server's event loop.

What it must do as Redis's acceptTcpHandler does: one readable event takes every connection
waiting (libuv's listener, which create_server used, took one a turn of the loop: 50 clients
connecting together waited behind ~50 iterations, issue #56); each connection reaches its
protocol; close() stops accepting and frees the socket.  No timing: the backlog's state is read
from the socket itself.
"""

from __future__ import annotations

import asyncio
import os
import socket

import pytest

from raxdb.server.net.accept import Acceptor

uvloop = pytest.importorskip("uvloop")  # the server's loop (server/main.py's _runner)


class Recorder(asyncio.Protocol):
    def __init__(self, made: list[asyncio.Transport], all_made: asyncio.Event, want: int) -> None:
        self.made, self.all_made, self.want = made, all_made, want

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.made.append(transport)  # type: ignore[arg-type]
        if len(self.made) == self.want:
            self.all_made.set()


def _listening(n: int) -> tuple[socket.socket, tuple[str, int], list[socket.socket]]:
    """A listening socket, its address, and `n` connections to it waiting in the kernel's backlog
    (made before any acceptor exists)."""
    listening = socket.create_server(("127.0.0.1", 0), backlog=64)
    addr = listening.getsockname()
    return listening, addr, [socket.create_connection(addr) for _ in range(n)]


@pytest.mark.parametrize("loop_factory", [uvloop.new_event_loop, asyncio.new_event_loop], ids=["uvloop", "asyncio"])
def test_one_readable_event_takes_every_waiting_connection(loop_factory) -> None:
    """On uvloop, and on asyncio's own loop (the server's without uvloop): each connection
    reaches the protocol its factory made of the accepted socket."""
    n = 20

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        made: list[asyncio.Transport] = []
        all_made = asyncio.Event()
        listening, addr, peers = _listening(n)
        given: list[tuple[socket.socket, object]] = []

        def factory(conn: socket.socket, peer: object) -> Recorder:
            given.append((conn, peer))
            return Recorder(made, all_made, n)

        acceptor = Acceptor(loop, listening, factory)
        acceptor.accept_waiting()  # one readable event
        with pytest.raises(BlockingIOError):  # nothing is left waiting
            listening.accept()
        await all_made.wait()
        assert len(made) == n
        # the factory got each accepted socket (the one the loop took) and its peer's address
        assert {peer for _, peer in given} == {p.getsockname() for p in peers}
        assert {conn.fileno() for conn, _ in given} == {t.get_extra_info("socket").fileno() for t in made}
        # the loop made each non-blocking and no-delay (Redis's connNonBlock, connEnableTcpNoDelay)
        assert all(t.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for t in made)
        assert not any(os.get_blocking(t.get_extra_info("socket").fileno()) for t in made)
        made[0].write(b"+PONG\r\n")  # a taken connection is the loop's, both ways
        peers[0].settimeout(10)
        assert peers[0].recv(16) == b"+PONG\r\n"
        acceptor.close()
        assert listening.fileno() == -1
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(addr, timeout=10)
        acceptor.close()  # twice: nothing more
        for t in made:
            t.close()
        for p in peers:
            p.close()

    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(scenario())


@pytest.mark.parametrize("loop_factory", [uvloop.new_event_loop, asyncio.new_event_loop], ids=["uvloop", "asyncio"])
def test_a_connection_reaches_its_protocol_at_the_next_turn_without_a_task(loop_factory) -> None:
    """The hand-over's first step runs in the accept itself (the transport made, its reads
    started), so the loop's next turn calls every protocol's connection_made, as Redis's accept
    handler registers each client's read handler before the next poll; no task a connection (in
    a task, the transport was made a turn later and connection_made a turn after that)."""
    n = 10

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        made: list[asyncio.Transport] = []
        all_made = asyncio.Event()
        listening, _, peers = _listening(n)
        acceptor = Acceptor(loop, listening, lambda conn, peer: Recorder(made, all_made, n))
        tasks = asyncio.all_tasks()
        acceptor.accept_waiting()
        assert asyncio.all_tasks() == tasks  # no task for a hand-over
        await asyncio.sleep(0)  # one turn of the loop
        assert len(made) == n and all_made.is_set()
        for t in made:  # each transport is the loop's
            t.write(b"+PONG\r\n")
        for p in peers:
            p.settimeout(10)
            assert p.recv(16) == b"+PONG\r\n"
        for t in made:
            t.close()
        for p in peers:
            p.close()
        acceptor.close()

    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(scenario())


def test_a_hand_over_that_fails_closes_the_accepted_socket() -> None:
    """A connection the loop cannot take (the peer gone while its transport is made: the loop's
    coroutine ends in an OSError, at its first step or after its wait) is closed here, and the
    accept goes on to the next.  asyncio's loop, whose method a test can replace."""

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        listening = socket.create_server(("127.0.0.1", 0), backlog=8)
        peers = [socket.create_connection(listening.getsockname()) for _ in range(2)]
        gate = loop.create_future()
        taken: list[socket.socket] = []

        async def failing(factory: object, sock: socket.socket) -> None:
            taken.append(sock)
            if len(taken) == 2:  # the second after a wait, as the loop's waiter
                await gate
            raise ConnectionResetError("gone")

        loop.connect_accepted_socket = failing  # type: ignore[method-assign, assignment]
        acceptor = Acceptor(loop, listening, lambda conn, peer: asyncio.Protocol())
        acceptor.accept_waiting()
        assert len(taken) == 2
        assert taken[0].fileno() == -1 and taken[1].fileno() != -1
        gate.set_result(None)
        await asyncio.sleep(0)  # the waiter's done callback takes the coroutine's last step
        assert taken[1].fileno() == -1
        acceptor.close()
        for p in peers:
            p.close()

    with asyncio.Runner(loop_factory=asyncio.new_event_loop) as runner:
        runner.run(scenario())


def test_the_cluster_bus_takes_every_waiting_connection_at_once() -> None:
    """The cluster port accepts as the data port does: one readable event takes every node's
    connection waiting, each an inbound link of the bus (a plain-TCP bus: tls-cluster no)."""
    from types import SimpleNamespace

    from raxdb.server.cluster.bus import Bus

    n = 8

    async def scenario() -> None:
        listening, _, peers = _listening(n)
        bus = Bus(SimpleNamespace(st=SimpleNamespace(nodes={}), values=dict))  # type: ignore[arg-type]
        bus.listen([listening])
        bus.listeners[0].accept_waiting()  # one readable event
        with pytest.raises(BlockingIOError):
            listening.accept()
        for _ in range(1000):  # the hand-over tasks run on the next turns
            if len(bus.inbound) == n:
                break
            await asyncio.sleep(0)
        assert len(bus.inbound) == n and all(link.inbound and link.node is None for link in bus.inbound)
        bus.close()
        assert listening.fileno() == -1
        for p in peers:
            p.close()

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(scenario())
