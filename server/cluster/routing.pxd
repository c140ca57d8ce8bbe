# Declarations for compiling routing.py with Cython (setup.py); the interpreter never reads this.
#
# In cluster mode the fast loop asks `local` about every command (server/net/client.py's
# `cluster_local` hook): the cluster's state is read as an extension type's fields
# (server/cluster/state.pxd), and the key's slot is a C call.
cimport cython
from raxdb.server.cluster.state cimport ClusterState
from raxdb.storage.slots cimport key_hash_slot

@cython.locals(slot=cython.int)
cpdef bint _stable_here(ClusterState st, bytes key) except -1

cpdef bint local(object cluster, object c, object cmd, list argv) except -1
