# Declarations for compiling fields.py with Cython (setup.py); the interpreter never reads this.
#
# ServerFields and ClientFields become extension types: the base classes of Server and Client,
# whose fields (each public, read and written by Python code as attributes as before) are C struct
# fields for the compiled modules that cimport these and type a local with them
# (server/net/client.pxd's call_command and read path, server/scripting/engine.pxd).  A bint field
# reads back as a bool whatever was stored (only truth-tested fields are bint); a long long one
# holds byte counts, offsets and milliseconds.  ConfigFields, ReplFields, AofFields and UserFields
# are the bases of Config, Replication, AOF and acl.User: the fields holding those are typed with
# them, so a typed server's encoding thresholds, replication offset and write gates, and a typed
# client's user's `free`, are two pointer offsets away.


from raxdb.protocol.reply cimport Encoder


cdef class ConfigFields:
    cdef public tuple list_options, hash_max_listpack, zset_max_listpack, stream_node_limits, set_limits
    cdef public object set_max_intset_entries
    cdef public bint latency_tracking
    cdef public long long proto_max_bulk_len  # (its range, 1 MiB to 2^63 - 1, is a long long's)


cdef class ReplFields:
    cdef public long long master_repl_offset
    cdef public bint write_gate


cdef class AofFields:
    cdef public int state


cdef class UserFields:
    cdef public bint free


cdef class ServerFields:
    cdef public object also_propagate, prop_depth, now_ms, shutting_down, maxmemory, slowlog_ns
    # the counters every write or read bumps, and the notification classes every write tests: C
    # integers, so a typed server's `dirty += 1` is a C add, not a new int object each time
    cdef public long long dirty, stat_keyspace_hits, stat_keyspace_misses, notify_flags
    cdef public long long sample_mask  # a C integer: every call's sampling test reads it
    # maxmemory != 0, set with it (server/memory/evict.py): the C truth value every call's and the
    # fast loop's memory-limit test reads (maxmemory itself is a Python int: CONFIG SET takes
    # values past a long long, as redis-server does)
    cdef public bint mem_limited
    # ... and the accounting under it (server/memory/evict.py): whether the last measure was within
    # the limit and the room it left, the TTLs it saw, the databases it walks, the keys created
    # since, whether the command's start was out of memory (a script's pre_command_oom), whether
    # clients wait to be evicted: every command's check and every write's recount read or write them
    cdef public bint mem_ok, pre_command_oom, client_evict_pending
    cdef public long long mem_room, mem_nexp
    cdef public list mem_dbs, mem_created
    # the clock (server/base/clock.py): the read event stamps now_ms from them
    cdef public long long clock_shift_us
    cdef public bint clock_frozen
    cdef public object replica_gate, rdb_gate, cluster, cluster_script_check
    cdef public ReplFields repl  # typed, as config: the offset and the write gate are C fields
    cdef public AofFields aof
    cdef public ConfigFields config  # typed: the encoding thresholds are C struct fields
    cdef public list monitors  # typed: its truth test (every redis.call's) is a C size check
    cdef public object tracking
    # the read event's: blocked clients' keys to serve, the hot loop's dispatch table (the
    # server's own: its generation's commands), the cluster's slot test, the clients
    # with output to flush (typed: its length test and append are C), the client eviction limit
    cdef public dict ready_keys, fast_dispatch
    cdef public list pending_writes
    cdef public bytearray cluster_served
    cdef public object client_evict_limit
    # EVAL's script cache (server/scripting/scripts.py) and FCALL's function libraries
    # (server/scripting/functions.py), None until the first script or library
    cdef public object script_cache, functions_engine


cdef class ClientFields:
    cdef public object server, db, dbid, resp, tracking, last_argv, last_cmd, lua_debug
    cdef public UserFields user  # typed: a script's start reads whether it is free of ACL rules
    cdef public Encoder enc  # typed: its null reply and the like are C fields
    # the read event's (read_event, _run_fast, queue_output, flush_output): the parsers and their
    # bound methods, the partial batch, the transport, the propagation overrides
    cdef public object exact, reader, walk, _tail, _raw, _raw_done, _base, _base_done, _gets, _has_data, _feed
    cdef public object running, transport, prop_argv, prop_force
    cdef public bint plain, queueing, closed, blocked, close_after_reply, obuf_watch, write_paused, prop_prevent
    cdef public long long tot_net_in, tot_net_out, out_mark, woff, last_interaction, rb_peak, rb_size
    cdef public list obuf  # typed: its truth test, length and append are C
    # a transaction's state (server/commands/t_multi.py, server/events/watch.py): MULTI's queue, the
    # watched keys (typed: EXEC's truth test of them is a C size check), EXEC's argv and queue while
    # it runs, update_plain's count; C fields, so that MULTI,
    # EXEC and the fast loop's queueing read and write them without a descriptor call each
    cdef public object multi, exec_argv, exec_queue
    cdef public list watched
    cdef public bint multi_error, dirty_cas, in_exec
    cdef public long long plain_epoch
    # what a Pub/Sub delivery's output limit check reads (server/conn/obuf.py's check_delivery)
    cdef public long long obuf_soft_since, out_held
    cdef public object replica
    # Redis's reply list while the transport holds output (server/conn/replylist.py; flush_output)
    cdef public object replies
    # the socket flush_output writes itself while uvloop's plain transport holds nothing, or -1,
    # and whether that transport was given output since it last held none (server/net/client.py's
    # Client.transport_changed, flush_output)
    cdef public int wfd
    cdef public bint wheld
    # ASKING, READONLY, ASKED (server/cluster/routing.py): tested by the fast loop in cluster mode
    cdef public int cluster_flags
