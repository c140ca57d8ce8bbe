# Declarations for compiling evict.py with Cython (setup.py); the interpreter never reads this.
#
# The eviction loop's private steps are C functions (a call per key evicted, and per sampled key
# in the pool's fill), with the pool's indexes as C integers.
cimport cython

@cython.locals(pool=list, count=Py_ssize_t, i=Py_ssize_t, full=bint, drawn=list)
cdef _populate(object srv, object state, object db, bint volatile, str mode)

@cython.locals(volatile=bint, n=Py_ssize_t, total=Py_ssize_t, pool=list, dbs=list)
cdef object _pick(object srv, object state, str policy)

cdef Py_ssize_t _evict(object srv, object db, object key) except -1
