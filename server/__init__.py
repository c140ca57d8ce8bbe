"""raxdb's server, in layers; each imports only the layers below it (pyproject.toml's import-linter
contracts, `make lint`):

    core, main    the composition root: the Server object, its wiring of hooks, the entry point
    commands/     the command implementations, one t_*.py per family (Redis's t_*.c)
    admin/        INFO, shutdown, crash reports, supervision, DEBUG DIGEST
    cluster/      Redis Cluster: the slot map and routing, the cluster bus, nodes.conf, replicas and failover
    replication/  shared state, the master side, the replica side, FAILOVER
    persistence/  RDB snapshots, the AOF, loading, forked children
    scripting/    Lua: EVAL scripts, FUNCTION libraries, the debugger
    net/          the client connection and dispatch, blocking operations, the unix socket
    memory/       maxmemory and eviction, the memory overhead account
    events/       key access, notifications, WATCH, tracking, propagation, pub/sub
    config/       the option table and CONFIG
    security/     ACL, protected mode
    conn/         a client's buffers and limits, lifecycle events
    table/        the command table and its metadata, argument parsing, key positions
    base/         errors, log, numbers, latency, process title, the interfaces (typing.Protocols)
"""
