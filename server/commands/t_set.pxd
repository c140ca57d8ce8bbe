# Declarations for compiling t_set.py with Cython (setup.py); the interpreter never reads this.
#
# The key lookups and signals (server/events/keyaccess.pxd) and the integer parsers
# (server/table/args.pxd) this module's handlers call are C calls.
# The reply encoders R.integer, R.bulk and R.array are C calls too (protocol/reply.pxd).
from raxdb.protocol cimport reply as R
from raxdb.server.base.fields cimport ClientFields
from raxdb.server.events.keyaccess cimport lookup_read, lookup_write, modified, notify
from raxdb.server.table.args cimport to_int


# The other handlers the benchmarks and common use call, in the reference signature
# (registry.pxd's `_entry_shape`): run_handler calls their C function, not their Python wrapper.
# Registered with command() after their definitions (a cpdef function takes no decorator).
cpdef sadd(ClientFields c, argv)
cpdef srem(ClientFields c, argv)
cpdef smembers(ClientFields c, argv)
cpdef sismember(ClientFields c, argv)
cpdef smismember(ClientFields c, argv)
cpdef scard(ClientFields c, argv)
cpdef spop(ClientFields c, argv)
cpdef srandmember(ClientFields c, argv)
cpdef smove(ClientFields c, argv)
cpdef sscan(ClientFields c, argv)
cpdef sinter(ClientFields c, argv)
cpdef sinterstore(ClientFields c, argv)
cpdef sintercard(ClientFields c, argv)
cpdef sunion(ClientFields c, argv)
cpdef sunionstore(ClientFields c, argv)
cpdef sdiff(ClientFields c, argv)
cpdef sdiffstore(ClientFields c, argv)
