# Declarations for compiling quicklist.py with Cython (setup.py); the interpreter never reads this.
#
# Quicklist becomes an extension type whose count and options are C fields, packed so the object
# is 48 bytes (64 with the collector's header): fill fits a short and depth an unsigned short
# after their clamping.  The hot operations (the pushes and pops at both ends, the seek, LRANGE's
# bulk strings) hold their node in a local typed as bytearray, so its header reads are C loads,
# and call storage/listpack.pxd's typed operations as C functions.  Every field stays public, so
# the commands, the RDB code and the tests read and write them as before.
cimport cython
from raxdb.storage.alloc cimport size_class
from raxdb.storage.listpack cimport (bulks, count_of, delete_at, delete_indexes, equal_indexes, from_encoded,
                                     offset_at, pop_value, push_value, skip, value_at, values)

cpdef Py_ssize_t _count(node) except -1
cpdef Py_ssize_t _size(node) except -1
@cython.locals(total=Py_ssize_t, i=Py_ssize_t)
cpdef Py_ssize_t _nodes_alloc(list nodes, Py_ssize_t k) except -1
cpdef object _bytes(node)
cdef inline bint _fits(Py_ssize_t size, Py_ssize_t count, Py_ssize_t n, Py_ssize_t limit, int fill)

# LREM's steps on one node (Quicklist.remove): C calls.
cdef list _lrem_hits(node, bytes v, iv, limit, left)  # Python ints: LREM takes any int64
cdef _cut(bytearray node, list hits)


# A C integer: the pushes' room test adds it to C lengths (only this module reads it)
cdef Py_ssize_t INSERT_OVERHEAD


cdef class Quicklist:
    cdef public object _n
    cdef public Py_ssize_t count
    cdef public short fill
    cdef public unsigned short depth
    cdef public int size_limit

    @cython.locals(s="const unsigned char*")
    cdef bint _takes(self, bytearray node, Py_ssize_t n) except -1

    @cython.locals(node=bytearray)
    cpdef push_tail(self, v)

    @cython.locals(node=bytearray)
    cpdef push_head(self, v)

    @cython.locals(limit=Py_ssize_t, fill=int, i=Py_ssize_t, end=Py_ssize_t, node=bytearray, size=Py_ssize_t,
                   cnt=Py_ssize_t, first=Py_ssize_t, entries=list, k=Py_ssize_t, e=bytes)
    cpdef extend(self, list args, Py_ssize_t start, bint head)

    @cython.locals(node=bytearray)
    cpdef bytes pop_head(self)

    @cython.locals(node=bytearray)
    cpdef bytes pop_tail(self)

    @cython.locals(ni=Py_ssize_t, n=Py_ssize_t, back=Py_ssize_t)
    cpdef tuple _locate(self, Py_ssize_t index)

    @cython.locals(count=Py_ssize_t, ni=Py_ssize_t, off=Py_ssize_t)
    cpdef index(self, Py_ssize_t index)

    @cython.locals(want=Py_ssize_t, ni=Py_ssize_t, off=Py_ssize_t, take=Py_ssize_t, node=bytearray, out=list)
    cpdef bytes bulks(self, Py_ssize_t start, Py_ssize_t stop)


# Quicklist.mem_usage's body, a module function (as the pushes' helpers): evict.py's recount after
# every list write reaches it through usage.pxd as a C call.
@cython.locals(n=object, nodes=list, count=Py_ssize_t, k=Py_ssize_t, avg=cython.double)
cpdef Py_ssize_t quicklist_usage(Quicklist ql, Py_ssize_t samples=*) except -1
