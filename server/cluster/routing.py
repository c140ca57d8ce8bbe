"""Which node serves a command: Redis 7.0's getNodeByQuery and clusterRedirectClient.

What it is.  `route(cluster, c, cmd, argv)` runs for every command a client sends in cluster mode
(processCommand's cluster redirection, after the ACL check and before queueing in MULTI): the
keys of the command (of every queued command, for EXEC) must hash to one slot, served here, or
the reply is the redirection or error Redis gives, word for word: MOVED and ASK (to the endpoint
cluster-preferred-endpoint-type names), TRYAGAIN, CROSSSLOT and the three CLUSTERDOWN texts.
READONLY clients may read a slot of their master on a replica; ASKING lets one command (or one
transaction) reach a slot being imported.

Rule: decides and words the reply; the dispatcher (net/client.py) emits it, counts it and
discards or flags the transaction.  The cluster's clients flags live on the client as
`cluster_flags` (ASKING, READONLY).

Invariants: a command without keys is served here whatever the slot map says; the ASKING flag
lasts for one command, or until EXEC ends the transaction it was given in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from raxdb.server.cluster.state import OK
from raxdb.server.table.getkeys import key_positions
from raxdb.storage.slots import key_hash_slot

if TYPE_CHECKING:
    from raxdb.server.cluster.manager import Cluster

ASKING = 1
READONLY = 2

CROSSSLOT = b"CROSSSLOT Keys in request don't hash to the same slot"
TRYAGAIN = b"TRYAGAIN Multiple keys request during rehashing of slot"
DOWN = b"CLUSTERDOWN The cluster is down"
DOWN_RO = b"CLUSTERDOWN The cluster is down and only accepts read commands"
UNBOUND = b"CLUSTERDOWN Hash slot not served"

_PUBSUBSHARD = frozenset(("spublish", "ssubscribe", "sunsubscribe"))


def endpoint(cluster: Cluster, node: Any) -> str:
    """getPreferredEndpoint."""
    kind = cluster.values()["cluster-preferred-endpoint-type"]
    if kind == "ip":
        return node.ip
    if kind == "hostname":
        return node.hostname or "?"
    return "?"


def route(cluster: Cluster, c: Any, cmd: Any, argv: list[bytes]) -> bytes | None:
    """None when this node serves the command, else the error reply's text (no '-', no CRLF)."""
    asking = c.cluster_flags & ASKING
    name = cmd.fullname
    if name != "asking" and (c.multi is None or name == "exec"):
        c.cluster_flags &= ~ASKING
    if name == "exec":
        if c.multi is None:
            return None
        commands = c.multi
    else:
        commands = ((cmd, argv),)
    st = cluster.st
    myself = st.myself
    db = c.server.dbs[0]
    now = c.server.now_ms
    first: bytes | None = None
    slot = 0
    owner = None
    migrating = importing = multiple = False
    missing = existing = 0
    pubsubshard = False
    writes = False
    for qcmd, qargv in commands:
        positions = key_positions(qcmd, qargv)
        if not positions:
            continue
        if "write" in qcmd.flags:
            writes = True
        if qcmd.fullname in _PUBSUBSHARD:
            pubsubshard = True
        for p in positions:
            key = qargv[p]
            this = key_hash_slot(key)
            if first is None:
                first, slot = key, this
                owner = st.slots[slot]
                if owner is None:
                    return UNBOUND
                if owner is myself and slot in st.migrating:
                    migrating = True
                elif slot in st.importing:
                    importing = True
            elif key != first:
                if this != slot:
                    return CROSSSLOT
                multiple = True
            if (migrating or importing) and not pubsubshard:
                if db.peek(key, now) is None:
                    missing += 1
                else:
                    existing += 1
    if owner is None:
        return None
    if st.state != OK:
        values = cluster.values()
        if pubsubshard:
            if values["cluster-allow-pubsubshard-when-down"] != "yes":
                return DOWN
        elif values["cluster-allow-reads-when-down"] != "yes":
            return DOWN
        elif writes:
            return DOWN_RO
    if (migrating or importing) and name == "migrate":
        return None
    if migrating and missing:
        if existing:
            return TRYAGAIN
        return _redirect(cluster, c, b"ASK", slot, st.migrating[slot])
    if importing and (asking or "asking" in cmd.flags):
        if multiple and missing:
            return TRYAGAIN
        return None
    if (c.cluster_flags & READONLY or pubsubshard) and not writes and myself.is_replica() \
            and myself.slaveof is owner:
        return None
    if owner is not myself:
        return _redirect(cluster, c, b"MOVED", slot, owner)
    return None


def _redirect(cluster: Cluster, c: Any, kind: bytes, slot: int, node: Any) -> bytes:
    use_pport = cluster.values().get("tls-cluster") == "yes" and not getattr(c, "is_tls", False)
    port = node.pport if use_pport and node.pport else node.port
    return b"%s %d %s:%d" % (kind, slot, endpoint(cluster, node).encode(), port)
