# Declarations for compiling functions.py with Cython (setup.py); the interpreter never reads this.
#
# Function (a registered function) and FunctionsEngine become extension types, so FCALL's reads of
# the registry, the function's flags and its callback are C struct fields, and `registry` and
# `call` are C calls from t_scripting.pxd's handlers (cimported) rather than Python calls between
# compiled modules.  A function's flags as FCALL tests them are C truth values, settled when the
# library loads.  The server is typed as Server's field base (server/base/fields.pxd): the
# registry (`functions_engine`) and the cluster FCALL reads of it are C struct fields.  The engine
# is held as a Runner (runner.pxd), so `call` calls it through its method table: cimporting the
# engine's own type would import Lua with this module, at start-up (functions.py says why not).
cimport cython
from raxdb.server.base.fields cimport ServerFields
from raxdb.server.scripting cimport runner
from raxdb.server.scripting.runner cimport Runner


cdef class Function:
    cdef public object name, fn, flags, description, library
    cdef public bint no_cluster, no_writes, allow_oom, cross_slot


cdef class FunctionsEngine:
    cdef public ServerFields server
    cdef public object libraries
    cdef public dict functions  # typed: FCALL's lookup is a C dict get, not a method call
    cdef public object load_env, _loading
    cdef public Runner engine
    cdef list _recent_name, _recent  # lookup's memory: C struct fields, typed lists

    @cython.locals(n=Py_ssize_t, i=cython.int, known=bytes)
    cpdef Function lookup(self, bytes name)
    @cython.locals(fn=Function)
    cpdef call(self, c, argv, bint ro_command)


cpdef FunctionsEngine registry(ServerFields server)
