"""How a client of the unix socket is named (genClientAddrString, anetFdToString for AF_UNIX): its
addr and laddr, its origin in MONITOR lines, and its "ip" as a replica.  net/unixsocket.py owns the
listener; these names are what the lower layers (lifecycle, replication) need of it.

Rule: reads the server's configuration through its interface; imports nothing of the server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server

PEER_IP = "/unixsocket"  # anetFdToString's "ip" of an AF_UNIX peer (a replica's ip in INFO)


def configured(srv: Server) -> str:
    """The socket's path, '' when the server has none."""
    return srv.config.values["unixsocket"]


def client_addr(srv: Server) -> str:
    """addr and laddr of a unix socket client (genClientAddrString)."""
    return configured(srv) + ":0"


def monitor_origin(srv: Server) -> str:
    """What a MONITOR line shows for a command a unix socket client ran."""
    return "unix:" + configured(srv)
