# Declarations for compiling state.py with Cython (setup.py); the interpreter never reads this.
#
# ClusterState is an extension type: in cluster mode the fast loop's check (routing.py's `local`)
# reads the cluster's state, the slot's owner, myself and the migrating and importing slots for
# every command, as C struct fields rather than instance-dict lookups.  Node stays a Python class.

cdef class ClusterState:
    cdef public object myself
    cdef public dict nodes
    cdef public list slots
    cdef public dict migrating
    cdef public dict importing
    cdef public object current_epoch
    cdef public object last_vote_epoch
    cdef public int state
    cdef public object size
    cdef public list sent
    cdef public list received
    cdef public object pfail_nodes
    cdef public object links_limit_exceeded
    cdef public object first_update_ms
    cdef public object minority_since_ms
    cdef public dict blacklist
    cdef public object on_del_slot
    cdef public object slot_losses
