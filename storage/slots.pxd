# Declarations for compiling slots.py with Cython (setup.py); the interpreter never reads this.
#
# Compiled, key_hash_slot is a C function over the key's bytes: the hash tag's search and the
# CRC's table loads run on C integers (the table read through its array's data pointer: an index
# is a byte, within its 256 entries).
cimport cython
from cpython cimport array

cdef array.array _TABLE

@cython.locals(p="const unsigned char*", n=cython.Py_ssize_t, start=cython.Py_ssize_t, end=cython.Py_ssize_t,
               i=cython.Py_ssize_t, j=cython.Py_ssize_t, crc=cython.uint, t="unsigned short*")
cpdef int key_hash_slot(bytes key) except -1

@cython.locals(slot=cython.int, this=cython.int, p=Py_ssize_t)
cpdef int keys_slot(list argv, tuple positions) except? -3


# The per-slot key index: the database's insert and remove call add and discard as C methods.
cdef class SlotIndex:
    cdef public dict by_slot

    @cython.locals(keys=dict)
    cpdef add(self, bytes key)

    @cython.locals(keys=dict)
    cpdef discard(self, bytes key)
