# Declarations for compiling numparse.py with Cython (setup.py); the interpreter never reads this.
#
# digits_value, the common number argument's parse, reads the bytes as C chars into a C integer;
# cpdef, so a compiled command module that cimports it calls it in C.
cimport cython


@cython.locals(n=Py_ssize_t, i=Py_ssize_t, c=cython.uchar, v=cython.longlong)
cpdef long long digits_value(bytes arg) except -2
