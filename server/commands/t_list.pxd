# Declarations for compiling t_list.py with Cython (setup.py); the interpreter never reads this.
#
# The key lookups and signals (server/events/keyaccess.pxd) and the integer parsers
# (server/table/args.pxd) this module's handlers call are C calls.
# LREM and the move of RPOPLPUSH / LMOVE, which job queues' scripts call on every job, hold their
# client and database typed (server/base/fields.pxd, storage/keyspace.pxd) and their lists as the
# Quicklist extension type (storage/quicklist.pxd), and their helpers are C calls, as the hash
# handlers have them.  The cpdef handlers are registered with command() after their definitions
# because a cpdef function takes no decorator.
# The pushes and pops (push_generic, pop_generic: the benchmarked list writes) hold their client,
# server, database and list typed the same way, so their field reads are C struct reads and the
# list's push or pop a C call; the six handlers are cpdef wrappers around them.
# The reply encoders R.integer, R.bulk and R.array are C calls too (protocol/reply.pxd).
cimport cython
from raxdb.protocol cimport reply as R
from raxdb.server.base.fields cimport ClientFields, ServerFields
from raxdb.server.events.keyaccess cimport lookup_read, modified, notify
from raxdb.server.table.args cimport to_int
from raxdb.storage.keyspace cimport Database
from raxdb.storage.quicklist cimport Quicklist


@cython.locals(db=Database)
cpdef _list_for_write(ClientFields c, key)

cpdef _drop_if_empty(ClientFields c, key, Quicklist ql)

@cython.locals(ql=Quicklist)
cpdef lrem(ClientFields c, argv)

@cython.locals(sql=Quicklist, dql=Quicklist, db=Database)
cpdef move_for_client(ClientFields c, src, dst, bint from_head, bint to_head)

cpdef rpoplpush(ClientFields c, argv)

@cython.locals(db=Database, srv=ServerFields, ql=Quicklist, n=Py_ssize_t)
cpdef bytes push_generic(ClientFields c, argv, bint head, bint only_existing)

cpdef lpush(ClientFields c, argv)
cpdef rpush(ClientFields c, argv)
cpdef lpushx(ClientFields c, argv)
cpdef rpushx(ClientFields c, argv)

@cython.locals(db=Database, srv=ServerFields, ql=Quicklist, n=Py_ssize_t)
cpdef pop_generic(ClientFields c, argv, bint head)

cpdef lpop(ClientFields c, argv)
cpdef rpop(ClientFields c, argv)


# The other handlers the benchmarks and common use call, in the reference signature
# (registry.pxd's `_entry_shape`): run_handler calls their C function, not their Python wrapper.
# Registered with command() after their definitions (a cpdef function takes no decorator).
cpdef llen(ClientFields c, argv)
cpdef lindex(ClientFields c, argv)
cpdef lrange(ClientFields c, argv)
cpdef lpos(ClientFields c, argv)
cpdef lset(ClientFields c, argv)
cpdef ltrim(ClientFields c, argv)
cpdef linsert(ClientFields c, argv)
cpdef lmove(ClientFields c, argv)
cpdef lmpop(ClientFields c, argv)
cpdef blpop(ClientFields c, argv)
cpdef brpop(ClientFields c, argv)
cpdef brpoplpush(ClientFields c, argv)
cpdef blmove(ClientFields c, argv)
cpdef blmpop(ClientFields c, argv)
