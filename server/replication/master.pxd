# Declarations for compiling master.py with Cython (setup.py); the interpreter never reads this.
#
# A replica is an extension type: the replication stream's feed (state.pxd's feed_stream) calls
# its `send` from C for every propagated write, which reads its state as C fields and queues the
# bytes on its client with client.py's write_out, a C call.
from raxdb.server.base.fields cimport ClientFields
from raxdb.server.net.client cimport write_out


cdef class Replica:
    cdef public ClientFields client
    cdef public object master, port, addr, req, ack_off, aof_ack_off, ack_time, initial_offset, pending_from
    cdef public object last_partial_write, pipe_taken
    cdef public int state
    cdef public bint flagged, capa_eof, capa_psync2, rdb_only, pre_psync, stream_on_ack

    cpdef send(self, bytes data)
