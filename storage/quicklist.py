"""The list type: Redis 7.0's quicklist, a sequence of nodes each holding what one listpack would.

Representation.  A node is a `deque` of element bytes (O(1) at both ends, C-speed slicing through
islice) that also tracks `sz`, the exact byte size the node's listpack has in Redis (computed with
`storage.lpcodec.entry_size`).  Node boundaries therefore evolve exactly as Redis's do: the same
fill rule decides when a push opens a new node, LINSERT splits and merges nodes as Redis's
_quicklistInsert does, pops/LREM/LTRIM drop emptied nodes and never merge, LSET replaces in place.
That keeps DUMP / RDB output (one listpack per node) and MEMORY USAGE faithful, while the hot
commands (push/pop/range) only touch Python-native deques.  Listpack bytes are produced on demand
(`listpacks()`), never on the push/pop path: a pure-Python byte codec per push would be far slower.

Options are fixed per list at creation, as Redis's quicklistSetOptions does: `fill`
(list-max-listpack-size: negative = a byte limit of 4/8/16/32/64 KB, positive = an element count
with an 8 KB safety limit; clamped to [-5, 32767]) and `depth` (list-compress-depth: 0 = never
compress, else the `depth` nodes at each end stay plain and every interior node is kept packed as a
zlib-compressed listpack).  Packed nodes (`PackedNode`) are only unpacked for an operation that
reaches into them; read-only access decodes a temporary copy.

Invariants: no node is empty; `count` is the total number of elements; `node.sz` is the exact
listpack size of its elements; when depth > 0 the end nodes are plain and (between operations)
every node outside the end windows is packed.  Elements of 1 GB or more (Redis's "plain" nodes) are
not modelled: proto-max-bulk-len keeps them out.
"""

from __future__ import annotations

import zlib
from collections import deque
from collections.abc import Iterable, Iterator
from itertools import chain, islice

from raxdb.storage import lpcodec
from raxdb.storage.alloc import size_class

entry_size = lpcodec.entry_size
LP_EMPTY = lpcodec.LP_EMPTY

_SIZE_LEVELS = (4096, 8192, 16384, 32768, 65536)  # list-max-listpack-size -1 .. -5
SAFETY_LIMIT = 8192  # byte cap of a count-limited node
INSERT_OVERHEAD = 8  # Redis's pessimistic per-element estimate when deciding if a node has room
MERGE_CREDIT = 11  # bytes Redis assumes are saved by merging two listpacks (one header + terminator)
FILL_MAX = 32767
COMPRESS_MAX = 65535
MIN_COMPRESS_BYTES = 48  # smaller nodes are never compressed, as in Redis


class Node(deque):
    """A plain node: its elements, plus the byte size its listpack has, plus `ulen`: a length
    every element has, or -1.  `ulen` lets LRANGE encode a run of equal-length elements with one
    join, without a len() per element (most of an LRANGE of 100 short elements).  Constructing a
    node computes it; an element added in place turns it to -1 unless its length is ulen;
    removals keep it (what remains still has that length), so it may stay -1 after the odd
    element is gone, which only costs the general encoding."""

    __slots__ = ("sz", "ulen")

    def __init__(self, items: Iterable[bytes] = ()) -> None:
        super().__init__(items)
        self.ulen = _common_len(self)

    def took(self, v: bytes) -> None:
        """Account for `v`, just inserted into this node: its listpack size and `ulen`.  (The
        pushes do the same inline, with a shortcut for entry_size.)"""
        self.sz += entry_size(v)
        if len(v) != self.ulen:
            self.ulen = -1


def _common_len(items: Node | list[bytes]) -> int:
    """The length every element of `items` has, or -1 if they differ or there are none."""
    if not items:
        return -1
    lens = set(map(len, items))
    return lens.pop() if len(lens) == 1 else -1


class PackedNode:
    """A compressed interior node (list-compress-depth): zlib over the node's listpack bytes."""

    __slots__ = ("blob", "count", "sz")

    def __init__(self, node: Node) -> None:
        self.blob = zlib.compress(lpcodec.pack(node), 1)
        self.count = len(node)
        self.sz = node.sz

    def __len__(self) -> int:
        return self.count

    def items(self) -> list[bytes]:
        return lpcodec.unpack(zlib.decompress(self.blob))

    def unpack(self) -> Node:
        node = Node(self.items())
        node.sz = self.sz
        return node


def _new_node(items: Iterable[bytes]) -> Node:
    node = Node(items)
    node.sz = LP_EMPTY + sum(map(entry_size, node))
    return node


def _items(node) -> Node | list[bytes]:
    return node.items() if node.__class__ is PackedNode else node


class Quicklist:
    type_name = "list"
    __slots__ = ("nodes", "count", "fill", "depth", "size_limit", "max_count", "room")

    def __init__(self, fill: int = -2, depth: int = 0) -> None:
        self.nodes: list[Node | PackedNode] = []
        self.count = 0
        fill = max(-5, min(FILL_MAX, fill))
        self.fill = fill
        self.depth = max(0, min(COMPRESS_MAX, depth))
        if fill < 0:
            self.size_limit = _SIZE_LEVELS[-fill - 1]
            self.max_count = 1 << 62
        else:
            self.size_limit = SAFETY_LIMIT
            self.max_count = fill
        # A node takes one more element of length n while node.sz + n <= room.
        self.room = self.size_limit - INSERT_OVERHEAD

    # ---- the value contract -------------------------------------------------------------------
    def __len__(self) -> int:
        return self.count

    def encoding(self) -> str:
        return "quicklist"

    def copy(self) -> Quicklist:
        new = Quicklist(self.fill, self.depth)
        new.count = self.count
        out = new.nodes
        for node in self.nodes:
            if node.__class__ is PackedNode:
                p = PackedNode.__new__(PackedNode)
                p.blob, p.count, p.sz = node.blob, node.count, node.sz
                out.append(p)
            else:
                n = Node(node)
                n.sz = node.sz
                out.append(n)
        return new

    def mem_usage(self, samples: int = 5) -> int:
        """Redis's estimate: robj + quicklist header + the average of the first `samples` nodes
        (node header + allocator size of its listpack) times the node count.  Compressed nodes
        are counted at their uncompressed size (Redis counts its LZF size)."""
        nodes = self.nodes
        if not nodes:
            return 16 + 40
        sample = nodes[:samples] if samples > 0 else nodes  # SAMPLES 0: every node
        total = sum(40 + size_class(n.sz) for n in sample)
        return 16 + 40 + int(total / len(sample) * len(nodes))

    # ---- building and serialising (RDB / DUMP / RESTORE) ---------------------------------------
    def listpacks(self) -> list[bytes]:
        """One listpack per node, exactly the bytes Redis keeps (RDB_TYPE_LIST_QUICKLIST_2 body)."""
        out = []
        for node in self.nodes:
            if node.__class__ is PackedNode:
                out.append(zlib.decompress(node.blob))
            else:
                out.append(lpcodec.pack(node))
        return out

    @classmethod
    def from_listpacks(cls, blobs: Iterable[bytes], fill: int = -2, depth: int = 0) -> Quicklist:
        """Rebuild from node listpacks (empty ones are skipped, as Redis's loader does)."""
        ql = cls(fill, depth)
        for blob in blobs:
            items = lpcodec.unpack(blob)
            if items:
                node = Node(items)
                node.sz = len(blob)
                ql.nodes.append(node)
                ql.count += len(node)
        if ql.depth:
            ql._settle()
        return ql

    @classmethod
    def from_items(cls, items: Iterable[bytes], fill: int = -2, depth: int = 0) -> Quicklist:
        ql = cls(fill, depth)
        ql.extend_tail(items)
        return ql

    # ---- ends: push / pop ----------------------------------------------------------------------
    def _room(self, node, v: bytes) -> bool:
        """Redis's _quicklistNodeAllowInsert for a packed-list node."""
        return node.sz + len(v) <= self.room and len(node) < self.max_count

    def push_tail(self, v: bytes) -> None:
        nodes = self.nodes
        self.count += 1
        if nodes:
            node = nodes[-1]
            n = len(v)
            sz = node.sz + n
            if sz <= self.room and len(node) < self.max_count:
                node.append(v)
                if n != node.ulen:
                    node.ulen = -1
                # entry_size's short-string case inline: a string of 1-63 bytes whose first byte
                # is past '9' (`v >= b":"`, one comparison; b"" is below it) is never stored as an
                # integer.  The call is a fifth of a push.
                node.sz = sz + 2 if n < 64 and v >= b":" else sz - n + entry_size(v)
                return
        node = Node((v,))
        node.sz = LP_EMPTY + entry_size(v)
        nodes.append(node)
        if self.depth:
            self._settle_ends()

    def push_head(self, v: bytes) -> None:
        nodes = self.nodes
        self.count += 1
        if nodes:
            node = nodes[0]
            n = len(v)
            sz = node.sz + n
            if sz <= self.room and len(node) < self.max_count:
                node.appendleft(v)
                if n != node.ulen:
                    node.ulen = -1
                # entry_size's short-string case inline: a string of 1-63 bytes whose first byte
                # is past '9' (`v >= b":"`, one comparison; b"" is below it) is never stored as an
                # integer.  The call is a fifth of a push.
                node.sz = sz + 2 if n < 64 and v >= b":" else sz - n + entry_size(v)
                return
        node = Node((v,))
        node.sz = LP_EMPTY + entry_size(v)
        nodes.insert(0, node)
        if self.depth:
            self._settle_ends()

    def extend(self, args: list[bytes], start: int, head: bool) -> None:
        """Push args[start:] one by one at the head (each becomes the new first) or the tail."""
        push = self.push_head if head else self.push_tail
        for i in range(start, len(args)):
            push(args[i])

    def extend_tail(self, items: Iterable[bytes]) -> None:
        push = self.push_tail
        for v in items:
            push(v)

    def extend_head(self, items: Iterable[bytes]) -> None:
        push = self.push_head
        for v in items:
            push(v)

    def pop_head(self) -> bytes:
        """Remove and return the first element (the list must not be empty)."""
        nodes = self.nodes
        node = nodes[0]
        v = node.popleft()
        self.count -= 1
        if node:
            n = len(v)
            node.sz -= n + 2 if n < 64 and v >= b":" else entry_size(v)  # as the pushes
        else:
            del nodes[0]
            if self.depth:
                self._settle_ends()
        return v

    def pop_tail(self) -> bytes:
        nodes = self.nodes
        node = nodes[-1]
        v = node.pop()
        self.count -= 1
        if node:
            n = len(v)
            node.sz -= n + 2 if n < 64 and v >= b":" else entry_size(v)  # as the pushes
        else:
            del nodes[-1]
            if self.depth:
                self._settle_ends()
        return v

    def pop_many(self, n: int, from_head: bool) -> list[bytes]:
        pop = self.pop_head if from_head else self.pop_tail
        return [pop() for _ in range(min(n, self.count))]

    # ---- positional access ---------------------------------------------------------------------
    def _locate(self, index: int) -> tuple[int, int]:
        """(node position, offset in node) of element `index` (0 <= index < count), walking from
        the nearer end as Redis's quicklistGetIteratorAtIdx does."""
        nodes = self.nodes
        if index < (self.count >> 1) + 1:
            for ni, node in enumerate(nodes):
                n = len(node)
                if index < n:
                    return ni, index
                index -= n
        else:
            back = self.count - 1 - index
            for ni in range(len(nodes) - 1, -1, -1):
                n = len(nodes[ni])
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
        nodes = self.nodes
        if index == 0:
            return _items(nodes[0])[0]
        if index == count - 1:
            return _items(nodes[-1])[-1]
        ni, off = self._locate(index)
        return _items(nodes[ni])[off]

    def set(self, index: int, v: bytes) -> bool:
        """LSET: replace in place (Redis 7.0 never splits the node); False if out of range."""
        count = self.count
        if index < 0:
            index += count
        if index < 0 or index >= count:
            return False
        ni, off = self._locate(index)
        node = self._plain_at(ni)
        old = node[off]
        node[off] = v
        if len(v) != node.ulen:
            node.ulen = -1
        node.sz += entry_size(v) - entry_size(old)
        if self.depth:
            self._settle()
        return True

    def range(self, start: int, stop: int) -> tuple[list[bytes], int]:
        """Elements [start, stop) for 0 <= start <= stop <= count, and a length all of them
        have (or -1: unknown or mixed)."""
        if start >= stop:
            return [], -1
        want = stop - start
        nodes = self.nodes
        if start == 0:
            ni, off = 0, 0
            head = nodes[0]  # an end node: never packed
            if want <= len(head):  # LRANGE 0 n within the first node: one C-level copy
                return list(islice(head, want)), head.ulen
        else:
            ni, off = self._locate(start)
        out: list[bytes] = []
        extend = out.extend
        ulen = -2  # none seen yet
        while want > 0:
            node = nodes[ni]
            if ulen != -1:
                u = node.ulen if node.__class__ is Node else -1
                ulen = u if ulen == -2 or u == ulen else -1
            items = _items(node)
            n = len(items)
            if off == 0 and n <= want:
                extend(items)
                want -= n
            else:
                take = min(want, n - off)
                extend(islice(items, off, off + take))
                want -= take
            ni += 1
            off = 0
        return out, ulen

    def __iter__(self) -> Iterator[bytes]:
        for node in self.nodes:
            yield from _items(node)

    def iter_reversed(self) -> Iterator[bytes]:
        for node in reversed(self.nodes):
            yield from reversed(_items(node))

    # ---- LINSERT -------------------------------------------------------------------------------
    def find(self, pivot: bytes) -> int:
        """Index of the first element equal to `pivot`, or -1."""
        base = 0
        for node in self.nodes:
            items = _items(node)
            if pivot in items:
                return base + items.index(pivot)
            base += len(items)
        return -1

    def insert(self, index: int, v: bytes, after: bool) -> None:
        """Insert next to element `index` the way Redis's _quicklistInsert places it: into the
        node if it has room; else into the neighbour when inserting at the node's edge and the
        neighbour has room; else into a new node at that edge; else split the node at the pivot
        and merge what the split left behind with its neighbours where they fit."""
        nodes = self.nodes
        ni, off = self._locate(index)
        node = nodes[ni]
        full = not self._room(node, v)
        at_tail = after and off == len(node) - 1
        at_head = not after and off == 0
        has_next = ni + 1 < len(nodes)
        has_prev = ni > 0
        self.count += 1
        if not full:
            node = self._plain_at(ni)
            node.insert(off + 1 if after else off, v)
            node.took(v)
        elif at_tail and has_next and self._room(nodes[ni + 1], v):
            nxt = self._plain_at(ni + 1)
            nxt.appendleft(v)
            nxt.took(v)
        elif at_head and has_prev and self._room(nodes[ni - 1], v):
            prev = self._plain_at(ni - 1)
            prev.append(v)
            prev.took(v)
        elif (at_tail and has_next) or (at_head and has_prev):
            nodes.insert(ni + 1 if after else ni, _new_node((v,)))
        else:
            items = list(_items(node))
            if after:
                keep, moved = items[:off + 1], items[off + 1:]
                moved.insert(0, v)
                nodes[ni] = _new_node(keep)
                nodes.insert(ni + 1, _new_node(moved))
                self._merge_around(ni)
            else:
                moved, keep = items[:off], items[off:]
                moved.append(v)
                nodes[ni] = _new_node(keep)
                nodes.insert(ni, _new_node(moved))
                self._merge_around(ni + 1)
        if self.depth:
            self._settle()

    def _can_merge(self, a, b) -> bool:
        return (a.sz + b.sz - MERGE_CREDIT <= self.size_limit
                and len(a) + len(b) <= self.max_count)

    def _merge(self, i: int) -> None:
        """Concatenate nodes i and i+1 into one node at position i."""
        nodes = self.nodes
        a, b = nodes[i], nodes[i + 1]
        node = Node(chain(_items(a), _items(b)))
        node.sz = a.sz + b.sz - LP_EMPTY
        nodes[i] = node
        del nodes[i + 1]

    def _merge_around(self, ci: int) -> None:
        """Redis's _quicklistMergeNodes around the node at position ci: the two nodes before it,
        the two after it, then the centre with its previous and its next neighbour."""
        nodes = self.nodes
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
        self._del_head(start)
        self._del_tail(self.count - (stop - start))
        if self.depth:
            self._settle()

    def _del_head(self, n: int) -> None:
        nodes = self.nodes
        self.count -= n
        drop = 0
        while n > 0:
            node = nodes[drop]
            k = len(node)
            if k <= n:
                drop += 1
                n -= k
            else:
                node = self._plain_at(drop)
                removed = [node.popleft() for _ in range(n)]
                node.sz -= sum(map(entry_size, removed))
                n = 0
        if drop:
            del nodes[:drop]

    def _del_tail(self, n: int) -> None:
        nodes = self.nodes
        self.count -= n
        drop = 0
        last = len(nodes) - 1
        while n > 0:
            node = nodes[last - drop]
            k = len(node)
            if k <= n:
                drop += 1
                n -= k
            else:
                node = self._plain_at(last - drop)
                removed = [node.pop() for _ in range(n)]
                node.sz -= sum(map(entry_size, removed))
                n = 0
        if drop:
            del nodes[len(nodes) - drop:]

    def remove(self, v: bytes, limit: int) -> int:
        """LREM: delete up to |limit| elements equal to v (all if 0), from the tail when limit < 0.
        Returns how many were removed."""
        nodes = self.nodes
        todo = -limit if limit < 0 else (limit or self.count)
        removed = 0
        order = range(len(nodes) - 1, -1, -1) if limit < 0 else range(len(nodes))
        emptied = []
        esz = entry_size(v)
        for ni in order:
            if removed == todo:
                break
            items = _items(nodes[ni])
            hits = items.count(v)
            if not hits:
                continue
            take = min(hits, todo - removed)
            kept = _without(items, v, take, limit < 0)
            removed += take
            if kept:
                node = Node(kept)
                node.sz = nodes[ni].sz - take * esz
                nodes[ni] = node
            else:
                emptied.append(ni)
        for ni in sorted(emptied, reverse=True):
            del nodes[ni]
        self.count -= removed
        if self.depth:
            self._settle()
        return removed

    # ---- compression (list-compress-depth) -----------------------------------------------------
    def _plain_at(self, i: int) -> Node:
        node = self.nodes[i]
        if node.__class__ is PackedNode:
            node = node.unpack()
            self.nodes[i] = node
        return node

    def _settle_ends(self) -> None:
        """After the node count changed at an end: unpack the end windows, pack their borders."""
        nodes, d = self.nodes, self.depth
        n = len(nodes)
        for i in range(min(d, n)):
            if nodes[i].__class__ is PackedNode:
                nodes[i] = nodes[i].unpack()
            j = n - 1 - i
            if nodes[j].__class__ is PackedNode:
                nodes[j] = nodes[j].unpack()
        if n > 2 * d:
            for i in (d, n - 1 - d):
                node = nodes[i]
                if node.__class__ is Node and node.sz >= MIN_COMPRESS_BYTES:
                    nodes[i] = PackedNode(node)

    def _settle(self) -> None:
        """After a middle operation: every node outside the end windows packed again."""
        self._settle_ends()
        nodes, d = self.nodes, self.depth
        for i in range(d, len(nodes) - d):
            node = nodes[i]
            if node.__class__ is Node and node.sz >= MIN_COMPRESS_BYTES:
                nodes[i] = PackedNode(node)

    def node_shape(self) -> list[tuple[int, int]]:
        """(element count, listpack bytes) per node: what DUMP would show (tests, DEBUG)."""
        return [(len(n), n.sz) for n in self.nodes]

    def is_packed(self) -> list[bool]:
        return [n.__class__ is PackedNode for n in self.nodes]


def _without(items, v: bytes, take: int, from_tail: bool) -> list[bytes]:
    """`items` minus `take` occurrences of v, counted from the chosen end."""
    if from_tail:
        out = list(items)
        out.reverse()
        out = _without(out, v, take, False)
        out.reverse()
        return out
    out = []
    append = out.append
    for x in items:
        if take and x == v:
            take -= 1
        else:
            append(x)
    return out
