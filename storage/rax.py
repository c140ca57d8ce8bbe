"""Rax: Redis's compressed radix tree, mapping byte-string keys to values in key order.

Used for the stream index (key = 128-bit big-endian entry ID -> listpack node), consumer groups
(name -> group), consumers (name -> consumer) and pending entries lists (ID -> NACK).  It is Redis's
design, node for node, so that what Redis reports about it (XINFO STREAM radix-tree-nodes) is the
same here, and ordered scans from any key cost a walk down the tree, not a sort.

Nodes.  Characters sit on the edges.  A node is either
- non-compressed: `chars` holds one edge byte per child, sorted, `children[i]` follows `chars[i]`
  (a node with no children is a leaf, `chars == b""`); or
- compressed: `chars` is a run of >= 2 bytes leading to exactly one child (`children[0]`): a chain of
  single-child, non-key nodes folded into one.
`iskey` says that the string spelled by the edges from the root TO this node is a key; its value is
`value`.  The root always exists (an empty tree is a lone non-key leaf).

Invariants (checked by `validate()` in the tests): compressed nodes have >= 2 chars and one child;
non-compressed chars are strictly increasing and match the children count; every leaf other than an
empty root is a key; `numnodes` and `numele` count the nodes and keys.

Insertion splits a compressed node where the new key diverges from it (or ends inside it), and
removal deletes the now useless nodes and re-compresses the chain around the change, with the same
rules as Redis's rax.c (including where Redis chooses not to compress), so node counts agree.
Nodes are mutated in place where Redis reallocates, so no parent links are needed.

Iteration: `it = rax.iterator(); it.seek(op, key)` with op in `^ $ = > >= < <=`, then `it.next()` /
`it.prev()` return True while positioned (the first call after a seek returns the element found by the
seek, as raxNext/raxPrev do) and expose `it.key` / `it.value`.  Modifying the tree invalidates iterators:
seek again afterwards.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # pragma: no cover - Cython is a build requirement of the compiled build only
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)


def untrack(obj: Any) -> None:
    """Take obj out of the cyclic collector's lists (compiled build; interpreted, nothing: the
    interpreter offers no call for it).  Only for an object no reference cycle can pass through:
    the collector never looks into it again, so a cycle through it would never be freed."""
    if cython.compiled:
        PyObject_GC_UnTrack(obj)  # noqa: F821  (rax.pxd: CPython's C call)


class _NotFound:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_FOUND"


NOT_FOUND: Any = _NotFound()


_LEAF: Any = ()  # the children of every leaf: one shared empty tuple, no list per key


class RaxNode:
    __slots__ = ("chars", "children", "iskey", "compressed", "value")

    def __init__(self, chars: bytes = b"", children: Any = _LEAF, compressed: bool = False) -> None:
        self.chars = chars
        self.children: list[RaxNode] = children
        self.iskey = False
        self.compressed = compressed
        self.value: Any = None


class Rax:
    """`plain`: the values hold no reference that can lead back to the tree (a stream's listpacks,
    bytes): then its nodes and their child lists are kept out of the cyclic collector (`untrack`),
    which otherwise walks two objects per stream node in every full collection."""

    __slots__ = ("head", "numele", "numnodes", "plain")

    def __init__(self, plain: bool = False) -> None:
        self.head = RaxNode()
        self.numele = 0
        self.numnodes = 1
        self.plain = plain
        if plain:
            untrack(self)
            untrack(self.head)

    def __len__(self) -> int:
        return self.numele

    # ---- lookup --------------------------------------------------------------------------------
    def _walk(self, key: bytes, stack: list[RaxNode] | None) -> tuple[RaxNode, int, int]:
        """Follow `key` as far as the tree allows: (stop node, chars consumed, split position)."""
        h = self.head
        i = 0
        n = len(key)
        while h.chars and i < n:
            chars = h.chars
            if h.compressed:
                if key.startswith(chars, i):
                    i += len(chars)
                else:
                    j = 0
                    m = len(chars)
                    while j < m and i < n and chars[j] == key[i]:
                        j += 1
                        i += 1
                    return h, i, j
                child = h.children[0]
            else:
                j = chars.find(key[i])
                if j < 0:
                    return h, i, 0
                i += 1
                child = h.children[j]
            if stack is not None:
                stack.append(h)
            h = child
        return h, i, 0

    def find(self, key: bytes, default: Any = NOT_FOUND) -> Any:
        h = self.head
        i = 0
        n = len(key)
        while h.chars and i < n:
            chars = h.chars
            if h.compressed:
                if not key.startswith(chars, i):
                    return default
                i += len(chars)
                h = h.children[0]
            else:
                j = chars.find(key[i])
                if j < 0:
                    return default
                i += 1
                h = h.children[j]
        if i == n and h.iskey:
            return h.value
        return default

    def get(self, key: bytes, default: Any = NOT_FOUND) -> Any:
        return self.find(key, default)

    def __contains__(self, key: bytes) -> bool:
        return self.find(key) is not NOT_FOUND

    # ---- insertion -----------------------------------------------------------------------------
    def insert(self, key: bytes, value: Any) -> bool:
        """Set key to value; True if the key is new (raxInsert)."""
        return self._insert(key, value, True)

    def try_insert(self, key: bytes, value: Any) -> bool:
        """Add key only if absent; True if it was added (raxTryInsert)."""
        return self._insert(key, value, False)

    def _insert(self, key: bytes, value: Any, overwrite: bool) -> bool:
        """A plain tree's nodes and child lists are untracked where they are made (interpreted,
        `untrack` can do nothing, so `plain` is False there and skips its calls)."""
        h, i, j = self._walk(key, None)
        n = len(key)
        plain = self.plain and cython.compiled
        if i == n and (not h.compressed or j == 0):
            if h.iskey:
                if overwrite:
                    h.value = value
                return False
            h.iskey = True
            h.value = value
            self.numele += 1
            return True
        if h.compressed:
            chars = h.chars
            nxt = h.children[0]
            if i != n:
                # The key diverges inside a compressed node: keep chars[:j] (if any) here, then a
                # split node with the diverging char chars[j], then what followed it (if any).
                postfix_chars = chars[j + 1 :]
                if postfix_chars:
                    postfix = RaxNode(postfix_chars, [nxt], len(postfix_chars) > 1)
                    self.numnodes += 1
                    if plain:
                        untrack(postfix)
                        untrack(postfix.children)
                else:
                    postfix = nxt
                split = RaxNode(chars[j : j + 1], [postfix])
                if plain:
                    untrack(split.children)
                if j == 0:
                    # h itself becomes the split node (it keeps its key and value).
                    h.chars = split.chars
                    h.compressed = False
                    h.children = split.children
                else:
                    h.chars = chars[:j]
                    h.compressed = j > 1
                    h.children = [split]
                    self.numnodes += 1
                    if plain:
                        untrack(split)
                        untrack(h.children)
                    h = split
            else:
                # The key ends inside a compressed node: split it there; the lower half is the key.
                postfix = RaxNode(chars[j:], [nxt], len(chars) - j > 1)
                postfix.iskey = True
                postfix.value = value
                h.chars = chars[:j]
                h.compressed = j > 1
                h.children = [postfix]
                if plain:
                    untrack(postfix)
                    untrack(postfix.children)
                    untrack(h.children)
                self.numnodes += 1
                self.numele += 1
                return True
        while i < n:
            child = RaxNode()  # a leaf: its children the shared empty tuple, never tracked
            if plain:
                untrack(child)
            chars = h.chars
            if not chars:
                if n - i > 1:
                    h.chars = key[i:]
                    h.compressed = True
                    i = n
                else:
                    h.chars = key[i:]
                    i += 1
                h.children = [child]
                if plain:
                    untrack(h.children)
            else:
                k = bisect_left(chars, key[i])
                h.chars = chars[:k] + key[i : i + 1] + chars[k:]
                h.children.insert(k, child)
                i += 1
            self.numnodes += 1
            h = child
        h.iskey = True
        h.value = value
        self.numele += 1
        return True

    # ---- removal -------------------------------------------------------------------------------
    def remove(self, key: bytes) -> bool:
        return self.pop(key) is not NOT_FOUND

    def pop(self, key: bytes, default: Any = NOT_FOUND) -> Any:
        """Remove key and return its value (default if absent) (raxRemove)."""
        stack: list[RaxNode] = []
        h, i, j = self._walk(key, stack)
        if i != len(key) or (h.compressed and j != 0) or not h.iskey:
            return default
        old = h.value
        h.iskey = False
        h.value = None
        self.numele -= 1
        trycompress = False
        if not h.chars:
            child = None
            while h is not self.head:
                child = h
                self.numnodes -= 1
                h = stack.pop()
                if h.iskey or (not h.compressed and len(h.chars) != 1):
                    break
            if child is not None:
                if h.compressed or len(h.chars) == 1:
                    h.chars = b""
                    h.compressed = False
                    h.children = _LEAF
                else:
                    k = h.children.index(child)
                    h.chars = h.chars[:k] + h.chars[k + 1 :]
                    del h.children[k]
                if len(h.chars) == 1 and not h.iskey:
                    trycompress = True
        elif len(h.chars) == 1:
            trycompress = True
        if trycompress:
            while stack:
                parent = stack.pop()
                if parent.iskey or (not parent.compressed and len(parent.chars) != 1):
                    break
                h = parent
            chain = [h]
            cur = h
            while cur.chars:
                cur = cur.children[-1]
                if cur.iskey or (not cur.compressed and len(cur.chars) != 1):
                    break
                chain.append(cur)
            if len(chain) > 1:
                h.chars = b"".join(node.chars for node in chain)
                h.compressed = True
                h.children = [chain[-1].children[0]]
                self.numnodes -= len(chain) - 1
                if self.plain:  # the one object a removal creates
                    untrack(h.children)
        return old

    # ---- iteration -----------------------------------------------------------------------------
    def iterator(self) -> RaxIterator:
        return RaxIterator(self)

    def items(self, start: bytes | None = None, reverse: bool = False) -> Iterator[tuple[bytes, Any]]:
        """(key, value) pairs in key order from the first key >= start (or <= start if reverse)."""
        it = RaxIterator(self)
        if start is None:
            it.seek("$" if reverse else "^")
        else:
            it.seek("<=" if reverse else ">=", start)
        step = it.prev if reverse else it.next
        while step():
            yield it.key, it.value

    def keys(self) -> Iterator[bytes]:
        for k, _ in self.items():
            yield k

    def first(self) -> tuple[bytes, Any] | None:
        it = RaxIterator(self)
        it.seek("^")
        return (it.key, it.value) if it.next() else None

    def last(self) -> tuple[bytes, Any] | None:
        it = RaxIterator(self)
        it.seek("$")
        return (it.key, it.value) if it.next() else None

    # ---- checking ------------------------------------------------------------------------------
    def validate(self) -> list[bytes]:
        """Check every invariant; returns the keys in order (for comparison with a model)."""
        keys: list[bytes] = []
        nodes = 0
        todo: list[tuple[RaxNode, bytes]] = [(self.head, b"")]
        while todo:
            node, prefix = todo.pop()
            nodes += 1
            if node.iskey:
                keys.append(prefix)
            else:
                assert node.value is None, "non-key node holds a value"
            if node.compressed:
                assert len(node.chars) >= 2, "compressed node shorter than 2 chars"
                assert len(node.children) == 1, "compressed node without exactly one child"
                todo.append((node.children[0], prefix + node.chars))
            else:
                assert len(node.children) == len(node.chars), "children and edge chars disagree"
                assert all(a < b for a, b in zip(node.chars, node.chars[1:], strict=False)), "edges unsorted"
                if not node.chars:
                    assert node.iskey or node is self.head, "non-key leaf"
                for k in range(len(node.chars) - 1, -1, -1):
                    todo.append((node.children[k], prefix + node.chars[k : k + 1]))
        assert nodes == self.numnodes, "numnodes %d, counted %d" % (self.numnodes, nodes)
        assert len(keys) == self.numele, "numele %d, counted %d" % (self.numele, len(keys))
        assert keys == sorted(keys), "keys out of order"
        return keys


class RaxIterator:
    """A position in a Rax: `seek()` then `next()` / `prev()`; see the module docstring."""

    __slots__ = ("rax", "node", "stack", "_key", "eof", "just_seeked")

    def __init__(self, rax: Rax) -> None:
        self.rax = rax
        self.node: RaxNode = rax.head
        self.stack: list[tuple[RaxNode, int]] = []
        self._key = bytearray()
        self.eof = True
        self.just_seeked = False

    @property
    def key(self) -> bytes:
        return bytes(self._key)

    @property
    def value(self) -> Any:
        return self.node.value

    # ---- moves within the tree -------------------------------------------------------------------
    def _push(self, node: RaxNode, idx: int) -> RaxNode:
        self.stack.append((node, idx))
        self._key += node.chars if node.compressed else node.chars[idx : idx + 1]
        return node.children[idx]

    def _pop(self) -> tuple[RaxNode, int]:
        node, idx = self.stack.pop()
        del self._key[len(self._key) - (len(node.chars) if node.compressed else 1) :]
        return node, idx

    def _descend_first(self, node: RaxNode) -> bool:
        """Position at the first key of node's subtree (node included)."""
        while not node.iskey:
            if not node.chars:
                return False
            node = self._push(node, 0)
        self.node = node
        return True

    def _descend_last(self, node: RaxNode) -> bool:
        """Position at the last key of node's subtree: its rightmost leaf."""
        while node.chars:
            node = self._push(node, 0 if node.compressed else len(node.chars) - 1)
        self.node = node
        return node.iskey

    def _step_next(self) -> bool:
        node = self.node
        if node.chars:
            return self._descend_first(self._push(node, 0))
        while self.stack:
            parent, idx = self._pop()
            if not parent.compressed and idx + 1 < len(parent.chars):
                return self._descend_first(self._push(parent, idx + 1))
        return False

    def _step_prev(self) -> bool:
        while self.stack:
            parent, idx = self._pop()
            if not parent.compressed and idx > 0:
                return self._descend_last(self._push(parent, idx - 1))
            if parent.iskey:
                self.node = parent
                return True
        return False

    def _reset(self) -> None:
        self.stack = []
        self._key = bytearray()
        self.node = self.rax.head

    def _lower_bound(self, key: bytes) -> tuple[bool, bool]:
        """Position at the first key >= `key`: (positioned, exact match)."""
        self._reset()
        node = self.node
        n = len(key)
        i = 0
        while True:
            if i == n:
                if node.iskey:
                    self.node = node
                    return True, True
                return self._descend_first(node), False
            chars = node.chars
            if not chars:
                # A leaf whose key is a proper prefix of `key`: everything here is smaller.
                self.node = node
                return self._step_next(), False
            if node.compressed:
                m = len(chars)
                seg = key[i : i + m]
                if seg == chars:
                    node = self._push(node, 0)
                    i += m
                    continue
                if seg < chars:
                    return self._descend_first(self._push(node, 0)), False
                self._descend_last(self._push(node, 0))
                return self._step_next(), False
            c = key[i]
            k = bisect_left(chars, c)
            if k < len(chars) and chars[k] == c:
                node = self._push(node, k)
                i += 1
                continue
            if k < len(chars):
                return self._descend_first(self._push(node, k)), False
            self._descend_last(self._push(node, k - 1))
            return self._step_next(), False

    # ---- public --------------------------------------------------------------------------------
    def seek(self, op: str, key: bytes = b"") -> bool:
        """Position the iterator (raxSeek); returns False if no element satisfies op."""
        self.just_seeked = True
        if op == "^":
            self._reset()
            found = self._descend_first(self.node)
        elif op == "$":
            self._reset()
            found = self._descend_last(self.node)
        else:
            found, exact = self._lower_bound(key)
            if op == "=":
                found = found and exact
            elif op == ">=":
                pass
            elif op == ">":
                if found and exact:
                    found = self._step_next()
            elif op in ("<=", "<"):
                if not found:
                    self._reset()
                    found = self._descend_last(self.node)
                elif not (exact and op == "<="):
                    found = self._step_prev()
            else:
                raise ValueError("bad seek operator %r" % op)
        self.eof = not found
        return found

    def next(self) -> bool:
        if self.eof:
            return False
        if self.just_seeked:
            self.just_seeked = False
            return True
        if not self._step_next():
            self.eof = True
            return False
        return True

    def prev(self) -> bool:
        if self.eof:
            return False
        if self.just_seeked:
            self.just_seeked = False
            return True
        if not self._step_prev():
            self.eof = True
            return False
        return True
