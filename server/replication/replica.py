"""The replica side of replication: REPLICAOF, the link to the master, and applying its stream.

A raxdb with `masterhost` set (REPLICAOF host port, or `replicaof` in the config) keeps one
`Link` (`srv.repl.link`) that does what replication.c does for a replica:

- the handshake, as one coroutine on the event loop, through Redis's states (`state`: connect,
  connecting, handshake, sync, connected): PING, AUTH (masterauth / masteruser), REPLCONF
  listening-port and ip-address, REPLCONF capa eof capa psync2, then PSYNC with the cached
  master (`cached`: the replid and offset of the history this dataset continues, kept when a
  link drops and when a master becomes a replica) or `PSYNC ? -1`; a master failing over to its
  replica adds FAILOVER, and the reply ends or aborts the failover (server/replication/failover.py);
- the payload of a full resync, in both forms (`$<len>` and `$EOF:<mark>`): written to a
  temp-<time>.<pid>.rdb, renamed over the dump file and loaded after the old dataset is flushed
  and the sub-replicas dropped; or, with repl-diskless-load swapdb (or on-empty-db and no keys),
  parsed as it arrives (`_Incoming`, rdb.Arriving), so that a slow load reads the socket slowly
  and its master sees a slow replica, as with Redis, and the payload is never held whole
  (swapdb: it loads into temporary databases beside the old dataset, which stays if the
  payload fails to load); with an EOF mark, the mark must follow the RDB.  While it loads,
  clients are served between slices of the load and while it waits for bytes
  (server/persistence/loading.py): answered -LOADING, or, for a swapdb load continuing this replica's
  history, served from the old dataset (async_loading) until the swap; a newline goes to the
  master once a second meanwhile (its sign that we live);
- the stream, applied by `MasterClient`: each command runs through `Client.execute` (so it
  propagates to this server's AOF as any command does), its reply discarded, and only once a
  command is whole (a MULTI at its EXEC) are its bytes counted in `reploff` and handed to
  `srv.repl.feed_stream`, so this server's backlog and sub-replicas carry the master's stream
  verbatim and this server's offset is the master's;
- `cron` (once a second, replicationCron): handshake, transfer and link timeouts
  (repl-timeout), reconnecting, and REPLCONF ACK <reploff>;
- what a replica refuses (`Link.denies`: READONLY, MASTERDOWN; on a writable replica it deletes
  the expired keys a write names first, as a write lookup does there), INFO replication's slave lines
  and ROLE's slave form; the dump file's repl-* aux fields, so a restarted replica continues by
  PSYNC (`Replication.rdb_save_info`, `after_load`).

The master client obeys its master: no ACL rule (its user is "(superuser)", as Redis shows it),
no READONLY, MASTERDOWN or disk-error refusal, no idle timeout; a CLIENT PAUSE holds it as any
client, the stream behind the held command read but not applied (`MasterClient._run`).

Invariants.  The master's stream is canonical RESP (Redis writes every replicated command as a
multibulk of bulk strings), so a command's bytes are its re-encoding and its length is its share
of the offset.  While the master client runs a command, no key is expired (the databases are in
their `loading` mode): a replica's dataset changes only by what its master sends, and Redis's
expireIfNeeded treats keys as alive for the master client.  Between commands, every other client
sees a key past its deadline as missing without deleting it (`Database.expire_paused`, held
while `masterhost` is set), and active expiry is off: the master's DEL removes it.  A writable
replica's own writes are the exception, as in Redis: a write deletes the expired keys it names,
and keys its clients gave a deadline expire by themselves (server/replication/state.py).

Why a coroutine and a stream reader rather than a protocol state machine: the handshake is a
strict request/reply sequence that happens once per link; written sequentially it reads as
Redis's syncWithMaster does, and the cron cancels it on a timeout.  The stream phase is a read
loop handing each chunk to the master client, one await per read.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import time
from typing import TYPE_CHECKING, Any

from raxdb.protocol import reply as R
from raxdb.protocol.hiredis_limits import READER_ERRORS
from raxdb.protocol.request import quote_arg
from raxdb.server.base import clock
from raxdb.server.base.errors import MASTERDOWN, READONLY, CommandError
from raxdb.server.base.loading import ASYNC, SYNC
from raxdb.server.base.log import LOG, logged_error
from raxdb.server.base.multiqueue import queued
from raxdb.server.events import propagate, tracking, watch
from raxdb.server.net import blocking, tls
from raxdb.server.net.client import Client, format_addr, queue_output
from raxdb.server.persistence import loading
from raxdb.server.persistence.aof import OFF as AOF_OFF
from raxdb.server.persistence.emptydata import empty_data
from raxdb.server.persistence.snapshot import LoadError
from raxdb.server.replication.failover import IN_PROGRESS
from raxdb.server.replication.state import NO_REPLID, disconnect_replicas, update_gate
from raxdb.server.scripting.functions import registry
from raxdb.server.security.acl import User
from raxdb.server.table.getkeys import key_positions
from raxdb.server.table.scriptflags import FLAG_ALLOW_STALE, script_flags
from raxdb.storage import rdb

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server

CONNECT, CONNECTING, HANDSHAKE, TRANSFER, CONNECTED = "connect", "connecting", "handshake", "sync", "connected"

EOF_MARK_SIZE = 40  # RDB_EOF_MARK_SIZE (CONFIG_RUN_ID_SIZE)
SYNTHESIZED = ("Before turning into a replica, using my own master parameters to synthesize a cached master: "
               "I may be able to synchronize with the new master with just a partial transfer.")


def _superuser() -> User:
    """The master client's user: Redis gives it none ("(superuser)" in CLIENT LIST), so no ACL
    rule applies to what its master sends."""
    u = User(b"(superuser)")
    u.apply(b"on")
    u.apply(b"nopass")
    u.apply(b"allcommands")
    u.apply(b"allkeys")
    u.apply(b"allchannels")
    return u


SUPERUSER = _superuser()


async def _connect(host: str, port: int, source: str,
                   context: ssl.SSLContext | None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The link's connection, from bind-source-addr if one is set: best effort, as Redis's
    anetTcpNonBlockBestEffortBindConnect, which connects unbound when the address cannot be bound.
    With a `context` (tls-replication yes) it is a TLS connection, its handshake done before it returns."""
    if source:
        try:
            return await asyncio.open_connection(host, port, limit=1 << 20, local_addr=(source, 0), ssl=context)
        except ssl.SSLError:
            raise
        except OSError:
            pass
    return await asyncio.open_connection(host, port, limit=1 << 20, ssl=context)


class SyncError(Exception):
    """The handshake or the transfer failed; the message was logged, the link starts again."""


class MasterClient(Client):
    """The client that applies the master's stream (Redis's server.master, CLIENT_MASTER).

    It has no replies (the master reads none) except REPLCONF ACK, sent by `send`.  `reploff` is
    the offset of the last whole command applied, `read_reploff` of the last byte read."""

    __slots__ = ("link", "reploff", "read_reploff", "replid", "pending", "protocol_error", "held", "closed_at")
    is_master = True
    must_obey = True

    def __init__(self, srv: Server, link: Link, replid: str, reploff: int) -> None:
        super().__init__(srv)
        self.link = link
        self.replid = replid
        self.reploff = self.read_reploff = reploff
        self.pending: list[bytes] = []  # a transaction's commands until its EXEC
        self.held: list[bytes] | None = None  # a command CLIENT PAUSE holds, the stream behind it
        self.protocol_error = False
        self.authenticated = True
        self.user = SUPERUSER
        self.plain = False
        self.closed_at = 0.0  # when it was closed: the link is down since then (repl_down_since)

    def close(self) -> None:
        # a CLIENT KILL frees Redis's master client at once; the stream task sees the end later
        # (after a DEBUG SLEEP of the same EXEC, say): the link is down from now on
        if not self.closed:
            self.closed_at = clock.seconds(self.server)
        super().close()

    def attach(self, transport: asyncio.Transport, dbid: int) -> None:
        self.transport = transport
        self.addr = format_addr(transport.get_extra_info("peername"))
        self.laddr = format_addr(transport.get_extra_info("sockname"))
        sock = transport.get_extra_info("socket")
        self.fd = sock.fileno() if sock is not None else -1
        if dbid >= 0:
            self.select(dbid)
        self.server.clients[self.id] = self
        self.server.clients_cron.rotation.append(self)

    def write(self, data: bytes) -> None:
        """Replies to the master are dropped (prepareClientToWrite refuses a master client)."""

    def send(self, data: bytes) -> None:
        if not self.closed and self.transport is not None:
            queue_output(self, data)

    def send_ack(self) -> None:
        ack = [b"REPLCONF", b"ACK", b"%d" % self.reploff]
        srv = self.server
        # 7.2 (compat-version): and the offset its AOF has on disk, for the master's WAITAOF
        if srv.config.compat_version >= (7, 2) and srv.aof.fsynced_reploff != -1:
            srv.aof.update_fsynced()
            ack += [b"FACK", b"%d" % srv.aof.fsynced_reploff]
        self.send(propagate.encode_command(ack))

    def update_plain(self) -> None:
        self.plain = False

    def idle_timeout_applies(self) -> bool:
        return False  # clientsCronHandleTimeout spares the master (repl-timeout watches it)

    def apply(self, data: bytes) -> None:
        """Run every whole command in `data` (and what was left of the last read)."""
        srv = self.server
        srv.update_clock()
        self.last_interaction = srv.now_ms
        self.link.lastio = clock.seconds(self.server)
        srv.stat_net_repl_input_bytes += len(data)  # counted apart from clients' input, as in Redis
        self.read_reploff += len(data)
        self.reader.feed(data)
        if self.held is None:
            self._run()

    def _run(self) -> None:
        """Apply the whole commands read, in order, until one must wait for a CLIENT PAUSE to
        end: it is held (with the rest of the stream behind it, read but not applied, so
        slave_read_repl_offset grows and slave_repl_offset does not) and runs on unpause, as
        Redis postpones its master client like any other."""
        srv = self.server
        reader = self.reader
        dbs = srv.dbs
        for db in dbs:
            db.loading = True  # the master's commands see every key alive (module docstring)
        try:
            while not self.closed:
                argv, self.held = self.held, None
                if argv is None:
                    try:
                        argv = reader.gets()
                    except READER_ERRORS as exc:  # (TypeError: a RESP3 map or set with an aggregate key)
                        self._protocol_error(str(exc))
                        return
                    if argv is False:
                        return
                    if not (isinstance(argv, list) and argv and all(type(a) is bytes for a in argv)):
                        self._protocol_error("expected a multibulk of bulk strings")
                        return
                if srv.pause_until_ms:
                    cmd = srv.table.lookup(argv)
                    if cmd is not None and self._paused_for(cmd, argv):
                        self.held = argv
                        if self._resume_held not in srv.unpause_hooks:
                            srv.unpause_hooks.append(self._resume_held)
                        return
                self.pending.append(propagate.encode_command(argv))
                if len(argv) >= 2 and argv[0].lower() == b"replconf" and argv[1].lower() == b"getack":
                    self.send_ack()  # the ACK gives the offset before this command
                else:
                    out: list[bytes] = []
                    self.execute(argv, out)
                    if out and out[0][:1] == b"-":
                        self._error_to_master(out[0])
                if self.multi is None:  # commandProcessed: a transaction counts at its EXEC
                    applied = b"".join(self.pending)
                    self.pending.clear()
                    self.reploff += len(applied)
                    srv.repl.feed_stream(applied)
        finally:
            for db in dbs:
                db.loading = False

    def _resume_held(self) -> None:
        srv = self.server
        if self._resume_held in srv.unpause_hooks:
            srv.unpause_hooks.remove(self._resume_held)
        if self.held is not None and not self.closed:
            srv.update_clock()
            self._run()

    def _error_to_master(self, reply: bytes) -> None:
        """afterErrorReply for the master client: the master never reads the error, but a
        replica whose data diverged says so (propagation-error-behavior ignore, the only
        behaviour built) with the command and the stream's latest bytes."""
        srv = self.server
        srv.stat_unexpected_error_replies += 1
        name = self.last_cmd.fullname if self.last_cmd is not None else "<unknown>"
        LOG.warning(f"== CRITICAL == This replica is sending an error to its master: '{logged_error(reply)}' "
                    f"after processing the command '{name}'")
        backlog = srv.repl.backlog
        if backlog is not None and backlog.histlen:
            LOG.warning(f"Latest backlog is: '{quote_arg(bytes(backlog.buf[-256:]))}'")

    def _protocol_error(self, why: str) -> None:
        LOG.verbose(f"Protocol error ({why}) from client: id={self.id} addr={self.addr}")
        self.protocol_error = True
        self.close()


class Link:
    """The replica's state: the master's address, the handshake, the master client."""

    def __init__(self, srv: Server, host: str, port: int) -> None:
        self.srv = srv
        self.host = host
        self.port = port
        self.state = CONNECT
        self.task: asyncio.Task[None] | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.master: MasterClient | None = None
        # The history to PSYNC with (Redis's cached master): replid, reploff, read_reploff and
        # the database the master's stream last selected; or None.
        self.cached: tuple[str, int, int, int] | None = None
        self.lastio = clock.seconds(self.srv)  # repl_transfer_lastio, and the master's last interaction
        self.down_since = 0.0
        self.transfer_size = -1
        self.transfer_read = 0
        self.transfer_done = False  # the whole payload came (its size read, or its EOF mark seen)
        self.tail = b""  # the payload's last EOF_MARK_SIZE bytes so far
        self.tmpfile: str | None = None
        self.full = (NO_REPLID, -1)  # a full resync's replid and offset (+FULLRESYNC)
        self.newline_sent = 0  # the second of the last newline sent while loading

    # ---- starting and stopping ------------------------------------------------------------------
    def connect(self) -> None:
        """connectWithMaster: the handshake runs as a task from here."""
        loop = self.srv.loop
        if loop is None:
            return
        self.lastio = clock.seconds(self.srv)
        self.state = CONNECTING
        LOG.notice("MASTER <-> REPLICA sync started")
        self.task = loop.create_task(self._run())

    def cancel_handshake(self, reconnect: bool = False) -> bool:
        """cancelReplicationHandshake: drop a connection that is not yet a master link; with
        `reconnect`, start again at once."""
        if self.state not in (CONNECTING, HANDSHAKE, TRANSFER):
            return False
        self._drop_connection()
        self.state = CONNECT
        if reconnect:
            LOG.notice(f"Reconnecting to MASTER {self.host}:{self.port} after failure")
            self.connect()
        return True

    def _drop_connection(self) -> None:
        task, self.task = self.task, None
        if task is not None and task is not _current_task():
            task.cancel()
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        self._remove_tmpfile()

    def discard_cached(self) -> None:
        """replicationDiscardCachedMaster."""
        if self.cached is not None:
            LOG.notice("Discarding previously cached master state.")
            self.cached = None

    def _remove_tmpfile(self) -> None:
        if self.tmpfile is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.tmpfile)
            self.tmpfile = None

    def stop(self) -> None:
        """The link goes away (REPLICAOF NO ONE, another master, shutdown): no reconnection.
        A live master's history is cached, for the next master to continue (PSYNC2)."""
        self.cancel_handshake()
        master = self.master
        if master is not None:
            self.master = None
            self._free_master(master)
            self._cache(master)
        self._drop_connection()

    def shutdown(self) -> None:
        """The server exits: end the task quietly (the master client closes with the others)."""
        self.master = None
        self._drop_connection()

    def _cache(self, master: MasterClient) -> None:
        """freeClient(server.master): replicationCacheMaster, unless the master broke the
        protocol (its stream cannot be trusted to continue)."""
        LOG.warning("Connection with master lost.")
        if not master.protocol_error:
            LOG.notice("Caching the disconnected master state.")
            self.cached = (master.replid, master.reploff, master.reploff, master.dbid)
        self.state = CONNECT
        self.down_since = master.closed_at or clock.seconds(self.srv)

    def _free_master(self, master: MasterClient) -> None:
        master.close()
        # its transport belongs to the link's stream, whose protocol is not the client: the
        # client's own end (unregistered, its bytes kept in the totals) is called here
        master.connection_lost(None)

    def master_lost(self, master: MasterClient) -> None:
        """freeClient(server.master) → replicationCacheMaster and
        replicationHandleMasterDisconnection: keep its history for a PSYNC, reconnect at once."""
        if self.master is not master:
            return
        self.master = None
        self._free_master(master)
        self.writer = None
        self._cache(master)
        if self.srv.repl.link is self:
            LOG.notice(f"Reconnecting to MASTER {self.host}:{self.port}")
            self.connect()

    # ---- the handshake ----------------------------------------------------------------------------
    async def _run(self) -> None:
        try:
            reader = await self._handshake()
            await self._stream(reader)
        except SyncError:
            self._fail()
        except loading.Aborted:
            pass  # the server is shutting down (it ends the link)
        except (ConnectionError, OSError, ValueError) as exc:  # ValueError: a reply line over the limit
            LOG.warning(f"I/O error trying to sync with MASTER: {exc}")
            self._fail()
        except asyncio.CancelledError:
            pass

    def _fail(self) -> None:
        self._drop_connection()  # from the link's own task, which it therefore does not cancel
        if self.state != CONNECTED:
            self.state = CONNECT  # replicationCron connects again within a second

    async def _handshake(self) -> asyncio.StreamReader:
        cfg = self.srv.config.values
        try:
            reader, writer = await _connect(self.host, self.port, cfg["bind-source-addr"],
                                            self.srv.tls_client_context if cfg["tls-replication"] == "yes" else None)
        except (OSError, UnicodeError) as exc:
            why = tls.describe(exc) if isinstance(exc, ssl.SSLError) else getattr(exc, "strerror", None) or exc
            LOG.warning(f"Error condition on socket for SYNC: {why}")
            raise SyncError from None
        self.writer = writer
        self.lastio = clock.seconds(self.srv)
        LOG.notice("Non blocking connect for SYNC fired the event.")
        self.state = HANDSHAKE
        writer.write(propagate.encode_command([b"PING"]))
        reply = await self._reply(reader)
        if not (reply.startswith("+") or reply.startswith("-NOAUTH") or reply.startswith("-NOPERM")
                or reply.startswith("-ERR operation not permitted")):
            LOG.warning(f"Error reply to PING from master: '{reply}'")
            raise SyncError
        LOG.notice("Master replied to PING, replication can continue...")
        out = []
        auth = cfg["masterauth"]
        if auth:
            user = cfg["masteruser"]
            out.append([b"AUTH", *([user.encode()] if user else []), auth.encode()])
        # the port to announce: with TLS replication, the TLS one (syncWithMaster's choice)
        port = int(cfg["replica-announce-port"]) or (
            int(cfg["tls-port"]) if cfg["tls-replication"] == "yes" and cfg["tls-port"] != "0" else self.srv.config.port)
        out.append([b"REPLCONF", b"listening-port", b"%d" % port])
        ip = cfg["replica-announce-ip"]
        if ip:
            out.append([b"REPLCONF", b"ip-address", ip.encode()])
        out.append([b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"])
        writer.write(b"".join(propagate.encode_command(a) for a in out))
        if auth:
            reply = await self._reply(reader)
            if reply.startswith("-"):
                LOG.warning(f"Unable to AUTH to MASTER: {reply}")
                raise SyncError
        reply = await self._reply(reader)
        if reply.startswith("-"):
            LOG.notice(f"(Non critical) Master does not understand REPLCONF listening-port: {reply}")
        if ip:
            reply = await self._reply(reader)
            if reply.startswith("-"):
                LOG.notice(f"(Non critical) Master does not understand REPLCONF ip-address: {reply}")
        reply = await self._reply(reader)
        if reply.startswith("-"):
            LOG.notice(f"(Non critical) Master does not understand REPLCONF capa: {reply}")
        if not await self._psync(reader, writer):
            await self._transfer(reader)
        return reader

    async def _reply(self, reader: asyncio.StreamReader, keepalive: bool = False) -> str:
        """receiveSynchronousResponse: one reply line; with `keepalive`, "" for the newlines a
        master sends while it prepares."""
        while True:
            try:
                line = await reader.readline()
            except ssl.SSLError as exc:  # the master refused our certificate (after the TLS 1.3 handshake)
                LOG.warning(f"Failed to read response from the server: {tls.describe(exc)}")
                line = b""
            if not line:
                LOG.warning("Master did not respond to command during SYNC handshake")
                raise SyncError
            self.lastio = clock.seconds(self.srv)
            text = line.rstrip(b"\r\n").decode(errors="replace")
            if text or keepalive:
                return text

    async def _psync(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """slaveTryPartialResynchronization: True when the master continues our history."""
        repl = self.srv.repl
        cached = self.cached
        if cached is not None:
            replid, offset = cached[0], str(cached[1] + 1)
            LOG.notice(f"Trying a partial resynchronization (request {replid}:{offset}).")
        else:
            LOG.notice("Partial resynchronization not possible (no cached master)")
            replid, offset = "?", "-1"
        psync = [b"PSYNC", replid.encode(), offset.encode()]
        failover = repl.failover
        if failover.state == IN_PROGRESS:  # the target promotes itself on this PSYNC (server/replication/failover.py)
            psync.append(b"FAILOVER")
        writer.write(propagate.encode_command(psync))
        reply = ""
        while not reply:
            reply = await self._reply(reader, keepalive=True)
        accepted = reply.startswith("+FULLRESYNC") or (reply.startswith("+CONTINUE") and cached is not None)
        if not failover.psync_replied(accepted):
            raise SyncError  # the failover is aborted: we are a master again, this link is gone
        if reply.startswith("+FULLRESYNC"):
            parts = reply.split(" ")
            if len(parts) < 3 or len(parts[1]) != 40:
                LOG.warning("Master replied with wrong +FULLRESYNC syntax.")
                self.full = (NO_REPLID, -1)
            else:
                self.full = (parts[1], int(parts[2]))
                LOG.notice(f"Full resync from master: {parts[1]}:{parts[2]}")
            return False
        if reply.startswith("+CONTINUE") and cached is not None:
            LOG.notice("Successful partial resynchronization with master.")
            new = reply[10:].strip()
            replid = cached[0]
            if len(new) == 40 and new != replid:
                LOG.warning(f"Master replication ID changed to {new}")
                repl.replid2 = replid
                repl.second_replid_offset = repl.master_repl_offset + 1
                repl.replid = replid = new
                disconnect_replicas(self.srv)
            self._resurrect(writer, replid, cached[1], cached[3])
            if repl.backlog is None:
                repl.create_backlog()
            LOG.notice("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.")
            return True
        if reply.startswith("-NOMASTERLINK") or reply.startswith("-LOADING"):
            LOG.notice(f"Master is currently unable to PSYNC but should be in the future: {reply}")
            raise SyncError
        if reply.startswith("-ERR"):
            LOG.notice(f"Master does not support PSYNC or is in error state (reply: {reply})")
        else:
            LOG.warning(f"Unexpected reply to PSYNC from master: {reply}")
        LOG.notice("Retrying with SYNC...")
        writer.write(b"SYNC\r\n")
        self.full = (NO_REPLID, -1)
        return False

    def _resurrect(self, writer: asyncio.StreamWriter, replid: str, reploff: int, dbid: int) -> None:
        """replicationCreateMasterClient / replicationResurrectCachedMaster: the link is up."""
        master = MasterClient(self.srv, self, replid, reploff)
        master.attach(writer.transport, dbid)  # type: ignore[arg-type]
        self.master = master
        self.cached = None
        self.state = CONNECTED
        self.down_since = 0.0
        self.lastio = clock.seconds(self.srv)

    # ---- the payload --------------------------------------------------------------------------------
    async def _transfer(self, reader: asyncio.StreamReader) -> None:
        """readSyncBulkPayload: the RDB goes to a temp file, then is loaded (repl-diskless-load
        disabled, or on-empty-db with keys); or is kept in memory and loaded from there."""
        self.state = TRANSFER
        self.transfer_size = -1
        self.transfer_read = 0
        self.lastio = clock.seconds(self.srv)
        header = ""
        while not header:
            header = await self._reply(reader, keepalive=True)
            # readSyncBulkPayload counts the lines it reads (the keepalive newlines too), each
            # without its '\r'
            self.srv.stat_net_repl_input_bytes += len(header) + 1
        if header.startswith("-"):
            LOG.warning(f"MASTER aborted replication with an error: {header[1:]}")
            raise SyncError
        if not header.startswith("$"):
            LOG.warning("Bad protocol from MASTER, the first byte is not '$' (we received "
                        f"'{header}'), are you sure the host and port are right?")
            raise SyncError
        mark = b""
        diskless = self._diskless_load()
        to = "to parser" if diskless else "to disk"
        if header.startswith("$EOF:") and len(header) - 5 >= EOF_MARK_SIZE:
            mark = header[5:5 + EOF_MARK_SIZE].encode()
            self.transfer_size = 0
            LOG.notice(f"MASTER <-> REPLICA sync: receiving streamed RDB from master with EOF {to}")
        else:
            try:
                self.transfer_size = int(header[1:])
            except ValueError:
                self.transfer_size = 0
            LOG.notice(f"MASTER <-> REPLICA sync: receiving {self.transfer_size} bytes from master {to}")
        self.transfer_done = False
        self.tail = b""
        if diskless:
            # parsed as it comes (rdb.Arriving), as Redis does: its loading state (and, for
            # swapdb, the old dataset served aside) covers the transfer
            plan = self._prepare_load(True)
            with self.srv.persistence.loading(max(0, self.transfer_size), plan.temp, plan.state):
                try:
                    await self._load(plan, _Incoming(self, reader, mark))
                except SyncError:
                    self._load_failed(plan)
                    raise
        else:
            tmp = f"temp-{int(time.time())}.{os.getpid()}.rdb"
            self.tmpfile = tmp
            with open(tmp, "wb") as f:
                await self.receive_payload(reader, mark, f.write)
                if mark:
                    f.truncate(self.transfer_read - EOF_MARK_SIZE)
                f.flush()
                os.fsync(f.fileno())
            await self._load(self._prepare_load(False), tmp)
        if mark and self.master is not None:
            self.master.send_ack()

    def _diskless_load(self) -> bool:
        """useDisklessLoad: repl-diskless-load swapdb, or on-empty-db with no keys."""
        mode = self.srv.config.values["repl-diskless-load"]
        return mode == "swapdb" or (mode == "on-empty-db" and not any(len(db) for db in self.srv.dbs))

    async def receive_payload(self, reader: asyncio.StreamReader, mark: bytes, sink: Any, diskless: bool = False,
                              want: int | None = None) -> None:
        """The payload's bytes to `sink` (the EOF mark's included: the caller cuts it), to its
        end (`transfer_done`) or, with `want`, until at least that many more came.
        `diskless`: a diskless load, in the loading state, when the cron (which watches
        repl-timeout) waits: each read does (connRecvTimeout), and a payload cut short is
        logged as Redis's parser reports it."""
        timeout = int(self.srv.config.values["repl-timeout"]) if diskless else None
        got = 0
        while not self.transfer_done and (want is None or got < want):
            n = 1 << 16 if mark else min(1 << 16, self.transfer_size - self.transfer_read)
            if n <= 0:
                self.transfer_done = True
                return
            try:
                chunk = await asyncio.wait_for(reader.read(n), timeout)
            except TimeoutError:
                LOG.warning("Timeout receiving bulk data from MASTER... If the problem persists try to set the "
                            "'repl-timeout' parameter in redis.conf to a larger value.")
                raise SyncError from None
            if not chunk:
                if diskless:  # Redis's parser finds the payload cut short
                    LOG.warning(f"Internal error in RDB reading offset {self.transfer_read}, function at "
                                "rdb.c:3240 -> Unexpected EOF reading RDB file. Failure loading rdb format from "
                                "socket, assuming connection error, resuming operation.")
                    LOG.warning("Failed trying to load the MASTER synchronization DB from socket: connection lost")
                else:
                    LOG.warning("I/O error trying to sync with MASTER: connection lost")
                raise SyncError
            self.lastio = clock.seconds(self.srv)
            self.srv.stat_net_repl_input_bytes += len(chunk)
            sink(chunk)
            got += len(chunk)
            self.transfer_read += len(chunk)
            if diskless:
                # whileBlockedCron, as loading.drive does: the cron waits while loading, so a
                # signal's shutdown starts here (Redis parses the payload as it reads it)
                self.srv.shutdown.cron()
                if self.srv.shutting_down:
                    raise loading.Aborted
            if mark:
                self.tail = (self.tail + chunk)[-EOF_MARK_SIZE:]
                self.transfer_done = self.tail == mark
            else:
                self.transfer_done = self.transfer_read >= self.transfer_size

    def _prepare_load(self, diskless: bool) -> _LoadPlan:
        """readSyncBulkPayload's steps before the load: the AOF stopped, a saving child killed,
        and either the old dataset flushed, or (swapdb) temporary databases to load into beside
        it, served meanwhile (async_loading) when the payload continues this replica's history."""
        srv = self.srv
        p = srv.persistence
        plan = _LoadPlan(srv.aof.state != AOF_OFF)
        if plan.aof_on:
            srv.aof.stop()  # stopAppendOnly: the AOF is rewritten from the new dataset below
        if p.has_child() and p.child_type == "rdb":
            if not diskless:
                LOG.notice("Replica is about to load the RDB file received from the master, but there is a "
                           f"pending RDB child running. Killing process {p.child_pid} and removing its temp "
                           "file to avoid any race")
            p.kill_child()
        if diskless and srv.config.values["repl-diskless-load"] == "swapdb":
            plan.temp = [_temp_db(db) for db in srv.dbs]
            plan.functions = []
            if srv.repl.replid == self.full[0]:
                plan.state = ASYNC
        else:
            self.attach_to_new_master()
            LOG.notice("MASTER <-> REPLICA sync: Flushing old data")
            empty_data(srv, srv.config.values["replica-lazy-flush"] == "yes", with_functions=True)
        LOG.notice("MASTER <-> REPLICA sync: Loading DB in memory")
        return plan

    def _load_failed(self, plan: _LoadPlan) -> None:
        """A swapdb load's temporary data goes, the old dataset stays; a diskless load's
        half-loaded data goes (a disk load's stays, as in Redis)."""
        from raxdb.server.persistence.emptydata import empty_data

        if plan.temp is not None:
            LOG.notice("MASTER <-> REPLICA sync: Discarding temporary DB in background")
        else:
            empty_data(self.srv, False, with_functions=True)

    async def _load(self, plan: _LoadPlan, source: _Incoming | str) -> None:
        """The received RDB becomes this server's dataset (and, loaded from disk, its dump
        file); the link is up.  `source`: diskless, the payload arriving; else the temp file's
        name.  Clients are served while it loads (server/persistence/loading.py)."""
        from raxdb.server.persistence.snapshot import LoadError

        srv = self.srv
        repl = srv.repl
        p = srv.persistence
        aux: dict[bytes, bytes] = {}
        incoming = source if isinstance(source, _Incoming) else None
        try:
            if incoming is None:
                assert isinstance(source, str)
                dest = p.path()
                os.replace(source, dest)
                self.tmpfile = None
                with open(dest, "rb") as f:
                    data = f.read()
                total = len(data)  # rdbLoad: the file's size
            else:
                data, total = b"", self.transfer_size
            await loading.drive(srv, p.load_steps(data, merge=False, aux=aux, total=max(0, total),
                                                  dbs=plan.temp, state=plan.state, functions=plan.functions,
                                                  arriving=incoming and incoming.arriving),
                                self._newline_to_master, None if incoming is None else incoming.fill)
            if incoming is not None:
                await incoming.finish()
            if plan.functions is not None:
                _swap_functions(srv, plan.functions)
        except (OSError, LoadError) as exc:  # a diskless load's data goes in _transfer
            where = "socket" if incoming is not None else "disk"
            LOG.warning(f"Failed trying to load the MASTER synchronization DB from {where}: {exc}")
            raise SyncError from None
        if plan.temp is not None:
            self.attach_to_new_master()
            LOG.notice("MASTER <-> REPLICA sync: Swapping active DB with loaded DB")
            for db, temp in zip(srv.dbs, plan.temp, strict=True):
                db.swap_contents(temp)  # `temp` now holds the old data, discarded with it
                if db.watched:  # swapMainDbWithTempDb's touchAllWatchedKeysInDb
                    watch.touch_swapped(db, temp, srv.now_ms)
            tracking.flushed(srv)
            LOG.notice("MASTER <-> REPLICA sync: Discarding old DB in background")
        srv.dirty += 1
        try:
            dbid = int(aux.get(b"repl-stream-db", b"-1"))
        except ValueError:
            dbid = -1
        replid, offset = self.full
        self._resurrect(self.writer, replid, offset, dbid)  # type: ignore[arg-type]
        repl.replid = replid
        repl.master_repl_offset = offset
        repl.clear_replid2()
        repl.create_backlog()
        LOG.notice("MASTER <-> REPLICA sync: Finished with success")
        if plan.aof_on:
            srv.aof.start_append_only()  # restartAOFAfterSYNC

    def _newline_to_master(self) -> None:
        """replicationSendNewlineToMaster, while the payload loads: at most one newline a second
        (best effort), which a master takes as the replica's sign of life (its ACK time)."""
        now = int(clock.seconds(self.srv))
        if now != self.newline_sent and self.writer is not None:
            self.newline_sent = now
            self.writer.write(b"\n")

    def attach_to_new_master(self) -> None:
        """replicationAttachToNewMaster: our history ends here; sub-replicas must resync."""
        self.discard_cached()
        disconnect_replicas(self.srv)
        self.srv.repl.free_backlog()

    # ---- the stream ---------------------------------------------------------------------------------
    async def _stream(self, reader: asyncio.StreamReader) -> None:
        master = self.master
        if master is None:
            return
        leftover = bytes(reader._buffer)  # type: ignore[attr-defined]
        reader._buffer.clear()  # type: ignore[attr-defined]
        if leftover:
            master.apply(leftover)
        while not master.closed:
            try:
                data = await reader.read(1 << 16)
            except (ConnectionError, OSError):
                data = b""
            if not data:
                break
            master.apply(data)
        self.master_lost(master)

    # ---- the cron -------------------------------------------------------------------------------------
    def cron(self) -> None:
        """replicationCron's replica part, once a second."""
        now = clock.seconds(self.srv)
        timeout = int(self.srv.config.values["repl-timeout"])
        if self.state in (CONNECTING, HANDSHAKE) and now - self.lastio > timeout:
            LOG.warning("Timeout connecting to the MASTER...")
            self.cancel_handshake(reconnect=True)
        if self.state == TRANSFER and now - self.lastio > timeout:
            LOG.warning("Timeout receiving bulk data from MASTER... If the problem persists try to set the "
                        "'repl-timeout' parameter in redis.conf to a larger value.")
            self.cancel_handshake(reconnect=True)
        master = self.master
        if self.state == CONNECTED and master is not None and now - self.lastio > timeout:
            LOG.warning("MASTER timeout: no data nor PING received...")
            master.close()  # the stream task sees the end and calls master_lost
            return
        if self.state == CONNECT:
            LOG.notice(f"Connecting to MASTER {self.host}:{self.port}")
            self.connect()
        if master is not None and not master.closed:
            master.send_ack()

    # ---- introspection --------------------------------------------------------------------------------
    def offsets(self) -> tuple[int, int]:
        """(slave_repl_offset, slave_read_repl_offset)."""
        if self.master is not None:
            return self.master.reploff, self.master.read_reploff
        if self.cached is not None:
            return self.cached[1], self.cached[2]
        return 1, 1

    def info_lines(self) -> list[str]:
        cfg = self.srv.config.values
        now = clock.seconds(self.srv)
        reploff, readoff = self.offsets()
        lines = [
            f"master_host:{self.host}",
            f"master_port:{self.port}",
            f"master_link_status:{'up' if self.state == CONNECTED else 'down'}",
            f"master_last_io_seconds_ago:{int(now - self.lastio) if self.master is not None else -1}",
            f"master_sync_in_progress:{1 if self.state == TRANSFER else 0}",
            f"slave_read_repl_offset:{readoff}",
            f"slave_repl_offset:{reploff}",
        ]
        if self.state == TRANSFER:
            size, read = self.transfer_size, self.transfer_read
            perc = read / size * 100 if size else 0.0
            lines += [f"master_sync_total_bytes:{size}", f"master_sync_read_bytes:{read}",
                      f"master_sync_left_bytes:{size - read}", f"master_sync_perc:{perc:.2f}",
                      f"master_sync_last_io_seconds_ago:{int(now - self.lastio)}"]
        if self.state != CONNECTED:
            down = int(now - self.down_since) if self.down_since else -1
            lines.append(f"master_link_down_since_seconds:{down}")
        lines += [
            f"slave_priority:{cfg['replica-priority']}",
            f"slave_read_only:{1 if cfg['replica-read-only'] == 'yes' else 0}",
            f"replica_announced:{1 if cfg['replica-announced'] == 'yes' else 0}",
        ]
        return lines

    def role_reply(self, c: Any) -> bytes:
        return R.array([R.bulk(b"slave"), R.bulk(self.host.encode()), R.integer(self.port),
                        R.bulk(self.state.encode()),
                        R.integer(self.master.reploff if self.master is not None else -1)])

    def serving_stale(self) -> bool:
        """Redis's running_stale: the link is down and replica-serve-stale-data is no (only
        commands flagged stale run, MASTERDOWN for the rest)."""
        return self.state != CONNECTED and self.srv.config.values["replica-serve-stale-data"] == "no"

    def denies(self, c: Client, cmd: Any, argv: list[bytes]) -> bytes | None:
        """processCommand's replica checks for a client other than the master: READONLY for a
        write on a read-only replica, MASTERDOWN for a command not flagged stale while the link
        is down and replica-serve-stale-data is no."""
        cfg = self.srv.config.values
        read_only = cfg["replica-read-only"] == "yes"
        if read_only and c.writes(cmd, argv):
            return READONLY
        if self.serving_stale():
            if cmd.fullname == "exec" and c.multi is not None:
                stale = all(_allows_stale(c, q, qargv) for q, qargv in queued(c.multi))
            else:
                stale = _allows_stale(c, cmd, argv)
            if not stale:
                return MASTERDOWN
        if not read_only:
            if cmd.is_write:
                _expire_written_keys(c, cmd, argv)
            elif cmd.fullname == "exec" and c.multi is not None:
                for q, qargv in queued(c.multi):
                    if q.is_write:
                        _expire_written_keys(c, q, qargv)
        return None


def _allows_stale(c: Client, cmd: Any, argv: list[bytes]) -> bool:
    """CMD_STALE as getCommandFlags has it: a script or function that declares flags may run
    on a stale replica only with allow-stale; one in compatibility mode passes here and is
    refused as it starts (scriptPrepareForRun)."""
    flags = script_flags(c, cmd, argv)
    if flags is not None:
        return bool(flags & FLAG_ALLOW_STALE)
    return "stale" in cmd.flags


def _expire_written_keys(c: Client, cmd: Any, argv: list[bytes]) -> None:
    """A writable replica's write looks its keys up for writing (LOOKUP_WRITE), which deletes
    those past their deadline (EXPIRE_FORCE_DELETE_EXPIRED) where a read only sees them
    missing: the write then makes a new key, without the old deadline.  Done for the keys the
    command names, before it runs."""
    db = c.db
    if not db.expires:
        return
    now = c.server.now_ms
    for pos in key_positions(cmd, argv):
        when = db.expires.get(argv[pos])
        if when is not None and when <= now:
            paused, db.expire_paused = db.expire_paused, False
            try:
                db.expire_if_needed(argv[pos], now)
            finally:
                db.expire_paused = paused


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


# ---- becoming a replica, and a master again --------------------------------------------------------
class _Incoming:
    """A diskless payload as it arrives: the parse (rdb.Arriving) asks for bytes, `fill` reads
    them from the master's socket (Link.receive_payload: its timeouts, counters and logs), `finish`
    checks what follows the RDB."""

    __slots__ = ("link", "reader", "mark", "arriving")

    def __init__(self, link: Link, reader: asyncio.StreamReader, mark: bytes) -> None:
        self.link = link
        self.reader = reader
        self.mark = mark
        self.arriving = rdb.Arriving()

    async def fill(self, want: int) -> None:
        link = self.link
        await link.receive_payload(self.reader, self.mark, self.arriving.add, diskless=True, want=want)
        self.arriving.ended = link.transfer_done

    async def finish(self) -> None:
        """readSyncBulkPayload after rdbLoad: with an EOF mark the next bytes must be the mark
        (it reads that many and compares); a sized payload is read to its size."""
        link, a = self.link, self.arriving
        if not self.mark:
            while not link.transfer_done:
                await self.fill(1 << 16)
            return
        rest = a.rest
        while len(rest) < EOF_MARK_SIZE and not link.transfer_done:
            await self.fill(EOF_MARK_SIZE - len(rest))
            rest += b"".join(a.chunks)
            a.chunks.clear()
        if rest[:EOF_MARK_SIZE] != self.mark:
            LOG.warning("Replication stream EOF marker is broken")
            raise SyncError


class _LoadPlan:
    """How a full sync's payload loads: into the server's databases, or (swapdb) into `temp`
    with the functions collected in `functions`; `state`: loading.SYNC or ASYNC; `aof_on`: the
    AOF was on, and restarts after."""

    def __init__(self, aof_on: bool) -> None:
        self.aof_on = aof_on
        self.temp: list[Any] | None = None
        self.functions: list[bytes] | None = None
        self.state = SYNC


def _swap_functions(srv: Server, codes: list[bytes]) -> None:
    """functionsLibCtxSwapWithCurrent: the payload's libraries replace the served ones; if one
    fails to load, the served ones stay and the load fails (LoadError)."""
    functions = registry(srv)
    old = [lib.code for lib in functions.libraries.values()]
    functions.flush()
    try:
        for code in codes:
            functions.load(code, replace=False)
    except CommandError as exc:
        functions.flush()
        for code in old:
            functions.load(code, replace=True)
        raise LoadError(f"Failed loading library: {exc}") from None


def _temp_db(db: Any) -> Any:
    """disklessLoadInitTempDb's database: empty, of `db`'s kind, reading the same clock and
    counting memory as `db` does, for a swapdb load to fill beside it."""
    temp = type(db)(db.id)
    temp.clock = db.clock
    temp.set_lfu(db.lfu)
    if db.sizes is not None:
        temp.count_sizes(True)
    return temp


def set_master(srv: Server, host: str, port: int) -> None:
    """replicationSetMaster."""
    repl = srv.repl
    was_master = repl.masterhost is None
    old = repl.link
    if old is not None:
        repl.link = None
        old.stop()
    repl.set_master_address(host, port)
    link = repl.link = Link(srv, host, port)
    if was_master:
        # replicationCacheMasterUsingMyself: PSYNC from where our own history stands
        LOG.notice(SYNTHESIZED)
        link.cached = (repl.replid, repl.master_repl_offset, repl.master_repl_offset, 0)
    elif old is not None:  # PSYNC2: the new master may continue what the old one sent
        link.cached, link.down_since = old.cached, old.down_since
    unblock_all(srv)
    srv.config.values["replicaof"] = f"{host} {port}"
    srv._hold_expiry()
    update_gate(srv)
    LOG.notice(f"Connecting to MASTER {host}:{port}")
    link.connect()


def unblock_all(srv: Server) -> None:
    """disconnectAllBlockedClients: what a client waits for on a master will not come from a
    replica's own writes.  Clients held by CLIENT PAUSE stay: their command has not begun."""
    for c in list(srv.clients.values()):
        if isinstance(c.block_state, blocking.BlockState):
            blocking.finish(c, c.error_reply(b"UNBLOCKED force unblock from blocking operation, instance state "
                                             b"changed (master -> replica?)"))
            c.close()


def unset_master(srv: Server) -> None:
    """replicationUnsetMaster: PSYNC2 promotion, our replicas keep their history with us."""
    repl = srv.repl
    link = repl.link
    if repl.masterhost is None:
        return
    repl.set_master_address(None, 0)
    repl.link = None
    if link is not None:
        link.stop()
        link.discard_cached()
    repl.shift_replid()
    LOG.warning(f"Setting secondary replication ID to {repl.replid2}, valid up to offset: "
                f"{repl.second_replid_offset}. New replication ID is {repl.replid}")
    disconnect_replicas(srv)
    repl.seldb = -1
    srv.config.values["replicaof"] = ""
    srv._hold_expiry()
    update_gate(srv)


def start_from_config(srv: Server) -> None:
    """`replicaof host port` in the config: a replica from start-up, connecting from the cron,
    with no history to continue unless the dump file brings one (`after_load`)."""
    value = srv.config.values["replicaof"]
    if value:
        host, port = value.rsplit(" ", 1)
        repl = srv.repl
        repl.set_master_address(host, int(port))
        repl.link = Link(srv, host, int(port))
        srv._hold_expiry()
        update_gate(srv)


def after_load(srv: Server) -> None:
    """loadDataFromDisk's replica part: a dump file saved by a replica names the history it holds
    (repl-id, repl-offset, repl-stream-db), which the master may continue with a PSYNC."""
    link = srv.repl.link
    history = srv.repl.saved_history(srv.persistence.loaded_aux)
    if srv.repl.i_am_master() or history is None:
        return  # a master's own history (replid2): Replication.continue_saved_history
    replid, offset, dbid = history
    srv.repl.replid = replid
    srv.repl.master_repl_offset = offset
    if link is None:
        # a cluster replica whose master the cron names later: set_master synthesizes the
        # cached master from this history (replicationCacheMasterUsingMyself)
        return
    LOG.notice(SYNTHESIZED)
    link.cached = (replid, offset, offset, dbid)
