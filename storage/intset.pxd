# Declarations for compiling intset.py with Cython (setup.py); the interpreter never reads this.
#
# The compiled branches of intset.py (`if _FAST:`) read and write the blob's memory as C: typed
# locals, the libc and CPython functions they call, and `_get` as a C function.
cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.limits cimport LLONG_MAX, ULLONG_MAX
from libc.string cimport memcpy

cdef bint _COMPILED, _LITTLE, _FAST

@cython.locals(n=Py_ssize_t, i=Py_ssize_t, p=cython.p_uchar, neg=bint, u=cython.ulonglong, d=cython.uint)
cpdef object canonical_int(object m)

cpdef int width_of(long long v) noexcept

cdef long long _get(char *base, Py_ssize_t w, Py_ssize_t i) noexcept

@cython.locals(w=Py_ssize_t, n=Py_ssize_t, lo=Py_ssize_t, hi=Py_ssize_t, mid=Py_ssize_t, base=cython.p_char,
               head=Py_ssize_t)
cpdef Py_ssize_t _search(bytes blob, long long v) except -1

cpdef bint contains(bytes blob, long long v) except -1
cpdef long long get(bytes blob, Py_ssize_t i) except? -1

@cython.locals(size=Py_ssize_t, new=bytes, dst=cython.p_char, src=cython.p_char)
cpdef bytes _splice(bytes blob, Py_ssize_t at, Py_ssize_t cut, bytes insert, Py_ssize_t count)

@cython.locals(w=Py_ssize_t, r=Py_ssize_t)
cpdef object add(bytes blob, long long v)
@cython.locals(w=Py_ssize_t, r=Py_ssize_t)
cpdef object remove(bytes blob, long long v)
