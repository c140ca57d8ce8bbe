# Declarations for compiling scripts.py with Cython (setup.py); the interpreter never reads this.
#
# Script (a cache entry) and ScriptCache become extension types, so EVALSHA's reads of the cache,
# the entry's flags and its compiled chunk are C struct fields.  The engine is held as a Runner
# (runner.pxd), so `run` calls it through its method table: cimporting the engine's own type would
# import Lua with this module, at start-up (scripts.py says why not).  The server and the calling
# client are typed as the field bases of Server and Client (server/base/fields.pxd): EVALSHA's
# reads of them are C struct fields.
cimport cython
from raxdb.server.base.fields cimport ClientFields, ServerFields
from raxdb.server.scripting.runner cimport Runner


cdef class Script:
    cdef public object body, fn, flags, shebang
    cdef public bint no_cluster, no_writes, allow_oom, cross_slot  # the flags as a run tests them


cdef class ScriptCache:
    cdef public dict scripts  # typed: EVALSHA's lookup is a C dict lookup
    cdef public ServerFields server
    cdef public Runner engine
    cdef list _recent_sha, _recent  # find's memory: C struct fields, typed lists

    @cython.locals(i=cython.int, known=bytes)
    cpdef Script find(self, bytes sha)

    @cython.locals(srv=ServerFields)
    cpdef run(self, ClientFields c, sha, Script script, argv, numkeys, bint ro_command)


cpdef ScriptCache cache(ServerFields server)
