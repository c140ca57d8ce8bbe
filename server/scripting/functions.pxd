# Declarations for compiling functions.py with Cython (setup.py); the interpreter never reads this.
#
# Function (a registered function) and FunctionsEngine become extension types, so FCALL's reads of
# the registry, the function's flags and its callback are C struct fields, and `registry` and
# `call` are C calls from t_scripting.pxd's handlers (cimported) rather than Python calls between
# compiled modules.  The engine is held as a Runner (runner.pxd), so `call` calls it through its
# method table: cimporting the engine's own type would import Lua with this module, at start-up
# (functions.py says why not).
cimport cython
from raxdb.server.scripting cimport runner
from raxdb.server.scripting.runner cimport Runner


cdef class Function:
    cdef public object name, fn, flags, description, library


cdef class FunctionsEngine:
    cdef public object server, libraries
    cdef public dict functions  # typed: FCALL's lookup is a C dict get, not a method call
    cdef public object load_env, _loading
    cdef public Runner engine

    cpdef lookup(self, name)
    @cython.locals(fn=Function)
    cpdef call(self, c, argv, ro_command)


cpdef FunctionsEngine registry(server)
