"""Redis 7.0's reply buffer and reply list, modelled from what a client has not taken yet: the
figures CLIENT LIST / CLIENT INFO print (obl, oll, omem), the output buffer limits go by
(server/conn/obuf.py), client eviction's tot-mem counts and INFO's client_recent_max_output_buffer
samples.  raxdb's unsent output is its queue (`Client.obuf`) and what its transport holds; Redis's
is c->buf and the c->reply list, laid out so:

- A reply goes to the reply buffer (its rbs bytes, server/conn/clientbufs.py) while the list is
  empty; what does not fit goes to the list.  There it fills the tail node first, and the rest
  makes a new node of max(16 KiB, the rest) bytes, taking its allocation's slack (zmalloc_usable,
  less the 16-byte block header).  So small replies fill nodes of 20464 bytes one after another,
  and a big one (a big value's bulk: its header, the value and CRLF are three replies, as
  protocol/reply.py's `value` makes three pieces) fills the tail and gets a node of its own size.
- A write sends the buffer first, then the list's nodes in order: a node all sent is freed, the
  buffer's position drops to 0 once it is all sent.  Once nothing is left, the next reply goes to
  the buffer again.
- obl is the buffer's position (sent or not), oll the list's nodes, omem their sizes and 40 bytes
  each (a listNode and the clientReplyBlock header).

`Layout` is that state for one run of output between two moments where everything was taken (a
segment): what was added, in Redis's reply units, and the stream position up to which the kernel
took it.  Where raxdb joined small replies into one item (a read event's run of them, or one big
reply built whole, such as LRANGE's), they are counted as a stream of small replies; an item of
PIECE_MIN bytes or more right after its own bulk header is one reply (a value's piece).

The client keeps a committed layout (`Client.replies`) only while its transport holds output after
a flush that may have made list nodes (Client's flush_output: a flush bigger than the reply
buffer, or one while output is held); every other flush, the hot path's, costs nothing here.
The rest (the queue not yet flushed, the replies of the read event running) is laid on a copy
when asked.  A replica's output is its share of the replication buffer instead (obuf.py).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from raxdb.protocol.reply import PIECE_MIN
from raxdb.storage.alloc import size_class

if TYPE_CHECKING:
    from collections.abc import Iterable

    from raxdb.server.base.interfaces import Client

CHUNK = 16 * 1024  # PROTO_REPLY_CHUNK_BYTES: a new node's least size
HEADER = 16  # sizeof(clientReplyBlock): size and used
NODE = 40  # sizeof(listNode) + sizeof(clientReplyBlock): what omem adds per node


def node_size(n: int) -> int:
    """A new node's size for the `n` bytes of a reply that did not fit the tail."""
    return size_class((n if n > CHUNK else CHUNK) + HEADER) - HEADER


BLOCK = node_size(0)  # 20464: the node a small reply's rest makes


class Layout:
    """The buffer and list of one segment.  Positions are the client's output stream's (tot_net_out
    counts): `pos` is where what was added ends.  `ends` (kept only for a committed layout) holds
    each node's end position and size, to free nodes as the kernel takes them."""

    __slots__ = ("bufpos", "buf_room", "buf_end", "oll", "reply_bytes", "tail_room", "pos", "prev", "ends")

    def __init__(self, rb_size: int, pos: int, track: bool) -> None:
        self.bufpos = 0
        self.buf_room = rb_size
        self.buf_end = pos  # where the buffer's bytes end in the stream
        self.oll = 0
        self.reply_bytes = 0
        self.tail_room = 0
        self.pos = pos
        self.prev = b""  # the end of the last small item added: a big one right after its header is one reply
        self.ends: deque[list[int]] | None = deque() if track else None

    def copy(self) -> Layout:
        """The same state, its nodes not kept: what is laid on it is asked, not committed."""
        other = Layout.__new__(Layout)
        other.bufpos, other.buf_room, other.buf_end = self.bufpos, self.buf_room, self.buf_end
        other.oll, other.reply_bytes, other.tail_room = self.oll, self.reply_bytes, self.tail_room
        other.pos, other.prev, other.ends = self.pos, self.prev, None
        return other

    def figures(self) -> tuple[int, int, int]:
        """(obl, oll, omem)."""
        return self.bufpos, self.oll, self.reply_bytes + NODE * self.oll

    def add_items(self, items: Iterable[bytes]) -> None:
        """Output items as raxdb queued them (or as a read event made them)."""
        for item in items:
            n = len(item)
            if n >= PIECE_MIN and self.prev.endswith(b"$%d\r\n" % n):
                self.add(n, True)
                self.prev = b""
            elif n:
                self.add(n, False)
                self.prev = item[-24:]

    def add(self, n: int, single: bool) -> None:
        """`n` bytes: one reply (`single`), or small replies one after another."""
        self.pos += n
        if not self.oll:  # _addReplyToBuffer: only while the list is empty
            take = n if n < self.buf_room else self.buf_room
            self.bufpos += take
            self.buf_room -= take
            self.buf_end += take
            n -= take
        elif self.tail_room:  # _addReplyProtoToList: the tail first
            take = n if n < self.tail_room else self.tail_room
            self.tail_room -= take
            n -= take
            if self.ends is not None:
                self.ends[-1][0] += take
        if not n:
            return
        end = self.pos - n  # where the rest starts
        if single:
            size = node_size(n)
            self._node(self.pos, size)
            self.tail_room = size - n
            return
        full, rest = divmod(n, BLOCK)
        if self.ends is None:
            count = full + (1 if rest else 0)
            self.oll += count
            self.reply_bytes += BLOCK * count
        else:
            for _ in range(full):
                end += BLOCK
                self._node(end, BLOCK)
            if rest:
                self._node(end + rest, BLOCK)
        self.tail_room = BLOCK - rest if rest else 0

    def _node(self, end: int, size: int) -> None:
        self.oll += 1
        self.reply_bytes += size
        if self.ends is not None:
            self.ends.append([end, size])

    def taken(self, sent: int) -> bool:
        """The kernel took the stream up to position `sent`: the buffer and the nodes all sent are
        freed.  False when nothing is left (the segment is over)."""
        if sent >= self.pos:
            return False
        if sent >= self.buf_end:
            self.bufpos = self.buf_room = 0
        ends = self.ends
        if ends is not None:
            while ends and ends[0][0] <= sent:
                self.oll -= 1
                self.reply_bytes -= ends.popleft()[1]
        return True


def held(c: Client) -> int:
    """Bytes the transport holds that the kernel has not taken."""
    t = c.transport
    return t.get_write_buffer_size() if t is not None else 0


def current(c: Client, in_transport: int) -> Layout:
    """The layout of what `c` has not taken (`in_transport`: what its transport holds): the
    committed one, its nodes the kernel took freed, or with none (or none left) a fresh one, what
    the transport holds counted as one flush; the queue not yet flushed is laid on it."""
    m = c.replies
    if m is not None and in_transport and m.pos == c.out_mark and m.taken(c.out_mark - in_transport):
        m = m.copy()
    else:
        m = Layout(c.rb_size, c.out_mark - in_transport, False)
        if in_transport:
            m.add(in_transport, False)
    if c.obuf:
        m.add_items(c.obuf)
    return m


def flushed(c: Client, items: list[bytes]) -> None:
    """After a flush wrote `items` (Client's flush_output, when it may have made list nodes; before
    it moves `out_mark` past them): the committed layout follows what the transport still holds:
    none when it holds nothing, a new segment when what was held before this flush is all taken,
    else the items added to it."""
    in_transport = held(c)
    if not in_transport:
        c.replies = None
        return
    start = c.out_mark  # this flush's first byte; tot_net_out is past its last
    sent = c.tot_net_out - in_transport
    m = c.replies
    if m is None or m.pos != start or not m.taken(sent):
        m = c.replies = Layout(c.rb_size, min(sent, start), True)
        if sent < start:  # held from flushes before, never laid out: counted as one run
            m.add(start - sent, False)
    m.add_items(items)


def figures(c: Client) -> tuple[int, int, int, int]:
    """(obl, oll, omem, what the transport holds) of a client that is not a replica; while it runs
    a batch (CLIENT LIST pipelined after other commands), the replies it made so far count, as
    Redis's buffer holds them."""
    in_transport = held(c)
    running = c.running
    if c.replies is None:  # the common case: all of it fits the reply buffer
        unsent = in_transport + c.tot_net_out - c.out_mark + (sum(map(len, running)) if running else 0)
        if unsent <= c.rb_size:
            return unsent, 0, 0, in_transport
    m = current(c, in_transport)
    if running:
        m.add_items(running)
    obl, oll, omem = m.figures()
    return obl, oll, omem, in_transport
