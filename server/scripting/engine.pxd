# Declarations for compiling engine.py with Cython (setup.py); the interpreter never reads this.
#
# Running and Engine become extension types: their fields (every one a public Python object, so
# busy.py, ldb.py, the cluster check and the tests read and write them as before) are C struct
# fields, read per EVALSHA and per redis.call with a pointer offset instead of the type lookup and
# descriptor call a compiled module pays for an attribute of a plain Python object.  `_call_argv`
# (redis.call's body, `_reply_of` and `_to_lua`) and `run` hold their Running and Command in typed
# locals; `begin` is callable from C, and so are `_reply_of`, `_reply_cmd` and `_to_lua` (cbridge.pyx's
# redis.call).
# Crossing is the type cbridge's Bridge subclasses, so `run`'s call of the bridge goes through its
# method table; Engine is a runner.Runner, so the script cache's and the function registry's call
# of `run` does too.  The command itself runs through client.pxd's `call_command`, cimported: a C
# call, not a method call on the Python `Client`.
#
# The server, the script client and a run's caller are typed as the field bases of Server and
# Client (server/base/fields.pxd): the fields of theirs a run's set-up and redis.call read and
# write (the databases, the clock, propagation, the monitors, the write gates, the ACL user) are C
# struct fields.
cimport cython
from raxdb.protocol cimport reply as R
from raxdb.server.base.fields cimport ClientFields, ServerFields
from raxdb.server.net.client cimport perf_clock_ns, call_command
from raxdb.server.scripting.runner cimport Runner
from raxdb.server.table.registry cimport Command


cdef class Crossing:
    cpdef run(self, fn, Py_ssize_t numkeys, list argv, bint is_function)


cdef class Engine


cdef class Running:
    cdef public object name, argv, start, ro, allow_oom, wrote, killed, busy
    cdef public object is_function, repl, guarded, cross_slot, cluster_slot
    cdef public Engine engine
    cdef public ClientFields caller

    @cython.locals(srv=ServerFields)
    cpdef begin(self, ClientFields caller, name, argv, ro, is_function, allow_oom, cross_slot)


cdef class Engine(Runner):
    cdef public object chunk_name, functions, lua, _where, h, env, parser, _lookup
    cdef public dict _commands
    cdef public object _cmd_err, _run_eval, _run_fcall, _shape, ldb, ldb_lua, redis
    cdef public ServerFields server
    cdef public ClientFields client
    cdef public Crossing bridge
    cdef public Running running, _spare

    cpdef _call_argv(self, raise_errors, list argv)
    cpdef _reply_of(self, raise_errors, list argv)
    @cython.locals(run=Running, srv=ServerFields, client=ClientFields)
    cpdef _reply_cmd(self, raise_errors, list argv, Command cmd)
    cpdef _to_lua(self, raise_errors, bytes r)
    @cython.locals(run=Running, bridge=Crossing, srv=ServerFields, client=ClientFields)
    cpdef run(self, ClientFields c, fn, name, argv, numkeys, ro, is_function, allow_oom=*, cross_slot=*)


@cython.locals(cmd=Command)
cpdef _refusal(ServerFields srv, Running run, cmd, argv)
