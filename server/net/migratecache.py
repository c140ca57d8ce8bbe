"""MIGRATE's cached connections: one blocking socket per target host:port, kept between MIGRATEs
as Redis's migrateGetSocket / migrateCloseSocket / migrateCloseTimedoutSockets keep them.

The cache is `Server.migrate_sockets` (host:port -> `Cached`; INFO's migrate_cached_sockets counts
it).  MIGRATE (commands/t_migrate.py) takes a connection with `get_socket` and drops it with
`close` on any error; the server's cron (server/core.py, once a second) calls `close_idle`.

Rule: imports only the layers below it (memory, events, config, security, conn, table, base).

With tls-cluster yes a connection is a TLS one, made with the client side of server/net/tls.py's
contexts, its handshake done (blocking, within MIGRATE's timeout) before it is cached.

Invariants: at most CACHE_ITEMS (64) connections, a random one closed to make room for a new one;
one unused for more than CACHE_TTL (10 s) is closed by the next cron visit; each remembers the
database it last selected on its target (`last_dbid`, -1 when unknown), so MIGRATE sends SELECT
only when it must.  Connecting raises MIGRATE's IOERR replies.
"""

from __future__ import annotations

import random
import socket
import time
from typing import Any

from raxdb.server.base.errors import CommandError

CACHE_ITEMS = 64  # MIGRATE_SOCKET_CACHE_ITEMS
CACHE_TTL = 10.0  # MIGRATE_SOCKET_CACHE_TTL, seconds


class Cached:
    __slots__ = ("sock", "last_dbid", "last_use", "buf")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.last_dbid = -1
        self.last_use = time.monotonic()
        self.buf = b""

    def read_line(self, timeout: float) -> bytes:
        """syncReadLine: one reply line (without CRLF); OSError on a timeout or a closed socket."""
        deadline = time.monotonic() + timeout
        while b"\r\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("read timeout")
            self.sock.settimeout(left)
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionResetError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line


def close_idle(srv: Any) -> None:
    """migrateCloseTimedoutSockets, from the cron."""
    cache = srv.migrate_sockets
    now = time.monotonic()
    for name, cs in list(cache.items()):
        if now - cs.last_use > CACHE_TTL:
            cs.sock.close()
            del cache[name]


def close(srv: Any, name: bytes) -> None:
    """migrateCloseSocket: the connection to `name` (host:port) closed and forgotten."""
    cs = srv.migrate_sockets.pop(name, None)
    if cs is not None:
        cs.sock.close()


def get_socket(srv: Any, host: bytes, port: bytes, timeout: float) -> Cached:
    """migrateGetSocket: the cached connection to host:port, or a new one (CommandError: IOERR)."""
    cache = srv.migrate_sockets
    name = host + b":" + port
    cs = cache.get(name)
    if cs is not None:
        cs.last_use = time.monotonic()
        return cs
    if len(cache) >= CACHE_ITEMS:
        close(srv, random.choice(list(cache)))
    try:
        sock = socket.create_connection((host.decode(errors="replace"), int(port)), timeout=timeout)
    except ConnectionRefusedError:
        # Redis connects without blocking and a refused connection still polls writable, so
        # what fails, and what it reports, is the first write
        raise CommandError("IOERR error or timeout writing to target instance") from None
    except (OSError, ValueError):
        raise CommandError("IOERR error or timeout connecting to the client") from None
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if srv.config.values["tls-cluster"] == "yes":  # migrateGetSocket takes connCreateTLS then
        try:
            sock = srv.tls_client_context.wrap_socket(sock)
        except (OSError, ValueError):
            sock.close()
            raise CommandError("IOERR error or timeout connecting to the client") from None
    cs = cache[name] = Cached(sock)
    return cs
