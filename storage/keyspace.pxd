# Declarations for compiling keyspace.py with Cython (setup.py); the interpreter never reads this.
#
# Entry, one per key, becomes an extension type whose times and positions are C integers: 48
# bytes plus the cycle collector's header, one 64-byte block and no int objects of its own (the
# interpreted class holds five object references).  The fields stay public, so the inlined fast
# paths of the type commands and the RDB code read and write them as attributes.


cdef class Entry:
    cdef public object value
    cdef public long long atime
    cdef public long long expire
    cdef public int slot
    cdef public int tslot
