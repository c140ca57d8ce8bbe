# Declarations for compiling routing.py with Cython (setup.py); the interpreter never reads this.
#
# route() runs for every command execute() dispatches in cluster mode: the key's slot is a C call.
# (The fast loop does not call in here: it reads the cluster state's `served` map itself.)
from raxdb.storage.slots cimport key_hash_slot
