"""Clients blocked on keys in cluster mode: redirected when their slot moves or the cluster fails
(Redis 7.0's clusterRedirectBlockedClientIfNeeded, which clientsCron runs for blocked clients).

What it is.  `redirect(cluster)` runs from the cluster's cron (`Redirector`: on the next tick
after a change, and once a second) and looks at every client blocked on keys for a value (BLPOP, BLMOVE, BZPOPMIN, XREAD BLOCK, XREADGROUP...; WAIT
blocks on no key and is left alone).  With the cluster down, each is unblocked with
"-CLUSTERDOWN The cluster is down" (even when reads are allowed while down: only a write could
wake it, and none may come).  Otherwise its first key's slot decides (all its keys share one):
served by another node, and not being imported here, the client gets "-MOVED <slot> <endpoint>",
and "-CLUSTERDOWN Hash slot not served" when no node serves it.  A READONLY client blocked by a
read on a replica of the slot's master stays, as there.

Rule: the cluster layer calls down into net/blocking.py (`finish`), which knows nothing of the
cluster; the error texts and the MOVED target are routing.py's.

Invariants: cluster mode has one database (db 0), so its `blocking` map holds every blocked
client; nothing is scanned while no client is blocked on keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from raxdb.server.cluster import routing
from raxdb.server.cluster.state import OK
from raxdb.server.net import blocking
from raxdb.storage.slots import key_hash_slot

if TYPE_CHECKING:
    from raxdb.server.cluster.manager import Cluster


class Redirector:
    """The cron's hook: a pass over the blocked clients when the cluster's state changed, a slot
    lost its owner or the importing slots changed since the last pass, and once a second anyway
    (as clientsCron visits every client about once a second), not every 100 ms."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.mark: tuple[int, int, int] | None = None

    def __call__(self) -> None:
        cluster = self.cluster
        if not cluster.srv.blocked_on_keys:
            return
        st = cluster.st
        mark = (st.state, st.slot_losses, len(st.importing))
        if mark == self.mark and cluster.iteration % 10:
            return
        self.mark = mark
        redirect(cluster)


def redirect(cluster: Cluster) -> None:
    srv = cluster.srv
    if not srv.blocked_on_keys:
        return
    waiting: dict[Any, None] = {}
    for queue in srv.dbs[0].blocking.values():
        for c in queue:
            waiting[c] = None
    for c in waiting:
        state = c.block_state
        if not c.blocked or not isinstance(state, blocking.BlockState) or state.btype is None:
            continue
        text = _error(cluster, c, state)
        if text is not None:
            blocking.finish(c, c.error_reply(text))


def _error(cluster: Cluster, c: Any, state: blocking.BlockState) -> bytes | None:
    """The error that unblocks `c`, or None when it may go on waiting here."""
    st = cluster.st
    if st.state != OK:
        return routing.TEXTS[routing.DOWN_STATE]
    if not state.keys:
        return None
    slot = key_hash_slot(state.keys[0])
    node = st.slots[slot]
    me = st.myself
    cmd = c.last_cmd
    if c.cluster_flags & routing.READONLY and cmd is not None and "write" not in cmd.flags \
            and me.is_replica() and me.slaveof is node:
        node = me
    if node is me or slot in st.importing:
        return None
    if node is None:
        return routing.TEXTS[routing.DOWN_UNBOUND]
    return routing.redirect_text(cluster, c, b"MOVED", slot, node)
