# Declarations for compiling hashscan.py with Cython (setup.py); the interpreter never reads this.
#
# Compiled, a ZSCAN / SSCAN step is a C loop over the bucket list: interpreted, the ~220 buckets a
# COUNT 100 visits over 10,000 members were most of ZSCAN_100's cost (docs/speed-log.md).
cimport cython


@cython.locals(r=cython.ulonglong, i=Py_ssize_t)
cpdef unsigned long long _reverse(unsigned long long v, int bits)


cdef class ScanIndex:
    cdef public Py_ssize_t mask
    cdef public int bits
    cdef public list slots

    @cython.locals(mask=Py_ssize_t, bits=cython.int, slots=list, out=list, budget=Py_ssize_t, i=Py_ssize_t,
                   c=Py_ssize_t)
    cpdef tuple scan(self, cursor, Py_ssize_t count)
