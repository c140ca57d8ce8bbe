# Declarations for compiling registry.py with Cython (setup.py); the interpreter never reads this.
#
# Command becomes an extension type whose fields (public, as its __slots__ were) are C struct
# fields: the fast loop (server/net/client.pxd) reads and counts five of them per command, which a
# compiled module otherwise pays a type lookup and a descriptor call for.  The call counters are
# C integers (Python code reads and sets them as ints, as before).
# `arity_ok` and `note_latency` are callable from C (the fast loop and the scripting engine's
# redis.call test every command's arity with the first; the timed calls count with the second).
cimport cython

cdef Py_ssize_t LATENCY_SMALL


cdef class Command:
    cdef public object proc, name, fullname, flags, first_key, last_key, key_step
    cdef public Py_ssize_t arity  # a C integer: every call's arity test reads it
    cdef public object acl_categories, meta, parent
    cdef public dict subcommands  # typed: its truth test (every redis.call's) is a C size check
    cdef public object touches_arbitrary_keys, ok_in_pubsub
    cdef public object ok_loading, no_auth, queue_in_multi, is_blocking
    # the flags every call tests, as C truth values (Python code reads and sets them as bools)
    cdef public bint is_write, is_readonly, noscript, sampled, no_multi
    cdef public object fixed_key_positions, latency
    # timed calls of 0 to LATENCY_SMALL - 1 microseconds (registry.py): counted in C, most calls
    cdef unsigned long long _latency_small[16]
    # the counters as C integers: counting a call allocates no int object
    cdef public long long calls, usec, rejected_calls, failed_calls, timed_calls

    @cython.locals(arity=Py_ssize_t)
    cpdef bint arity_ok(self, Py_ssize_t n)

    @cython.locals(us=cython.longlong, hist=dict)
    cpdef note_latency(self, long long ns)

    @cython.locals(us=Py_ssize_t, hist=dict)
    cpdef dict latency_histogram(self)
