# Declarations for compiling alloc.py with Cython (setup.py); the interpreter never reads this.
#
# Under a memory limit every write command sizes the keys it names (server/memory/evict.py), and
# the types' estimates (quicklist.pxd, set_type.pxd, hashtype.pxd, zset.pxd cimport these) take a
# size class and an sds allocation per sampled element: C calls on C integers.
cimport cython

@cython.locals(top=Py_ssize_t, spacing=Py_ssize_t)
cpdef Py_ssize_t size_class(Py_ssize_t n) except -1

cpdef Py_ssize_t sds_alloc(Py_ssize_t n) except -1

cpdef Py_ssize_t dict_table_bytes(Py_ssize_t n) except -1

@cython.locals(size=Py_ssize_t)
cpdef Py_ssize_t dict_slots(Py_ssize_t n) except -1

cpdef Py_ssize_t embstr_alloc(Py_ssize_t n) except -1

@cython.locals(total=Py_ssize_t)
cpdef Py_ssize_t sds_alloc_first(strings, Py_ssize_t k) except -1
