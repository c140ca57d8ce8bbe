# Declarations for compiling fields.py with Cython (setup.py); the interpreter never reads this.
#
# ServerFields and ClientFields become extension types: the base classes of Server and Client,
# whose fields (each a public Python object, read and written by Python code as attributes as
# before) are C struct fields for the compiled modules that cimport these and type a local with
# them (server/net/client.pxd's call_command, server/scripting/engine.pxd).


cdef class ServerFields:
    cdef public object also_propagate, prop_depth, dirty, now_ms, shutting_down, maxmemory, slowlog_ns
    cdef public long long sample_mask  # a C integer: every call's sampling test reads it
    cdef public object replica_gate, rdb_gate, aof, repl, cluster, cluster_script_check, config
    cdef public list monitors  # typed: its truth test (every redis.call's) is a C size check
    cdef public object tracking, notify_flags, stat_keyspace_hits, stat_keyspace_misses


cdef class ClientFields:
    cdef public object server, db, dbid, resp, enc, tracking, last_argv, last_cmd, user, lua_debug
