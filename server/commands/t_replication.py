"""The master side's commands: SYNC, PSYNC, REPLCONF, WAIT and FAILOVER (replication.c's syncCommand,
replconfCommand, waitCommand, failoverCommand).  The logic is server/replication/master.py's and
server/replication/failover.py's; these parse and dispatch."""

from __future__ import annotations

from raxdb.server.base.errors import NOT_POSITIVE, CommandError
from raxdb.server.net import blocking
from raxdb.server.table.args import maybe_int, to_int
from raxdb.server.table.registry import NO_REPLY, command


@command("sync")
@command("psync")
def sync(c, argv):
    """syncCommand serves both: the master side tells them apart by argv[0]."""
    return c.server.repl.master.sync(c, argv) or NO_REPLY


@command("replconf")
def replconf(c, argv):
    return c.server.repl.master.replconf(c, argv) or NO_REPLY


@command("failover")
def failover(c, argv):
    if c.server.cluster is not None:
        raise CommandError("ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead.")
    return c.server.repl.failover.command(c, argv)


@command("waitaof")
def waitaof(c, argv):
    """WAITAOF numlocal numreplicas timeout (7.2, compat-version): [local, replicas] whose AOF
    has the client's last write on disk (Client.write_offset), once both counts are reached or the
    timeout passed."""
    srv = c.server
    numlocal = to_int(argv[1])
    if not 0 <= numlocal <= 1:
        raise CommandError("ERR value is out of range, value must between 0 and 1")
    numreplicas = maybe_int(argv[2])
    if numreplicas is None or numreplicas < 0:  # getPositiveLong...: one error for both
        raise CommandError(NOT_POSITIVE)
    deadline = blocking.parse_timeout_ms(argv[3], srv.now_ms)
    if srv.repl.masterhost is not None:
        raise CommandError("ERR WAITAOF cannot be used with replica instances. Please also note that writes to "
                           "replicas are just local and are not propagated.")
    if numlocal and srv.config.values["appendonly"] != "yes":
        raise CommandError("ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.")
    return srv.repl.master.waitaof(c, numlocal, numreplicas, deadline)


@command("wait")
def wait(c, argv):
    """WAIT numreplicas timeout: the replicas that acknowledged the client's last write, once
    `numreplicas` did or the timeout passed; at once inside MULTI and scripts."""
    srv = c.server
    if srv.repl.masterhost is not None:
        raise CommandError("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 "
                           "if a replica is configured to be writable (which is not the default) writes to "
                           "replicas are just local and are not propagated.")
    numreplicas = to_int(argv[1])
    deadline = blocking.parse_timeout_ms(argv[2], srv.now_ms)
    return srv.repl.master.wait(c, numreplicas, deadline)
