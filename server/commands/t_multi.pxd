# Declarations for compiling t_multi.py with Cython (setup.py); the interpreter never reads this.
#
# EXEC runs each queued command through client.pxd's `call_command`, cimported: a C call, where a
# call through the module attribute costs a Python call and its argument checks per queued command
# (a Spark sink's transaction queues thousands).  Its client and server are typed as their field
# bases (server/base/fields.pxd), the queued command as the Command extension type.  exec_ is
# registered with command() after its definition because a cpdef function takes no decorator
# (and MULTI, below, for the same reason).
# MULTI's and EXEC's changes of the client's transaction state (client.pxd) and EXEC's reply
# (R.array, reply.pxd) are C calls too.
cimport cython
from raxdb.protocol cimport reply as R
from raxdb.server.base.fields cimport ClientFields, ServerFields
from raxdb.server.net.client cimport call_command, enter_exec, enter_multi, leave_exec
from raxdb.server.table.registry cimport Command


# MULTI is cpdef too, its client typed: its test of `multi` is a C field read, not an attribute
# lookup on the Client (one a transaction).
cpdef multi(ClientFields c, argv)


@cython.locals(queue=list, srv=ServerFields, replies=list, cmd=Command, was_queueing=cython.bint,
               epoch=cython.longlong, i=Py_ssize_t)
cpdef exec_(ClientFields c, argv)


# The transaction's other handlers, in the reference signature (registry.pxd's `_entry_shape`):
# run_handler calls their C function, not their Python wrapper.
cpdef discard(ClientFields c, argv)
cpdef watch_(ClientFields c, argv)
cpdef unwatch(ClientFields c, argv)
