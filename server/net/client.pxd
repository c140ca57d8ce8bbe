# Declarations for compiling client.py with Cython (setup.py); the interpreter never reads this.
#
# The fast loop's command is typed as the Command extension type (server/table/registry.pxd),
# so its reads of arg_counts, calls, sampled and proc, and its count of the call, are C-level.
cimport cython
from raxdb.server.table.registry cimport Command


@cython.locals(cmd=Command, last=Command)
cpdef _run_fast(c, out, t_prev, base, base_done)
