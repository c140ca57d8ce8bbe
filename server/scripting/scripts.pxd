# Declarations for compiling scripts.py with Cython (setup.py); the interpreter never reads this.
#
# Script (a cache entry) and ScriptCache become extension types, so EVALSHA's reads of the cache,
# the entry's flags and its compiled chunk are C struct fields.  The engine stays a Python object
# here: cimporting its type would import Lua with this module, at start-up (scripts.py says why not).


cdef class Script:
    cdef public object body, fn, flags, shebang


cdef class ScriptCache:
    cdef public object server, engine, scripts

    cpdef run(self, c, sha, Script script, argv, numkeys, ro_command)


cpdef ScriptCache cache(server)
