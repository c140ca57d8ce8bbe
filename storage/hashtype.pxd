# Declarations for compiling hashtype.py with Cython (setup.py); the interpreter never reads this.
#
# Hash becomes an extension type whose two slots are C struct fields: the same 48-byte object as
# the interpreted class (header, two references, the cycle collector's header).  Its methods stay
# `def` methods, since a cpdef method would add a vtable pointer to every hash.  The listpack
# functions they call on every HSET / HGET are cimported, so those are C calls instead of calls
# through the listpack module's attributes.
#
# _Table (one per hashtable-encoded hash, so its vtable pointer does not count) is an extension
# type with cpdef lookups: Hash types `d` as _Table, so HGET / HSET / HDEL on a hashtable are C
# calls, its arrays are cpython.array objects read through their C data pointers, and a field is
# compared with memcmp.
cimport cython
from cpython cimport array
from libc.string cimport memcmp
from raxdb.storage.listpack cimport (append_pair, count_of, elements, entry_end, find_key, pair_value,
                                    replace_value, replace_values, splice)

cdef Py_ssize_t _MIN_INDEX
cdef Py_ssize_t _U32

cdef unsigned int _u32(array.array a, Py_ssize_t i) noexcept
cdef void _set_u32(array.array a, Py_ssize_t i, unsigned int v) noexcept
cdef int _i32(array.array a, Py_ssize_t i) noexcept
cdef void _set_i32(array.array a, Py_ssize_t i, int v) noexcept
cdef bint _has_prefix(bytes item, object field, Py_ssize_t n) except -1


cdef class _Table:
    cdef public list items
    cdef public array.array meta
    cdef public array.array free
    cdef public array.array index
    cdef public Py_ssize_t mask
    cdef public Py_ssize_t count

    @cython.locals(index=array.array, meta=array.array, items=list, mask=Py_ssize_t, n=Py_ssize_t,
                   i=Py_ssize_t, p=Py_ssize_t)
    cdef Py_ssize_t _slot(self, object field, unsigned int h) except -1

    cpdef Py_ssize_t find(self, object field) except -2

    @cython.locals(p=Py_ssize_t, item=bytes)
    cpdef object get(self, object field)

    @cython.locals(h=cython.uint, i=Py_ssize_t, p=Py_ssize_t, mask=Py_ssize_t, n=Py_ssize_t, items=list,
                   meta=array.array, free=array.array)
    cpdef Py_ssize_t set(self, object field, object value) except -1

    @cython.locals(i=Py_ssize_t)
    cpdef bint delete(self, object field) except -1

    @cython.locals(index=array.array, mask=Py_ssize_t, meta=array.array, items=list, p=Py_ssize_t,
                   i=Py_ssize_t)
    cdef _rebuild_index(self, Py_ssize_t size)

    @cython.locals(index=array.array, meta=array.array, items=list, mask=Py_ssize_t, p=Py_ssize_t,
                   j=Py_ssize_t, q=Py_ssize_t, k=Py_ssize_t, n=Py_ssize_t, size=Py_ssize_t)
    cdef _remove(self, Py_ssize_t i)

    @cython.locals(meta=array.array, items=list, out=list, p=Py_ssize_t, n=Py_ssize_t)
    cpdef list flat(self)

    @cython.locals(meta=array.array, items=list, out=list, p=Py_ssize_t)
    cpdef list fields(self, Py_ssize_t start=*, Py_ssize_t stop=*)

    @cython.locals(meta=array.array, items=list, out=list, p=Py_ssize_t)
    cpdef list values(self)

    @cython.locals(item=bytes)
    cpdef bytes field_at(self, Py_ssize_t p)

    @cython.locals(n=Py_ssize_t, end=Py_ssize_t)
    cpdef tuple scan(self, Py_ssize_t cursor, Py_ssize_t count)

    @cython.locals(items=list, n=Py_ssize_t, p=Py_ssize_t)
    cpdef Py_ssize_t random_position(self) except -1


cdef class Hash:
    cdef public bytes lp
    cdef public _Table d


@cython.locals(n=Py_ssize_t, i=Py_ssize_t, p=Py_ssize_t, end=Py_ssize_t, count=Py_ssize_t, created=Py_ssize_t,
               lp=bytes, d=_Table)
cpdef Py_ssize_t _set_pairs(Hash h, args, Py_ssize_t start, Py_ssize_t max_entries, Py_ssize_t max_value) except -1
