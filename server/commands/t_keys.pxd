# Declarations for compiling t_keys.py with Cython (setup.py); the interpreter never reads this.
#
# The key lookups and signals (server/events/keyaccess.pxd) and the integer parsers
# (server/table/args.pxd) this module's handlers call are C calls.
# The reply encoders R.integer, R.bulk and R.array are C calls too (protocol/reply.pxd).
from raxdb.protocol cimport reply as R
from raxdb.server.base.fields cimport ClientFields
from raxdb.server.events.keyaccess cimport lookup_read, lookup_write, modified, notify
from raxdb.server.table.args cimport maybe_int


# The other handlers the benchmarks and common use call, in the reference signature
# (registry.pxd's `_entry_shape`): run_handler calls their C function, not their Python wrapper.
# Registered with command() after their definitions (a cpdef function takes no decorator).
cpdef del_(ClientFields c, argv)
cpdef unlink(ClientFields c, argv)
cpdef exists(ClientFields c, argv)
cpdef type_(ClientFields c, argv)
cpdef scan(ClientFields c, argv)
cpdef expire(ClientFields c, argv)
cpdef pexpire(ClientFields c, argv)
cpdef expireat(ClientFields c, argv)
cpdef pexpireat(ClientFields c, argv)
cpdef ttl(ClientFields c, argv)
cpdef pttl(ClientFields c, argv)
cpdef persist(ClientFields c, argv)
cpdef touch(ClientFields c, argv)
cpdef rename(ClientFields c, argv)
cpdef renamenx(ClientFields c, argv)
cpdef copy(ClientFields c, argv)
cpdef randomkey(ClientFields c, argv)
cpdef expiretime(ClientFields c, argv)
cpdef pexpiretime(ClientFields c, argv)
cpdef keys(ClientFields c, argv)
cpdef move(ClientFields c, argv)

# OBJECT's subcommands, in the same signature (a subcommand's record calls its handler as a command's).
cpdef object_help(ClientFields c, argv)
cpdef object_encoding_cmd(ClientFields c, argv)
cpdef object_refcount(ClientFields c, argv)
cpdef object_idletime(ClientFields c, argv)
cpdef object_freq(ClientFields c, argv)
