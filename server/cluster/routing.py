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

The fast loop (net/client.py) runs a command without execute() when route() would serve it here
and change nothing: no key, or keys of one slot the cluster state's `served` map has (this
node's, stable, the cluster ok), no ASKING pending; everything else goes through execute() and
route().

Invariants: a command without keys is served here whatever the slot map says; the ASKING flag
lasts for one command, or until EXEC ends the transaction it was given in.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from raxdb.server.base.errors import TRYAGAIN
from raxdb.server.base.fields import ASKED, ASKING, READONLY
from raxdb.server.base.multiqueue import queued
from raxdb.server.cluster.state import OK
from raxdb.server.table.getkeys import key_positions

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

if not cython.compiled:  # compiled, routing.pxd cimports it: a C call
    from raxdb.storage.slots import key_hash_slot

if TYPE_CHECKING:
    from raxdb.server.cluster.manager import Cluster

# ASKING, READONLY and ASKED, a client's cluster_flags, are server/base/fields.py's (the fast loop
# reads them there); ASKED: the command running now came after ASKING (a script's commands inherit it)

# getNodeByQuery's error codes
NONE, CROSS_SLOT, UNSTABLE, ASK, MOVED, DOWN_STATE, DOWN_UNBOUND, DOWN_RO_STATE = range(8)

TEXTS = {
    CROSS_SLOT: b"CROSSSLOT Keys in request don't hash to the same slot",
    UNSTABLE: TRYAGAIN,
    DOWN_STATE: b"CLUSTERDOWN The cluster is down",
    DOWN_RO_STATE: b"CLUSTERDOWN The cluster is down and only accepts read commands",
    DOWN_UNBOUND: b"CLUSTERDOWN Hash slot not served",
}

_PUBSUBSHARD = frozenset(("spublish", "ssubscribe", "sunsubscribe"))


def endpoint(cluster: Cluster, node: Any) -> str:
    """getPreferredEndpoint."""
    kind = cluster.values()["cluster-preferred-endpoint-type"]
    if kind == "ip":
        return node.ip
    if kind == "hostname":
        return node.hostname or "?"
    return ""  # unknown-endpoint: MOVED <slot> :<port>


def route(cluster: Cluster, c: Any, cmd: Any, argv: list[bytes]) -> bytes | None:
    """None when this node serves the command, else the error reply's text (no '-', no CRLF)."""
    flags = c.cluster_flags
    asking = flags & ASKING
    name = cmd.fullname
    flags &= ~ASKED
    if name != "asking" and (c.multi is None or name == "exec"):
        flags &= ~ASKING  # resetClient: ASKING lasts one command, or the transaction
    c.cluster_flags = flags | (ASKED if asking else 0)
    if name == "exec":
        if c.multi is None:
            return None
        commands: Iterable[tuple[Any, list[bytes]]] = queued(c.multi)
    else:
        # the common case first: one key, in a stable slot this node serves, the cluster ok
        positions = key_positions(cmd, argv)
        if not positions:
            return None
        if len(positions) == 1 and cluster.st.served[key_hash_slot(argv[positions[0]])]:
            return None  # the slot is this node's, stable, the cluster ok (state.py's `served`)
        commands = ((cmd, argv),)
    # is_write_command as getCommandFlags has it: a script's declared flags, EXEC's queued writes
    code, slot, node = query(cluster, c.server, commands, bool(asking), bool(flags & READONLY),
                             c.writes(cmd, argv))
    if code == NONE:
        return None
    if code in (ASK, MOVED):
        return redirect_text(cluster, c, b"ASK" if code == ASK else b"MOVED", slot, node)
    return TEXTS[code]


def query(cluster: Cluster, srv: Any, commands: Any, asking: bool, readonly: bool,
          is_write: bool = False) -> tuple[int, int, Any]:
    """getNodeByQuery for (cmd, argv) pairs: (error code, the keys' slot or -1, the node to go
    to or None).  `is_write`: the client's command writes by its effective flags (an EVAL of a
    script that may write, an EXEC of a write); the commands' own `write` flags count as well."""
    st = cluster.st
    myself = st.myself
    db = srv.dbs[0]
    now = srv.now_ms
    first: bytes | None = None
    slot = -1
    owner = None
    migrating = importing = multiple = False
    missing = existing = 0
    pubsubshard = False
    writes = is_write
    asking_cmd = False
    for qcmd, qargv in commands:
        positions = key_positions(qcmd, qargv)
        if not positions:
            continue
        if "write" in qcmd.flags:
            writes = True
        if "asking" in qcmd.flags:
            asking_cmd = True
        if qcmd.fullname in _PUBSUBSHARD:
            pubsubshard = True
        for p in positions:
            key = qargv[p]
            this = key_hash_slot(key)
            if first is None:
                first, slot = key, this
                owner = st.slots[slot]
                if owner is None:
                    return DOWN_UNBOUND, slot, None
                if owner is myself and slot in st.migrating:
                    migrating = True
                elif slot in st.importing:
                    importing = True
            elif key != first:
                if this != slot:
                    return CROSS_SLOT, slot, None
                multiple = True
            if (migrating or importing) and not pubsubshard:
                if db.peek(key, now) is None:
                    missing += 1
                else:
                    existing += 1
    if owner is None:
        return NONE, -1, myself
    if st.state != OK:
        values = cluster.values()
        if pubsubshard:
            if values["cluster-allow-pubsubshard-when-down"] != "yes":
                return DOWN_STATE, slot, None
        elif values["cluster-allow-reads-when-down"] != "yes":
            return DOWN_STATE, slot, None
        elif writes:
            return DOWN_RO_STATE, slot, None
    if (migrating or importing) and any(q.fullname == "migrate" for q, _a in commands):
        return NONE, slot, myself
    if migrating and missing:
        if existing:
            return UNSTABLE, slot, None
        target = st.migrating[slot]
        # processCommand redirects only to a node other than myself: a slot set migrating to
        # myself is served here
        return (NONE if target is myself else ASK), slot, target
    if importing and (asking or asking_cmd):
        if multiple and missing:
            return UNSTABLE, slot, None
        return NONE, slot, myself
    if (readonly or pubsubshard) and not writes and myself.is_replica() and myself.slaveof is owner:
        return NONE, slot, myself
    if owner is not myself:
        return MOVED, slot, owner
    return NONE, slot, myself


def _declared_slot(run: Any) -> int:
    """The caller's c->slot: the slot of the keys EVAL / FCALL declared, -1 for none."""
    argv = run.argv
    cmd = run.caller.server.table.lookup(argv)
    positions = key_positions(cmd, argv) if cmd is not None else ()
    return key_hash_slot(argv[positions[0]]) if positions else -1


def script_check(cluster: Cluster, run: Any, cmd: Any, argv: list[bytes]) -> bytes | None:
    """scriptVerifyClusterState: None, or the error (without "ERR ") a script's command gets."""
    caller = run.caller
    if caller.must_obey:
        return None
    flags = caller.cluster_flags
    code, slot, _node = query(cluster, caller.server, ((cmd, argv),), bool(flags & (ASKING | ASKED)),
                              bool(flags & READONLY))
    if code == DOWN_RO_STATE:
        return b"Script attempted to execute a write command while the cluster is down and readonly"
    if code == DOWN_STATE:
        return b"Script attempted to execute a command while the cluster is down"
    if code != NONE:
        return b"Script attempted to access a non local key in a cluster node"
    if slot != -1 and not run.cross_slot:
        if run.cluster_slot is None:
            run.cluster_slot = _declared_slot(run)
        if run.cluster_slot == -1:
            run.cluster_slot = slot
        elif run.cluster_slot != slot:
            return b"Script attempted to access keys that do not hash to the same slot"
    return None


def use_pport(cluster: Cluster, c: Any) -> bool:
    """With tls-cluster yes the nodes announce their TLS port: a client that is not on TLS is
    given the plaintext port instead (clusterRedirectClient's and CLUSTER NODES/SLOTS's use_pport)."""
    if cluster.values().get("tls-cluster") != "yes":
        return False
    transport = getattr(c, "transport", None)
    return transport is not None and transport.get_extra_info("ssl_object") is None


def redirect_text(cluster: Cluster, c: Any, kind: bytes, slot: int, node: Any) -> bytes:
    """clusterRedirectClient's MOVED / ASK text (without '-')."""
    port = node.pport if use_pport(cluster, c) and node.pport else node.port
    return b"%s %d %s:%d" % (kind, slot, endpoint(cluster, node).encode(), port)
