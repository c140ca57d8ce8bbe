# Declarations for compiling state.py with Cython (setup.py); the interpreter never reads this.
#
# ClusterState is an extension type: route() (routing.py) reads the cluster's state, the slots'
# owners, myself and the migrating and importing slots as C struct fields rather than
# instance-dict lookups.  Node stays a Python class.
# `served` (the per-slot byte map the fast loop reads, through the server's `cluster_served`) is
# recomputed by one C method, `_refresh`; `state`, `migrating` and `importing` are read-only to
# Python, so nothing changes them but the methods that refresh the map.
cimport cython

cdef class ClusterState:
    cdef readonly object myself
    cdef public dict nodes
    cdef readonly list slots
    cdef dict _migrating
    cdef dict _importing
    cdef readonly object migrating
    cdef readonly object importing
    cdef public object current_epoch
    cdef public object last_vote_epoch
    cdef readonly int state
    cdef readonly bytearray served
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

    cdef void _refresh(self, Py_ssize_t s) except *

    cdef void _open_slot(self, dict table, Py_ssize_t s, object node) except *

    @cython.locals(s=Py_ssize_t)
    cdef void _refresh_all(self) except *
