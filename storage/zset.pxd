# Declarations for compiling zset.py with Cython (setup.py); the interpreter never reads this.
#
# The listpack walks (zzl_*) run once per entry of every lookup, insert and range of a listpack
# sorted set, so their offsets, entry bytes and scores are C integers and doubles, and the
# listpack is read through a `const unsigned char *` into the bytes object (`s = lp`): an entry's
# first byte is a load, not an indexing call.  The readers of one entry are C functions; the
# zzl_* functions are cpdef, callable from C inside the module and from Python as before.  ZSet
# is an extension type so that its two slots are struct fields; both stay public.  Members are
# typed `bytes` (every command argument is), so that their bytes are read as C chars.
cimport cython
from cpython cimport array
from raxdb.storage.listpack cimport (
    int_entry_size, put_int, put_str, encoded_size, grown_count, put_entry, spliced, with_gap, group_offsets,
    random_indexes, distinct_indexes)
from raxdb.storage.alloc cimport dict_table_bytes, sds_alloc_first, size_class
from raxdb.storage.rax cimport untrack


# The listpack constants, as C constants of the walks (no module-dict lookup per entry).
cdef Py_ssize_t _HDR, _UNKNOWN, _SAFETY
cdef unsigned int _EOF


# The skiplist encoding's order and its member -> score dict are extension types too, their slots
# struct fields, so a ZADD on a big sorted set (a dict lookup, then a drop and a put in the order)
# makes C calls of cpdef methods over typed fields; the score bisections loop over the arrays'
# C doubles (_bisect_scores), where bisect's probes made a float object each.
@cython.locals(d="double*", mid=Py_ssize_t)
cdef Py_ssize_t _bisect_scores(array.array a, double s, Py_ssize_t lo, Py_ssize_t hi, bint right) noexcept

cdef double _score_item(array.array a, Py_ssize_t i) noexcept

cdef void _set_score(array.array a, Py_ssize_t i, double s) noexcept

# A sublist's insert and delete, one memmove of its tail each (the helpers below for the members'
# list: PyList_Append grows it and takes the reference, which the memmove carries to slot j;
# PyList_SetSlice's delete moves the tail with memmove too).
from cpython.array cimport resize_smart
from libc.string cimport memmove

cdef extern from *:
    """
    static int raxdb_list_insert(PyObject *list, Py_ssize_t j, PyObject *item) {
        Py_ssize_t n = PyList_GET_SIZE(list);
        PyObject **items;
        if (PyList_Append(list, item) < 0) return -1;
        items = ((PyListObject *)list)->ob_item;
        memmove(items + j + 1, items + j, (size_t)(n - j) * sizeof(PyObject *));
        items[j] = item;
        return 0;
    }
    static int raxdb_list_delete(PyObject *list, Py_ssize_t j) {
        return PyList_SetSlice(list, j, j + 1, NULL);
    }
    """
    int _list_insert "raxdb_list_insert"(list members, Py_ssize_t j, object item) except -1
    int _list_delete "raxdb_list_delete"(list members, Py_ssize_t j) except -1

@cython.locals(n=Py_ssize_t, d="double*")
cdef int _insert_score(array.array a, Py_ssize_t j, double s) except -1

@cython.locals(n=Py_ssize_t, d="double*")
cdef int _delete_score(array.array a, Py_ssize_t j) except -1

cdef int _insert_member(list members, Py_ssize_t j, bytes m) except -1

# A new sublist of members, out of the cyclic collector (bytes only: no cycle through it)
cdef list _untracked(list members)

cdef int _delete_member(list members, Py_ssize_t j) except -1


cdef class _SkipOrder:
    cdef public list _keys, _members, _maxes
    cdef public array.array _maxkeys
    cdef public Py_ssize_t _len
    cdef public object _offsets

    @cython.locals(maxkeys=array.array, keys=array.array, n=Py_ssize_t, k=Py_ssize_t, j=Py_ssize_t)
    cpdef tuple _find(self, double s, m)

    @cython.locals(maxkeys=array.array, keys=array.array, n=Py_ssize_t, k=Py_ssize_t, j=Py_ssize_t)
    cpdef put(self, double s, m)

    cpdef drop(self, double s, m)

    @cython.locals(keys=array.array, k=Py_ssize_t, j=Py_ssize_t, last=Py_ssize_t, ok=bint)
    cpdef update(self, double cur, m, double s)

    @cython.locals(maxkeys=array.array, keys=array.array, members=list, k=Py_ssize_t, j=Py_ssize_t)
    cpdef tuple _where(self, double s, m)

    @cython.locals(keys=array.array)
    cpdef _delete_at(self, Py_ssize_t k, Py_ssize_t j)

    @cython.locals(keys=array.array)
    cpdef _add_at(self, double s, m, Py_ssize_t k, Py_ssize_t j)

    # MEMORY USAGE's sample, taken by the recount after every sorted set write under a memory
    # limit (zset_usage): a C call
    @cython.locals(members=list)
    cpdef list first_members(self, Py_ssize_t k)


cdef class _Skiplist:
    cdef public dict scores
    cdef public _SkipOrder order
    cdef public object scan

    cpdef insert(self, member, double score)

    @cython.locals(order=_SkipOrder)
    cpdef move(self, member, double cur, double score)


cdef class ZSet:  # @cython.no_gc is on the class in the .py: Cython reads it only there
    cdef public bytes lp
    cdef public object sk


# ZSet.__len__'s body, with its count a C integer.
@cython.locals(lp=bytes, n=Py_ssize_t)
cpdef Py_ssize_t zset_length(ZSet z) except -1


# ZSet.add's body, cpdef: the compiled handlers (server/commands/t_zset.pxd) call it in C.
@cython.locals(p=Py_ssize_t, n=Py_ssize_t, sk=_Skiplist, found=bint, cur=cython.double)
cpdef (long, double) zset_add(ZSet z, bytes member, double score, long flags, Py_ssize_t max_entries,
                              Py_ssize_t max_value)


cdef Py_ssize_t _backlen_size(Py_ssize_t n) noexcept

@cython.locals(b=cython.uint, n=Py_ssize_t)
cdef Py_ssize_t _next(const unsigned char *s, Py_ssize_t p) noexcept

cdef bint _is_str(unsigned int b) noexcept

@cython.locals(b=cython.uint)
cdef Py_ssize_t _str_start(const unsigned char *s, Py_ssize_t p) noexcept

@cython.locals(b=cython.uint)
cdef Py_ssize_t _str_len(const unsigned char *s, Py_ssize_t p) noexcept

@cython.locals(b=cython.uint, v=cython.longlong, hi=cython.longlong, lo=cython.longlong)
cdef long long _int_at(const unsigned char *s, Py_ssize_t p) noexcept

@cython.locals(q=Py_ssize_t)
cdef double _score_at(const unsigned char *s, Py_ssize_t p) except? -1.0

@cython.locals(q=Py_ssize_t)
cdef object _reply_score_at(const unsigned char *s, Py_ssize_t p)

@cython.locals(q=Py_ssize_t)
cdef bytes _entry_bytes(const unsigned char *s, Py_ssize_t p)

@cython.locals(p=Py_ssize_t, b=cython.uint)
cdef Py_ssize_t _seek(const unsigned char *s, Py_ssize_t rank) noexcept

@cython.locals(i=Py_ssize_t)
cdef bint _same(const unsigned char *s, Py_ssize_t q, bytes member, Py_ssize_t n) noexcept

@cython.locals(s="const unsigned char *", n=Py_ssize_t, p=Py_ssize_t)
cpdef Py_ssize_t zzl_length(bytes lp) except -1

@cython.locals(s="const unsigned char *", n=Py_ssize_t, last=cython.uint, iv=cython.longlong, isint=bint,
               rank=Py_ssize_t, p=Py_ssize_t, b=cython.uint, q=Py_ssize_t, ln=Py_ssize_t)
cpdef Py_ssize_t zzl_find(bytes lp, bytes member, bint want_rank=*) except -2

@cython.locals(s="const unsigned char *")
cpdef double zzl_score(bytes lp, Py_ssize_t p) except? -1.0

@cython.locals(s="const unsigned char *")
cpdef object zzl_score_text(bytes lp, Py_ssize_t p)

@cython.locals(s="const unsigned char *", p=Py_ssize_t, q=Py_ssize_t, t=bytes)
cpdef bint zzl_texts_canonical(bytes lp) except -1

@cython.locals(n=Py_ssize_t, q=Py_ssize_t, ln=Py_ssize_t, i=Py_ssize_t, v=cython.longlong, u=cython.ulonglong,
               pw=cython.ulonglong, c=cython.uint)
cdef bint _entry_after(const unsigned char *s, Py_ssize_t p, bytes member) except -1

@cython.locals(p=Py_ssize_t, q=Py_ssize_t, sc=cython.double, b=cython.uint)
cdef Py_ssize_t _insert_at(const unsigned char *s, bytes member, double score, Py_ssize_t skip) except -1

cdef bytes _score_entry(double score)

cdef bint _integral(double score) noexcept

cpdef object listpack_score(double d)

@cython.locals(p=Py_ssize_t, size=Py_ssize_t, x=cython.longlong, out=bytes, d="unsigned char*", text=bytes)
cpdef bytes zzl_insert(bytes lp, bytes member, double score)

@cython.locals(s="const unsigned char *", n=Py_ssize_t, q=Py_ssize_t, end=Py_ssize_t, at=Py_ssize_t, b=cython.uint)
cpdef bytes zzl_update(bytes lp, Py_ssize_t p, bytes member, double score)

@cython.locals(s="const unsigned char *")
cpdef bytes zzl_delete(bytes lp, Py_ssize_t p)

@cython.locals(s="const unsigned char *", a=Py_ssize_t, b=Py_ssize_t, n=Py_ssize_t)
cpdef bytes zzl_delete_range(bytes lp, Py_ssize_t start, Py_ssize_t stop)

@cython.locals(s="const unsigned char *", p=Py_ssize_t, q=Py_ssize_t, n=Py_ssize_t)
cpdef list zzl_pairs(bytes lp, Py_ssize_t start=*, Py_ssize_t stop=*, bint texts=*)

@cython.locals(s="const unsigned char *", p=Py_ssize_t, q=Py_ssize_t, out=list)
cpdef list zzl_picked(bytes lp, list ranks, bint texts=*)

@cython.locals(s="const unsigned char *", rank=Py_ssize_t, first=Py_ssize_t, p=Py_ssize_t, q=Py_ssize_t,
               sc=cython.double)
cpdef tuple zzl_score_bounds(bytes lp, double lo, bint loex, double hi, bint hiex)

@cython.locals(s="const unsigned char *", p=Py_ssize_t)
cpdef list zzl_items(bytes lp)

# ZSet.mem_usage's body, a module function as zset_length: evict.py's recount after every sorted
# set write reaches it through usage.pxd as a C call.
@cython.locals(lp=bytes, sk=_Skiplist, n=Py_ssize_t, k=Py_ssize_t, size=Py_ssize_t)
cpdef Py_ssize_t zset_usage(ZSet z, Py_ssize_t samples=*) except -1
