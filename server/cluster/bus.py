"""The cluster bus: links to the other nodes on the cluster port, and what their messages do.

What it is.  `Link` is one TCP connection of the bus (clusterLink): outbound, made by the cron to a
known node, or inbound, accepted on the cluster port.  It frames messages by their 8-byte
preamble ("RCmb" and totlen) and hands each complete one to `Bus.process` (clusterProcessPacket).
`Bus.cron` is clusterCron's network part: connect to nodes without a link (a MEET to a node
CLUSTER MEET added, a PING otherwise), ping a random node every second and any node whose last
pong is older than half the node timeout, drop handshakes that time out, mark nodes that do not
answer in time as PFAIL, and as FAIL (told to every node) once a majority of masters report them.  Processing follows Redis 7.0: PING and MEET get a PONG; MEET adds its
unknown sender in handshake; a PONG ends a handshake by renaming the node; epochs, roles, the
served slots (clusterUpdateSlotsConfigWith), config epoch collisions, the gossip section
(unknown nodes from a known sender are added), the hostname extension, FAIL and UPDATE; the
election's FAILOVER_AUTH_REQUEST / ACK and MFSTART go to failover.py, a lost master's replicas
follow the new one through replicas.py.

Rule: bad input never takes the server down: a wrong signature or an oversized length is logged
and the link dropped; a message whose length does not match its type is logged and ignored; an
exception while processing one is logged and its link dropped.

Invariants: `node.link` is the node's outbound link (set as soon as a connection is attempted,
as Redis does, so the cron does not dial twice); a link's `node` is None only for an inbound link
whose sender is not known yet.
"""

from __future__ import annotations

import asyncio
import random
import socket
from typing import TYPE_CHECKING, Any

from raxdb.server.base.log import LOG
from raxdb.server.cluster import bustls, replicas, wire
from raxdb.server.cluster import pubsub as cluster_pubsub
from raxdb.server.cluster.state import (
    FAIL,
    HANDSHAKE,
    MASTER,
    MEET,
    MIGRATE_TO,
    MYSELF,
    NOADDR,
    NOFAILOVER,
    PFAIL,
    SLAVE,
    Node,
    bitmap_slots,
    now_ms,
    valid_name,
)
from raxdb.server.net.accept import Acceptor

if TYPE_CHECKING:
    from raxdb.server.cluster.manager import Cluster

MAX_MESSAGE = 64 * 1024 * 1024  # a larger totlen is garbage, not a message to buffer


class Link(asyncio.Protocol):
    def __init__(self, bus: Bus, node: Node | None, inbound: bool) -> None:
        self.bus = bus
        self.node = node
        self.inbound = inbound
        self.ctime = now_ms()
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.closed = False
        self.raw: Any = None  # the protocol below, when it is not this link: tls-cluster's TLS layer
        # what was sent while the connection was still being made (Redis 7.0 appends to the link's
        # sndbuf at once and writes it when connected): a FAIL broadcast to a node behind a
        # partition reaches it when the partition heals and the reconnection succeeds
        self.pending: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        if self.inbound:
            self.bus.inbound.add(self)
        else:
            pending, self.pending = self.pending, []
            for data in pending:  # before the PING connected() sends, as Redis's sndbuf orders them
                self.send(data)
            self.bus.connected(self)

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        while len(buf) >= 8 and not self.closed:
            totlen = int.from_bytes(buf[4:8], "big")
            if buf[:4] != wire.SIG or totlen < wire.HEADER_LEN or totlen > MAX_MESSAGE:
                LOG.warning("Bad message length or signature received from Cluster bus.")
                self.drop()
                return
            if len(buf) < totlen:
                return
            msg = bytes(buf[:totlen])
            del buf[:totlen]
            try:
                self.bus.process(self, msg)
            except Exception as e:  # a packet must not take the server down
                LOG.warning(f"Error processing a cluster bus packet: {e!r}; closing the link")
                self.drop()
                return

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.bus.lost(self)

    def send(self, data: bytes) -> None:
        if self.closed:
            return
        if self.transport is not None:
            self.transport.write(data)
        elif not self.inbound:  # connecting: kept until connected (dropped with the link)
            self.pending.append(data)

    def drop(self) -> None:
        """freeClusterLink: close and forget the link."""
        self.pending.clear()
        if not self.closed:
            self.closed = True
            below = self.transport if self.transport is not None else self.raw  # a TLS handshake under way
            if below is not None and below is not self:
                below.abort()
        self.bus.lost(self)

    def peer_ip(self) -> str:
        if self.transport is None:
            return ""
        peer = self.transport.get_extra_info("peername")
        return peer[0] if peer else ""

    def local_ip(self) -> str:
        if self.transport is None:
            return ""
        local = self.transport.get_extra_info("sockname")
        return local[0] if local else ""


class Bus:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.st = cluster.st
        self.listeners: list[Acceptor] = []
        self.inbound: set[Link] = set()
        self.pings_sent = 0
        self.tasks: set[asyncio.Task[Any]] = set()

    def listen(self, socks: list[socket.socket]) -> None:
        """Accept on the bus's listening sockets: every waiting connection at each readable event,
        as the data port does (server/net/accept.py; libuv's listener takes one a loop turn)."""
        loop = asyncio.get_running_loop()
        for sock in socks:
            self.listeners.append(Acceptor(loop, sock, lambda conn, peer: bustls.wrap(self.cluster, Link(self, None, True))))

    def close(self) -> None:
        for srv in self.listeners:
            srv.close()
        for node in list(self.st.nodes.values()):
            if node.link is not None:
                node.link.drop()
        for link in list(self.inbound):
            link.drop()
        for task in self.tasks:
            task.cancel()

    # ---- links -------------------------------------------------------------------------------------
    def connect(self, node: Node) -> None:
        link = Link(self, node, False)
        node.link = link
        task = asyncio.get_running_loop().create_task(self._connect(link, node))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _connect(self, link: Link, node: Node) -> None:
        loop = asyncio.get_running_loop()
        timeout = max(self.cluster.node_timeout(), 1000) / 1000
        try:
            _t, link.raw = await asyncio.wait_for(
                loop.create_connection(lambda: bustls.wrap(self.cluster, link), node.ip, node.cport), timeout)
        except (TimeoutError, OSError) as e:
            if node.ping_sent == 0:
                node.ping_sent = now_ms()
            LOG.verbose(f"Connection with Node {node.name} at {node.ip}:{node.cport} failed: {e}")
            if node.link is link:
                node.link = None

    def connected(self, link: Link) -> None:
        """clusterLinkConnectHandler: a MEET (for a node CLUSTER MEET added) or a PING at once."""
        node = link.node
        if node is None:
            return
        old_ping = node.ping_sent
        self.send_ping(link, wire.MEET if node.flags & MEET else wire.PING)
        if old_ping:
            node.ping_sent = old_ping
        node.flags &= ~MEET

    def lost(self, link: Link) -> None:
        self.inbound.discard(link)
        node = link.node
        if node is not None:
            if node.link is link:
                node.link = None
            if node.inbound_link is link:
                node.inbound_link = None

    # ---- sending -----------------------------------------------------------------------------------
    def header(self, t: int) -> wire.Message:
        """clusterBuildMessageHdr."""
        st = self.st
        me = st.myself
        master = me.slaveof if me.is_replica() and me.slaveof is not None else me
        port, pport, cport = self.cluster.announced_ports()
        return wire.Message(
            type=t, sender=me.name, port=port, pport=pport, cport=cport, flags=me.flags & 0xFFFF,
            state=st.state, current_epoch=st.current_epoch, config_epoch=master.config_epoch,
            offset=replicas.my_offset(self.cluster), mflags0=self.cluster.failover.header_flags(),
            myslots=bytes(master.slots),
            slaveof=me.slaveof.name if me.slaveof is not None else None,
            myip=self.cluster.values()["cluster-announce-ip"])

    def send(self, link: Link, m: wire.Message) -> None:
        link.send(wire.encode(m))
        self.st.sent[m.type] += 1

    def send_ping(self, link: Link, t: int) -> None:
        """clusterSendPing: PING, PONG or MEET, with a gossip section about a few other nodes."""
        st = self.st
        nodes = list(st.nodes.values())
        fresh = len(nodes) - 2
        wanted = min(max(len(nodes) // 10, 3), fresh)
        if link.node is not None and not link.inbound and t == wire.PING:  # a PONG comes back on this link
            link.node.ping_sent = now_ms()
        self.pings_sent += 1
        m = self.header(t)
        chosen: set[str] = set()
        tries = wanted * 3
        while fresh > 0 and len(m.gossip) < wanted and tries > 0:
            tries -= 1
            n = random.choice(nodes)
            if n is st.myself or n.flags & PFAIL or n.name in chosen:
                continue
            if n.flags & (HANDSHAKE | NOADDR) or (n.link is None and n.numslots == 0):
                fresh -= 1
                continue
            m.gossip.append(self._gossip(n))
            chosen.add(n.name)
            fresh -= 1
        for n in nodes:  # PFAIL nodes go at the end
            if n.flags & PFAIL and not n.flags & (HANDSHAKE | NOADDR) and n.name not in chosen:
                m.gossip.append(self._gossip(n))
        m.hostname = st.myself.hostname or None
        self.send(link, m)

    def broadcast(self, m: wire.Message) -> None:
        """clusterBroadcastMessage: to every node with a link, not in handshake (a link still
        connecting keeps the message until connected, as Redis's does)."""
        st = self.st
        data = wire.encode(m)
        for node in st.nodes.values():
            link = node.link
            if link is not None and not node.flags & (MYSELF | HANDSHAKE):
                link.send(data)
                st.sent[m.type] += 1

    def broadcast_pong(self) -> None:
        """clusterBroadcastPong(CLUSTER_BROADCAST_ALL): tell every connected node our config now."""
        for node in self.st.nodes.values():
            link = node.link
            if link is not None and not node.flags & (MYSELF | HANDSHAKE):  # a connecting link keeps it
                self.send_ping(link, wire.PONG)

    @staticmethod
    def _gossip(n: Node) -> wire.Gossip:
        return wire.Gossip(n.name, n.ping_sent // 1000, n.pong_received // 1000, n.ip, n.port, n.cport,
                           n.flags & 0xFFFF, n.pport)

    def send_update(self, link: Link | None, node: Node) -> None:
        if link is None:
            return
        m = self.header(wire.UPDATE)
        m.about = node.name
        m.update_epoch = node.config_epoch
        m.update_slots = bytes(node.slots)
        self.send(link, m)

    # ---- receiving ---------------------------------------------------------------------------------
    def process(self, link: Link, data: bytes) -> None:
        """clusterProcessPacket, for a complete message."""
        st = self.st
        ver, t = int.from_bytes(data[8:10], "big"), int.from_bytes(data[12:14], "big")
        if ver != wire.VERSION:
            return  # another protocol version: ignored, as Redis does
        if t < len(st.received):
            st.received[t] += 1
        if t == self.cluster.drop_filter:
            LOG.warning("Dropping packet that matches debug drop filter")
            return
        try:
            m = wire.decode(data)
        except wire.WireError as e:
            LOG.warning(str(e))
            return
        if not valid_name(m.sender):  # a node must never be named (or renamed) after garbage
            LOG.warning(f"Received a {wire.type_name(t)} packet with an invalid sender name; ignored")
            return
        now = now_ms()
        sender = self._sender(link, m)
        if sender is not None:
            sender.data_received = now
            sender.repl_offset = m.offset
        save = fsync = False  # what Redis asks of its beforeSleep: a save, an fsynced one
        if sender is not None and not sender.flags & HANDSHAKE:
            if m.current_epoch > st.current_epoch:
                st.current_epoch = m.current_epoch
                save = fsync = True
            if m.config_epoch > sender.config_epoch:
                sender.config_epoch = m.config_epoch
                save = fsync = True
            self.cluster.failover.offset_seen(sender, m)
        if t in (wire.PING, wire.MEET):
            save |= self._ping_or_meet(link, m, sender)
        if t in (wire.PING, wire.PONG, wire.MEET):
            save |= self._config_info(link, m, sender, now)
        elif t == wire.FAIL and sender is not None:
            failing = st.lookup(m.about)
            if failing is not None and not failing.flags & (FAIL | MYSELF):
                LOG.notice(f"FAIL message received from {m.sender} about {m.about}")
                failing.flags = (failing.flags | FAIL) & ~PFAIL
                failing.fail_time = now
                save = True
        elif t in (wire.PUBLISH, wire.PUBLISHSHARD) and sender is not None:
            cluster_pubsub.received(self.cluster, m)
        elif t == wire.AUTH_REQUEST and sender is not None:
            self.cluster.failover.auth_request(sender, m)
        elif t == wire.AUTH_ACK and sender is not None:
            self.cluster.failover.auth_ack(sender, m)
        elif t == wire.MFSTART and sender is not None:
            self.cluster.failover.mfstart(sender, link)
        elif t == wire.UPDATE and sender is not None:
            n = st.lookup(m.about)
            if n is not None and n.config_epoch < m.update_epoch:
                st.set_master(n)
                n.config_epoch = m.update_epoch
                self.update_slots_with(n, m.update_epoch, m.update_slots)
                save = fsync = True
        if save:
            self.cluster.changed(fsync=fsync)

    def _sender(self, link: Link, m: wire.Message) -> Node | None:
        """getNodeFromLinkAndMsg."""
        if link.node is not None and not link.node.flags & HANDSHAKE:
            return link.node
        sender = self.st.lookup(m.sender)
        if sender is not None and link.inbound and link.node is None:
            link.node = sender
            if sender.inbound_link is not None and sender.inbound_link is not link:
                sender.inbound_link.drop()
            sender.inbound_link = link
        return sender

    def _ping_or_meet(self, link: Link, m: wire.Message, sender: Node | None) -> bool:
        st = self.st
        save = False
        me = st.myself
        if (m.type == wire.MEET or not me.ip) and not self.cluster.values()["cluster-announce-ip"]:
            ip = link.local_ip()
            if ip and ip != me.ip:
                me.ip = ip
                LOG.warning(f"IP address for this node updated to {ip}")
                save = True
        if sender is None and m.type == wire.MEET:
            node = Node(None, HANDSHAKE)
            node.ip = m.myip or link.peer_ip()
            node.port, node.pport, node.cport = m.port, m.pport, m.cport
            st.add_node(node)
            self._gossip_section(m, None)
            save = True
        self.send_ping(link, wire.PONG)
        return save

    def _config_info(self, link: Link, m: wire.Message, sender: Node | None, now: int) -> bool:
        st = self.st
        save = False
        node = link.node
        if node is not None and not link.inbound:
            if node.flags & HANDSHAKE:
                if sender is not None:  # a node we know under its name: this handshake was a copy
                    self._update_address(sender, link, m)
                    st.del_node(node)
                    return True
                st.rename(node, m.sender)
                node.flags &= ~HANDSHAKE
                node.flags |= m.flags & (MASTER | SLAVE)
                LOG.verbose(f"Handshake with node {node.name} completed.")
                save = True
            elif node.name != m.sender:
                LOG.verbose(f"PONG contains mismatching sender ID. About node {node.name} added "
                            f"{(now - node.ctime)} ms ago, having flags {node.flags}")
                node.flags |= NOADDR
                node.ip, node.port, node.pport, node.cport = "", 0, 0, 0
                link.drop()
                return True
        if sender is not None:
            sender.flags = (sender.flags & ~NOFAILOVER) | (m.flags & NOFAILOVER)
            if m.type == wire.PING and not sender.flags & HANDSHAKE and self._update_address(sender, link, m):
                save = True
            if sender.hostname != (m.hostname or ""):
                sender.hostname = m.hostname or ""
                save = True
        if node is not None and not link.inbound and m.type == wire.PONG:
            node.pong_received = now
            node.ping_sent = 0
            if node.flags & PFAIL:
                node.flags &= ~PFAIL
                self.cluster.update_state()
            elif node.flags & FAIL:
                save |= self._clear_failure(node, now)
        if sender is None:
            return save
        # roles
        if m.slaveof is None:
            if not sender.is_master():
                st.set_master(sender)
                save = True
        else:
            master = st.lookup(m.slaveof)
            if sender.is_master():
                st.del_node_slots(sender)
                sender.flags = (sender.flags & ~(MASTER | MIGRATE_TO)) | SLAVE
                save = True
            if master is not None and sender.slaveof is not master:
                if sender.slaveof is not None:
                    st.remove_replica(sender.slaveof, sender)
                st.add_replica(master, sender)
                sender.slaveof = master
                save = True
        # served slots
        sender_master = sender if sender.is_master() else sender.slaveof
        dirty = sender_master is not None and bytes(sender_master.slots) != m.myslots
        if dirty and sender.is_master():
            self.update_slots_with(sender, m.config_epoch, m.myslots)
            save = True
        if dirty:
            newer = st.newer_owner(sender, m.config_epoch, int.from_bytes(m.myslots, "little"))
            if newer is not None:
                self.send_update(sender.link, newer)
        if sender.is_master() and st.myself.is_master() and st.handle_epoch_collision(sender):
            self.cluster.save_or_die()  # at once, as clusterHandleConfigEpochCollision saves
            LOG.verbose(f"WARNING: configEpoch collision with node {sender.name}. configEpoch set to "
                        f"{st.myself.config_epoch}")
            save = True
        save |= self._gossip_section(m, sender)
        return save

    def _update_address(self, node: Node, link: Link, m: wire.Message) -> bool:
        """nodeUpdateAddressIfNeeded: the address a node talks to us from, when it changed."""
        if node.flags & MYSELF or link is node.link:
            return False
        ip = m.myip or link.peer_ip()
        if (ip, m.port, m.cport, m.pport) == (node.ip, node.port, node.cport, node.pport):
            return False
        node.ip, node.port, node.cport, node.pport = ip, m.port, m.cport, m.pport
        if node.link is not None:
            node.link.drop()
        node.flags &= ~NOADDR
        LOG.warning(f"Address updated for node {node.name}, now {ip}:{m.port}")
        replicas.master_moved(self.cluster, node)
        return True

    def update_slots_with(self, sender: Node, epoch: int, slots: bytes) -> None:
        """clusterUpdateSlotsConfigWith: take the slots a newer (or the only) claim gives `sender`;
        a master left without slots, or a replica whose master was, follows the node that took
        them (replicas.follow_slots), else the keys of slots this node lost go."""
        st = self.st
        if sender is st.myself:
            LOG.warning("Discarding UPDATE message about myself.")
            return
        curmaster = st.myself if st.myself.is_master() else st.myself.slaveof
        lost: list[int] = []
        claim = int.from_bytes(slots, "little")
        claimed = claim.bit_count()
        taken = 0
        take = st.slots_to_take(sender, epoch, claim)
        for s in bitmap_slots(take):
            owner = st.slots[s]
            if owner is st.myself and self.cluster.count_keys(s):
                lost.append(s)
            if owner is not None and owner is curmaster:
                taken += 1
            st.del_slot(s)
            st.add_slot(sender, s)
        if take:  # clusterUpdateSlotsConfigWith's SAVE_CONFIG | UPDATE_STATE | FSYNC_CONFIG
            self.cluster.changed(fsync=True)
        if replicas.follow_slots(self.cluster, sender, curmaster, taken, claimed):
            return
        for s in lost:
            self.cluster.delete_keys_in_slot(s)

    def _clear_failure(self, node: Node, now: int) -> bool:
        """clearNodeFailureIfNeeded: a replica or a master without slots is back at once; a master
        with slots once twice the node timeout has passed since it failed (its replicas had
        that long to take over)."""
        if node.is_replica() or not node.numslots:
            LOG.notice(f"Clear FAIL state for node {node.name}: {'replica' if node.is_replica() else 'master without slots'}"
                       " is reachable again.")
        elif now - node.fail_time > self.cluster.node_timeout() * 2:
            LOG.notice(f"Clear FAIL state for node {node.name}: is reachable again and nobody is serving its slots "
                       "after some time.")
        else:
            return False
        node.flags &= ~FAIL
        self.cluster.update_state()
        return True

    def mark_failing_if_needed(self, node: Node, now: int) -> bool:
        """markNodeAsFailingIfNeeded: PFAIL here and reported by a majority of the masters
        (counting myself, a master) within twice the node timeout: FAIL, and told to everyone."""
        st = self.st
        if not node.flags & PFAIL or node.flags & FAIL:
            return False
        validity = self.cluster.node_timeout() * 2
        for name, when in list(node.fail_reports.items()):
            if now - when > validity:
                del node.fail_reports[name]
        failures = len(node.fail_reports) + (1 if st.myself.is_master() else 0)
        if failures < st.size // 2 + 1:
            return False
        LOG.notice(f"Marking node {node.name} as failing (quorum reached).")
        node.flags = (node.flags & ~PFAIL) | FAIL
        node.fail_time = now
        m = self.header(wire.FAIL)
        m.about = node.name
        self.broadcast(m)
        self.cluster.update_state()
        return True

    def _gossip_section(self, m: wire.Message, sender: Node | None) -> bool:
        """clusterProcessGossipSection: failure reports from masters, pong times, new nodes."""
        st = self.st
        added = False
        now = now_ms()
        for g in m.gossip:
            node = st.lookup(g.name)
            if node is not None:
                if sender is not None and sender.is_master() and node is not st.myself:
                    if g.flags & (FAIL | PFAIL):
                        if sender.name not in node.fail_reports:
                            LOG.verbose(f"Node {sender.name} reported node {node.name} as not reachable.")
                        node.fail_reports[sender.name] = now
                        added |= self.mark_failing_if_needed(node, now)
                    elif node.fail_reports.pop(sender.name, None) is not None:
                        LOG.verbose(f"Node {sender.name} reported node {node.name} is back online.")
                if not g.flags & (FAIL | PFAIL) and node.ping_sent == 0 and not node.fail_reports:
                    pong = g.pong_received * 1000
                    if now + 500 >= pong > node.pong_received:
                        node.pong_received = pong
                continue
            if sender is not None and not g.flags & NOADDR and st.blacklist.get(g.name, 0) <= now // 1000 \
                    and valid_name(g.name) and g.ip:
                node = Node(g.name, g.flags & ~(MYSELF | HANDSHAKE | MEET))
                node.ip, node.port, node.cport, node.pport = g.ip, g.port, g.cport, g.pport
                st.add_node(node)
                added = True
        return added

    def _free_link_over_limit(self, node: Node, link: Link | None, limit: int, direction: str) -> None:
        """clusterNodeCronFreeLinkOnBufferLimitReached: a peer that does not read loses its link."""
        if link is None or link.transport is None:
            return
        used = link.transport.get_write_buffer_size()
        if used > limit:
            LOG.warning(f"Freeing cluster link({direction} node {node.name}, used memory: {used}) due to "
                        "exceeding send buffer memory limit.")
            link.drop()
            self.st.links_limit_exceeded += 1

    # ---- cron --------------------------------------------------------------------------------------
    def cron(self, iteration: int) -> None:
        """clusterCron's links and pings (every 100 ms)."""
        st = self.st
        now = now_ms()
        timeout = self.cluster.node_timeout()
        handshake_timeout = max(timeout, 1000)
        st.pfail_nodes = 0
        limit = self.cluster.sendbuf_limit()
        for node in list(st.nodes.values()):
            if limit:
                self._free_link_over_limit(node, node.link, limit, "to")
                self._free_link_over_limit(node, node.inbound_link, limit, "from")
            if node.flags & (MYSELF | NOADDR):
                continue
            if node.flags & PFAIL:
                st.pfail_nodes += 1
            if node.flags & HANDSHAKE and now - node.ctime > handshake_timeout:
                st.del_node(node)
                continue
            if node.link is None:
                self.connect(node)
        if iteration % 10 == 0:
            best: Node | None = None
            nodes = list(st.nodes.values())
            for _ in range(5):
                n = random.choice(nodes)
                if n.link is None or n.link.transport is None or n.ping_sent or n.flags & (MYSELF | HANDSHAKE):
                    continue
                if best is None or n.pong_received < best.pong_received:
                    best = n
            if best is not None:
                self.send_ping(best.link, wire.PING)
        update = False
        for node in list(st.nodes.values()):
            if node.flags & (MYSELF | NOADDR | HANDSHAKE):
                continue
            link = node.link
            ping_delay = now - node.ping_sent
            data_delay = now - node.data_received
            if link is not None and now - link.ctime > timeout and node.ping_sent and \
                    ping_delay > timeout // 2 and data_delay > timeout // 2:
                link.drop()
                continue
            if link is not None and link.transport is not None and node.ping_sent == 0 and \
                    now - node.pong_received > timeout // 2:
                self.send_ping(link, wire.PING)
                continue
            if node.ping_sent == 0:
                continue
            if min(ping_delay, data_delay) > timeout and not node.flags & (PFAIL | FAIL):
                node.flags |= PFAIL
                LOG.debug(f"*** NODE {node.name} possibly failing")
                update = True
                if self.mark_failing_if_needed(node, now):  # a lone master needs no reports
                    self.cluster.changed()
        if update:
            self.cluster.update_state()
