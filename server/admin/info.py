"""INFO: the report's sections, field for field as Redis 7.0 names them.

Field names and section order are Redis 7.0's (checked against a live redis-server in the tests),
so monitoring tools that parse INFO (redis_exporter, Datadog, redis-cli --stat) read raxdb
unchanged.  Values are raxdb's own: counters it keeps are real, used_memory and its breakdown are
what Redis would use for the same data (server/memory/evict.py, server/memory/overhead.py) while
used_memory_rss is the process's resident size, and features raxdb lacks (defragmentation,
threaded I/O) report the idle values a Redis without them reports.

Each section is a function returning its lines; `generate()` joins the requested ones the way
Redis does (lines end in CRLF, sections are separated by an empty line).
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from raxdb.server.base import latency
from raxdb.server.base.loading import ASYNC, SYNC
from raxdb.server.events import pubsub, tracking
from raxdb.server.memory import evict
from raxdb.server.persistence import loading

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Server
    from raxdb.server.net.client import Client

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def process_rss() -> int:
    """Resident set size in bytes (Linux /proc; getrusage's peak elsewhere)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def total_system_memory() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * _PAGE
    except (ValueError, OSError, AttributeError):
        return 0


def bytes_to_human(n: float) -> str:
    """Redis's bytesToHuman: B below 1K, then two decimals with K, M, G, T, P."""
    if n < 1024:
        return "%dB" % n
    for unit in "KMGTP":
        n /= 1024
        if n < 1024 or unit == "P":
            return "%.2f%s" % (n, unit)
    return "%.2fP" % n  # pragma: no cover


def _server(srv: Server) -> list[str]:
    now = time.time()
    uptime = int(now - srv.start_time)
    import platform  # INFO server alone: not imported at start-up

    u = platform.uname()
    cfg = srv.config
    return [
        f"redis_version:{srv.redis_version}",
        "redis_git_sha1:00000000",
        "redis_git_dirty:0",
        f"redis_build_id:{srv.build_id}",
        f"redis_mode:{'cluster' if srv.cluster is not None else 'standalone'}",
        f"os:{u.system} {u.release} {u.machine}",
        "arch_bits:64",
        "monotonic_clock:POSIX clock_gettime",
        "multiplexing_api:epoll" if sys.platform.startswith("linux") else "multiplexing_api:kqueue",
        "atomicvar_api:c11-builtin",
        "gcc_version:0.0.0",
        f"process_id:{srv.pid}",
        f"process_supervised:{srv.supervised}",
        f"run_id:{srv.run_id}",
        f"tcp_port:{cfg.port or cfg.values['tls-port']}",  # the TLS port when only it listens, as Redis
        f"server_time_usec:{int(now * 1_000_000)}",
        f"uptime_in_seconds:{uptime}",
        f"uptime_in_days:{uptime // 86400}",
        f"hz:{cfg.hz}",
        f"configured_hz:{cfg.hz}",
        f"lru_clock:{int(now) & ((1 << 24) - 1)}",
        f"executable:{os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ''}",
        f"config_file:{cfg.config_file or ''}",
        "io_threads_active:0",
        # only while a shutdown waits for its replicas (server/admin/shutdown.py)
        *([f"shutdown_in_milliseconds:{srv.shutdown.deadline_ms - srv.now_ms}"] if srv.shutdown.deadline_ms else []),
    ]


def _clients(srv: Server) -> list[str]:
    clients = list(srv.clients.values())
    return [
        f"connected_clients:{len(clients) - len(srv.repl.replicas)}",  # replicas are not counted
        # getClusterConnectionsCount: two links for each other node
        f"cluster_connections:{(len(srv.cluster.st.nodes) - 1) * 2 if srv.cluster is not None else 0}",
        f"maxclients:{srv.config.maxclients}",
        "client_recent_max_input_buffer:%d" % srv.clients_cron.recent_max()[0],
        "client_recent_max_output_buffer:%d" % srv.clients_cron.recent_max()[1],
        # Redis 7.0 counts clients held by CLIENT PAUSE (BLOCKED_POSTPONE) and those waiting in
        # SHUTDOWN (BLOCKED_SHUTDOWN) as blocked too
        f"blocked_clients:{srv.blocked_on_keys + sum(1 for c in clients if c.postponed()) + srv.shutdown.waiting()}",
        f"tracking_clients:{srv.tracking.clients if srv.tracking is not None else 0}",
        f"clients_in_timeout_table:{sum(1 for c in clients if c.blocked and bool(getattr(c.block_state, 'deadline_ms', 0)))}",
    ]


def _memory(srv: Server, current: Client | None = None) -> list[str]:
    # imported by the first INFO memory (or MEMORY STATS, t_server's), not with the server: its
    # dataclass is made at import, and crash reports import this module at start-up
    from raxdb.server.memory import overhead as memoverhead

    o = memoverhead.overhead(srv, current)
    used, peak, startup, dataset = o.used, o.peak, o.startup, o.dataset
    rss = process_rss()  # the process's own size; used is Redis's figure for the data
    system = total_system_memory()
    maxmem = int(srv.config.values["maxmemory"])
    scripts = _scripting_stats(srv)
    return [
        f"used_memory:{used}",
        f"used_memory_human:{bytes_to_human(used)}",
        f"used_memory_rss:{rss}",
        f"used_memory_rss_human:{bytes_to_human(rss)}",
        f"used_memory_peak:{peak}",
        f"used_memory_peak_human:{bytes_to_human(peak)}",
        "used_memory_peak_perc:%.2f%%" % (used * 100 / peak if peak else 100),
        f"used_memory_overhead:{o.total}",
        f"used_memory_startup:{startup}",
        f"used_memory_dataset:{dataset}",
        "used_memory_dataset_perc:%.2f%%" % (dataset * 100 / o.net),
        f"allocator_allocated:{used}",
        f"allocator_active:{used}",
        f"allocator_resident:{rss}",
        f"total_system_memory:{system}",
        f"total_system_memory_human:{bytes_to_human(system)}",
        "used_memory_lua:32768",
        "used_memory_vm_eval:32768",
        "used_memory_lua_human:32.00K",
        "used_memory_scripts_eval:0",
        f"number_of_cached_scripts:{scripts['number_of_cached_scripts']}",
        f"number_of_functions:{scripts['number_of_functions']}",
        f"number_of_libraries:{scripts['number_of_libraries']}",
        "used_memory_vm_functions:32768",
        "used_memory_vm_total:65536",
        "used_memory_vm_total_human:64.00K",
        "used_memory_functions:0",
        "used_memory_scripts:0",
        "used_memory_scripts_human:0B",
        f"maxmemory:{maxmem}",
        f"maxmemory_human:{bytes_to_human(maxmem)}",
        f"maxmemory_policy:{srv.config.values['maxmemory-policy']}",
        "allocator_frag_ratio:1.00",
        "allocator_frag_bytes:0",
        "allocator_rss_ratio:1.00",
        "allocator_rss_bytes:0",
        "rss_overhead_ratio:1.00",
        "rss_overhead_bytes:0",
        "mem_fragmentation_ratio:1.00",
        "mem_fragmentation_bytes:0",
        f"mem_not_counted_for_evict:{evict.not_counted(srv)}",
        f"mem_replication_backlog:{o.repl_backlog}",
        f"mem_total_replication_buffers:{srv.repl.master.buffer_bytes()}",
        f"mem_clients_slaves:{o.clients_slaves}",
        f"mem_clients_normal:{o.clients_normal}",
        "mem_cluster_links:0",
        f"mem_aof_buffer:{o.aof_buffer}",
        "mem_allocator:libc",
        "active_defrag_running:0",
        "lazyfree_pending_objects:0",
        f"lazyfreed_objects:{srv.stat_lazyfreed}",
    ]


def _scripting_stats(srv: Server) -> dict[str, int]:
    try:
        from raxdb.server import scripting
    except ImportError:  # pragma: no cover - scripting is part of raxdb; keep INFO working without it
        return {"number_of_cached_scripts": 0, "number_of_functions": 0, "number_of_libraries": 0}
    return scripting.stats(srv)


def _persistence(srv: Server) -> list[str]:
    g = srv.persistence_info
    state = g("loading", 0)
    return [
        f"loading:{int(state == SYNC)}",
        f"async_loading:{int(state == ASYNC)}",
        *srv.persistence.childinfo.info_lines(),
        f"rdb_changes_since_last_save:{srv.dirty}",
        f"rdb_bgsave_in_progress:{g('rdb_bgsave_in_progress', 0)}",
        f"rdb_last_save_time:{srv.lastsave}",
        f"rdb_last_bgsave_status:{g('rdb_last_bgsave_status', 'ok')}",
        f"rdb_last_bgsave_time_sec:{g('rdb_last_bgsave_time_sec', -1)}",
        f"rdb_current_bgsave_time_sec:{srv.persistence.bgsave_seconds()}",
        f"rdb_saves:{g('rdb_saves', 0)}",
        f"rdb_last_cow_size:{srv.persistence.childinfo.rdb_cow_bytes}",
        f"rdb_last_load_keys_expired:{g('rdb_last_load_keys_expired', 0)}",
        f"rdb_last_load_keys_loaded:{g('rdb_last_load_keys_loaded', 0)}",
        *srv.aof.info(),
        "module_fork_in_progress:0",
        "module_fork_last_cow_size:0",
        *srv.aof.info_enabled(),
        *(loading.info_lines(srv) if state else ()),
    ]


def _stats(srv: Server) -> list[str]:
    net_in, net_out = srv.net_bytes()
    kbps_in, kbps_out, kbps_repl_in, kbps_repl_out = srv.instantaneous_kbps()
    channels, patterns, shard = pubsub.counts(srv)
    exceeded = srv.eviction.exceeded_us()
    exceeded = (exceeded[0] // 1000, exceeded[1] // 1000)
    tracked = tracking.info_stats(srv)
    return [
        f"total_connections_received:{srv.stat_numconnections}",
        f"total_commands_processed:{srv.total_commands()}",
        f"instantaneous_ops_per_sec:{srv.instantaneous_ops()}",
        f"total_net_input_bytes:{net_in}",
        f"total_net_output_bytes:{net_out}",
        f"total_net_repl_input_bytes:{srv.stat_net_repl_input_bytes}",
        f"total_net_repl_output_bytes:{srv.repl.master.repl_output_bytes}",
        "instantaneous_input_kbps:%.2f" % kbps_in,
        "instantaneous_output_kbps:%.2f" % kbps_out,
        "instantaneous_input_repl_kbps:%.2f" % kbps_repl_in,
        "instantaneous_output_repl_kbps:%.2f" % kbps_repl_out,
        f"rejected_connections:{srv.stat_rejected_conn}",
        f"sync_full:{srv.repl.master.sync_full}",
        f"sync_partial_ok:{srv.repl.master.sync_partial_ok}",
        f"sync_partial_err:{srv.repl.master.sync_partial_err}",
        f"expired_keys:{srv.stat_expired_keys}",
        "expired_stale_perc:%.2f" % (srv.expire_cycle.stale_perc * 100),
        f"expired_time_cap_reached_count:{srv.expire_cycle.time_cap_count}",
        f"expire_cycle_cpu_milliseconds:{srv.expire_cycle.time_used_us // 1000}",
        f"evicted_keys:{srv.stat_evicted_keys}",
        f"evicted_clients:{srv.stat_evicted_clients}",
        "total_eviction_exceeded_time:%d" % exceeded[0],
        "current_eviction_exceeded_time:%d" % exceeded[1],
        f"keyspace_hits:{srv.stat_keyspace_hits}",
        f"keyspace_misses:{srv.stat_keyspace_misses}",
        f"pubsub_channels:{channels}",
        f"pubsub_patterns:{patterns}",
        f"pubsubshard_channels:{shard}",
        f"latest_fork_usec:{srv.persistence.fork_usec}",
        f"total_forks:{srv.persistence.total_forks}",
        f"migrate_cached_sockets:{len(srv.migrate_sockets)}",
        "slave_expires_tracked_keys:0",
        "active_defrag_hits:0",
        "active_defrag_misses:0",
        "active_defrag_key_hits:0",
        "active_defrag_key_misses:0",
        "total_active_defrag_time:0",
        "current_active_defrag_time:0",
        "tracking_total_keys:%d" % tracked[0],
        "tracking_total_items:%d" % tracked[1],
        "tracking_total_prefixes:%d" % tracked[2],
        f"unexpected_error_replies:{srv.stat_unexpected_error_replies}",
        f"total_error_replies:{srv.stat_total_error_replies}",
        "dump_payload_sanitizations:0",
        f"total_reads_processed:{getattr(srv, 'stat_reads', 0)}",
        f"total_writes_processed:{getattr(srv, 'stat_writes', 0)}",
        "io_threaded_reads_processed:0",
        "io_threaded_writes_processed:0",
        f"reply_buffer_shrinks:{srv.clients_cron.shrinks}",
        f"reply_buffer_expands:{srv.clients_cron.expands}",
    ]


def _replication(srv: Server) -> list[str]:
    return srv.repl.info()


def _cpu(srv: Server) -> list[str]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    main = resource.getrusage(getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF))
    return [
        "used_cpu_sys:%.6f" % me.ru_stime,
        "used_cpu_user:%.6f" % me.ru_utime,
        "used_cpu_sys_children:%.6f" % kids.ru_stime,
        "used_cpu_user_children:%.6f" % kids.ru_utime,
        "used_cpu_sys_main_thread:%.6f" % main.ru_stime,
        "used_cpu_user_main_thread:%.6f" % main.ru_utime,
    ]


def _modules(srv: Server) -> list[str]:
    return []


def _commandstats(srv: Server) -> list[str]:
    out = []
    for c in srv.table.every_command():
        if c.calls or c.rejected_calls or c.failed_calls:
            usec = c.usec_total() if hasattr(c, "usec_total") else c.usec // 1000
            per = usec / c.calls if c.calls else 0.0
            out.append("cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d"
                       % (c.fullname, c.calls, usec, per, c.rejected_calls, c.failed_calls))
    return out


def _errorstats(srv: Server) -> list[str]:
    # Redis keeps them in a rax: sorted by their bytes
    return [f"errorstat_{code}:count={n}" for code, n in sorted(srv.errorstats.items(),
                                                                 key=lambda kv: kv[0].encode(errors="surrogateescape"))]


def _latencystats(srv: Server) -> list[str]:
    if not srv.config.latency_tracking:  # the section's title alone, as Redis prints it then
        return []
    percentiles = srv.config.latency_percentiles
    return [latency.info_line(c, hist, percentiles) for c in srv.table.every_command()
            if (hist := c.latency_histogram())]


def _cluster(srv: Server) -> list[str]:
    return ["cluster_enabled:1" if srv.cluster is not None else "cluster_enabled:0"]


def _keyspace(srv: Server) -> list[str]:
    # avg_ttl: the active expire cycle's running average (storage/keyspace.py's Database.avg_ttl)
    return [f"db{db.id}:keys={len(db)},expires={len(db.expires)},avg_ttl={db.avg_ttl}" for db in srv.dbs if db]


# Section name -> (title, generator), in Redis's order.
SECTIONS: dict[str, tuple[str, Callable[[Server], list[str]]]] = {
    "server": ("Server", _server),
    "clients": ("Clients", _clients),
    "memory": ("Memory", _memory),
    "persistence": ("Persistence", _persistence),
    "stats": ("Stats", _stats),
    "replication": ("Replication", _replication),
    "cpu": ("CPU", _cpu),
    "modules": ("Modules", _modules),
    "commandstats": ("Commandstats", _commandstats),
    "errorstats": ("Errorstats", _errorstats),
    "latencystats": ("Latencystats", _latencystats),
    "cluster": ("Cluster", _cluster),
    "keyspace": ("Keyspace", _keyspace),
}
DEFAULT = ("server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules",
           "errorstats", "cluster", "keyspace")


def requested(args: list[bytes]) -> set[str]:
    """Section names from INFO's arguments: none means default; all / everything / default expand;
    unknown names are ignored (an empty reply if nothing is left), as in Redis."""
    if not args:
        return set(DEFAULT)
    names: set[str] = set()
    for a in args:
        s = a.decode(errors="replace").lower()
        if s in ("all", "everything"):
            names.update(SECTIONS)
        elif s == "default":
            names.update(DEFAULT)
        else:
            names.add(s)
    return names


def generate(srv: Server, args: list[bytes], current: Client | None = None) -> bytes:
    """INFO's text for the sections `args` name, as the client `current` asks for it: the memory
    section counts its running command in its query buffer, as Redis does (MEMORY STATS alike)."""
    names = requested(args)
    parts = []
    for key, (title, fn) in SECTIONS.items():
        if key in names:
            lines = _memory(srv, current) if fn is _memory else fn(srv)
            parts.append("".join(f"{line}\r\n" for line in [f"# {title}", *lines]))
    return "\r\n".join(parts).encode(errors="surrogateescape")
