"""The unix domain socket listener: `unixsocket <path>` with `unixsocketperm <octal>`.

Redis 7.0 listens on one unix socket besides its TCP ports when `unixsocket` is set (both options
are immutable, so the path never changes while the server runs).  Start-up removes whatever file
is at the path first (a socket left by a server that crashed would make bind fail), binds, applies
unixsocketperm (0: leave the umask's mode) before listen, as anetListen does, and a failure ends
start-up with "Failed opening Unix socket: <why>" and exit code 1.  Shutdown removes the file
again (closeListeningSockets(1)); a forked child never does, as it leaves with os._exit.

A client of this socket is a Client like any other; the factory marks it `unix_socket` before
the transport arrives, and Client.connection_made gives it Redis's address for such peers:
`<path>:0` for both addr and laddr (genClientAddrString), "U" among its flags, `unix:<path>` in
MONITOR lines and "/unixsocket" as a replica's ip (anetFdToString's name for an AF_UNIX peer).
Protected mode does not apply to it (islocalClient).
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

from raxdb.server.base.log import LOG
from raxdb.server.conn.unixaddr import configured
from raxdb.server.net.accept import Acceptor
from raxdb.server.net.client import Client

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server
    from raxdb.server.net.client import Client

# sizeof(struct sockaddr_un.sun_path) on Linux: the path and its terminating NUL must fit
_SUN_PATH = 108


def bind(srv: Server) -> socket.socket | None:
    """The bound, listening socket for `unixsocket` (None when it is not set).  A failure is
    logged as Redis logs it and ends start-up."""
    path = configured(srv)
    if not path:
        return None
    raw = os.fsencode(path)
    try:
        os.unlink(raw)
    except OSError:
        pass  # nothing there, or not ours to remove: bind reports what matters
    try:
        return _listen(raw, int(srv.config.values["unixsocketperm"], 8), int(srv.config.values["tcp-backlog"]))
    except _Failed as exc:
        LOG.warning(f"Failed opening Unix socket: {exc}")
        raise SystemExit(1) from None


class _Failed(Exception):
    """anetUnixServer's error text."""


def _listen(path: bytes, perm: int, backlog: int) -> socket.socket:
    if len(path) > _SUN_PATH - 1:
        raise _Failed(f"unix socket path too long ({len(path)}), must be under {_SUN_PATH}")
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError as exc:
        raise _Failed(f"creating socket: {exc.strerror}") from None
    try:
        try:
            sock.bind(path)
        except OSError as exc:
            raise _Failed(f"bind: {exc.strerror}") from None
        if perm:
            try:
                os.chmod(path, perm)
            except OSError:
                pass  # Redis does not check chmod either
        try:
            sock.listen(backlog)
        except OSError as exc:
            raise _Failed(f"listen: {exc.strerror}") from None
    except _Failed:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


async def serve(srv: Server, sock: socket.socket) -> Acceptor:
    def accepted(conn: socket.socket, peer: object) -> Client:
        client = Client(srv)
        client.unix_socket = True
        client.take_socket(conn, None, None)
        return client

    assert srv.loop is not None
    return Acceptor(srv.loop, sock, accepted)  # listening with tcp-backlog since bind()


def remove(srv: Server) -> None:
    """closeListeningSockets(1)'s unlink, on the way out."""
    path = configured(srv)
    if not path:
        return
    LOG.notice("Removing the unix socket file.")
    try:
        os.unlink(os.fsencode(path))
    except OSError as exc:
        LOG.warning(f"Error removing the unix socket file: {exc.strerror}")
