# Declarations for compiling request.py with Cython (setup.py); the interpreter never reads this.
#
# string2ll is cpdef: the argument parsers (server/table/args.pxd) and the hot handlers that
# cimport it call it in C; `n` and the first byte are C integers.
cimport cython


@cython.locals(n=Py_ssize_t, c=cython.int)
cpdef object string2ll(b)

# _value_buffer: a big bulk's bytes object, made unfilled and written in place through a view;
# _value: its length set in place (the "\r\n" read with it cut off)
from cpython.buffer cimport PyBUF_WRITE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.memoryview cimport PyMemoryView_FromMemory


cdef extern from "Python.h":
    void Py_SET_SIZE(object o, Py_ssize_t size)
