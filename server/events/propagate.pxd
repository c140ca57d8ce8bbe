# Declarations for compiling propagate.py with Cython (setup.py); the interpreter never reads this.
#
# The steps every propagated write takes (note, done, flush) hold the server and the client as
# their classes' field bases (server/base/fields.pxd): the op list, `dirty` and the client's
# rewrite and flags are C struct fields, and note and flush are C calls from done.  Their callers
# pass the real server and client, never None or a stand-in (a typed argument is not checked for
# None).  encode_command writes with reply.py's bulk_aggregate, a C call here.
from raxdb.protocol.reply cimport bulk_aggregate
from raxdb.server.base.fields cimport ClientFields, ServerFields


cpdef note(ServerFields srv, ClientFields c, cmd, argv, long long dirty)

cpdef long long done(ServerFields srv, ClientFields c, cmd, argv, long long dirty)

cpdef bytes encode_command(argv)

cpdef flush(ServerFields srv, current=*)
