# Declarations for compiling t_string.py with Cython (setup.py); the interpreter never reads this.
#
# The key lookups and signals (server/events/keyaccess.pxd) and the integer parsers
# (server/table/args.pxd) are C calls.
# GET, SET and INCR hold their database in a local typed as the Database extension type
# (storage/keyspace.pxd), so their lookups and writes (get, set, find, value_at, put_at) are C calls
# through its vtable instead of Python method calls.  They are registered with command() after
# their definitions because a cpdef function takes no decorator.
# GET, SET and INCR hold their client and the server as their classes' field bases
# (server/base/fields.pxd): the client's database and server, the server's clock, and its dirty
# count, keyspace hits and notification classes (C integers) are C struct fields.
cimport cython
from raxdb.protocol.reply cimport decimal, integer
from raxdb.server.base.fields cimport ClientFields, ServerFields
from raxdb.server.base.numparse cimport canonical_digits_value
from raxdb.server.events.keyaccess cimport lookup_read, lookup_write, modified, notify, written
from raxdb.server.table.args cimport maybe_int, option_word, to_int
from raxdb.storage.keyspace cimport Database


@cython.locals(db=Database, srv=ServerFields)
cpdef get(ClientFields c, argv)

# SET with options (a job queue's lock: SET key token PX 30000) parses them and computes the expire
# time through cpdef helpers, C calls, with its client, server and database typed as INCR's are.
@cython.locals(n=Py_ssize_t, j=Py_ssize_t, flags=cython.int)
cpdef tuple parse_string_options(argv, Py_ssize_t start, bint getex=*)

cdef long long _MAX_MS, _MAX_SECONDS
cdef int _NX, _XX, _GET, _KEEPTTL, _EX, _PX, _EXAT, _PXAT, _PERSIST, _ANY_EXPIRE
# the expire options' bits by word: a C dict read in parse_string_options (a module global's
# `get`, looked up and called, cost ~150 instructions per option)
cdef dict _EXPIRE_BITS

cpdef long long _expire_of(c, int flags, expire, cmdname) except? -1

@cython.locals(v=object, n=cython.longlong, now=cython.longlong)
cpdef long long expire_ms(ClientFields c, arg, bint unit_seconds, bint relative, cmdname) except? -1

@cython.locals(db=Database, srv=ServerFields, flags=cython.int, when=cython.longlong)
cpdef set_(ClientFields c, argv)

# INCR's replies for the shared values: a C global typed list, so the reply is a list item read
cdef list _SHARED_INT_REPLIES

# delta a C integer (every caller's is an int64: INCRBY's and DECRBY's through to_int), so the
# fast path's sum and bound are C arithmetic
@cython.locals(db=Database, p=Py_ssize_t, srv=ServerFields, small=cython.bint, d=cython.longlong,
               n=cython.longlong)
cpdef incr(ClientFields c, argv, long long delta=*)


# The other handlers the benchmarks and common use call, in the reference signature
# (registry.pxd's `_entry_shape`): run_handler calls their C function, not their Python wrapper.
# Registered with command() after their definitions (a cpdef function takes no decorator).
cpdef setnx(ClientFields c, argv)
cpdef setex(ClientFields c, argv)
cpdef psetex(ClientFields c, argv)
cpdef getset(ClientFields c, argv)
cpdef getex(ClientFields c, argv)
cpdef getdel(ClientFields c, argv)
cpdef mget(ClientFields c, argv)
cpdef mset(ClientFields c, argv)
cpdef decr(ClientFields c, argv)
cpdef incrby(ClientFields c, argv)
cpdef decrby(ClientFields c, argv)
cpdef incrbyfloat(ClientFields c, argv)
cpdef strlen(ClientFields c, argv)
cpdef append(ClientFields c, argv)
cpdef msetnx(ClientFields c, argv)
cpdef getrange(ClientFields c, argv)
cpdef substr(ClientFields c, argv)
cpdef setrange(ClientFields c, argv)
cpdef lcs(ClientFields c, argv)
