# Declarations for compiling usage.py with Cython (setup.py); the interpreter never reads this.
#
# memory/evict.pxd cimports these: under a memory limit every key a write command names is
# sized again, and a C call saves the Python call's frame and argument handling.
cimport cython
from raxdb.protocol.request cimport string2ll
from raxdb.storage.alloc cimport embstr_alloc, sds_alloc

# C integers in and out: the recount (evict._count) stores the figure in an int64 array
@cython.locals(t=object, n=Py_ssize_t, sizer=object)
cpdef Py_ssize_t value_usage(v, Py_ssize_t samples=*) except -1

cpdef Py_ssize_t key_usage(key, value, Py_ssize_t samples=*) except -1
