# Declarations for compiling bits.py with Cython (setup.py); the interpreter never reads this.
#
# BITFIELD's operations run on C integers: a field is read and written as a uint64 through a C
# pointer to the string's bytes, signed fields as int64, and the overflow checks are C's 64-bit
# arithmetic (its wrap-around is what bits.py's _u64 / _s64 spell out for the interpreter).  Only
# each operation's reply value becomes a Python object.
cimport cython
from cpython.bytearray cimport PyByteArray_AS_STRING
from cpython.bytes cimport PyBytes_AS_STRING

cdef unsigned long long _U64
cdef int _GET, _INCRBY, _WRAP, _FAIL

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

@cython.locals(length=cython.longlong, p=cython.p_uchar, changes=Py_ssize_t, op=cython.int, width=cython.int,
               offset=cython.longlong, value=cython.longlong, mode=cython.int, bits=cython.int,
               old=cython.ulonglong, new=cython.ulonglong, s_old=cython.longlong, s_new=cython.longlong,
               result=cython.longlong, overflowed=cython.int, changed=bint)
cpdef Py_ssize_t apply_fields(buf, list ops, bint grown, list out) except -1
