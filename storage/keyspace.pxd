# Declarations for compiling keyspace.py with Cython (setup.py); the interpreter never reads this.
#
# Database becomes an extension type: its arrays are cpython.array objects whose items the helpers
# below read and write through the array's C data pointer (the `cython.compiled` branch of each),
# and the lookups every command makes (get, peek, set, find, ...) are cpdef methods, C calls for a
# compiled caller that knows the type.  The attributes stay public, for the interpreted callers
# and the tests.
cimport cython
from cpython cimport array
from cpython.array cimport clone, resize, resize_smart
from raxdb.storage.slots cimport SlotIndex

cdef Py_ssize_t _MIN_INDEX
cdef Py_ssize_t _STEPPED_GROWTH
cdef Py_ssize_t _GROWTH_STEP
cdef Py_ssize_t _ZERO_STEP
cdef array.array _INDEX_TEMPLATE
cdef array.array _TAGS_TEMPLATE
cdef array.array _NO_ARRAY
@cython.locals(a=array.array)
cdef array.array _unset(array.array template, Py_ssize_t size)
@cython.locals(a=array.array)
cdef array.array _empty_index(Py_ssize_t size)
@cython.locals(a=array.array)
cdef array.array _empty_tags(Py_ssize_t size)
cdef void _zero(array.array a, Py_ssize_t start, Py_ssize_t n) noexcept
cdef Py_ssize_t _META
cdef Py_ssize_t _U32

cdef unsigned int _u32(array.array a, Py_ssize_t i) noexcept
cdef void _set_u32(array.array a, Py_ssize_t i, unsigned int v) noexcept
cdef int _i32(array.array a, Py_ssize_t i) noexcept
cdef void _set_i32(array.array a, Py_ssize_t i, int v) noexcept
cdef unsigned char _u8(array.array a, Py_ssize_t i) noexcept
cdef void _set_u8(array.array a, Py_ssize_t i, unsigned char v) noexcept
cdef unsigned char _tag(unsigned int h) noexcept
cdef bint _overfull(Py_ssize_t n, Py_ssize_t size) noexcept
cdef bint _half_full(Py_ssize_t n, Py_ssize_t size) noexcept
@cython.locals(i=Py_ssize_t)
cdef void _place(array.array index, array.array tags, Py_ssize_t mask, unsigned int h, Py_ssize_t p) noexcept
@cython.locals(j=Py_ssize_t, q=Py_ssize_t, k=Py_ssize_t)
cdef void _unlink(array.array index, array.array tags, array.array meta, Py_ssize_t mask, Py_ssize_t i) noexcept

# The stored keys read without a reference taken (see _stored_is): borrowed pointers, and bytes
# compared as bytes_richcompare does (length, then memcmp); anything else by ==.
from libc.string cimport memcmp, memset

cdef extern from "Python.h":
    void* _list_item "PyList_GET_ITEM"(list keys, Py_ssize_t i)
    Py_ssize_t _size_of "Py_SIZE"(void* o)
    char* _bytes_of "PyBytes_AS_STRING"(void* o)
    void* _type_of "Py_TYPE"(void* o)


cdef inline bint _same_key(void* k, object key) except -1:
    cdef void* q = <void*>key
    cdef Py_ssize_t n
    if k == q:
        return True
    if _type_of(k) == <void*>bytes and _type_of(q) == <void*>bytes:
        n = _size_of(k)
        return n == _size_of(q) and memcmp(_bytes_of(k), _bytes_of(q), n) == 0
    return <object>k == key


cdef bint _stored_is(list keys, Py_ssize_t p, object key) except -1
cdef bint _is_hole(list keys, Py_ssize_t p) except -1
cdef long long _i64(array.array a, Py_ssize_t i) noexcept
cdef void _set_i64(array.array a, Py_ssize_t i, long long v) noexcept
cdef void _grow(array.array a, Py_ssize_t n) except *

cdef unsigned int _stamp(long long ms) noexcept
@cython.locals(d=cython.uint)
cdef long long _idle(array.array meta, Py_ssize_t p, unsigned int stamp) noexcept


cdef class Database:
    cdef public object id
    cdef public list _keys
    cdef public list _values
    cdef public array.array _meta
    cdef public list _free
    cdef public array.array _index
    cdef public array.array _tags
    cdef public Py_ssize_t _mask
    cdef public array.array _next_index
    cdef public array.array _next_tags
    cdef public Py_ssize_t _next_mask
    cdef public Py_ssize_t _next_zeroed
    cdef public Py_ssize_t _next_done
    cdef public Py_ssize_t count
    cdef public array.array _ttl_pos
    cdef public array.array _ttl_when
    cdef public list _ttl_free
    cdef public Py_ssize_t _ttl_cursor
    cdef public Py_ssize_t nexpires
    cdef public Py_ssize_t main_slots, expires_slots
    cdef public dict freq
    cdef public list hfe
    cdef public object expires, watched, blocking, clock, expired_hook, ready_hook, new_hook
    # memory accounting's figure per position (server/memory/evict.py's recount reads it in C)
    cdef public array.array sizes
    cdef public SlotIndex slot_keys  # None standalone: its add and discard are C calls in cluster mode
    cdef public bint lfu, signals, expire_paused, loading, touch
    cdef public long long stat_expired, mem, avg_ttl
    cdef object __weakref__

    @cython.locals(tags=array.array, index=array.array, keys=list, mask=Py_ssize_t, i=Py_ssize_t,
                   t=cython.uchar, tag=cython.uchar)
    cdef Py_ssize_t _slot(self, object key, unsigned int h) except -1

    cdef Py_ssize_t _pos(self, object key, unsigned int h) except -2

    cpdef Py_ssize_t find(self, object key) except -2

    @cython.locals(index=array.array, tags=array.array, mask=Py_ssize_t, meta=array.array, keys=list,
                   p=Py_ssize_t)
    cdef _rebuild_index(self, Py_ssize_t size)

    cpdef _drop_growth(self)
    @cython.locals(index=array.array, tags=array.array, mask=Py_ssize_t, meta=array.array, keys=list,
                   end=Py_ssize_t, p=Py_ssize_t, stop=Py_ssize_t, size=Py_ssize_t, last=bint, z=Py_ssize_t,
                   step=Py_ssize_t)
    cdef bint _grow_step(self, Py_ssize_t n) except -1
    @cython.locals(index=array.array, tags=array.array, mask=Py_ssize_t, i=Py_ssize_t)
    cdef _unlink_next(self, Py_ssize_t p)

    @cython.locals(size=Py_ssize_t)
    cpdef reserve(self, Py_ssize_t n)

    @cython.locals(h=cython.uint)
    cdef Py_ssize_t _insert(self, object key, object value, long long now_ms) except -1
    @cython.locals(p=Py_ssize_t, mask=Py_ssize_t, meta=array.array, index=array.array, tags=array.array,
                   size=Py_ssize_t, sizes=array.array)
    cdef Py_ssize_t _insert_at(self, object key, object value, long long now_ms, unsigned int h,
                               Py_ssize_t i) except -1

    @cython.locals(index=array.array, tags=array.array, meta=array.array, mask=Py_ssize_t, p=Py_ssize_t,
                   size=Py_ssize_t)
    cdef _remove(self, Py_ssize_t i)

    @cython.locals(t=cython.uint)
    cdef long long _deadline(self, Py_ssize_t p) except? -1

    @cython.locals(i=Py_ssize_t, p=Py_ssize_t, t=cython.uint)
    cpdef object get(self, object key, long long now_ms)

    @cython.locals(i=Py_ssize_t, p=Py_ssize_t, t=cython.uint)
    cpdef object peek(self, object key, long long now_ms)

    @cython.locals(p=Py_ssize_t)
    cpdef object stored(self, object key)

    cpdef object value_at(self, Py_ssize_t p)
    cpdef put_at(self, Py_ssize_t p, object value, long long now_ms)

    @cython.locals(now=cython.longlong, p=Py_ssize_t, old=object)
    cpdef set(self, object key, object value, bint keep_ttl=*, long long when_ms=*)

    @cython.locals(now=cython.longlong, stamp=cython.uint, i=Py_ssize_t, p=Py_ssize_t)
    cpdef set_pairs(self, list args, Py_ssize_t start)

    @cython.locals(now=cython.longlong)
    @cython.locals(now=cython.longlong)
    cpdef add(self, object key, object value, long long now_ms=*)
    @cython.locals(h=cython.uint, i=Py_ssize_t, now=cython.longlong)
    cpdef bint add_new(self, object key, object value) except -1

    @cython.locals(i=Py_ssize_t)
    cpdef bint delete(self, object key) except -1
    @cython.locals(p=Py_ssize_t, sizes=array.array)
    cdef _delete_slot(self, object key, Py_ssize_t i)
    # (eviction's delete: evict.pxd's _evict calls it in C)
    @cython.locals(i=Py_ssize_t, p=Py_ssize_t, sizes=array.array, figure=cython.longlong)
    cpdef long long evict_key(self, object key, bint volatile) except -2
    cdef _expire_slot(self, object key, Py_ssize_t i)

    @cython.locals(slots=list, n=Py_ssize_t, p=Py_ssize_t)
    cdef Py_ssize_t _random_position(self) except -1
    @cython.locals(out=list, ttl_pos=array.array, n=Py_ssize_t, t=Py_ssize_t, p=Py_ssize_t)
    cdef list _sample_positions(self, Py_ssize_t count, bint volatile)
    @cython.locals(keys=list, meta=array.array, stamp=cython.uint, p=Py_ssize_t, out=list, idle=cython.longlong)
    cpdef list sample_idle(self, Py_ssize_t count, bint volatile, long long now_ms, long long floor=*)
    @cython.locals(keys=list, freq=dict, minutes=cython.longlong, p=Py_ssize_t, out=list, score=cython.longlong)
    cpdef list sample_freq(self, Py_ssize_t count, bint volatile, long long now_ms, long long floor=*)
    @cython.locals(keys=list, p=Py_ssize_t, out=list, when=cython.longlong)
    cpdef list sample_deadlines(self, Py_ssize_t count, long long before=*)

    cpdef set_expire(self, object key, long long when_ms)
    @cython.locals(t=cython.uint, r=cython.uint, q=cython.int)
    cdef _set_deadline(self, Py_ssize_t p, long long when_ms)

    @cython.locals(t=cython.uint)
    cdef _drop_ttl(self, Py_ssize_t p)

    cpdef count_sizes(self, bint counting)
    # (its caller has found p and keeps `sizes`: evict._count)
    @cython.locals(sizes=array.array, grown=cython.longlong)
    cpdef long long recounted(self, Py_ssize_t p, long long figure) except? -1
    @cython.locals(sizes=array.array, p=Py_ssize_t)
    cpdef long long size_of(self, object key) except? -1

# the LFU counter's decay (lfu_counter, eviction's sample_freq per sampled key): a C call
@cython.locals(counter=cython.longlong, decay_time=cython.longlong, elapsed=cython.longlong, periods=cython.longlong)
cdef long long _lfu_decayed(long long packed, long long minutes) except? -1
