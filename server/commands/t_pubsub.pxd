# Declarations for compiling t_pubsub.py with Cython (setup.py); the interpreter never reads this.
#
# PUBLISH and SPUBLISH are cpdef in the reference signature (registry.pxd's `_entry_shape`):
# run_handler calls their C function, not their Python wrapper.  They are registered with command()
# after their definitions because a cpdef function takes no decorator.
from raxdb.server.base.fields cimport ClientFields


cpdef publish(ClientFields c, argv)
cpdef spublish(ClientFields c, argv)

# The (un)subscribe commands and PUBSUB's subcommands, in the same signature (a subcommand's record
# calls its handler as a command's).
cpdef subscribe(ClientFields c, argv)
cpdef psubscribe(ClientFields c, argv)
cpdef ssubscribe(ClientFields c, argv)
cpdef unsubscribe(ClientFields c, argv)
cpdef punsubscribe(ClientFields c, argv)
cpdef sunsubscribe(ClientFields c, argv)
cpdef pubsub_channels(ClientFields c, argv)
cpdef pubsub_shardchannels(ClientFields c, argv)
cpdef pubsub_numsub(ClientFields c, argv)
cpdef pubsub_shardnumsub(ClientFields c, argv)
cpdef pubsub_numpat(ClientFields c, argv)
cpdef pubsub_help(ClientFields c, argv)
