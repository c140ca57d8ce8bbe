# Declarations for compiling engine.py with Cython (setup.py); the interpreter never reads this.
#
# Running and Engine become extension types: their fields (every one a public Python object, so
# busy.py, ldb.py, the cluster check and the tests read and write them as before) are C struct
# fields, read per EVALSHA and per redis.call with a pointer offset instead of the type lookup and
# descriptor call a compiled module pays for an attribute of a plain Python object.  `_call_argv`
# (redis.call's body, `_reply_of` and `_to_lua`) and `run` hold their Running and Command in typed
# locals; `begin` is callable from C, and so are `_reply_of` and `_to_lua` (cbridge.pyx's redis.call).
# Crossing is the type cbridge's Bridge subclasses, so `run`'s call of the bridge goes through its
# method table; Engine is a runner.Runner, so the script cache's and the function registry's call
# of `run` does too.  The command itself runs through client.pxd's `call_command`, cimported: a C
# call, not a method call on the Python `Client`.
cimport cython
from raxdb.server.net.client cimport call_command
from raxdb.server.scripting.runner cimport Runner
from raxdb.server.table.registry cimport Command


cdef class Crossing:
    cpdef run(self, fn, Py_ssize_t numkeys, list argv, bint is_function)


cdef class Running:
    cdef public object engine, caller, name, argv, start, ro, allow_oom, wrote, killed, busy
    cdef public object is_function, repl, guarded, cross_slot, cluster_slot

    cpdef begin(self, caller, name, argv, ro, is_function, allow_oom, cross_slot)


cdef class Engine(Runner):
    cdef public object server, chunk_name, functions, lua, _where, h, env, parser, _dispatch, _lookup
    cdef public object _cmd_err, _run_eval, _run_fcall, _shape, client, ldb, ldb_lua, redis
    cdef public Crossing bridge
    cdef public Running running, _spare

    cpdef _call_argv(self, raise_errors, list argv)
    @cython.locals(run=Running, cmd=Command)
    cpdef _reply_of(self, raise_errors, list argv)
    cpdef _to_lua(self, raise_errors, bytes r)
    @cython.locals(run=Running, bridge=Crossing)
    cpdef run(self, c, fn, name, argv, numkeys, ro, is_function, allow_oom=*, cross_slot=*)


@cython.locals(cmd=Command)
cpdef _refusal(srv, Running run, cmd, argv)
