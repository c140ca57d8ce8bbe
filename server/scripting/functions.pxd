# Declarations for compiling functions.py with Cython (setup.py); the interpreter never reads this.
#
# Function (a registered function) and FunctionsEngine become extension types, so FCALL's reads of
# the registry, the function's flags and its callback are C struct fields, and `registry` and
# `call` are C calls from t_scripting.pxd's handlers (cimported) rather than Python calls between
# compiled modules.  The engine stays a Python object here: cimporting its type would import Lua
# with this module, at start-up (functions.py says why not).
cimport cython


cdef class Function:
    cdef public object name, fn, flags, description, library


cdef class FunctionsEngine:
    cdef public object server, engine, libraries, functions, load_env, _loading

    cpdef lookup(self, name)
    @cython.locals(fn=Function)
    cpdef call(self, c, argv, ro_command)


cpdef FunctionsEngine registry(server)
