# Declarations for compiling usage.py with Cython (setup.py); the interpreter never reads this.
#
# memory/evict.pxd cimports these: under a memory limit every key a write command names is
# sized again, and a C call saves the Python call's frame and argument handling.
from raxdb.protocol.request cimport string2ll
from raxdb.storage.alloc cimport embstr_alloc, sds_alloc

cpdef value_usage(v, samples=*)

cpdef key_usage(key, value, samples=*)
