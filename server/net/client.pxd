# Declarations for compiling client.py with Cython (setup.py); the interpreter never reads this.
#
# The fast loop's command is typed as the Command extension type (server/table/registry.pxd),
# so its reads of calls, sampled and proc, its arity test and its count of the call, are C-level;
# its argv is typed a list (the walk's and hiredis's commands are lists): its name's read and its
# length are C reads, not a generic item lookup and PyObject_Size;
# its flags (propagating, latency tracking, the branch after a command) are C truth values, tested
# per command without a call of PyObject_IsTrue.
# `call_command` (Client.call's body) is cpdef with its command typed the same way: the scripting
# engine (engine.pxd) cimports it and calls it from C for every redis.call.  Its client and server
# are typed as the field bases of Client and Server (server/base/fields.pxd): the fields it reads
# and writes of them are C struct fields.  So are the read event's: `read_event`
# (data_received's body), `_run_fast`, `queue_output` and `flush_output`.  The fast loop's walk
# over a read's whole commands (protocol/multibulk.pxd) is typed too: its `next` is a C call.
#
# The clocks are inline here (client.py holds their interpreted twins, time.time_ns and
# time.perf_counter_ns): a clock_gettime each, where a call of the time module's functions costs
# ~450 instructions, once per read event and twice per timed command.
cimport cython
from libc.time cimport timespec
from posix.time cimport CLOCK_MONOTONIC, CLOCK_REALTIME, clock_gettime, clockid_t
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE


cdef extern from "<sys/socket.h>" nogil:
    ssize_t send(int fd, const void *buf, size_t n, int flags)
    int MSG_NOSIGNAL
from raxdb.protocol cimport reply as R
from raxdb.protocol.multibulk cimport HeldCommand, MultibulkWalk, frames_biggest
from raxdb.server.base.fields cimport ClientFields, ServerFields
from raxdb.server.conn.obuf cimport check_delivery
from raxdb.server.memory.evict cimport account, refuses
from raxdb.server.table.registry cimport Command, run_handler
from raxdb.storage.slots cimport keys_slot


cdef inline long long _ns(clockid_t which) noexcept nogil:
    cdef timespec ts
    clock_gettime(which, &ts)
    return <long long>ts.tv_sec * 1000000000 + ts.tv_nsec


cdef inline long long _time_ns() noexcept nogil:  # time.time_ns
    return _ns(CLOCK_REALTIME)


cdef inline long long perf_clock_ns() noexcept nogil:  # time.perf_counter_ns
    return _ns(CLOCK_MONOTONIC)


@cython.locals(cmd=Command, last=Command, last_found=Command, name=bytes, last_name=bytes, known=bytes, found=list, i=Py_ssize_t, calls=cython.longlong, sample=cython.longlong, srv=ServerFields,
               argv=list, queue=list,
               ready=dict, dispatch=dict, t0=cython.longlong, dt=cython.longlong, nbase=Py_ssize_t,
               done=Py_ssize_t, clean=cython.bint, walk=MultibulkWalk, walking=cython.bint, track=cython.bint, prop=cython.bint, extra=cython.bint,
               mm=cython.bint)
cpdef _run_fast(ClientFields c, list out, long long t_prev, base, base_done, Py_ssize_t fed,
                Py_ssize_t start=*, list first=*)


# Cluster mode's per-command check: the client's flags a C field, the key positions a C dict
# lookup, the keys' slot a C call (storage/slots.pxd), the slot's byte a bytearray read.
cdef int _ROUTED

@cython.locals(fixed=dict, positions=tuple, slot=cython.int)
cdef bint _cluster_serves(bytearray served, ClientFields c, Command cmd, list argv) except -1


@cython.locals(n=Py_ssize_t)
cdef Py_ssize_t _feed_slice(ClientFields c, base, Py_ssize_t fed, Py_ssize_t nbase) except -1


cdef bint _is_argv(frame) except -1


@cython.locals(biggest=Py_ssize_t, pos=Py_ssize_t, base=bytes)
cdef bint _rest_for_hiredis(ClientFields c, MultibulkWalk walk, Py_ssize_t done) except -1

# clientbufs.BIG as a C integer (the read size that may bring a big argument), and the walk of a
# run without one (typed: its boundary fields read in C)
cdef Py_ssize_t _BIG, _TAIL_MAX, _FOUND_MAX
cdef MultibulkWalk _NO_WALK


@cython.locals(srv=ServerFields, n=Py_ssize_t, out=list, t=cython.longlong, now=cython.longlong, start=Py_ssize_t,
               first=list, held=HeldCommand)
cpdef read_event(ClientFields c, bytes data)

# the tail (client.py's _TAIL_MAX) handed to hiredis
cdef _spill_tail(ClientFields c, HeldCommand tail)


# flush_output's write of a socket uvloop's plain transport holds nothing for (client.py's
# transport_changed): the whole data, as write(2) but with MSG_NOSIGNAL, so that a peer gone is
# an EPIPE whatever SIGPIPE's disposition (CPython ignores it at start-up; a program embedding the
# server in thread mode may not); the bytes the kernel took, 0 when it took none (EAGAIN, EINTR)
# or failed (the transport is then given the whole data and meets the error itself)
cdef inline Py_ssize_t _write_now(int fd, bytes data) noexcept:
    cdef Py_ssize_t sent = send(fd, PyBytes_AS_STRING(data), <size_t>PyBytes_GET_SIZE(data), MSG_NOSIGNAL)
    return sent if sent > 0 else 0


@cython.locals(n=cython.longlong, obuf=list, sent=Py_ssize_t)
cpdef flush_output(ClientFields c)


cdef Py_ssize_t _PIECE_MIN

cdef bint has_big_piece(list obuf) except -1

@cython.locals(n=Py_ssize_t, i=Py_ssize_t, start=Py_ssize_t)
cpdef queue_replies(ClientFields c, list out)

cdef _queue_run(ClientFields c, list out, Py_ssize_t start, Py_ssize_t end)


@cython.locals(c=ClientFields, clients=list, i=Py_ssize_t)
cpdef flush_pending(srv)


@cython.locals(srv=ServerFields, obuf=list, pending=list)
cpdef queue_output(ClientFields c, data)


@cython.locals(srv=ServerFields)
cpdef write_out(ClientFields c, data)

cdef _deliver(ClientFields c, data, bint evict)


@cython.locals(c=ClientFields, resp2=bytes, resp3=bytes, srv=ServerFields, evict=cython.int)
cpdef fan_out(dict subs, bytes body)


@cython.locals(srv=ServerFields, calls=cython.longlong, timed=cython.bint, start=cython.longlong,
               dt=cython.longlong)
cpdef call_command(ClientFields c, Command cmd, argv, t0, bint log_slow)


# A transaction's state changes (MULTI, EXEC): cimported by t_multi.pxd, C calls there.
cpdef enter_multi(ClientFields c)
cpdef enter_exec(ClientFields c, argv, list queue)
cpdef leave_exec(ClientFields c, bint was_queueing, long long epoch)
@cython.locals(srv=ServerFields)
cpdef long long write_offset(ClientFields c) except? -1
