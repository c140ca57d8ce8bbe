"""Big growing arrays in mappings of their own: a wrapper around CPython's PyMem allocator.

Why: server/base/heap.py fixes glibc malloc's MMAP_THRESHOLD at 4 MiB, so a block under it that
grows by realloc (the keyspace's `_keys` and `_values` lists and its `_meta` array, growing side by
side) moves past the others in the heap at each step and leaves its old place behind as a resident
hole (~18 bytes a key of string10's RSS).  Lists' item arrays and `array.array`'s buffers are
CPython's PYMEM_DOMAIN_MEM blocks, grown by PyMem_Realloc; this module wraps that domain's
allocator at run time through the public PyMem_GetAllocator / PyMem_SetAllocator (as tracemalloc
does) so that a block grown to `BIG` bytes or more leaves the heap for an anonymous mapping of its
own, which later grows by mremap (the kernel moves page tables, nothing is copied, no hole stays)
and is given back whole by munmap at its free.

The wrapper (compiled: bigarrays.pxd holds it in C):
- malloc, calloc: the previous allocator's, always.  A big block allocated at once (a 1 MB value,
  a reply) stays in the heap, so heap.py's reason for its threshold stands; only realloc moves.
- realloc of a block not ours to BIG or more: the previous allocator's realloc (it alone knows the
  old block's size, so it copies), then the bytes into a fresh mapping (page-rounded, an eighth
  of room) and the heap's block freed.  Realloc from nothing (NULL) to BIG or more: a fresh mapping at
  once, nothing copied, its pages untouched until written (an array made empty and then sized:
  storage/keyspace.py makes its index and tags so, and the tables a doubling leaves behind are
  unmapped, not holes).  Realloc of ours: the same block within its mapping, mremap
  past it (MREMAP_MAYMOVE) or when shrunk under half of it, and back to the previous allocator
  when shrunk under BIG / 2 (so a big list emptied keeps no pages and the mappings stay few).
- free of ours: munmap; of any other block: the previous allocator's.
- "Ours" is known exactly, never from memory contents: a sorted table of our mappings' start
  addresses.  A pointer that is not page-aligned (every pymalloc block; glibc's chunks but by
  chance) or outside the table's lowest and highest start costs every other free and realloc a
  compare or two.

Rule: process-wide, so only `server/main.py`'s `main` installs it (a server in its own process,
beside heap.keep_big_blocks), never an embedded server in its caller's process.  Interpreted, it
does nothing.

Invariants: CPython holds the GIL for every call into the MEM domain, so the table needs no lock.
Installed once and never removed (blocks of ours are alive until freed through it).  Not installed
while tracemalloc traces: tracemalloc's stop puts back the allocator it found at its start, which
would drop this one and hand our mappings to pymalloc's free; tracemalloc started after it wraps
it and its stop puts it back.  At any failure (mmap, mremap, the table's growth) a block stays
where the previous allocator keeps it, a valid block, or realloc answers NULL with the old block
intact, as realloc's contract says.
"""

from __future__ import annotations

try:  # compiled, `cython.compiled` is True at compile time; interpreted, Cython may be absent
    import cython
except ImportError:  # interpreted without Cython
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

# A realloc to this many bytes or more moves a block into a mapping of its own: a list of 32,768
# items.  Under it the holes a block leaves are small; over it a mapping's syscalls are few
# against the copies they save (docs/speed-log.md, 2026-11-28, "(#56, h-memhook)").
BIG = 256 * 1024

if not cython.compiled:  # compiled, bigarrays.pxd's C: the wrapper and its table
    _count = 0
    _moves = 0

    def _install(big: int) -> int:
        return 0

    def _mapped() -> int:
        return 0


def install(big: int = BIG) -> bool:
    """Wrap the MEM domain's allocator (see the module's docstring); whether this call did."""
    import _tracemalloc  # builtin: whether tracing started before us (PYTHONTRACEMALLOC, -X)
    if _tracemalloc.is_tracing():
        return False
    return bool(_install(big))


def stats() -> tuple[int, int, int]:
    """Our mappings now, their bytes mapped, and the blocks moved into a mapping so far."""
    return _count, _mapped(), _moves
