# Declarations for compiling t_pubsub.py with Cython (setup.py); the interpreter never reads this.
#
# PUBLISH is cpdef in the reference signature (registry.pxd's `_entry_shape`): run_handler calls
# its C function, not its Python wrapper.  It is registered with command() after its definition
# because a cpdef function takes no decorator.
from raxdb.server.base.fields cimport ClientFields


cpdef publish(ClientFields c, argv)
