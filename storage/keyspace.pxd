# Declarations for compiling keyspace.py with Cython (setup.py); the interpreter never reads this.
#
# Entry, one per key, becomes an extension type whose time and slot are C integers: 40 bytes plus
# the cycle collector's header, so one 64-byte block and no int objects of its own (the
# interpreted class holds three object references, and a key's time and slot as ints beside it).
# The fields stay public, so the inlined fast paths (server/commands/t_string.py) and the RDB code
# read and write them as attributes.


cdef class Entry:
    cdef public object value
    cdef public long long atime
    cdef public Py_ssize_t slot
