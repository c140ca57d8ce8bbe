"""The fields of the server, a client and the configuration that the per-command paths read, as
base classes.

`Server` (server/core.py), `Client` (server/net/client.py), `Config` (server/config/options.py),
`Replication` (server/replication/state.py), `AOF` (server/persistence/aof.py) and `User`
(server/security/acl.py) are plain Python classes (a client is an asyncio.Protocol); an attribute of one, read from a
compiled module, costs a type lookup and a descriptor call or a dict lookup (~130 instructions).
Their hot fields live here instead, in a base class each: compiled (fields.pxd), the base is an
extension type whose fields are C struct fields, so a compiled module that holds the server or the
client in a typed local (`call_command`, redis.call's path in server/scripting/engine.py, the read
event's path in server/net/client.py, the type commands' writes) reads and writes them with a
pointer offset.  To Python code nothing changes: each field is an attribute of the object as
before, declared in server/base/interfaces.py (the configuration's in Config), set where it always
was.  Interpreted, these are plain base classes with __slots__.  Rule: fields only, no behaviour
and no defaults (every one is set by the subclass's __init__ or the attach functions it calls).
"""

from __future__ import annotations


class ConfigFields:
    """What the type commands' writes read of the configuration: the encoding thresholds, parsed
    by Config.refresh once per change (list-max-listpack-size with list-compress-depth, the hash
    and sorted-set listpack limits, set-max-intset-entries, the set limits of storage/set_type.py,
    the stream node limits); what every timed command reads: latency-tracking; and the bulk
    length limit the bitmap commands' offsets are checked against: proto-max-bulk-len."""

    __slots__ = ("list_options", "hash_max_listpack", "zset_max_listpack", "set_max_intset_entries",
                 "set_limits", "stream_node_limits", "latency_tracking", "proto_max_bulk_len")


class ReplFields:
    """What a read event and a script's first write read of replication (Replication's base): the
    master offset (a client's write offset, for WAIT) and the min-replicas write gate."""

    __slots__ = ("master_repl_offset", "write_gate")


class AofFields:
    """What a script's first write reads of the AOF (AOF's base): its state (OFF, ON,
    WAIT_REWRITE)."""

    __slots__ = ("state",)


class UserFields:
    """What a script's start reads of its caller's ACL user (User's base): whether some selector
    allows every command, key and channel (`free`: no ACL check is needed)."""

    __slots__ = ("free",)


class ServerFields:
    """What a command's call, redis.call and a script's entry read of the server: propagation's op
    list, depth and dirty count, the cached clock and the clock's state, the shutdown flag, the memory limit, the slow
    log's threshold and timing sample, the monitors, the write gates (replica, save, AOF,
    replication), the cluster and its script check, the configuration, client-side caching's
    state, the keyspace notification classes and the keyspace hit and miss counts; and what a read
    event reads: the keys that woke blocked clients, the command table's fast dispatch, the cluster's slot test, the clients with
    output to flush and the client eviction limit; and EVALSHA's script cache and FCALL's function
    libraries; and what memory accounting under a limit reads and writes per command
    (server/memory/evict.py)."""

    __slots__ = ("also_propagate", "prop_depth", "dirty", "now_ms", "shutting_down", "maxmemory", "mem_limited", "slowlog_ns",
                 "sample_mask", "monitors", "replica_gate", "rdb_gate", "aof", "repl", "cluster",
                 "cluster_script_check", "config", "tracking", "notify_flags", "stat_keyspace_hits",
                 "stat_keyspace_misses", "ready_keys", "pending_writes", "cluster_served", "client_evict_limit",
                 "script_cache", "functions_engine", "clock_shift_us", "clock_frozen", "fast_dispatch",
                 "mem_ok", "pre_command_oom", "client_evict_pending", "mem_room", "mem_nexp", "mem_dbs", "mem_created")


# A client's `cluster_flags` (server/cluster/routing.py words what they mean): ASKING pending, READONLY,
# and ASKED (the command running came after ASKING).  Here, below both, for the fast loop
# (server/net/client.py) to test.
ASKING = 1
READONLY = 2
ASKED = 4


class ClientFields:
    """What a command's call and a script's entry read of a client: its server, database, protocol
    and reply encoding, tracking state, last command and its arguments, ACL user and debugging
    mode (SCRIPT DEBUG); and what its read events read and write: its parsers, the partial batch,
    its state flags, byte counts and output queue, its transport and propagation overrides; and its
    transaction's state, which MULTI, EXEC and the fast loop's queueing read and write."""

    __slots__ = ("server", "db", "dbid", "resp", "enc", "tracking", "last_argv", "last_cmd", "user", "lua_debug",
                 "exact", "reader", "walk", "_tail", "_raw", "_raw_done", "_base", "_base_done", "_gets", "_has_data", "_feed",
                 "running", "transport", "prop_argv", "prop_force", "plain", "queueing", "closed", "blocked",
                 "close_after_reply", "obuf_watch", "write_paused", "prop_prevent", "tot_net_in", "tot_net_out",
                 "out_mark", "woff", "last_interaction", "rb_peak", "rb_size", "obuf",
                 "multi", "multi_error", "watched", "dirty_cas", "in_exec", "exec_argv", "exec_queue", "plain_epoch",
                 "obuf_soft_since", "replica", "out_held", "replies", "wfd", "wheld", "cluster_flags")
