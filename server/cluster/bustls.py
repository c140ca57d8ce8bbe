"""The cluster bus over TLS (`tls-cluster yes`): each bus link under raxdb's own TLS layer.

What it is.  With tls-cluster yes Redis makes every bus connection a TLS one (connCreateTLS for
the links it opens, connCreateAcceptedTLS for the ones it accepts on the cluster port), with the
contexts of the tls-* options: the server side presents tls-cert-file and asks for client
certificates as tls-auth-clients says; the client side presents tls-client-cert-file (or
tls-cert-file) and checks the peer against the CA, without a host name check.  `wrap` puts a bus
link (bus.py's Link) above server/net/tls.py's `Link` with the context current at that accept or
connect, so the bus link sees a transport as it does over plain TCP and is told of the connection
once the handshake is done.  A failed handshake is logged at verbose level, as Redis logs it
("Error accepting cluster node connection: ..." / "Connection with Node ... failed: ..."), and the
bus link hears of the loss (the cron dials again).  The announced ports follow (manager.py: the
TLS port is the one announced, the plaintext one goes as pport).

Rule: TLS itself is net/tls.py's; this module only says when and with which context.

Invariants: with tls-cluster no, `wrap` returns the bus link itself: plain TCP, nothing between.
"""

from __future__ import annotations

# `cluster` is manager.py's Cluster, not imported: the manager imports this module
from typing import Any

from raxdb.server.base.log import LOG
from raxdb.server.net import tls


def wrap(cluster: Any, link: Any) -> Any:
    """The protocol for a bus connection: `link` itself, or the TLS layer with `link` above it."""
    values = cluster.values()
    if values.get("tls-cluster") != "yes":
        return link
    srv = cluster.srv
    if link.inbound:
        return tls.Link(srv, link, srv.tls_context, True,
                        lambda err: LOG.verbose(f"Error accepting cluster node connection: {err}"))
    node = link.node

    def failed(err: str) -> None:
        LOG.verbose(f"Connection with Node {node.name} at {node.ip}:{node.cport} failed: {err}")

    return tls.Link(srv, link, srv.tls_client_context, False, failed)
