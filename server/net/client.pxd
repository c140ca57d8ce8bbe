# Declarations for compiling client.py with Cython (setup.py); the interpreter never reads this.
#
# The fast loop's command is typed as the Command extension type (server/table/registry.pxd),
# so its reads of calls, sampled and proc, its arity test and its count of the call, are C-level.
# `call_command` (Client.call's body) is cpdef with its command typed the same way: the scripting
# engine (engine.pxd) cimports it and calls it from C for every redis.call.
cimport cython
from raxdb.server.table.registry cimport Command


@cython.locals(cmd=Command, last=Command)
cpdef _run_fast(c, out, t_prev, base, base_done)


cpdef call_command(c, Command cmd, argv, t0, bint log_slow)
