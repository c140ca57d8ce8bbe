"""Command implementations, grouped by family like Redis's t_*.c files.

Importing this package registers every handler in the command table (`table.registry.TABLE`).
Each module owns its family and calls down into the rooms that own shared logic; argument parsing
lives in `table.args`, errors in `base.errors`.

Rule: the top layer but the composition root; only command modules (and the entry point, which
imports this package to register them) import a command module.
"""

from raxdb.server.commands import (  # noqa: F401 - imported for their registrations
    t_acl,
    t_bitops,
    t_cluster,
    t_connection,
    t_geo,
    t_hash,
    t_hashexpire,
    t_hll,
    t_keys,
    t_latency,
    t_list,
    t_migrate,
    t_multi,
    t_pubsub,
    t_rdb,
    t_replica,
    t_replication,
    t_scripting,
    t_server,
    t_set,
    t_sort,
    t_stream,
    t_string,
    t_testclock,
    t_testcluster,
    t_testfaults,
    t_zset,
)
