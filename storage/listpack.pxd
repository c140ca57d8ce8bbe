# Declarations for compiling listpack.py with Cython (setup.py); the interpreter never reads this.
#
# Only the typed operations on a bare buffer (the section at the end of listpack.py) are declared:
# in them `s` is a pointer into the listpack, so a byte read is a C load rather than an indexing
# call that boxes an int, and the helpers they share are C functions.  The cpdef functions stay
# callable from Python; storage/quicklist.pxd cimports them, so a quicklist's push, pop, seek and
# range are C calls.  The rest of the module compiles as before, untyped, but for the entry
# encoders below.
cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.ref cimport Py_REFCNT
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_Resize
from libc.string cimport memcmp, memcpy, memmove

from raxdb.protocol.reply cimport bulk_size, decimal, put_bulk, put_int_bulk

cdef bint _COMPILED
cdef list _DECIMALS
cdef list _BYTE
cdef object _random
cdef object _sample

# The entry encoders every store of a value goes through (hash, sorted set, list, stream) are
# cpdef: C calls inside this module and for the modules that cimport them.
# string_to_int reads up to 18 digits into a C integer; encode_int_entry and encode_entry (for a
# string under 64 bytes) write the entry straight into a new bytes object.
@cython.locals(n=Py_ssize_t, c=cython.uint, s="const unsigned char*", i=Py_ssize_t, acc=cython.longlong)
cpdef object string_to_int(b)

cdef list SMALL_INT_ENTRIES

@cython.locals(e=object)
cdef inline bytes _small_int_entry(long long x)

@cython.locals(x=cython.longlong)
cpdef bytes encode_int_entry(v)

@cython.locals(out=bytes)
cdef bytes _int_entry(long long x)

@cython.locals(n=Py_ssize_t, out=bytes)
cpdef bytes backlen_bytes(Py_ssize_t size)

@cython.locals(n=Py_ssize_t)
cpdef bytes encode_str_entry(s)

@cython.locals(n=Py_ssize_t, out=bytes)
cpdef bytes encode_entry(v)

# The in-place entry writers: sized by encoded_size, written through a pointer at an offset, each
# returning the offset after what it wrote (replace_values, append_pair, stream.pxd's appends).
@cython.locals(n=Py_ssize_t)
cpdef Py_ssize_t encoded_size(bytes v) except -1

# A bytearray lengthened for in-place writes: the pointer to write through (stream.pxd cimports it).
cdef unsigned char* grown(bytearray buf, Py_ssize_t size) except NULL

cdef Py_ssize_t int_entry_size(long long x) noexcept

@cython.locals(n=Py_ssize_t)
cdef Py_ssize_t put_entry(unsigned char* d, Py_ssize_t k, bytes v) except -1

@cython.locals(u=cython.ulonglong, size=Py_ssize_t, j=Py_ssize_t)
cdef Py_ssize_t put_int(unsigned char* d, Py_ssize_t k, long long x) noexcept

@cython.locals(head=Py_ssize_t)
cdef Py_ssize_t put_str(unsigned char* d, Py_ssize_t k, bytes v, Py_ssize_t n) noexcept

@cython.locals(n=Py_ssize_t, shift=cython.int, j=Py_ssize_t)
cdef Py_ssize_t _put_backlen(unsigned char* d, Py_ssize_t k, Py_ssize_t size) noexcept

cdef Py_ssize_t _backlen_size(Py_ssize_t size) noexcept

cdef void _put_header_at(unsigned char* d, Py_ssize_t total, Py_ssize_t count) noexcept

@cython.locals(count=Py_ssize_t)
cpdef Py_ssize_t grown_count(bytes buf, Py_ssize_t added) except -1

@cython.locals(b=cython.uint, n=Py_ssize_t)
cdef Py_ssize_t entry_span(const unsigned char* s, Py_ssize_t p) except -1

@cython.locals(b=cython.uint, size=Py_ssize_t, shift=cython.uint)
cdef Py_ssize_t _prev(const unsigned char* s, Py_ssize_t q) noexcept

@cython.locals(b=cython.uint, x=cython.longlong, i=Py_ssize_t)
cdef bytes _value(const unsigned char* s, object buf, Py_ssize_t p)

@cython.locals(n=Py_ssize_t)
cpdef int put_header(bytearray buf, Py_ssize_t count) except -1


@cython.locals(s="const unsigned char*", n=Py_ssize_t, p=Py_ssize_t)
cpdef Py_ssize_t count_of(buf) except -1

@cython.locals(s="const unsigned char*", n=Py_ssize_t, p=Py_ssize_t, _i=Py_ssize_t)
cpdef Py_ssize_t offset_at(buf, Py_ssize_t index) except -1

@cython.locals(s="const unsigned char*", _i=Py_ssize_t)
cpdef Py_ssize_t skip(buf, Py_ssize_t p, Py_ssize_t n) except -1

@cython.locals(s="const unsigned char*")
cpdef bytes value_at(buf, Py_ssize_t p)

@cython.locals(s="const unsigned char*", _i=Py_ssize_t, out=list)
cpdef list values(buf, Py_ssize_t p, Py_ssize_t n)

# The random picks of a small hash or sorted set: offsets noted in a C array, entries read through `s`.
@cython.locals(_i=Py_ssize_t, x=cython.double, out=list)
cpdef list random_indexes(Py_ssize_t n, Py_ssize_t k)

@cython.locals(out=list)
cpdef list distinct_indexes(Py_ssize_t n, Py_ssize_t k)

@cython.locals(s="const unsigned char*", top=Py_ssize_t, i=Py_ssize_t, p=Py_ssize_t, end=Py_ssize_t, g=Py_ssize_t,
               _j=Py_ssize_t, b=cython.uint, scratch=bytes, t="Py_ssize_t*", offsets=list, _g=Py_ssize_t)
cpdef list group_offsets(bytes buf, Py_ssize_t width, list picks)

@cython.locals(s="const unsigned char*", p=Py_ssize_t, out=list)
cpdef list group_values(bytes buf, Py_ssize_t width, list picks, Py_ssize_t take)

# A short string's entry is written in place after one resize of the node (memmove for the head).
@cython.locals(s="const unsigned char*", n=Py_ssize_t, count=Py_ssize_t, end=Py_ssize_t, size=Py_ssize_t,
               d="unsigned char*", unknown=Py_ssize_t)
cpdef push_value(bytearray buf, v, bint head)

@cython.locals(s="const unsigned char*", count=Py_ssize_t, p=Py_ssize_t, q=Py_ssize_t, k=Py_ssize_t, n=Py_ssize_t,
               unknown=Py_ssize_t)
cpdef bytes pop_value(bytearray buf, bint head)

@cython.locals(s="const unsigned char*", d="unsigned char*", t="const unsigned char*", total=Py_ssize_t,
               q=Py_ssize_t, b=cython.uint, ln=Py_ssize_t, k=Py_ssize_t,
               x=cython.uint, start=Py_ssize_t, _e=Py_ssize_t, r=Py_ssize_t, out=bytearray,
               rare=list, v=bytes)
cpdef bytes bulks(buf, Py_ssize_t p, Py_ssize_t n)

@cython.locals(s="const unsigned char*", p=Py_ssize_t, i=Py_ssize_t, start=Py_ssize_t, count=Py_ssize_t,
               idx=Py_ssize_t, kept=list)
cpdef delete_indexes(bytearray buf, list indexes)

@cython.locals(s="const unsigned char*", q=Py_ssize_t, n=Py_ssize_t, total=Py_ssize_t)
cpdef delete_at(bytearray buf, Py_ssize_t p, Py_ssize_t count=*)

@cython.locals(s="const unsigned char*", n=Py_ssize_t, end=Py_ssize_t, p=Py_ssize_t, count=Py_ssize_t,
               b=cython.uint, size=Py_ssize_t, width=Py_ssize_t, q=Py_ssize_t, j=Py_ssize_t,
               want=cython.uint, header=Py_ssize_t)
cpdef Py_ssize_t checked_count(buf) except -1

@cython.locals(s="const unsigned char*", lv=Py_ssize_t, out=list, i=Py_ssize_t, b=cython.uint, ln=Py_ssize_t,
               start=Py_ssize_t, x=cython.longlong)
cpdef list equal_indexes(buf, Py_ssize_t p, Py_ssize_t n, bytes v, long long iv, bint is_int)

@cython.locals(size=Py_ssize_t, buf=bytearray)
cpdef bytearray from_encoded(bytes chunk, Py_ssize_t n)


# The functions over a listpack held as immutable bytes (a small hash's): `buf` is typed bytes.
@cython.locals(n=Py_ssize_t)
cdef bint _plain(bytes v) except -1

@cython.locals(s='const unsigned char *')
cpdef Py_ssize_t entry_end(bytes buf, Py_ssize_t p) except -1

@cython.locals(s='const unsigned char *', n=Py_ssize_t, p=Py_ssize_t, end=Py_ssize_t, last=Py_ssize_t,
               head=cython.uchar, tail=cython.uchar)
cpdef Py_ssize_t find_key(bytes buf, bytes key) except -2

@cython.locals(s='const unsigned char *', p=Py_ssize_t)
cpdef object pair_value(bytes buf, bytes key)

# The check of a loaded small hash's listpack (rdb.py): entries walked through a pointer.
@cython.locals(s='const unsigned char *', n=Py_ssize_t, end=Py_ssize_t, p=Py_ssize_t, count=Py_ssize_t,
               b=cython.uint, size=Py_ssize_t, x=Py_ssize_t, width=Py_ssize_t, q=Py_ssize_t, j=Py_ssize_t,
               want=cython.uint, f=Py_ssize_t, k=Py_ssize_t, fsize=Py_ssize_t)
cpdef Py_ssize_t canonical_pairs(bytes buf) except -2

@cython.locals(c=cython.uint, i=Py_ssize_t)
cdef bint _int_text(const unsigned char* s, Py_ssize_t p, Py_ssize_t n) except -1

@cython.locals(top=cython.uint, neg=bint, x=cython.int, keep=Py_ssize_t, fill=cython.uint, j=Py_ssize_t)
cdef bint _fits_below(const unsigned char* s, Py_ssize_t p, Py_ssize_t width) noexcept

cdef bint _same_bytes(const unsigned char* s, bytes buf, Py_ssize_t p, Py_ssize_t q, Py_ssize_t n) noexcept

@cython.locals(s='const unsigned char *', p=Py_ssize_t, q=Py_ssize_t, end=Py_ssize_t, b=cython.uchar)
cpdef list elements(bytes buf)

# replace_value writes in place into a listpack its caller alone holds (Py_REFCNT against the
# references it owns), and then drops the bytes object's cached hash (`_forget_hash`).
@cython.locals(s='const unsigned char *', q=Py_ssize_t, n=Py_ssize_t, t=Py_ssize_t, m=Py_ssize_t)
cpdef bytes replace_value(bytes buf, Py_ssize_t p, bytes value, Py_ssize_t refs=*)

# (ob_shash is declared deprecated from Python 3.11 on, for extensions that read it as the hash;
# it is still the cache bytes.__hash__ fills and reads.)
cdef extern from *:
    """
    static inline void raxdb_forget_hash(PyObject *b) {
    #pragma GCC diagnostic push
    #pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        ((PyBytesObject *)b)->ob_shash = -1;
    #pragma GCC diagnostic pop
    }
    """
    void _forget_hash "raxdb_forget_hash"(bytes b) noexcept

@cython.locals(s='const unsigned char *', count=Py_ssize_t, end=Py_ssize_t, n=Py_ssize_t, m=Py_ssize_t,
               t=Py_ssize_t, out=bytes, d="unsigned char*")
cpdef bytes append_pair(bytes buf, bytes key, bytes value)

@cython.locals(s='const unsigned char *', prev=Py_ssize_t, count=Py_ssize_t, total=Py_ssize_t,
               k=Py_ssize_t, p=Py_ssize_t, offs=list, out=bytes, d="unsigned char*")
cpdef bytes replace_values(bytes buf, dict changes, list appended)

@cython.locals(n=Py_ssize_t)
cdef int _add_entry(list pieces, bytes v) except -1

@cython.locals(count=Py_ssize_t, n=Py_ssize_t, out=bytes)
cpdef bytes spliced(bytes buf, Py_ssize_t p, Py_ssize_t q, bytes chunk, Py_ssize_t delta)

@cython.locals(out=bytes)
cpdef bytes splice(bytes buf, Py_ssize_t p, Py_ssize_t q, bytes chunk, Py_ssize_t delta)

# A new listpack with a gap for the caller to write entries into (append_pair, spliced, zset's
# zzl_insert): compiled only.
@cython.locals(n=Py_ssize_t, t=Py_ssize_t, h=Py_ssize_t, out=bytes, d="unsigned char*", s="const unsigned char*")
cdef bytes with_gap(bytes buf, Py_ssize_t p, Py_ssize_t q, Py_ssize_t size, Py_ssize_t count)
