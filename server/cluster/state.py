"""The cluster's view from this node: the nodes it knows, who serves each slot, the epochs.

What it is.  Redis's clusterState and clusterNode (cluster.h): `Node` is one node as this node
knows it (name, flags, address, config epoch, slots, replica links, ping/pong times, its bus
links); `ClusterState` holds myself, every known node by name, the owner of each of the 16384
slots, the slots being migrated or imported, currentEpoch and lastVoteEpoch, the cluster's
ok/fail state (clusterUpdateState) and the bus statistics.  `describe` renders a node as one line
of CLUSTER NODES and nodes.conf (clusterGenNodeDescription).

Rule: no asyncio and no command replies here; the bus (bus.py) and the commands
(commands/t_cluster.py) change the state through these methods, and the Cluster (manager.py)
saves nodes.conf (nodesconf.py) after they did, as clusterBeforeSleep does.

Invariants: `slots[s]` is the node serving slot s (None: unassigned) and s is set in that node's
`slots` bitmap, and in no other node's; `served[s]` is 1 exactly when the cluster is ok, myself
serves slot s and s is neither migrating nor importing (a command whose keys are all in slot s is
served here whatever the client's READONLY, so the fast loop, server/net/client.py, runs it
without route()), else 0: every change of `slots`, `migrating`, `importing` and `state` goes
through the methods here, which recompute the bytes it touched (`_refresh`), and `migrating` and
`importing` are read-only views of dicts only those methods write; a node's `numslots` counts its bits, and a node that serves
a slot is in `nodes` (del_node frees its slots first), so sums over `nodes` count `slots`;
`nodes[myself.name] is myself`; a node name is 40 lowercase hex characters.
"""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

from raxdb.storage.slots import SLOTS

NAMELEN = 40
_CHUNK = 64  # slot_ranges reads the bitmap this many bytes at a time
_NONE = bytes(_CHUNK)
_ALL = b"\xff" * _CHUNK
_FEW_RUNS = 8  # up to this many runs in a chunk, slot_ranges finds them with integer operations
_ONES = re.compile("1+")

# clusterNode flags (cluster.h)
MASTER = 1
SLAVE = 2
PFAIL = 4
FAIL = 8
MYSELF = 16
HANDSHAKE = 32
NOADDR = 64
MEET = 128
MIGRATE_TO = 256
NOFAILOVER = 512

# representClusterNodeFlags's order and words
FLAG_WORDS = ((MYSELF, "myself"), (MASTER, "master"), (SLAVE, "slave"), (PFAIL, "fail?"), (FAIL, "fail"),
              (HANDSHAKE, "handshake"), (NOADDR, "noaddr"), (NOFAILOVER, "nofailover"))

OK, FAILED = 0, 1

# clusterDoBeforeSleep's flags (cluster.h's CLUSTER_TODO_*): the work manager.py's before_sleep
# does at the end of the loop pass, in this order
TODO_HANDLE_FAILOVER = 1
TODO_UPDATE_STATE = 2
TODO_SAVE_CONFIG = 4
TODO_FSYNC_CONFIG = 8
WRITABLE_DELAY_MS = 2000  # CLUSTER_WRITABLE_DELAY: a master waits this long before turning ok


def random_name() -> str:
    return os.urandom(NAMELEN // 2).hex()


def valid_name(name: str) -> bool:
    return len(name) == NAMELEN and all(ch in "0123456789abcdef" for ch in name)


ALL_SLOTS = (1 << SLOTS) - 1  # every slot, as an int bitmap


def bitmap_slots(bits: int) -> Iterator[int]:
    """The slots of an int bitmap (bit s for slot s; int.from_bytes of the wire's bitmap,
    little-endian), ascending.  What lets the bus test a message's 16,384 slots against the
    nodes' bitmaps at once rather than one slot at a time in Python: a PONG that claims slots is
    handled by every node, once per slot a resharding moves."""
    while bits:
        low = bits & -bits
        yield low.bit_length() - 1
        bits ^= low


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _chunk_runs(chunk: bytes | bytearray) -> list[tuple[int, int]]:
    """The runs of set bits of a piece of a slot bitmap, as (first, last + 1) bit offsets: from
    integer operations (the lowest set bit, then the trailing ones: a few steps per run) or, when
    it has many short runs, from a regular expression over its bits written out."""
    x = int.from_bytes(chunk, "little")
    if (x ^ (x << 1)).bit_count() > _FEW_RUNS * 2:  # each run has two edges
        return [m.span() for m in _ONES.finditer(f"{x:0{len(chunk) * 8}b}"[::-1])]
    spans = []
    offset = 0
    while x:
        low = (x & -x).bit_length() - 1  # the next set bit
        x >>= low
        offset += low
        ones = (~x & (x + 1)).bit_length() - 1  # the set bits from there on
        spans.append((offset, offset + ones))
        x >>= ones
        offset += ones
    return spans


class Node:
    """One node of the cluster (clusterNode)."""

    def __init__(self, name: str | None, flags: int) -> None:
        self.name = name if name is not None else random_name()
        self.flags = flags
        self.ctime = now_ms()
        self.config_epoch = 0
        self.slots = bytearray(SLOTS // 8)  # the wire's bitmap: bit s of byte s // 8, low bit first
        self.numslots = 0
        self.slaveof: Node | None = None
        self.replicas: list[Node] = []
        self.ping_sent = 0
        self.pong_received = 0
        self.data_received = 0
        self.fail_time = 0
        self.repl_offset = 0  # the replication offset it last announced
        self.ip = ""
        self.hostname = ""
        self.port = 0
        self.pport = 0
        self.cport = 0
        self.link: Any = None  # the outbound bus link (bus.py), None while not connected
        self.inbound_link: Any = None
        self.fail_reports: dict[str, int] = {}  # reporter name -> time
        self.voted_time = 0  # when this node voted for a replica of this master (failover.py)
        self.orphaned_time = 0  # since when this master has had no working replica (replicas.py)

    def has_slot(self, s: int) -> bool:
        return bool(self.slots[s >> 3] & (1 << (s & 7)))

    def slot_bits(self) -> int:
        """The bitmap as an int, bit s for slot s (see bitmap_slots)."""
        return int.from_bytes(self.slots, "little")

    def is_master(self) -> bool:
        return bool(self.flags & MASTER)

    def is_replica(self) -> bool:
        return bool(self.flags & SLAVE)

    def flag_words(self) -> str:
        words = [w for bit, w in FLAG_WORDS if self.flags & bit]
        return ",".join(words) if words else "noflags"

    def slot_ranges(self) -> list[tuple[int, int]]:
        """The node's slots as (first, last) runs, ascending.  The bitmap is read 512 slots (64
        bytes) at a time: a chunk with none or all of them costs a comparison or two; any other is
        read by `_chunk_runs`.  CLUSTER SLOTS / NODES / SHARDS and every nodes.conf save call
        this once per node."""
        out: list[tuple[int, int]] = []
        bitmap = self.slots
        start = end = -1  # the run being built: slots start .. end - 1
        for i in range(0, len(bitmap), _CHUNK):
            chunk = bitmap[i:i + _CHUNK]
            if chunk == _NONE:
                continue
            base = i << 3
            for a, b in ((0, _CHUNK * 8),) if chunk == _ALL else _chunk_runs(chunk):
                if base + a == end:
                    end = base + b
                else:
                    if start >= 0:
                        out.append((start, end - 1))
                    start, end = base + a, base + b
        if start >= 0:
            out.append((start, end - 1))
        return out

    def epoch(self) -> int:
        """nodeEpoch: a replica shows its master's config epoch."""
        if self.is_replica() and self.slaveof is not None:
            return self.slaveof.config_epoch
        return self.config_epoch


class ClusterState:
    def __init__(self, myself: Node) -> None:
        self.myself = myself
        self.nodes: dict[str, Node] = {myself.name: myself}
        self.slots: list[Node | None] = [None] * SLOTS
        self._migrating: dict[int, Node] = {}
        self._importing: dict[int, Node] = {}
        self.migrating: Mapping[int, Node] = MappingProxyType(self._migrating)
        self.importing: Mapping[int, Node] = MappingProxyType(self._importing)
        self.current_epoch = 0
        self.last_vote_epoch = 0
        self.state = FAILED
        self.served = bytearray(SLOTS)  # all 0: the state is fail
        self.size = 1
        self.sent = [0] * 11  # bus messages by type (CLUSTERMSG_TYPE_COUNT)
        self.received = [0] * 11
        self.pfail_nodes = 0
        self.links_limit_exceeded = 0
        self.first_update_ms = 0
        self.minority_since_ms = 0
        self.blacklist: dict[str, int] = {}  # CLUSTER FORGET: name -> until (s)
        # called with (slot, owner) before a slot loses its owner (clusterDelSlot's
        # removeChannelsInSlot: server/cluster/pubsub.py); None until the cluster wires it
        self.on_del_slot: Callable[[int, Node], None] | None = None
        self.slot_losses = 0  # slots that lost their owner, ever (a change mark for blocked.py)

    # ---- nodes ---------------------------------------------------------------------------------
    def add_node(self, node: Node) -> None:
        self.nodes[node.name] = node

    def lookup(self, name: str) -> Node | None:
        return self.nodes.get(name)

    def del_node(self, node: Node) -> None:
        """clusterDelNode: its slots become unassigned, its links close, reports about it go."""
        for s in range(SLOTS):
            if self._importing.get(s) is node:
                self.set_importing(s, None)
            if self._migrating.get(s) is node:
                self.set_migrating(s, None)
            if self.slots[s] is node:
                self.del_slot(s)
        for other in self.nodes.values():
            other.fail_reports.pop(node.name, None)
            if other.slaveof is node:
                other.slaveof = None
        if node.slaveof is not None and node in node.slaveof.replicas:
            node.slaveof.replicas.remove(node)
        self.nodes.pop(node.name, None)
        for link in (node.link, node.inbound_link):
            if link is not None:
                link.drop()

    def rename(self, node: Node, name: str) -> None:
        del self.nodes[node.name]
        node.name = name
        self.nodes[name] = node

    # ---- slots ---------------------------------------------------------------------------------
    def _refresh(self, s: int) -> None:
        """The one place `served[s]` is computed (the invariant): every change of slot s calls it."""
        self.served[s] = (self.state == OK and self.slots[s] is self.myself
                          and s not in self._migrating and s not in self._importing)

    def _refresh_all(self) -> None:
        for s in range(SLOTS):
            self._refresh(s)

    def add_slot(self, node: Node, s: int) -> bool:
        if self.slots[s] is not None:
            return False
        node.slots[s >> 3] |= 1 << (s & 7)
        node.numslots += 1
        self.slots[s] = node
        self._refresh(s)
        return True

    def del_slot(self, s: int) -> bool:
        node = self.slots[s]
        if node is None:
            return False
        if self.on_del_slot is not None:
            self.on_del_slot(s, node)
        self.slot_losses += 1
        node.slots[s >> 3] &= ~(1 << (s & 7)) & 0xFF
        node.numslots -= 1
        self.slots[s] = None
        self._refresh(s)
        return True

    def set_migrating(self, s: int, node: Node | None) -> None:
        """CLUSTER SETSLOT <s> MIGRATING <node>: slot s moves to `node`; None: it no longer does."""
        self._open_slot(self._migrating, s, node)

    def set_importing(self, s: int, node: Node | None) -> None:
        """CLUSTER SETSLOT <s> IMPORTING <node>: slot s comes from `node`; None: it no longer does."""
        self._open_slot(self._importing, s, node)

    def _open_slot(self, table: dict[int, Node], s: int, node: Node | None) -> None:
        if node is None:
            table.pop(s, None)
        else:
            table[s] = node
        self._refresh(s)

    def close_slots(self) -> None:
        """clusterCloseAllSlots: no slot migrating or importing any more."""
        moving = [*self._migrating, *self._importing]
        self._migrating.clear()
        self._importing.clear()
        for s in moving:
            self._refresh(s)

    # The two questions a PING / PONG / UPDATE that claims slots asks (clusterProcessPacket,
    # clusterUpdateSlotsConfigWith), answered on int bitmaps (bitmap_slots) rather than slot by slot.
    def newer_owner(self, sender: Node, epoch: int, claim: int) -> Node | None:
        """The owner of the first slot of `claim` that a node other than `sender` serves with a
        config epoch newer than `epoch` (the node an UPDATE tells `sender` about), or None."""
        newer = 0
        for n in self.nodes.values():
            if n is not sender and n.numslots and n.config_epoch > epoch:
                newer |= n.slot_bits()
        stale = claim & newer
        return self.slots[next(bitmap_slots(stale))] if stale else None

    def slots_to_take(self, sender: Node, epoch: int, claim: int) -> int:
        """The slots of `claim` that `sender`, at config epoch `epoch`, takes: those served by
        no node or by another node of an older config epoch, and not being imported here."""
        owned = older = 0
        for n in self.nodes.values():
            if n.numslots:
                bits = n.slot_bits()
                owned |= bits
                if n is not sender and n.config_epoch < epoch:
                    older |= bits
        importing = 0
        for s in self._importing:
            importing |= 1 << s
        return claim & (older | (ALL_SLOTS & ~owned)) & ~importing

    def del_node_slots(self, node: Node) -> int:
        n = 0
        for a, b in node.slot_ranges():
            for s in range(a, b + 1):
                self.del_slot(s)
                n += 1
        return n

    def set_master(self, node: Node) -> None:
        """clusterSetNodeAsMaster: a replica that becomes a master (another node's takes
        MIGRATE_TO: it had replicas to migrate back)."""
        if node.is_master():
            return
        if node.slaveof is not None:
            self.remove_replica(node.slaveof, node)
            if node is not self.myself:
                node.flags |= MIGRATE_TO
        node.flags = (node.flags & ~SLAVE) | MASTER
        node.slaveof = None

    @staticmethod
    def add_replica(master: Node, node: Node) -> None:
        """clusterNodeAddSlave: a master with replicas is a target of replica migration."""
        if node not in master.replicas:
            master.replicas.append(node)
            master.flags |= MIGRATE_TO

    @staticmethod
    def remove_replica(master: Node, node: Node) -> None:
        """clusterNodeRemoveSlave."""
        if node in master.replicas:
            master.replicas.remove(node)
            if not master.replicas:
                master.flags &= ~MIGRATE_TO

    # ---- state ---------------------------------------------------------------------------------
    def end_writable_delay(self) -> None:
        """A master may turn ok from now on, as if it had been up for WRITABLE_DELAY_MS (a test
        control's: a node just started for a test has no older configuration to learn first)."""
        self.first_update_ms = now_ms() - WRITABLE_DELAY_MS

    def update_state(self, full_coverage: bool, node_timeout: int) -> str | None:
        """clusterUpdateState: the new state's word when it changed, else None."""
        now = now_ms()
        if not self.first_update_ms:
            self.first_update_ms = now
        if self.myself.is_master() and self.state == FAILED and now - self.first_update_ms < WRITABLE_DELAY_MS:
            return None
        new = OK
        if full_coverage:  # every slot served, by a node not failing: counted per node (the invariant)
            covered = 0
            for node in self.nodes.values():
                if node.numslots:
                    covered += node.numslots
                    if node.flags & FAIL:
                        new = FAILED
            if covered < SLOTS:
                new = FAILED
        size = reachable = 0
        for node in self.nodes.values():
            if node.is_master() and node.numslots:
                size += 1
                if not node.flags & (FAIL | PFAIL):
                    reachable += 1
        self.size = size
        if reachable < size // 2 + 1:
            new = FAILED
            self.minority_since_ms = now
        if new == self.state:
            return None
        rejoin = min(max(node_timeout, 500), 5000)
        if new == OK and self.myself.is_master() and now - self.minority_since_ms < rejoin:
            return None
        self.state = new
        self._refresh_all()
        return "ok" if new == OK else "fail"

    def slots_in_state(self, flag: int) -> int:
        return sum(n.numslots for n in self.nodes.values() if n.flags & flag)

    def assigned(self) -> int:
        return sum(n.numslots for n in self.nodes.values())

    def bump_epoch(self) -> bool:
        """clusterBumpConfigEpochWithoutConsensus: True when myself took a new config epoch."""
        top = max(max(n.config_epoch for n in self.nodes.values()), self.current_epoch)  # clusterGetMaxEpoch
        if self.myself.config_epoch == 0 or self.myself.config_epoch != top:
            self.current_epoch += 1
            self.myself.config_epoch = self.current_epoch
            return True
        return False

    def handle_epoch_collision(self, sender: Node) -> bool:
        """clusterHandleConfigEpochCollision: of two masters with one config epoch, the one with
        the smaller name takes a new one."""
        me = self.myself
        if sender.config_epoch != me.config_epoch or not sender.is_master() or not me.is_master():
            return False
        if sender.name <= me.name:
            return False
        self.current_epoch += 1
        me.config_epoch = self.current_epoch
        return True

    def random_node(self) -> Node:
        return random.choice(list(self.nodes.values()))


def describe(st: ClusterState, node: Node, endpoint_port: int | None = None) -> str:
    """clusterGenNodeDescription: one line of CLUSTER NODES and nodes.conf (no newline)."""
    port = node.port if endpoint_port is None else endpoint_port
    addr = f"{node.ip}:{port}@{node.cport}"
    if node.hostname:
        addr += "," + node.hostname
    parts = [node.name, addr, node.flag_words(),
             node.slaveof.name if node.slaveof is not None else "-",
             str(node.ping_sent), str(node.pong_received), str(node.epoch()),
             "connected" if node.link is not None or node.flags & MYSELF else "disconnected"]
    if node.is_master():
        for a, b in node.slot_ranges():
            parts.append(str(a) if a == b else f"{a}-{b}")
    if node is st.myself:
        for s, target in sorted(st.migrating.items()):
            parts.append(f"[{s}->-{target.name}]")
        for s, source in sorted(st.importing.items()):
            parts.append(f"[{s}-<-{source.name}]")
    return " ".join(parts)
