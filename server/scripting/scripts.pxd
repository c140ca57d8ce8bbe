# Declarations for compiling scripts.py with Cython (setup.py); the interpreter never reads this.
#
# Script (a cache entry) and ScriptCache become extension types, so EVALSHA's reads of the cache,
# the entry's flags and its compiled chunk are C struct fields.  The engine is held as a Runner
# (runner.pxd), so `run` calls it through its method table: cimporting the engine's own type would
# import Lua with this module, at start-up (scripts.py says why not).
from raxdb.server.scripting.runner cimport Runner


cdef class Script:
    cdef public object body, fn, flags, shebang


cdef class ScriptCache:
    cdef public object server, scripts
    cdef public Runner engine

    cpdef run(self, c, sha, Script script, argv, numkeys, ro_command)


cpdef ScriptCache cache(server)
