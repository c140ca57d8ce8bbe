# Declarations for compiling t_pubsub.py with Cython (setup.py); the interpreter never reads this.
#
# PUBLISH and SPUBLISH are cpdef in the reference signature (registry.pxd's `_entry_shape`):
# run_handler calls their C function, not their Python wrapper.  They are registered with command()
# after their definitions because a cpdef function takes no decorator.
from raxdb.server.base.fields cimport ClientFields


cpdef publish(ClientFields c, argv)
cpdef spublish(ClientFields c, argv)
