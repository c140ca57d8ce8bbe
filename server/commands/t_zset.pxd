# Declarations for compiling t_zset.py with Cython (setup.py); the interpreter never reads this.
#
# The key lookups and signals (server/events/keyaccess.pxd) and the integer parsers
# (server/table/args.pxd) this module's handlers call are C calls.
from raxdb.server.events.keyaccess cimport lookup_or_create, lookup_read, lookup_write, modified, notify
from raxdb.server.table.args cimport to_int
