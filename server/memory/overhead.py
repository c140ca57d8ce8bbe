"""Where used_memory goes: Redis's getMemoryOverheadData, the one account behind INFO memory's
overhead and dataset figures and MEMORY STATS (and MEMORY DOCTOR's "is it empty" test).

Redis splits its allocation into a fixed start-up part, the replication buffer (counted as the
backlog up to repl-backlog-size, the rest as replicas' output), the clients' buffers, the AOF
buffer, and per database the main and expires hash tables; whatever is left is the dataset.
raxdb keeps the same split with its own figures, computed when asked (nothing here runs per
command):

- start-up: used_memory is Redis's figure for the same server (server/memory/evict.py: kept under a
  memory limit, estimated when asked without one), so start-up is Redis's own (evict.STARTUP);
- the replication buffer: `ReplMaster.buffer_bytes`, split as Redis splits it;
- a client: CLIENT LIST's tot-mem (conn/clientinfo.py's `client_memory`), summed over the
  master link, pub/sub and normal clients, as Redis's clients_normal;
- a database's tables: 24 bytes per entry (dictEntry) and 8 per bucket of the tables Redis's dicts
  would have (Database.main_slots, expires_slots), as Redis prices its dicts.

The two callers used to price these apart (INFO's overhead was the start-up alone, MEMORY STATS
counted 1 KiB per client), so the same server reported two overheads; now they agree, as in Redis.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from raxdb.server.conn.clientinfo import client_memory
from raxdb.server.conn.obuf import client_class
from raxdb.server.memory import evict

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Client, Server


@dataclass
class Overhead:
    used: int
    peak: int
    startup: int
    repl_backlog: int
    clients_slaves: int
    clients_normal: int
    aof_buffer: int
    dbs: list[tuple[int, int, int]] = field(default_factory=list)  # (db id, main table, expires table)
    total: int = 0
    keys: int = 0

    @property
    def dataset(self) -> int:
        return max(0, self.used - self.total)

    @property
    def net(self) -> int:
        """Redis's net_usage: what was allocated since start-up (at least 1, a divisor)."""
        return max(1, self.used - self.startup)


def startup_memory(srv: Server, used: int) -> int:
    """used_memory_startup: Redis's own (used_memory is Redis's figure for the same server), never
    above what is used now."""
    return min(evict.STARTUP, used)


def overhead(srv: Server, current: Client | None = None) -> Overhead:
    """The account, for the client `current` asking (its running command counts in its query
    buffer, as CLIENT LIST shows it)."""
    # each client sized once: used_memory's estimate and clients_normal both need the figures
    clients = list(srv.clients.values())
    sizes = [client_memory(c) for c in clients]
    used = srv.used_memory(evict.clients_counted_memory(clients, sizes))
    peak = srv.memory_peak = max(srv.memory_peak, used)
    repl_buffer = srv.repl.master.buffer_bytes()
    backlog_size = int(srv.config.values["repl-backlog-size"])
    if srv.repl.replicas and repl_buffer > backlog_size:  # the replicas hold more than the backlog
        repl_backlog, clients_slaves = backlog_size, repl_buffer - backlog_size
    else:
        repl_backlog, clients_slaves = repl_buffer, 0
    if srv.repl.backlog is not None:
        repl_backlog += srv.repl.backlog.index_bytes()
    clients_normal = sum(client_memory(c, current) if c is current else m
                         for c, m in zip(clients, sizes, strict=True) if client_class(c) != "slave")
    o = Overhead(used, peak, startup_memory(srv, used), repl_backlog, clients_slaves, clients_normal,
                 len(srv.aof.buf))
    total = o.startup + repl_backlog + clients_slaves + clients_normal + o.aof_buffer
    for db in srv.dbs:
        if db:
            main = 24 * len(db) + 8 * db.main_slots
            expires = 24 * len(db.expires) + 8 * db.expires_slots
            o.dbs.append((db.id, main, expires))
            total += main + expires
            o.keys += len(db)
    o.total = total
    return o
