# Declarations for compiling evict.py with Cython (setup.py); the interpreter never reads this.
#
# Under a memory limit every write command runs `account` after it and the fast loop `refuses`
# before the next one (client.pxd cimports both: C calls): the databases' figures (count,
# nexpires, mem, sizes) are C fields of the typed Database, and the per-key recount and MEMORY
# USAGE's figure (usage.pxd) are C calls.
cimport cython
from raxdb.server.base.fields cimport ClientFields, ServerFields
from raxdb.server.memory.usage cimport key_usage
from raxdb.server.table.registry cimport Command
from raxdb.storage.keyspace cimport Database


# the server typed (ServerFields): the memory fields every command's check and every write's
# recount read and write (mem_ok, mem_room, mem_nexp, mem_dbs, mem_created) are C fields
@cython.locals(db=Database, e=Py_ssize_t)
cpdef used_memory(ServerFields srv)

@cython.locals(db=Database, e=Py_ssize_t)
cpdef Py_ssize_t _expiring(ServerFields srv) except -1

@cython.locals(p=Py_ssize_t)
cpdef long long _count(Database db, key) except? -1

@cython.locals(db=Database, created=list, dbs=list)
cpdef settle(ServerFields srv)

# the client and the command typed: their server, database, write flag and key positions are C
# fields (the fast loop calls both with them typed)
@cython.locals(db=Database, srv=ServerFields, growth=cython.longlong)
cpdef account(ClientFields c, Command cmd, argv)

@cython.locals(room=cython.longlong)
cpdef grew(ServerFields srv, long long growth)

cpdef perform_evictions(ServerFields srv)

@cython.locals(srv=ServerFields)
cpdef bint refuses(ClientFields c, Command cmd, argv) except -1

# The eviction loop's private steps are C functions (a call per key evicted, and per sampled key
# in the pool's fill), with the pool's indexes as C integers.

@cython.locals(pool=list, i=Py_ssize_t, full=bint, drawn=list)
cdef _populate(object srv, object state, Database db, bint volatile, str mode, Py_ssize_t count)

@cython.locals(n=Py_ssize_t, total=Py_ssize_t, pool=list, db=Database, freed=Py_ssize_t)
cdef Py_ssize_t _evict_next(object srv, object state, bint volatile, str mode, Py_ssize_t count,
                            bint monitored) except -2

@cython.locals(nexp=Py_ssize_t, freed=Py_ssize_t)
cdef Py_ssize_t _evict(object srv, Database db, object key, bint volatile, bint monitored) except -2

@cython.locals(freed=Py_ssize_t, keys_freed=Py_ssize_t, count=Py_ssize_t, one=Py_ssize_t, volatile=bint,
               monitored=bint)
cdef _evict_until(object srv, object state, str policy, Py_ssize_t tofree)
