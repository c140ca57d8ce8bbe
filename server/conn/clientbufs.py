"""The sizes of Redis's per-client buffers, kept as figures: the query buffer's allocation and the
reply buffer's size and peak, resized by a model of Redis 7.0's clientsCron.

raxdb's real buffers are hiredis's and the transport's, sized by neither rule; but Redis's sizes
show through CLIENT LIST (qbuf-free, rbs, rbp, tot-mem), the clients' memory (INFO's
mem_clients_normal, MEMORY STATS, client eviction by maxmemory-clients), INFO's
client_recent_max_input_buffer / _output_buffer and reply_buffer_shrinks / _expands.  So each
client carries the figures Redis's would have:

- The query buffer (`qb_alloc`, an sds's allocation): empty until the first read, which makes room
  for a 16 KiB read (PROTO_IOBUF_LEN: 20474 bytes once the allocator's slack is taken); a big
  argument (32 KiB or more) being received leaves room for all of it (read off the bulk headers
  of a read of 32 KiB or more, or of a command left partial).  Small reads are not tracked one
  by one, which would cost on every request: a read since the cron last set the figure (tot_net_in past `qb_in`) means the first read's room is there again.  The cron frees
  the room of a client idle for more than 2 seconds, and shrinks a buffer over 32 KiB to the bytes
  read since its last visit when it is more than twice that.
- The reply buffer (`rb_size`, `rb_peak`): 16 KiB at first, its peak the most output queued in
  one loop iteration (what Redis's c->buf holds before the write), at most its size.  The cron
  halves it towards 1 KiB (to the peak + 1) while the peak stays under half, doubles it back up to
  16 KiB while the peak fills it, and resets the peak to 0 every reply-buffer-peak-reset-time
  (5 s; DEBUG REPLYBUFFER PEAK-RESET-TIME and RESIZING change them, as in Redis).

The cron visits clients as clientsCron does: every tick, numclients / hz of them (at least 5),
rotating the client list tail to head, so a new client (appended at the tail by
`Client.connection_made`) is seen at the next tick, each about once a second, and a few clients
ten times a second.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from raxdb.server.base.lazyre import LazyPattern
from raxdb.server.conn import clienteviction
from raxdb.server.conn.obuf import output_used
from raxdb.storage.alloc import sds_header, size_class

if TYPE_CHECKING:
    from raxdb.server.base.interfaces import Client, Server

QB_FIRST = 20474  # sdsMakeRoomForNonGreedy(sdsempty(), PROTO_IOBUF_LEN): 20480 usable, less header and NUL
BIG = 32 * 1024  # PROTO_MBULK_BIG_ARG, PROTO_RESIZE_THRESHOLD
RB_MIN = 1024  # PROTO_REPLY_MIN_BYTES
RB_CHUNK = 16 * 1024  # PROTO_REPLY_CHUNK_BYTES
PEAK_RESET_MS = 5000  # REPLY_BUFFER_DEFAULT_PEAK_RESET_TIME
CLIENT_STRUCT = 768  # zmalloc_size(c): Redis 7.0's client struct in its size class
CRON_MIN_ITERATIONS = 5  # CLIENTS_CRON_MIN_ITERATIONS
PEAK_SLOTS = 8  # CLIENTS_PEAK_MEM_USAGE_SLOTS: the recent-max figures cover 8 seconds


def query_alloc(c: Client) -> int:
    """The query buffer's allocation (qbuf + qbuf-free when no big argument is being received)."""
    if c.tot_net_in > c.qb_in:
        return max(c.qb_alloc, QB_FIRST)
    return c.qb_alloc


def query_zmalloc(alloc: int) -> int:
    """sdsZmallocSize of a query buffer with this allocation (never an sdshdr5: it regrows)."""
    return size_class(max(3, sds_header(alloc)) + alloc + 1)


_BIG_HEADER = LazyPattern(rb"\$(\d{5,19})\r\n")  # compiled by its first big read; bounded: an argument's bytes may hold anything


_FIND_SPACING = 2048  # '$' are found one by one while they average one per this many bytes


def biggest_bulk(data: bytes) -> int:
    """The largest bulk length ("$<digits>\r\n", 5 digits or more) anywhere in `data`, 0 if none.
    The first '$' (one per `_FIND_SPACING` bytes of the read) are found by bytes.find (memchr): a
    read of big arguments holds few, and the regex would step through every byte of their payloads
    (a fifth of SET's CPU with 10 KB values at -P 16); a read of many small commands goes to the
    regex after them."""
    best = 0
    find = data.find
    i = find(b"$")
    for _ in range(len(data) // _FIND_SPACING):
        if i < 0:
            return best
        m = _BIG_HEADER.match(data, i)
        if m is not None:
            v = int(m.group(1))
            if v > best:
                best = v
        i = find(b"$", i + 1)
    if i < 0:
        return best
    return max([best, *(int(m) for m in _BIG_HEADER.findall(data, i))])


def big_read(c: Client, data: bytes, biggest: int = -1, start: int = 0) -> bool:
    """A read of 32 KiB or more: an argument of 32 KiB or more in it leaves Redis's query buffer
    with room for one as big (the fat-argument path), whichever way the reads cut it.  True when
    such an argument is longer than the read from `start` (what is still to be parsed of it), so
    still arriving (or a payload's bytes only look like its header: then the exact parser, which
    the caller hands the read to, finds none).  `biggest`: the longest bulk the read announces
    from `start` on when the caller walked its frames, -1 to look for headers here (biggest_bulk)."""
    if biggest < 0:
        biggest = biggest_bulk(data)
    if biggest >= BIG:
        c.qb_alloc = max(query_alloc(c), biggest + 2)
        c.qb_in = c.tot_net_in
        return biggest + 2 > len(data) - start
    return False


def partial_read(c: Client) -> int:
    """A read left a command partly received: while a big argument (32 KiB or more) arrives,
    Redis's query buffer holds room for all of it, and keeps that room after it (the fat-argument
    path makes the next query buffer that big) until the cron shrinks it.  The bytes of that
    argument still to come (0 when none is arriving)."""
    length, room = query_buffer(c)
    if room:
        c.qb_alloc = max(query_alloc(c), length + room)
        c.qb_in = c.tot_net_in
    return room


def new_reply_size(size: int) -> int:
    """zmalloc_usable of a reply buffer of `size` bytes."""
    return size_class(size)


class ClientsCron:
    """clientsCron's buffer part and its recent-max slots, one per server."""

    def __init__(self, srv: Server) -> None:
        self.srv = srv
        self.rotation: deque[Client] = deque()
        self.peak_reset_ms = PEAK_RESET_MS  # DEBUG REPLYBUFFER PEAK-RESET-TIME (-1: never)
        self.resizing = True  # DEBUG REPLYBUFFER RESIZING
        self.shrinks = 0  # INFO's reply_buffer_shrinks
        self.expands = 0  # reply_buffer_expands
        self.peak_in = [0] * PEAK_SLOTS  # ClientsPeakMemInput, by second
        self.peak_out = [0] * PEAK_SLOTS

    def tick(self, now_ms: int) -> None:
        srv = self.srv
        clients = srv.clients
        n = len(clients)
        iterations = n // max(1, srv.config.hz)
        if iterations < CRON_MIN_ITERATIONS:
            iterations = min(n, CRON_MIN_ITERATIONS)
        slot = (now_ms // 1000) % PEAK_SLOTS
        self.peak_in[(slot + 1) % PEAK_SLOTS] = 0  # the next second starts from nothing
        self.peak_out[(slot + 1) % PEAK_SLOTS] = 0
        rotation = self.rotation
        noting = clienteviction.noting(srv)
        while iterations > 0 and rotation:
            c = rotation.pop()  # listRotateTailToHead: the newest client first, then backwards
            if clients.get(c.id) is not c:  # gone: it leaves the rotation
                continue
            rotation.appendleft(c)
            iterations -= 1
            self._resize_query(c, now_ms)
            if self.resizing:
                self._resize_reply(c, now_ms)
            if noting:  # updateClientMemUsageAndBucket: client eviction's sum, and used_memory's
                clienteviction.note(c, cron=True)
            in_usage = query_zmalloc(query_alloc(c))
            if in_usage > self.peak_in[slot]:
                self.peak_in[slot] = in_usage
            out_usage = output_used(c)
            if out_usage > self.peak_out[slot]:
                self.peak_out[slot] = out_usage
        if srv.client_evict_limit and srv.clients_mem >= srv.client_evict_limit:
            clienteviction.evict(srv)  # what the visits found (Redis's beforeSleep evicts next)

    def _resize_query(self, c: Client, now_ms: int) -> None:
        """clientsCronResizeQueryBuffer."""
        alloc = query_alloc(c)
        qblen = query_buffer(c)[0]
        if alloc - qblen > 4096:
            if now_ms // 1000 - c.last_interaction // 1000 > 2:  # idle for long: the room goes
                alloc = qblen
            else:
                peak = max(qblen, c.tot_net_in - c.qb_visit_in)  # at most what was read since
                if alloc > BIG and alloc // 2 > peak:
                    alloc = peak
        c.qb_alloc = alloc
        c.qb_in = c.qb_visit_in = c.tot_net_in

    def _resize_reply(self, c: Client, now_ms: int) -> None:
        """clientsCronResizeOutputBuffer."""
        size, peak = c.rb_size, c.rb_peak
        new = 0
        if size // 2 >= RB_MIN and peak < size // 2:
            new = max(RB_MIN, peak + 1)
            self.shrinks += 1
        elif size * 2 < RB_CHUNK * 2 and peak == size:
            new = min(RB_CHUNK, size * 2)
            self.expands += 1
        if self.peak_reset_ms >= 0 and now_ms - c.rb_reset >= self.peak_reset_ms:
            c.rb_peak = 0  # the buffer position: written out by the time the cron runs
            c.rb_reset = now_ms
        if new:
            c.rb_size = new_reply_size(new)

    def recent_max(self) -> tuple[int, int]:
        """INFO's client_recent_max_input_buffer and client_recent_max_output_buffer."""
        return max(self.peak_in), max(self.peak_out)


def query_buffer(c: Client) -> tuple[int, int]:
    """(length, room) of Redis's query buffer between commands: the bytes pending less a bulk
    header it has parsed out of them (its qbuf), and the room it holds for the rest of a big bulk
    being received (`Client.bulk_room`)."""
    header, room = c.bulk_room()
    return pending(c) - header, room


def pending(c: Client) -> int:
    """The bytes received and not yet run (the query buffer's length): the exact parser's, or
    what hiredis (or the tail kept in its stead) holds unparsed and what the fast loop's walk has
    still to take of its read."""
    exact = c.exact
    if exact is not None:
        return exact.pending()
    walk = c.walk
    return c.unparsed() + (walk.end - walk.pos if walk is not None else 0)
