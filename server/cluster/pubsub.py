"""Pub/Sub in cluster mode: PUBLISH and SPUBLISH over the cluster bus, and the shard channels of
a slot this node's shard loses (Redis 7.0's clusterPropagatePublish, clusterPropagatePublishShard,
the bus's PUBLISH / PUBLISHSHARD handling and removeChannelsInSlot).

What it is.  `propagate` sends a PUBLISH the node just ran to every node it has a bus link to
(clusterBroadcastMessage), an SPUBLISH as PUBLISHSHARD to the other nodes of its own shard only
(its master and that master's replicas, whatever the state lists: clusterGetNodesServingMySlots).
`received` delivers a PUBLISH or PUBLISHSHARD from a known node to this node's subscribers (the
same delivery as a local PUBLISH, and nothing sent on).  `slot_deleted` runs (from
ClusterState.del_slot) before a slot loses its owner: when this node is of the owner's shard,
every client subscribed to a shard channel of that slot is unsubscribed from it, with the
`sunsubscribe` push Redis sends (channels in byte order, as Redis's rax of them; the clients of
each in subscription order).

Rule: the replies of PUBLISH and SPUBLISH count this node's receivers only, as Redis's do; the
bus carries what this node was asked to publish, never what it received.

Invariants: while the node is in cluster mode the pub/sub registry's `by_slot` index is kept
(events/pubsub.py), so finding a slot's channels costs nothing when it has none.
"""

from __future__ import annotations

# `cluster` is manager.py's Cluster, not imported: the manager imports this module
from typing import Any

from raxdb.server.cluster import wire
from raxdb.server.cluster.state import HANDSHAKE, MYSELF, Node
from raxdb.server.events import pubsub
from raxdb.storage.slots import key_hash_slot


def attach(cluster: Any) -> None:
    """Index the shard channels by slot and hear of every slot that loses its owner."""
    reg = pubsub.registry(cluster.srv)
    if reg.by_slot is None:
        reg.by_slot = {}
        for name in reg.shard:  # none at start-up, but the index must match whatever there is
            reg.by_slot.setdefault(key_hash_slot(name), {})[name] = None
    cluster.st.on_del_slot = lambda s, owner: slot_deleted(cluster, s, owner)


def shard_of(node: Node) -> list[Node]:
    """clusterGetNodesServingMySlots: the node's master (itself, for a master) and its replicas."""
    master = node.slaveof if node.is_replica() and node.slaveof is not None else node
    return [master, *master.replicas]


def propagate(cluster: Any, channel: bytes, message: bytes, shard: bool) -> None:
    bus = cluster.bus
    if bus is None:
        return
    st = cluster.st
    t = wire.PUBLISHSHARD if shard else wire.PUBLISH
    m = bus.header(t)
    m.channel, m.message = channel, message
    data = wire.encode(m)
    targets = shard_of(st.myself) if shard else st.nodes.values()
    for node in targets:
        link = node.link
        if link is None or node.flags & (MYSELF | HANDSHAKE):  # a connecting link keeps it, as Redis's does
            continue
        link.send(data)
        st.sent[t] += 1


def received(cluster: Any, m: wire.Message) -> None:
    """A PUBLISH or PUBLISHSHARD from a known node: this node's subscribers get it."""
    if m.type == wire.PUBLISHSHARD:
        pubsub.spublish(cluster.srv, m.channel, m.message)
    else:
        pubsub.publish(cluster.srv, m.channel, m.message)


def slot_deleted(cluster: Any, s: int, owner: Node) -> None:
    """removeChannelsInSlot, when this node serves the slot (as its owner or one of its replicas)."""
    reg = pubsub.registry(cluster.srv)
    by_slot = reg.by_slot
    if not by_slot or s not in by_slot or cluster.st.myself not in shard_of(owner):
        return
    for name in sorted(by_slot[s]):
        for c in list(reg.shard.get(name, ())):
            pubsub.unsubscribe(c, "shard", name)
            c.write(pubsub.frame(c, b"sunsubscribe", name, len(c.shard_channels)))  # a push, as Redis's
            c.update_plain()
