"""The master side of replication: replicas attaching (SYNC/PSYNC), full and partial resyncs,
the stream's delivery, ACKs, WAIT and min-replicas-to-write, as Redis 7.0's replication.c does
them for a master.  Shared state (IDs, offset, backlog, `feed`) is server/replication/state.py's.

A client becomes a replica with SYNC or PSYNC; its `Client.replica` (a `Replica`) is created by
its first REPLCONF (listening-port, capa, ...) or by the SYNC itself, and `flagged` says it is a
replica (Redis's CLIENT_SLAVE: flag S in CLIENT LIST, class "slave" for CLIENT KILL TYPE and the
output buffer limits).  From then on it gets the stream only: a command of it that makes a reply
disconnects it, as Redis does; its REPLCONF ACKs (no reply) report the offset it processed.

Invariants:
- `Replication.replicas` holds the flagged replicas in the order they attached; the stream
  (`Replication.feed_stream`) reaches each through `Replica.send`: an online replica gets it at
  once, one in a full resync notes in `pending_from` where its stream starts (the first byte
  after its snapshot), the backlog keeps those bytes for it (Redis 7's shared replication
  buffer: server/replication/state.py's Backlog) and it gets them after the RDB payload; one still
  waiting for its snapshot to start gets nothing (its snapshot will hold it).  So a replica receives exactly the stream after its +FULLRESYNC
  offset, and nothing else, in order.
- +FULLRESYNC <replid> <offset> is written when the snapshot is taken (the fork), offset being
  master_repl_offset then, and `seldb` is reset so the next write names its database.
- There is one child (`Persistence.fork_child`).  A full resync's snapshot is a BGSAVE to disk
  (repl-diskless-sync no, or a replica without capa eof) or, diskless, a child writing
  "$EOF:<mark>\\r\\n<rdb><mark>" into a pipe that the parent forwards to the replicas being
  synced (Redis's rdbSaveToSlavesSockets design: the child never touches sockets, so a replica
  that drops does not stop the others).  A replica that cannot attach to the running child waits
  (wait_bgsave) and the next fork is started from the replication cron or when the child ends.
- Diskless replicas are put online when the child ends, but their stream starts at their first
  REPLCONF ACK (the replica must find the EOF mark at the very end of what it read); disk-based
  ones get "$<len>\\r\\n<file>", the file read a chunk per loop pass while their socket takes it
  (`_send_bulk`, sendBulkToSlave), and their stream right after it.

- WAIT waits for the offset the stream has when it runs (Redis: the offset when the client's
  previous command ended; they differ only by what other clients and the cron fed in between).
- min-replicas-to-write: with both options set (`Replication.write_gate`) no client takes the
  fast loop, so processCommand's check (Client.execute) sees every write.

Everything here runs only while a replica exists or a command asks for it: a server without
replicas pays nothing.  Cost with replicas is the feed (one encode, one write per replica), as
the AOF pays it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from raxdb.protocol import reply as R
from raxdb.protocol.request import split_inline_args
from raxdb.server.base import clock
from raxdb.server.base.errors import CommandError
from raxdb.server.base.log import LOG
from raxdb.server.conn import obuf
from raxdb.server.conn.clientinfo import client_info_line
from raxdb.server.conn.unixaddr import PEER_IP
from raxdb.server.events import propagate
from raxdb.server.net import blocking
from raxdb.server.persistence.snapshot import save_points
from raxdb.server.table.args import maybe_int

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

if not cython.compiled:  # compiled, master.pxd cimports it from client.pxd (a C call)
    from raxdb.server.net.client import write_out

if TYPE_CHECKING:  # checked against the protocols the lower layers work with; no base at run time
    from raxdb.server.base import interfaces
    from raxdb.server.base.interfaces import Client, Server
    from raxdb.server.replication.state import Replication

# Replica states (replstate), and their INFO names (replstateToString).
WAIT_BGSAVE_START, WAIT_BGSAVE_END, SEND_BULK, ONLINE, RDB_TRANSMITTED = range(5)
STATE_NAMES = {WAIT_BGSAVE_START: "wait_bgsave", WAIT_BGSAVE_END: "wait_bgsave", SEND_BULK: "send_bulk",
               ONLINE: "online", RDB_TRANSMITTED: ""}

EOF_MARK_SIZE = 40  # RDB_EOF_MARK_SIZE
_PIPE_CHUNK = 16 * 1024  # PROTO_IOBUF_LEN
_BULK_CHUNK = 1 << 20  # a dump file goes to a disk-synced replica this much per loop pass
_BULK_RETRY_S = 0.005  # when the replica's socket has stopped taking them, look again after this
_PIPE_PAUSE_BYTES = 4 * 1024 * 1024  # stop reading the pipe while a replica holds this much unsent
_GETACK = [b"REPLCONF", b"GETACK", b"*"]
# What a replica asked to leave out of its RDB (slave_req, REPLCONF rdb-filter-only): such an RDB
# is always made for sockets, never written over the dump file.
REQ_EXCLUDE_DATA, REQ_EXCLUDE_FUNCTIONS = 1, 2
_PING = [b"PING"]


class Replica:
    """What a master knows of one replica connection (the CLIENT_SLAVE part of Redis's client).
    An extension type compiled (master.pxd), so it has no Protocol base: `replica_of` checks it
    against interfaces.Replica where it becomes a client's `replica`."""

    __slots__ = ("client", "flagged", "state", "port", "addr", "capa_eof", "capa_psync2", "rdb_only", "req",
                 "pre_psync", "ack_off", "aof_ack_off", "ack_time", "initial_offset", "pending_from",
                 "stream_on_ack", "master", "last_partial_write", "pipe_taken")

    def __init__(self, client: Client) -> None:
        self.client = client
        self.master: Master = client.server.repl.master
        self.flagged = False
        self.state = -1
        self.port = 0  # REPLCONF listening-port
        self.addr: str | None = None  # REPLCONF ip-address
        self.capa_eof = self.capa_psync2 = False
        self.rdb_only = False
        self.req = 0  # REQ_EXCLUDE_* bits
        self.pre_psync = False  # attached with the old SYNC: no ACKs expected
        self.ack_off = 0
        self.aof_ack_off = 0  # REPLCONF ACK's FACK (7.2 replicas): the offset in its AOF on disk
        self.ack_time = 0
        self.initial_offset = 0  # the offset its +FULLRESYNC named
        # the offset of the first stream byte held for it in the backlog while it cannot take
        # the stream (its full resync), or None
        self.pending_from: int | None = None
        self.stream_on_ack = False  # online, but the stream waits for its first ACK
        # a diskless transfer: when its socket last took bytes of the payload (unix seconds;
        # repl_last_partial_write; 0 while it has nothing left to take), and how many it had
        # taken by then
        self.last_partial_write = 0
        self.pipe_taken = 0

    def taken(self) -> int:
        """The bytes its socket has taken so far (all it was sent less what is still queued)."""
        return self.client.tot_net_out - self.client.output_size()

    def ip(self) -> str:
        if self.addr:
            return self.addr
        if self.client.unix_socket:
            return PEER_IP
        host = self.client.addr.rsplit(":", 1)[0]
        return host[1:-1] if host.startswith("[") else host

    def name(self) -> str:
        """replicationGetSlaveName: ip:listening-port, for the log."""
        ip = self.ip()
        if not self.port:
            return f"{ip}:<unknown-replica-port>"
        return f"[{ip}]:{self.port}" if ":" in ip else f"{ip}:{self.port}"

    def send(self, data: bytes) -> None:
        """Stream bytes for this replica (canFeedReplicaReplBuffer and the write handler's rules)."""
        state = self.state
        if state == WAIT_BGSAVE_START or self.rdb_only:
            return
        if state == ONLINE and not self.stream_on_ack:
            write_out(self.client, data)  # type: ignore[arg-type]  # a net/client.py Client
            self.master.repl_output_bytes += len(data)
            return
        if self.pending_from is None:  # the backlog holds the stream for it from here
            self.pending_from = self.master.repl.master_repl_offset - len(data) + 1

    def start_stream(self) -> None:
        """replicaStartCommandStream: what accumulated during the sync goes out, then the rest."""
        self.stream_on_ack = False
        start, self.pending_from = self.pending_from, None
        if start is None:
            return
        backlog = self.master.repl.backlog
        data = backlog.since(start) if backlog is not None else None
        if data is None:  # the backlog keeps what a replica needs: this would be a bug
            LOG.warning(f"The stream held for replica {self.name()} from offset {start} is gone: disconnecting it")
            self.client.close()
            return
        if data:
            self.client.write(data)
            self.master.repl_output_bytes += len(data)

    def needs_from(self) -> int | None:
        """The oldest stream offset this replica still needs (the block Redis's replica client
        refers to): where its held stream starts, or, online, its first byte the socket has not
        taken; None if it takes no stream yet."""
        if self.pending_from is not None:
            return self.pending_from
        if self.state != ONLINE:
            return None
        return self.master.repl.master_repl_offset + 1 - self.client.output_size()


def replica_of(c: Client) -> interfaces.Replica:
    r = c.replica
    if r is None:
        r = c.replica = Replica(c)
    return r


class Master:
    """The master-side state beyond replication.py's: the diskless transfer, WAIT's clients,
    the good-replicas count, the statistics."""

    def __init__(self, repl: Replication) -> None:
        self.repl = repl
        self.srv: Server = repl.srv
        self.sync_full = self.sync_partial_ok = self.sync_partial_err = 0
        # stat_net_repl_output_bytes: the stream and the RDB payloads written to replicas (INFO's
        # total_net_output_bytes counts them as well, as Redis's sum does; the +FULLRESYNC and
        # +CONTINUE lines are in neither figure of Redis's, and only in that total here)
        self.repl_output_bytes = 0
        self.rdb_child_type = ""  # "disk" or "socket" while a child makes a replica's snapshot
        self.pipe_fd = -1
        self.pipe_conns: list[interfaces.Replica] = []
        self.pipe_paused = False
        self.pipe_eof = False  # the child's end of the pipe was read (its fd stays open until it exits)
        self.no_replicas_since = clock.seconds(self.srv)
        self.good_replicas = 0
        self.waiting: list[tuple[Client, Any, int, int]] = []  # WAIT: (client, its block, offset, n)
        # WAITAOF: (client, its block, offset, numlocal, numreplicas)
        self.waiting_aof: list[tuple[Client, Any, int, int, int]] = []
        self.getack_pending = False
        # replication_cron_loops: Redis's first run is at start-up, before any replica can be
        # there; the cron here first runs a second later, so that first run counts as done.
        self.cron_loops = 1
        self.hooked = False

    # ---- attaching (syncCommand) ---------------------------------------------------------------
    def sync(self, c: Client, argv: list[bytes]) -> bytes:
        """SYNC and PSYNC; the reply is written here (+FULLRESYNC, +CONTINUE) or is an error."""
        repl = self.repl
        r = c.replica
        if r is not None and r.flagged:
            return b""  # already a replica: ignored
        psync = argv[0].lower() == b"psync"
        if psync and len(argv) > 3 and argv[3].lower() == b"failover":
            # our master fails over to us (server/replication/failover.py): it continues as our replica
            LOG.warning(f"Failover request received for replid {argv[1].decode(errors='replace')}.")
            if repl.masterhost is None:
                raise CommandError("ERR PSYNC FAILOVER can't be sent to a master.")
            if argv[1].lower() != repl.replid.encode():
                raise CommandError("ERR PSYNC FAILOVER replid must match my replid.")
            from raxdb.server.replication import replica

            replica.unset_master(self.srv)
            LOG.notice(f"MASTER MODE enabled (failover request from '{client_info_line(c, c)}')")
        if repl.failover.active:
            raise CommandError("NOMASTERLINK Can't SYNC while failing over")
        if repl.masterhost is not None and not repl.master_link_up():
            raise CommandError("NOMASTERLINK Can't SYNC while not connected with my master")
        if c.obuf or c.running:
            raise CommandError("ERR SYNC and PSYNC are invalid with pending output")
        r = replica_of(c)
        if r.req and not r.capa_eof:
            raise CommandError("ERR Filtered replica requires EOF capability")
        LOG.notice(f"Replica {r.name()} asks for synchronization")
        if psync:
            offset = maybe_int(argv[2])
            if offset is None:
                LOG.warning(f"Replica {r.name()} asks for synchronization but with a wrong offset")
                raise CommandError("ERR value is not an integer or out of range")
            if self._try_partial(r, argv[1], offset):
                self.sync_partial_ok += 1
                return b""
            if argv[1][:1] != b"?":
                self.sync_partial_err += 1
        else:
            r.pre_psync = True
        self.sync_full += 1
        r.state = WAIT_BGSAVE_START
        self._flag(r)
        if len(repl.replicas) == 1 and repl.backlog is None:
            repl.change_replid()
            repl.clear_replid2()
            repl.create_backlog()
            LOG.notice(f"Replication backlog created, my new replication IDs are '{repl.replid}' and "
                       f"'{repl.replid2}'")
        p = self.srv.persistence
        if p.child_type == "rdb" and self.rdb_child_type != "socket":
            # a BGSAVE to disk runs: usable if another replica is taking its differences
            other = next((x for x in repl.replicas if x.state == WAIT_BGSAVE_END
                          and (not x.rdb_only or r.rdb_only)), None)
            if other is not None and (not other.capa_eof or r.capa_eof) and other.req == r.req:
                if not r.rdb_only:
                    r.pending_from = other.pending_from
                self._setup_full_resync(r, other.initial_offset)
                LOG.notice("Waiting for end of BGSAVE for SYNC")
            else:
                LOG.notice("Can't attach the replica to the current BGSAVE. Waiting for next BGSAVE for SYNC")
        elif p.child_type == "rdb":
            LOG.notice("Current BGSAVE has socket target. Waiting for next BGSAVE for SYNC")
        elif self._diskless() and r.capa_eof and int(self.srv.config.values["repl-diskless-sync-delay"]):
            LOG.notice("Delay next BGSAVE for diskless SYNC")
        elif not p.has_child():
            self._start_bgsave(r.capa_eof, r.req)
        else:
            LOG.notice("No BGSAVE in progress, but another BG operation is active. BGSAVE for replication delayed")
        return b""

    def _flag(self, r: interfaces.Replica) -> None:
        c = r.client
        r.flagged = True
        self.repl.replicas.append(r)
        c.reply_mode = "replica"  # it gets the stream, never replies (Client._emit)
        c.update_plain()
        self._install_hooks()

    def _diskless(self) -> bool:
        return self.srv.config.values["repl-diskless-sync"] == "yes"

    def _try_partial(self, r: interfaces.Replica, replid_arg: bytes, offset: int) -> bool:
        """masterTryPartialResynchronization."""
        repl = self.repl
        replid = replid_arg.decode(errors="replace")
        if replid.lower() != repl.replid and (replid.lower() != repl.replid2
                                              or offset > repl.second_replid_offset):
            if replid[:1] != "?":
                if replid.lower() not in (repl.replid, repl.replid2):
                    LOG.notice(f"Partial resynchronization not accepted: Replication ID mismatch (Replica asked "
                               f"for '{replid}', my replication IDs are '{repl.replid}' and '{repl.replid2}')")
                else:
                    LOG.notice(f"Partial resynchronization not accepted: Requested offset for second ID was "
                               f"{offset}, but I can reply up to {repl.second_replid_offset}")
            else:
                LOG.notice(f"Full resync requested by replica {r.name()}")
            return False
        b = repl.backlog
        missing = b.since(offset) if b is not None else None
        if missing is None:
            LOG.notice(f"Unable to partial resync with replica {r.name()} for lack of backlog (Replica request "
                       f"was: {offset}).")
            if offset > repl.master_repl_offset:
                LOG.warning(f"Warning: replica {r.name()} tried to PSYNC with an offset that is greater than the "
                            "master replication offset.")
            return False
        r.state = ONLINE
        r.ack_time = int(clock.seconds(self.srv))
        r.stream_on_ack = False
        self._flag(r)
        c = r.client
        c.write(b"+CONTINUE %s\r\n" % repl.replid.encode() if r.capa_psync2 else b"+CONTINUE\r\n")
        if missing:
            c.write(missing)
            self.repl_output_bytes += len(missing)
        LOG.notice(f"Partial resynchronization request from {r.name()} accepted. Sending {len(missing)} bytes of "
                   f"backlog starting from offset {offset}.")
        self.refresh_good_replicas()
        return True

    def _setup_full_resync(self, r: interfaces.Replica, offset: int) -> None:
        """replicationSetupSlaveForFullResync."""
        r.initial_offset = offset
        r.state = WAIT_BGSAVE_END
        self.repl.seldb = -1
        if not r.pre_psync:
            r.client.write(b"+FULLRESYNC %s %d\r\n" % (self.repl.replid.encode(), offset))

    # ---- the snapshot (startBgsaveForReplication) ------------------------------------------------
    def _start_bgsave(self, mincapa_eof: bool, req: int) -> bool:
        """For the replicas waiting with requirements `req`; `mincapa_eof`: all of them said capa eof."""
        socket_target = (self._diskless() or bool(req)) and mincapa_eof
        LOG.notice(f"Starting BGSAVE for SYNC with target: {'replicas sockets' if socket_target else 'disk'}")
        ok = self._fork_to_sockets(req) if socket_target else self._fork_to_disk(req)
        if not ok:
            LOG.warning("BGSAVE for replication failed")
            for r in list(self.repl.replicas):
                if r.state == WAIT_BGSAVE_START:
                    self._unlink(r)
                    r.flagged = False
                    c = r.client
                    c.write(c.error_reply(b"ERR BGSAVE failed, replication can't continue"))
                    c.close_after_replies()
                    c.close()
        return ok

    def _fork_to_disk(self, req: int) -> bool:
        p = self.srv.persistence
        if not p.bgsave():
            return False
        self.rdb_child_type = "disk"
        offset = self.repl.master_repl_offset
        for r in self.repl.replicas:
            if r.state == WAIT_BGSAVE_START and r.req == req:
                self._setup_full_resync(r, offset)
        return True

    def _fork_to_sockets(self, req: int) -> bool:
        """rdbSaveToSlavesSockets: the child writes the EOF-marked RDB into a pipe this process
        forwards to every replica waiting for a snapshot."""
        srv = self.srv
        p = srv.persistence
        targets = [r for r in self.repl.replicas if r.state == WAIT_BGSAVE_START and r.req == req]
        rfd, wfd = os.pipe()
        mark = os.urandom(EOF_MARK_SIZE // 2).hex().encode()
        compress = srv.config.values["rdbcompression"] == "yes"

        def work() -> bool:
            os.close(rfd)
            try:
                with os.fdopen(wfd, "wb", buffering=_PIPE_CHUNK) as f:
                    f.write(b"$EOF:" + mark + b"\r\n")
                    p.write_to(f, compress, data=not req & REQ_EXCLUDE_DATA,
                               functions=not req & REQ_EXCLUDE_FUNCTIONS)
                    f.write(mark)
            except OSError:
                return False
            return True

        try:
            pid = p.fork_child("rdb", work, "redis-rdb-to-slaves")
        except OSError as exc:
            os.close(rfd)
            os.close(wfd)
            LOG.warning(f"Can't save in background: fork: {exc.strerror}")
            return False
        os.close(wfd)
        LOG.notice(f"Background RDB transfer started by pid {pid}")
        p.rdb_child_started()
        self.rdb_child_type = "socket"
        offset = self.repl.master_repl_offset
        now = int(clock.seconds(self.srv))
        for r in targets:
            self._setup_full_resync(r, offset)
            r.last_partial_write = now
            r.pipe_taken = r.taken()
        os.set_blocking(rfd, False)
        self.pipe_fd = rfd
        self.pipe_conns = targets
        self.pipe_paused = False
        self.pipe_eof = False
        loop = srv.loop
        if loop is not None:
            loop.add_reader(rfd, self._pipe_readable)
        return True

    def _pipe_readable(self, drain: bool = False) -> None:
        """rdbPipeReadHandler: forward what the child wrote; stop reading while a replica is
        slow to take it (the pipe then fills and the child waits, as Redis's).  `drain`: the
        child has exited, so the rest is in the pipe and is read to its end now."""
        fd = self.pipe_fd
        if fd < 0:
            return
        while True:
            try:
                data = os.read(fd, _PIPE_CHUNK)
            except BlockingIOError:
                return
            except OSError as exc:
                LOG.warning(f"Diskless rdb transfer, read error sending DB to replicas: {exc.strerror}")
                for r in self.pipe_conns:
                    r.client.close()
                self._close_pipe()
                self.srv.persistence.kill_child_process()
                self._socket_child_done(-1, 1, 0)
                return
            if not data:
                alive = sum(1 for r in self.pipe_conns if not r.client.closed)
                LOG.warning(f"Diskless rdb transfer, done reading from pipe, {alive} replicas still up.")
                self.pipe_eof = True
                self._close_pipe(keep_fd=True)
                return
            alive = 0
            slow = False
            for r in self.pipe_conns:
                c = r.client
                if c.closed:
                    continue
                c.write(data)
                self.repl_output_bytes += len(data)
                alive += 1
                if c.output_size() > _PIPE_PAUSE_BYTES:
                    slow = True
            if not alive:
                self._close_pipe()
                if drain:  # the child has exited already: its end is being handled
                    return
                LOG.warning("Diskless rdb transfer, last replica dropped, killing fork child.")
                self.srv.persistence.kill_child_process()
                self._socket_child_done(-1, 0, 10)
                return
            if slow and not drain:
                self._pause_pipe()
                return

    def _pause_pipe(self) -> None:
        loop = self.srv.loop
        if loop is None or self.pipe_fd < 0:
            return
        loop.remove_reader(self.pipe_fd)
        self.pipe_paused = True
        loop.call_later(0.01, self._resume_pipe)

    def _resume_pipe(self) -> None:
        if not self.pipe_paused or self.pipe_fd < 0:
            return
        if any(not r.client.closed and r.client.output_size() > _PIPE_PAUSE_BYTES // 2 for r in self.pipe_conns):
            loop = self.srv.loop
            if loop is not None:
                loop.call_later(0.01, self._resume_pipe)
            return
        self.pipe_paused = False
        loop = self.srv.loop
        if loop is not None:
            loop.add_reader(self.pipe_fd, self._pipe_readable)
        self._pipe_readable()

    def _close_pipe(self, keep_fd: bool = False) -> None:
        fd = self.pipe_fd
        if fd < 0:
            return
        loop = self.srv.loop
        if loop is not None and not self.pipe_paused:
            loop.remove_reader(fd)
        self.pipe_paused = False
        if not keep_fd:
            os.close(fd)
            self.pipe_fd = -1

    # ---- the child ends (backgroundSaveDoneHandler, updateSlavesWaitingBgsave) -------------------
    def _install_hooks(self) -> None:
        """Route the end of every child through here: a snapshot for replicas is delivered
        (replicas still waiting get the next fork once the child's state is reset:
        Persistence._reaped)."""
        if self.hooked:
            return
        self.hooked = True
        p = self.srv.persistence
        for kind, handler in list(p.child_done.items()):
            p.child_done[kind] = self._wrap_child_done(kind, handler)

    def _wrap_child_done(self, kind: str, handler: Any) -> Any:
        def done(pid: int, exitcode: int, bysignal: int) -> None:
            if kind == "rdb" and self.rdb_child_type == "socket":
                self._socket_child_done(pid, exitcode, bysignal)
            else:
                handler(pid, exitcode, bysignal)
                if kind == "rdb":  # any BGSAVE to disk: replicas waiting for it get the file
                    self.rdb_child_type = ""
                    self._bgsave_done(exitcode == 0 and not bysignal, "disk")

        return done

    def _socket_child_done(self, pid: int, exitcode: int, bysignal: int) -> None:
        """backgroundSaveDoneHandlerSocket."""
        p = self.srv.persistence
        if pid != -1 and self.pipe_fd >= 0 and not self.pipe_eof and exitcode == 0 and not bysignal:
            # The child may be reaped before this process read all it wrote (a busy loop runs the
            # cron first; Redis's child waits on rdb_child_exit_pipe instead): the rest is in the
            # pipe, so it is forwarded now rather than dropped with the pipe.
            loop = self.srv.loop
            if self.pipe_paused:
                self.pipe_paused = False
            elif loop is not None:
                loop.remove_reader(self.pipe_fd)
            self._pipe_readable(drain=True)
        if pid != -1:
            if not bysignal and exitcode == 0:
                LOG.notice("Background RDB transfer terminated with success")
            elif not bysignal:
                LOG.warning("Background transfer error")
            else:
                LOG.warning(f"Background transfer terminated by signal {bysignal}")
        p.rdb_child_ended()
        if self.pipe_fd >= 0:
            self._close_pipe()
        self.pipe_conns = []
        self.rdb_child_type = ""
        self._bgsave_done(exitcode == 0 and not bysignal, "socket")

    def _bgsave_done(self, ok: bool, target: str) -> None:
        """updateSlavesWaitingBgsave."""
        for r in list(self.repl.replicas):
            if r.state != WAIT_BGSAVE_END:
                continue
            c = r.client
            if not ok:
                LOG.warning("SYNC failed. BGSAVE child returned an error")
                c.close()
                continue
            if target == "socket":
                LOG.notice(f"Streamed RDB transfer with replica {r.name()} succeeded (socket). Waiting for REPLCONF "
                           "ACK from slave to enable streaming")
                if not self._put_online(r):
                    c.close()
                    continue
                r.stream_on_ack = True
                continue
            try:
                f = open(self.srv.persistence.path(), "rb")  # noqa: SIM115 - _send_bulk closes it
                size = os.fstat(f.fileno()).st_size
            except OSError as exc:
                c.close()
                LOG.warning(f"SYNC failed. Can't open/stat DB after BGSAVE: {exc.strerror}")
                continue
            r.state = SEND_BULK
            preamble = b"$%d\r\n" % size
            c.write(preamble)
            self.repl_output_bytes += len(preamble)
            self._send_bulk(r, f)

    def _send_bulk(self, r: interfaces.Replica, f: Any) -> None:
        """sendBulkToSlave: the dump file to a replica a chunk per loop pass, while its socket
        takes them (a paused transport is looked at again a little later), so that neither the
        file nor its copy in the output buffer is held whole, and the loop never stops for it.
        The file stays open, so a later save renaming another over it changes nothing.  At its
        end the replica goes online and its held stream follows."""
        c = r.client
        if c.closed or r.state != SEND_BULK:
            f.close()
            return
        loop = self.srv.loop
        if c.write_paused and loop is not None:
            loop.call_later(_BULK_RETRY_S, self._send_bulk, r, f)
            return
        try:
            chunk = f.read(_BULK_CHUNK)
        except OSError as exc:
            f.close()
            LOG.warning(f"Read error sending DB to replica: {exc.strerror}")
            c.close()
            return
        while chunk:
            c.write(chunk)
            self.repl_output_bytes += len(chunk)
            if loop is not None:
                loop.call_soon(self._send_bulk, r, f)
                return
            chunk = f.read(_BULK_CHUNK)  # no loop (in-process use): the whole file now
        f.close()
        if not self._put_online(r):
            c.close()
            return
        r.start_stream()

    def _put_online(self, r: interfaces.Replica) -> bool:
        """replicaPutOnline; False for an rdb-only replica, which is then closed."""
        if r.rdb_only:
            r.state = RDB_TRANSMITTED
            LOG.notice(f"RDB transfer completed, rdb only replica ({r.name()}) should be disconnected asap")
            return False
        r.state = ONLINE
        r.ack_time = int(clock.seconds(self.srv))
        self.refresh_good_replicas()
        LOG.notice(f"Synchronization with replica {r.name()} succeeded")
        return True

    def start_pending_fork(self) -> None:
        """replicationStartPendingFork / shouldStartChildReplication."""
        if self.srv.persistence.has_child():
            return
        waiting = [r for r in self.repl.replicas if r.state == WAIT_BGSAVE_START]
        if not waiting:
            return
        req = waiting[0].req  # one fork serves the replicas with the first one's requirements
        waiting = [r for r in waiting if r.req == req]
        now = self.srv.now_ms
        max_idle = max((now - r.client.last_interaction) // 1000 for r in waiting)  # slave->lastinteraction
        values = self.srv.config.values
        max_replicas = int(values["repl-diskless-sync-max-replicas"])
        if (not self._diskless() or (max_replicas > 0 and len(waiting) >= max_replicas)
                or max_idle >= int(values["repl-diskless-sync-delay"])):
            self._start_bgsave(all(r.capa_eof for r in waiting), req)

    # ---- REPLCONF ------------------------------------------------------------------------------
    def replconf(self, c: Client, argv: list[bytes]) -> bytes:
        from raxdb.server.base.errors import SYNTAX, CommandError
        from raxdb.server.table.args import maybe_int, to_int

        if len(argv) % 2 == 0:
            raise CommandError(SYNTAX)
        r = replica_of(c)
        for j in range(1, len(argv), 2):
            opt = argv[j].lower()
            val = argv[j + 1]
            if opt == b"listening-port":
                r.port = to_int(val)
            elif opt == b"ip-address":
                if len(val) >= 256:  # NET_HOST_STR_LEN
                    raise CommandError(f"ERR REPLCONF ip-address provided by replica instance is too long: "
                                       f"{len(val)} bytes")
                r.addr = val.decode(errors="replace")
            elif opt == b"capa":
                low = val.lower()
                if low == b"eof":
                    r.capa_eof = True
                elif low == b"psync2":
                    r.capa_psync2 = True
            elif opt == b"ack":
                if not r.flagged:
                    return b""
                offset = maybe_int(val)
                if offset is None:
                    return b""
                # REPLCONF ACK <offset> [FACK <aofoffset>] (7.2 replicas): the AOF's on-disk offset
                if len(argv) > j + 3 and argv[j + 2].lower() == b"fack":
                    fack = maybe_int(argv[j + 3])
                    if fack is not None and fack > r.aof_ack_off:
                        r.aof_ack_off = fack
                self.ack(r, offset)
                return b""
            elif opt == b"getack":
                link = self.repl.link
                if self.repl.masterhost is not None and link is not None:
                    link.send_ack()
                return b""
            elif opt == b"rdb-only":
                n = to_int(val)
                if n < 0 or n > 1:
                    raise CommandError("ERR value is out of range, value must between 0 and 1")
                r.rdb_only = n == 1
            elif opt == b"rdb-filter-only":
                filters = split_inline_args(val)
                if filters is None:
                    raise CommandError("ERR Missing rdb-filter-only values")
                r.req |= REQ_EXCLUDE_DATA | REQ_EXCLUDE_FUNCTIONS  # only what the filters include
                for f in filters:
                    if f.lower() != b"functions":
                        raise CommandError(f"ERR Unsupported rdb-filter-only option: {f.decode(errors='replace')}")
                    r.req &= ~REQ_EXCLUDE_FUNCTIONS
            else:
                raise CommandError(f"ERR Unrecognized REPLCONF option: {argv[j].decode(errors='replace')}")
        return R.OK

    def ack(self, r: interfaces.Replica, offset: int) -> None:
        if offset > r.ack_off:
            r.ack_off = offset
        r.ack_time = int(clock.seconds(self.srv))
        p = self.srv.persistence
        if p.child_type == "rdb" and r.state == WAIT_BGSAVE_END:
            p.check_child()
        if r.stream_on_ack and r.state == ONLINE:
            r.start_stream()
        if self.waiting:
            self.serve_waiting()
        if self.waiting_aof:
            self.serve_waiting_aof()
        self.repl.failover.check_soon()  # a failover waits for this ACK

    # ---- leaving ---------------------------------------------------------------------------------
    def _unlink(self, r: interfaces.Replica) -> None:
        repl = self.repl
        if r in repl.replicas:
            repl.replicas.remove(r)
        if r in self.pipe_conns:
            self.pipe_conns.remove(r)
        if not repl.replicas:
            self.no_replicas_since = clock.seconds(self.srv)
        if repl.backlog is not None:
            repl.backlog.replica_left()
        self.refresh_good_replicas()

    def on_disconnect(self, c: Client) -> None:
        """freeClient's replica part."""
        r = c.replica
        if r is None or not r.flagged:
            return
        r.flagged = False
        self._stop_useless_snapshot(r)
        self._unlink(r)
        LOG.warning(f"Connection with replica {r.name()} lost.")

    def _stop_useless_snapshot(self, r: interfaces.Replica) -> None:
        """freeClient's check: the last replica waiting for a snapshot on disk left and no save
        point wants the file, so the child is killed (its memory freed, the next full sync or
        BGSAVE forks at once).  With save points the snapshot still keeps the data safe."""
        p = self.srv.persistence
        if (r.state == WAIT_BGSAVE_END and p.child_type == "rdb" and self.rdb_child_type != "socket"
                and not save_points(self.srv.config.values["save"])
                and not any(x is not r and x.state == WAIT_BGSAVE_END for x in self.repl.replicas)):
            p.kill_child()

    def disconnect_all(self) -> None:
        """freeClient of every replica (a replica that resyncs with its own master)."""
        for r in list(self.repl.replicas):
            c = r.client
            self.on_disconnect(c)
            c.close()

    # ---- the cron (replicationCron's master part) ------------------------------------------------
    def cron(self) -> None:
        repl = self.repl
        values = self.srv.config.values
        now = int(clock.seconds(self.srv))
        replicas = repl.replicas
        if replicas and self.cron_loops % int(values["repl-ping-replica-period"]) == 0:
            if repl.masterhost is None and not repl.failover.pings_held():
                repl.feed_stream(propagate.encode_command(_PING))
        for r in list(replicas):
            if r.state == WAIT_BGSAVE_START or (r.state == WAIT_BGSAVE_END and self.rdb_child_type != "socket"):
                r.client.write(b"\n")
        timeout = int(values["repl-timeout"])
        for r in list(replicas):
            if r.state == ONLINE and not r.pre_psync and now - r.ack_time > timeout:
                LOG.warning(f"Disconnecting timedout replica (streaming sync): {r.name()}")
                c = r.client
                self.on_disconnect(c)
                c.close()
            elif r.state == WAIT_BGSAVE_END and self.rdb_child_type == "socket" and r in self.pipe_conns:
                # a diskless transfer to a replica whose socket took nothing of what it was
                # given for repl-timeout (stopped, or not reading) would hold the child and the
                # others: it goes.  One with nothing left to take (waiting, like the child, on
                # a slower one) is not timed out: Redis's repl_last_partial_write is 0 then.
                taken = r.taken()
                if not r.client.output_size():
                    r.last_partial_write = 0
                elif taken != r.pipe_taken or not r.last_partial_write:
                    r.pipe_taken, r.last_partial_write = taken, now
                elif now - r.last_partial_write > timeout:
                    LOG.warning(f"Disconnecting timedout replica (full sync): {r.name()}")
                    c = r.client
                    self.on_disconnect(c)
                    c.close()  # the paused pipe resumes for the others (or the child goes)
        ttl = int(values["repl-backlog-ttl"])
        if not replicas and ttl and repl.backlog is not None and repl.masterhost is None:
            if clock.seconds(self.srv) - self.no_replicas_since > ttl:
                repl.change_replid()
                repl.clear_replid2()
                repl.free_backlog()
                LOG.notice(f"Replication backlog freed after {ttl} seconds without connected replicas.")
        self.start_pending_fork()
        self.refresh_good_replicas()
        self.cron_loops += 1

    # ---- min-replicas-to-write -------------------------------------------------------------------
    def refresh_good_replicas(self) -> None:
        """refreshGoodSlavesCount."""
        values = self.srv.config.values
        lag = int(values["min-replicas-max-lag"])
        if not int(values["min-replicas-to-write"]) or not lag:
            return
        now = int(clock.seconds(self.srv))
        self.good_replicas = sum(1 for r in self.repl.replicas if r.state == ONLINE and now - r.ack_time <= lag)

    def enough_good_replicas(self) -> bool:
        """checkGoodReplicasStatus."""
        values = self.srv.config.values
        need = int(values["min-replicas-to-write"])
        return (self.repl.masterhost is not None or not int(values["min-replicas-max-lag"]) or not need
                or self.good_replicas >= need)

    # ---- WAIT ------------------------------------------------------------------------------------
    def count_acks(self, offset: int) -> int:
        """replicationCountAcksByOffset."""
        return sum(1 for r in self.repl.replicas if r.state == ONLINE and r.ack_off >= offset)

    def wait(self, c: Client, numreplicas: int, deadline_ms: int) -> Any:
        offset = c.write_offset()
        acked = self.count_acks(offset)
        if acked >= numreplicas or c.multi is not None or c.in_exec:
            return R.integer(acked)
        res = blocking.block(c, [], deadline_ms, lambda cl, key: None,
                             lambda cl: R.integer(self.count_acks(offset)))
        self.waiting.append((c, c.block_state, offset, numreplicas))
        self.request_acks()
        return res

    def count_aof_acks(self, offset: int) -> int:
        """replicationCountAOFAcksByOffset: the replicas whose AOF has `offset` on disk."""
        return sum(1 for r in self.repl.replicas if r.state == ONLINE and r.aof_ack_off >= offset)

    def _aof_counts(self, offset: int) -> tuple[int, int]:
        aof = self.srv.aof
        aof.update_fsynced()  # what the fsyncs reached by now (beforeSleep's, taken when read)
        local = aof.fsynced_reploff
        return (1 if local != -1 and local >= offset else 0), self.count_aof_acks(offset)

    def waitaof(self, c: Client, numlocal: int, numreplicas: int, deadline_ms: int) -> Any:
        """WAITAOF (7.2): [local AOF, replicas' AOFs] that have the client's last write on disk,
        once `numlocal` and `numreplicas` are reached or the timeout passed; at once inside MULTI
        and scripts."""
        offset = c.write_offset()
        local, replicas = self._aof_counts(offset)
        if (local >= numlocal and replicas >= numreplicas) or c.multi is not None or c.in_exec or c.is_script:
            return R.array([R.integer(local), R.integer(replicas)])

        def timed_out(cl: Client) -> bytes:
            return R.array([R.integer(n) for n in self._aof_counts(offset)])

        res = blocking.block(c, [], deadline_ms, lambda cl, key: None, timed_out)
        self.waiting_aof.append((c, c.block_state, offset, numlocal, numreplicas))
        self.request_acks()
        return res

    def serve_waiting_aof(self) -> None:
        """processClientsWaitingReplicas's WAITAOF half: wake the clients whose counts are reached."""
        still = []
        for entry in self.waiting_aof:
            c, state, offset, numlocal, numreplicas = entry
            if c.block_state is not state or c.closed:
                continue
            local, replicas = self._aof_counts(offset)
            if local >= numlocal and replicas >= numreplicas:
                blocking.finish(c, R.array([R.integer(local), R.integer(replicas)]))
            else:
                still.append(entry)
        self.waiting_aof = still

    def request_acks(self) -> None:
        """replicationRequestAckFromSlaves: one GETACK for every WAIT of this loop iteration,
        sent once they have all blocked (Redis's beforeSleep)."""
        if self.getack_pending:
            return
        self.getack_pending = True
        self.srv.call_soon(self._send_getack)

    def _send_getack(self) -> None:
        self.getack_pending = False
        repl = self.repl
        if repl.masterhost is None and repl.backlog is not None and not self.srv.paused():
            repl.feed_stream(propagate.encode_command(_GETACK))

    def serve_waiting(self) -> None:
        """processClientsWaitingReplicas."""
        from raxdb.server.net import blocking

        still = []
        for entry in self.waiting:
            c, state, offset, need = entry
            if c.block_state is not state or c.closed:
                continue
            n = self.count_acks(offset)
            if n >= need:
                blocking.finish(c, R.integer(n))
            else:
                still.append(entry)
        self.waiting = still

    # ---- introspection -------------------------------------------------------------------------
    def buffer_bytes(self) -> int:
        """INFO's mem_total_replication_buffers (repl_buffer_mem): the blocks of the buffer the
        backlog and the replicas share."""
        backlog = self.repl.backlog
        return 0 if backlog is None else backlog.mem

    def held_from(self) -> int | None:
        """The oldest stream offset any replica still needs (the backlog keeps it), or None."""
        held = [x for r in self.repl.replicas if (x := r.needs_from()) is not None]
        return min(held) if held else None

    def output_share(self, r: interfaces.Replica) -> int:
        """A replica's output buffer as Redis counts it: its share of the replication buffer."""
        backlog = self.repl.backlog
        start = r.needs_from()
        return 0 if backlog is None or start is None else backlog.share(start)

    def check_limits(self) -> None:
        """closeClientOnOutputBufferLimitReached for every replica taking the stream."""
        for r in list(self.repl.replicas):
            if not r.rdb_only and r.state != WAIT_BGSAVE_START:
                obuf.check(r.client)

    def info_lines(self) -> list[str]:
        values = self.srv.config.values
        lines = [f"connected_slaves:{len(self.repl.replicas)}"]
        if int(values["min-replicas-to-write"]) and int(values["min-replicas-max-lag"]):
            lines.append(f"min_slaves_good_slaves:{self.good_replicas}")
        now = int(clock.seconds(self.srv))
        i = 0
        for r in self.repl.replicas:
            state = STATE_NAMES.get(r.state, "")
            if not state:
                continue
            lag = now - r.ack_time if r.state == ONLINE else 0
            lines.append(f"slave{i}:ip={r.ip()},port={r.port},state={state},offset={r.ack_off},lag={lag}")
            i += 1
        return lines

    def role_replicas(self) -> list[bytes]:
        return [R.array([R.bulk(r.ip().encode()), R.bulk(b"%d" % r.port), R.bulk(b"%d" % r.ack_off)])
                for r in self.repl.replicas if r.state == ONLINE]
