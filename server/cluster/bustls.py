"""The cluster bus over TLS (`tls-cluster yes`): which SSL context each side of a bus link uses.

What it is.  With tls-cluster yes Redis makes every bus connection a TLS one (connCreateTLS for
the links it opens, connCreateAcceptedTLS for the ones it accepts on the cluster port), with the
contexts of the tls-* options: the server side presents tls-cert-file and asks for client
certificates as tls-auth-clients says; the client side presents tls-client-cert-file (or
tls-cert-file) and checks the peer against the CA, without a host name check.  These are
server/net/tls.py's two contexts; this module only says when the bus takes them.  The announced
ports follow (manager.py: the TLS port is the one announced, the plaintext one goes as pport).

Rule: a bus listener takes the context current when it starts listening; each outbound link the
context current when it connects (a CONFIG SET of the tls-* options reaches new links).

Invariants: with tls-cluster no both are None and the bus is plain TCP.
"""

from __future__ import annotations

# `cluster` is manager.py's Cluster, not imported: the manager imports this module
import ssl
from typing import Any


def _on(cluster: Any) -> bool:
    return cluster.values().get("tls-cluster") == "yes"


def accept_context(cluster: Any) -> ssl.SSLContext | None:
    return cluster.srv.tls_context if _on(cluster) else None


def connect_context(cluster: Any) -> ssl.SSLContext | None:
    return cluster.srv.tls_client_context if _on(cluster) else None
