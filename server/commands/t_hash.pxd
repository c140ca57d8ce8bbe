# Declarations for compiling t_hash.py with Cython (setup.py); the interpreter never reads this.
#
# The handlers job queues' scripts call (HSET, HMSET, HINCRBY, HGET, HMGET, HGETALL) are cpdef
# functions whose client is its class's field base and whose server and database are typed
# (server/base/fields.pxd, storage/keyspace.pxd): their reads of them are C struct fields and
# their lookups C calls, as are the key lookups and signals (server/events/keyaccess.pxd), the
# integer parsers (server/table/args.pxd), the hash's get and set (storage/hashtype.pxd) and this
# module's helpers.  The cpdef handlers are registered with command() after their definitions
# because a cpdef function takes no decorator.
# The reply encoders R.integer, R.bulk and R.array are C calls too (protocol/reply.pxd).
cimport cython
from raxdb.protocol cimport reply as R
from raxdb.server.base.fields cimport ClientFields, ServerFields
from raxdb.server.events.keyaccess cimport lookup_read, modified, notify
from raxdb.server.table.args cimport maybe_int, to_int
from raxdb.storage.hashtype cimport Hash, hash_get, hash_set_pairs, new_hash
from raxdb.storage.keyspace cimport Database


cdef tuple _limits(ServerFields srv)

cdef _with_deadlines(ClientFields c, key, v)

cdef _hash_for_read(ClientFields c, key)

@cython.locals(db=Database, srv=ServerFields)
cdef _hash_for_write(ClientFields c, key)

@cython.locals(db=Database, srv=ServerFields)
cdef _written(ClientFields c, key, event, dirty=*)

cdef _hash_for_create(ClientFields c, key)

cdef _hset_deadlines(ClientFields c, argv, h)

cdef _set_fields(ClientFields c, h, argv, start)

cdef _set_one(ClientFields c, h, field, value)

@cython.locals(db=Database, srv=ServerFields, n=Py_ssize_t, h=Hash, now=cython.longlong)
cpdef hset(ClientFields c, argv, name=*)

cpdef hmset(ClientFields c, argv)

cpdef hincrby(ClientFields c, argv)

cpdef hget(ClientFields c, argv)

@cython.locals(i=Py_ssize_t)
cpdef hmget(ClientFields c, argv)

cpdef hgetall(ClientFields c, argv)


# The other handlers the benchmarks and common use call, in the reference signature
# (registry.pxd's `_entry_shape`): run_handler calls their C function, not their Python wrapper.
# Registered with command() after their definitions (a cpdef function takes no decorator).
cpdef hsetnx(ClientFields c, argv)
cpdef hdel(ClientFields c, argv)
cpdef hincrbyfloat(ClientFields c, argv)
cpdef hkeys(ClientFields c, argv)
cpdef hvals(ClientFields c, argv)
cpdef hlen(ClientFields c, argv)
cpdef hexists(ClientFields c, argv)
cpdef hstrlen(ClientFields c, argv)
cpdef hscan(ClientFields c, argv)
cpdef hrandfield(ClientFields c, argv)
