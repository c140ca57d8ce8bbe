# Declarations for compiling registry.py with Cython (setup.py); the interpreter never reads this.
#
# Command becomes an extension type whose fields (public, as its __slots__ were) are C struct
# fields: the fast loop (server/net/client.pxd) reads and counts five of them per command, which a
# compiled module otherwise pays a type lookup and a descriptor call for.  The call counters are
# C integers (Python code reads and sets them as ints, as before).
# `arity_ok` and `note_latency` are callable from C (the fast loop and the scripting engine's
# redis.call test every command's arity with the first; the timed calls count with the second).
# `run_handler` (below) is how the fast loop and call_command call a command's handler.
cimport cython
from cpython.pycapsule cimport PyCapsule_GetName, PyCapsule_GetPointer
from raxdb.server.base.fields cimport ClientFields

cdef Py_ssize_t LATENCY_SMALL

# A compiled handler's own C function: a cpdef handler of a compiled command module whose client
# is typed ClientFields (`cpdef get(ClientFields c, argv)`), as its module exports it for cimport
# (`__pyx_capi__`); the last argument is Cython's skip_dispatch, and the `_opt` form's the
# optional arguments' record (NULL: their defaults), for a handler with a default argument
# (`cpdef incr(ClientFields c, argv, long long delta=*)`).
ctypedef object (*HandlerEntry)(ClientFields, object, int)
ctypedef object (*HandlerEntryOpt)(ClientFields, object, int, void *)


cdef class Command:
    cdef public object proc, name, fullname, flags, first_key, last_key, key_step
    cdef public Py_ssize_t arity  # a C integer: every call's arity test reads it
    cdef public object acl_categories, meta, parent
    cdef public dict subcommands  # typed: its truth test (every redis.call's) is a C size check
    cdef public object touches_arbitrary_keys, ok_in_pubsub
    cdef public object ok_loading, no_auth, is_blocking
    # the flags every call tests, as C truth values (Python code reads and sets them as bools)
    cdef public bint is_write, is_readonly, noscript, sampled, no_multi, queue_in_multi
    cdef public object fixed_key_positions, latency
    # timed calls of 0 to LATENCY_SMALL - 1 microseconds (registry.py): counted in C, most calls
    cdef unsigned long long _latency_small[16]
    # the counters as C integers: counting a call allocates no int object
    cdef public long long calls, usec, rejected_calls, failed_calls, timed_calls
    # `proc`'s C function when it has one (`_find_entry`), and the handler that was found for: a
    # `proc` replaced since (a family's first import, a table view's copy) is looked up again
    cdef object _entry_of
    cdef HandlerEntry _entry
    cdef HandlerEntryOpt _entry_opt
    @cython.locals(shape=bytes, want=bytes)  # the C signatures, as bytes objects (compared by value)
    cdef _find_entry(self)

    @cython.locals(arity=Py_ssize_t)
    cpdef bint arity_ok(self, Py_ssize_t n)

    @cython.locals(us=cython.longlong, hist=dict)
    cpdef note_latency(self, long long ns)

    @cython.locals(us=Py_ssize_t, hist=dict)
    cpdef dict latency_histogram(self)


# The reference for `_find_entry`: its exported C signature is the one a handler's must have.
cpdef _entry_shape(ClientFields c, argv)


# The handler's call (the fast loop's, call_command's): a compiled handler's C function when it has
# one, called straight, not through its Python wrapper (the vectorcall, the arguments' parsing and
# type test, ~100 instructions a call); any other handler (a def, a placeholder) as before.
# registry.py has its interpreted twin.
cdef inline object run_handler(Command cmd, ClientFields c, argv):
    if cmd._entry_of is not cmd.proc:
        cmd._find_entry()
    if cmd._entry is not NULL:
        return cmd._entry(c, argv, 1)
    if cmd._entry_opt is not NULL:
        return cmd._entry_opt(c, argv, 1, NULL)
    return cmd.proc(c, argv)
