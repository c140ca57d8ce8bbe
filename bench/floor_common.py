"""The server around bench/floor_*.py's experiments: a uvloop + hiredis protocol that hands each
request to one function and queues the replies for one write per event-loop iteration, as raxdb
does.  `CONFIG` (which redis-benchmark asks) gets an empty array and every other command +OK."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import hiredis
import uvloop

pending: list[tuple[asyncio.Transport, bytes]] = []


def flush() -> None:
    for transport, data in pending:
        transport.write(data)
    pending.clear()


def protocol(name: bytes, handler: Callable[[list[bytes]], bytes]) -> type[asyncio.Protocol]:
    """A protocol that answers the command `name` with handler(argv)."""

    class Floor(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport
            self.reader = hiredis.Reader()

        def data_received(self, data: bytes) -> None:
            reader = self.reader
            reader.feed(data)
            out = []
            while (argv := reader.gets()) is not False:
                cmd = argv[0]
                out.append(handler(argv) if cmd == name else b"*0\r\n" if cmd == b"CONFIG" else b"+OK\r\n")
            pending.append((self.transport, b"".join(out)))  # type: ignore[arg-type]
            if len(pending) == 1:
                asyncio.get_running_loop().call_soon(flush)

    return Floor


def serve(port: int, proto: type[asyncio.Protocol]) -> None:
    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(proto, "127.0.0.1", port)
        await server.serve_forever()

    uvloop.install()
    asyncio.run(main())
