"""The server's and a client's shape as the lower layers see them: raxdb's server.h.

What it is.  `typing.Protocol` classes for the objects a layer names in its annotations but may
not import, because their classes live in a layer above it: `Server` (server/core.py's Server,
the composition root), `Client` (server/net/client.py's Client), and the objects those two hold
that lower layers reach through them: `Replication` (`Server.repl`, server/replication/state.py),
`Replica` (`Client.replica`, server/replication/master.py), `Tracking` and `ClientTracking`
(`Server.tracking`, `Client.tracking`, server/events/tracking.py) and `Command` (a command table
entry, server/table/registry.py, which base/ names).  A module below core writes
`from raxdb.server.base.interfaces import Server, Client` (under `if TYPE_CHECKING:` or not) where
it would otherwise import the class from above; a layer at or above a class's own may still import
the class itself (net/, commands/, admin/ name net/client.py's Client).  Each protocol declares
the members of the concrete class the code uses, with the concrete class's annotations (every
public attribute and method, as server.h declares the whole struct redisServer); a type that
lives above base/ is another protocol of this module where one is declared, `Any` otherwise
(Config, Acl, Persistence, AOF and the like).  Private members are left out, but for
`Server._hold_expiry`, which server/replication/replica.py calls.

Its rule.  It imports nothing of raxdb.server but base/ (and of the rest only protocol/'s and
storage/'s types, for annotations); it is declarations only, with no runtime behaviour: nothing
here is instantiated, registered or checked at run time (no `runtime_checkable`), and no value
(`PAUSE_FOREVER` is base/clock.py's), so the server's modules import it for annotations only,
under `TYPE_CHECKING`, and a running server never imports it.  The concrete classes do not
inherit from these protocols at run time: Server, Client, Replica, Replication and the tracking
classes name theirs as a base under `TYPE_CHECKING` only, so mypy checks each against it (the
table's Command and watch.py's WatchedKey satisfy theirs structurally); code that gets one
through the server (`Server.clients`, `Client.replica`, a hook's argument) works with the
protocol's type.

Its invariant.  Every member declared here exists, with the declared type, on every instance of
the concrete class once it is constructed: on a Server when `Server.__init__` (and the `attach`
functions it calls) returned, on a Client when `Client.__init__` returned.  Members a module
creates lazily, on first use (`latency_events`, read with
`getattr(srv, name, None)`), are not declared.  An attribute a lower layer starts to use is
declared here in the same change: tests/test_interfaces.py checks that each declared member is
there (a method with the declared parameters), and that every public member of a Server and a
Client is declared.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from raxdb.protocol.multibulk import MultibulkWalk
    from raxdb.protocol.reply import Encoder
    from raxdb.protocol.request import RequestParser
    from raxdb.storage.keyspace import Database


class Command(Protocol):
    """One command or subcommand of the command table (server/table/registry.py's Command)."""

    proc: Callable[..., bytes] | None  # the handler: handler(client, argv) -> the encoded reply
    arity: int
    name: str
    fullname: str
    flags: frozenset[str]
    first_key: int
    last_key: int
    key_step: int
    acl_categories: tuple[str, ...]
    meta: Any  # table/metadata.py's CommandMeta: arity, flags, key specs, COMMAND INFO / DOCS trees
    is_write: bool
    is_readonly: bool
    touches_arbitrary_keys: bool
    calls: int
    usec: int
    rejected_calls: int
    failed_calls: int
    ok_in_pubsub: bool
    ok_loading: bool
    no_auth: bool
    queue_in_multi: bool
    no_multi: bool
    is_blocking: bool
    noscript: bool
    sampled: bool
    timed_calls: int
    fixed_key_positions: dict[int, tuple[int, ...]]
    latency: dict[int, int]

    # read-only here, so that the table's own Command (whose are of its own class) matches
    @property
    def parent(self) -> Command | None: ...
    @property
    def subcommands(self) -> Mapping[bytes, Command]: ...

    def arity_ok(self, n: int) -> bool: ...
    def note_latency(self, ns: int) -> None: ...
    def latency_histogram(self) -> dict[int, int]: ...
    def usec_total(self) -> int: ...
    def reset_stats(self) -> None: ...


class ClientTracking(Protocol):
    """A client's CLIENT TRACKING state (server/events/tracking.py's ClientTracking)."""

    redirect: int
    bcast: bool
    optin: bool
    optout: bool
    noloop: bool
    caching: bool
    broken: bool
    prefixes: dict[bytes, None]


class Tracking(Protocol):
    """The server's client-side caching state (server/events/tracking.py's Tracking)."""

    server: Server
    table: dict[bytes, dict[int, None]]
    items: int
    prefixes: dict[bytes, Any]
    clients: int
    current: Client | None
    pending: list[bytes | None]
    broadcast_due: bool
    over_limit_runs: int


class Replica(Protocol):
    """What a master knows of one replica connection (server/replication/master.py's Replica)."""

    client: Client
    flagged: bool
    state: int
    port: int
    addr: str | None
    capa_eof: bool
    capa_psync2: bool
    rdb_only: bool
    req: int
    pre_psync: bool
    ack_off: int
    aof_ack_off: int
    ack_time: int
    initial_offset: int
    pending_from: int | None
    stream_on_ack: bool
    master: Any
    last_partial_write: int
    pipe_taken: int

    def taken(self) -> int: ...
    def ip(self) -> str: ...
    def name(self) -> str: ...
    def send(self, data: bytes) -> None: ...
    def start_stream(self) -> None: ...
    def needs_from(self) -> int | None: ...


class Replication(Protocol):
    """The replication state, `Server.repl` (server/replication/state.py's Replication)."""

    srv: Server
    replid: str
    replid2: str
    master_repl_offset: int
    second_replid_offset: int
    backlog: Any
    seldb: int
    replicas: list[Replica]
    masterhost: str | None
    masterport: int
    cluster_replica: bool  # a replica by the cluster's say (iAmMaster reads it)
    link: Any
    own_expires: dict[bytes, int]
    write_gate: bool
    master: Any
    failover: Any

    def set_master_address(self, host: str | None, port: int) -> None: ...
    def change_replid(self) -> None: ...
    def i_am_master(self) -> bool: ...
    def clear_replid2(self) -> None: ...
    def shift_replid(self) -> None: ...
    @staticmethod
    def saved_history(aux: dict[bytes, bytes]) -> tuple[str, int, int] | None: ...
    def continue_saved_history(self, aux: dict[bytes, bytes]) -> None: ...
    def create_backlog(self) -> None: ...
    def free_backlog(self) -> None: ...
    @property
    def replica_stream(self) -> bool: ...
    def feed(self, dbid: int, argv: list[bytes], data: bytes | None = None) -> None: ...
    def expire_own_keys(self) -> None: ...
    def feed_stream(self, data: bytes) -> None: ...
    def master_link_up(self) -> bool: ...
    def rdb_save_info(self) -> int | None: ...
    def update_write_gate(self) -> None: ...
    def cron(self) -> None: ...
    def info(self) -> list[str]: ...
    def replicas_info_lines(self) -> list[str]: ...
    def backlog_info_lines(self) -> list[str]: ...
    def role_reply(self, c: Any) -> bytes: ...


class Listener(Protocol):
    """A listening socket's accepts (server/net/accept.py's Acceptor)."""

    def close(self) -> None: ...


class Server(Protocol):
    """The server (server/core.py's Server): its state and the methods lower layers call."""

    # configuration, command table, databases, clients
    config: Any
    table: Any
    fast_dispatch: dict[bytes, Any]  # the hot loop's part of `table` (its generation's commands)
    redis_version: str  # the Redis version it answers as (compat-version): INFO, HELLO, the RDB
    dbs: list[Database]
    clients: dict[int, Client]
    next_client_id: int
    acl: Any  # server/security/acl.py's Acl
    # the event loop and the sockets
    loop: asyncio.AbstractEventLoop | None
    pending_writes: list[Client]
    call_soon: Callable[..., Any]  # the loop's call_soon(callback, *args)
    listeners: list[Listener]
    unix_listener: Listener | None
    tls_listeners: list[Listener]
    tls_context: Any  # ssl.SSLContext | None (server/net/tls.py)
    tls_client_context: Any  # ssl.SSLContext | None: outgoing connections' side
    tls_sockets: list[Any]  # the bound tls-port sockets the TLS listeners take duplicates of
    # the process
    pid: int
    supervised: str
    daemonized: bool
    on_ready: Callable[[], None] | None  # called once it serves (raxdb.embed's readiness)
    run_id: str
    build_id: str
    start_time: float
    now_ms: int  # the clock's reading in ms, cached (server/base/clock.py)
    clock_shift_us: int
    clock_frozen: bool
    clock_advanced_us: int
    shutting_down: bool
    shutdown_event: asyncio.Event | None
    cron_handle: asyncio.TimerHandle | None
    cronloops: int
    cron_paused: bool
    watchdog_period: int
    # statistics (INFO stats)
    stat_numconnections: int
    stat_rejected_conn: int
    stat_net_input_bytes: int
    stat_net_output_bytes: int
    stat_net_repl_input_bytes: int
    stat_keyspace_hits: int
    stat_keyspace_misses: int
    stat_expired_keys: int
    stat_evicted_keys: int
    stat_lazyfreed: int
    stat_evicted_clients: int
    stat_total_error_replies: int
    stat_unexpected_error_replies: int
    errorstats: dict[str, int]
    ops_samples: collections.deque[tuple[int, ...]]  # (time ms, commands, net in, out, repl in, out)
    # client eviction and buffers
    client_evict_limit: int
    clients_mem: int
    client_evict_pending: bool
    clients_cron: Any  # server/conn/clientbufs.py's ClientsCron
    # slow log, latency
    slowlog: collections.deque[Any]
    slowlog_next_id: int
    slowlog_ns: int
    sample_mask: int
    sampling_paused: list[tuple[Any, int]]
    # MONITOR, dirty, WATCH, notifications, Pub/Sub, client-side caching
    monitors: list[Client]
    dirty: int
    lastsave: int
    watchers: int
    notify_flags: int
    pubsub: Any  # server/events/pubsub.py's Registry
    tracking: Tracking | None
    # CLIENT PAUSE
    pause_until_ms: int
    pause_writes_only: bool
    pauses: dict[str, tuple[int, bool]]
    pause_handle: asyncio.TimerHandle | None
    unpause_hooks: list[Any]
    # blocking commands (server/net/blocking.py)
    ready_keys: dict[tuple[int, bytes], None]
    blocked_on_keys: int
    blocked_by_type: dict[str, int]
    serve_ready_keys: Callable[[], None]  # hook (core.py): serve the clients blocked on ready keys
    script_cache: Any  # the EVAL script cache (server/scripting/scripts.py), None until the first script
    script_cache_of: Callable[[], Any]  # hook (core.py): the EVAL script cache, made when first used
    functions_engine: Any  # the FUNCTION libraries (server/scripting/functions.py), None until the first
    function_registry: Callable[[], Any]  # hook (core.py): the FUNCTION libraries, made when first used
    fault_error: Any  # an error fault armed by DEBUG FAULT (server/net/faults.py's ErrorFault), or None
    faults: Any  # the delay and refusal armed by DEBUG FAULT (server/net/faults.py's Faults), or None
    busy_script: Any  # a script past busy-reply-threshold (server/scripting/engine.py's Running), or None
    # maxmemory (server/memory/evict.py)
    maxmemory: int
    mem_limited: bool  # maxmemory != 0, set with it
    mem_created: list[tuple[Database, bytes]] | None
    mem_dbs: list[Database]
    mem_ok: bool
    mem_room: int
    mem_nexp: int
    pre_command_oom: bool
    memory_peak: int
    eviction: Any  # server/memory/evict.py's EvictionState
    # propagation (server/events/propagate.py) and replication
    also_propagate: list[tuple[int, Any]] | None
    propagation_targets: list[Any]
    prop_depth: int
    propagate_no_multi: bool
    repl: Replication
    replica_gate: bool
    rdb_gate: bool
    # cluster mode (server/cluster/): the Cluster, None when cluster-enabled is no; the hook
    # (core.py) that routes a command to its slot's node: None to serve it, else the error text
    cluster: Any
    cluster_route: Callable[[Any, Any, list[bytes]], bytes | None] | None
    # the cluster state's per-slot map (server/cluster/state.py's `served`): 1 where a command on
    # that slot's keys is served here as the slots stand (the fast loop's test); None standalone
    cluster_served: bytearray | None
    # hook (core.py): scriptVerifyClusterState for a script's command, None or the error
    cluster_script_check: Callable[[Any, Any, list[bytes]], bytes | None] | None
    # persistence, shutdown
    persistence: Any  # server/persistence/snapshot.py's Persistence
    persistence_stats: dict[str, Any]
    persistence_info: Callable[..., Any]
    aof: Any  # server/persistence/aof.py's AOF
    shutdown: Any  # server/admin/shutdown.py's Shutdown
    ldb_children: list[int]
    # DEBUG's switches, MIGRATE's connections
    active_expire_enabled: bool
    expire_cycle: Any  # server/events/expirecycle.py's ExpireCycle
    expire_fast: bool  # a fast expire cycle may be due (flush_writes runs it)
    migrate_sockets: dict[bytes, Any]
    skip_checksum_validation: bool
    script_deny_disabled: bool
    quicklist_packed_threshold: int

    # a Pub/Sub message to these subscribers: the frame's body, without its type byte (net/client.py)
    fan_out: Callable[[dict[Client, None], bytes], None]

    def flush_writes(self) -> None: ...
    def cluster_before_sleep(self) -> None: ...
    def aof_synced(self) -> None: ...  # WAITAOF: the AOF's fsynced offset taken, its waiting clients served
    def update_plain_all(self) -> None: ...
    def stop_listening(self) -> None: ...
    def listen_again(self) -> None: ...
    def update_clock(self) -> int: ...
    def active_expire_cycle(self, now: int) -> bool: ...  # the cron's key expiry (the slow cycle)
    def clock_moved(self) -> None: ...
    def count_error(self, msg: bytes) -> None: ...
    def total_commands(self) -> int: ...
    def net_bytes(self) -> tuple[int, int]: ...
    def used_memory(self, clients_mem: int | None = None) -> int: ...
    def reset_stats(self) -> None: ...
    def pause(self, until_ms: int, writes_only: bool, purpose: str = "client") -> None: ...
    def unpause(self, purpose: str = "client") -> None: ...
    def paused(self) -> bool: ...
    def _hold_expiry(self, hold: bool = True) -> None: ...
    def db(self, index: int) -> Database: ...
    async def serve(self) -> None: ...
    def finish_shutdown(self, save: bool | None, force: bool) -> bool: ...
    def request_shutdown(self) -> None: ...
    async def close(self) -> None: ...
    def instantaneous_ops(self) -> int: ...
    def instantaneous_kbps(self) -> tuple[float, float, float, float]: ...


class WatchedKey(Protocol):
    """A key a client WATCHes (server/events/watch.py): whether it was logically expired when
    watched."""

    client: Client
    db: Database
    key: bytes
    expired: bool


class Client(Protocol):
    """A client connection (server/net/client.py's Client, and its subclasses): its state and the
    methods lower layers call.  The hot path's private state (`_raw`, `_base`, ...) is left out."""

    server: Server
    id: int
    transport: asyncio.Transport | None
    reader: Any  # hiredis.Reader
    exact: RequestParser | None
    walk: MultibulkWalk | None  # while the fast loop walks a read's whole commands (its rest is input held)
    db: Database
    dbid: int
    resp: int
    enc: Encoder
    name: bytes
    lib_name: bytes
    lib_ver: bytes
    user: Any  # server/security/acl.py's User
    authenticated: bool
    plain: bool
    queueing: bool
    plain_epoch: int  # update_plain's runs (enter_exec / leave_exec compare them)
    is_master: bool
    must_obey: bool
    # MULTI, WATCH
    multi: list[Any] | None  # MULTI's queue (server/base/multiqueue.py)
    multi_error: bool
    cluster_flags: int  # ASKING, READONLY, ASKED (server/cluster/routing.py)
    watched: list[WatchedKey]
    dirty_cas: bool
    in_exec: bool
    exec_argv: list[bytes] | None  # while EXEC runs: its argv and queue (CLIENT INFO, ACL LOG)
    exec_queue: list[Any] | None
    # Pub/Sub, MONITOR, client-side caching
    channels: dict[bytes, None]
    patterns: dict[bytes, None]
    shard_channels: dict[bytes, None]
    is_monitor: bool
    tracking: ClientTracking | None
    # the connection
    ctime: int
    last_interaction: int
    last_cmd: Command | None
    last_argv: list[bytes] | None
    addr: str
    laddr: str
    unix_socket: bool
    fd: int
    wfd: int  # the socket flush_output writes itself, or -1 (server/net/client.py's transport_changed)
    wheld: bool  # its transport was given output since it last held none (flush_output)
    close_after_reply: bool
    disconnected: bool
    closed: bool
    kill_reason: str
    reply_mode: str
    lua_debug: int
    is_script: bool
    no_evict: bool
    no_touch: bool
    # blocking
    blocked: bool
    block_state: Any
    write_paused: bool
    # output
    tot_net_in: int
    tot_net_out: int
    obuf: list[bytes]
    out_mark: int
    out_held: int
    running: list[bytes] | None
    obuf_soft_since: int
    obuf_watch: bool
    obuf_pending: list[Any]
    replies: Any  # Redis's reply list while the transport holds output (server/conn/replylist.py's Layout), or None
    # propagation, replication
    prop_argv: list[bytes] | None
    prop_prevent: bool
    prop_force: bool | int  # True, False, or REPL_ONLY (2): the replication stream alone
    prop_targets: int
    woff: int
    replica: Replica | None
    # memory: client eviction, Redis's buffer sizes
    mem_noted: int
    qb_alloc: int
    qb_in: int
    qb_visit_in: int
    rb_size: int
    rb_peak: int
    rb_reset: int

    def close_after_replies(self) -> None: ...
    def update_plain(self) -> None: ...
    def select(self, dbid: int) -> None: ...
    def set_protocol(self, version: int) -> None: ...
    def idle_timeout_applies(self) -> bool: ...
    def connection_made(self, transport: asyncio.BaseTransport) -> None: ...
    def transport_changed(self) -> None: ...
    def eof_received(self) -> bool | None: ...
    def connection_lost(self, exc: Exception | None) -> None: ...
    def pause_writing(self) -> None: ...
    def resume_writing(self) -> None: ...
    def close(self) -> None: ...
    def flush_output(self) -> None: ...
    def abort(self) -> None: ...
    def discard_output(self) -> None: ...
    def write(self, data: bytes) -> None: ...
    def obuf_reached(self, out: list[bytes] | None, extra: int = 0) -> bool: ...
    def output_size(self) -> int: ...
    def data_received(self, data: bytes) -> None: ...
    def take_socket(self, s: Any, peer: Any, local: Any) -> None: ...
    def process(self, fed: int = -1) -> None: ...
    def write_offset(self) -> int: ...
    def partial_args(self) -> tuple[int, int]: ...
    def bulk_room(self) -> tuple[int, int]: ...
    def unparsed(self) -> int: ...
    def has_pending_input(self) -> bool: ...
    def execute(self, argv: list[bytes], out: list[bytes]) -> None: ...
    def call(self, cmd: Command, argv: list[bytes], t0: int | None = None, log_slow: bool = False) -> Any: ...
    def writes(self, cmd: Command, argv: list[bytes]) -> bool: ...
    def may_replicate(self, cmd: Command, argv: list[bytes]) -> bool: ...
    def postponed(self) -> bool: ...
    def note_slow(self, cmd: Command, argv: list[bytes], ns: int) -> None: ...
    def error_reply(self, msg: bytes, cmd: Command | None = None, counted: bool = False) -> bytes: ...
    def internal_error(self, cmd: Command, exc: Exception) -> bytes: ...
