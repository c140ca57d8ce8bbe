# Declarations for compiling lzf.py with Cython (setup.py); the interpreter never reads this.
#
# Both codecs are loops of integer operations over bytes: typed as C integers, and the input as
# `bytes`, every step of them is C arithmetic and a byte load, where interpreted each is a Python
# int object.  The hash table stays a list of ints and the output a bytearray.
# Decompression, compiled, is `_decompress_c`: pointers into the input and into the result's bytes.
cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.string cimport memcpy, memset

cdef Py_ssize_t _MAX_EXPANSION


@cython.locals(buf=bytes, n=cython.Py_ssize_t, base=cython.longlong, lit_start=cython.Py_ssize_t,
               flush_at=cython.Py_ssize_t, lit_stop=cython.Py_ssize_t, ip=cython.Py_ssize_t,
               last=cython.Py_ssize_t, h=cython.longlong, slot=cython.Py_ssize_t, ref=cython.longlong,
               limit=cython.Py_ssize_t, w=cython.Py_ssize_t, count=cython.Py_ssize_t, off=cython.Py_ssize_t,
               p=cython.Py_ssize_t, htab=list, out=bytearray, repeats=cython.Py_ssize_t, end=cython.Py_ssize_t,
               a=bytes, b=bytes)
cpdef compress(data, Py_ssize_t out_limit)


@cython.locals(buf=bytes)
cpdef decompress(data, Py_ssize_t expected_len)

@cython.locals(out=bytearray, olen=cython.Py_ssize_t, ip=cython.Py_ssize_t, ctrl=cython.Py_ssize_t,
               length=cython.Py_ssize_t, ref=cython.Py_ssize_t, period=bytearray)
cpdef bytes decompress_at(bytes buf, Py_ssize_t start, Py_ssize_t n, Py_ssize_t expected_len)

@cython.locals(src=cython.p_uchar, dst=cython.p_uchar, out=bytes, olen=cython.Py_ssize_t, ip=cython.Py_ssize_t,
               ctrl=cython.Py_ssize_t, length=cython.Py_ssize_t, ref=cython.Py_ssize_t, k=cython.Py_ssize_t,
               step=cython.Py_ssize_t)
cdef bytes _decompress_c(bytes buf, Py_ssize_t start, Py_ssize_t n, Py_ssize_t expected_len)
# (The lengths are C integers: compiled, a length past int64 raises OverflowError, which the RDB
# reader reports as the invalid LZF string it is.)
