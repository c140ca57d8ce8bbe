# Declarations for compiling keyaccess.py with Cython (setup.py); the interpreter never reads this.
#
# The lookups and signals every command makes are cpdef functions: a compiled handler that
# cimports this module calls them in C, and inside them the client and the server are their
# classes' field bases (server/base/fields.pxd) and the database the Database extension type
# (storage/keyspace.pxd), so their fields are C struct fields and `get` and `add` C calls.  Their
# callers pass a client, never None (a typed argument is not checked for None).
cimport cython
from raxdb.server.base.fields cimport ClientFields, ServerFields
from raxdb.storage.keyspace cimport Database


@cython.locals(srv=ServerFields, db=Database)
cpdef lookup_read(ClientFields c, key)

@cython.locals(srv=ServerFields, db=Database)
cpdef lookup_write(ClientFields c, key)

@cython.locals(srv=ServerFields, db=Database, now=cython.longlong)
cpdef lookup_or_create(ClientFields c, key, cls)

@cython.locals(d=Database, srv=ServerFields)
cpdef modified(ClientFields c, key, db=*)

# the expired hook: the server stays an object (expired_keys is not one of its C fields)
cpdef expired(srv, Database db, key)

@cython.locals(srv=ServerFields)
cpdef notify(ClientFields c, cls, event, key, dbid=*)

@cython.locals(srv=ServerFields, db=Database)
cpdef written(ClientFields c, key, cls, event)
