# Declarations for compiling hashtype.py with Cython (setup.py); the interpreter never reads this.
#
# Hash becomes an extension type whose two slots are C struct fields: the same 48-byte object as
# the interpreted class (header, two references, the cycle collector's header).  Its methods stay
# `def` methods, since a cpdef method would add a vtable pointer to every hash.  The listpack
# functions they call on every HSET / HGET are cimported, so those are C calls instead of calls
# through the listpack module's attributes.
#
# HashTable (one per hashtable-encoded hash, so its vtable pointer does not count) is an extension
# type with cpdef lookups: Hash types `d` as HashTable, so HGET / HSET / HDEL on a hashtable are C
# calls, its arrays are cpython.array objects read through their C data pointers, and a field is
# compared with memcmp.
cimport cython
from cpython cimport array
from cpython.array cimport clone, resize
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.string cimport memcmp, memcpy, memset
from raxdb.storage.alloc cimport dict_table_bytes, sds_alloc, size_class
from raxdb.storage.listpack cimport (append_pair, bulks, count_of, elements, entry_end, find_key, pair_value,
                                    replace_value, replace_values, splice, distinct_indexes, group_values,
                                    offset_at, random_indexes, value_at)
from raxdb.storage.rax cimport untrack

cdef extern from "Python.h":
    Py_hash_t _Py_HashBytes(const void *src, Py_ssize_t len)

cdef Py_ssize_t _MIN_INDEX, _STEPPED_GROWTH, _GROWTH_STEP, _FILL_STEP
cdef array.array _NO_INDEX
cdef Py_ssize_t _U32
cdef unsigned long long _EMPTY
cdef Py_ssize_t _MAX_FIELD

cdef unsigned long long _u64(array.array a, Py_ssize_t i) noexcept
cdef void _set_u64(array.array a, Py_ssize_t i, unsigned long long v) noexcept

@cython.locals(n=Py_ssize_t, k=Py_ssize_t, out=bytes, dst="unsigned char*")
cdef bytes _item(object field, object value)

@cython.locals(s="const unsigned char*")
cdef Py_ssize_t _field_len(bytes item) noexcept

@cython.locals(k=Py_ssize_t)
cdef bint _is_field(bytes item, object field, Py_ssize_t n) except -1

@cython.locals(n=Py_ssize_t, k=Py_ssize_t)
cdef unsigned long long _field_hash(bytes item) noexcept

@cython.locals(a=array.array)
cdef array.array _unfilled_index(Py_ssize_t size)
cdef void _fill(array.array index, Py_ssize_t start, Py_ssize_t n) noexcept

@cython.locals(i=Py_ssize_t)
cdef void _place(array.array index, Py_ssize_t mask, unsigned long long e) noexcept

@cython.locals(j=Py_ssize_t, e=cython.ulonglong, k=Py_ssize_t)
cdef void _unlink(array.array index, Py_ssize_t mask, Py_ssize_t i) noexcept

@cython.locals(n=Py_ssize_t, k=Py_ssize_t)
cdef bytes _field_of(bytes item)

@cython.locals(n=Py_ssize_t)
cdef bytes _value_of(bytes item)


cdef list _untracked(list items)


cdef class HashTable:
    cdef public list items
    cdef public array.array free
    cdef public array.array index
    cdef public Py_ssize_t mask
    cdef public Py_ssize_t count
    cdef Py_ssize_t _grow_at  # the count at which a new field makes room first (_drop_growth)
    # a growth under way (HashTable._grow_step): the next index, its mask (0: none), the slots of
    # it emptied so far and the positions moved into it
    cdef readonly array.array _next
    cdef readonly Py_ssize_t _next_mask, _next_filled, _next_done

    @cython.locals(index=array.array, items=list, mask=Py_ssize_t, n=Py_ssize_t, i=Py_ssize_t,
                   e=cython.ulonglong)
    cdef Py_ssize_t _slot(self, object field, unsigned long long h) except -1

    @cython.locals(e=cython.ulonglong)
    cpdef Py_ssize_t find(self, object field) except -2

    @cython.locals(e=cython.ulonglong)
    cpdef object get(self, object field)

    @cython.locals(h=cython.ulonglong, e=cython.ulonglong, i=Py_ssize_t, p=Py_ssize_t, mask=Py_ssize_t,
                   n=Py_ssize_t, items=list, free=array.array)
    cpdef Py_ssize_t set(self, object field, object value) except -1

    @cython.locals(i=Py_ssize_t)
    cpdef bint delete(self, object field) except -1

    @cython.locals(old=array.array, index=array.array, mask=Py_ssize_t, j=Py_ssize_t, e=cython.ulonglong)
    cdef _rebuild_index(self, Py_ssize_t size)

    @cython.locals(size=Py_ssize_t)
    cdef void _drop_growth(self) noexcept

    @cython.locals(size=Py_ssize_t)
    cdef bint _make_room(self, Py_ssize_t n) except -1

    @cython.locals(last=bint, index=array.array, mask=Py_ssize_t, size=Py_ssize_t, f=Py_ssize_t,
                   step=Py_ssize_t, items=list, end=Py_ssize_t, p=Py_ssize_t, stop=Py_ssize_t, item=object)
    cdef bint _grow_step(self, Py_ssize_t n) except -1

    @cython.locals(index=array.array, nxt=array.array, items=list, mask=Py_ssize_t, nmask=Py_ssize_t,
                   p=Py_ssize_t, j=Py_ssize_t, e=cython.ulonglong, n=Py_ssize_t, size=Py_ssize_t)
    cdef _remove(self, Py_ssize_t i)

    @cython.locals(items=list, out=list, n=Py_ssize_t, k=Py_ssize_t, p=Py_ssize_t, item=object)
    cpdef list flat(self, Py_ssize_t start=*, Py_ssize_t stop=*)

    @cython.locals(items=list, out=list, p=Py_ssize_t)
    cpdef list fields(self, Py_ssize_t start=*, Py_ssize_t stop=*)

    cpdef list values(self)

    cpdef bytes field_at(self, Py_ssize_t p)

    @cython.locals(n=Py_ssize_t, end=Py_ssize_t)
    cpdef tuple scan(self, Py_ssize_t cursor, Py_ssize_t count, bint values=*)

    @cython.locals(items=list, n=Py_ssize_t, p=Py_ssize_t)
    cpdef Py_ssize_t random_position(self) except -1

    @cython.locals(item=bytes, n=Py_ssize_t, total=Py_ssize_t)
    cpdef Py_ssize_t sds_first(self, Py_ssize_t k) except -1


cdef class Hash:  # @cython.no_gc is on the class in the .py: Cython reads it only there
    cdef public bytes lp
    cdef public HashTable d


@cython.locals(h=Hash)
cpdef Hash new_hash()

@cython.locals(n=Py_ssize_t, i=Py_ssize_t, p=Py_ssize_t, end=Py_ssize_t, count=Py_ssize_t, created=Py_ssize_t,
               lp=bytes, d=HashTable)
cpdef Py_ssize_t hash_set_pairs(Hash h, args, Py_ssize_t start, Py_ssize_t max_entries,
                                 Py_ssize_t max_value) except -1

# Hash's random picks (HRANDFIELD), a module function for C locals, as hash_set_pairs.
@cython.locals(n=Py_ssize_t, lp=bytes, d=HashTable, items=list, out=list, item=bytes, p=Py_ssize_t,
               positions=list, picks=list, chosen=dict)
cpdef list hash_picks(Hash h, Py_ssize_t count, bint distinct, bint withvalues)

# Hash.get's body, cpdef like hash_set_pairs: the compiled hash commands (server/commands/
# t_hash.pxd) call both in C.
cpdef hash_get(Hash h, field)

# Hash.mem_usage's body, a module function as hash_get: evict.py's recount after every hash write
# reaches it through usage.pxd as a C call.
@cython.locals(lp=bytes, d=HashTable, n=Py_ssize_t, k=Py_ssize_t, size=Py_ssize_t, total=Py_ssize_t)
cpdef Py_ssize_t hash_usage(Hash h, Py_ssize_t samples=*) except -1
