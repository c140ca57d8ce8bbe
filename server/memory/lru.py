"""The data the eviction policies pick keys by, as Redis keeps it in each object's `lru` field: the
time of the key's last access (LRU, read from the server's cached clock) or, under an LFU
maxmemory-policy, its access frequency counter (LFU, with lfu-log-factor and lfu-decay-time).

The databases keep it (storage/keyspace.py: access times and, in LFU mode, counters); `attach`
gives them the server's cached clock and switches them to and from LFU as the configuration says,
at start-up (server/core.py) and whenever maxmemory-policy, lfu-log-factor or lfu-decay-time
change.  Eviction (memory/evict.py) and OBJECT IDLETIME / FREQ (commands/t_keys.py) read it.

Rule: imports only the layers below memory/ (events, config, security, conn, table, base).

Invariants: `attach` is idempotent (one set of configuration hooks per server, however often it is
called: OBJECT calls it too, in case nobody did); the databases keep LFU counters (Database.lfu)
exactly while an LFU policy is configured, with the configuration's counter parameters.
"""

from __future__ import annotations

import weakref
from typing import Any

from raxdb.storage import keyspace

LFU_POLICIES = ("allkeys-lfu", "volatile-lfu")


def _apply_lfu_config(server) -> None:
    values = server.config.values
    keyspace.LFU_PARAMS["log_factor"] = int(values.get("lfu-log-factor", "10"))
    keyspace.LFU_PARAMS["decay_time"] = int(values.get("lfu-decay-time", "1"))
    lfu = values.get("maxmemory-policy") in LFU_POLICIES
    for db in server.dbs:
        db.set_lfu(lfu)


_attached: weakref.WeakSet[Any] = weakref.WeakSet()


def attach(server) -> None:
    """Give the databases the server's cached clock and follow the LFU settings.  Idempotent;
    meant to be called once at start-up (OBJECT also calls it, in case nobody did)."""
    if server in _attached:
        return
    _attached.add(server)
    for db in server.dbs:
        db.clock = server
    _apply_lfu_config(server)
    hooks = server.config.on_change
    for name in ("maxmemory-policy", "lfu-log-factor", "lfu-decay-time"):
        hooks.setdefault(name, []).append(lambda _v, s=server: _apply_lfu_config(s))
