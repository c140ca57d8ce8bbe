# Declarations for compiling numparse.py with Cython (setup.py); the interpreter never reads this.
#
# digits_value, the common number argument's parse, reads the bytes as C chars into a C integer;
# cpdef, so a compiled command module that cimports it calls it in C.
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING
from cpython.ref cimport PyObject


cdef extern from "Python.h":
    # float()'s parser (locale-independent, correctly rounded), called on a plain decimal's bytes
    double PyOS_string_to_double(const char* s, char** endptr, PyObject* overflow_exception) except? -1.0


@cython.locals(n=Py_ssize_t, i=Py_ssize_t, c=cython.uchar, v=cython.longlong, s="const unsigned char *")
cpdef long long digits_value(bytes arg) except -2

@cython.locals(v=cython.longlong, s="const unsigned char *")
cpdef long long canonical_digits_value(bytes arg) except -2

# string2d's common case (GEOADD's coordinates, ZADD's and INCRBYFLOAT's decimals): the text
# checked by a C walk over the bytes and read by CPython's strtod, without float()'s copy.
@cython.locals(b=bytes, n=Py_ssize_t, i=Py_ssize_t, c=cython.uchar, digits=Py_ssize_t, dots=cython.int)
cpdef bint plain_decimal(arg) except -1
