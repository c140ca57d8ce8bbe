"""Replication state shared by both roles: the replication ID and offset, the backlog, the feed.

Redis 7.0 (replication.c) identifies a dataset's history by a replication ID (40 hex digits) and
an offset: the number of bytes of the replication stream produced so far.  A master appends every
propagated write, in RESP form with a SELECT before a change of database, to a backlog (a bounded
window of the newest stream bytes) and sends the same bytes to each online replica.  A replica
that reconnects asks PSYNC <replid> <offset+1>; when the master still holds that byte in its
backlog under that ID (or under `replid2` up to `second_replid_offset`, the history it had before
a promotion: PSYNC2), only the missing bytes are sent ("+CONTINUE"), else a full resync.

This module holds that state for both roles (`srv.repl`, a `Replication`):
- `replid`, `replid2`, `master_repl_offset`, `second_replid_offset` as in Redis's server struct;
- `backlog`: None until the first replica attaches (createReplicationBacklog), then a `Backlog`;
  a master starting from a dump file that names its history has one from the start
  (`continue_saved_history`), so that its replicas resync partially after a restart;
- `feed(dbid, argv)`: the propagation target (server/events/propagate.py) a master registers while it
  has a backlog: encodes the write, with a SELECT when `seldb` differs (`seldb` is -1 after a new
  full sync, so the next write names its database), and hands the bytes to `feed_stream`;
- `feed_stream(data)`: appends bytes to the backlog and to every online replica, advancing the
  offset.  A replica calls it with the bytes it applied from its own master, so its sub-replicas
  and backlog carry the master's stream verbatim (replicationFeedStreamFromMasterStream); a
  replica's `feed` therefore sends nothing (`masterhost` is set) and its own writes never enter
  the stream: it only notes the keys a writable replica's clients gave a deadline
  (`own_expires`), the only keys a replica expires itself (`expire_own_keys`, expireSlaveKeys);
- PUBLISH reaches the stream but not the AOF: `replica_stream` marks this target as one that
  takes server/events/propagate.py's ReplOnly ops;
- `masterhost`/`masterport`: None/0 on a master; set (with the log's role letter) only by
  `set_master_address`, which REPLICAOF calls (server/replication/replica.py);
- `info` and `role_reply`: INFO replication and ROLE, each role answering for itself;
- `master`: the master side's state and logic (server/replication/master.py: SYNC/PSYNC/REPLCONF, full
  resyncs, ACKs, WAIT, min-replicas-to-write); `replicas` holds its `Replica`s;
- `failover`: FAILOVER's state and logic (server/replication/failover.py: the coordinated handover of the
  master role to a replica; INFO's master_failover_state);
- `rdb_save_info`: the repl-stream-db an RDB written now records (rdbPopulateSaveInfo), so that
  a replica restarted from it can PSYNC;
- `cron`: replicationCron, once a second.

The replica side (REPLICAOF, the link to the master) lives in its own module and uses this
state; nothing here does I/O except writing to replica clients through their `write`.
"""

from __future__ import annotations

import os
import random
import struct
from bisect import bisect_right
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from raxdb.protocol import reply as R
from raxdb.server.base import clock
from raxdb.server.base.fields import ReplFields
from raxdb.server.base.log import LOG
from raxdb.server.config import oomscore
from raxdb.server.conn import lifecycle
from raxdb.server.events import propagate
from raxdb.server.replication.failover import Failover
from raxdb.server.replication.master import Master
from raxdb.server.table.getkeys import key_positions
from raxdb.storage.alloc import size_class
from raxdb.storage.rax import Rax

if TYPE_CHECKING:
    from raxdb.server.base import interfaces
    from raxdb.server.base.interfaces import Server

NO_REPLID = "0" * 40


def new_replid() -> str:
    return os.urandom(20).hex()


# Redis 7's replication buffer is a list of blocks (replBufBlock) shared by the backlog and the
# replicas.  A block holds at least PROTO_REPLY_CHUNK_BYTES and at most a sixteenth of the backlog
# size, takes over its allocation's slack (zmalloc_usable), and costs its allocation plus a list
# node in repl_buffer_mem.
_BLOCK_MIN = 16 * 1024
_BLOCK_HEADER = 40  # sizeof(replBufBlock)
_BLOCK_OVERHEAD = _BLOCK_HEADER + 24  # ... and sizeof(listNode)
TRIM_BLOCKS = 64  # REPL_BACKLOG_TRIM_BLOCKS_PER_CALL
INDEX_EVERY = 64  # REPL_BACKLOG_INDEX_PER_BLOCKS: Redis indexes every 64th block in a rax


class Backlog:
    """The replication backlog and the replication buffer it shares with the replicas.

    As in Redis 7 (replication.c's feedReplicationBuffer and incrementalTrimReplicationBacklog),
    the stream is appended to fixed blocks, and the backlog lets go of its oldest block only
    while it still holds more than `size` bytes without it and no replica still needs a byte of
    it: a replica waiting for its snapshot, or one whose socket has not taken the stream yet,
    keeps the backlog growing past its size, which also lets a reconnecting replica resume from
    that older history.  Trimming goes at most a given number of blocks per call (freeing many
    at once would stall the server): when a block is added, and ten times that per cron tick.

    `first` is the master offset of the first byte held (repl_backlog_first_byte_offset: the
    stream's bytes are numbered from 1), `histlen` how many bytes are held; `buf` holds them
    all (one bytearray trimmed from the front, which CPython does without moving the rest), and
    the blocks are bookkeeping over it: `starts` (each block's first offset), `cum` (the
    capacity of all blocks made before each, for a replica's share), `tail_room`, and `mem`
    (repl_buffer_mem).  Every block but the last is full.  `held_from` answers the oldest
    offset any replica still needs (None: none); the replication state sets it.  `index` is
    Redis's rax of every 64th block's offset, kept only because INFO's mem_replication_backlog
    counts its nodes (seeking goes by bisection over `starts` here)."""

    __slots__ = ("buf", "size", "first", "starts", "cum", "made", "tail_room", "mem", "held_from", "index",
                 "unindexed")

    def __init__(self, size: int, next_offset: int) -> None:
        self.buf = bytearray()
        self.size = size
        self.first = next_offset  # the offset the next byte appended will have
        self.starts: list[int] = []
        self.cum: list[int] = []
        self.made = 0  # the capacity of every block made so far
        self.tail_room = 0
        self.mem = 0
        self.held_from: Callable[[], int | None] = _no_replica
        self.index = Rax()
        self.unindexed = 0

    @property
    def histlen(self) -> int:
        return len(self.buf)

    def add(self, data: bytes) -> bool:
        """Append stream bytes; True if a block was added (when Redis checks replicas' limits)."""
        buf = self.buf
        n = len(data)
        room = self.tail_room
        buf += data
        if n <= room:
            self.tail_room = room - n
            return False
        offset = self.first + len(buf) - n + room  # the first byte past the tail block
        n -= room
        limit = max(self.size // 16, _BLOCK_MIN)
        while n:
            cap = size_class(min(max(n, _BLOCK_MIN), limit) + _BLOCK_HEADER) - _BLOCK_HEADER
            self.starts.append(offset)
            self.cum.append(self.made)
            self.made += cap
            self.mem += cap + _BLOCK_OVERHEAD
            self._index(offset)
            used = min(cap, n)
            offset += used
            n -= used
            self.tail_room = cap - used
            self.trim(TRIM_BLOCKS)
        return True

    def trim(self, max_blocks: int) -> None:
        """incrementalTrimReplicationBacklog: drop up to max_blocks of the oldest blocks."""
        buf = self.buf
        excess = len(buf) - self.size
        starts = self.starts
        if excess <= 0 or len(starts) <= 1:
            return
        held = self.held_from()
        cum = self.cum
        n = 0
        last = min(max_blocks, len(starts) - 1)
        while n < last:
            if held is not None and held < starts[n + 1]:
                break  # a replica still needs this block
            if cum[n + 1] - cum[0] >= excess:
                break  # without it the backlog would hold less than its size
            n += 1
        if n:
            drop = cum[n] - cum[0]
            del buf[:drop]
            self.first += drop
            self.mem -= drop + n * _BLOCK_OVERHEAD
            if self.index.numele:
                for start in starts[:n]:
                    self.index.remove(_INDEX_KEY(start))
            del starts[:n], cum[:n]

    def _index(self, start: int) -> None:
        """createReplicationBacklogIndex."""
        self.unindexed += 1
        if self.unindexed >= INDEX_EVERY:
            self.index.insert(_INDEX_KEY(start), None)
            self.unindexed = 0

    def index_bytes(self) -> int:
        """The index's part of mem_replication_backlog: its nodes (4 bytes each, as Redis
        reckons a raxNode) and a pointer per key."""
        return self.index.numnodes * 4 + self.index.numele * 8

    def replica_left(self) -> None:
        """freeReplicaReferencedReplBuffer: what the replica held may go now."""
        self.trim(TRIM_BLOCKS)

    def trim_more(self) -> None:
        """beforeSleep's trim, ten times the usual pace (here once per cron tick)."""
        self.trim(10 * TRIM_BLOCKS)

    def share(self, offset: int) -> int:
        """A replica's output buffer in Redis's reckoning (getClientOutputBufferMemoryUsage): the
        blocks from the one holding `offset` (the first byte it still needs) to the last, their
        capacity and overhead."""
        i = max(bisect_right(self.starts, offset) - 1, 0)
        n = len(self.starts) - i
        return 0 if n <= 0 else self.made - self.cum[i] + n * _BLOCK_OVERHEAD

    def shift(self, delta: int) -> None:
        """Renumber the held bytes (a restarted master continuing its saved history)."""
        self.first += delta
        self.starts = [start + delta for start in self.starts]
        self.index = Rax()  # rebaseReplicationBuffer: indexed again at the new offsets
        self.unindexed = 0
        for start in self.starts:
            self._index(start)

    def resize(self, size: int) -> None:
        self.size = size
        self.trim(TRIM_BLOCKS)

    def since(self, offset: int) -> bytes | None:
        """The bytes from master offset `offset` on, or None when the backlog no longer (or not
        yet) holds that byte (offset one past the end: empty, nothing is missing)."""
        start = offset - self.first
        if start < 0 or start > len(self.buf):
            return None
        return bytes(self.buf[start:])


_INDEX_KEY = struct.Struct(">Q").pack


def _no_replica() -> int | None:
    return None


class Replication(ReplFields):
    """The replication state (the module's docstring).  An extension type compiled (state.pxd),
    so it has no Protocol base: `attach` checks it against interfaces.Replication where it
    becomes the server's `repl`."""

    def __init__(self, srv: Server) -> None:
        self.srv = srv
        self.replid = new_replid()
        self.replid2 = NO_REPLID
        self.master_repl_offset = 0
        self.second_replid_offset = -1
        self.backlog: Backlog | None = None
        self.seldb = -1  # the database the stream last SELECTed (-1: name it with the next write)
        self.replicas: list[interfaces.Replica] = []  # attached replicas, in attach order (server/replication/master.py)
        self.masterhost: str | None = None
        self.masterport = 0
        self.link: Any = None  # the replica side's link to its master (server/replication/replica.py)
        # A cluster node that nodes.conf names a replica, set before the dump file loads: its
        # master's address comes later (the cluster's cron), but it loads as a replica (iAmMaster)
        self.cluster_replica = False
        # A writable replica's keys that its own clients gave a deadline: key -> bitmap of dbids
        # (Redis's slaveKeysWithExpire).  Only these expire on a replica (`expire_own_keys`);
        # the master's keys wait for the master's DEL.
        self.own_expires: dict[bytes, int] = {}
        # min-replicas-to-write applies (both options set, and a master): writes go through
        # processCommand's checks (Client.update_plain), which refuse them without good replicas.
        self.write_gate = False
        self.master = Master(self)
        self.failover = Failover(self)  # FAILOVER's state (server/replication/failover.py)
        on = srv.config.on_change.setdefault
        on("repl-backlog-size", []).append(self._on_backlog_size)
        for name in ("min-replicas-to-write", "min-replicas-max-lag"):
            on(name, []).append(lambda _v: self.update_write_gate())

    def set_master_address(self, host: str | None, port: int) -> None:
        """Become a replica of host:port, or a master (None).  The log lines' role letter
        follows at once, as serverLogRaw reads it from masterhost for every line (S or M)."""
        self.masterhost, self.masterport = host, port
        LOG.role = "M" if host is None else "S"
        oomscore.apply(self.srv)  # the role's own score

    # ---- the IDs ------------------------------------------------------------------------------
    def change_replid(self) -> None:
        """changeReplicationId: a new history begins (a full resync as master, a new dataset)."""
        self.replid = new_replid()

    def clear_replid2(self) -> None:
        """clearReplicationId2: no previous history is served to PSYNC."""
        self.replid2 = NO_REPLID
        self.second_replid_offset = -1

    def shift_replid(self) -> None:
        """shiftReplicationId: a promoted replica keeps serving PSYNCs of its old master's history
        up to the current offset (PSYNC2), under a new ID of its own from now on."""
        self.replid2 = self.replid
        self.second_replid_offset = self.master_repl_offset + 1
        self.change_replid()

    # ---- the history a dump file names (loadDataFromDisk) -------------------------------------
    def i_am_master(self) -> bool:
        """iAmMaster: no master configured, and not a cluster replica."""
        return self.masterhost is None and not self.cluster_replica

    @staticmethod
    def saved_history(aux: dict[bytes, bytes]) -> tuple[str, int, int] | None:
        """The repl-id, repl-offset and repl-stream-db a dump file recorded (rdbPopulateSaveInfo),
        or None when it recorded no usable history (loadDataFromDisk's rsi_is_valid)."""
        try:
            replid = aux[b"repl-id"].decode()
            offset = int(aux[b"repl-offset"])
            dbid = int(aux[b"repl-stream-db"])
        except (KeyError, ValueError, UnicodeError):
            return None
        if len(replid) != 40 or offset == -1 or dbid == -1:
            return None
        return replid, offset, dbid

    def continue_saved_history(self, aux: dict[bytes, bytes]) -> None:
        """loadDataFromDisk's master part, after the dump file loaded into the backlog created
        for it (`Persistence.load_at_startup`): a restarted master serves PSYNCs of the history
        it saved (as replid2, up to its offset), so its replicas continue with a partial resync.
        The DELs of the keys that expired while it was down are already in the backlog, after
        that offset.  Without a history the backlog goes: nothing could use it."""
        history = self.saved_history(aux)
        backlog = self.backlog
        if backlog is None:
            return
        if history is None:
            self.free_backlog()
            return
        replid, offset, _dbid = history
        self.replid2 = replid
        self.second_replid_offset = offset + 1
        self.master_repl_offset += offset
        backlog.shift(self.master_repl_offset - backlog.histlen + 1 - backlog.first)
        self.master.no_replicas_since = clock.seconds(self.srv)

    # ---- the backlog --------------------------------------------------------------------------
    def create_backlog(self) -> None:
        """createReplicationBacklog: start keeping stream bytes; the stream's next byte is
        offset master_repl_offset + 1.  A master starts feeding (it becomes a propagation
        target)."""
        if self.backlog is None:
            size = int(self.srv.config.values["repl-backlog-size"])
            self.backlog = Backlog(size, self.master_repl_offset + 1)
            self.backlog.held_from = self.master.held_from
            self.seldb = -1
            targets = self.srv.propagation_targets
            if self not in targets:
                targets.append(self)
            propagate.sync(self.srv)

    def free_backlog(self) -> None:
        """freeReplicationBacklog (repl-backlog-ttl passed with no replicas, or a replica that
        must drop its history)."""
        self.backlog = None
        targets = self.srv.propagation_targets
        if self in targets:
            targets.remove(self)
        propagate.sync(self.srv)

    def _on_backlog_size(self, value: str) -> None:
        if self.backlog is not None:
            self.backlog.resize(int(value))

    # ---- feeding ------------------------------------------------------------------------------
    @property
    def replica_stream(self) -> bool:
        """As a propagation target: does it take PUBLISH (server/events/propagate.py's ReplOnly)?  A
        master's stream does; a replica proxies its master's."""
        return self.masterhost is None

    def feed(self, dbid: int, argv: list[bytes], data: bytes | None = None) -> None:
        """replicationFeedSlaves: a master's propagated write (`data`: argv encoded, when the
        caller has it already).  A replica's own writes (it may be writable) never enter its
        stream: it proxies its master's instead."""
        if self.masterhost is not None:
            # a replica's own client wrote (its master's commands run with the dbs loading)
            if dbid >= 0 and not self.srv.dbs[dbid].loading:
                self._remember_own_expires(dbid, argv)
            return
        if self.backlog is None:
            return
        if data is None:
            data = propagate.encode_command(argv)
        if dbid != self.seldb:
            data = propagate.encode_command([b"SELECT", b"%d" % dbid]) + data
            self.seldb = dbid
        self.feed_stream(data)

    # ---- a writable replica's own keys with a deadline (rememberSlaveKeyWithExpire) ----------
    def _remember_own_expires(self, dbid: int, argv: list[bytes]) -> None:
        """setExpire's writable-replica case, seen from the op the write propagates (the
        replayable form: SET ... PXAT, PEXPIREAT, RESTORE ... ABSTTL): each of its keys that
        now has a deadline is remembered.  Runs only for writes of a replica's clients."""
        db = self.srv.dbs[dbid]
        if not db.expires or dbid > 63:
            return
        cmd = self.srv.table.lookup(argv)
        if cmd is None:
            return
        own = self.own_expires
        for pos in key_positions(cmd, argv):
            key = argv[pos]
            if key in db.expires:
                own[key] = own.get(key, 0) | (1 << dbid)

    def expire_own_keys(self) -> None:
        """expireSlaveKeys (a replica's cron, as databasesCron calls it when it is not a master):
        a writable replica's own keys past their deadline are deleted, as a master's active
        expiry would (the DEL goes to its AOF).  A sample per tick, stopping after three keys
        that still have time, as Redis does."""
        own = self.own_expires
        srv = self.srv
        now = srv.now_ms
        keys = list(own) if len(own) <= 64 else random.sample(list(own), 64)
        alive = 0
        for key in keys:
            dbids, left = own[key], 0
            for db in srv.dbs[:64]:
                if not dbids >> db.id & 1:
                    continue
                when = db.expires.get(key)
                if when is None:
                    continue
                if when <= now:
                    paused, db.expire_paused = db.expire_paused, False  # this one is ours to delete
                    try:
                        db.expire_if_needed(key, now)
                    finally:
                        db.expire_paused = paused
                else:
                    alive += 1
                    left |= 1 << db.id
            if left:
                own[key] = left
            else:
                del own[key]
            if alive > 3:
                break
        propagate.flush_alone(srv)

    def feed_stream(self, data: bytes) -> None:
        """Append stream bytes to the backlog and send them to every replica (each takes what
        its state allows: Replica.send)."""
        backlog = self.backlog
        if backlog is None:
            return
        added = backlog.add(data)
        self.master_repl_offset += len(data)
        replicas = self.replicas
        for r in replicas:
            r.send(data)
        if added and replicas:  # Redis checks its replicas' output limits when a block is added
            self.master.check_limits()

    # ---- both roles ---------------------------------------------------------------------------
    def master_link_up(self) -> bool:
        """A replica's link is up (repl_state REPL_STATE_CONNECTED): the replica side's link
        says so with `state == "connected"`."""
        return self.link is not None and self.link.state == "connected"

    def rdb_save_info(self) -> int | None:
        """rdbPopulateSaveInfo: the repl-stream-db to record in an RDB written now, or None when
        it records no replication info.  A master with a backlog records the db its stream last
        selected; a replica its master client's db, or its cached master's (server/replication/replica.py),
        so that it continues by PSYNC after a restart."""
        if self.masterhost is None and self.backlog is not None:
            return max(self.seldb, 0)
        link = self.link
        if link is not None and link.master is not None:
            return link.master.dbid
        if link is not None and link.cached is not None:
            return link.cached[3]
        return None

    def update_write_gate(self) -> None:
        """Recompute `write_gate`; clients' fast-loop eligibility follows it.  The count of good
        replicas is refreshed every time, as Redis's CONFIG SET of either option does
        (updateGoodSlaves): a replica's lag may have changed since the last cron."""
        values = self.srv.config.values
        gate = (self.masterhost is None and int(values["min-replicas-to-write"]) > 0
                and int(values["min-replicas-max-lag"]) > 0)
        self.master.refresh_good_replicas()
        if gate != self.write_gate:
            self.write_gate = gate
            self.srv.update_plain_all()

    def cron(self) -> None:
        """replicationCron (once a second): a replica's link first (reconnecting, timeouts, ACKs:
        server/replication/replica.py), then the master side's pings, timeouts, backlog TTL and pending
        forks.  A failover's wait is checked first, as Redis does."""
        self.failover.update()
        if self.link is not None:
            self.link.cron()
        self.update_write_gate()
        self.master.cron()

    # ---- introspection ------------------------------------------------------------------------
    def info(self) -> list[str]:
        """INFO replication."""
        if self.masterhost is not None and self.link is not None:
            lines = ["role:slave", *self.link.info_lines()]
        else:
            lines = ["role:master"]
        return lines + self.replicas_info_lines() + self.backlog_info_lines()

    def replicas_info_lines(self) -> list[str]:
        """Both roles list their replicas (connected_slaves, min_slaves_good_slaves, slaveN)."""
        return [*self.master.info_lines(), f"master_failover_state:{self.failover.state}"]

    def backlog_info_lines(self) -> list[str]:
        b = self.backlog
        return [
            f"master_replid:{self.replid}",
            f"master_replid2:{self.replid2}",
            f"master_repl_offset:{self.master_repl_offset}",
            f"second_repl_offset:{self.second_replid_offset}",
            f"repl_backlog_active:{0 if b is None else 1}",
            f"repl_backlog_size:{self.srv.config.values['repl-backlog-size']}",
            f"repl_backlog_first_byte_offset:{0 if b is None else b.first}",
            f"repl_backlog_histlen:{0 if b is None else b.histlen}",
        ]

    def role_reply(self, c: Any) -> bytes:
        if self.masterhost is not None and self.link is not None:
            return self.link.role_reply(c)
        return R.array([R.bulk(b"master"), R.integer(self.master_repl_offset),
                        R.array(self.master.role_replicas())])


def disconnect_replicas(srv: Server) -> None:
    """Close every replica's connection (freeClient of each: a replica that starts a full resync
    with its own master, whose sub-replicas must resync too)."""
    srv.repl.master.disconnect_all()


def update_gate(srv: Server) -> None:
    """`srv.replica_gate`: must commands of ordinary clients pass `Link.denies`
    (server/replication/replica.py)?  On every replica: a read-only one refuses writes, a
    writable one deletes the expired keys a write names first.  While it is set no client is
    `plain`, so the fast loop never skips the check.  The master side's gate
    (min-replicas-to-write, which only a master applies) follows the role change too.  Here,
    not in replica.py, so that a CONFIG SET of the gate's options imports no replica side (#56)."""
    gate = srv.repl.masterhost is not None
    if gate != srv.replica_gate:
        srv.replica_gate = gate
        srv.update_plain_all()
    srv.repl.update_write_gate()


def _on_disconnect(c: interfaces.Client) -> None:
    if c.replica is not None:
        c.server.repl.master.on_disconnect(c)


def attach(srv: Server) -> Replication:
    srv.repl = Replication(srv)
    if _on_disconnect not in lifecycle.DISCONNECT_HOOKS:
        lifecycle.DISCONNECT_HOOKS.append(_on_disconnect)
    return srv.repl
