"""What a client looks like from outside: its CLIENT LIST / CLIENT INFO line, its memory (tot-mem,
getClientMemoryUsage) and the rule for its name.

CLIENT LIST / INFO (commands/t_client.py) print `client_info_line`; the same line goes into the
log where Redis logs a client (client eviction, a replica's rogue reply, FAILOVER, REPLICAOF), the
ACL log's client-info and the crash report.  `client_memory` is the figure client eviction
(conn/clienteviction.py), used_memory (memory/evict.py) and the memory overhead account
(memory/overhead.py) go by.  `validate_client_name` is CLIENT SETNAME's and HELLO SETNAME's check.

Rule: imports only table/ and base/ of the server (and conn/, its own layer): the client is known
by its attributes alone, as the Client (net/client.py) defines them.

Invariants: nothing here changes the client it describes.  The line has Redis 7.0's fields in
Redis 7.0's order (plus lib-name and lib-ver, empty until CLIENT SETINFO sets them, on a server
answering as 7.2+: compat-version), so tools that parse it keep working; the memory fields are Redis's figures for the same
buffers (conn/clientbufs.py; obl, oll and omem: conn/replylist.py's layout of the output not yet
taken), and tot-mem on the line is `client_memory` of the same client.
`current` is the client running the command: its query buffer and argv still hold that command,
and its cmd= names it, as in Redis.
"""

from __future__ import annotations

from raxdb.server.base.errors import CommandError
from raxdb.server.base.multiqueue import queued, queued_count
from raxdb.server.conn import clientbufs, replylist
from raxdb.server.conn.obuf import is_replica, output_used


# ---- CLIENT LIST / INFO ------------------------------------------------------------------------
def _flags(c) -> str:
    f = ""
    if is_replica(c):
        f += "S"
    if c.is_monitor:
        f += "O"
    if c.is_master:
        f += "M"
    if c.channels or c.patterns or c.shard_channels:
        f += "P"
    if c.multi is not None or c.exec_queue is not None:
        f += "x"
    if c.blocked:
        f += "b"
    ct = c.tracking
    if ct is not None:
        f += "t"
        if ct.broken:
            f += "R"
        if ct.bcast:
            f += "B"
    if c.dirty_cas:
        f += "d"
    if c.close_after_reply:
        f += "c"
    if c.unix_socket:
        f += "U"
    if c.no_evict:
        f += "e"
    if c.no_touch:
        f += "T"
    return f or "N"


def _argv_mem(argv) -> int:
    return sum(len(a) for a in argv) if argv else 0


def _output(c) -> tuple[int, int, int, int]:
    """CLIENT LIST's obl, oll and omem, and what the transport holds (server/conn/replylist.py); a
    replica's omem is its share of the replication buffer."""
    try:
        if is_replica(c):
            return 0, 0, output_used(c), replylist.held(c)
        return replylist.figures(c)
    except (AttributeError, RuntimeError):
        return 0, 0, 0, 0


def _memory_parts(c, current, omem: int) -> tuple[int, int, int, int, int, int, list | None]:
    """CLIENT LIST's memory fields (qbuf, qbuf-free, argv-mem, multi-mem, and `omem` as given), the
    number of arguments argv-mem holds, and the MULTI queue multi-mem was read from."""
    me = c is current
    running, multi = _running(c)
    qbuf, qbuf_free = _query_buffer(c, running if me else None)
    if me or c.blocked:  # Redis keeps a blocked command's argv
        argv_mem, argc = _argv_mem(running), len(running) if running else 0
    else:  # or the arguments of a command still arriving
        argv_mem, argc = c.partial_args()
    # mstate.argv_len_sums: each queued command's argument bytes and its argv's pointers
    multi_mem = sum(_argv_mem(argv) + 8 * len(argv) for _, argv in queued(multi)) if multi else 0
    return qbuf, qbuf_free, argv_mem, multi_mem, omem, argc, multi


def _running(c) -> tuple[list[bytes] | None, list | None]:
    """The argv and MULTI queue Redis's client holds: while EXEC runs it is still in MULTI, its
    argv EXEC's, until EXEC ends."""
    if c.exec_queue is not None:
        return c.exec_argv, c.exec_queue
    return c.last_argv, c.multi


def _dict_overhead(n: int) -> int:
    """A Redis dict of `n` entries: 24 bytes per dictEntry, 8 per slot (a power of two, at least 4)."""
    return 24 * n + 8 * max(4, 1 << (n - 1).bit_length()) if n else 0


def client_memory(c, current=None) -> int:
    """tot-mem (getClientMemoryUsage): what the client's buffers hold (CLIENT LIST's memory
    fields) and Redis's bookkeeping for it (`_bookkeeping`).  Client eviction goes by it
    (conn/clienteviction.py); memory/overhead.py sums it for INFO and MEMORY STATS."""
    return _total(c, *_memory_parts(c, current, _output(c)[2]))


def _total(c, qbuf: int, qbuf_free: int, argv_mem: int, multi_mem: int, omem: int, argc: int,
           multi: list | None) -> int:
    """getClientMemoryUsage from the fields: the output, the query buffer's allocation, the client
    struct and its reply buffer (conn/clientbufs.py's figures), the argv held with its
    pointers, the MULTI queue and `_bookkeeping`."""
    count = queued_count(multi) if multi else 0
    mem = omem + clientbufs.query_zmalloc(qbuf + qbuf_free) + clientbufs.CLIENT_STRUCT + c.rb_size
    mem += argv_mem + 8 * argc + multi_mem
    if count:  # mstate.commands: 24-byte multiCmds, 2 at first, doubled when full
        mem += 24 * max(2, 1 << (count - 1).bit_length())
    return mem + _bookkeeping(c)


def _bookkeeping(c) -> int:
    """Redis's memory per watched key (a list node and a watchedKey, 56 bytes), per subscription (a
    dict entry and its slot; a list node per pattern) and per tracking prefix."""
    mem = 56 * len(c.watched) + 24 * len(c.patterns)
    mem += _dict_overhead(len(c.channels)) + _dict_overhead(len(c.shard_channels))
    ct = c.tracking
    if ct is not None and ct.prefixes:
        mem += 32 * len(ct.prefixes)  # numnodes * sizeof(raxNode) * sizeof(raxNode*), a node each
    return mem


def client_info_line(c, current=None) -> str:
    """One CLIENT LIST line (without the newline).  `current` is the client running the command
    (its cmd= is the command in progress, as in Redis)."""
    srv = c.server
    now = srv.now_ms
    me = c is current
    obl, oll, omem, held = _output(c)
    parts = _memory_parts(c, current, omem)
    qbuf, qbuf_free, argv_mem, multi_mem, _, _, multi = parts
    last = c.last_cmd
    running = _running(c)[0]
    if me and running:
        cmd = srv.table.lookup(running)
        last = cmd if cmd is not None else last
    cmd_name = getattr(last, "fullname", last) or "NULL"
    name = c.name.decode(errors="replace")
    line = (f"id={c.id} addr={c.addr} laddr={c.laddr} fd={c.fd} name={name} age={(now - c.ctime) // 1000} "
            f"idle={max(0, now - c.last_interaction) // 1000} flags={_flags(c)} db={c.dbid} "
            f"sub={len(c.channels)} psub={len(c.patterns)} ssub={len(c.shard_channels)} "
            f"multi={queued_count(multi) if multi is not None else -1} qbuf={qbuf} qbuf-free={qbuf_free} argv-mem={argv_mem} "
            f"multi-mem={multi_mem} rbs={c.rb_size} rbp={c.rb_peak} obl={obl} oll={oll} omem={omem} "
            f"tot-mem={_total(c, *parts)} events={'rw' if held else 'r'} cmd={cmd_name} "
            f"user={c.user.name.decode(errors='surrogateescape')} redir={ct.redirect if (ct := c.tracking) is not None else -1} resp={c.resp}")
    if srv.config.compat_version >= (7, 2):  # CLIENT SETINFO's fields, empty until it sets them
        line += f" lib-name={c.lib_name.decode(errors='replace')} lib-ver={c.lib_ver.decode(errors='replace')}"
    return line


def _query_buffer(c, running: list[bytes] | None) -> tuple[int, int]:
    """(qbuf=, qbuf-free=): the bytes received and not yet run, and the room held for the rest of a
    big bulk being received (`Client.bulk_room`: Redis sizes its query buffer for such a bulk at its
    header, and keeps only its data).  For the client asking, Redis's query buffer still holds the
    command running (26 bytes for a multibulk CLIENT LIST; EXEC's 14 for a command it runs),
    `running`, so it is counted in its request form."""
    pending, room = clientbufs.query_buffer(c)
    if running:
        pending += len(b"*%d\r\n" % len(running)) + sum(len(b"$%d\r\n" % len(a)) + len(a) + 2 for a in running)
    if not room:  # the allocation's room beyond what it holds (conn/clientbufs.py)
        room = max(0, clientbufs.query_alloc(c) - pending)
    return pending, room


# ---- the client's name --------------------------------------------------------------------------
def validate_client_name(name: bytes) -> None:
    """CLIENT SETNAME / HELLO SETNAME: no spaces, newlines or other non-printable bytes."""
    for b in name:
        if b < 33 or b > 126:
            raise CommandError("ERR Client names cannot contain spaces, newlines or special characters.")
