"""maxmemory: Redis's memory figure and key eviction (evict.c), for a server written in Python.

Redis knows its memory to the byte from its allocator (zmalloc's counter).  raxdb cannot ask
CPython for that cheaply, and the process's RSS does not fall when keys go (freed blocks stay in
CPython's pools for reuse), so a limit on RSS would evict until the database is empty.  Instead,
raxdb reports and evicts by what Redis would use for the same data:

    used_memory = STARTUP (redis-server 7.0's used_memory at start-up)
                + each client's buffers as CLIENT LIST's tot-mem gives them (the sum client
                  eviction keeps, server/conn/clienteviction.py), plus CLIENT_REST for what else a
                  connection allocates
                + the replication buffer the backlog and the replicas share
                + the AOF buffer
                + per database: each key's MEMORY USAGE figure (dictEntry, key sds, value), the
                  main dict's buckets, and for keys with a TTL the expires dict's entry and buckets
                  (the buckets Redis's dicts would have: grown with the keys, shrunk only by the
                  cron below a tenth full, so a key's eviction frees its own bytes and no table)

Eviction compares that less `not_counted` with the limit, as Redis does: the AOF buffer and
what the replicas hold beyond the backlog's size (INFO's mem_not_counted_for_evict).

While `maxmemory` is set the figure is kept up to date, as below.  Without a limit nothing is
counted per command and the figure is worked out when INFO (or MEMORY STATS, or a save) asks
(`info_used_memory`, `_estimate`): the same terms, with a big database's keys sampled.  So INFO's
used_memory falls when keys go and a limit set from it means what it says; the process's own
size is used_memory_rss.

A key's figure is the one MEMORY USAGE gives: Redis's to the byte for strings, listpacks,
intsets and streams, the same sampled estimate for hashtable and skiplist encodings.  The
clients' figures are not summed per command (that would cost a pass over every client): each is
noted when the client connects, when a read leaves a partial command held, when a flush leaves
output the peer has not taken, and at the clients cron's visits (about once a second; every
read event while client eviction is on), so a buffer that grows is counted as it grows and one
that drains within a second.  Figures are kept per key position in `Database.sizes`, their sum in
`Database.mem`:
- a key that goes (DEL, expiry, eviction, FLUSH*, ...) leaves at once (Database.delete, flush);
- a key that is created is noted by the Database's `new_hook` (Redis's dbAdd), wherever that
  happens: MOVE or COPY into another database, a served BLMOVE's destination;
- after every write command its key arguments (found from its key specs, as COMMAND GETKEYS
  finds them) and the keys noted as created are counted again (`account`), and so are a served
  blocked client's keys.
That is a pass over a command's keys, so it only runs while maxmemory is set (setting it counts
the whole keyspace once); the fast loop (server/net/client.py's _run_fast) calls `refuses` before and `account`
after each command then, and hands a refusal to the full processCommand path.  While the figure was
within the limit when last measured and what grew it since fits in the room that measure left
(`Server.mem_ok`, `Server.mem_room`: each write's recount gives its keys' growth, `grew`), the
measure before a command is skipped, so reads and the writes that leave their keys' figures as
they were (an overwrite of the same size, a pop) cost no measure; a created key, a new TTL, a
new connection, a client's grown buffers or a replication backlog make the next command measure.

Eviction is evict.c's: before each command `perform_evictions` frees keys until used_memory is
within maxmemory.  LRU, LFU and TTL policies keep a pool of the 16 best candidates, refilled from
maxmemory-samples keys drawn from every database (the key idle the longest, used the least, or
expiring the soonest goes first); the random policies take a random key from each database in
turn.  An eviction deletes the key, counts evicted_keys, invalidates WATCHes on it and sends the
"evicted" event.  When nothing more can be evicted (noeviction, or volatile-* with no TTL left),
a command that may grow memory (denyoom, EXEC of such commands, a script not declared
no-writes or allow-oom, anything queued in MULTI) is refused with -OOM, as processCommand does;
a script sees the state from its start (`pre_command_oom`, Redis's pre_command_oom_state).
The loop checks the clock every 16 evictions against maxmemory-eviction-tenacity's limit, scaled
by SLOWDOWN because an eviction here costs about that many times a C one, and when it runs out it
goes on over the next loop turns (Redis's eviction timer proc) while commands are let through.
"""

from __future__ import annotations

import bisect
import time
from typing import TYPE_CHECKING, Any

from raxdb.server.base import latency
from raxdb.server.base.log import LOG
from raxdb.server.base.multiqueue import queued
from raxdb.server.conn.clienteviction import counted
from raxdb.server.conn.clientinfo import client_memory
from raxdb.server.events import notify, propagate
from raxdb.server.events.keyaccess import NOTIFY_EVICTED, signal_modified
from raxdb.server.memory.usage import key_usage
from raxdb.server.table.getkeys import key_positions
from raxdb.server.table.scriptflags import FLAG_ALLOW_OOM, FLAG_NO_WRITES, script_flags

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Client, Server
    from raxdb.server.base.interfaces import Command as CommandEntry  # (evict.pxd cimports the type Command)
    from raxdb.storage.keyspace import Database

STARTUP = 875_976  # redis-server 7.0.15's used_memory_startup, measured here
PER_CLIENT = 39_000  # 50 idle connections raised Redis's used_memory by 1.95 MB
# ... of which a new client's tot-mem is 37,632 (its struct, reply buffer and first read's room):
# the rest is the connection and its other allocations
CLIENT_REST = PER_CLIENT - 37_632
SLOWDOWN = 5  # an eviction here costs about 3-7 times one of redis-server's (docs/speed-log.md, 2026-11-29, h-evict3)
EVPOOL_SIZE = 16
EVICT_OK, EVICT_RUNNING, EVICT_FAIL = 0, 1, 2
OOM = b"OOM command not allowed when used memory > 'maxmemory'."
_NOT_DENYOOM_IN_MULTI = frozenset(("exec", "discard", "quit", "reset"))
_ROOM_MAX = 1 << 62  # the room a measure leaves, at most: no run of writes grows by that much


class EvictionState:
    """What evict.c keeps in statics and server fields: the candidate pool, the next database
    for the random policies, the timer proc, and the time spent over the limit."""

    __slots__ = ("pool", "next_db", "proc_running", "exceeded_since", "exceeded_total_us")

    def __init__(self) -> None:
        self.pool: list[tuple[int, int, bytes]] = []  # (score, dbid, key), best (highest) last
        self.next_db = 0
        self.proc_running = False
        self.exceeded_since = 0.0  # monotonic seconds when used memory went over, 0 if within
        self.exceeded_total_us = 0

    def exceeded_us(self) -> tuple[int, int]:
        """(total, current) microseconds spent over maxmemory (INFO's eviction_exceeded_time)."""
        cur = int((time.monotonic() - self.exceeded_since) * 1e6) if self.exceeded_since else 0
        return self.exceeded_total_us + cur, cur


# ---- the memory figure ---------------------------------------------------------------------------
# Every command asks for the figure (perform_evictions), so it walks only the databases that have
# held keys while the limit was set (`Server.mem_dbs`): a database joins when a key is created in
# it (settle) or arrives by SWAPDB (dbs_changed), and an emptied one costs one test.
def used_memory(srv: Server) -> int:
    """What eviction compares with maxmemory: INFO's used_memory less `not_counted`."""
    # the clients' buffers as noted (server/conn/clienteviction.py: CLIENT LIST's tot-mem) and what
    # else each connection allocates
    total = STARTUP + srv.clients_mem + CLIENT_REST * len(srv.clients) + _repl_counted(srv)
    for db in srv.mem_dbs:
        total += db.mem + 8 * db.main_slots
        e = db.expires_slots
        if e:
            total += 24 * db.nexpires + 8 * e
    return total


def resize_tables(srv: Server) -> None:
    """The cron's tryResizeHashTables (databasesCron, not while a child runs): the dict tables
    under a tenth full shrink (Database.resize_tables), which used_memory's table terms follow."""
    if not srv.persistence.has_child():
        for db in srv.dbs:
            db.resize_tables()


def _expiring(srv: Server) -> int:
    """The keys with a TTL in the databases the figure walks: its expires terms are a function of
    their count (and of the expires table's size, which only a new TTL grows; the cron's shrink
    only lowers the figure)."""
    e = 0
    for db in srv.mem_dbs:
        e += db.nexpires
    return e


def _repl_counted(srv: Server) -> int:
    """The replication buffer as eviction counts it: the backlog's part."""
    backlog = srv.repl.backlog
    return 0 if backlog is None else backlog.mem - _repl_not_counted(backlog)


def _repl_not_counted(backlog: Any) -> int:
    """The part of the replication buffer eviction leaves out (freeMemoryGetNotCountedMemory): what
    the replicas hold beyond the backlog's configured size and its blocks' headers (a block of
    16 KiB and a list node each, 64 bytes), so a slow replica does not make keys go."""
    size = backlog.size
    if backlog.mem <= size:
        return 0
    return max(0, backlog.mem - size - (size // 16384 + 1) * 64)


def not_counted(srv: Server) -> int:
    """INFO's mem_not_counted_for_evict: the replicas' part of the replication buffer and the AOF
    buffer, in used_memory but not in what eviction compares with the limit."""
    backlog = srv.repl.backlog
    return (0 if backlog is None else _repl_not_counted(backlog)) + len(srv.aof.buf)


def info_used_memory(srv: Server, clients_mem: int | None = None) -> int:
    """INFO's used_memory, the same figure with a limit set or not: eviction's (kept per command
    under a limit, estimated when asked without one) plus `not_counted`.  `clients_mem` is the
    counted clients' tot-mem when the caller has summed it already (server/memory/overhead.py)."""
    counted = used_memory(srv) if srv.maxmemory else _estimate(srv, clients_mem)
    return counted + not_counted(srv)


# Without a limit nothing is counted per command: the figure is worked out when asked (INFO,
# MEMORY STATS, a save's aux field), from the same terms.  Each database's keys are sized one by
# one up to ESTIMATE_KEYS of them (a string in ~0.3 us); a bigger one is sampled by a stride
# through its slot array (the same keys each time while nothing moves, so the figure does not
# jitter between two INFOs) and scaled to its key count.  Nothing is kept between two asks: a
# figure kept by the dirty count would outlive a save, which sets that count back.  A sample
# misses a rare huge key among many small ones: MEMORY USAGE of that key, or a limit, gives the
# exact figure.
ESTIMATE_KEYS = 4096


def _estimate(srv: Server, clients_mem: int | None = None) -> int:
    if clients_mem is None:
        clients_mem = clients_counted_memory(list(srv.clients.values()))
    total = STARTUP + CLIENT_REST * len(srv.clients) + clients_mem
    total += _repl_counted(srv)
    for db in srv.dbs:
        if db:
            total += _dataset_estimate(db)
        total += 8 * db.main_slots
        if db.expires_slots:
            total += 24 * db.nexpires + 8 * db.expires_slots
    return total


def clients_counted_memory(clients: list[Client], sizes: list[int] | None = None) -> int:
    """The tot-mem of the clients eviction counts (clienteviction.counted), from `sizes` (each
    client's client_memory, in order) when the caller has them: sizing a client is a few
    microseconds, and INFO memory needs the figures of every client twice."""
    if sizes is None:
        return sum(client_memory(c) for c in clients if counted(c))
    return sum(m for c, m in zip(clients, sizes, strict=True) if counted(c))


def _dataset_estimate(db: Database) -> int:
    n = len(db)
    usage = key_usage
    if n <= ESTIMATE_KEYS:
        return sum(usage(k, v) for k, v in db.items())
    sample = db.key_stride(db.positions() // ESTIMATE_KEYS)
    if len(sample) < 64:  # positions emptied by deletes: the first keys instead
        sample = db.key_list()[:ESTIMATE_KEYS]
    return sum(usage(k, db.stored(k)) for k in sample) * n // len(sample)


def dbs_changed(srv: Server) -> None:
    """Keys may have moved between databases without being created (SWAPDB): list anew the
    databases that hold any."""
    srv.mem_dbs = [db for db in srv.dbs if db or db.main_slots]


def _count(db: Database, key: bytes) -> int:
    """Count `key` again; by how much its figure grew.  (A key that is gone left the figures
    when it went: Database.delete.)  One probe finds the value and the figure beside it."""
    if db.sizes is None:
        return 0
    p = db.find(key)
    if p < 0:
        return 0
    return db.recounted(p, key_usage(key, db.value_at(p)))


def settle(srv: Server) -> None:
    """Count the keys created since the last call."""
    srv.mem_ok = False
    created = srv.mem_created
    dbs = srv.mem_dbs
    while created:
        db, key = created.pop()
        if db not in dbs:
            dbs.append(db)
        _count(db, key)


def account(c: Client, cmd: CommandEntry | None, argv: list[bytes] | None) -> None:
    """After a command ran: count its keys again if it may have written them, and keep the
    measure before the next command skipped while their growth fits in the room left (`grew`)."""
    srv = c.server
    if cmd is not None and argv is not None and cmd.is_write:
        db = c.db
        positions: tuple[int, ...] | list[int] | None = cmd.fixed_key_positions.get(len(argv))  # key_positions' cache, inlined: a call per write
        if positions is None:
            positions = key_positions(cmd, argv)
        growth = 0
        for pos in positions:
            growth += _count(db, argv[pos])
        if srv.mem_ok:
            grew(srv, growth)
    if srv.mem_created:
        settle(srv)


def grew(srv: Server, growth: int) -> None:
    """A write's keys grew by `growth` bytes (less if negative) while the figure was within the
    limit when last measured: the next command skips the measure while the room left holds what
    grew since.  The rest of a write's growth is not in `growth`: a key it created (settle), a
    TTL it set (the expires terms of used_memory), what it appended to the replication backlog;
    any of those makes the next command measure.  So a skipped measure is one that would have
    found the figure within the limit, and evicted nothing."""
    room = srv.mem_room - growth
    if room < 0 or srv.repl.backlog is not None or _expiring(srv) > srv.mem_nexp:
        srv.mem_ok = False
    else:
        srv.mem_room = room


def recount(srv: Server) -> None:
    """Count every key from scratch (accounting starts, or a check of the running figures)."""
    for db in srv.dbs:
        db.count_sizes(True)
        for key in db.key_list():
            _count(db, key)
    dbs_changed(srv)


# ---- eviction ------------------------------------------------------------------------------------
def _time_limit_s(srv: Server) -> float:
    """evictionTimeLimitUs, scaled by SLOWDOWN, in seconds."""
    t = int(srv.config.values["maxmemory-eviction-tenacity"])
    if t <= 10:
        us = 50.0 * t
    elif t < 100:
        us = 500.0 * 1.15 ** (t - 10)
    else:
        return float("inf")
    return us * SLOWDOWN / 1e6


def _is_safe(srv: Server) -> bool:
    """isSafeToPerformEvictions: not while a script runs past its limit, nor while clients are
    paused (the dataset must then stand still), nor on a replica that ignores maxmemory (its
    master evicts for it)."""
    if srv.repl.masterhost is not None and srv.config.values["replica-ignore-maxmemory"] == "yes":
        return False
    return srv.busy_script is None and not (srv.pause_until_ms and srv.paused())


def _populate(srv: Server, state: EvictionState, db: Database, volatile: bool, mode: str, count: int) -> None:
    """evictionPoolPopulate: sample `count` keys of `db` into the pool, which keeps the 16 best.
    The pool is sorted (score, dbid, key) tuples, so an entry's place is a bisection and a key
    sampled again at the same score is found there (Redis's pool does not look for it at all: a
    key held twice is a ghost the second time, which `_evict_next` skips)."""
    pool = state.pool
    now = srv.now_ms
    dbid = db.id
    # a full pool takes no key scored at or below its worst: the draws leave those keys unread
    floor = pool[0][0] if len(pool) >= EVPOOL_SIZE else -1
    drawn: list[tuple[int, bytes]]
    if mode == "lru":
        drawn = db.sample_idle(count, volatile, now, floor)
    elif mode == "lfu":
        drawn = db.sample_freq(count, volatile, now, floor)
    elif floor < 0:  # ttl: the sooner the deadline, the better the candidate
        drawn = [((1 << 64) - when, key) for when, key in db.sample_deadlines(count)]
    else:
        drawn = [((1 << 64) - when, key) for when, key in db.sample_deadlines(count, (1 << 64) - floor)]
    for score, key in drawn:
        full = len(pool) >= EVPOOL_SIZE
        if full and score <= pool[0][0]:
            continue
        entry = (score, dbid, key)
        i = bisect.bisect_left(pool, entry)
        if i < len(pool) and pool[i] == entry:
            continue
        if full:  # the worst goes (it is below the entry: i >= 1)
            del pool[0]
            i -= 1
        pool.insert(i, entry)


def _evict_next(srv: Server, state: EvictionState, volatile: bool, mode: str, count: int, monitored: bool) -> int:
    """Evict the next key under the policy (`volatile`, and `mode` its kind: lru, lfu, ttl or
    random; `count` maxmemory-samples): the bytes it freed, or -1 if there is nothing to evict."""
    if mode == "random":
        dbs = srv.dbs
        n = len(dbs)
        for _ in range(n):
            state.next_db += 1
            db = dbs[state.next_db % n]
            if volatile:
                keys = db.sample_keys(1, True)
                if keys:
                    return _evict(srv, db, keys[0], True, monitored)
            elif db:
                key = db.random_key()
                if key is not None:
                    return _evict(srv, db, key, False, monitored)
        return -1
    pool = state.pool
    while True:
        total = 0
        for db in srv.dbs:
            n = db.nexpires if volatile else len(db)
            if n:
                _populate(srv, state, db, volatile, mode, count)
                total += n
        if not total:
            return -1
        while pool:
            _, dbid, key = pool.pop()
            freed = _evict(srv, srv.dbs[dbid], key, volatile, monitored)
            if freed >= 0:
                return freed
            # a ghost: the key went (or lost its TTL, under volatile-*) since it was sampled


def _evict(srv: Server, db: Database, key: bytes, volatile: bool, monitored: bool) -> int:
    """Delete `key` as an eviction: the bytes it freed (its figure, and its expires entry's);
    -1 if it is not there to evict (with a TTL, if `volatile`).  One probe finds and deletes it."""
    t = time.monotonic() if monitored else 0.0
    nexp = db.nexpires
    freed = db.evict_key(key, volatile)
    if freed < 0:
        return -1
    if monitored:  # (Redis's eviction-del times the delete alone)
        latency.add_sample_if_needed(srv, "eviction-del", int((time.monotonic() - t) * 1000))
    freed += 24 * (nexp - db.nexpires)
    srv.stat_evicted_keys += 1
    if db.signals:
        signal_modified(srv, None, db, key)
    notify.notify_db(srv, db.id, NOTIFY_EVICTED, "evicted", key)
    propagate.deleted(srv, db.id, key, "lazyfree-lazy-eviction")
    return freed


def perform_evictions(srv: Server) -> int:
    """performEvictions: EVICT_OK when memory is within the limit (or was brought there),
    EVICT_RUNNING when the time ran out and the timer goes on, EVICT_FAIL when it can't be."""
    if not _is_safe(srv):
        return EVICT_OK
    state: EvictionState = srv.eviction
    if srv.mem_created:
        settle(srv)
    used = used_memory(srv)
    if used <= srv.maxmemory:
        result = EVICT_OK
        srv.mem_ok = True
        room = srv.maxmemory - used
        srv.mem_room = room if room < _ROOM_MAX else _ROOM_MAX  # (a C integer; maxmemory may pass one)
        srv.mem_nexp = _expiring(srv)
    else:
        policy = srv.config.values["maxmemory-policy"]
        if policy == "noeviction":
            result = EVICT_FAIL
        else:
            result = _evict_until(srv, state, policy, used - srv.maxmemory)
            propagate.flush_alone(srv)  # the DELs go out now, before the command that made room
    if result == EVICT_OK:
        if state.exceeded_since:
            state.exceeded_total_us += int((time.monotonic() - state.exceeded_since) * 1e6)
            state.exceeded_since = 0.0
    elif not state.exceeded_since:
        state.exceeded_since = time.monotonic()
    return result


def _evict_until(srv: Server, state: EvictionState, policy: str, tofree: int) -> int:
    freed = 0
    keys_freed = 0
    start = time.monotonic()
    limit = _time_limit_s(srv)
    monitored = bool(srv.config.latency_monitor_threshold)  # the eviction-del / -cycle latency events
    # the policy and maxmemory-samples read once a pass, not once a key
    volatile = policy.startswith("volatile")
    mode = policy.split("-", 1)[1]
    count = int(srv.config.values["maxmemory-samples"])
    result = EVICT_OK
    while freed < tofree:
        one = _evict_next(srv, state, volatile, mode, count, monitored)
        if one < 0:
            result = EVICT_FAIL
            break
        freed += one
        keys_freed += 1
        if keys_freed % 16 == 0 and time.monotonic() - start > limit:
            _start_proc(srv, state)
            break
    if monitored:
        latency.add_sample_if_needed(srv, "eviction-cycle", int((time.monotonic() - start) * 1000))
    if result == EVICT_FAIL:
        return result
    return EVICT_RUNNING if state.proc_running else EVICT_OK


def _start_proc(srv: Server, state: EvictionState) -> None:
    """startEvictionTimeProc: keep evicting on the next loop turns."""
    if state.proc_running or srv.loop is None:
        return
    state.proc_running = True
    srv.loop.call_soon(_proc, srv)


def _proc(srv: Server) -> None:
    state: EvictionState = srv.eviction
    srv.update_clock()
    running = bool(srv.maxmemory) and perform_evictions(srv) == EVICT_RUNNING
    if srv.ready_keys:  # an evicted stream fails the XREADGROUPs blocked on it (beforeSleep's part)
        srv.serve_ready_keys()
    if running:
        srv.loop.call_soon(_proc, srv)  # type: ignore[union-attr]
    else:
        state.proc_running = False


# ---- processCommand's maxmemory step ------------------------------------------------------------
def refuses(c: Client, cmd: CommandEntry, argv: list[bytes]) -> bool:
    """Evict as needed before `cmd` runs; must it be refused with OOM?"""
    srv = c.server
    if srv.client_evict_pending:  # processCommand evicts clients before keys
        from raxdb.server.conn.clienteviction import evict_pending

        evict_pending(srv)
        if c.closed:  # the client evicted itself: its command is not run
            return True
    if srv.mem_ok:  # within the limit when last measured, and nothing grew since
        srv.pre_command_oom = False
        return False
    oom = srv.pre_command_oom = perform_evictions(srv) == EVICT_FAIL
    if not oom:
        return False
    if c.multi is not None and cmd.fullname not in _NOT_DENYOOM_IN_MULTI:
        return True  # queuing costs memory too
    return denies_oom(c, cmd, argv)


def denies_oom(c: Client, cmd: CommandEntry, argv: list[bytes]) -> bool:
    """Is the command, with its arguments, one Redis refuses when out of memory (getCommandFlags
    has CMD_DENYOOM)?  EXEC is if a queued command is; a script or function that declares flags
    is unless it declares no-writes or allow-oom."""
    name = cmd.fullname
    if name == "exec":
        return c.multi is not None and any(denies_oom(c, q, a) for q, a in queued(c.multi))
    flags = script_flags(c, cmd, argv)
    if flags is not None:
        return not flags & (FLAG_ALLOW_OOM | FLAG_NO_WRITES)
    return "denyoom" in cmd.flags


# ---- configuration -------------------------------------------------------------------------------
def _apply(srv: Server, value: str, startup: bool = False) -> None:
    limit = int(value)
    was = srv.maxmemory
    srv.maxmemory = limit
    srv.mem_limited = limit != 0
    srv.mem_ok = False
    if bool(limit) != bool(was):
        if limit:
            srv.mem_created = []
            recount(srv)
        else:
            srv.mem_created = None
            for db in srv.dbs:
                db.count_sizes(False)
        notify.install_new_hook(srv)
        if not startup:  # (at start-up the peak is the start-up figure, and replication not set up)
            srv.memory_peak = srv.used_memory()
    if limit and startup:
        if limit < 1024 * 1024:
            LOG.warning(f"WARNING: You specified a maxmemory value that is less than 1MB (current value is {limit} "
                        "bytes). Are you sure this is what you really want?")
    elif limit:
        used = used_memory(srv)
        if limit < used:
            LOG.warning(f"WARNING: the new maxmemory value set via CONFIG SET ({limit}) is smaller than the "
                        f"current memory usage ({used}). This will result in key eviction and/or the inability "
                        "to accept new write commands depending on the maxmemory-policy.")
        _start_proc(srv, srv.eviction)


def attach(srv: Server) -> None:
    srv.eviction = EvictionState()
    srv.config.on_change.setdefault("maxmemory", []).append(lambda v: _apply(srv, v))
    value = srv.config.values["maxmemory"]
    if int(value):
        _apply(srv, value, startup=True)

