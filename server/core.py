"""The server object: configuration, databases, connected clients, statistics, the cron.

There is one `Server` per process, reachable from every client as `client.server`.  Everything
here runs on the event loop thread; commands execute one at a time, which is raxdb's atomicity
exactly as Redis's single thread is Redis's.

The cached clock: `now_ms` is refreshed at every read event and cron tick, and commands use it
for expiry decisions, so a key cannot expire half-way through a command or a pipeline batch
(Redis's server.mstime plays the same role).

The fields the per-command paths read (the clock, propagation's state, the memory limit, ...) are
declared in the base class, server/base/fields.py's ServerFields: compiled, C struct fields.

Bookkeeping that most workloads never use (WATCH, keyspace notifications, blocked clients,
MONITOR, CLIENT PAUSE) is guarded by emptiness checks so it costs nothing until it is used.
"""

from __future__ import annotations

import asyncio
import collections
import errno
import functools
import operator
import os
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from raxdb.server.admin import crashreport, supervise
from raxdb.server.admin.modules import log_load_failure
from raxdb.server.admin.shutdown import Shutdown
from raxdb.server.base import clock, latency, proctitle
from raxdb.server.base.clock import PAUSE_FOREVER
from raxdb.server.base.fields import ServerFields
from raxdb.server.base.log import LOG
from raxdb.server.base.version import RAXDB_BUILD_ID, RAXDB_VERSION, VERSION, VERSIONS
from raxdb.server.config import oomscore
from raxdb.server.config.options import Config, ConfigError
from raxdb.server.conn import clientbufs, clienteviction, obuf, unixaddr
from raxdb.server.events import expirecycle, hashexpire, keyaccess, propagate
from raxdb.server.events.notify import attach as attach_notify
from raxdb.server.events.propagate import attach as attach_propagate
from raxdb.server.memory.evict import STARTUP, info_used_memory, resize_tables
from raxdb.server.memory.evict import attach as attach_evict
from raxdb.server.memory.lru import attach as attach_keyspace
from raxdb.server.net import blocking, tls, unixsocket
from raxdb.server.net.accept import Acceptor
from raxdb.server.net.blocking import attach as attach_blocking
from raxdb.server.net.blocking import handle_ready_keys
from raxdb.server.net.client import Client, fan_out, flush_pending
from raxdb.server.net.migratecache import close_idle
from raxdb.server.persistence import loading
from raxdb.server.persistence.aof import AOF
from raxdb.server.persistence.snapshot import LoadError, Persistence
from raxdb.server.replication.state import attach as attach_replication
from raxdb.server.replication.state import update_gate
from raxdb.server.scripting import functions, scripts
from raxdb.server.security.acl import attach as attach_acl
from raxdb.server.table.registry import TABLE
from raxdb.storage.keyspace import Database

if TYPE_CHECKING:
    from raxdb.server.cluster.manager import Cluster
    from raxdb.server.events.tracking import Tracking

# bind addresses with a '-' prefix are skipped when they fail for one of these reasons
_UNAVAILABLE = {errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT, errno.EPROTONOSUPPORT, errno.ESOCKTNOSUPPORT,
                errno.EINVAL, errno.EOPNOTSUPP, None}


if TYPE_CHECKING:  # checked against the protocol the lower layers work with; no base at run time
    from raxdb.server.base import interfaces

    _Declared = interfaces.Server
else:
    _Declared = object


class Server(ServerFields, _Declared):
    def __init__(self, config: Config) -> None:
        LOG.role = "M"  # initServer: the log's lines are the server's from here
        self.config = config
        # the commands of the generation it answers as (compat-version), in tables of its own
        self.redis_version = VERSIONS[config.compat_version]  # INFO, HELLO, LOLWUT, the RDB's redis-ver
        self.table = TABLE.view(config.compat_version)
        if config.renames:
            self.table.rename(config.renames)
        self.fast_dispatch = self.table.fast_dispatch  # the hot loop's (changed in place, never replaced)
        self.dbs = [Database(i) for i in range(config.databases)]
        for db in self.dbs:
            db.expired_hook = functools.partial(keyaccess.expired, self)
        attach_keyspace(self)  # dbs read the cached clock (access times); LFU follows the config
        self.clients: dict[int, interfaces.Client] = {}
        self.next_client_id = 1
        attach_acl(self).load_at_startup()  # users exist before any client (scripts' included)
        self.loop: asyncio.AbstractEventLoop | None = None
        # Clients with queued output (Client.obuf), flushed once per loop iteration after its reads
        # by flush_writes, which the first queued output schedules with call_soon.  Without a
        # running loop (in-process harnesses) the flush runs at once (operator.call: a C call, so
        # a harness counts no interpreted frame the loop's call_soon would not make).
        self.pending_writes: list[interfaces.Client] = []
        self.call_soon: Callable[..., Any] = operator.call
        # Pub/Sub delivery of one message to a channel's subscribers (server/events/pubsub.py)
        self.fan_out: Callable[[dict[Any, None], bytes], None] = fan_out
        self.listeners: list[interfaces.Listener] = []  # TCP: CONFIG SET port / bind replace them
        self.unix_listener: interfaces.Listener | None = None  # `unixsocket` (server/net/unixsocket.py)
        self.tls_listeners: list[interfaces.Listener] = []  # `tls-port` (server/net/tls.py)
        self.pid = os.getpid()
        self.supervised = "no"  # set by main (server/admin/supervise.py): "upstart", "systemd" or "no"
        self.daemonized = False
        # Called once on the loop when the server serves (listening, its data loaded): how an
        # embedding caller (raxdb.embed, through main) learns that it is up without reading the log.
        self.on_ready: Callable[[], None] | None = None
        self.run_id = os.urandom(20).hex()
        self.clock_shift_us = 0  # the clock (server/base/clock.py): on the wall clock until a test moves it
        self.clock_frozen = False
        self.clock_advanced_us = 0
        self.start_time = time.time()
        self.now_ms = int(self.start_time * 1000)
        self.shutting_down = False
        self.shutdown_event: asyncio.Event | None = None
        self.cron_handle: asyncio.TimerHandle | None = None
        self.cronloops = 0
        self.watchdog_period = 0  # ms, as applied (server/admin/crashreport.py); 0: no software watchdog
        # statistics (INFO stats)
        self.stat_numconnections = 0
        self.stat_rejected_conn = 0
        self.stat_net_input_bytes = 0
        self.stat_net_output_bytes = 0
        self.stat_net_repl_input_bytes = 0  # what a replica reads from its master (server/replication/replica.py)
        self.stat_keyspace_hits = 0
        self.stat_keyspace_misses = 0
        self.stat_expired_keys = 0
        self.stat_lazyfreed = 0  # INFO lazyfreed_objects (server/memory/lazyfree.py)
        # client eviction (server/conn/clienteviction.py): the limit (0: off), the noted memory of the
        # evictable clients, an eviction waiting for the end of the loop iteration, INFO's count
        self.client_evict_limit = 0
        self.clients_mem = 0
        self.client_evict_pending = False
        self.stat_evicted_clients = 0
        self.clients_cron = clientbufs.ClientsCron(self)  # Redis's buffer sizes per client, resized
        self.stat_total_error_replies = 0
        self.stat_unexpected_error_replies = 0
        self.errorstats: dict[str, int] = {}
        # (time ms, commands, net in, net out) every 100 ms: instantaneous_* in INFO stats
        self.ops_samples: collections.deque[tuple[int, ...]] = collections.deque(maxlen=16)
        self.slowlog: collections.deque[Any] = collections.deque()
        self.slowlog_next_id = 0
        self.monitors: list[interfaces.Client] = []
        self.dirty = 0  # changes since the last save (INFO rdb_changes_since_last_save)
        self.lastsave = int(self.start_time)
        self.pause_until_ms = 0  # the pause in force (0: none), of all `pauses`
        self.pause_writes_only = False
        self.pauses: dict[str, tuple[int, bool]] = {}  # purpose -> (until ms, writes only)
        self.watchers = 0  # clients with WATCHed keys (guards modified-key work)
        # Client-side caching (server/events/tracking.py): None until the first CLIENT TRACKING ON.
        self.tracking: Tracking | None = None
        self.notify_flags = 0  # keyspace notification classes enabled (0: none)
        # The duration (ns) from which a command goes to Client.note_slow: slowlog-log-slower-than or
        # latency-monitor-threshold, whichever is lower (never, when neither is set); in sync below.
        self.slowlog_ns = 0
        self.sample_mask = 7
        self._sync_slowlog()
        for name in ("slowlog-log-slower-than", "latency-monitor-threshold"):
            config.on_change.setdefault(name, []).append(lambda _v: self._sync_slowlog())
        # Sampled commands timed on every call until their first timed one (server/base/latency.py).
        self.sampling_paused: list[tuple[Any, int]] = []
        config.on_change.setdefault("latency-tracking", []).append(
            lambda v: latency.time_next_calls(self) if v == "yes" else None)
        self.busy_script: Any = None  # a script running past busy-reply-threshold (server/scripting/busy.py)
        # maxmemory (server/memory/evict.py): the limit in bytes (0: none), keys created since they were
        # last counted (None while there is no limit), the OOM state when the command started.
        self.maxmemory = 0
        self.mem_limited = False  # maxmemory != 0, kept with it (evict._apply): a C field's truth test
        self.mem_created: list[tuple[Database, bytes]] | None = None
        self.mem_dbs: list[Database] = []  # the databases the figure walks (evict.used_memory)
        # True while the figure was within the limit when last measured and what grew it since
        # fits in `mem_room` (the limit less that measure, less each counted write's growth): the
        # measure before a command is then skipped.  A created key, a connection, a client's
        # buffers, a new TTL or a replication backlog clear it.
        self.mem_ok = False
        self.mem_room = 0
        self.mem_nexp = 0  # the keys with a TTL in the databases counted, at that measure
        self.pre_command_oom = False
        self.stat_evicted_keys = 0
        attach_notify(self)  # Pub/Sub registry, notify-keyspace-events, expiry events and WATCH
        attach_blocking(self)  # the blocking registry, ready keys, CLIENT UNBLOCK
        # Hook: serving the clients blocked on keys that became ready, for the layers below net/
        # that make keys ready outside a command (eviction's timer).
        self.serve_ready_keys: Callable[[], None] = functools.partial(handle_ready_keys, self)
        # Hooks: the script cache and the function libraries, made when first used, for the layers
        # below scripting/ that judge a script by the flags it declares (table/scriptflags.py).
        self.script_cache: Any = None  # EVAL's cache, made by the first script (server/scripting/scripts.py)
        self.script_cache_of: Callable[[], Any] = functools.partial(scripts.cache, self)
        self.functions_engine: Any = None  # the libraries, made by the first (server/scripting/functions.py)
        self.function_registry: Callable[[], Any] = functools.partial(functions.registry, self)
        attach_evict(self)  # maxmemory: memory accounting and eviction
        attach_propagate(self)  # also_propagate: what the AOF and replicas are fed
        expirecycle.attach(self)  # the active expire cycle's state; `expire_fast`: a fast cycle may be due
        attach_replication(self)  # replication ID, offset, backlog (srv.repl)
        # While a replica refuses some commands (READONLY, MASTERDOWN): no client is plain and
        # execute() asks the link (server/replication/replica.py).
        self.replica_gate = False
        # While a failed save refuses writes (stop-writes-on-bgsave-error; server/persistence/snapshot.py):
        # no client is plain and execute() answers MISCONF.
        self.rdb_gate = False
        # Faults armed by the DEBUG FAULT test control (server/net/faults.py): an error fault (while
        # one is, no client is plain and execute() asks it), and the reply delay and the refusal.
        self.fault_error: Any = None
        self.faults: Any = None
        # Cluster mode (server/cluster/): made in serve() when cluster-enabled is yes; while it is,
        # the fast loop runs a command only if `cluster_served` (the cluster state's per-slot map,
        # kept true by the state itself) says its slot is served here as it stands, and execute()
        # asks `cluster_route` where each command's slot is served.
        self.cluster: Cluster | None = None
        self.cluster_route: Callable[[Any, Any, list[bytes]], bytes | None] | None = None
        self.cluster_served: bytearray | None = None
        self.cluster_script_check: Callable[[Any, Any, list[bytes]], bytes | None] | None = None
        self._init_introspection()

    def flush_writes(self) -> None:
        """Write every client's queued output, one write per client, after beforeSleep's steps
        that come first (server/net/client.py's flush_pending, which the loop calls itself)."""
        flush_pending(self)

    def aof_synced(self) -> None:
        """WAITAOF's offset (what the AOF's fsyncs reached), and the clients it wakes: before the
        replies go out, and from the cron (an everysec fsync ends on its own thread)."""
        self.aof.update_fsynced()
        if self.repl.master.waiting_aof:
            self.repl.master.serve_waiting_aof()

    def cluster_before_sleep(self) -> None:
        """The cluster's deferred work (clusterBeforeSleep: its state, nodes.conf), before any
        reply is written, as Redis's beforeSleep does it before handleClientsWithPendingWrites."""
        cl = self.cluster
        if cl is not None and cl.todo:
            cl.before_sleep()

    def _init_introspection(self) -> None:
        """State for INFO, CONFIG and CLIENT PAUSE; config hooks that make settable options act."""
        cfg = self.config
        self.build_id = RAXDB_BUILD_ID
        self.memory_peak = STARTUP
        # Filled in by persistence (rdb_saves, rdb_last_bgsave_status, ...); INFO shows defaults.
        self.persistence_stats: dict[str, Any] = {}
        self.persistence_info = self.persistence_stats.get
        self.pause_handle: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.active_expire_enabled = True  # DEBUG SET-ACTIVE-EXPIRE
        self.cron_paused = False  # DEBUG PAUSE-CRON
        self.migrate_sockets: dict[bytes, Any] = {}  # MIGRATE's cached connections, host:port -> socket
        self.skip_checksum_validation = False  # DEBUG SET-SKIP-CHECKSUM-VALIDATION: RESTORE skips the CRC
        self.script_deny_disabled = False  # DEBUG SET-DISABLE-DENY-SCRIPTS: noscript commands run in scripts
        self.quicklist_packed_threshold = 1024**3  # DEBUG QUICKLIST-PACKED-THRESHOLD
        # Called when a CLIENT PAUSE ends (UNPAUSE or timeout): resumes the clients it held.
        self.unpause_hooks: list[Any] = []
        self.persistence = Persistence(self)
        self.ldb_children: list[int] = []  # forked Lua debugging sessions (server/scripting/ldb.py)
        oomscore.attach(self)
        self.shutdown = Shutdown(self)  # SIGTERM, SHUTDOWN, waiting for replicas (server/admin/shutdown.py)
        self.aof = AOF(self)
        on = cfg.on_change.setdefault
        on("maxmemory-clients", []).append(lambda _v: clienteviction.renote_all(self))
        on("maxmemory", []).append(lambda _v: clienteviction.renote_all(self))  # a percentage follows it
        # a new template renames the process at once, whatever set-proc-title says (as Redis 7.0)
        on("proc-title-template", []).append(lambda _v: proctitle.apply(self))
        on("port", []).append(lambda _v: self._rebind("Unable to listen on this port. Check server logs."))
        on("bind", []).append(lambda _v: self._rebind("Failed to bind to specified addresses."))
        tls.attach(self)  # tls-* options rebuild the context
        on("tls-port", []).append(lambda _v: self._rebind_tls())
        on("loglevel", []).append(lambda v: LOG.configure(v, ""))
        for name in ("replica-read-only", "replica-serve-stale-data"):
            on(name, []).append(lambda _v: self._replica_gate_changed())
        # a normal or pub/sub limit set or lifted moves its clients off or back onto the fast loop
        on("client-output-buffer-limit", []).append(lambda _v: self.update_plain_all())

    def update_plain_all(self) -> None:
        """Something every client's fast-loop eligibility depends on changed (Client.update_plain)."""
        for c in self.clients.values():
            c.update_plain()

    def _replica_gate_changed(self) -> None:
        update_gate(self)

    # ---- clock and stats ---------------------------------------------------------------------
    def update_clock(self) -> int:
        return clock.tick(self)

    def clock_moved(self) -> None:
        """A test control moved the clock (server/commands/t_testclock.py): what the cron and the
        timers would do at the new time is done now, so a test never waits for it: blocked clients
        past their deadline time out, every key past its deadline expires (with its notification
        and propagation), a CLIENT PAUSE whose time is up ends, idle clients past `timeout` are
        closed; the rest (the loop timers) is re-armed for the new time."""
        now = self.update_clock()
        blocking.clock_moved(self)
        if expirecycle.may_run(self):
            for db in self.dbs:
                if db.nexpires:
                    db.expire_all_due(now)
        if self.active_expire_enabled and not self.pause_until_ms:
            hashexpire.active_cycle(self, now, -1)  # hash fields: every one due
        propagate.flush_alone(self)
        if self.pauses:
            self._update_pause()
        self._close_idle_clients(now)
        self.flush_writes()

    def count_error(self, msg: bytes) -> None:
        """errorstats: the error code is the reply's first word (`msg` is the reply without its
        "-"), as afterErrorReply finds it: a space within the reply's first 32 bytes ends it,
        else the code is ERR."""
        sp = msg.find(b" ", 0, 31)
        code = msg[:sp].decode(errors="replace") if sp >= 0 else "ERR"
        self.errorstats[code] = self.errorstats.get(code, 0) + 1
        self.stat_total_error_replies += 1

    def total_commands(self) -> int:
        n = 0
        for cmd in self.table.commands.values():
            n += cmd.calls
            for sub in cmd.subcommands.values():
                n += sub.calls
        return n

    def _sync_slowlog(self) -> None:
        us = self.config.slowlog_log_slower_than
        ms = self.config.latency_monitor_threshold
        self.slowlog_ns = min(us * 1000 if us >= 0 else 1 << 62, ms * 1_000_000 if ms else 1 << 62)
        # Sampling (timing one call in eight) would hide O(1) commands from a SLOWLOG whose
        # threshold is below a millisecond: time every call then.
        self.sample_mask = 7 if self.slowlog_ns >= 1_000_000 else 0

    def net_bytes(self) -> tuple[int, int]:
        """total_net_input_bytes / total_net_output_bytes: closed clients' totals plus live ones'
        (clients count their own bytes so the read path touches one object, not two)."""
        # a replica's input from its master is in the total too (and in total_net_repl_input_bytes)
        i, o = self.stat_net_input_bytes + self.stat_net_repl_input_bytes, self.stat_net_output_bytes
        for c in self.clients.values():
            i += c.tot_net_in
            o += c.tot_net_out
        return i, o

    def used_memory(self, clients_mem: int | None = None) -> int:
        """INFO used_memory: what Redis would use for the same data (server/memory/evict.py keeps that
        figure while maxmemory is set, and evicts by it; without a limit it is estimated when
        asked, with the clients' part `clients_mem` if the caller has it).  The process's own
        size is INFO's used_memory_rss."""
        return info_used_memory(self, clients_mem)

    def reset_stats(self) -> None:
        """CONFIG RESETSTAT: Redis's resetServerStats plus command and error statistics."""
        self.stat_numconnections = self.stat_rejected_conn = 0
        self.stat_keyspace_hits = self.stat_keyspace_misses = 0
        self.stat_expired_keys = self.stat_evicted_keys = self.stat_lazyfreed = self.stat_evicted_clients = 0
        self.expire_cycle.reset_stats()
        self.persistence.total_forks = self.persistence.fork_usec = 0
        self.eviction.exceeded_total_us = 0
        self.eviction.exceeded_since = 0.0
        self.stat_total_error_replies = self.stat_unexpected_error_replies = 0
        self.stat_net_input_bytes = self.stat_net_output_bytes = self.stat_net_repl_input_bytes = 0
        master = self.repl.master
        master.sync_full = master.sync_partial_ok = master.sync_partial_err = master.repl_output_bytes = 0
        for c in self.clients.values():
            c.out_mark -= c.tot_net_out  # keeps tot_net_out - out_mark, the bytes still queued
            c.qb_in -= c.tot_net_in  # and the query buffer's marks (server/conn/clientbufs.py)
            c.qb_visit_in -= c.tot_net_in
            c.tot_net_in = c.tot_net_out = 0
        self.clients_cron.shrinks = self.clients_cron.expands = 0
        self.errorstats.clear()
        self.ops_samples.clear()
        self.memory_peak = self.used_memory()
        for cmd in self.table.all_commands():
            cmd.reset_stats()
        self.aof.reset_stats()

    # ---- CLIENT PAUSE --------------------------------------------------------------------------
    def pause(self, until_ms: int, writes_only: bool, purpose: str = "client") -> None:
        """pauseClients: a pause for `purpose` ("client": CLIENT PAUSE; "failover": FAILOVER,
        server/replication/failover.py).  Each purpose keeps its own pause, as Redis's pause_purpose does, so
        CLIENT UNPAUSE does not end a failover's pause; within one purpose a later deadline wins
        and ALL wins over WRITE.  What is in force is the most restrictive of them."""
        old = self.pauses.get(purpose)
        if old is not None and old[0] > self.now_ms:
            writes_only = writes_only and old[1]
            until_ms = max(until_ms, old[0])
        self.pauses[purpose] = (until_ms, writes_only)
        self._update_pause()
        # Keys stop expiring once the command that paused is over (a MULTI with CLIENT PAUSE runs
        # its later writes unpaused, as in Redis).
        self.call_soon(self._hold_expiry)

    def _update_pause(self) -> None:
        """updateClientPauseTypeAndEndTime: drop the pauses whose time is up, put the most
        restrictive one in force (pause_until_ms, pause_writes_only: what the command path
        reads) and, when it got less restrictive, give the held clients another try."""
        now = self.update_clock()
        was = 0 if not self.pause_until_ms else 1 if self.pause_writes_only else 2
        self.pauses = live = {p: v for p, v in self.pauses.items() if v[0] > now}
        full = [until for until, writes_only in live.values() if not writes_only]
        if full:
            self.pause_until_ms, self.pause_writes_only = max(full), False
        elif live:
            self.pause_until_ms, self.pause_writes_only = max(until for until, _ in live.values()), True
        else:
            self.pause_until_ms, self.pause_writes_only = 0, False
        if self.pause_handle is not None:
            self.pause_handle.cancel()
            self.pause_handle = None
        until = self.pause_until_ms
        if until and until < PAUSE_FOREVER and self.loop is not None:
            # the first check after the deadline ends it (clock.wait_s: never before; never while frozen)
            wait = clock.wait_s(self, until - 1)
            if wait != float("inf"):
                self.pause_handle = self.loop.call_later(wait, self._update_pause)
        self.update_plain_all()
        now_is = 0 if not until else 1 if self.pause_writes_only else 2
        if now_is < was:
            self._hold_expiry()
            for hook in list(self.unpause_hooks):
                hook()

    def _hold_expiry(self, hold: bool = True) -> None:
        # a replica's keys wait for its master's DEL, as paused ones wait for the pause's end
        hold = (hold and self.pause_until_ms != 0) or self.repl.masterhost is not None
        for db in self.dbs:
            db.expire_paused = hold

    def unpause(self, purpose: str = "client") -> None:
        """unpauseClients: the pause of `purpose` ends (another purpose's may stay in force)."""
        if self.pauses.pop(purpose, None) is not None:
            self._update_pause()

    def paused(self) -> bool:
        """Is a CLIENT PAUSE in force now (its deadline not yet past)?"""
        until = self.pause_until_ms
        return bool(until) and until > clock.ms(self)

    def db(self, index: int) -> Database:
        return self.dbs[index]

    # ---- lifecycle ----------------------------------------------------------------------------
    async def serve(self) -> None:

        self.loop = asyncio.get_running_loop()
        self.call_soon = self.loop.call_soon
        self.shutdown_event = asyncio.Event()
        port = self.config.port
        tls.configure_at_startup(self)
        tls_port = int(self.config.values["tls-port"])
        socks = self._bind_or_exit(port, "TCP")
        tls_socks = self._bind_or_exit(tls_port, "TLS")
        unix = unixsocket.bind(self)
        bus_socks = self._start_cluster()
        if not socks and not tls_socks and unix is None:
            LOG.warning("Configured to not listen anywhere, exiting.")
            raise SystemExit(1)
        if self.config.modules:  # moduleLoadFromQueue, after initServer: raxdb loads no module
            log_load_failure(self.config.modules[0])
            LOG.warning(f"Can't load module from {self.config.modules[0]}: server aborting")
            raise SystemExit(1)
        await self._serve_sockets(socks)
        await self._serve_tls_sockets(tls_socks)
        if self.cluster is not None:
            await self.cluster.start(bus_socks)
        if unix is not None:
            self.unix_listener = await unixsocket.serve(self, unix)
        supervise.write_pidfile(self)
        clienteviction.renote_all(self)  # the configured limit
        if self.config.values["set-proc-title"] == "yes":
            proctitle.apply(self)
        self._show_banner(port or tls_port)
        if self.config.values["replicaof"]:  # the replica side is imported by its first use (#56)
            from raxdb.server.replication import replica
            replica.start_from_config(self)  # a replica from the start loads as one (keys past their deadline kept)
        # so does a cluster node that nodes.conf names a replica (its master's address comes later)
        self.repl.cluster_replica = self.cluster is not None and self.cluster.st.myself.is_replica()
        if not await self._load_dataset():  # a shutdown came while loading: nothing else starts
            await self.close()
            return
        if not self.repl.i_am_master():  # a master's own saved history: Replication.continue_saved_history
            from raxdb.server.replication import replica
            replica.after_load(self)
        self.repl.cluster_replica = False  # from now on the cluster's role changes say it
        self.aof.start()
        self.aof.delete_history()  # at start-up whatever appendonly says, as Redis does
        if port == 0:
            LOG.notice("Port 0: not listening on TCP")
        self._schedule_cron()
        oomscore.apply(self)
        LOG.notice(f"Server initialized (raxdb {RAXDB_VERSION}, Redis {VERSION} compatible), port {port}")
        if socks or tls_socks:
            LOG.notice("Ready to accept connections")
        if unix is not None:
            LOG.notice(f"The server is now ready to accept connections at {unixaddr.configured(self)}")
        supervise.ready(self)
        if self.on_ready is not None:
            self.on_ready()
        await self.shutdown_event.wait()
        await self.close()

    def _show_banner(self, port: int) -> None:
        """redisAsciiArt's choice, once the sockets listen: a banner naming the port and the pid
        when the log is a terminal or always-show-logo is set (Redis's test suite starts servers so
        and waits for " PID: <pid>"), otherwise the one "Running mode" line."""
        values = self.config.values
        mode = "cluster" if self.cluster is not None else "standalone"
        stream = LOG.stream
        if values["always-show-logo"] == "yes" or (not values["logfile"] and stream.isatty()):
            LOG.raw(2, f"\n    raxdb {RAXDB_VERSION}, speaking Redis {VERSION} (64 bit)\n"
                       f"    Running in {mode} mode\n    Port: {port}\n    PID: {self.pid}\n\n")
        else:
            LOG.notice(f"Running mode={mode}, port={port}.")

    async def _load_dataset(self) -> bool:
        """loadDataFromDisk, the sockets listening: with appendonly yes the AOF directory
        (server/persistence/aofload.py), otherwise the dump file, if any; clients are served meanwhile
        (server/persistence/loading.py).  A file that cannot be loaded stops the server, as Redis does,
        rather than serving without its data.  False when a shutdown stopped the load."""
        try:
            if not await self._load_aof():
                await loading.drive(self, self.persistence.load_at_startup())
        except loading.Aborted:
            return False
        except LoadError as exc:
            LOG.warning(str(exc))
            LOG.raw(3, exc.check_report)
            LOG.warning("Terminating server after rdb file reading failure.")
            raise SystemExit(1) from None
        return True

    async def _load_aof(self) -> bool:
        """The AOF side of `_load_dataset`: True when the AOF was the source.  The loader is
        imported only when there is an AOF to read (AOF.to_load)."""
        if not self.aof.to_load():
            return False
        from raxdb.server.persistence import aofload
        try:
            return await loading.drive(self, aofload.load_at_startup(self))
        except aofload.Fatal:
            raise SystemExit(1) from None

    # ---- listening sockets ----------------------------------------------------------------------
    def _bind_sockets(self, bind: str, port: int) -> list[socket.socket]:
        """Bound, listening sockets for the `bind` addresses (a '-' prefix: skip the address if it
        is not available here).  All or nothing: OSError names the address that failed."""
        socks: list[socket.socket] = []
        if port == 0:
            return socks
        backlog = int(self.config.values["tcp-backlog"])
        try:
            for addr in bind.split():
                optional = addr.startswith("-")
                host = addr.lstrip("-")
                host = {"*": "0.0.0.0", "::*": "::"}.get(host, host)
                try:
                    # An ASCII name goes as bytes: a str one is encoded with the idna codec, whose
                    # import (encodings.idna, stringprep, unicodedata: ~4 M instructions) start-up skips
                    name: str | bytes = host.encode() if host.isascii() else host
                    family, kind, proto, _, sockaddr = socket.getaddrinfo(
                        name, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
                    sock = socket.socket(family, kind, proto)
                    try:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                        if family == socket.AF_INET6:
                            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                        sock.bind(sockaddr)
                        sock.listen(backlog)
                        sock.setblocking(False)
                    except OSError:
                        sock.close()
                        raise
                except (OSError, UnicodeError) as exc:
                    if optional and getattr(exc, "errno", None) in _UNAVAILABLE:
                        continue
                    raise OSError(getattr(exc, "errno", None), f"{host}:{port}: {exc}") from exc
                socks.append(sock)
        except OSError:
            for sock in socks:
                sock.close()
            raise
        return socks

    def _start_cluster(self) -> list[socket.socket]:
        """clusterInit: nodes.conf loaded or made, the routing hook wired, the bus port bound."""
        if self.config.values["cluster-enabled"] != "yes":
            return []
        # imported here: a server without cluster-enabled never loads the cluster (#56, start-up)
        from raxdb.server.cluster import blocked as cluster_blocked
        from raxdb.server.cluster.manager import Cluster
        from raxdb.server.cluster.routing import route, script_check
        cluster = self.cluster = Cluster(self)
        self.cluster_route = functools.partial(route, cluster)
        self.cluster_served = cluster.st.served
        self.cluster_script_check = functools.partial(script_check, cluster)
        cluster.cron_hooks.append(cluster_blocked.Redirector(cluster))
        port = cluster.bus_port()
        if port > 65535:
            LOG.warning("Redis port number too high. Cluster communication port is 10,000 port numbers "
                        "higher than your Redis port. Your Redis port number must be 55535 or less.")
            raise SystemExit(1)
        return self._bind_or_exit(port, "cluster")

    def _bind_or_exit(self, port: int, kind: str) -> list[socket.socket]:
        """Start-up's sockets for `port` (TCP or TLS); a failure ends start-up as Redis's does."""
        try:
            return self._bind_sockets(self.config.values["bind"], port)
        except OSError as exc:
            LOG.warning(f"Warning: Could not create server TCP listening socket {exc}")
            LOG.warning(f"Failed listening on port {port} ({kind}), aborting.")
            raise SystemExit(1) from exc

    async def _serve_sockets(self, socks: list[socket.socket]) -> None:
        assert self.loop is not None
        # every waiting connection at each readable event, as Redis (server/net/accept.py)
        for sock in socks:
            self.listeners.append(Acceptor(self.loop, sock, self._accepted))

    def _accepted(self, conn: socket.socket, peer: Any) -> Client:
        """A client for a connection the data port accepted (server/net/accept.py)."""
        client = Client(self)
        client.take_socket(conn, peer, conn.getsockname())
        return client

    async def _serve_tls_sockets(self, socks: list[socket.socket]) -> None:
        await tls.serve(self, socks)

    def _rebind(self, failure: str) -> None:
        """CONFIG SET port / bind: bind the new sockets first, and only then close the old ones,
        so a failure leaves the server listening where it was (Redis's changeListener).  `bind`
        moves the TLS listeners too."""
        if self.loop is None:
            return
        self._replace_listeners(self.config.port, self.listeners, self._serve_sockets, failure)
        if self.tls_listeners:
            self._rebind_tls()

    def _rebind_tls(self) -> None:
        """CONFIG SET tls-port (applyTLSPort): the context first, when there is none yet."""
        if self.loop is None:
            return
        port = int(self.config.values["tls-port"])
        if port and self.tls_context is None:
            tls.reconfigure(self, force=True)
        self._replace_listeners(port, self.tls_listeners, self._serve_tls_sockets,
                                "Unable to listen on this port. Check server logs.")

    def stop_listening(self) -> None:
        """Close the TCP listeners (DEBUG FAULT REFUSE, server/net/faults.py): connecting is refused
        until listen_again(); open connections go on."""
        for listener in self.listeners:
            listener.close()
        self.listeners.clear()

    def listen_again(self) -> None:
        """Listen on the configured port and addresses again after stop_listening(), as CONFIG SET
        port does; ConfigError when they cannot be bound."""
        if self.loop is not None and self.config.port:
            self._replace_listeners(self.config.port, self.listeners, self._serve_sockets,
                                    "Unable to listen on this port. Check server logs.")

    def _replace_listeners(self, port: int, listeners: list[interfaces.Listener],
                           serve: Callable[[list[socket.socket]], Any], failure: str) -> None:
        assert self.loop is not None
        try:
            socks = self._bind_sockets(self.config.values["bind"], port)
        except OSError as exc:
            LOG.warning(f"Failed to bind: {exc}")
            raise ConfigError(failure) from None
        for srv in listeners:
            srv.close()
        listeners.clear()
        task = self.loop.create_task(serve(socks))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def finish_shutdown(self, save: bool | None, force: bool) -> bool:
        """finishShutdown's persistence part (server/admin/shutdown.py runs the rest): save first when
        asked, or when save points are configured and NOSAVE was not given.  False when the AOF
        cannot be flushed, or saving fails and FORCE was not given (the server keeps running)."""
        if self.ldb_children:  # then a debugging session imported the debugger: none does at start-up
            from raxdb.server.scripting import ldb
            ldb.kill_children(self)
        if self.persistence.in_progress():
            LOG.warning("There is a child saving an .rdb. Killing it!")
            self.persistence.kill_child()
        if not self.aof.prepare_shutdown(force):
            return False
        if save is None:
            save = bool(self.config.values["save"])
        if save:
            LOG.notice("Saving the final RDB snapshot before exiting.")
            supervise.status(self, "STATUS=Saving the final RDB snapshot\n")
            if not self.persistence.save():
                if not force:
                    LOG.warning("Error trying to save the DB, can't exit.")
                    supervise.status(self, "STATUS=Error trying to save the DB, can't exit.\n")
                    return False
                LOG.warning("Error trying to save the DB. Exit anyway.")
        supervise.remove_pidfile(self)
        return True

    def request_shutdown(self) -> None:
        if self.shutdown_event is not None and not self.shutdown_event.is_set():
            self.shutting_down = True
            self.shutdown_event.set()

    async def close(self) -> None:
        if self.cron_handle is not None:
            self.cron_handle.cancel()
        for srv in self.listeners:
            srv.close()
        tls.close(self)
        if self.unix_listener is not None:
            self.unix_listener.close()
            unixsocket.remove(self)
        if self.repl.link is not None:
            self.repl.link.shutdown()
        if self.cluster is not None:
            self.cluster.close()
        for client in list(self.clients.values()):
            client.close()
        LOG.warning("Redis is now ready to exit, bye bye...")

    # ---- cron ---------------------------------------------------------------------------------
    def _schedule_cron(self) -> None:
        assert self.loop is not None
        self.cron_handle = self.loop.call_later(1.0 / self.config.hz, self._cron)

    def _cron(self) -> None:
        if self.cron_paused or self.persistence.stats.get("loading"):
            # DEBUG PAUSE-CRON, or a load (Redis runs no time events while loading, so no save,
            # expiry or replication timeout acts on a half-loaded dataset): the tick's work is
            # skipped, the watchdog's re-arming too, so a load longer than its period is reported
            # as Redis's blocked loop is
            self._schedule_cron()
            return
        if self.watchdog_period:  # re-armed every tick: it fires when the loop is held (server/admin/crashreport.py)
            crashreport.schedule_watchdog(self.watchdog_period)
        now = self.update_clock()
        self.cronloops += 1
        self.shutdown.cron()
        self.persistence.cron()
        if self.active_expire_cycle(now):  # hash fields' deadlines (Redis's hash field active expire, in the same cycle)
            hashexpire.active_cycle(self, now)
        resize_tables(self)  # databasesCron's tryResizeHashTables, on used_memory's table terms
        self.clients_cron.tick(now)
        if self.repl.own_expires and self.active_expire_enabled and not self.pause_until_ms:
            self.repl.expire_own_keys()  # a writable replica's own keys (expireSlaveKeys)
        self.aof.cron()
        if self.aof.fsynced_reploff != -1:
            self.aof_synced()
        if self.sampling_paused:
            latency.resume_sampling(self)
        if self.cronloops % max(1, self.config.hz // 10) == 0:
            self.ops_samples.append((now, self.total_commands(), *self.net_bytes(), self.stat_net_repl_input_bytes,
                                     self.repl.master.repl_output_bytes))
        if self.repl.backlog is not None:
            self.repl.backlog.trim_more()
        if self.repl.failover.active:  # a failover's handshake moves on faster (run_with_period(100))
            if self.cronloops % max(1, self.config.hz // 10) == 0:
                self.repl.cron()
        elif self.cronloops % self.config.hz == 0:
            self.repl.cron()  # replicationCron (run_with_period(1000))
        if self.cronloops % self.config.hz == 0:  # once a second, as clientsCron visits every client
            if self.migrate_sockets:
                close_idle(self)
            # a client over its soft output limit whose output stopped growing is dropped when its
            # seconds run out (growing output is checked as it grows)
            for client in [c for c in self.clients.values() if c.obuf_soft_since]:
                obuf.check(client)
            self._close_idle_clients(now)
        self._schedule_cron()

    def active_expire_cycle(self, now: int) -> bool:
        """The cron tick's active expiry of keys, the slow cycle (server/events/expirecycle.py);
        False when it may not run (DEBUG SET-ACTIVE-EXPIRE 0, a CLIENT PAUSE, a replica)."""
        return expirecycle.slow(self, now)

    def _close_idle_clients(self, now: int) -> None:
        timeout = self.config.timeout
        if timeout:
            limit = now - timeout * 1000
            for client in list(self.clients.values()):
                if client.last_interaction < limit and client.idle_timeout_applies():
                    client.close()

    def instantaneous_ops(self) -> int:
        s = self.ops_samples
        if len(s) < 2:
            return 0
        (t0, n0, *_), (t1, n1, *_) = s[0], s[-1]
        return int((n1 - n0) * 1000 / max(1, t1 - t0))

    def instantaneous_kbps(self) -> tuple[float, float, float, float]:
        """instantaneous_input_kbps / instantaneous_output_kbps and their replication parts
        (instantaneous_input_repl_kbps / instantaneous_output_repl_kbps) over the sample window."""
        s = self.ops_samples
        if len(s) < 2:
            return 0.0, 0.0, 0.0, 0.0
        (t0, _, *first), (t1, _, *last) = s[0], s[-1]
        secs = max(1, t1 - t0) / 1000
        return tuple((b - a) / 1024 / secs for a, b in zip(first, last, strict=True))  # type: ignore[return-value]
