"""REPLICAOF / SLAVEOF: make this server a replica of another, or a master again (NO ONE).

The replies and log lines are replicaofCommand's; the work is server/replication/replica.py's."""

from __future__ import annotations

from raxdb.protocol import reply as R
from raxdb.server.base.errors import CommandError
from raxdb.server.base.log import LOG
from raxdb.server.conn.clientinfo import client_info_line
from raxdb.server.conn.obuf import is_replica
from raxdb.server.table.args import maybe_int
from raxdb.server.table.registry import command


@command("replicaof")
@command("slaveof")
def replicaof(c, argv):
    from raxdb.server.replication import (
        replica,  # at run time: server.replica builds on the client and ACL modules
    )

    srv = c.server
    if srv.cluster is not None:  # a cluster's replicas follow CLUSTER REPLICATE and failovers
        raise CommandError("ERR REPLICAOF not allowed in cluster mode.")
    repl = srv.repl
    if repl.failover.active:
        raise CommandError("ERR REPLICAOF not allowed while failing over.")
    if argv[1].lower() == b"no" and argv[2].lower() == b"one":
        if repl.masterhost is not None:
            replica.unset_master(srv)
            LOG.notice(f"MASTER MODE enabled (user request from '{client_info_line(c, c)}')")
        return R.OK
    if is_replica(c):
        raise CommandError("ERR Command is not valid when client is a replica.")
    port = _port(argv[2])
    host = argv[1].decode(errors="surrogateescape")
    if repl.masterhost is not None and repl.masterhost.lower() == host.lower() and repl.masterport == port:
        LOG.notice("REPLICAOF would result into synchronization with the master we are already connected "
                   "with. No operation performed.")
        return b"+OK Already connected to specified master\r\n"
    replica.set_master(srv, host, port)
    LOG.notice(f"REPLICAOF {host}:{port} enabled (user request from '{client_info_line(c, c)}')")
    return R.OK


def _port(arg: bytes) -> int:
    """getRangeLongFromObjectOrReply(0, 65535, "Invalid master port")."""
    port = maybe_int(arg)
    if port is None or not 0 <= port <= 65535:
        raise CommandError("ERR Invalid master port")
    return port
