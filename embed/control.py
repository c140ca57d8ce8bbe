"""The caller's side of raxdb's test controls: one command sent to a server that serve() started.

The handle's controls (moving the clock, injecting faults) are DEBUG subcommands on the wire
(server/commands/testcontrols.py); this module sends one and returns its reply, so that the
handle needs no client library.

Rule: a connection per call, opened and closed here, to the address the handle serves (TCP, or the
unix socket of a server without TCP); nothing else of the server is known here.  (`connect` and
`exchange` also serve the one connection a handle keeps open while its server refuses
connections: raxdb/embed/faults.py.)
Invariants: an error reply raises ControlError with the server's text; the reply is parsed by
hiredis, a dependency of raxdb itself, imported on the first call (importing raxdb.embed stays
standard library only).
"""

from __future__ import annotations

import socket
from typing import Any

_TIMEOUT = 30.0  # seconds for one control's round trip: a control never blocks the server


class ControlError(RuntimeError):
    """The server refused a control (its error reply's text), or could not be reached."""


def encode(args: tuple[Any, ...]) -> bytes:
    parts = [f"*{len(args)}\r\n".encode()]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


def call(host: str, port: int, unixsocket: str | None, password: str | None, *args: Any) -> Any:
    """Send `args` as one command (after AUTH when the server has a password) and return the
    decoded reply of the command; raises ControlError on an error reply."""
    commands = [("AUTH", password)] if password else []
    commands.append(args)
    with connect(host, port, unixsocket) as sock:
        replies = exchange(sock, commands)
    for reply in replies:
        if isinstance(reply, ControlError):
            raise reply
    return replies[-1]


def connect(host: str, port: int, unixsocket: str | None) -> socket.socket:
    """A connection to the server's TCP port, or its unix socket when it has no TCP port."""
    try:
        if port or not unixsocket:
            return socket.create_connection((host, port), timeout=_TIMEOUT)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(_TIMEOUT)
        try:
            sock.connect(unixsocket)
        except BaseException:
            sock.close()
            raise
        return sock
    except OSError as exc:
        raise ControlError(f"cannot reach the server: {exc}") from None


def exchange(sock: socket.socket, commands: list[tuple[Any, ...]]) -> list[Any]:
    """Send `commands` and read their replies (an error reply is a ControlError in the list)."""
    import hiredis

    reader = hiredis.Reader(replyError=ControlError)
    try:
        sock.sendall(b"".join(encode(c) for c in commands))
        replies: list[Any] = []
        while len(replies) < len(commands):
            reply = reader.gets()
            if reply is False:
                data = sock.recv(65536)
                if not data:
                    raise ControlError("the server closed the connection before it answered")
                reader.feed(data)
                continue
            replies.append(reply)
    except OSError as exc:
        raise ControlError(f"lost the server: {exc}") from None
    return replies
