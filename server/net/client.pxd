# Declarations for compiling client.py with Cython (setup.py); the interpreter never reads this.
#
# The fast loop's command is typed as the Command extension type (server/table/registry.pxd),
# so its reads of calls, sampled and proc, its arity test and its count of the call, are C-level.
# `call_command` (Client.call's body) is cpdef with its command typed the same way: the scripting
# engine (engine.pxd) cimports it and calls it from C for every redis.call.  Its client and server
# are typed as the field bases of Client and Server (server/base/fields.pxd): the fields it reads
# and writes of them are C struct fields.  So are the read event's: `read_event`
# (data_received's body), `_run_fast`, `queue_output` and `flush_output`.
cimport cython
from raxdb.server.base.fields cimport ClientFields, ServerFields
from raxdb.server.table.registry cimport Command


@cython.locals(cmd=Command, last=Command, calls=cython.longlong, sample=cython.longlong, srv=ServerFields,
               ready=dict)
cpdef _run_fast(ClientFields c, list out, t_prev, base, base_done)


@cython.locals(srv=ServerFields, n=Py_ssize_t, out=list)
cpdef read_event(ClientFields c, data)


@cython.locals(n=Py_ssize_t, obuf=list)
cpdef flush_output(ClientFields c)


@cython.locals(c=ClientFields)
cpdef flush_clients(list clients)


@cython.locals(srv=ServerFields, obuf=list, pending=list)
cpdef queue_output(ClientFields c, data)


@cython.locals(srv=ServerFields, calls=cython.longlong, timed=cython.bint, dt=cython.longlong)
cpdef call_command(ClientFields c, Command cmd, argv, t0, bint log_slow)
