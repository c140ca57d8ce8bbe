# Declarations for compiling bigarrays.py with Cython (setup.py); the interpreter never reads this.
#
# The allocator wrapper itself, in C: its four functions are called by CPython's PyMem_* in place
# of the previous allocator's, with no Python object involved (bigarrays.py's docstring says what
# they do and why; the C below says how).
cdef extern from *:
    """
    #ifndef _GNU_SOURCE
    #define _GNU_SOURCE  /* mremap */
    #endif
    #include <string.h>
    #include <sys/mman.h>
    #include <unistd.h>

    /* One mapping of ours: the address handed to CPython (its start) and its mapped length. */
    typedef struct { char *addr; size_t len; } raxdb_bigmap;

    static PyMemAllocatorEx raxdb_big_prev;       /* the allocator this one wraps */
    static raxdb_bigmap *raxdb_big_maps = NULL;   /* ours, sorted by address (C heap, libc's) */
    static Py_ssize_t raxdb_big_n = 0, raxdb_big_cap = 0;
    static uintptr_t raxdb_big_lo = UINTPTR_MAX, raxdb_big_hi = 0;  /* lowest and highest start */
    static size_t raxdb_big_min = 0;              /* BIG: a realloc to this many bytes moves out */
    static size_t raxdb_big_page = 4096;
    static int raxdb_big_on = 0;
    static Py_ssize_t raxdb_big_moves = 0;        /* blocks moved into a mapping, ever */
    /* At most this many mappings of ours (then blocks stay in the heap): each is a VMA of the
       kernel's, and vm.max_map_count (65,530 by default) is the whole process's, pymalloc's arenas
       and glibc's own mappings included. */
    #define RAXDB_BIG_MAPS 8192

    static size_t raxdb_big_round(size_t size) {
        size_t page = raxdb_big_page;
        if (size == 0) return page;
        return (size + page - 1) & ~(page - 1);
    }

    /* The slot of `p` in the table, or -1: a pointer not page-aligned (every pymalloc block, and
       glibc's chunks but by chance) or outside [lo, hi] costs one or two compares. */
    static inline Py_ssize_t raxdb_big_find(void *p) {
        uintptr_t a = (uintptr_t)p;
        Py_ssize_t lo, hi, mid;
        /* 4096 divides every page size, so a mapping's start is a multiple of it */
        if (__builtin_expect((a & 4095) != 0, 1) || a < raxdb_big_lo || a > raxdb_big_hi) return -1;
        lo = 0; hi = raxdb_big_n - 1;
        while (lo <= hi) {
            mid = (lo + hi) >> 1;
            if ((uintptr_t)raxdb_big_maps[mid].addr < a) lo = mid + 1;
            else if ((uintptr_t)raxdb_big_maps[mid].addr > a) hi = mid - 1;
            else return mid;
        }
        return -1;
    }

    static void raxdb_big_bounds(void) {
        if (raxdb_big_n == 0) { raxdb_big_lo = UINTPTR_MAX; raxdb_big_hi = 0; return; }
        raxdb_big_lo = (uintptr_t)raxdb_big_maps[0].addr;
        raxdb_big_hi = (uintptr_t)raxdb_big_maps[raxdb_big_n - 1].addr;
    }

    static void raxdb_big_remove(Py_ssize_t i) {
        memmove(raxdb_big_maps + i, raxdb_big_maps + i + 1, (size_t)(raxdb_big_n - i - 1) * sizeof(raxdb_bigmap));
        raxdb_big_n--;
        raxdb_big_bounds();
    }

    /* Record a mapping; 0 when the table cannot grow (the caller then undoes the mapping). */
    static int raxdb_big_add(char *addr, size_t len) {
        Py_ssize_t lo = 0, hi = raxdb_big_n;
        if (raxdb_big_n == raxdb_big_cap) {
            Py_ssize_t cap = raxdb_big_cap ? raxdb_big_cap * 2 : 64;
            raxdb_bigmap *t = (raxdb_bigmap *)realloc(raxdb_big_maps, (size_t)cap * sizeof(raxdb_bigmap));
            if (t == NULL) return 0;
            raxdb_big_maps = t; raxdb_big_cap = cap;
        }
        while (lo < hi) {
            Py_ssize_t mid = (lo + hi) >> 1;
            if ((uintptr_t)raxdb_big_maps[mid].addr < (uintptr_t)addr) lo = mid + 1; else hi = mid;
        }
        memmove(raxdb_big_maps + lo + 1, raxdb_big_maps + lo, (size_t)(raxdb_big_n - lo) * sizeof(raxdb_bigmap));
        raxdb_big_maps[lo].addr = addr;
        raxdb_big_maps[lo].len = len;
        raxdb_big_n++;
        raxdb_big_bounds();
        return 1;
    }

    static void raxdb_big_free(void *ctx, void *p) {
        Py_ssize_t i = raxdb_big_find(p);
        if (i < 0) { raxdb_big_prev.free(raxdb_big_prev.ctx, p); return; }
        munmap(raxdb_big_maps[i].addr, raxdb_big_maps[i].len);
        raxdb_big_remove(i);
    }

    /* A block not ours grown to BIG or more: the previous allocator's realloc first (it alone
       knows the old block's size, so it alone can copy it), then the bytes into a fresh mapping
       and that block freed.  One copy more, once in an array's life; at any failure the heap's
       block is the answer, a valid one. */
    static void *raxdb_big_take(void *p, size_t size) {
        void *q = raxdb_big_prev.realloc(raxdb_big_prev.ctx, p, size);
        size_t len;
        char *m;
        if (q == NULL) return NULL;
        if (raxdb_big_n >= RAXDB_BIG_MAPS) return q;
        len = raxdb_big_round(size + (size >> 3));  /* room, as the list's own over-allocation */
        m = (char *)mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return q;
        if (!raxdb_big_add(m, len)) { munmap(m, len); return q; }
        memcpy(m, q, size);
        raxdb_big_prev.free(raxdb_big_prev.ctx, q);
        raxdb_big_moves++;
        return m;
    }

    /* A first block of BIG or more had by a realloc from nothing (an array made empty, then
       sized: the keyspace's index and tags): a mapping at once, nothing to copy, its pages
       untouched until written.  At any failure, the previous allocator's block. */
    static void *raxdb_big_fresh(size_t size) {
        size_t len;
        char *m;
        if (raxdb_big_n >= RAXDB_BIG_MAPS) return raxdb_big_prev.realloc(raxdb_big_prev.ctx, NULL, size);
        len = raxdb_big_round(size + (size >> 3));  /* room, as raxdb_big_take's */
        m = (char *)mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return raxdb_big_prev.realloc(raxdb_big_prev.ctx, NULL, size);
        if (!raxdb_big_add(m, len)) {
            munmap(m, len);
            return raxdb_big_prev.realloc(raxdb_big_prev.ctx, NULL, size);
        }
        raxdb_big_moves++;
        return m;
    }

    /* A block of ours resized: within its mapping, the same block; grown past it, mremap (the
       kernel moves the pages, no copy); shrunk to under half of it, mremap in place; shrunk
       under BIG / 2, back to the previous allocator (so that a big list emptied keeps no page). */
    static void *raxdb_big_resize(Py_ssize_t i, size_t size) {
        char *p = raxdb_big_maps[i].addr;
        size_t len = raxdb_big_maps[i].len;
        size_t want;
        char *q;
        if (size < raxdb_big_min / 2) {
            void *h = raxdb_big_prev.malloc(raxdb_big_prev.ctx, size);
            if (h != NULL) {
                memcpy(h, p, size);
                munmap(p, len);
                raxdb_big_remove(i);
                return h;
            }
        }
        if (size <= len) {
            want = raxdb_big_round(size);
            if (want < len / 2 && mremap(p, len, want, 0) != MAP_FAILED) raxdb_big_maps[i].len = want;
            return p;
        }
        want = raxdb_big_round(size + (size >> 3));
        q = (char *)mremap(p, len, want, MREMAP_MAYMOVE);
        if (q == MAP_FAILED) return NULL;  /* the old block stays valid, as realloc's contract says */
        if (q == p) { raxdb_big_maps[i].len = want; return q; }
        raxdb_big_remove(i);
        if (!raxdb_big_add(q, want)) {
            /* cannot happen (a slot was just freed); were it to, the pages would leak, not crash */
            return q;
        }
        return q;
    }

    static __attribute__((noinline)) void *raxdb_big_realloc_slow(void *p, size_t size) {
        Py_ssize_t i;
        if (p == NULL) return size >= raxdb_big_min ? raxdb_big_fresh(size) : raxdb_big_prev.realloc(raxdb_big_prev.ctx, p, size);
        i = raxdb_big_find(p);
        if (i >= 0) return raxdb_big_resize(i, size);
        if (size >= raxdb_big_min) return raxdb_big_take(p, size);
        return raxdb_big_prev.realloc(raxdb_big_prev.ctx, p, size);
    }

    /* The common cases (a block not page-aligned, so not ours, or NULL: a list's first append,
       kept under BIG) in a few instructions and a tail-jump, the rest out of line so that they
       save no registers. */
    static void *raxdb_big_realloc(void *ctx, void *p, size_t size) {
        if (__builtin_expect(((uintptr_t)p & 4095) != 0 || p == NULL, 1) && size < raxdb_big_min)
            return raxdb_big_prev.realloc(raxdb_big_prev.ctx, p, size);
        return raxdb_big_realloc_slow(p, size);
    }

    /* Wrap the MEM domain's allocator once; 1 if this call installed it. */
    static int raxdb_big_install(size_t big) {
        PyMemAllocatorEx mine;
        long page = sysconf(_SC_PAGESIZE);
        if (raxdb_big_on) return 0;
        if (page > 0) raxdb_big_page = (size_t)page;
        raxdb_big_min = big;
        PyMem_GetAllocator(PYMEM_DOMAIN_MEM, &raxdb_big_prev);
        /* malloc and calloc are the previous allocator's own, called with its own context (so
           they cost nothing more); realloc and free ignore the context they are given. */
        mine.ctx = raxdb_big_prev.ctx;
        mine.malloc = raxdb_big_prev.malloc;
        mine.calloc = raxdb_big_prev.calloc;
        mine.realloc = raxdb_big_realloc;
        mine.free = raxdb_big_free;
        PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &mine);
        raxdb_big_on = 1;
        return 1;
    }

    static size_t raxdb_big_mapped(void) {
        size_t total = 0;
        Py_ssize_t i;
        for (i = 0; i < raxdb_big_n; i++) total += raxdb_big_maps[i].len;
        return total;
    }
    """
    int _install "raxdb_big_install"(size_t big)
    Py_ssize_t _count "raxdb_big_n"
    Py_ssize_t _moves "raxdb_big_moves"
    size_t _mapped "raxdb_big_mapped"()
