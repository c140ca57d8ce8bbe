"""Client eviction (maxmemory-clients): when the memory of all normal and pub/sub clients together
reaches the limit, the largest are disconnected until it is below again, as Redis 7.0 does.

The limit (`limit`, getClientEvictionLimit) is a byte count or a percentage of maxmemory (none
without a maxmemory), never under 128 KiB.  0 turns the feature off: the server keeps
`Server.client_evict_limit` and the read path tests it once per read event.  The sum is kept
under a memory limit too (`noting`), where it is part of used_memory (server/memory/evict.py).

While it is on, each normal or pub/sub client has its memory noted (`Client.mem_noted`) and
`Server.clients_mem` is their sum; a client with CLIENT NO-EVICT counts in it too, as in Redis, but
is never the one evicted.  A client's memory is CLIENT LIST's tot-mem
(conn/clientinfo.py's `client_memory`: its query buffer, the arguments it holds, a queued
MULTI, watched keys, subscriptions, unsent output, and the fixed allocations Redis makes for every
client, as server/conn/clientbufs.py sizes them).  It is noted as Redis updates it (`changed`):

- after each read event of the client (its query buffer and what its commands left queued; a
  CLIENT NO-EVICT it sent takes effect there);
- when output is queued for it by another client's command (a published message, a tracking
  invalidation, a served blocked command);
- at the clients cron's visits (server/conn/clientbufs.py), about once a second for every client
  (output the kernel took, an idle buffer), and only then for a client with CLIENT NO-EVICT; the
  cron evicts if its visits found the sum over the limit;
- when CONFIG SET changes the limit (maxmemory-clients, or maxmemory under a percentage).

An eviction the first two call for waits for the end of Server.flush_writes, as Redis's
beforeSleep evicts after writing the replies, never in a command, or for the next command's
memory check under a memory limit (processCommand evicts clients before keys).

Eviction takes the largest client first (Redis walks its power-of-two size buckets from the top; a
sort gives the same order between buckets), logs "Evicting client: <CLIENT LIST line>", counts
INFO's evicted_clients, and stops once the sum is under the limit, or logs that even evicting
every evictable client was not enough.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raxdb.server.base.log import LOG
from raxdb.server.conn import obuf

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Client, Server

MIN_LIMIT = 128 * 1024  # a smaller limit would leave no room to talk to the server at all


def limit(srv: Server) -> int:
    """getClientEvictionLimit: the limit in bytes, 0 when client eviction is off."""
    values = srv.config.values
    v = values["maxmemory-clients"]
    if v.endswith("%"):
        maxmemory = int(values["maxmemory"])  # read here: this runs among maxmemory's own hooks
        if not maxmemory:
            return 0
        n = maxmemory * int(v[:-1]) // 100
    else:
        n = int(v)
        if n <= 0:
            return 0
    return max(n, MIN_LIMIT)


def counted(c: Client) -> bool:
    """A normal or pub/sub client: its memory is in the sum the limit is compared with, with CLIENT
    NO-EVICT too (Redis's stat_clients_type_memory), though only the others can be evicted."""
    return not c.closed and obuf.client_class(c) in ("normal", "pubsub")


def note(c: Client, cron: bool = False) -> None:
    """updateClientMemUsageAndBucket: the client's memory now, in the sum.  A CLIENT NO-EVICT
    client's is noted by the cron alone, as Redis's clientsCron is what updates it."""
    from raxdb.server.conn.clientinfo import client_memory

    if c.no_evict and not cron and c.server.client_evict_limit:
        return
    srv = c.server
    mem = client_memory(c) if counted(c) else 0
    if mem > c.mem_noted:
        srv.mem_ok = False  # used_memory grew: the next command measures it (server/memory/evict.py)
    srv.clients_mem += mem - c.mem_noted
    c.mem_noted = mem


def forget(c: Client) -> None:
    """A closed client leaves the sum."""
    c.server.clients_mem -= c.mem_noted
    c.mem_noted = 0


def noting(srv: Server) -> bool:
    """Whether clients' memory is summed: for client eviction, and for a memory limit, whose
    used_memory holds the clients' buffers as Redis's allocator counts them (server/memory/evict.py)."""
    return bool(srv.client_evict_limit or srv.maxmemory)


def note_if_noting(c: Client) -> None:
    """A client's buffers grew out of the common path (a partial command held, a flush bigger than
    its reply buffer): noted for the memory limit when client eviction is off (`changed` notes
    every read event while it is on)."""
    srv = c.server
    if srv.maxmemory and not srv.client_evict_limit and not c.closed:
        note(c)


def changed(c: Client) -> None:
    """A read event of `c` was processed, or output was queued for it outside its own commands:
    note it.  An eviction this calls for waits for the end of the loop iteration, after the
    replies are written, as Redis's beforeSleep writes them before it evicts (the command that
    took a client over the limit still gets its reply)."""
    note(c)
    srv = c.server
    if srv.clients_mem >= srv.client_evict_limit and not srv.client_evict_pending:
        srv.client_evict_pending = True
        srv.call_soon(evict_pending, srv)


def evict_pending(srv: Server) -> None:
    """The eviction `changed` asked for: at the end of Server.flush_writes (Redis's
    beforeSleep evicts after writing the replies, before it waits for the next event), or by the
    callback it scheduled when no flush follows."""
    if srv.client_evict_pending:
        srv.client_evict_pending = False
        if srv.client_evict_limit:
            evict(srv)


def renote_all(srv: Server) -> None:
    """A new limit (maxmemory-clients, or maxmemory under a percentage or turning used_memory's
    noting on or off): every client noted again, CLIENT NO-EVICT ones left to the cron, then the
    limit enforced."""
    srv.client_evict_limit = limit(srv)
    if not noting(srv):
        for c in srv.clients.values():
            c.mem_noted = 0
        srv.clients_mem = 0
        return
    for c in list(srv.clients.values()):
        note(c)
    if srv.client_evict_limit and srv.clients_mem >= srv.client_evict_limit:
        evict(srv)


def evict(srv: Server) -> None:
    """evictClients: the largest evictable clients go until the sum is under the limit."""
    from raxdb.server.conn.clientinfo import client_info_line

    cap = srv.client_evict_limit
    if not cap or srv.clients_mem < cap:
        return
    # Redis's buckets: one per power of two from 32 KiB (all smaller clients share the first) to
    # 8 GiB, the largest emptied first, each in the order its clients entered it
    candidates = sorted((c for c in srv.clients.values() if c.mem_noted and not c.closed and not c.no_evict),
                        key=lambda c: max(15, min(33, c.mem_noted.bit_length())), reverse=True)
    for c in candidates:
        if srv.clients_mem < cap:
            return
        if obuf.check(c):  # its output buffer limit frees it first (and it is not counted as evicted)
            continue
        LOG.notice(f"Evicting client: {client_info_line(c)}")
        c.abort()  # out of the sum too
        srv.stat_evicted_clients += 1
    if srv.clients_mem >= cap:
        LOG.warning("Over client maxmemory after evicting all evictable clients")
