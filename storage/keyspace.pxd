# Declarations for compiling keyspace.py with Cython (setup.py); the interpreter never reads this.
#
# Entry, one per key, becomes an extension type whose times and positions are C integers, and
# without a cycle-collector header (the no_gc decorator on the class in keyspace.py: Cython reads
# it only there): a record refers to its value alone and no value refers back to a record, so no
# cycle can pass through one, and a full collection no longer visits a record per key.  48 bytes,
# no int objects of its own (the interpreted class holds five object references).  The fields
# stay public, so the inlined fast paths of the type commands and the RDB code read and write
# them as attributes.


cdef class Entry:
    cdef public object value
    cdef public long long atime
    cdef public long long expire
    cdef public int slot
    cdef public int tslot
