# Declarations for compiling state.py with Cython (setup.py); the interpreter never reads this.
#
# Every propagated write of a master with a backlog passes Replication.feed, feed_stream and
# Backlog.add: the replication state and the backlog are extension types here, so the stream's
# feed reads and writes their fields as C struct fields (the offset, the selected database, the
# backlog's bytes and its tail block's room), and add is a C call.  The attributes other modules
# read or set (INFO, PSYNC, the replica side, the tests) stay public.
cimport cython
from raxdb.server.base.fields cimport ReplFields
from raxdb.server.replication.master cimport Replica


cdef class Backlog:
    cdef public bytearray buf
    cdef public long long size, first, made, mem, tail_room
    cdef public list starts, cum
    cdef public object held_from, index
    cdef public int unindexed

    cpdef bint add(self, bytes data) except -1
    cpdef trim(self, long long max_blocks)


cdef class Replication(ReplFields):
    cdef public object srv, replid, replid2, masterhost, link, master, failover
    cdef public long long second_replid_offset, seldb
    cdef public int masterport
    cdef public Backlog backlog
    cdef public list replicas
    cdef public bint cluster_replica
    cdef public dict own_expires

    cpdef feed(self, int dbid, argv, data=*)
    @cython.locals(r=Replica)
    cpdef feed_stream(self, bytes data)
