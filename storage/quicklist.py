"""The list type: Redis 7.0's quicklist, a sequence of nodes each holding one listpack.

Representation.  A `Quicklist` keeps its nodes and `count`, its number of elements.  A plain node
is a `bytearray` holding exactly the listpack a Redis quicklistNode points to: the header (total
bytes, element count), the entries, the terminator.  A node's byte size is its len() and its
element count is in its header, so nothing else is kept per node.  The nodes are held in `_n`: the
node itself when there is exactly one (most lists: no list object beside it), a Python list when
there are more, None when there are none; `nodes` reads them as a list either way.  So a small
list's value is the Quicklist object and one bytearray around Redis's listpack bytes.  The bytes are
edited in place as Redis edits its listpacks (lpAppend, lpPrepend, lpInsert, lpReplace, lpDelete),
through storage.listpack's typed operations: a push appends or prepends one entry, a pop deletes
one (memmoving what follows, as lpDelete does), LINDEX seeks from the nearer end of the nearer
node, LRANGE writes RESP bulk strings straight from the entries.  A bytearray and not bytes: a
push at the tail grows the buffer in place (over-allocated, as list.append is) and a pop at the
head shifts the node's bytes once, where an immutable node would copy the whole listpack for
every push and pop of a queue.  DUMP, RDB and replication write the bytes as they are, and
loading keeps the bytes it read.

Node boundaries evolve exactly as Redis's do: a push goes into the end node while
_quicklistNodeAllowInsert lets it (the node's bytes + the element's length + 8 within the fill's
byte limit, and under a positive fill fewer elements than the fill), else into a new node;
LINSERT fills, spills into a neighbour, or splits the node at the pivot and merges what the split
left behind with its neighbours as _quicklistInsert does; pops, LREM and LTRIM drop emptied nodes
and never merge; LSET replaces in place (Redis 7.0 never splits there).

Options are fixed per list at creation, as Redis's quicklistSetOptions does: `fill`
(list-max-listpack-size: negative = a byte limit of 4/8/16/32/64 KB, positive = an element count
with an 8 KB safety limit; clamped to [-5, 32767]) and `depth` (list-compress-depth: 0 = never
compress, else the `depth` nodes at each end stay plain and every interior node is kept packed as
a zlib-compressed listpack, a `PackedNode`).  A packed node is unpacked for an operation that
edits it; a read decodes a temporary copy.

Invariants: no node is empty; `_n` is a list only when there are two nodes or more (between
operations: one that works by position takes the list from `_list()` and folds it back with
`_tidy()`); `count` is the sum of the nodes' counts; a plain node's header
count is exact (fill and the byte limits keep a node under 32768 elements, and a loaded listpack
of 65535 or more is split, so the header never saturates); the end nodes are plain; when depth > 0
every node outside the end windows of 48 bytes or more is packed (between operations).  Elements
of 1 GB or more (Redis's "plain" nodes) are not modelled: proto-max-bulk-len keeps them out.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from raxdb.storage.alloc import SIZERS, size_class
from raxdb.storage.listpack import (
    NUMELE_UNKNOWN,
    append_encoded,
    bulks,
    count_of,
    delete_at,
    delete_indexes,
    encode_entry,
    equal_indexes,
    from_encoded,
    insert_encoded,
    offset_at,
    pop_value,
    push_value,
    replace_at,
    skip,
    string_to_int,
    value_at,
    values,
)

LP_EMPTY = 7  # an empty listpack: 6-byte header + terminator
HEADER = 6  # the first entry's offset
_SIZE_LEVELS = (4096, 8192, 16384, 32768, 65536)  # list-max-listpack-size -1 .. -5
SAFETY_LIMIT = 8192  # byte cap of a count-limited node
INSERT_OVERHEAD = 8  # Redis's pessimistic per-element estimate when deciding if a node has room
MERGE_CREDIT = 11  # bytes Redis assumes are saved by merging two listpacks (one header + terminator)
FILL_MAX = 32767
COMPRESS_MAX = 65535
MIN_COMPRESS_BYTES = 48  # smaller nodes are never compressed, as in Redis

try:  # compiled, `cython.compiled` is True at compile time (it folds the narrowings for mypy away)
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)


class PackedNode:
    """A compressed interior node (list-compress-depth): zlib over the node's listpack bytes,
    with its element count and byte size."""

    __slots__ = ("blob", "count", "sz")

    def __init__(self, node: bytearray) -> None:
        self.blob = zlib.compress(node, 1)
        self.count = node[4] | (node[5] << 8)
        self.sz = len(node)

    def __len__(self) -> int:
        return self.count

    def listpack(self) -> bytes:
        return zlib.decompress(self.blob)


def _count(node: bytearray | PackedNode) -> int:
    """A node's element count."""
    if type(node) is bytearray:
        return node[4] | (node[5] << 8)
    if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
        assert type(node) is PackedNode
    return node.count


def _fits(size: int, count: int, n: int, limit: int, fill: int) -> bool:
    """Redis's _quicklistNodeAllowInsert: whether a node of `size` bytes and `count` elements
    takes one more element of n bytes, under the byte `limit` and the `fill` count (negative:
    bytes only).  The one spelling of the rule: the pushes' tests and extend's run it."""
    return size + n + INSERT_OVERHEAD <= limit and (fill < 0 or count < fill)


def _size(node: bytearray | PackedNode) -> int:
    """A node's listpack bytes."""
    if type(node) is bytearray:
        return len(node)
    if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
        assert type(node) is PackedNode
    return node.sz


def _nodes_alloc(nodes: list[bytearray | PackedNode], k: int) -> int:
    """The first k nodes' allocations: a node's header and its listpack's size class each (a
    write under a memory limit sizes its list again: a C loop, quicklist.pxd)."""
    total = 0
    for i in range(k):
        total += 40 + size_class(_size(nodes[i]))
    return total


def _bytes(node: bytearray | PackedNode) -> bytes | bytearray:
    """A node's listpack, decompressed when packed (to read, not to edit)."""
    if type(node) is bytearray:
        return node
    if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
        assert type(node) is PackedNode
    return zlib.decompress(node.blob)


def _lrem_hits(node: bytearray | PackedNode, v: bytes, iv: int | None, limit: int, left: int) -> list[int]:
    """The indexes in `node` of the elements LREM removes there: those equal to v (iv: v as an
    int64, None when it spells none), at most `left` of them, the last ones when it removes from
    the tail (limit < 0)."""
    hits = equal_indexes(_bytes(node), HEADER, _count(node), v, iv or 0, iv is not None)
    if len(hits) > left:
        hits = hits[len(hits) - left:] if limit < 0 else hits[:left]
    return hits


def _cut(node: bytearray, hits: list[int]) -> None:
    """Delete the elements at the ascending indexes `hits` from a plain node (not all of them)."""
    if len(hits) == 1:  # a queue's LREM of one job id: cut it out in place
        delete_at(node, offset_at(node, hits[0]), 1)
    else:
        delete_indexes(node, hits)


class Quicklist:
    type_name = "list"
    __slots__ = ("_n", "count", "fill", "depth", "size_limit")

    def __init__(self, fill: int = -2, depth: int = 0) -> None:
        # The nodes: None (no node), the node itself (exactly one: a bytearray, never packed), or a
        # list of them (two or more; one or none only within an operation).  A list of one node
        # would cost a list object and its slot array beside every small list, a quarter of it.
        self._n: bytearray | list[bytearray | PackedNode] | None = None
        self.count = 0
        fill = max(-5, min(FILL_MAX, fill))
        self.fill = fill
        self.depth = max(0, min(COMPRESS_MAX, depth))
        self.size_limit = _SIZE_LEVELS[-fill - 1] if fill < 0 else SAFETY_LIMIT

    @property
    def nodes(self) -> list[bytearray | PackedNode]:
        """The nodes, first to last (to read: a lone node comes in a new list)."""
        n = self._n
        if type(n) is list:
            return n
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert not isinstance(n, list)
        return [] if n is None else [n]

    def _list(self) -> list[bytearray | PackedNode]:
        """The nodes as a list that stays this list's, for an operation that works by position;
        `_tidy` folds it back when it ends with one node or none."""
        n = self._n
        if type(n) is list:
            return n
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert not isinstance(n, list)
        nodes: list[bytearray | PackedNode] = [] if n is None else [n]
        self._n = nodes
        return nodes

    def _tidy(self) -> None:
        n = self._n
        if type(n) is list:
            if not n:
                self._n = None
            elif len(n) == 1:
                node = n[0]
                if type(node) is PackedNode:  # an end node: never packed at rest
                    node = bytearray(node.listpack())
                if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
                    assert isinstance(node, bytearray)
                self._n = node

    # ---- the value contract -------------------------------------------------------------------
    def __len__(self) -> int:
        return self.count

    def encoding(self) -> str:
        return "quicklist"

    def copy(self) -> Quicklist:
        new = Quicklist(self.fill, self.depth)
        new.size_limit = self.size_limit
        new.count = self.count
        n = self._n
        if n is None or type(n) is bytearray:
            new._n = None if n is None else bytearray(n)
            return new
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(n, list)
        out: list[bytearray | PackedNode] = []
        for node in n:
            if type(node) is PackedNode:
                p = PackedNode.__new__(PackedNode)
                p.blob, p.count, p.sz = node.blob, node.count, node.sz
                out.append(p)
            else:
                if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
                    assert isinstance(node, bytearray)
                out.append(bytearray(node))
        new._n = out
        return new

    def mem_usage(self, samples: int = 5) -> int:
        return quicklist_usage(self, samples)

    # ---- building and serialising (RDB / DUMP / RESTORE) ---------------------------------------
    def listpacks(self) -> list[bytes]:
        """One listpack per node, exactly the bytes Redis keeps (RDB_TYPE_LIST_QUICKLIST_2 body)."""
        return [bytes(node) if isinstance(node, bytearray) else node.listpack() for node in self.nodes]

    @classmethod
    def from_listpacks(cls, blobs: Iterable[bytes], fill: int = -2, depth: int = 0) -> Quicklist:
        """Keep each (validated) listpack as a node, as Redis's loader does; empty ones are
        skipped.  One of 65535 elements or more, which Redis's 16-bit node count could not hold
        either, is pushed element by element instead, so no node's header count saturates."""
        ql = cls(fill, depth)
        nodes = ql._list()
        for blob in blobs:
            n = count_of(blob)
            if n >= NUMELE_UNKNOWN:
                ql._tidy()
                ql.extend(values(blob, HEADER, n), 0, False)
                nodes = ql._list()
            elif n:
                nodes.append(bytearray(blob))
                ql.count += n
        if ql.depth:
            ql._settle()
        ql._tidy()
        return ql

    @classmethod
    def from_items(cls, items: Iterable[bytes], fill: int = -2, depth: int = 0) -> Quicklist:
        ql = cls(fill, depth)
        ql.extend_tail(items)
        return ql

    # ---- ends: push / pop ----------------------------------------------------------------------
    def _room(self, node: bytearray | PackedNode, n: int) -> bool:
        """Redis's _quicklistNodeAllowInsert for an element of n bytes."""
        return _fits(_size(node), _count(node), n, self.size_limit, self.fill)

    def _takes(self, node: bytearray, n: int) -> bool:
        """_room for an end node, which is never packed (the pushes' test): compiled, its header
        and the limits are C reads (quicklist.pxd)."""
        s = node
        return _fits(len(node), s[4] | (s[5] << 8), n, self.size_limit, self.fill)

    def push_tail(self, v: bytes) -> None:
        self.count += 1
        n = self._n
        if type(n) is bytearray:
            node = n
        elif n is None:
            self._n = from_encoded(encode_entry(v), 1)
            return
        else:
            if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
                assert isinstance(n, list) and isinstance(n[-1], bytearray)
            node = n[-1]  # an end node: never packed
        if self._takes(node, len(v)):
            push_value(node, v, False)
            return
        new = from_encoded(encode_entry(v), 1)
        if type(n) is bytearray:
            self._n = [n, new]
        else:
            if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
                assert isinstance(n, list)
            n.append(new)
        if self.depth:
            self._settle_ends()

    def push_head(self, v: bytes) -> None:
        self.count += 1
        n = self._n
        if type(n) is bytearray:
            node = n
        elif n is None:
            self._n = from_encoded(encode_entry(v), 1)
            return
        else:
            if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
                assert isinstance(n, list) and isinstance(n[0], bytearray)
            node = n[0]  # an end node: never packed
        if self._takes(node, len(v)):
            push_value(node, v, True)
            return
        new = from_encoded(encode_entry(v), 1)
        if type(n) is bytearray:
            self._n = [new, n]
        else:
            if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
                assert isinstance(n, list)
            n.insert(0, new)
        if self.depth:
            self._settle_ends()

    def extend(self, args: list[bytes], start: int, head: bool) -> None:
        """Push args[start:] at the head (each becoming the new first) or the tail, node by node:
        as many as the end node takes (the pushes' rule, element by element) go in with one
        splice, and a new node is built at its exact size."""
        limit = self.size_limit
        fill = self.fill
        i = start
        end = len(args)
        while i < end:
            n = self._n
            node = None
            size = LP_EMPTY
            cnt = 0
            if n is not None:
                if type(n) is bytearray:
                    node = n
                else:
                    if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
                        assert isinstance(n, list) and isinstance(n[0], bytearray) and isinstance(n[-1], bytearray)
                    node = n[0] if head else n[-1]  # an end node: never packed
                size = len(node)
                cnt = node[4] | (node[5] << 8)
                if not _fits(size, cnt, len(args[i]), limit, fill):
                    node = None  # full: the first element opens a new node
                    size = LP_EMPTY
                    cnt = 0
            first = i
            entries = []
            while i < end:
                v = args[i]
                if i > first or node is not None:
                    if not _fits(size, cnt, len(v), limit, fill):
                        break
                e = encode_entry(v)
                entries.append(e)
                size += len(e)
                cnt += 1
                i += 1
            k = i - first
            self.count += k
            if head:
                entries.reverse()
            chunk = b"".join(entries)
            if node is not None:
                if head:
                    insert_encoded(node, HEADER, chunk, k)
                else:
                    append_encoded(node, chunk, k)
                continue
            node = from_encoded(chunk, k)
            if n is None:
                self._n = node
                continue
            if type(n) is bytearray:
                self._n = [node, n] if head else [n, node]
            else:
                if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
                    assert isinstance(n, list)
                if head:
                    n.insert(0, node)
                else:
                    n.append(node)
            if self.depth:
                self._settle_ends()

    def extend_tail(self, items: Iterable[bytes]) -> None:
        self.extend(items if type(items) is list else list(items), 0, False)

    def extend_head(self, items: Iterable[bytes]) -> None:
        self.extend(items if type(items) is list else list(items), 0, True)

    def pop_head(self) -> bytes:
        """Remove and return the first element (the list must not be empty)."""
        self.count -= 1
        n = self._n
        if type(n) is bytearray:
            node = n
            if (node[4] | (node[5] << 8)) > 1:
                return pop_value(node, True)
            self._n = None
            return value_at(node, HEADER)
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(n, list) and isinstance(n[0], bytearray)
        node = n[0]  # an end node: never packed
        if (node[4] | (node[5] << 8)) > 1:
            return pop_value(node, True)
        del n[0]
        if self.depth:
            self._settle_ends()
        if len(n) == 1:
            self._n = n[0]
        return value_at(node, HEADER)

    def pop_tail(self) -> bytes:
        self.count -= 1
        n = self._n
        if type(n) is bytearray:
            node = n
            if (node[4] | (node[5] << 8)) > 1:
                return pop_value(node, False)
            self._n = None
            return value_at(node, HEADER)
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(n, list) and isinstance(n[-1], bytearray)
        node = n[-1]  # an end node: never packed
        if (node[4] | (node[5] << 8)) > 1:
            return pop_value(node, False)
        del n[-1]
        if self.depth:
            self._settle_ends()
        if len(n) == 1:
            if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
                assert isinstance(n[0], bytearray)  # the one left is an end node
            self._n = n[0]
        return value_at(node, HEADER)

    def pop_many(self, n: int, from_head: bool) -> list[bytes]:
        n = min(n, self.count)
        if from_head:
            return [self.pop_head() for _ in range(n)]
        return [self.pop_tail() for _ in range(n)]

    # ---- positional access ---------------------------------------------------------------------
    def _locate(self, index: int) -> tuple[int, int]:
        """(node position, offset in node) of element `index` (0 <= index < count), walking from
        the nearer end as Redis's quicklistGetIteratorAtIdx does."""
        nodes = self._n
        if type(nodes) is bytearray:
            return 0, index
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(nodes, list)
        if index < (self.count >> 1) + 1:
            for ni in range(len(nodes)):
                n = _count(nodes[ni])
                if index < n:
                    return ni, index
                index -= n
        else:
            back = self.count - 1 - index
            for ni in range(len(nodes) - 1, -1, -1):
                n = _count(nodes[ni])
                if back < n:
                    return ni, n - 1 - back
                back -= n
        raise IndexError(index)

    def index(self, index: int) -> bytes | None:
        """Element at a Redis index (negative counts from the tail), or None if out of range."""
        count = self.count
        if index < 0:
            index += count
        if index < 0 or index >= count:
            return None
        n = self._n
        if type(n) is bytearray:
            return value_at(n, offset_at(n, index))
        ni, off = self._locate(index)
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(n, list)
        lp = _bytes(n[ni])
        return value_at(lp, offset_at(lp, off))

    def set(self, index: int, v: bytes) -> bool:
        """LSET: replace in place (Redis 7.0 never splits the node); False if out of range."""
        count = self.count
        if index < 0:
            index += count
        if index < 0 or index >= count:
            return False
        self._list()
        ni, off = self._locate(index)
        node = self._plain_at(ni)
        replace_at(node, offset_at(node, off), encode_entry(v))
        if self.depth:
            self._settle()
        self._tidy()
        return True

    def bulks(self, start: int, stop: int) -> bytes:
        """Elements [start, stop) (0 <= start <= stop <= count) as RESP bulk strings, back to
        back: LRANGE's reply after its array header."""
        want = stop - start
        if want <= 0:
            return b""
        nodes = self._n
        if type(nodes) is bytearray:  # one node: one call
            node = nodes
            return bulks(node, offset_at(node, start) if start else HEADER, want)
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(nodes, list) and isinstance(nodes[0], bytearray)
        if start == 0:
            ni, off = 0, 0
            node = nodes[0]  # an end node: never packed
            if want <= (node[4] | (node[5] << 8)):  # LRANGE 0 n within the first node: one call
                return bulks(node, HEADER, want)
        else:
            ni, off = self._locate(start)
        out = []
        while want > 0:
            lp = _bytes(nodes[ni])
            take = min(want, _count(nodes[ni]) - off)
            out.append(bulks(lp, offset_at(lp, off) if off else HEADER, take))
            want -= take
            ni += 1
            off = 0
        return b"".join(out)

    def range(self, start: int, stop: int) -> list[bytes]:
        """Elements [start, stop) for 0 <= start <= stop <= count."""
        want = stop - start
        if want <= 0:
            return []
        nodes = self.nodes
        ni, off = self._locate(start)
        out: list[bytes] = []
        while want > 0:
            lp = _bytes(nodes[ni])
            take = min(want, _count(nodes[ni]) - off)
            out += values(lp, offset_at(lp, off) if off else HEADER, take)
            want -= take
            ni += 1
            off = 0
        return out

    def __iter__(self) -> Iterator[bytes]:
        for node in self.nodes:
            yield from values(_bytes(node), HEADER, _count(node))

    def iter_reversed(self) -> Iterator[bytes]:
        for node in reversed(self.nodes):
            items = values(_bytes(node), HEADER, _count(node))
            items.reverse()
            yield from items

    # ---- LINSERT -------------------------------------------------------------------------------
    def find(self, pivot: bytes) -> int:
        """Index of the first element equal to `pivot` (lpCompare: an integer entry equals the
        string that spells it canonically), or -1."""
        base = 0
        for node in self.nodes:
            n = _count(node)
            items = values(_bytes(node), HEADER, n)
            if pivot in items:
                return base + items.index(pivot)
            base += n
        return -1

    def insert(self, index: int, v: bytes, after: bool) -> None:
        """Insert next to element `index` the way Redis's _quicklistInsert places it: into the
        node if it has room; else into the neighbour when inserting at the node's edge and the
        neighbour has room; else into a new node at that edge; else split the node at the pivot
        and merge what the split left behind with its neighbours where they fit."""
        nodes = self._list()
        ni, off = self._locate(index)
        node = nodes[ni]
        n = len(v)
        cnt = _count(node)
        full = not self._room(node, n)
        at_tail = after and off == cnt - 1
        at_head = not after and off == 0
        has_next = ni + 1 < len(nodes)
        has_prev = ni > 0
        self.count += 1
        if not full:
            node = self._plain_at(ni)
            p = offset_at(node, off)
            if after:
                p = skip(node, p, 1)
            insert_encoded(node, p, encode_entry(v), 1)
        elif at_tail and has_next and self._room(nodes[ni + 1], n):
            push_value(self._plain_at(ni + 1), v, True)
        elif at_head and has_prev and self._room(nodes[ni - 1], n):
            push_value(self._plain_at(ni - 1), v, False)
        elif (at_tail and has_next) or (at_head and has_prev):
            nodes.insert(ni + 1 if after else ni, from_encoded(encode_entry(v), 1))
        else:
            # _quicklistSplitNode: the entries past the pivot (after) or before it move to a new
            # node, which takes v at its edge next to the pivot; then merge around the old node.
            node = self._plain_at(ni)
            if after:
                q = skip(node, offset_at(node, off), 1)
                moved = cnt - off - 1
                new = from_encoded(bytes(node[q:len(node) - 1]), moved)
                delete_at(node, q, moved)
                push_value(new, v, True)
                nodes.insert(ni + 1, new)
                self._merge_around(ni)
            else:
                q = offset_at(node, off)
                new = from_encoded(bytes(node[HEADER:q]), off)
                delete_at(node, HEADER, off)
                push_value(new, v, False)
                nodes.insert(ni, new)
                self._merge_around(ni + 1)
        if self.depth:
            self._settle()
        self._tidy()

    def _can_merge(self, a: bytearray | PackedNode, b: bytearray | PackedNode) -> bool:
        fill = self.fill
        return (_size(a) + _size(b) - MERGE_CREDIT <= self.size_limit
                and (fill < 0 or _count(a) + _count(b) <= fill))

    def _merge(self, i: int) -> None:
        """Concatenate nodes i and i+1 into one node at position i (lpMerge)."""
        nodes = self._n
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(nodes, list)
        a, b = nodes[i], nodes[i + 1]
        node = bytearray(_bytes(a))
        tail = _bytes(b)
        append_encoded(node, bytes(tail[HEADER:len(tail) - 1]), _count(b))
        nodes[i] = node
        del nodes[i + 1]

    def _merge_around(self, ci: int) -> None:
        """Redis's _quicklistMergeNodes around the node at position ci: the two nodes before it,
        the two after it, then the centre with its previous and its next neighbour."""
        nodes = self._n
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(nodes, list)
        if ci >= 2 and self._can_merge(nodes[ci - 1], nodes[ci - 2]):
            self._merge(ci - 2)
            ci -= 1
        if ci + 2 < len(nodes) and self._can_merge(nodes[ci + 1], nodes[ci + 2]):
            self._merge(ci + 1)
        if ci >= 1 and self._can_merge(nodes[ci], nodes[ci - 1]):
            self._merge(ci - 1)
            ci -= 1
        if ci + 1 < len(nodes) and self._can_merge(nodes[ci], nodes[ci + 1]):
            self._merge(ci)

    # ---- deletions -----------------------------------------------------------------------------
    def trim(self, start: int, stop: int) -> None:
        """Keep only elements [start, stop) (LTRIM), dropping whole nodes where possible."""
        self._list()
        self._del_head(start)
        self._del_tail(self.count - (stop - start))
        if self.depth:
            self._settle()
        self._tidy()

    def _del_head(self, n: int) -> None:
        nodes = self._n
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(nodes, list)
        self.count -= n
        drop = 0
        while n > 0:
            k = _count(nodes[drop])
            if k <= n:
                drop += 1
                n -= k
            else:
                delete_at(self._plain_at(drop), HEADER, n)
                n = 0
        if drop:
            del nodes[:drop]

    def _del_tail(self, n: int) -> None:
        nodes = self._n
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(nodes, list)
        self.count -= n
        drop = 0
        last = len(nodes) - 1
        while n > 0:
            k = _count(nodes[last - drop])
            if k <= n:
                drop += 1
                n -= k
            else:
                node = self._plain_at(last - drop)
                delete_at(node, offset_at(node, k - n), n)
                n = 0
        if drop:
            del nodes[len(nodes) - drop:]

    def remove(self, v: bytes, limit: int) -> int:
        """LREM: delete up to |limit| elements equal to v (all if 0), from the tail when limit < 0.
        Returns how many were removed."""
        todo = -limit if limit < 0 else (limit or self.count)
        iv = string_to_int(v)  # an integer entry equals v only when v spells it (lpCompare)
        node = self._n
        if type(node) is bytearray:  # one node (a job queue's lists): no list of nodes made
            hits = _lrem_hits(node, v, iv, limit, todo)
            if hits:
                if len(hits) == _count(node):
                    self._n = None
                else:
                    _cut(node, hits)
                self.count -= len(hits)
            return len(hits)
        nodes = self._list()
        removed = 0
        order = range(len(nodes) - 1, -1, -1) if limit < 0 else range(len(nodes))
        emptied = []
        for ni in order:
            if removed == todo:
                break
            hits = _lrem_hits(nodes[ni], v, iv, limit, todo - removed)
            if not hits:
                continue
            removed += len(hits)
            if len(hits) == _count(nodes[ni]):
                emptied.append(ni)
            else:
                _cut(self._plain_at(ni), hits)
        for ni in sorted(emptied, reverse=True):
            del nodes[ni]
        self.count -= removed
        if self.depth:
            self._settle()
        self._tidy()
        return removed

    # ---- compression (list-compress-depth) -----------------------------------------------------
    def _plain_at(self, i: int) -> bytearray:
        nodes = self._n
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(nodes, list)
        node = nodes[i]
        if type(node) is PackedNode:
            node = bytearray(node.listpack())
            nodes[i] = node
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(node, bytearray)
        return node

    def _settle_ends(self) -> None:
        """After the node count changed at an end: unpack the end windows, pack their borders.
        (This and the rest below work on the list of nodes, there when there are two or more.)"""
        nodes, d = self._n, self.depth
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(nodes, list)
        n = len(nodes)
        for i in range(min(d, n)):
            if type(nodes[i]) is PackedNode:
                self._plain_at(i)
            j = n - 1 - i
            if type(nodes[j]) is PackedNode:
                self._plain_at(j)
        if n > 2 * d:
            for i in (d, n - 1 - d):
                node = nodes[i]
                if type(node) is bytearray and len(node) >= MIN_COMPRESS_BYTES:
                    nodes[i] = PackedNode(node)

    def _settle(self) -> None:
        """After a middle operation: every node outside the end windows packed again."""
        self._settle_ends()
        nodes, d = self._n, self.depth
        if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
            assert isinstance(nodes, list)
        for i in range(d, len(nodes) - d):
            node = nodes[i]
            if type(node) is bytearray and len(node) >= MIN_COMPRESS_BYTES:
                nodes[i] = PackedNode(node)

    def node_shape(self) -> list[tuple[int, int]]:
        """(element count, listpack bytes) per node: what DUMP would show (tests, DEBUG)."""
        return [(_count(n), _size(n)) for n in self.nodes]

    def is_packed(self) -> list[bool]:
        return [type(n) is PackedNode for n in self.nodes]


def quicklist_usage(ql: Quicklist, samples: int = 5) -> int:
    """Quicklist.mem_usage, Redis's estimate: robj + quicklist header + the average of the first
    `samples` nodes (node header + allocator size of its listpack) times the node count.
    Compressed nodes are counted at their uncompressed size (Redis counts its LZF size).  A module
    function on the typed list (quicklist.pxd): a write under a memory limit sizes its list again
    after every push or pop (server/memory/usage.py), a C call with no list made for a lone node."""
    n = ql._n
    if n is None:
        return 16 + 40
    if type(n) is bytearray:  # one node: its own allocation, exactly
        return 16 + 40 + 40 + size_class(len(n))
    if not cython.compiled and TYPE_CHECKING:  # mypy's narrowing (compiled: folded away)
        assert isinstance(n, list)
    nodes: list[bytearray | PackedNode] = n
    count = len(nodes)
    if not count:
        return 16 + 40
    k = samples if 0 < samples < count else count  # SAMPLES 0: every node
    avg: float = _nodes_alloc(nodes, k) / k
    return 16 + 40 + int(avg * count)


SIZERS[Quicklist] = quicklist_usage  # MEMORY USAGE's estimate by exact class (alloc.py)
