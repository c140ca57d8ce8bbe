"""A client connection: the asyncio Protocol, the request hot path and command dispatch.

Reading.  A fresh read's whole commands written the common way are taken by the request path's own
walk (protocol/multibulk.py; `_run_fast`), and it stops at the first that is not one, from where
everything below applies to the rest of the read as to a read of its own. Well-formed RESP traffic
is parsed by hiredis (fast path).  hiredis parses *replies*, so it is kept to what it agrees on with
Redis: a read event is handed to hiredis only at a command boundary whose first byte is '*', every
command it yields must be a non-empty list of bytes, and chunks announcing an oversized bulk or
multibulk go to the exact parser.  Anything else — inline commands, malformed frames,
unauthenticated clients, partial commands that grow past `_PARTIAL_LIMIT` or wait for the rest of a
big argument (32 KiB or more, read into a buffer of its own there, server/net/bigread.py) — switches
the connection to `protocol.RequestParser`, which is Redis's parser byte for byte.  To switch
mid-stream we keep the raw bytes since the last command boundary (`_raw`, only while hiredis holds a
partial command) and how many commands of them already ran (`_raw_done`); the exact parser re-reads
them and skips those.  It hands back to hiredis at the next boundary.  A fresh read that ends inside
a command the walk takes as far as it goes keeps that command's bytes as the client's tail instead
(`_tail`, a HeldCommand of at most `_TAIL_MAX` bytes; hiredis holds nothing then): the next read
continues the tail's walk where it stood, over that read's bytes only, and once the command is whole
it runs first and the read is walked from its end; a path that reads on from hiredis gives it the
tail first (`_spill_tail`).  One difference is left, in timing only: a malformed element header
inside a command hiredis still holds as partial (a nested '*' array, '$-1', or a '$' length over
proto-max-bulk-len with more bytes behind it in the same read) is rejected when the command
completes or passes `_PARTIAL_LIMIT`, where Redis rejects it as soon as that header line is
complete.  Finding it sooner would mean walking every partial command's headers in Python on each
read.

Writing.  Replies of every command read in one event are joined into one payload (big pieces apart,
such as a big value's reply in pieces: they are written as they are, `queue_replies`), and payloads
wait in `obuf` until the server flushes every client that has output, once per event-loop iteration,
after all the iteration's reads (`flush_pending`, which the first queued output schedules with the
loop's call_soon; Redis's beforeSleep / handleClientsWithPendingWrites). Writing inside each read
event instead interleaves reads and writes, so the peer is woken, and the kernel's cross-CPU wake-up
paid, once per reply; writing in a burst after the reads cut server CPU per request by about 10% at
-P 1 with 50 clients (SET, GET, ZADD).  So pipelining costs one syscall per batch, and every output
of a client (replies, pub/sub messages, MONITOR lines, served blocked clients) keeps its order.
Output made for a client while it runs a batch (a message it publishes to itself, a client-side
caching invalidation) joins that batch's replies (`running`), after the replies before it.
`close()` flushes what is queued first (QUIT's +OK).  When the transport's buffer passes its
high-water mark, reading pauses until it drains (write back-pressure).  Compiled, the flush writes
a payload itself (send(2), MSG_NOSIGNAL) when the transport is uvloop's plain TCP or Unix one (`wfd`, set by
`transport_changed`: not TLS's, not a fault's DelayedTransport) and holds nothing: what uvloop's
write does then (its try-write), without its ~1,000 instructions of checks and buffer list a flush,
which at -P 1 is one a request.  What the kernel does not take (a short write, EAGAIN) goes to the
transport, which queues it and watches for writability; on an error it gets all of it and meets
the error itself (its connection_lost).  Whether the transport holds nothing is known without
asking it: only the flush gives it output, so it is asked (its buffer, is_closing) only after the
flush gave it some (`wheld`).  The socket is never written after uvloop closes it: uvloop closes
the fd after the protocol's connection_lost, which marks the client closed, and the flush skips a
closed client; after the peer's EOF (uvloop then drops writes until connection_lost) `wfd` is -1.

Dispatch.  `plain` is true while nothing about this client or the server needs the full
processCommand checks (auth, an ACL user with restrictions, MULTI, RESP2 pub/sub, CLIENT PAUSE,
CLIENT REPLY, MONITOR, an error fault armed by DEBUG FAULT: server/net/faults.py); the fast loop
then does only lookup, arity, call, stats.  In cluster mode
it also reads the cluster's per-slot map (`cluster_served`, server/cluster/state.py's `served`), which
lets a command stay when it has no key or keys of one slot this node serves, stable, the cluster ok,
and the client has no ASKING pending.  Everything else goes through
`execute()`, which follows Redis's processCommand order.

Fields.  What the per-command paths read of a client (its server, database, protocol, tracking,
last command, ACL user) and what its read events use (its parsers, partial batch, state flags,
byte counts, output queue, transport) is declared in its base class, server/base/fields.py's
ClientFields: compiled, C struct fields for the functions that type the client so (`read_event`,
`_run_fast`, `queue_output`, `flush_output`, `call_command`; the scripting engine).  That is why
those bodies are module functions, which Client's methods call.
"""

from __future__ import annotations

import asyncio
import socket
import time
from typing import TYPE_CHECKING, Any, cast

import hiredis

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

from raxdb.protocol import reply as R
from raxdb.protocol.hiredis_limits import READER_ERRORS, limit_elements, unconsumed
from raxdb.protocol.multibulk import SHORT, HeldCommand, MultibulkWalk, frames_biggest
from raxdb.protocol.request import (
    BIG_ARG,
    INLINE_MAX_SIZE,
    ProtocolError,
    QueryBufferExceeded,
    RequestParser,
    string2ll,
)
from raxdb.server.base import latency
from raxdb.server.base.errors import NOAUTH, CommandError, busy_error, c_str, unknown_subcommand, wrong_arity
from raxdb.server.base.fields import ASKED, ASKING, ClientFields
from raxdb.server.base.loading import ASYNC as ASYNC_LOADING
from raxdb.server.base.loading import LOADING_ERR
from raxdb.server.base.log import LOG, logged_error
from raxdb.server.base.multiqueue import queued
from raxdb.server.conn import clientbufs as _clientbufs
from raxdb.server.conn import clienteviction as _clienteviction
from raxdb.server.conn import lifecycle
from raxdb.server.conn import obuf as _obuf
from raxdb.server.conn import replylist as _replylist
from raxdb.server.conn.clientinfo import client_info_line
from raxdb.server.conn.obuf import check_delivery
from raxdb.server.conn.obuf import is_replica as _is_replica
from raxdb.server.conn.unixaddr import client_addr as _unix_addr
from raxdb.server.conn.unixaddr import configured as _unix_path
from raxdb.server.events import expirecycle as _expirecycle
from raxdb.server.events import propagate as _propagate
from raxdb.server.events import pubsub
from raxdb.server.events import tracking as _tracking
from raxdb.server.events.watch import discard_transaction, exec_abort
from raxdb.server.memory import evict
from raxdb.server.net import bigread as _bigread
from raxdb.server.net import faults as _faults
from raxdb.server.net.blocking import handle_ready_keys
from raxdb.server.security import acl as _acl
from raxdb.server.security.protected import DENIED, protected_mode_denies
from raxdb.server.table.registry import BLOCKED
from raxdb.server.table.scriptflags import FLAG_NO_WRITES, script_flags

if TYPE_CHECKING:
    from typing import Protocol

    from raxdb.server.base import interfaces
    from raxdb.server.base.interfaces import Command as CommandEntry
    from raxdb.server.base.interfaces import Replica, Server, WatchedKey
    from raxdb.server.events.tracking import ClientTracking
    from raxdb.storage.keyspace import Database

    # checked against the protocol the lower layers work with (its commands are the protocol's
    # Command, which the table's satisfies); no base at run time
    _Declared = interfaces.Client

    class _Feed(Protocol):
        """hiredis's Reader.feed (bound), which takes any buffer, a bytearray too, where its stub
        says str | bytes."""

        def __call__(self, buf: bytes | bytearray, off: int = ..., n: int = ..., /) -> None: ...
else:
    _Declared = object

_PARTIAL_LIMIT = 1024 * 1024
# A fresh read that ends inside a command the walk takes as far as it goes (MultibulkWalk.short:
# the read ran out, no frame refused) keeps that command's bytes, at most this many, as the
# client's tail (`_tail`, protocol/multibulk.py's HeldCommand), whose walk each next read continues
# from where it stood (only that read's bytes walked, so a command of many small arguments sent a
# few bytes at a time costs its length, not its square), the read itself not copied once the
# command ends in it: a continued read through hiredis costs several times a walked one (the read
# appended to `_raw`, fed to hiredis in FEED_SLICE pieces, every argument copied out of its
# buffer).  Longer, it goes to hiredis as before (tail and read as one fresh read); at most
# INLINE_MAX_SIZE, hiredis's unparsed bytes never pass the header line limit `_run_fast` checks.
_TAIL_MAX = INLINE_MAX_SIZE
# A read event's bytes go to hiredis at most this many at a time.  Its reader moves what it still
# holds to the front of its buffer whenever 1 KiB of it has been parsed, after any command: fed a
# whole 64-256 KiB read of a pipeline, it moved ~30 KiB per 1 KiB parsed (XADD batches of 1,000-
# 5,000, a Spark sink's, spent ~6% of the server's CPU in that memmove); fed 4 KiB at a time, at
# most 4 KiB.
FEED_SLICE = 4096
# A read this long may bring a big argument, whose query buffer is sized for it (read_event,
# _rest_for_hiredis; compiled, a C integer: client.pxd)
_BIG = _clientbufs.BIG
# The walk of a run over bytes hiredis was already given (no walk of its own): its boundary is the
# start, 0 and 0 (_run_fast reads it as it reads a walk that handed over; nothing sets it)
_NO_WALK = MultibulkWalk(b"")
# _run_fast's `found`: at most 8 names (with their commands) compared before the dispatch probe;
# a batch of more distinct names probes for the rest, as it would without them
_FOUND_MAX = 16
_QUEUED = R.QUEUED
if not cython.compiled:  # compiled, client.pxd holds these inline: clock_gettime, not a Python call
    perf_clock_ns = time.perf_counter_ns
    _time_ns = time.time_ns
    # compiled, memory/evict.pxd's, cimported: a write's accounting and the measure before a
    # command under a memory limit are C calls
    from raxdb.server.memory.evict import account, refuses

    # compiled, registry.pxd's inline, cimported: a compiled handler's own C function, called straight
    from raxdb.server.table.registry import run_handler

    # compiled, slots.pxd's, cimported: the keys' slot in cluster mode is a C call
    from raxdb.storage.slots import keys_slot

    def _write_now(fd: int, data: bytes) -> int:
        """Compiled, client.pxd's send(2); interpreted never called (wfd stays -1), and were
        it called, "nothing taken": the transport writes all of it."""
        return 0

# uvloop's plain stream transports: the fd they write is the connection's socket, and uvloop closes
# it only after the protocol's connection_lost (UVBaseTransport._call_connection_lost), which marks
# the client closed first; under another loop, none
try:
    from uvloop import loop as _uvloop

    # (loop.pyi, uvloop's stub, does not declare its transports)
    _DIRECT_TYPES: tuple[type, ...] = (_uvloop.TCPTransport, _uvloop.UnixTransport)  # type: ignore[attr-defined]
except (ImportError, AttributeError):  # (a uvloop without those names: none, as with another loop)
    _DIRECT_TYPES = ()
_join = b"".join


class Client(ClientFields, asyncio.Protocol, _Declared):
    # the fields the command calls and the read event use are ClientFields's (server/base/fields.py)
    __slots__ = ("id", "name", "lib_name", "lib_ver", "authenticated", "channels", "patterns", "shard_channels",
                 "ctime", "addr", "laddr", "disconnected", "reply_mode", "is_monitor",
                 "no_evict", "no_touch", "is_script", "block_state",
                 "fd", "kill_reason", "prop_targets",
                 "unix_socket", "mem_noted", "qb_alloc", "qb_in", "qb_visit_in",
                 "rb_reset", "_partial_scan", "obuf_pending")

    is_master = False  # the replica's link to its master (server/replication/replica.py's MasterClient)
    # mustObeyClient: the master's link or the AOF's replaying client, whose commands were
    # checked where they first ran (a stream trim's LIMIT is not enforced again)
    must_obey = False

    # set by server.acl.set_default_auth in __init__ (and by AUTH, HELLO, ACL changes)
    user: _acl.User
    authenticated: bool
    _feed: _Feed

    def __init__(self, server: Server) -> None:
        self.server = server
        self.id = server.next_client_id
        server.next_client_id += 1
        self.transport: asyncio.Transport | None = None
        self.exact: RequestParser | None = None
        self.walk: MultibulkWalk | None = None  # the fast loop's over the running read (_run_fast)
        self._new_reader()
        self._tail: HeldCommand | None = None  # see _TAIL_MAX
        self._raw: bytearray | None = None
        self._raw_done = 0
        self.dbid = 0
        self.db: Database = server.dbs[0]
        self.resp = 2
        self.enc = R.RESP2_72 if server.config.compat_version >= (7, 2) else R.RESP2
        self.name = b""
        self.lib_name = b""
        self.lib_ver = b""
        server.acl.set_default_auth(self)  # self.user and self.authenticated
        self.plain = True
        self.queueing = False  # plain, but in MULTI (update_plain)
        self.cluster_flags = 0  # ASKING, READONLY, ASKED (server/base/fields.py)
        self.multi: list[Any] | None = None  # MULTI's queue (server/base/multiqueue.py)
        self.multi_error = False
        self.watched: list[WatchedKey] = []
        self.dirty_cas = False
        # Subscriptions as ordered sets: PUNSUBSCRIBE without arguments answers in subscription
        # order (Redis 7.0 keeps a client's patterns in a list).
        self.channels: dict[bytes, None] = {}
        self.patterns: dict[bytes, None] = {}
        self.shard_channels: dict[bytes, None] = {}
        self.ctime = self.last_interaction = server.now_ms
        self.last_cmd: CommandEntry | None = None
        self.addr = self.laddr = ""
        self.unix_socket = False  # accepted on `unixsocket` (server/net/unixsocket.py; CLIENT_UNIX_SOCKET)
        self.fd = -1
        self.wfd = -1  # the socket flush_output writes itself, or -1 (transport_changed)
        self.wheld = False  # the transport was given output since it last held none (flush_output)
        self.close_after_reply = False
        self.lua_debug = 0  # SCRIPT DEBUG YES / SYNC (server/scripting/ldb.py)
        self.disconnected = False  # connection_lost has run
        self.closed = False
        self.reply_mode = "on"
        self.blocked = False
        self.block_state: Any = None
        self.write_paused = False
        self.is_monitor = False
        self.tracking: ClientTracking | None = None  # CLIENT TRACKING state (server/events/tracking.py)
        self.no_evict = False
        self.no_touch = False
        self.in_exec = False
        # Redis's c->woff, the replication offset when this client's previous command ended, as of
        # the end of its last batch of commands (write_offset() says why not after every command)
        self.woff = 0
        self.mem_noted = 0  # its memory as client eviction last noted it (server/conn/clienteviction.py)
        # while EXEC runs: its argv and queue, which CLIENT INFO and ACL LOG show (server/commands/t_multi.py)
        self.exec_argv: list[bytes] | None = None
        self.exec_queue: list | None = None
        self.plain_epoch = 0  # update_plain's runs: whether anything `plain` reads changed since
        self.is_script = False  # the Lua engines' client (Redis's CLIENT_SCRIPT flag)
        self.tot_net_in = self.tot_net_out = 0
        self.last_argv: list[bytes] | None = None
        self.kill_reason = ""
        self._base: bytes | bytearray = b""
        self._base_done = 0
        self.obuf: list[bytes] = []  # output waiting for the server's end-of-iteration flush
        self.out_mark = 0  # tot_net_out when obuf was last emptied: obuf holds tot_net_out - out_mark bytes
        # what the transport held when a delivery since the last flush asked it, or -1: a bound of
        # what it holds until the next flush, the one time it is given output (obuf.check_delivery)
        self.out_held = -1
        # The replies of the batch this client is running, while it runs: output for it made
        # meanwhile (a message it publishes to itself, an invalidation) joins them in order.
        self.running: list[bytes] | None = None
        self.obuf_soft_since = 0  # when its unsent output went over its soft limit (ms), or 0
        self.obuf_watch = False  # its class has an output limit: checked after each command (server/conn/obuf.py)
        # (the read event's reply list, its items laid out, the layout: server/conn/replylist.py)
        self.obuf_pending: list = [None, 0, None]
        self.replies = None  # Redis's reply list while the transport holds output (replylist.flushed)
        # server/events/propagate.py, while propagating: the argv to propagate in place of the command's
        # own (None: its own), whether the command must not be propagated, or must be anyway.
        self.prop_argv: list[bytes] | None = None
        self.prop_prevent = False
        self.prop_force = False
        # where its commands' own argv may propagate (server/events/propagate.py's TO_* flags): both,
        # but for the script client's commands under redis.set_repl
        self.prop_targets = _propagate.TO_BOTH
        self.replica: Replica | None = None  # its replica state, once it sent REPLCONF or SYNC (server/replication/master.py)
        # the sizes of Redis's query and reply buffers for it (server/conn/clientbufs.py)
        self.qb_alloc = self.qb_in = self.qb_visit_in = 0
        self.rb_size = self.rb_peak = _clientbufs.RB_CHUNK
        # createClient stamps the peak's last reset in seconds, which the cron compares with
        # milliseconds: the first visit resets the peak; kept, as the figures then follow Redis's
        self.rb_reset = server.now_ms // 1000
        self._partial_scan: tuple | None = None  # where partial_args stopped

    def _new_reader(self) -> None:
        # Bound methods cached once per reader: creating them per read event is measurable.
        self.reader = reader = hiredis.Reader()
        if not limit_elements(reader):
            # This hiredis build can't be limited: huge array headers must never reach it, so
            # this connection parses with the exact parser only.
            self.exact = RequestParser(self.server.config.proto_max_bulk_len)
        self._gets = reader.gets
        self._has_data = reader.has_data
        self._feed = reader.feed  # type: ignore[assignment]  # see _feed's declaration

    # ---- state ---------------------------------------------------------------------------------
    def close_after_replies(self) -> None:
        """Close once the replies so far are written; later commands of the batch do not run
        (QUIT, CLIENT KILL of oneself: Redis's CLIENT_CLOSE_AFTER_REPLY).  Not plain, so the fast
        loop hands the next command to execute(), which drops it."""
        self.close_after_reply = True
        self.plain = self.queueing = False

    def update_plain(self) -> None:
        """Recompute whether the fast loop may skip processCommand's extra checks (in cluster
        mode all but the slot's, which the loop reads in the cluster's slot map per command)."""
        srv = self.server
        self.obuf_watch = _obuf.watched(self)
        plain = (not self.obuf_watch and self.authenticated and self.reply_mode == "on"
                 and not (self.resp == 2 and (self.channels or self.patterns or self.shard_channels))
                 and not srv.monitors and not srv.pause_until_ms and not self.in_exec
                 and srv.busy_script is None and not self.close_after_reply and self.tracking is None
                 and not srv.persistence.stats.get("loading")
                 and self.user.free and not srv.repl.write_gate and not srv.replica_gate
                 and not srv.rdb_gate and srv.fault_error is None and not self.no_touch)
        self.plain = plain and self.multi is None
        # the same, inside MULTI: the fast loop queues a command whose own checks pass
        self.queueing = plain and self.multi is not None
        if self.exact is not None:
            self.exact.auth_required = not self.authenticated
        self.plain_epoch += 1

    def select(self, dbid: int) -> None:
        self.dbid = dbid
        self.db = self.server.dbs[dbid]

    def set_protocol(self, version: int) -> None:
        self.resp = version
        if self.server.config.compat_version >= (7, 2):  # 7.2's doubles (compat-version)
            self.enc = R.RESP3_72 if version == 3 else R.RESP2_72
        else:
            self.enc = R.RESP3 if version == 3 else R.RESP2
        self.update_plain()

    def idle_timeout_applies(self) -> bool:
        # a replica is never timed out by `timeout` (repl-timeout is its own)
        return not (self.blocked or self.channels or self.patterns or self.shard_channels or self.is_monitor
                    or _is_replica(self))

    # ---- asyncio callbacks ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream server's (asyncio's or uvloop's, TCP, Unix or TLS): it writes
        self.transport = transport = cast("asyncio.Transport", transport)
        srv = self.server
        if self.fd < 0:  # not accepted by server/net/accept.py (TLS's Link, a test's transport)
            if self.unix_socket:
                self.take_socket(transport.get_extra_info("socket"), None, None)
            else:
                self.take_socket(transport.get_extra_info("socket"), transport.get_extra_info("peername"),
                                 transport.get_extra_info("sockname"))
        if len(srv.clients) >= srv.config.maxclients:
            srv.stat_rejected_conn += 1
            transport.write(b"-ERR max number of clients reached\r\n")
            transport.close()
            self.closed = True
            return
        if protected_mode_denies(self):
            srv.stat_rejected_conn += 1
            transport.write(DENIED)
            transport.close()
            self.closed = True
            return
        srv.clients[self.id] = self
        srv.clients_cron.rotation.append(self)
        _clienteviction.note_if_noting(self)  # under a memory limit its buffers count at once
        srv.mem_ok = False  # a connection counts in used_memory
        srv.stat_numconnections += 1
        self.transport_changed()
        if srv.faults is not None:  # a reply delay armed by DEBUG FAULT applies to new connections too
            _faults.accepted(self)
        if not self.authenticated:
            self.exact = RequestParser(srv.config.proto_max_bulk_len)
            self.exact.auth_required = True
        self.update_plain()

    def transport_changed(self) -> None:
        """Whether flush_output may write this client's socket itself (`wfd`, its fd, or -1): only
        compiled, and only while its transport is uvloop's plain TCP or Unix one (not TLS's, not a
        fault's DelayedTransport), whose fd is the accepted socket's.  Whoever swaps the transport
        calls this again (server/net/faults.py); what the old one wrote into the new may still
        be held there, so the flush asks it first (`wheld`)."""
        t = self.transport
        self.wfd = self.fd if cython.compiled and t is not None and type(t) in _DIRECT_TYPES else -1
        self.wheld = True

    def eof_received(self) -> bool | None:
        """The peer's end: uvloop closes the transport (its connection_lost follows, a loop turn
        later) and its write drops what is given to it meanwhile, as Redis frees the client at
        once; so the flush stops writing the socket itself."""
        self.wfd = -1
        return None

    def take_socket(self, s: Any, peer: Any, local: Any) -> None:
        """A new connection's socket facts (addr, laddr, fd) and options (tcp-keepalive), what
        Redis's accept handler and createClient read and set.  The listener's Acceptor gives the
        accepted socket itself and the peer's address accept() returned, before the loop takes it:
        uvloop's transport would answer each question (peername, sockname, each setsockopt) through
        a new socket object, the most of a new connection's cost in connection_made (issue #56).
        `s` None: a transport without a socket (fd -1, no options); `peer` and `local`: the
        addresses, unused for a unix socket's connection."""
        srv = self.server
        if self.unix_socket:
            self.addr = self.laddr = _unix_addr(srv)
            if LOG.level <= 1:  # acceptUnixHandler's verbose line
                LOG.verbose(f"Accepted connection to {_unix_path(srv)}")
        else:
            self.addr = format_addr(peer)
            self.laddr = format_addr(local)
            if LOG.level <= 1 and isinstance(peer, tuple):  # acceptTcpHandler's (the ip unbracketed)
                LOG.verbose(f"Accepted {peer[0]}:{peer[1]}")
        self.fd = s.fileno() if s is not None else -1
        if srv.config.tcp_keepalive and s is not None and not self.unix_socket:
            keep_alive(s, srv.config.tcp_keepalive)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.disconnected:  # a busy script's poll freed it already (server/scripting/busy.py)
            return
        self.disconnected = True
        self.closed = True
        self._unlist()
        lifecycle.on_disconnect(self)

    def pause_writing(self) -> None:
        self.write_paused = True
        if self.transport is not None:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        self.write_paused = False
        if self.transport is not None and not self.closed:
            self.transport.resume_reading()

    def close(self) -> None:
        if not self.closed:
            if self.obuf:  # what flush_pending does before any reply (nodes.conf saved before QUIT's +OK)
                self.server.cluster_before_sleep()
            self.flush_output()  # queued output goes first (QUIT's reply, a killed client's last replies)
            self.closed = True
            t = self.transport
            if t is not None:
                t.close()
                if t.get_extra_info("ssl_object") is not None:
                    # a TLS close sends close_notify and waits for the peer's (up to 30 s) before the
                    # transport reports the loss: the client is freed now, as Redis frees it, while
                    # its last output and the TLS close go on (the later report finds it gone)
                    self.connection_lost(None)

    def flush_output(self) -> None:
        """Write the queued output with one write and empty the queue (what flush_pending does for
        every client with output once per loop iteration)."""
        flush_output(self)

    def abort(self) -> None:
        """Close at once (freeClient), dropping the output not yet written, the transport's too:
        a plain close would wait for a peer that does not read.  It leaves the client list now
        (the transport reports the loss a loop iteration later), and no more deliveries reach it
        while the close completes."""
        t = self.transport
        self.discard_output()
        self.close()
        if t is not None:
            t.abort()
        self._unlist()
        pubsub.unsubscribe_all(self)
        self.update_plain()

    def _unlist(self) -> None:
        """Leave the client list (its traffic goes to the server's totals) and client eviction's sum."""
        srv = self.server
        if srv.clients.pop(self.id, None) is not None:
            srv.stat_net_input_bytes += self.tot_net_in
            srv.stat_net_output_bytes += self.tot_net_out
        if self.mem_noted:
            _clienteviction.forget(self)

    def discard_output(self) -> None:
        """Drop queued output (a client closed for overcoming its output buffer limit)."""
        self.obuf.clear()
        self.out_mark = self.tot_net_out
        self.replies = None

    def write(self, data: bytes) -> None:
        """Out-of-band output (pub/sub messages, MONITOR lines, served blocked clients)."""
        write_out(self, data)

    def obuf_reached(self, out: list[bytes] | None, extra: int = 0) -> bool:
        """After one command of a client whose class has an output limit: drop it if the limit is
        reached, counting the replies of this read event not yet queued (`out`), as Redis checks
        as each reply is added and then runs nothing more of the client's input.  Laid out on
        from the last check, so a long pipeline costs one pass over its replies.  `extra`: the
        bytes of a reply still being made (server/table/args.py's random_picks_reply)."""
        if _is_replica(self):  # its share of the replication buffer
            return _obuf.check(self)
        mark = self.obuf_pending
        if out is None:
            m = _replylist.current(self, _replylist.held(self))
        else:
            if mark[0] is not out:
                mark[:] = out, 0, _replylist.current(self, _replylist.held(self))
            m = mark[2]
            n = mark[1]
            if len(out) > n:
                m.add_items(out[n:])
                mark[1] = len(out)
        if extra:
            m = m.copy()
            m.add(extra, False)
        return _obuf.check(self, m.figures()[2])

    def output_size(self) -> int:
        """Bytes of output not yet taken by the kernel: queued here and in the transport."""
        t = self.transport
        # queued bytes from the byte counter, not a sum over obuf: a subscriber's limit check runs
        # per delivered message, and thousands can queue in one iteration (summing made 100,000
        # PUBLISH to one subscriber in one pipeline take 80 s instead of 0.9)
        return (t.get_write_buffer_size() if t is not None else 0) + self.tot_net_out - self.out_mark

    # ---- reading -------------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        read_event(self, data if type(data) is bytes else bytes(data))

    def _received_other(self, data: bytes) -> None:
        """Every read event that is not a fresh multibulk batch for hiredis."""
        if self.closed:
            return
        if self.exact is not None:
            self.exact.feed(data)
            self.process()
            return
        raw = self._raw
        if raw is None:
            if data[0] != 42:  # not '*': inline command at a boundary
                self._enter_exact(data, 0)
                self.process()
                return
            base: bytes | bytearray = data
            base_done = 0
        else:
            raw += data
            base, base_done = raw, self._raw_done
            if len(raw) > _PARTIAL_LIMIT:
                self._enter_exact(raw, base_done)
                self.process()
                return
        # hiredis would take a '+status' or '=verbatim' frame inside a request for a bulk string,
        # and a '~set', '>push' or '|attribute' frame between requests for a command; Redis rejects
        # the first ("expected '$'") and reads the others as inline commands.  Arguments such as
        # "+", "+inf" or "=x" are fine.
        if data[0] in (43, 61, 62, 124, 126) or not _only_bulk_payloads(data, raw is None):
            self._enter_exact(base, base_done)
            self.process()
            return
        n = len(data)
        fed = -1  # all of it
        if n > FEED_SLICE and not self.blocked:  # see FEED_SLICE (a blocked client's process() runs nothing)
            self._feed(data, 0, FEED_SLICE)
            fed = len(base) - n + FEED_SLICE  # `base` ends with `data`
        else:
            self._feed(data)
        self._base = base
        self._base_done = base_done
        self.process(fed)

    def _enter_exact(self, raw: bytes | bytearray, skip: int, start: int = 0) -> None:
        """The exact parser takes over from `raw[start:]` (a command boundary), after its first
        `skip` commands (which ran)."""
        p = RequestParser(self.server.config.proto_max_bulk_len)
        p.auth_required = not self.authenticated
        p.feed(raw, start)  # (a read parsed where it lies, a bytearray copied: no bytes() of it first)
        for _ in range(skip):
            p.next_command()
        self.exact = p
        self._raw = None
        self._raw_done = 0

    def process(self, fed: int = -1) -> None:
        """Run every complete buffered command (until blocked or closing), then flush replies.
        `fed`: how much of the read's bytes (`_base`) hiredis has been given, -1 all (_run_fast)."""
        if self.blocked or self.closed:
            return
        tail = self._tail
        if tail is not None:  # (hiredis reads on: the tail is its)
            _spill_tail(self, tail)
        out: list[bytes] = []
        outer, self.running = self.running, out
        if self.exact is None:
            _run_fast(self, out, 0, self._base, self._base_done, fed)
        if self.exact is not None:
            self._run_exact(out)
        self.running = outer
        self.woff = self.server.repl.master_repl_offset
        if out and not self.closed:
            self.write(out[0] if len(out) == 1 else _join(out))
        if self.close_after_reply:
            self.close()

    def write_offset(self) -> int:
        """c->woff for WAIT: the offset of the replication stream when this client's previous
        command ended.  Redis notes it after every command; here it is noted once per batch (a
        read event's commands, or process()'s), which costs the hot path nothing per command.
        When a command of this client already ran in the running batch (its reply is in
        `running`), that one is the previous command and nothing but this client ran since, so the
        offset now is the one it ended at; otherwise the note from the last batch stands (other
        clients' writes since then are not the client's to wait for, and a fresh connection waits
        for nothing).  EXEC notes it once before its commands run, as Redis's woff stays what it
        was before EXEC."""
        return write_offset(self)

    def partial_args(self) -> tuple[int, int]:
        """(bytes, count) of the arguments of a command still being received that hiredis has
        already parsed: Redis has made them argv objects by then (argv-mem, and the argv array in
        tot-mem), while raxdb's hiredis holds them until the command is whole.  (0, 0) when no
        command is partly received.  A walk over the held bytes' headers, for CLIENT LIST and
        memory notes (never per command), resumed where the last one stopped (`_partial_scan`),
        since a command arriving in many reads may be noted after each."""
        if self.exact is not None:
            return self.exact.partial_args()
        raw, end = self._held()
        if raw is None:
            return 0, 0
        ran = self._raw_done if raw is self._raw else 0
        scan = self._partial_scan
        if scan is not None and scan[0] is raw and scan[1] == ran and scan[2] <= end:
            _, _, pos, size, count, nargs = scan
        else:
            pos = 0
            skip = ran  # the commands of the held bytes that ran, then the partial one
            while True:
                cr = raw.find(b"\r\n", pos, min(end, pos + 24))  # a header line is short
                if cr < 0 or raw[pos] != 42:
                    return 0, 0
                nargs = string2ll(bytes(raw[pos + 1 : cr])) or 0
                pos = cr + 2
                if not skip:
                    break
                skip -= 1
                for _ in range(nargs):
                    bulk = _bulk_at(raw, pos, end)
                    if bulk is None:
                        return 0, 0
                    pos = bulk[1]
            size = count = 0
        while count < nargs:
            bulk = _bulk_at(raw, pos, end)
            if bulk is None:
                break
            size += bulk[0]
            pos = bulk[1]
            count += 1
        self._partial_scan = (raw, ran, pos, size, count, nargs)
        return size, count

    def _held(self) -> tuple[bytes | bytearray | None, int]:
        """The bytes held since the last command boundary (`_raw`, or the tail) and how far into
        them hiredis has parsed (with a tail, would have: `_tail_parsed`); (None, 0) when none."""
        raw = self._raw
        if raw is not None:
            return raw, len(raw) - unconsumed(self.reader)
        tail = self._tail
        if tail is not None:
            return tail.buf, _tail_parsed(tail.buf)
        return None, 0

    def unparsed(self) -> int:
        """Bytes held unparsed between reads: hiredis's, or what it would not have parsed of the
        tail (its count line, whole bulks and the next item's type byte are parsed: see
        `bulk_room`), as Redis's query buffer holds them (clientbufs.pending)."""
        tail = self._tail
        if tail is not None:
            return len(tail.buf) - _tail_parsed(tail.buf)
        return unconsumed(self.reader)

    def bulk_room(self) -> tuple[int, int]:
        """(header bytes, room) for a bulk being received: the bytes of its header still held
        before its data (Redis has parsed them out of its query buffer, whose qbuf is then the
        data alone), and for a big one (32 KiB or more) the bytes of it still to come, which Redis's
        query buffer holds room for from the header on (CLIENT LIST's qbuf-free); (0, 0) when no
        bulk is being received.  A header still incomplete counts -1: hiredis has taken its type
        byte, which Redis still holds."""
        exact = self.exact
        if exact is not None:
            return 0, exact.bulk_room()  # the exact parser holds a bulk's data alone already
        raw, start = self._held()  # hiredis has taken an item's type byte ('$', '*') when it reads on
        if raw is None:
            return 0, 0
        held = len(raw) - start
        if held < 0 or start < 1 or raw[start - 1] not in (36, 42):
            return 0, 0  # between two arguments, or no command begun
        cr = raw.find(b"\r\n", start, start + 22)
        if cr < 0:
            return -1, 0
        n = string2ll(bytes(raw[start:cr])) if raw[start - 1] == 36 else None
        if n is None:
            return 0, 0
        header = cr + 2 - start
        return header, max(0, n + 2 - (held - header)) if n >= BIG_ARG else 0

    def has_pending_input(self) -> bool:
        """Are bytes of later commands buffered (behind a blocked command, say)?"""
        if self.exact is not None:
            return self.exact.pending() > 0
        return self._raw is not None or self._tail is not None or self.reader.has_data()

    def _run_exact(self, out: list[bytes]) -> None:
        p = self.exact
        assert p is not None
        p.qbuf_limit = self.server.config.client_query_buffer_limit
        while not (self.blocked or self.close_after_reply or self.closed):
            try:
                argv = p.next_command()
            except QueryBufferExceeded:
                LOG.warning(f"Closing client that reached max query buffer length: id={self.id} addr={self.addr}")
                self.close_after_reply = True
                return
            except ProtocolError as e:
                msg = str(e).encode("latin-1")  # its one client byte ("got '%c'") goes out raw, as in Redis
                self.server.count_error(msg)
                out.append(b"-ERR " + msg + b"\r\n")
                self.close_after_reply = True
                LOG.verbose(f"Protocol error ({e}) from client: id={self.id} addr={self.addr}")
                return
            if argv is None:
                break
            self.execute(argv, out)
            if self.obuf_watch and self.obuf_reached(out):
                return
        if p.at_boundary() and self.authenticated and not self.blocked:
            self.exact = None
            self._new_reader()
            self._raw = None
        elif p.big_window() is not None and not (self.closed or self.close_after_reply):
            _bigread.receive(self, p)  # the rest of a big argument read straight into its buffer

    # ---- dispatch (Redis's processCommand) -----------------------------------------------------
    def execute(self, argv: list[bytes], out: list[bytes]) -> None:
        if self.close_after_reply:
            return
        ct = self.tracking
        try:
            t0 = perf_clock_ns()
            srv = self.server
            self.last_argv = argv
            # CLIENT LIST's cmd= is what the lookup found (NULL for none), whatever happens next:
            # refused for its arity or in a RESP2 subscriber, queued by MULTI, held by a pause.
            cmd = self.last_cmd = srv.table.lookup(argv)
            if cmd is None:
                container = srv.table.lookup_name(argv[0]) if len(argv) > 1 else None
                if container is not None and container.subcommands:
                    self._reject(None, unknown_subcommand(argv[1], container.name).msg, out)
                else:
                    self._reject_unknown(argv, out)
                return
            if cmd.proc is None:  # a container invoked without a subcommand
                if len(argv) < 2:
                    self._reject(cmd, wrong_arity(cmd.fullname).msg, out)
                else:
                    self._reject(cmd, unknown_subcommand(argv[1], cmd.name).msg, out)
                return
            if not cmd.arity_ok(len(argv)):
                if self.multi is not None:
                    self.multi_error = True
                self._reject(cmd, wrong_arity(cmd.fullname).msg, out)
                return
            if not self.authenticated and not cmd.no_auth:
                self._reject(cmd, NOAUTH.encode(), out)
                return
            if self.multi is not None and cmd.no_multi:
                self._reject(cmd, b"ERR Command not allowed inside a transaction", out)
                return
            if not self.user.free:  # ACLCheckAllPerm: only a restricted user's clients get here
                denied = srv.acl.check(self, cmd, argv, _acl.CTX_MULTI if self.multi is not None else _acl.CTX_TOPLEVEL)
                if denied:
                    self._reject(cmd, _acl.denied_text(denied, cmd), out)
                    return
            if srv.fault_error is not None and srv.fault_error.hits(cmd, argv):  # DEBUG FAULT ERROR (net/faults.py)
                self._reject(cmd, _faults.fire(srv, srv.fault_error), out)
                return
            if srv.cluster_route is not None and not self.must_obey:  # cluster mode: the slot's node
                denied = srv.cluster_route(self, cmd, argv)
                if denied is not None:
                    self._redirect(cmd, denied, out)
                    return
            if srv.mem_limited and srv.busy_script is None and refuses(self, cmd, argv):
                self._reject(cmd, evict.OOM, out)
                return
            # (its two tests first, inline: writes_denied is an interpreted call, and a command that
            # is not the fast loop's comes here every time)
            disk_error = srv.persistence.writes_denied() if srv.rdb_gate or srv.aof.state else None
            if disk_error is not None and not self.is_master and self._disk_denies(cmd, argv):
                # writeCommandsDeniedByDiskError: writes (and PING) wait until a save succeeds and
                # the AOF can be written
                self._reject(cmd, disk_error, out)
                return
            if srv.repl.write_gate and not srv.repl.master.enough_good_replicas() and cmd.fullname != "ping" \
                    and self._disk_denies(cmd, argv):
                # min-replicas-to-write (only with the gate set: clients then skip the fast loop)
                self._reject(cmd, b"NOREPLICAS Not enough good replicas to write.", out)
                return
            if srv.replica_gate and not self.is_master:  # READONLY, MASTERDOWN (server/replication/replica.py)
                denied = srv.repl.link.denies(self, cmd, argv)
                if denied is not None:
                    self._reject(cmd, denied, out)
                    return
            if srv.persistence.stats.get("loading") and self._denied_while_loading(cmd):
                # a load serves clients between its slices (server/persistence/loading.py)
                self._reject(cmd, LOADING_ERR, out)
                return
            if srv.busy_script is not None and "allow_busy" not in cmd.flags:  # a script past its time limit
                self._reject(cmd, busy_error(srv.busy_script.is_function).encode(), out)
                return
            if (self.is_monitor or _is_replica(self)) and (cmd.is_readonly or self.may_replicate(cmd, argv)):
                # A replica, and a MONITOR client (a replica in Redis's eyes), may not touch the
                # keyspace: client pauses do not hold them.
                self._reject(cmd, b"ERR Replica can't interact with the keyspace", out)
                return
            if srv.pause_until_ms and not self.is_master and self._paused_for(cmd, argv):
                # CLIENT PAUSE: hold the command (and everything pipelined behind it) until unpaused.
                # Not a replica's master stream (server/replication/replica.py applies it whole, in order).
                self._postpone(argv)
                return
            if self.multi is not None and cmd.queue_in_multi:
                self.multi.append(cmd)  # (server/base/multiqueue.py: the command, then its argv)
                self.multi.append(argv)
                self._emit(R.QUEUED, out)
                return
            if self.resp == 2 and (self.channels or self.patterns or self.shard_channels) and not cmd.ok_in_pubsub:
                self._reject(cmd, ("ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT"
                                   " / RESET are allowed in this context" % cmd.fullname).encode(), out)
                return
            if self.no_touch and cmd.fullname != "touch":
                r = self._call_untouched(cmd, argv, t0)
            else:
                r = self.call(cmd, argv, t0)
            if srv.ready_keys:
                handle_ready_keys(srv)
            dur = perf_clock_ns() - t0
            if srv.monitors and not ("admin" in cmd.flags or "skip_monitor" in cmd.flags):
                # after the call, as Redis: the line shows the db the command left selected
                lifecycle.feed_monitors(self, argv, cmd)
            if dur >= srv.slowlog_ns and r is not BLOCKED:  # a blocked one logs when served
                self.note_slow(cmd, argv, dur)
            if r is BLOCKED:
                return
            self._emit(r, out)
        finally:
            if ct is not None:
                _tracking.after_command(self, self.last_cmd)

    def call(self, cmd: CommandEntry, argv: list[bytes], t0: int | None = None, log_slow: bool = False) -> Any:
        """Run a resolved, arity-checked command: the reply bytes (or BLOCKED), with its stats
        (`call_command`, which compiled code calls directly).

        Used by `execute()`, EXEC and scripts.  The fast loop in `_run_fast` inlines the same
        steps on purpose: a method call per command is measurable there."""
        return call_command(self, cmd, argv, t0, log_slow)

    def _call_untouched(self, cmd: CommandEntry, argv: list[bytes], t0: int | None) -> Any:
        """`call` for a client in CLIENT NO-TOUCH mode: its lookups (in EXEC and scripts too) are
        no accesses of the keys (OBJECT IDLETIME, LFU), as Redis 7.2's lookupKey skips them for
        the current client; TOUCH is not run here.  (A client in this mode is not `plain`.)"""
        srv = self.server
        dbs = srv.dbs
        was = [db.touch for db in dbs]
        for db in dbs:
            db.touch = False
        try:
            return self.call(cmd, argv, t0)
        finally:
            child = srv.persistence.has_child()  # a BGSAVE it started keeps lookups untouched
            for db, on in zip(dbs, was, strict=True):
                db.touch = on and not child

    def _disk_denies(self, cmd: CommandEntry, argv: list[bytes]) -> bool:
        """processCommand's is_write_command or PING, which a disk error refuses."""
        return cmd.fullname == "ping" or self.writes(cmd, argv)

    def writes(self, cmd: CommandEntry, argv: list[bytes]) -> bool:
        """processCommand's is_write_command: EXEC if a queued command writes; a script or
        function that declares flags unless it declares no-writes."""
        name = cmd.fullname
        if name == "exec":
            return self.multi is not None and any(self.writes(q, qargv) for q, qargv in queued(self.multi))
        flags = script_flags(self, cmd, argv)
        if flags is not None:
            return not flags & FLAG_NO_WRITES
        return cmd.is_write

    def _denied_while_loading(self, cmd: CommandEntry) -> bool:
        """processCommand's is_denyloading_command: not flagged `loading`, or an EXEC of a queued
        command that is not; during a replica's asynchronous load, which serves the old dataset,
        is_deny_async_loading_command: flagged `no_async_loading` (or an EXEC of one)."""
        if self.server.persistence.stats["loading"] == ASYNC_LOADING:
            if cmd.fullname == "exec" and self.multi is not None:
                return any("no_async_loading" in q.flags for q, _ in queued(self.multi))
            return "no_async_loading" in cmd.flags
        if cmd.fullname == "exec" and self.multi is not None:
            return any(not q.ok_loading for q, _ in queued(self.multi))
        return not cmd.ok_loading

    def _paused_for(self, cmd: CommandEntry, argv: list[bytes]) -> bool:
        """Must this command wait for the CLIENT PAUSE to end?  ALL holds every command; WRITE
        holds those that may replicate, as processCommand judges them."""
        srv = self.server
        return srv.paused() and (not srv.pause_writes_only or self.may_replicate(cmd, argv))

    def may_replicate(self, cmd: CommandEntry, argv: list[bytes]) -> bool:
        """processCommand's is_may_replicate_command: a write, or a command that may replicate
        (PUBLISH, PFCOUNT, EVAL, ...); EXEC if a queued command is; a script or function that
        declares flags by whether it declares no-writes (scriptFlagsToCmdFlags), so PAUSE WRITE
        holds EVAL_RO of a script that may write and lets EVAL of a no-writes script through."""
        name = cmd.fullname
        if name == "exec":
            return self.multi is not None and any(self.may_replicate(q, a) for q, a in queued(self.multi))
        flags = script_flags(self, cmd, argv)
        if flags is not None:
            return not flags & FLAG_NO_WRITES
        return cmd.is_write or "may_replicate" in cmd.flags

    def _postpone(self, argv: list[bytes]) -> None:
        """Block this client until the pause ends; the held command then runs first."""
        self.blocked = True
        self.block_state = ("postponed", argv)
        srv = self.server
        if self._resume_postponed not in srv.unpause_hooks:
            srv.unpause_hooks.append(self._resume_postponed)

    def postponed(self) -> bool:
        """Is this client held by CLIENT PAUSE, its command waiting in block_state?"""
        state = self.block_state
        return self.blocked and isinstance(state, tuple) and bool(state) and state[0] == "postponed"

    def _resume_postponed(self) -> None:
        srv = self.server
        if self._resume_postponed in srv.unpause_hooks:
            srv.unpause_hooks.remove(self._resume_postponed)
        if self.closed or not self.postponed():
            return
        state = self.block_state
        self.blocked = False
        self.block_state = None
        out: list[bytes] = []
        srv.update_clock()
        outer, self.running = self.running, out
        self.execute(state[1], out)
        self.running = outer
        if out:
            self.write(_join(out))
        # Only with input waiting (as blocking.finish): run on a clean reader, the fast loop would
        # keep the last chunk as a partial command, and a later switch to the exact parser would
        # run its commands again.
        if self.has_pending_input():
            self.process()
        elif self.close_after_reply:
            self.close()

    def note_slow(self, cmd: CommandEntry, argv: list[bytes], ns: int) -> None:
        """A command that took at least `Server.slowlog_ns`: the slow log and the latency monitor
        decide whether it is slow enough for them.  Called for commands run from the network, from
        EXEC and from scripts (`call(log_slow=True)`), and for a blocked command when it is served
        or released by CLIENT UNBLOCK (updateStatsOnUnblock), never when it blocks."""
        srv = self.server
        slower = srv.config.slowlog_log_slower_than
        if 0 <= slower * 1000 <= ns:
            lifecycle.slowlog_add(self, argv, ns // 1000)
        latency.add_sample_if_needed(srv, "fast-command" if "fast" in cmd.flags else "command", ns // 1_000_000)

    def _emit(self, r: bytes | tuple[bytes, ...], out: list[bytes]) -> None:
        mode = self.reply_mode
        if mode == "on":
            R.add_reply(out, r)
        elif mode == "skip":
            self.reply_mode = "on"
            self.update_plain()
        elif mode == "skip_next":  # CLIENT REPLY SKIP: its own reply is dropped, then the next one
            self.reply_mode = "skip"
        elif mode == "replica" and r:  # a replica gets the stream only: a command that replied drops it
            rogue_reply(self, R.flat(r))

    def error_reply(self, msg: bytes, cmd: CommandEntry | None = None, counted: bool = False) -> bytes:
        if cmd is not None:
            cmd.failed_calls += 1
        if not counted:
            self.server.count_error(msg)
        return b"-" + msg + b"\r\n"

    def internal_error(self, cmd: CommandEntry, exc: Exception) -> bytes:
        LOG.warning(f"Internal error in '{cmd.fullname}': {type(exc).__name__}: {exc}")
        import traceback

        traceback.print_exc()
        return self.error_reply(f"ERR internal error in '{cmd.fullname}': {type(exc).__name__}".encode(), cmd)

    def _reject(self, cmd: CommandEntry | None, msg: bytes, out: list[bytes]) -> None:
        if cmd is not None:
            cmd.rejected_calls += 1
        if self.multi is not None:
            self.multi_error = True
        msg = msg.replace(b"\r", b" ").replace(b"\n", b" ")
        if cmd is not None and cmd.fullname == "exec":  # a rejected EXEC aborts the transaction
            msg = exec_abort(self, msg)
        self.server.count_error(msg)
        self._emit(b"-" + msg + b"\r\n", out)

    def _redirect(self, cmd: CommandEntry, msg: bytes, out: list[bytes]) -> None:
        """clusterRedirectClient: EXEC's transaction is discarded, a queued command flags it."""
        cmd.rejected_calls += 1
        if cmd.fullname == "exec":
            discard_transaction(self)
        elif self.multi is not None:
            self.multi_error = True
        self.server.count_error(msg)
        self._emit(b"-" + msg + b"\r\n", out)

    def _reject_unknown(self, argv: list[bytes], out: list[bytes]) -> None:
        # Redis prints each argument with "%.*s": up to 128 bytes in all, each cut at a NUL.
        args = b""
        for a in argv[1:]:
            if len(args) >= 128:
                break
            args += b"'" + c_str(a, 128 - len(args)) + b"' "
        msg = b"ERR unknown command '" + c_str(argv[0], 128) + b"', with args beginning with: " + args
        self._reject(None, msg, out)


class AOFClient(Client):
    """The client that replays the AOF (createAOFClient; server/persistence/aofload.py): obeyed as the
    master's link is."""

    __slots__ = ()
    must_obey = True


# ---- the read event's path ------------------------------------------------------------------------
# Module functions rather than Client methods so that, compiled, the client and the server are
# typed as their field bases (client.pxd): what these read and write of them are C struct fields.

def read_event(c: Client, data: bytes) -> None:
    """Client.data_received's body: a read event's bytes, run."""
    srv = c.server
    t = _time_ns()  # the wall clock in ns (compiled, clock_gettime: client.pxd)
    # the server's clock (server/base/clock.py's tick, inline): the wall clock plus its shift, or,
    # frozen by a test control, the reading it holds
    if srv.clock_frozen:
        now = srv.now_ms
    else:
        srv.now_ms = now = (t // 1000 + srv.clock_shift_us) // 1000
    c.last_interaction = now
    n = len(data)
    c.tot_net_in += n
    first = None  # the argv of a held command this read completes, then walked from `start`
    start = 0
    held = c._tail
    if held is not None:  # the last read ended inside a command: this one continues it
        if c.blocked:
            _spill_tail(c, held)
        else:
            start = held.take(data)
            if start >= 0:  # the command whole: run first, the read walked from its end
                c._tail = None
                first = held.argv(data, start)
            elif start == SHORT and len(held.buf) <= _TAIL_MAX:  # still short: the read held too
                c.woff = srv.repl.master_repl_offset  # (an empty batch, as the walk's)
                if srv.client_evict_limit:
                    _clienteviction.changed(c)
                return
            else:  # a frame the walk refuses, or past _TAIL_MAX: the two as one fresh read
                c._tail = None
                data = bytes(held.buf) if start == SHORT else _join((held.buf, data))
                start = 0
    if c.exact is None and c._raw is None and (data[0] == 42 or first is not None) and not c.blocked:
        # The common case, inlined: a fresh batch of multibulk commands.  This is process()
        # without its call and its blocked/closed checks; calling process() here costs ~680
        # instructions per unpipelined request (+4%, bench/instr.sh SET 1).  The read gate (may
        # hiredis take the bytes? is a big argument arriving?) is `_run_fast`'s, for what its walk
        # does not take: a read it takes whole is read once, header by header, and scanned for
        # nothing else.
        out: list[bytes] = []
        c.running = out
        _run_fast(c, out, t, data, 0, 0, start, first)  # its whole commands walked, the rest judged and handed on
        if c.exact is not None:
            c._run_exact(out)
            if n >= _BIG:  # a big argument arriving: the query buffer's room for the rest of it
                _clientbufs.partial_read(c)
        c.running = None
        c.woff = srv.repl.master_repl_offset
        if out and not c.closed:
            queue_replies(c, out)
        if c.close_after_reply:
            c.close()
        if srv.client_evict_limit:
            _clienteviction.changed(c)
        elif srv.maxmemory and c.exact is not None:
            _clienteviction.note_if_noting(c)
        return
    if n >= _BIG:  # a read that may bring a big argument
        _clientbufs.big_read(c, data)
    c._received_other(data)
    if srv.client_evict_limit:
        _clienteviction.changed(c)
    elif srv.maxmemory:  # a partial command held counts under a memory limit
        _clienteviction.note_if_noting(c)


def flush_output(c: Client) -> None:
    """Client.flush_output's body: the queued output written with one write (with a big piece
    among them, one writelines of the pieces: see queue_replies), the queue emptied."""
    obuf = c.obuf
    if not obuf:
        return
    n = c.tot_net_out - c.out_mark  # the queue's bytes (queue_output counts them in)
    data: bytes | None
    if len(obuf) == 1:
        data = obuf[0]
    else:
        data = None if has_big_piece(obuf) else _join(obuf)
    if n > c.rb_peak:  # Redis's reply buffer fills up to its size before the write
        c.rb_peak = n if n < c.rb_size else c.rb_size
        # the rest would be in Redis's reply list, whose limit is checked before any write
        if n > c.rb_size and _obuf.check(c):
            return
    t = c.transport
    if t is not None and not c.closed:
        try:
            if data is None:  # big pieces: one writev (uvloop), no copy into one buffer first
                t.writelines(obuf)
                c.wheld = True
            elif c.wfd >= 0 and type(data) is bytes \
                    and (not c.wheld or not (t.get_write_buffer_size() or t.is_closing())):
                # uvloop's plain transport holding nothing (see "Writing"): written here
                sent = _write_now(c.wfd, data)
                c.wheld = sent < len(data)
                if c.wheld:  # the rest (or, on an error, all of it) for the transport to queue
                    t.write(memoryview(data)[sent:] if sent else data)
            else:
                t.write(data)
                c.wheld = True
        except Exception as e:  # one connection's trouble must not cost the others their output
            LOG.verbose(f"Write to client id={c.id} addr={c.addr} failed: {type(e).__name__}: {e}")
        # Redis's reply list, while the transport holds what may be in it: after a flush bigger
        # than the reply buffer, or while one is held (nothing on the hot path: a small flush, or
        # a big one the kernel took whole with no layout committed, which leaves none)
        if (c.replies is not None or ((n > c.rb_size or c.write_paused) and t.get_write_buffer_size())) \
                and c.replica is None:
            _replylist.flushed(c, obuf)
    obuf.clear()
    c.out_mark = c.tot_net_out
    c.out_held = -1  # the transport was given output: a delivery asks it again (obuf.check_delivery)
    if c.write_paused:  # the peer is not keeping up: its output buffer limits apply
        if not _obuf.check(c):
            _clienteviction.note_if_noting(c)  # and its output counts under a memory limit


def flush_pending(srv: Server) -> None:
    """Server.flush_writes' body, the loop's before-sleep step: beforeSleep's work that must come
    before any reply goes out (the cluster's deferred state, the fast expire cycle, the AOF's
    write), then every client's queued output with one write each (Redis's
    handleClientsWithPendingWrites), then client eviction's pending pass.  Here, not in core.py,
    so that compiled it is a C function: the loop calls it once an iteration (queue_output
    schedules it), which at -P 1 is about once a command."""
    cl = srv.cluster
    if cl is not None and cl.todo:  # cluster_before_sleep, inline
        cl.before_sleep()
    if srv.expire_fast:  # beforeSleep's fast expire cycle, its DELs before the AOF write
        _expirecycle.fast(srv)
    aof = srv.aof
    if aof.buf:  # the AOF is written (and fsynced, if always) before any reply goes out
        aof.flush()
        if aof.fsynced_reploff != -1:  # WAITAOF's clients (the offset is also taken when read)
            srv.aof_synced()
    clients = srv.pending_writes
    srv.pending_writes = []
    # the last queued first, as Redis's handleClientsWithPendingWrites walks clients_pending_write
    # (each client is put at its head).  What that order decides is when each peer hears: after a
    # read event of PUBLISHes the publishers (queued after their messages' subscribers) get their
    # replies before the subscriber writes, and their next requests arrive while those run, so
    # the next iteration serves more of them with one write per subscriber (docs/speed-log.md,
    # 2026-11-28, h-pub)
    i = len(clients)
    while i:
        i -= 1
        flush_output(clients[i])  # type: ignore[arg-type]  # this module's Client, not yet typed as the protocol
    if srv.client_evict_pending:
        _clienteviction.evict_pending(srv)


# Output with big pieces in it is written as its pieces (transport.writelines: one writev with
# uvloop) rather than joined into one buffer first: a big value's reply in pieces (protocol/
# reply.py's `value`) then goes out without being copied at all, and a -P 16 batch of 10 KB
# replies is not copied into a new allocation (a heap grown and trimmed with brk, its pages faulted
# in) per batch.  The small pieces between big ones are joined: each as an iovec of its own costs
# the kernel more than a join of them costs here.  Big is R.PIECE_MIN bytes, the size from which a
# value's reply is made in pieces.
_PIECE_MIN = R.PIECE_MIN


def has_big_piece(obuf: list[bytes]) -> bool:
    """Whether queued output holds a piece of _PIECE_MIN bytes or more."""
    for piece in obuf:
        if len(piece) >= _PIECE_MIN:
            return True
    return False


def queue_replies(c: Client, out: list[bytes]) -> None:
    """A read event's replies (`out`, not empty) queued for the flush: each big piece (_PIECE_MIN
    bytes or more) by itself, uncopied, and the runs of small ones between them joined, each run
    one queued item (without a big one, all of `out`)."""
    n = len(out)
    if n == 1:
        if out[0]:
            queue_output(c, out[0])
        return
    start = 0
    i = 0
    for piece in out:  # (iterated, not indexed: a -P 16 batch of small replies pays no more than a sum of lengths)
        if len(piece) >= _PIECE_MIN:
            if i > start:
                _queue_run(c, out, start, i)
            queue_output(c, piece)
            start = i + 1
        i += 1
    if start == 0:
        data = _join(out)
        if data:
            queue_output(c, data)
    elif start < n:
        _queue_run(c, out, start, n)


def _queue_run(c: Client, out: list[bytes], start: int, end: int) -> None:
    """out[start:end], small pieces, queued as one item."""
    data = out[start] if end - start == 1 else _join(out[start:end])
    if data:
        queue_output(c, data)


def queue_output(c: Client, data: bytes) -> None:
    """Queue non-empty output of an open connection for the end-of-iteration flush."""
    c.tot_net_out += len(data)
    obuf = c.obuf
    obuf.append(data)
    if len(obuf) == 1:
        srv = c.server
        pending = srv.pending_writes
        pending.append(c)
        if len(pending) == 1:
            srv.call_soon(flush_pending, srv)


def write_out(c: Client, data: bytes) -> None:
    """Client.write's body: out-of-band output, queued (or, while the client runs a command of
    its own, added to that read event's replies)."""
    if data:
        srv = c.server
        _deliver(c, data, bool(srv.client_evict_limit))


def _deliver(c: Client, data: bytes, evict: bool) -> None:
    """write_out's work for non-empty `data`; `evict`: client eviction is on (the server's
    client_evict_limit), which fan_out reads once for all of a message's subscribers."""
    if c.closed or c.transport is None:
        return
    if c.running is not None:
        c.running.append(data)
        return
    queue_output(c, data)
    if evict:
        _clienteviction.changed(c)


def fan_out(subs: dict[Client, None], body: bytes) -> None:
    """A Pub/Sub message to each of `subs` (server/events/pubsub.py; Server.fan_out): `body` is the
    frame without its type byte, made once with '*' for the RESP2 subscribers and once with '>' (a
    push) for the RESP3 ones.  Per subscriber only the queueing for the end-of-iteration flush
    (one write per subscriber per loop iteration, as Redis's beforeSleep) and the output buffer
    limit check (obuf.check_delivery, cimported: a C call), in a compiled loop over C fields.
    Whether client eviction is on is read once, from the first subscriber's server (they share
    it, and no delivery changes the configuration)."""
    resp2 = resp3 = None
    evict = -1  # not read yet
    for c in tuple(subs):  # a subscriber dropped for its limit leaves `subs`
        if c.closed:
            continue
        if evict < 0:
            srv = c.server
            evict = 1 if srv.client_evict_limit else 0
        if c.resp == 3:
            if resp3 is None:
                resp3 = b">" + body
            _deliver(c, resp3, evict == 1)
        else:
            if resp2 is None:
                resp2 = b"*" + body
            _deliver(c, resp2, evict == 1)
        check_delivery(c)


def call_command(c: Client, cmd: CommandEntry, argv: list[bytes], t0: int | None, log_slow: bool) -> Any:
    """`Client.call`'s body, a function of its own so that compiled callers (the scripting engine's
    redis.call, engine.pxd) reach it as a C call, without a method lookup and argument parsing.
    The server is read once: a command cannot replace `c.server`.

    Timing is the fast loop's: a caller that started the clock (`t0`, execute()) is timed; for the
    rest (EXEC's and scripts' commands) a sampled command is timed on the first call of every
    eight, as `_run_fast` times it, and every call of the others."""
    srv = c.server
    calls = cmd.calls  # the calls before this one (no command runs itself inside its own run)
    timed = t0 is not None or not (calls & srv.sample_mask and cmd.sampled)
    start = 0  # the clock at the start, a C integer compiled (client.pxd)
    if timed:
        start = perf_clock_ns() if t0 is None else t0
    c.last_argv = argv
    tr = srv.tracking if c.tracking is not None else None
    if tr is not None:
        outer, tr.current = tr.current, c  # its invalidations now wait for its reply
    ops = srv.also_propagate
    if ops is not None:  # server/events/propagate.py: note what the command changes
        dirty = srv.dirty
        saved = c.prop_argv, c.prop_prevent, c.prop_force
        c.prop_argv = None
        c.prop_prevent = False
        c.prop_force = False
        srv.prop_depth += 1
    try:
        r = run_handler(cmd, c, argv)
    except CommandError as e:
        r = c.error_reply(e.msg, cmd, e.counted)
    except Exception as e:  # a bug must not take the connection down
        r = c.internal_error(cmd, e)
    if tr is not None:
        tr.current = outer
    if ops is not None:
        srv.prop_depth -= 1
        _propagate.note(srv, c, cmd, argv, dirty)
        c.prop_argv, c.prop_prevent, c.prop_force = saved
        if not srv.prop_depth:  # the outermost call: afterCommand's propagatePendingCommands
            _propagate.flush(srv, cmd)
    cmd.calls += 1
    if timed:
        cmd.timed_calls += 1
        dt = perf_clock_ns() - start
        cmd.usec += dt
        if srv.config.latency_tracking:
            cmd.note_latency(dt)
        if log_slow and dt >= srv.slowlog_ns:  # EXEC's and scripts' commands (execute() logs its own)
            c.note_slow(cmd, argv, dt)
    c.last_cmd = cmd
    # is_readonly first: no command that reads turns tracking on or off, so the client's
    # tracking after a read is the one it ran with
    if cmd.is_readonly and c.tracking is not None:
        _tracking.remember_read(c, cmd, argv)
    if srv.mem_limited:
        account(c, cmd, argv)
    return r


# ---- a transaction's state (MULTI, EXEC) ------------------------------------------------------
# Module functions, cpdef compiled (client.pxd) and cimported by server/commands/t_multi.py, so that
# MULTI and EXEC reach them as C calls: as Client methods each cost a Python method call and its
# argument parsing (~500-1,300 instructions; three per transaction, four with MULTI's).

def enter_multi(c: Client) -> None:
    """MULTI: an empty queue.  Only `multi` changed, and `plain` is kept current, so
    update_plain's result is `plain` and `queueing` trading places."""
    c.multi = []
    c.multi_error = False
    c.queueing = c.plain
    c.plain = False


def enter_exec(c: Client, argv: list[bytes], queue: list) -> None:
    """EXEC starts running `queue`: the client leaves MULTI (so the queued commands run rather
    than queue) and is in EXEC, where update_plain's result is neither `plain` nor `queueing`
    (nothing else changed since it was last current).  Its `woff` is noted first: a WAIT inside
    counts acknowledgements of what came before EXEC.  EXEC keeps what leave_exec restores
    (`queueing` and `plain_epoch` before this) in its own locals: no record of them is made."""
    c.woff = write_offset(c)
    c.multi = None
    c.multi_error = False
    c.in_exec = True
    c.exec_argv = argv
    c.exec_queue = queue
    c.plain = c.queueing = False


def leave_exec(c: Client, was_queueing: bool, epoch: int) -> None:
    """EXEC is over.  Unless a queued command changed something update_plain reads (which runs
    it: the epoch moved), `plain` is what `queueing` was before EXEC (`was_queueing`, at
    `epoch`): only `multi` and `in_exec` differ, and neither is set now."""
    c.in_exec = False
    c.exec_argv = c.exec_queue = None
    if epoch == c.plain_epoch:
        c.plain = was_queueing
    else:
        c.update_plain()


def write_offset(c: Client) -> int:
    """Client.write_offset's body (see there).  The server is read as its field base (client.pxd):
    compiled, its replication record and offset are C fields, not two attribute lookups."""
    if c.in_exec or not c.running:
        return c.woff
    srv = c.server
    return srv.repl.master_repl_offset


def _run_fast(c: Client, out: list[bytes], t_prev: int, base: bytes | bytearray, base_done: int,
              fed: int, start: int = 0, first: list[bytes] | None = None) -> None:
    """Run the commands hiredis has complete for `c`, appending their replies to `out` (the
    read event's batch, or process()'s).  A function rather than a Client method so that, compiled,
    its `cmd` is a typed local (client.pxd): the command's fields are then read as C struct fields.
    `fed`: how many bytes of `base` hiredis has been given (-1: all); the rest is fed FEED_SLICE
    bytes at a time as hiredis runs out of complete commands, and all of it before returning.
    0 (a read event's fresh batch, `base` its bytes): none, and the request path's own walk
    (protocol/multibulk.py) takes the whole commands first, without hiredis; at the first thing it
    does not take, the rest is judged from that command boundary on (`_rest_for_hiredis`: the read
    gate) and goes to hiredis or the exact parser, so partial commands, inline ones, big
    arguments and every error go where they went before.  `start`, `first` (a read that completes
    a held command, the client's tail: read_event): the walk starts at `start`, the end of that
    command in `base`, whose argv `first` runs first."""
    # The per-command cost of this loop is the server's floor: keep it free of avoidable
    # attribute loads and calls (measure with bench/instr.sh before and after a change).
    # Timing: `t_prev` is the wall clock (ns) at the end of the last timed step, or 0.  A
    # timed command starts from it instead of reading the clock again, so a timed command
    # costs one clock read, and the read-event's own clock read times the first command.
    # The interval then also holds this loop's parse and dispatch of the command, which is
    # part of what it cost; Redis 7.0 times commands with the wall clock (ustime) as well.
    gets = c._gets
    has_data = c._has_data
    nbase = len(base)
    if fed < 0:
        fed = nbase
    # (fed 0: `base` is the read's bytes; the walk's rest is the query buffer's: clientbufs.pending)
    walking = fed == 0
    # hiredis holds `base` from the walk's `hpos` on (its boundary where it handed over, else 0),
    # after its `hdone` of the commands run here: what the exact parser re-reads from, and all
    # `_raw` keeps (no walk: _NO_WALK's 0 and 0)
    walk = MultibulkWalk(base) if walking else _NO_WALK  # type: ignore[arg-type]
    if start:  # (set here: a second argument to the walk's making costs every read its parsing)
        walk.pos = start
    c.walk = walk if walking else None
    srv = c.server
    dispatch = srv.fast_dispatch  # the server's (its generation's); typed (client.pxd): its get is a C dict lookup
    done = 0
    clean = False
    last = None
    last_name = b""  # the last name dispatch found, and its command (see the lookup below)
    last_found = None
    found: list = []  # the other names it found in this batch, each followed by its command
    sample = srv.sample_mask
    track = srv.config.latency_tracking
    ready = srv.ready_keys
    # cluster mode: the slots route() serves here as they stand (server/cluster/state.py's
    # `served`, see _cluster_serves).  None standalone.  Fixed for the server's life
    # (cluster-enabled is read at start; the map changes in place).
    served = srv.cluster_served
    mm = srv.mem_limited  # re-read after execute(), which may run CONFIG SET
    # Propagating (server/events/propagate.py): the batch is one level of nesting, and `dirty` runs
    # on from one command's end to the next one's start.  Re-read after execute(), which runs
    # CONFIG SET; a command run here cannot turn propagation on or off.
    prop = srv.also_propagate is not None
    dirty = srv.dirty
    extra = mm or prop  # the branch after a command: memory accounting, propagation
    aof = srv.aof
    if prop:
        srv.prop_depth += 1
    try:
        while True:
            if walking:
                if first is None:
                    argv = walk.next()
                else:  # a held command's, completed by this read (read_event)
                    argv = first
                    first = None
                if argv is None:  # not a whole common-case command: the rest is judged, and is
                    # hiredis's from this boundary on, as if it had parsed the ones before itself
                    if fed < nbase:
                        if walk.short and nbase - walk.pos <= _TAIL_MAX:
                            # the read ran out inside a command: its bytes are the client's tail,
                            # walked again with the next read (see _TAIL_MAX)
                            c._tail = HeldCommand(walk)
                            walking = False
                            c.walk = None
                            clean = True
                            break
                        if not _rest_for_hiredis(c, walk, done):
                            break  # the exact parser's from here
                        walking = False
                        c.walk = None
                        fed = _feed_slice(c, base, fed, nbase)
                        continue
                    walking = False
                    c.walk = None
                    clean = True
                    break
                fed = walk.pos  # (what the walk took counts as given to hiredis)
            else:
                try:
                    frame = gets()
                except READER_ERRORS:  # (a RESP3 map or set with an aggregate key raises TypeError)
                    frame = None
                if not _is_argv(frame):
                    if frame is False:  # mid-frame: hiredis may have consumed a partial command's
                        if fed < nbase:  # bytes; tested here, not for every command
                            fed = _feed_slice(c, base, fed, nbase)
                            continue
                        break
                    # not a multibulk of bulk strings: the exact parser judges
                    c._enter_exact(base, base_done + done - walk.hdone, walk.hpos)
                    return
                argv = frame  # a list (compiled, `argv` is typed one: its name and length C reads)
                if not argv:  # *0: an empty command, silently skipped as Redis does (and not
                    # counted in `done`: the exact parser's next_command() never returns one either)
                    if not has_data():
                        if fed < nbase:
                            fed = _feed_slice(c, base, fed, nbase)
                            continue
                        clean = True
                        break
                    continue
            # A client sends the same spelling every time: the previous command's name, compared
            # (its length, then a memcmp, compiled), saves the hash of a new bytes object and the
            # dict probe (~380 instructions) for every repeat of it in the batch; the batch's
            # other names found so far (`found`, a few: MULTI, SET, INCR, EXEC of pipelined
            # transactions) are compared before a probe too.  The table only changes at start-up
            # (rename-command) or in place for the same records (a family imported on first
            # use), so a name's command never changes within a batch.
            name = argv[0]
            if name == last_name:
                cmd = last_found
            else:
                cmd = None
                for i in range(0, len(found), 2):
                    known = found[i]
                    if known == name:
                        cmd = found[i + 1]
                        break
                if cmd is None:
                    cmd = dispatch.get(name)
                    if cmd is not None and len(found) < _FOUND_MAX:
                        found.append(name)
                        found.append(cmd)
                if cmd is not None:
                    last_name = name
                    last_found = cmd
            done += 1
            if cmd is not None and ((c.plain and (served is None or _cluster_serves(served, c, cmd, argv)))
                                    # in MULTI, what a transaction does not queue (EXEC, DISCARD,
                                    # WATCH, ...) runs here too: execute()'s other checks all pass
                                    # for a `queueing` client but the replica's (see update_plain)
                                    or (c.queueing and served is None and not cmd.queue_in_multi
                                        and not cmd.no_multi
                                        and (c.replica is None or not _is_replica(c)))):
                # the arity test execute() and redis.call make too (a C call, compiled); with a
                # memory limit, evict first, and leave a refusal to execute()
                if cmd.arity_ok(len(argv)) and not (extra and (
                        (mm and refuses(c, cmd, argv))
                        # an AOF that cannot be written: execute() answers a write MISCONF
                        or (prop and not (aof.last_write_ok and aof.bio.error is None)
                            and c._disk_denies(cmd, argv)))):
                    last = cmd
                    calls = cmd.calls  # the calls before this one: the first of every eight is timed
                    if calls & sample and cmd.sampled:
                        t_prev = 0
                        try:
                            r = run_handler(cmd, c, argv)
                        except CommandError as e:
                            r = c.error_reply(e.msg, cmd, e.counted)
                        except Exception as e:  # a bug must not take the connection down
                            r = c.internal_error(cmd, e)
                    else:
                        t0 = t_prev or _time_ns()
                        try:
                            r = run_handler(cmd, c, argv)
                        except CommandError as e:
                            r = c.error_reply(e.msg, cmd, e.counted)
                        except Exception as e:
                            r = c.internal_error(cmd, e)
                        t_prev = _time_ns()
                        dt = t_prev - t0
                        cmd.usec += dt
                        cmd.timed_calls += 1
                        if track:  # latency-tracking, in whole microseconds as Redis records it
                            cmd.note_latency(dt)
                        if dt >= srv.slowlog_ns and r is not BLOCKED:  # a blocked one logs when served
                            c.note_slow(cmd, argv, dt)
                    # counted once it ran, as call() counts: INFO does not see its own call yet (no
                    # command runs itself inside its own run, so nothing counted this one meanwhile)
                    cmd.calls = calls + 1
                    if extra:
                        if mm:
                            account(c, cmd, argv)
                        # a rewrite left by a command that then changed nothing must not
                        # stand in for the next one: done() clears it
                        if prop and (srv.dirty != dirty or srv.also_propagate or c.prop_prevent
                                     or c.prop_force or c.prop_argv is not None):
                            dirty = _propagate.done(srv, c, cmd, argv, dirty)
                    if not cmd.queue_in_multi:
                        # EXEC's commands may have run CONFIG SET: re-read what execute() may change
                        mm = srv.mem_limited
                        if prop != (srv.also_propagate is not None):
                            prop = not prop
                            srv.prop_depth += 1 if prop else -1
                            dirty = srv.dirty
                        extra = mm or prop
                    if r is BLOCKED:
                        c.last_argv = argv  # what serving it reports (slow log, memory account)
                        if fed < nbase:  # what follows waits in hiredis, as after any read
                            if walking and not _rest_for_hiredis(c, walk, done):
                                break  # (the rest waits in the exact parser)
                            c._feed(base, fed, nbase - fed)
                            fed = nbase
                        clean = not has_data()  # blocked on the chunk's last command: a boundary
                        break
                    R.add_reply(out, r)  # (a big value's reply in pieces: protocol/reply.py's value)
                    if ready:
                        # a write woke blocked clients: serve them now, before the next command,
                        # each a top-level command of its own
                        if prop:
                            srv.prop_depth -= 1
                            prop = False
                            handle_ready_keys(srv)
                            prop = True
                            srv.prop_depth += 1
                            dirty = srv.dirty
                        else:
                            handle_ready_keys(srv)
                        t_prev = 0
                    if not walking and not has_data():
                        if fed < nbase:
                            fed = _feed_slice(c, base, fed, nbase)
                            continue
                        clean = True
                        break
                    continue
            elif (cmd is not None and c.queueing and served is None and not mm and cmd.queue_in_multi
                  and cmd.arity_ok(len(argv)) and not cmd.no_multi
                  and not (prop and not (aof.last_write_ok and aof.bio.error is None))):
                # Inside MULTI: queued as execute() queues it, whose other checks all pass for a
                # `queueing` client (see Client.update_plain).  A Spark sink's transaction queues
                # thousands of commands.
                queue = c.multi  # queueing: in MULTI (server/base/multiqueue.py: the command, then its argv)
                queue.append(cmd)  # type: ignore[union-attr]
                queue.append(argv)  # type: ignore[union-attr]
                c.last_argv = argv
                last = cmd
                out.append(_QUEUED)
                if not walking and not has_data():
                    if fed < nbase:
                        fed = _feed_slice(c, base, fed, nbase)
                        continue
                    clean = True
                    break
                continue
            t_prev = 0
            if prop:
                srv.prop_depth -= 1
                prop = False
            c.execute(argv, out)  # its Client.call is a top-level one
            last = c.last_cmd
            mm = srv.mem_limited
            prop = srv.also_propagate is not None
            extra = mm or prop
            if prop:
                srv.prop_depth += 1
                dirty = srv.dirty
            if c.closed or (c.obuf_watch and c.obuf_reached(out)):
                clean = True  # dropped (at its output limit): nothing more of its input runs
                break
            if c.blocked or c.close_after_reply:
                if fed < nbase:
                    if walking and not _rest_for_hiredis(c, walk, done):
                        break
                    c._feed(base, fed, nbase - fed)
                    fed = nbase
                clean = not has_data()
                break
            if not walking and not has_data():
                if fed < nbase:
                    fed = _feed_slice(c, base, fed, nbase)
                    continue
                clean = True
                break
    finally:
        c.walk = None
        if prop:
            srv.prop_depth -= 1
    if last is not None:
        c.last_cmd = last
    if clean:
        c._raw = None
    elif c.exact is None:
        if (_oversized_tail_header(base, c.server.config.proto_max_bulk_len)
                or unconsumed(c.reader) > INLINE_MAX_SIZE):
            # hiredis would wait for the announced data or the header's end; Redis rejects
            # an oversized bulk header, or a header line over 64 KiB, at once.
            c._enter_exact(base, base_done + done - walk.hdone, walk.hpos)
            return
        if c._raw is None:
            if walk.hpos:  # a fresh read walked up to `hpos`: only what hiredis holds is kept
                c._raw = base = bytearray(memoryview(base)[walk.hpos:])
            else:
                c._raw = bytearray(base)
        c._raw_done = c._base_done = base_done + done - walk.hdone
        c._base = base
        if _clientbufs.partial_read(c):  # a command left partly received: a big argument's room
            # A big argument's data still to come goes to the exact parser, which reads it into
            # a buffer of its own (server/net/bigread.py): fed on to hiredis it was also kept in `_raw` (in case of a
            # switch), every read of it scanned for frame markers, and a value past _PARTIAL_LIMIT
            # parsed a second time by the exact parser anyway.
            c._enter_exact(c._raw, c._raw_done)


def _spill_tail(c: Client, tail: HeldCommand) -> None:
    """The tail to hiredis, held as a fresh read that ended inside a command leaves it there
    (`_raw` its bytes, none of its commands run): for the paths that read on from hiredis (a
    blocked client's read, process())."""
    c._tail = None
    buf = tail.buf
    c._feed(buf)
    c._raw = c._base = bytearray(buf)
    c._raw_done = c._base_done = 0


def _tail_parsed(tail: bytearray) -> int:
    """How much of a tail (a command's first bytes, every header of them one the walk takes)
    hiredis would have parsed had it been given it: its count line, its whole bulks, then the
    next item's type byte, as `_held` reads hiredis's position."""
    end = len(tail)
    cr = tail.find(b"\r\n", 0, 24)
    if cr < 0:
        return 1  # the '*'
    pos = cr + 2
    while True:
        bulk = _bulk_at(tail, pos, end)
        if bulk is None:
            return pos + 1 if pos < end else pos
        pos = bulk[1]


_ROUTED = ASKING | ASKED  # a client with either goes through route(), which clears them


def _cluster_serves(served: bytearray, c: Client, cmd: CommandEntry, argv: list[bytes]) -> bool:
    """Cluster mode: True when route() (server/cluster/routing.py) would serve the command here
    and leave the client's flags as they are, so the fast loop may run it; False sends it to
    execute() and route(), which decide.  True only for a client without ASKING (or ASKED, which
    route() clears), and a command whose key positions are fixed for its argument count (known
    once route() has seen such a call) with no key, or keys all of one slot that `served` (the
    cluster state's map: this node's, stable, the cluster ok) has."""
    if c.cluster_flags & _ROUTED:
        return False
    fixed = cmd.fixed_key_positions
    positions = fixed.get(len(argv))
    if positions is None:
        return False
    slot = keys_slot(argv, positions)
    if slot >= 0:
        return served[slot] != 0
    return slot == -1  # no key: served here whatever the slot map says (-2: more than one slot)


def _feed_slice(c: Client, base: bytes | bytearray, fed: int, nbase: int) -> int:
    """Give hiredis the next FEED_SLICE bytes of `base` after `fed`; how many it has now."""
    n = nbase - fed
    if n > FEED_SLICE:
        n = FEED_SLICE
    c._feed(base, fed, n)
    return fed + n


def _is_argv(frame: Any) -> bool:
    """Whether a frame hiredis parsed is a list of bytes, a command the fast loop runs (anything
    else, a top-level string, a map, a nested array, is the exact parser's to judge).  Compiled,
    a type test per element; interpreted, join() makes the same test in C."""
    if type(frame) is not list:
        return False
    if cython.compiled:
        for a in frame:
            if type(a) is not bytes:
                return False
        return True
    try:
        _join(frame)
    except TypeError:
        return False
    return True


def _only_bulk_payloads(data: bytes, at_boundary: bool = True) -> bool:
    """May hiredis parse `data` (`at_boundary`: it starts a command)?  hiredis would read a RESP3
    set or push frame as a list, a command to the fast loop, skip an attribute, take a status or
    verbatim frame inside a request for a bulk, and a length with leading zeros, where Redis reads
    an inline command or refuses the frame (found by the resp fuzz target,
    tests/fuzz/targets/resp.py).  From a command boundary the frames are walked as Redis reads them
    (protocol/multibulk.py's frames_biggest), which also finds a frame after a bulk whose CRLF is two other bytes
    (neither Redis nor hiredis checks those).  A read that continues a command cannot be walked
    from here: every "\\n+" and "\\n=" must be the first byte of a bulk payload (_markers_are_bulk),
    and with a '~', '>' or '|' anywhere, or a '+' or '=' not at a line's start, the exact parser
    judges it.  The arguments "+" and "+inf" (XRANGE - +, ZRANGEBYSCORE -inf +inf) are counted off
    first, whole with their header and terminator, by C-level counts: the per-marker walk costs
    ~1 us each."""
    if at_boundary:
        return frames_biggest(data) >= 0
    if 126 in data or 62 in data or 124 in data:
        return False
    if 43 not in data and 61 not in data:  # (memchr; the counts below step through every byte:
        return True  # ~160 us for a 64 KiB read of a 10 KB value's middle, where these take ~1)
    markers = n = data.count(b"\n+") + data.count(b"\n=")
    if n:
        n -= data.count(b"\n$1\r\n+\r\n") + data.count(b"\n$4\r\n+inf\r\n")
        if n and not (_markers_are_bulk(data, b"\n+") and _markers_are_bulk(data, b"\n=")):
            return False
    return data.count(b"+") + data.count(b"=") == markers


def _rest_for_hiredis(c: Client, walk: MultibulkWalk, done: int) -> bool:
    """The read gate, for the rest of a fresh read (`walk.buf`) that its walk did not take (from `walk.pos`, a
    command boundary; the `done` commands before it ran): may hiredis take it?  If so, that boundary
    is recorded on the walk (`hpos`, `hdone`: where hiredis's bytes start).  Its frames are walked as
    Redis reads them (`walk.rest()`; see _only_bulk_payloads for what hiredis would misread).  A
    read of 32 KiB or more, or one announcing a big argument (32 KiB or more: a smaller read has
    only its start, as a 16 KiB read of bigread's has), also sets the query buffer's room for it
    (clientbufs.big_read), and one still arriving is the exact parser's at once, which reads the
    rest of it into a buffer of its own (server/net/bigread.py): fed to hiredis, the read was also
    copied into hiredis's buffer in FEED_SLICE pieces, into `_raw`, and into the parser's buffer.
    False when the exact parser has the rest now (from that boundary: no copy of the read)."""
    biggest = walk.rest()
    pos = walk.pos
    base = walk.buf
    # a read that may bring a big argument, or one whose start it announces (a 16 KiB read of bigread's)
    if (walk.end >= _BIG or biggest >= _BIG) and _clientbufs.big_read(c, base, biggest, pos):
        biggest = -1
    if biggest < 0:
        c._enter_exact(base, 0, pos)
        return False
    walk.hpos = pos
    walk.hdone = done
    return True


def _markers_are_bulk(data: bytes, marker: bytes) -> bool:
    """Is every `marker` ("\\n+", "\\n=", ...) in `data` the first byte of a bulk payload, i.e. right
    after a "\\n$<len>\\r\\n" header and followed by "\\r\\n" <len> bytes later?  Then no status or
    verbatim frame hides in the chunk and hiredis may parse it; anything unclear goes to the exact
    parser (a payload crafted to look like a header and a frame at once can still pass: the cost
    is accepting such garbage as its bulk reading, never a wrong parse of valid traffic)."""
    i = data.find(marker)
    while i >= 0:
        j = i - 1  # the header's '\r'
        k = j - 1
        while k >= 0 and 48 <= data[k] <= 57:
            k -= 1
        if j < 1 or data[j] != 13 or k == j - 1 or k < 1 or data[k] != 36 or data[k - 1] != 10:
            return False
        end = i + 1 + int(data[k + 1 : j])
        if data[end : end + 2] != b"\r\n":
            return False
        i = data.find(marker, i + 1)
    return True


def _bulk_at(raw: bytes | bytearray, pos: int, end: int) -> tuple[int, int] | None:
    """The bulk string at `pos`, if it is whole before `end`: (its length, the position after it)."""
    cr = raw.find(b"\r\n", pos, min(end, pos + 24))
    if cr <= pos or raw[pos] != 36:
        return None
    n = string2ll(bytes(raw[pos + 1 : cr]))
    if n is None or n < 0 or cr + 4 + n > end:
        return None
    return n, cr + 4 + n


def _oversized_tail_header(buf: bytes | bytearray, max_bulk_len: int) -> bool:
    """Does the buffer end inside a command whose last header announces a bulk over
    proto-max-bulk-len (or a multibulk of 10+ digits)?  Then the exact parser judges it now, as
    Redis does on reading the header, instead of hiredis waiting for the data."""
    tail = bytes(buf[-24:])
    i = max(tail.rfind(b"$"), tail.rfind(b"*"))
    if i < 0:
        return False
    j = i + 1
    while j < len(tail) and 48 <= tail[j] <= 57:
        j += 1
    digits = tail[i + 1 : j]
    if not digits:
        return False
    if tail[i] == 42:
        return len(digits) >= 10
    return len(digits) > 19 or int(digits) > max_bulk_len


def rogue_reply(c: Client, reply: bytes) -> None:
    """A replica's command made a reply: it is dropped (_addReplyToBufferOrList's check), and an
    error is logged as afterErrorReply logs an error sent down a replication link."""
    cmd = c.last_cmd
    name = cmd.fullname if cmd is not None else "<unknown>"
    LOG.warning(f"Replica generated a reply to command '{name}', disconnecting it: {client_info_line(c)}")
    if reply[:1] == b"-":
        c.server.stat_unexpected_error_replies += 1
        LOG.warning(f"== CRITICAL == This master is sending an error to its replica: '{logged_error(reply)}' "
                    f"after processing the command '{name}'")
    c.close_after_replies()


def keep_alive(sock: Any, interval: int) -> None:
    """anetKeepAlive (tcp-keepalive): probes after `interval` idle seconds, then every third of
    it, the peer dead after three unanswered; Linux's defaults (two hours) find a vanished
    client far too late.  Best effort, as Redis ignores a failure here."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        if hasattr(socket, "TCP_KEEPIDLE"):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, interval)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, max(1, interval // 3))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 3)
    except OSError:
        pass


def format_addr(addr: Any) -> str:
    if not addr:
        return ""
    if isinstance(addr, tuple):
        host, port = addr[0], addr[1]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return str(addr)
