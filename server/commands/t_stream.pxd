# Declarations for compiling t_stream.py with Cython (setup.py); the interpreter never reads this.
#
# The key lookups and signals (server/events/keyaccess.pxd) are C calls.
# XADD holds its stream in a local typed as the Stream extension type (storage/stream.pxd), so
# its reads of the stream's fields and its calls of add() and trim() are C-level, as is its call
# of _id_reply.  xadd is registered with command() after its definition because a cpdef function
# takes no decorator.
# XADD's client, server and database are typed too (server/base/fields.pxd, storage/keyspace.pxd),
# as the hash handlers' are: their fields are C struct fields and the database's get a C call.
cimport cython
from raxdb.server.base.fields cimport ClientFields, ServerFields
from raxdb.server.events.keyaccess cimport lookup_read, modified, notify
from raxdb.storage.keyspace cimport Database
from raxdb.storage.listpack cimport string_to_int
from raxdb.storage.stream cimport Stream


# The automatic ID's tests and sequence are C arithmetic on the stream's last_ms / last_seq (`now`
# is the clock's ms, `seq` the new ID's sequence, _SEQ_MAX the largest one).
cdef bint _same_options(argv, list opts) except -1

@cython.locals(s=Stream, srv=ServerFields, db=Database, now=cython.ulonglong, seq=cython.ulonglong)
cpdef xadd(ClientFields c, argv)

cdef unsigned long long _SEQ_MAX

# The one ID parser (every command that reads an ID): a C call from XADD and the other handlers,
# its canonical `ms-seq` and `ms` read by listpack's string_to_int as C calls.
cpdef tuple _parse_id(arg, missing_seq, bint strict, bint seq_star)

cdef list _SEQ_TAILS, _reply_heads

@cython.locals(d=Py_ssize_t, heads=list, by_digits=list, prefix=bytes)
cpdef _id_reply(ms, unsigned long long seq)


# The other handlers the benchmarks and common use call, in the reference signature
# (registry.pxd's `_entry_shape`): run_handler calls their C function, not their Python wrapper.
# Registered with command() after their definitions (a cpdef function takes no decorator).
cpdef xtrim(ClientFields c, argv)
cpdef xlen(ClientFields c, argv)
cpdef xrange_(ClientFields c, argv)
cpdef xrevrange(ClientFields c, argv)
cpdef xdel(ClientFields c, argv)
cpdef xack(ClientFields c, argv)
cpdef xread(ClientFields c, argv)
cpdef xreadgroup(ClientFields c, argv)
cpdef xsetid(ClientFields c, argv)
cpdef xpending(ClientFields c, argv)
cpdef xclaim(ClientFields c, argv)
cpdef xautoclaim(ClientFields c, argv)

# XGROUP's and XINFO's subcommands, in the same signature (a subcommand's record calls its handler as
# a command's).
cpdef xgroup_create(ClientFields c, argv)
cpdef xgroup_setid(ClientFields c, argv)
cpdef xgroup_destroy(ClientFields c, argv)
cpdef xgroup_createconsumer(ClientFields c, argv)
cpdef xgroup_delconsumer(ClientFields c, argv)
cpdef xgroup_help(ClientFields c, argv)
cpdef xinfo_stream(ClientFields c, argv)
cpdef xinfo_groups(ClientFields c, argv)
cpdef xinfo_consumers(ClientFields c, argv)
cpdef xinfo_help(ClientFields c, argv)
