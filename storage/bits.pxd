# Declarations for compiling bits.py with Cython (setup.py); the interpreter never reads this.
#
# BITFIELD's operations run on C integers: a field is read and written as a uint64 through a C
# pointer to the string's bytes, signed fields as int64, and the overflow checks are C's 64-bit
# arithmetic (its wrap-around is what bits.py's _u64 / _s64 spell out for the interpreter).  The
# operations are int64 words in a bytearray, read and written through a C pointer, and the reply
# is written from them into one bytes object: no Python object per operation.  The words of a
# request of up to 16 operations go in one buffer made at import (`_shared`), while no one else
# holds it, so a request allocates none.
cimport cython
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_FromStringAndSize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.object cimport PyObject
from cpython.ref cimport _Py_REFCNT
from libc.string cimport memset
from raxdb.protocol.reply cimport digits, int_size, put_head, put_int

cdef unsigned long long _U64
cdef int _GET, _INCRBY, _WRAP, _FAIL, _FAILED
cdef Py_ssize_t _OP_WORDS, _SHARED_OPS
cdef bytearray _shared  # field_ops's (bits.py)

cdef unsigned long long _u64(long long x) noexcept

cdef long long _s64(unsigned long long x) noexcept

@cython.locals(mask=cython.ulonglong)
cdef long long _signed(unsigned long long x, int bits) noexcept

@cython.locals(i=cython.longlong, have=cython.int, x=cython.ulonglong, byte=cython.ulonglong, need=cython.int)
cdef unsigned long long _read(unsigned char *p, long long length, long long offset, int bits) noexcept

@cython.locals(i=cython.longlong, take=cython.int, shift=cython.int, rest=cython.int, mask=cython.uint)
cdef void _write(unsigned char *p, long long offset, int bits, unsigned long long value) noexcept

@cython.locals(hi=cython.longlong, lo=cython.longlong, max_incr=cython.longlong, min_incr=cython.longlong,
               limit=cython.longlong)
cdef (int, long long) _signed_overflow(long long value, long long incr, int bits, int mode) noexcept

@cython.locals(hi=cython.ulonglong, limit=cython.ulonglong)
cdef (int, unsigned long long) _unsigned_overflow(unsigned long long value, long long incr, int bits,
                                                  int mode) noexcept

@cython.locals(buf=bytearray)
cpdef bytearray zeroed(Py_ssize_t n)

cpdef bytearray field_ops(Py_ssize_t count)

cdef long long* _words(bytearray ops) noexcept

@cython.locals(q="long long*", w=Py_ssize_t)
cpdef put_field(bytearray ops, Py_ssize_t i, int op, int mode, int width, long long offset, long long value)

@cython.locals(length=cython.longlong, p=cython.p_uchar, q="long long*", i=Py_ssize_t, w=Py_ssize_t,
               changes=Py_ssize_t, op=cython.int, width=cython.int, offset=cython.longlong, value=cython.longlong,
               mode=cython.int, bits=cython.int, old=cython.ulonglong, new=cython.ulonglong, s_old=cython.longlong,
               s_new=cython.longlong, result=cython.longlong, overflowed=cython.int, changed=bint)
cpdef Py_ssize_t apply_fields(buf, bytearray ops, Py_ssize_t count, bint grown) except -1

@cython.locals(q="long long*", i=Py_ssize_t, w=Py_ssize_t, j=Py_ssize_t, nlen=Py_ssize_t, size=Py_ssize_t,
               k=Py_ssize_t, d="unsigned char*", out=bytes)
cpdef bytes field_reply(bytearray ops, Py_ssize_t count, bytes null)
