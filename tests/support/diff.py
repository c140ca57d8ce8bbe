"""The differential harness: send the same commands to raxdb and to redis-server 7.0, compare the
raw reply bytes exactly.

    def test_something(diff):
        diff("SET", "k", "v")                 # asserts both replies are byte-identical
        diff.check("SET k v EX 10")           # the same, inline-split (quotes as redis-cli)
        ours, theirs = diff.both("TTL", "k")  # no assertion: for replies that may differ (time, random)
        diff.unordered("SMEMBERS", "s")       # same elements, order ignored (top-level array)

The `diff` fixture runs each test twice, in RESP2 and in RESP3 (HELLO 3 on both connections), and
FLUSHALLs both servers first.  Comparing bytes, not parsed values, catches status-vs-bulk,
map-vs-array and double formatting differences that client libraries would hide.
"""

from __future__ import annotations

import socket
from typing import Any

import hiredis

from raxdb.protocol.request import split_inline_args


def encode_command(args: tuple[Any, ...] | list[Any]) -> bytes:
    parts = []
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int | float):
            a = str(a).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"*%d\r\n" % len(parts) + b"".join(parts)


def frame_end(buf: bytes | bytearray, pos: int) -> int | None:
    """Index just past the RESP frame starting at buf[pos], or None if it is incomplete."""
    nl = buf.find(b"\r\n", pos)
    if nl < 0:
        return None
    t = buf[pos : pos + 1]
    if t in (b"+", b"-", b":", b",", b"#", b"_", b"("):
        return nl + 2
    if t in (b"$", b"=", b"!"):
        n = int(buf[pos + 1 : nl])
        if n < 0:
            return nl + 2
        end = nl + 2 + n + 2
        return end if len(buf) >= end else None
    if t in (b"*", b"~", b">", b"%", b"|"):
        n = int(buf[pos + 1 : nl])
        if t in (b"%", b"|"):
            n *= 2
        p = nl + 2
        for _ in range(max(n, 0)):
            q = frame_end(buf, p)
            if q is None:
                return None
            p = q
        if t == b"|":  # attribute: followed by the real reply
            return frame_end(buf, p)
        return p
    raise ValueError(f"bad frame start {buf[pos:pos + 20]!r}")


class RawConnection:
    """A blocking connection that returns each reply's raw bytes (one complete RESP frame)."""

    def __init__(self, port: int | str, timeout: float = 30.0) -> None:
        """`port` on loopback, or a str: the path of a unix domain socket."""
        if isinstance(port, str):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(port)
        else:
            self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("connection closed")
        self.buf += chunk

    def read_frame(self) -> bytes:
        while True:
            end = frame_end(self.buf, 0) if self.buf else None
            if end is not None:
                frame, self.buf = self.buf[:end], self.buf[end:]
                return frame
            self._fill()

    def call(self, *args: Any) -> bytes:
        self.send(encode_command(args))
        return self.read_frame()


def parse(frame: bytes) -> Any:
    r = hiredis.Reader()
    r.feed(frame)
    return r.gets()


class Diff:
    def __init__(self, ours_port: int, theirs_port: int, protocol: int = 2) -> None:
        self.protocol = protocol
        self.ours = RawConnection(ours_port)
        self.theirs = RawConnection(theirs_port)
        if protocol == 3:
            self.both("HELLO", "3")

    def close(self) -> None:
        self.ours.close()
        self.theirs.close()

    def both(self, *args: Any) -> tuple[bytes, bytes]:
        return self.ours.call(*args), self.theirs.call(*args)

    def __call__(self, *args: Any) -> bytes:
        ours, theirs = self.both(*args)
        assert ours == theirs, f"RESP{self.protocol} {args!r}\n  raxdb: {ours!r}\n  redis: {theirs!r}"
        return ours

    def check(self, line: str) -> bytes:
        args = split_inline_args(line.encode())
        assert args is not None
        return self(*args)

    def script(self, text: str) -> None:
        """One command per line, inline syntax; blank lines and #comments skipped."""
        for line in text.splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                self.check(line)

    def unordered(self, *args: Any) -> Any:
        ours, theirs = self.both(*args)
        a, b = parse(ours), parse(theirs)
        if isinstance(a, list) and isinstance(b, list):
            key = repr
            assert sorted(a, key=key) == sorted(b, key=key), f"{args!r}\n  raxdb: {a!r}\n  redis: {b!r}"
        else:
            assert ours == theirs, f"{args!r}\n  raxdb: {ours!r}\n  redis: {theirs!r}"
        return a

    def raw(self, data: bytes) -> tuple[bytes, bytes]:
        """Send raw bytes to both; return one reply frame from each."""
        self.ours.send(data)
        self.theirs.send(data)
        return self.ours.read_frame(), self.theirs.read_frame()
