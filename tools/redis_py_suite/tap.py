"""A recording TCP proxy for the redis-py suite run: every request a client sends and the reply the
server gives it, one JSON line per pair, so two runs of the same tests (one against redis-server,
one against raxdb) can be compared reply by reply with replies.py.

    python tap.py LISTEN_PORT TARGET_PORT LOG

Bytes are forwarded unchanged in both directions as they arrive; the recording is a side copy.
Requests and replies are split into RESP frames (the raw bytes of each whole frame, so a reply's
type is compared as well as its value) and paired in order, which holds on one connection because
Redis answers its requests in order, pipelined or not.  It stops holding where one request gets
several frames or none: SUBSCRIBE and its kin, MONITOR, CLIENT REPLY, so a connection's pairing
ends at the first of those (its bytes are still forwarded).  RESP3 push frames (">", invalidation
messages and pub/sub) are not replies and are dropped from the pairing.  Each connection appends
its own pairs, tagged with its sequence number, to the shared log file.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, for tests.support.diff
from tests.support.diff import frame_end  # noqa: E402

# commands after which one request no longer gets exactly one reply frame on that connection
UNPAIRED = {b"subscribe", b"psubscribe", b"ssubscribe", b"monitor", b"reset", b"sync", b"psync"}


def request_args(frame: bytes) -> list[bytes]:
    if not frame.startswith(b"*"):
        return frame.strip().split()
    args, pos = [], frame.find(b"\r\n") + 2
    while pos < len(frame):
        line = frame.find(b"\r\n", pos)
        size = int(frame[pos + 1:line])
        args.append(frame[line + 2:line + 2 + size])
        pos = line + 2 + size + 2
    return args


class Pairing:
    """One connection's requests awaiting their replies, and its pairs written to the log."""

    def __init__(self, log: IO[str], conn: int) -> None:
        self.log, self.conn = log, conn
        self.requests: list[list[bytes]] = []
        self.up, self.down = bytearray(), bytearray()
        self.live = True

    def sent(self, data: bytes) -> None:
        self._take(self.up, data, self._split_requests)

    def received(self, data: bytes) -> None:
        self._take(self.down, data, self._pair_replies)

    def _take(self, buf: bytearray, data: bytes, parse: Callable[[], None]) -> None:
        """Append to one direction's buffer and parse what is whole; anything not RESP (an inline
        command) ends this connection's pairing."""
        if not self.live:
            return
        buf += data
        try:
            parse()
        except ValueError:
            self.live = False

    def _split_requests(self) -> None:
        while (end := frame_end(self.up, 0)) is not None:
            args = request_args(bytes(self.up[:end]))
            del self.up[:end]
            if len(args) > 1 and args[0].lower() == b"client" and args[1].lower() == b"reply":
                self.live = False  # OFF and SKIP answer nothing: what follows cannot be paired
                return
            if args:
                self.requests.append(args)

    def _pair_replies(self) -> None:
        while (end := frame_end(self.down, 0)) is not None:
            frame = bytes(self.down[:end])
            del self.down[:end]
            if frame.startswith(b">") or not self.requests:
                continue
            args = self.requests.pop(0)
            self.log.write(json.dumps({"conn": self.conn, "req": [a.decode("latin-1") for a in args],
                                       "rep": frame.decode("latin-1")}) + "\n")
            if args[0].lower() in UNPAIRED:
                self.live = False
                return


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, record) -> None:
    try:
        while data := await reader.read(65536):
            record(data)
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def main(listen: int, target: int, path: str) -> None:
    log = open(path, "a", buffering=1)
    count = 0

    async def serve(c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        nonlocal count
        count += 1
        pairing = Pairing(log, count)
        try:
            s_reader, s_writer = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            c_writer.close()
            return
        await asyncio.gather(pump(c_reader, s_writer, pairing.sent), pump(s_reader, c_writer, pairing.received))

    server = await asyncio.start_server(serve, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]))
